"""One command that checks and measures fedflat's GPU path on whatever device is present, in under 8 minutes.

    PYTHONPATH=src python bench/gpu_check.py --out gpu_check_out      # a GPU box: correctness + speed
    PYTHONPATH=src python bench/gpu_check.py --quick                   # tiny sizes (the test runs this)

Needs only torch, numpy, pandas, PyYAML, scikit-learn (its digits) and the repository's src/ on PYTHONPATH: no
Snakemake, no install step. Three sections, each with a share of the time budget (--budget, default 420 s;
with imports, CUDA start-up and writing the run stays under 8 minutes), printed with its estimated and
measured seconds; a piece that runs past its share is stopped and reported, and the JSON and Markdown
summaries are written whatever happened:

  correctness  FedAvg, FedSAM, SCAFFOLD, FedDyn, FedSynSAM, FedTOGA (and FedSAM on a CNN) trained for a few
               rounds on digits from one seed on the CPU and on CUDA, one client at a time and vmapped:
               final accuracy and parameters within stated tolerances (bench/gpu_check_correct.py)
  reductions   the exact rho = 0 reductions of fedflat.training.algorithms.reductions.RHO0 on CUDA, float64, both
               local paths (bench/gpu_check_reduce.py)
  speed        client-rounds/s of the FMNIST MLP, LeNet-5, the FedAvg CNN and ResNet-18-GN at the papers'
               sizes: CUDA vmapped and one at a time against one CPU core, as ratios; peak GPU memory per
               client; seconds per round beside the published anchors (bench/gpu_check_speed.py)

Without a CUDA device (or with --cpu-only) every CUDA part is reported as skipped with that reason and the
CPU parts run: the CPU against its own vmapped path, the reductions on the CPU, the CPU-core speed.
Exit status 1 when a correctness check or a reduction failed, else 0. Works with torch 2.11 (the version a
bare device has) and 2.14: only torch.func/vmap, torch.cuda memory statistics and the legacy TF32 flags.
"""
from __future__ import annotations

import argparse
import importlib.util
import shlex
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `python bench/gpu_check.py` puts bench/, not the repository, on the path
    sys.path.insert(0, str(REPO))
if importlib.util.find_spec("fedflat") is None:  # PYTHONPATH=src forgotten: the repository's own src/
    sys.path.insert(0, str(REPO / "src"))

import torch  # noqa: E402

from bench.gpu_check_budget import Budget, OverBudget, hard_stop  # noqa: E402
from bench.gpu_check_correct import run_correctness  # noqa: E402
from bench.gpu_check_reduce import run_reductions  # noqa: E402
from bench.gpu_check_report import anchors_beside, machine, machine_line, markdown, write_json  # noqa: E402
from bench.gpu_check_sims import cuda_reason, failure  # noqa: E402
from bench.gpu_check_speed import WORKLOADS, run_speed  # noqa: E402

# Each section's share of the budget and its estimated seconds (mode, CUDA present): the GPU figures are
# estimates made before any GPU run (a first run's measured seconds replace them); the CPU ones were measured
# on the project's 2-core box under load. The speed section takes what the others leave, up to its share.
SHARES = {"correctness": 0.15, "reductions": 0.10, "speed": 0.75}
ESTIMATES = {  # (quick, cuda) -> section -> seconds
    (False, True): {"correctness": 45, "reductions": 30, "speed": 330},
    (False, False): {"correctness": 35, "reductions": 10, "speed": 200},
    (True, True): {"correctness": 15, "reductions": 5, "speed": 30},
    (True, False): {"correctness": 8, "reductions": 2, "speed": 20},
}


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python bench/gpu_check.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="gpu_check_out", help="folder for gpu_check.json and gpu_check.md")
    ap.add_argument("--quick", action="store_true", help="tiny sizes: every piece runs once, nothing timed seriously")
    ap.add_argument("--cpu-only", action="store_true", help="skip the CUDA parts even where a GPU is present")
    ap.add_argument("--budget", type=float, default=420.0, help="seconds for the three sections (default 420)")
    ap.add_argument("--sections", nargs="+", default=list(SHARES), choices=list(SHARES))
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    a = ap.parse_args(argv)
    if a.budget <= 0:
        ap.error("--budget: must be a positive number of seconds")
    return a


def main(argv: list[str]) -> int:
    a = parse(argv)
    budget = Budget(a.budget)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    skip = cuda_reason(a.cpu_only)
    try:
        m = machine(skip)  # the first CUDA call: a driver that cannot start the device fails here
    except Exception as exc:
        skip = f"CUDA present but unusable: {failure(exc)['reason']}"
        m = machine(skip)
    print(f"gpu_check: {machine_line(m)}", flush=True)
    if skip:
        print(f"gpu_check: CUDA parts skipped: {skip}", flush=True)
    estimates = ESTIMATES[(a.quick, skip is None)]
    sections: dict[str, dict] = {}
    runners = {"correctness": lambda sh: run_correctness(sh, a.quick, skip),
               "reductions": lambda sh: run_reductions(sh, a.quick, skip),
               "speed": lambda sh: run_speed(sh, a.quick, skip, a.workloads)}
    chosen = [s for s in SHARES if s in a.sections]
    for i, name in enumerate(chosen):
        later = sum(SHARES[s] for s in chosen[i + 1:])
        seconds = budget.left() * SHARES[name] / (SHARES[name] + later)  # what earlier sections left over carries on
        share = budget.share(seconds)
        print(f"[{name}] estimated {estimates[name]} s, share {seconds:.0f} s", flush=True)
        t0 = time.perf_counter()
        try:
            with hard_stop(share):
                res = runners[name](share)
        except OverBudget as exc:
            res = {"status": "stopped", "reason": str(exc)}
        except Exception as exc:  # one section's defect must not lose the others' results
            res = failure(exc)
        res.update(estimated_s=estimates[name], share_s=round(seconds, 1), measured_s=round(time.perf_counter() - t0, 1))
        sections[name] = res
        print(f"[{name}] {res['status']}: estimated {estimates[name]} s, measured {res['measured_s']} s", flush=True)
    bad = [n for n, s in sections.items() if s["status"] in ("failed", "error")]
    result = {"command": "python bench/gpu_check.py " + shlex.join(argv), "mode": "quick" if a.quick else "full",
              "budget_s": a.budget, "elapsed_s": round(budget.elapsed(), 1), "machine": m,
              "verdict": f"failed ({', '.join(bad)})" if bad else "ok", "sections": sections,
              "anchors": anchors_beside(sections.get("speed", {}).get("ratios", [])),
              "torch_2_11": "every API used exists in torch 2.11; nothing falls back (torch.compile is not used: "
                            "the vmapped path runs eagerly in both versions)"}
    write_json(out / "gpu_check.json", result)
    (out / "gpu_check.md").write_text(markdown(result))
    print(f"gpu_check: {result['verdict']} in {result['elapsed_s']} s; wrote {out / 'gpu_check.json'} and "
          f"{out / 'gpu_check.md'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
