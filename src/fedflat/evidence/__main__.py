"""python -m fedflat.evidence COMMAND

  export CONFIG [--scale S]        write results/evidence/<study>/ from this machine's results/ tree
  pages [--check]                  re-render the result pages from the committed evidence (or check for drift)
  trace STUDY TABLE ROW COLUMN     the runs behind one table cell (run ids, seeds, settings, commit)
  verify RUN_ID... | --sample K [--study S]
                                   re-run committed records from scratch at the commit they name and report per
                                   record: identical, within 0.1 point, or different (evidence/verify.py)
  worktree STUDY DEST [--data-root D]
                                   a new worktree at the one commit of a study's records, the records placed where
                                   its code reads them, so the study resumes without re-running them
                                   (evidence/resume_tree.py)"""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    from .. import plugins  # noqa: F401  (the composition root: every preset, data set, model and kind)
    from ..core.errors import ConfigError

    ap = argparse.ArgumentParser(prog="python -m fedflat.evidence", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("export", help="export a study's evidence from results/")
    ex.add_argument("config")
    ex.add_argument("--scale", default=None)
    ex.add_argument("--prune", action="store_true", help="drop records of runs absent from this results/ tree")
    ex.add_argument("--from", dest="source", metavar="DIR", help="read the run directories (and a leaderboard's "
                    "checkpoint files) of the checkout at DIR (a long study's own worktree), write the evidence here")
    ex.add_argument("--keep-legacy", action="store_true", help="keep records that cannot be regenerated (a modified "
                    "tree, no commit, other numerics), marked legacy in the `legacy` column, instead of refusing them")
    pg = sub.add_parser("pages", help="render the result pages from the evidence")
    pg.add_argument("--check", action="store_true", help="exit 1 if a page differs from what the evidence renders")
    tr = sub.add_parser("trace", help="the runs behind one table cell")
    for k in ("study", "table", "row", "column"):
        tr.add_argument(k)
    ve = sub.add_parser("verify", help="re-run committed records from scratch and compare them with the record")
    ve.add_argument("run_ids", nargs="*", metavar="RUN_ID")
    ve.add_argument("--sample", type=int, help="a seeded random sample of this many records")
    ve.add_argument("--study", help="only the records of this study's evidence (results/evidence/<study>/)")
    ve.add_argument("--seed", type=int, default=0, help="the sample's seed")
    ve.add_argument("--at", choices=("record", "head", "available"), default="record",
                    help="the code to re-run with: the commit each record names (default), this checkout, or "
                    "(available) the record's commit where this clone has it, else this checkout when its numerics "
                    "version is the record's")
    ve.add_argument("--jobs", type=int, default=1, help="records re-run in parallel (one core each)")
    ve.add_argument("--scratch", help="where the re-runs go (default: a new temporary directory, removed after)")
    ve.add_argument("--data-root", default="data")
    ve.add_argument("--out", help="also write the Markdown report here, and its rows as CSV beside it")
    wt = sub.add_parser("worktree", help="a worktree to resume a long study in, seeded with its committed records")
    wt.add_argument("study", help="the evidence folder: results/evidence/<study>/")
    wt.add_argument("dest", help="a new directory for the worktree")
    wt.add_argument("--data-root", default="data", help="the data sets the study reads (the resume command names it)")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "export":
            from ..pipeline.study import load_config_file, load_study
            from .export import export_study

            cfg = load_config_file(a.config)
            if a.scale:
                cfg["scale"] = a.scale
            n = _export(a, cfg, export_study, load_study)
            print(f"{cfg.get('study')}: {n['runs']} run records ({n['new']} new), {n['cells']} cells, "
                  f"{n['tables']} table files, {n['figures']} figures"
                  + (f"; {n['superseded']} records of runs no experiment lists any more moved to superseded.csv"
                     if n["superseded"] else "")
                  + (f"; {n['legacy']} records kept marked legacy (not regenerable)" if n["legacy"] else ""))
        elif a.cmd == "pages":
            from .pages import drift, write

            if a.check:
                bad = drift()
                print("\n".join(bad) or "every page matches the committed evidence")
                return 1 if bad else 0
            changed = write()
            print("re-rendered: " + (", ".join(changed) if changed else "nothing changed"))
        elif a.cmd == "verify":
            return _verify(a)
        elif a.cmd == "worktree":
            _worktree(a)
        else:
            from .trace import render

            print(render(a.study, a.table, a.row, a.column))
    except ConfigError as exc:
        print(f"fedflat.evidence: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _export(a, cfg: dict, export_study, load_study) -> dict:
    """Export here, reading the runs of `--from DIR` when given (writing inside a running study's worktree would make
    its tree modified, and its next runs would record a dirty commit)."""
    import os
    from pathlib import Path

    from .export import EVIDENCE, FIGURES

    here = Path.cwd()
    config_path = Path(a.config).resolve()
    if not a.source:
        return export_study(load_study(cfg), prune=a.prune, keep_legacy=a.keep_legacy, config_path=config_path)
    os.chdir(a.source)
    try:
        return export_study(load_study(cfg), here / EVIDENCE, here / FIGURES, prune=a.prune, keep_legacy=a.keep_legacy,
                            config_path=config_path)
    finally:
        os.chdir(here)


def _worktree(a) -> None:
    """Seed the worktree and print the command that resumes the study in it."""
    import shlex
    import sys
    from pathlib import Path

    import yaml

    from ..results.leaderboard.protocol import is_leaderboard
    from .resume_tree import seed_worktree
    from .verify import config_naming

    dest = Path(a.dest).resolve()
    commit, placed, n = seed_worktree(a.study, dest)
    config = config_naming(a.study, dest / "config")
    q = shlex.quote
    print(f"{a.study}: worktree {dest} at commit {commit}; {n} committed records placed at "
          f"{placed.relative_to(dest)} (untracked: the tree stays clean, and they are not run again)")
    if config is None:
        print(f"no config at {commit} names study {a.study!r}: resume with that commit's config for it")
        return
    leaderboard = is_leaderboard(yaml.safe_load(config.read_text()) or {})  # the commit's own file, unvalidated
    target = " leaderboard_runs" if leaderboard else ""
    print(f"resume there, and export from this checkout (python -m fedflat.evidence export {q(str(config.relative_to(dest)))}"
          f" --from {q(str(dest))}):")
    print(f"  cd {q(str(dest))} && PYTHONPATH={q(str(dest / 'src'))} {q(str(Path(sys.executable).parent / 'snakemake'))}"
          f"{target} --cores 1 --keep-going --rerun-incomplete --configfile {q(str(config.relative_to(dest)))} "
          f"--config data_root={q(str(Path(a.data_root).resolve()))}")


def _verify(a) -> int:
    """Exit 0 when every record re-ran identical, 1 otherwise (a report line per record either way)."""
    import shutil
    import tempfile
    from pathlib import Path

    from ..core.errors import ConfigError
    from ..core.util.io import write_text
    from .verify import pick, render, verify

    if not a.run_ids and not a.sample:
        raise ConfigError("verify: name run ids, or --sample K")
    chosen = pick(a.run_ids, a.sample, a.study, a.seed)
    scratch = Path(a.scratch or tempfile.mkdtemp(prefix="fedflat-verify-"))
    scratch.mkdir(parents=True, exist_ok=True)
    print(f"re-running {len(chosen)} record(s) in {scratch} ({a.jobs} at a time)", flush=True)
    try:
        out = verify(chosen, scratch, Path(a.data_root), a.at, a.jobs, progress=lambda s: print(s, flush=True))
    finally:
        if not a.scratch:
            import subprocess

            for tree in scratch.glob("code-*"):  # the worktrees of the records' commits
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], capture_output=True)
            shutil.rmtree(scratch, ignore_errors=True)
    report = render(out)
    print("\n" + report)
    if a.out:  # the report, and its rows as CSV beside it (what a page renders from once committed)
        from .verify import to_frame

        write_text(Path(a.out), report + "\n")
        write_text(Path(a.out).with_suffix(".csv"), to_frame(out).to_csv(index=False, lineterminator="\n"))
    return 0 if all(o.verdict == "identical" for o in out) else 1


if __name__ == "__main__":
    sys.exit(main())
