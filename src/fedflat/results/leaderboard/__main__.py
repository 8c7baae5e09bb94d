"""`python -m fedflat.leaderboard [CONFIG] [--scale S] [--dataset D --model M] [--cores N]`: the leaderboard's
run count and its wall-time estimate on this machine's cores (and GPU hours), per stage (leaderboard/plan.py);
with `--progress`, how far a run of it has got, stage by stage (leaderboard/progress.py); with `--lockstep RUN_A
RUN_B`, two of its runs trained side by side and their distance per round (leaderboard/lockstep.py)."""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    from ... import plugins  # noqa: F401  (the composition root: every preset, data set, model and kind)
    from ...core.errors import ConfigError
    from ...pipeline.study import load_config_file
    from .plan import estimate, render

    ap = argparse.ArgumentParser(prog="python -m fedflat.leaderboard", description=__doc__)
    ap.add_argument("config", nargs="?", default="config/leaderboard.yaml")
    ap.add_argument("--scale", choices=("paper", "reduced", "tiny"))
    ap.add_argument("--dataset", help="override leaderboard.dataset (e.g. cifar10)")
    ap.add_argument("--model", help="override leaderboard.model (e.g. resnet18)")
    ap.add_argument("--cores", type=int, default=2, help="parallel jobs for the wall-time estimate (and the time left)")
    ap.add_argument("--progress", action="store_true", help="count the runs done so far, per stage (run it where "
                    "Snakemake runs: it reads results/)")
    ap.add_argument("--lockstep", nargs=2, metavar=("RUN_A", "RUN_B"), help="train two runs of the study side by "
                    "side and print ‖θ_a − θ_b‖ per round (is an exact reduction exact in this code?)")
    ap.add_argument("--rounds", type=int, help="with --lockstep: rounds to run (default: the runs' own)")
    ap.add_argument("--backend", choices=("eager", "compile", "auto"), help="with --lockstep: the local step for "
                    "both (default: each run's own)")
    ap.add_argument("--data-root", default="data", help="with --lockstep: where the data sets are")
    a = ap.parse_args(argv)
    try:
        cfg = load_config_file(a.config)
        if a.scale:
            cfg["scale"] = a.scale
        for k in ("dataset", "model"):
            if getattr(a, k):
                cfg.setdefault("leaderboard", {})[k] = getattr(a, k)
        if a.lockstep:
            from ...pipeline.study import load_study
            from .lockstep import compare, render as render_lockstep

            print(render_lockstep(compare(load_study(cfg), *a.lockstep, a.rounds, a.backend, a.data_root)))
            return 0
        if a.progress:
            from ...pipeline.study import load_study
            from .progress import progress, render as render_progress

            print(render_progress(progress(load_study(cfg), a.cores)))
            return 0
        est = estimate(cfg, a.cores)
    except ConfigError as exc:
        print(f"fedflat.leaderboard: error: {exc}", file=sys.stderr)
        return 2
    lb = cfg["leaderboard"]
    print(f"{est['methods']} methods, {lb['dataset']} / {lb['model']}, scale {cfg.get('scale', 'paper')}\n")
    print(render(est, a.cores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
