"""How many runs the leaderboard trains and how long it takes, before anything runs.

CPU (this machine): time = sample-gradients / a throughput measured with the engine itself on this machine
(issue 14, FedSynSAM's FMNIST settings: a FedAvg run of the 2-layer MLP, 300 rounds x 10 clients x 10 steps x
batch 128 = 3.84e6 sample-gradients, took about 70 s with two jobs at once; FedSAM, twice the gradients,
150 s), plus a fixed cost per job (interpreter, torch and data loading) and FedSynSAM's / DynaFed's
distillation (215 s against FedSAM's 150 s). Wall time = the jobs' total over the cores.
GPU: sample-gradients over the assumed single-GPU throughput of fedflat.results.papers.compute (a lower bound:
small-batch FL simulation is often overhead-bound).
"""
from __future__ import annotations

import copy

from ..papers.compute import ASSUMED_GPU_SAMPLES_PER_S, run_sample_grads
from .protocol import grid_points, prepare

CPU_SAMPLE_GRADS_PER_S = 3.84e6 / 70.0  # per job, two jobs at once (issue 14's measurement)
JOB_OVERHEAD_S = 5.0  # one Snakemake job: python, torch import, data set and partition loading
HESSIAN_JOB_S = 10.0  # λ_max + trace of an FMNIST mlp2 on 2,048 samples: 3.3 s measured (loaded machine), + start-up
DISTILL_S = {"fedsynsam": 65.0, "dynafed": 65.0}  # FedSynSAM's 215 s vs FedSAM's 150 s at paper scale
MEASURED = ("fmnist", "mlp2")  # the CPU throughput above holds for this data set and model only


def _stand_in(protocol: dict, method: str, i: int) -> dict:
    """The i-th point of a method's grid (lr and own keys), with a positive radius where it has one, so that a
    stand-in pick has a rho = 0 ablation like most real picks will."""
    grid = protocol["methods"][method]
    lrs = protocol["tuning"]["lr"] if grid else protocol["tuning"]["lr_only"]
    points = [pt for pt in grid_points(grid) if pt.get("rho", 1) != 0] or grid_points(grid)
    return {"lr": lrs[i % len(lrs)], "params": points[i % len(points)], "score": None}


def provisional_screen(protocol: dict) -> dict:
    """A stand-in screen (each method's first K grid points) with the continuation's run count."""
    k = (protocol["tuning"]["continuation"] or {}).get("cells", 1)
    return {"cells": k, "methods": {m: [_stand_in(protocol, m, i) for i in range(k)] for m in protocol["methods"]}}


def provisional_choice(protocol: dict) -> dict:
    """A stand-in choice (each method's first grid point) with the run count and costs of the real one."""
    picks = {m: _stand_in(protocol, m, 0) for m in protocol["methods"]}
    parts = protocol["partitions"] if protocol["tuning"]["continuation"] else protocol["tuning"]["partitions"]
    return {"partitions": {p: picks for p in parts}}


def estimate(config: dict, cores: int = 2, exhaustive: bool = True) -> dict:
    """Runs, sample-gradients, CPU core-hours and wall hours on `cores` cores, and GPU hours, per stage.
    `exhaustive=False`: a config snapshot from before a preset was registered (the pages' cost block)."""
    from ...pipeline.study import load_study

    cfg, protocol = prepare(copy.deepcopy(config), None, exhaustive=exhaustive)
    cfg_final, _ = prepare(copy.deepcopy(config), provisional_choice(protocol), screen=provisional_screen(protocol),
                           exhaustive=exhaustive)
    study = load_study(cfg_final)
    names = {"tune_": "tuning", "cont_": "continuation", "final_": "final", "ablation_": "ablation"}
    stages: dict[str, list] = {}
    for ename, entries in study.experiments.items():
        stage = next(v for k, v in names.items() if ename.startswith(k))
        stages.setdefault(stage, []).extend(rid for rid, _ in entries)
    out = {}
    for stage, rids in stages.items():
        rids = list(dict.fromkeys(rids))
        grads = sum(run_sample_grads(study.runs[r]) for r in rids)
        cpu = sum(run_sample_grads(study.runs[r]) / CPU_SAMPLE_GRADS_PER_S + JOB_OVERHEAD_S
                  + DISTILL_S.get(study.runs[r].algorithm, 0.0) for r in rids)
        if stage == "final":  # the Hessian of every final model
            cpu += HESSIAN_JOB_S * len(rids)
        gpu = sum(run_sample_grads(study.runs[r]) / ASSUMED_GPU_SAMPLES_PER_S.get(study.runs[r].model, 2e4)
                  for r in rids)
        measured = all((study.runs[r].dataset, study.runs[r].model) == MEASURED for r in rids)
        nan = float("nan")
        out[stage] = {"runs": len(rids), "sample_grads": grads, "cpu_core_h": cpu / 3600 if measured else nan,
                      "wall_h": cpu / 3600 / cores if measured else nan, "gpu_h": gpu / 3600}
    out["total"] = {k: sum(v[k] for v in out.values()) for k in ("runs", "sample_grads", "cpu_core_h", "wall_h", "gpu_h")}
    if "ablation" in out:  # an ablation cell equal to a continued cell is one run: counted once, in the total
        out["total"]["runs"] = len({r for rids in stages.values() for r in rids})
    out["methods"] = len(protocol["methods"])
    return out


def render(est: dict, cores: int) -> str:
    lines = [f"| stage | runs | sample-grads (1e9) | CPU core-h | wall h on {cores} cores | GPU h (assumed) |",
             "|---|---|---|---|---|---|"]
    for stage in ("tuning", "continuation", "ablation", "final", "total"):
        if stage not in est:
            continue
        e = est[stage]
        lines.append(f"| {stage} | {e['runs']} | {e['sample_grads'] / 1e9:.3g} | {e['cpu_core_h']:.3g} | "
                     f"{e['wall_h']:.3g} | {e['gpu_h']:.3g} |")
    if any(e["cpu_core_h"] != e["cpu_core_h"] for e in est.values() if isinstance(e, dict)):
        lines.append(f"\nCPU time: measured for {' / '.join(MEASURED)} only (nan otherwise).")
    return "\n".join(lines)
