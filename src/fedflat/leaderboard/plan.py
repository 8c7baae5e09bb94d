"""How many runs the leaderboard trains and how long it takes, before anything runs.

CPU (this machine): time = sample-gradients / a throughput measured with the engine itself on this machine
(issue 14, FedSynSAM's FMNIST settings: a FedAvg run of the 2-layer MLP, 300 rounds x 10 clients x 10 steps x
batch 128 = 3.84e6 sample-gradients, took about 70 s with two jobs at once; FedSAM, twice the gradients,
150 s), plus a fixed cost per job (interpreter, torch and data loading) and FedSynSAM's / DynaFed's
distillation (215 s against FedSAM's 150 s). Wall time = the jobs' total over the cores.
GPU: sample-gradients over the assumed single-GPU throughput of fedflat.papers.compute (a lower bound:
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


def provisional_choice(protocol: dict) -> dict:
    """A stand-in choice (each method's first grid point) with the run count and costs of the real one."""
    picks = {m: {"lr": protocol["tuning"]["lr"][0], "params": grid_points(g)[0], "score": None}
             for m, g in protocol["methods"].items()}
    return {"partitions": {p: picks for p in protocol["tuning"]["partitions"]}}


def estimate(config: dict, cores: int = 2) -> dict:
    """Runs, sample-gradients, CPU core-hours and wall hours on `cores` cores, and GPU hours, per stage."""
    from ..study import load_study

    cfg, protocol = prepare(copy.deepcopy(config), None)
    cfg_final, _ = prepare(copy.deepcopy(config), provisional_choice(protocol))
    study = load_study(cfg_final)
    stages = {"tuning": [], "final": []}
    for ename, entries in study.experiments.items():
        stage = "tuning" if ename.startswith("tune_") else "final"
        stages[stage] += [rid for rid, _ in entries]
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
    out["methods"] = len(protocol["methods"])
    return out


def render(est: dict, cores: int, fallback: bool = False) -> str:
    lines = [f"| stage | runs | sample-grads (1e9) | CPU core-h | wall h on {cores} cores | GPU h (assumed) |",
             "|---|---|---|---|---|---|"]
    for stage in ("tuning", "final", "total"):
        e = est[stage]
        lines.append(f"| {stage} | {e['runs']} | {e['sample_grads'] / 1e9:.3g} | {e['cpu_core_h']:.3g} | "
                     f"{e['wall_h']:.3g} | {e['gpu_h']:.3g} |")
    if fallback:
        lines.append("\nNot counted: the divergence fallback's re-runs (tuning.on_divergence: lower_lr), which exist "
                     "only once a final seed diverges: every seed again for each (partition, method) with a diverged seed.")
    if any(e["cpu_core_h"] != e["cpu_core_h"] for e in est.values() if isinstance(e, dict)):
        lines.append(f"\nCPU time: measured for {' / '.join(MEASURED)} only (nan otherwise).")
    return "\n".join(lines)
