"""`python -m fedflat.papers [PAPER ...] [--scale S] [--measure]`: every target of the paper catalogs
with the runs it needs and a compute estimate (Markdown table)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

PAPERS = ("fednsam", "fedsagd", "fedsol", "fedsynsam", "fedtoga")


def main(argv=None) -> int:
    from ..errors import ConfigError
    from ..study import load_config_file, load_study
    from .compute import summarise

    ap = argparse.ArgumentParser(prog="python -m fedflat.papers", description=__doc__)
    ap.add_argument("papers", nargs="*", default=list(PAPERS))
    ap.add_argument("--scale", default="paper", choices=("paper", "reduced", "tiny"))
    ap.add_argument("--measure", action="store_true", help="time each model on this CPU instead of assumed GPU throughput")
    ap.add_argument("--config-dir", default="config/papers")
    a = ap.parse_args(argv)
    unit = "CPU h (measured here)" if a.measure else "GPU h (assumed throughput)"
    print(f"| paper | target | reproduces | runs | sample-grads (1e9) | {unit} |\n|---|---|---|---|---|---|")
    try:
        for paper in a.papers:
            cfg = load_config_file(Path(a.config_dir) / f"{paper}.yaml")
            cfg["scale"] = a.scale
            for r in summarise(load_study(cfg), measure=a.measure):
                print(f"| {paper} | `{r['target']}` | {r['ref']} | {r['runs']} | {r['sample_grads'] / 1e9:.3g} | {r['hours']:.3g} |")
    except ConfigError as exc:
        print(f"fedflat.papers: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
