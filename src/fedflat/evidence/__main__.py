"""python -m fedflat.evidence COMMAND

  export CONFIG [--scale S]        write results/evidence/<study>/ from this machine's results/ tree
  pages [--check]                  re-render the result pages from the committed evidence (or check for drift)
  trace STUDY TABLE ROW COLUMN     the runs behind one table cell (run ids, seeds, settings, commit)
  stage-e BLOCK                    FedSynSAM's lr grids of a Table II block (A, B, C) that the catalog follows: the
                                   rule's pick, the catalog's lr, and the lr stage E must run next
  lr-sources BLOCK                 the FedSynSAM settings file's lr entries of block B or C, from the evidence"""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    from .. import plugins  # noqa: F401  (the composition root: every preset, data set, model and kind)
    from ..errors import ConfigError

    ap = argparse.ArgumentParser(prog="python -m fedflat.evidence", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("export", help="export a study's evidence from results/")
    ex.add_argument("config")
    ex.add_argument("--scale", default=None)
    ex.add_argument("--prune", action="store_true", help="drop records of runs absent from this results/ tree")
    ex.add_argument("--keep-legacy", action="store_true", help="keep records that cannot be regenerated (a modified "
                    "tree, no commit, other numerics), marked legacy in the `legacy` column, instead of refusing them")
    pg = sub.add_parser("pages", help="render the result pages from the evidence")
    pg.add_argument("--check", action="store_true", help="exit 1 if a page differs from what the evidence renders")
    tr = sub.add_parser("trace", help="the runs behind one table cell")
    for k in ("study", "table", "row", "column"):
        tr.add_argument(k)
    se = sub.add_parser("stage-e", help="the lr each FedSynSAM grid of a block needs next (stage E)")
    se.add_argument("block", choices=("A", "B", "C"))
    ls = sub.add_parser("lr-sources", help="the settings file's lr entries of a block, from the evidence")
    ls.add_argument("block", choices=("B", "C"))
    a = ap.parse_args(argv)
    try:
        if a.cmd == "export":
            from ..study import load_config_file, load_study
            from .export import export_study

            cfg = load_config_file(a.config)
            if a.scale:
                cfg["scale"] = a.scale
            n = export_study(load_study(cfg), prune=a.prune, keep_legacy=a.keep_legacy, config_path=a.config)
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
        elif a.cmd == "stage-e":
            from .lrpicks import stage_e_report

            print(stage_e_report(a.block))
        elif a.cmd == "lr-sources":
            from .lrsources import report

            print(report(a.block))
        else:
            from .trace import render

            print(render(a.study, a.table, a.row, a.column))
    except ConfigError as exc:
        print(f"fedflat.evidence: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
