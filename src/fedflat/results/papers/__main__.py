"""`python -m fedflat.papers [PAPER ...] [--scale S] [--measure | --plan | --coverage | --settings]`:
every target of the paper catalogs with the runs it needs and a compute estimate (Markdown table).
`python -m fedflat.papers trace PAPER TABLE ROW COLUMN` lists the runs behind one cell of a table, from the
committed evidence (fedflat.evidence.trace).
`python -m fedflat.papers picks CONFIG [--provisional]` prints what a staged protocol's grids have picked and which
experiments still wait (results/papers/picks.py); --provisional expands every stage at the grids' smallest values and
counts each experiment's runs and sample-gradients (the plan of the whole protocol, before its first run).

--coverage prints the class coverage of every partition the catalogs build (results/papers/coverage.py);
--settings prints each paper's settings statement with its sources, then every difference between
it and the catalog at scale: paper (results/papers/stated_settings.py; exit 1 if any).

--plan prints, per target, the GPU hours at paper scale (assumed single-GPU throughput) beside the
CPU hours at reduced scale (model throughput measured on this machine): the README's table."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

PAPERS = ("fednsam", "fedsagd", "fedsol", "fedsynsam", "fedtoga")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["picks"]:  # `python -m fedflat.papers picks CONFIG [--provisional]`: a staged protocol's picks
        return _picks(argv[1:])
    from ... import plugins  # noqa: F401  (the composition root: every preset, data set, model and kind)
    from ...core.errors import ConfigError
    from ...pipeline.study import load_config_file, load_study
    from .compute import summarise

    ap = argparse.ArgumentParser(prog="python -m fedflat.papers", description=__doc__)
    ap.add_argument("papers", nargs="*", default=list(PAPERS))
    ap.add_argument("--scale", default="paper", choices=("paper", "reduced", "tiny"))
    ap.add_argument("--measure", action="store_true", help="time each model on this CPU instead of assumed GPU throughput")
    ap.add_argument("--plan", action="store_true",
                    help="GPU h at paper scale (assumed) beside CPU h at reduced scale (measured throughput)")
    ap.add_argument("--coverage", action="store_true", help="class coverage of every partition (seeds included)")
    ap.add_argument("--settings", action="store_true", help="the paper's stated settings and our differences")
    ap.add_argument("--data-root", default="data")
    ap.add_argument("--config-dir", default="config/papers")
    a = ap.parse_args(argv)
    if a.coverage or a.settings:
        return _coverage_or_settings(a)
    if a.plan:
        return _plan(a.papers, Path(a.config_dir))
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


def _picks(argv) -> int:
    from ... import plugins  # noqa: F401
    from ...core.errors import ConfigError
    from ...pipeline.study import load_config_file, load_study
    from .compute import run_sample_grads
    from .picks import render, resolve

    ap = argparse.ArgumentParser(prog="python -m fedflat.papers picks")
    ap.add_argument("config")
    ap.add_argument("--provisional", action="store_true", help="expand every stage at the grids' smallest values")
    a = ap.parse_args(argv)
    try:
        cfg, state = resolve(load_config_file(a.config), provisional=a.provisional)
        print(render(state))
        if a.provisional:
            study = load_study(cfg)
            print("\n| experiment | runs | sample-grads (1e9) |\n|---|---|---|")
            seen: set[str] = set()
            for name, entries in study.experiments.items():
                rids = [r for r, _ in entries if r not in seen]  # a run two experiments share counts once
                seen.update(rids)
                grads = sum(run_sample_grads(study.runs[r]) for r in rids)
                print(f"| `{name}` | {len(rids)} | {grads / 1e9:.3g} |")
            print(f"| total | {len(seen)} | {sum(run_sample_grads(study.runs[r]) for r in seen) / 1e9:.3g} |")
    except ConfigError as exc:
        print(f"fedflat.papers: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _coverage_or_settings(a) -> int:
    from ...core.errors import ConfigError
    from ...pipeline.study import load_config_file, load_study
    from .coverage import coverage, render
    from .stated_settings import check, render_markdown

    bad = 0
    try:
        for paper in a.papers:
            print(f"## {paper}\n")
            if a.settings:
                print(render_markdown(paper, a.config_dir))
                findings = check(paper, a.config_dir)
                bad += len(findings)
                print("\n".join(f"- {f}" for f in findings) or "No difference from the statement.", end="\n\n")
            if a.coverage:
                cfg = load_config_file(Path(a.config_dir) / f"{paper}.yaml")
                cfg["scale"] = a.scale
                print(render(coverage(load_study(cfg), a.data_root)))
    except ConfigError as exc:
        print(f"fedflat.papers: error: {exc}", file=sys.stderr)
        return 2
    return 1 if bad else 0


def _hours(h: float) -> str:
    return f"{h:,.0f}" if h >= 100 else f"{h:.2g}" if h >= 0.01 else "<0.01"


def _plan(papers, config_dir: Path) -> int:
    from ...core.errors import ConfigError
    from ...pipeline.study import load_config_file, load_study
    from .compute import summarise

    import torch

    torch.set_num_threads(1)  # core-hours: one thread per job, as Snakemake runs fedflat on CPUs
    cache: dict[str, float] = {}  # CPU throughput per model, measured once for all papers
    print("| paper | target | reproduces | runs | GPU h, paper scale (assumed) | CPU core-h, reduced scale (measured throughput) "
          "| paper-scale runs not in the committed evidence |\n|---|---|---|---|---|---|---|")
    try:
        for paper in papers:
            rows = {}
            for scale, measure in (("paper", False), ("reduced", True)):
                cfg = load_config_file(config_dir / f"{paper}.yaml")
                cfg["scale"] = scale
                rows[scale] = summarise(load_study(cfg), measure=measure, cache=cache)
            if [r["target"] for r in rows["paper"]] != [r["target"] for r in rows["reduced"]]:
                raise ConfigError(f"{paper}: the reduced scale does not have the paper scale's targets")
            for big, small in zip(rows["paper"], rows["reduced"]):
                print(f"| {paper} | `{big['target']}` | {big['ref']} | {big['runs']} | {_hours(big['hours'])} | "
                      f"{_hours(small['hours'])} | {big['left']} |",
                      flush=True)
    except ConfigError as exc:
        print(f"fedflat.papers: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
