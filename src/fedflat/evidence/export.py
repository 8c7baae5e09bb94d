"""Export a study's evidence from a results/ tree: what exists, never what is missing.

  results/evidence/<study>/runs.csv     one record per finished run (records.COLUMNS)
  results/evidence/<study>/cells.csv    table, row, column, run_id: the runs behind every table cell
  results/evidence/<study>/superseded.csv  records of runs no experiment lists any more (a corrected setting)
  results/evidence/<study>/tables/      the rendered tables (.md, .csv) as the study's rules wrote them
  results/evidence/<study>/checkpoints/ a leaderboard's screen and choice files, as its later stages read them
  figures/evidence/<study>/             the study's figures as PNG

Run directories stay out of git; these files are committed (.gitignore exceptions) and the result pages are
rendered from them alone. A run already in runs.csv but absent from this results/ tree is kept (a record is
evidence of a run made on another machine or in an earlier session), unless `prune` is set."""
from __future__ import annotations

from pathlib import Path

from ..recorded import EVIDENCE_ROOT as EVIDENCE
from .cells import table_cells
from ..util.io import copy_file
from ..util.names import under
from .records import COLUMNS, run_record

FIGURES = Path("figures/evidence")
SUPERSEDED = "superseded.csv"


def evidence_dir(study_name: str, root: Path = EVIDENCE) -> Path:
    return under(root, study_name, key="study")  # a study named '../x' writes nowhere


def _register_stages(study) -> None:
    """Leaderboard: register the stages whose checkpoint files exist, so their runs are exported too."""
    if study.leaderboard is not None:
        from ..leaderboard.flow import register_known_stages

        register_known_stages(study)


def study_runs(study) -> dict[str, tuple[list[str], str]]:
    """{run id: (experiments it belongs to, its algorithm label)} over every experiment of the study."""
    out: dict[str, tuple[list[str], str]] = {}
    for ename, entries in study.experiments.items():
        for rid, lab in entries:
            exps, _ = out.setdefault(rid, ([], lab.get("algorithm", "")))
            exps.append(ename)
    return out


def export_study(study, root: Path = EVIDENCE, figures_root: Path = FIGURES, prune: bool = False) -> dict:
    """Write the study's evidence; returns {runs, new, cells, tables, figures, superseded} counts."""
    import pandas as pd

    _register_stages(study)
    name = study.config.get("study", "study")
    out = evidence_dir(name, root)
    out.mkdir(parents=True, exist_ok=True)
    records = []
    members = study_runs(study)
    for rid, (exps, label) in sorted(members.items()):
        d = Path(study.run_dir(rid))
        if (d / "summary.json").exists():
            records.append(run_record(d, study.runs[rid], exps, label))
    fresh = pd.DataFrame(records, columns=list(COLUMNS))
    runs_csv = out / "runs.csv"
    new, superseded = len(fresh), 0
    if runs_csv.exists() and not prune:
        old = pd.read_csv(runs_csv, dtype={"git_commit": str})
        kept = old[~old["run_id"].isin(fresh["run_id"])].copy()
        # which experiments a run belongs to is a fact of today's config, not of the run: a recorded run that a
        # newer experiment reuses (same settings, same id) is listed under it too
        kept["experiments"] = [";".join(members[rid][0]) if rid in members else _unregistered(exps, study)
                               for rid, exps in zip(kept["run_id"], kept["experiments"])]
        # a run that no experiment lists any more, where every experiment it was listed under exists today with
        # other runs (a corrected setting gave the cell a new run id): out of the study, into superseded.csv
        gone = kept["experiments"] == ""
        superseded = _supersede(old[old["run_id"].isin(kept.loc[gone, "run_id"])], out / SUPERSEDED)
        kept = kept[~gone]
        new = len(fresh) - int(old["run_id"].isin(fresh["run_id"]).sum())
        fresh = _merge(kept, fresh)
    fresh = fresh.sort_values("run_id", kind="stable").reset_index(drop=True)
    _write_csv(fresh, runs_csv)

    cells = [{"table": t, "row": r, "column": c, "run_id": rid}
             for t in study.tables for r, c, rid in table_cells(study, t)]
    _write_csv(pd.DataFrame(cells, columns=["table", "row", "column", "run_id"]), out / "cells.csv")

    tables = 0
    for src in _checkpoint_files(study):  # the picks the later stages ran: tests hold the records to them
        copy_file(src, out / "checkpoints" / src.name)
    for t in study.tables:
        for ext in ("md", "csv"):
            src = Path(study.tables_dir) / f"{t}.{ext}"
            if src.exists():
                copy_file(src, out / "tables" / src.name)
                tables += 1
    figs = 0
    for f in study.figures:
        src = Path(study.figures_dir) / f"{f}.png"
        if src.exists():
            copy_file(src, under(figures_root, name, src.name, key="study"))
            figs += 1
    return {"runs": len(fresh), "new": new, "cells": len(cells), "tables": tables, "figures": figs,
            "superseded": superseded}


def _checkpoint_files(study) -> list[Path]:
    """A leaderboard's checkpoint files that exist here: the screen's continued cells and the choice."""
    if study.leaderboard is None:
        return []
    from ..leaderboard.flow import choice_path, screen_path

    return [Path(f) for f in (screen_path(study), choice_path(study)) if Path(f).exists()]


def _unregistered(experiments, study) -> str:
    """A kept record's experiments that today's study does not define (a stage whose checkpoint is not on this
    machine, an experiment since renamed): only today's definition of an experiment says which runs it holds."""
    return ";".join(e for e in str(experiments).split(";") if e and e != "nan" and e not in study.experiments)


def _supersede(rows, path: Path) -> int:
    """Append records of runs the study no longer asks for to `path` (kept, not lost); returns how many."""
    import pandas as pd

    if not len(rows):
        return 0
    old = pd.read_csv(path, dtype={"git_commit": str}) if path.exists() else rows.iloc[:0]
    _write_csv(_merge(old, rows).sort_values("run_id", kind="stable"), path)
    return len(rows)


def _merge(old, new):
    """`new`'s records, and `old`'s for the runs `new` does not hold (a newer record of a run replaces its old one)."""
    import pandas as pd

    rest = old[~old["run_id"].isin(new["run_id"])]
    return pd.concat([rest, new], ignore_index=True) if len(rest) else new


def _write_csv(df, path: Path) -> None:
    from ..util.io import write_text

    write_text(path, df.to_csv(index=False, float_format="%.6g", lineterminator="\n"))
