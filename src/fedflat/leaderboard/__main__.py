"""`python -m fedflat.leaderboard [CONFIG] [--scale S] [--dataset D --model M] [--cores N]`: the leaderboard's
run count and its wall-time estimate on this machine's cores (and GPU hours), per stage (leaderboard/plan.py)."""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    from ..errors import ConfigError
    from ..study import load_config_file
    from .plan import estimate, render

    ap = argparse.ArgumentParser(prog="python -m fedflat.leaderboard", description=__doc__)
    ap.add_argument("config", nargs="?", default="config/leaderboard.yaml")
    ap.add_argument("--scale", choices=("paper", "reduced", "tiny"))
    ap.add_argument("--dataset", help="override leaderboard.dataset (e.g. cifar10)")
    ap.add_argument("--model", help="override leaderboard.model (e.g. resnet18)")
    ap.add_argument("--cores", type=int, default=2, help="parallel jobs for the wall-time estimate")
    a = ap.parse_args(argv)
    try:
        cfg = load_config_file(a.config)
        if a.scale:
            cfg["scale"] = a.scale
        for k in ("dataset", "model"):
            if getattr(a, k):
                cfg.setdefault("leaderboard", {})[k] = getattr(a, k)
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
