"""Export a study's evidence from a results/ tree: what exists, never what is missing.

  results/evidence/<study>/runs.csv     one record per finished run (records.COLUMNS)
  results/evidence/<study>/cells.csv    table, row, column, run_id: the runs behind every table cell
  results/evidence/<study>/superseded.csv  records of runs no experiment lists any more (a corrected setting)
  results/evidence/<study>/tables/      the rendered tables (.md, .csv) as the study's rules wrote them
  results/evidence/<study>/checkpoints/ a leaderboard's screen and choice files, as its later stages read them
  results/evidence/<study>/config/      the study's config file as exported (the pages render against it)
  figures/evidence/<study>/             the study's figures as PNG

Run directories stay out of git; these files are committed (.gitignore exceptions) and the result pages are
rendered from them alone. A run already in runs.csv but absent from this results/ tree is kept (a record is
evidence of a run made on another machine or in an earlier session), unless `prune` is set."""
from __future__ import annotations

from pathlib import Path

from ..core.recorded import EVIDENCE_ROOT as EVIDENCE
from .cells import table_cells
from ..core.errors import ConfigError
from ..core.util.io import copy_file
from ..core.util.names import under
from .records import COLUMNS, regenerable, run_record

FIGURES = Path("figures/evidence")
SUPERSEDED = "superseded.csv"


def evidence_dir(study_name: str, root: Path = EVIDENCE) -> Path:
    return under(root, study_name, key="study")  # a study named '../x' writes nowhere


def _register_stages(study) -> None:
    """Leaderboard: register the stages whose checkpoint files exist, so their runs are exported too."""
    if study.leaderboard is not None:
        from ..results.leaderboard.flow import register_known_stages

        register_known_stages(study)


def study_runs(study) -> dict[str, tuple[list[str], str]]:
    """{run id: (experiments it belongs to, its algorithm label)} over every experiment of the study."""
    out: dict[str, tuple[list[str], str]] = {}
    for ename, entries in study.experiments.items():
        for rid, lab in entries:
            exps, _ = out.setdefault(rid, ([], lab.get("algorithm", "")))
            exps.append(ename)
    return out


def export_study(study, root: Path = EVIDENCE, figures_root: Path = FIGURES, prune: bool = False,
                 keep_legacy: bool = False, config_path: str | Path | None = None) -> dict:
    """Write the study's evidence; returns {runs, new, cells, tables, figures, superseded, legacy} counts.

    A record that cannot be regenerated (records.regenerable: a modified working tree, no commit, no numerics
    fields) or that ran in other numerics than the study's is refused before anything is written, unless
    `keep_legacy`: then it is kept with its reason in the `legacy` column, and no rendered verdict may use it."""
    import pandas as pd

    _register_stages(study)
    name = study.config.get("study", "study")
    out = evidence_dir(name, root)
    records = []
    members = study_runs(study)
    for rid, (exps, label) in sorted(members.items()):
        d = Path(study.run_dir(rid))
        if (d / "summary.json").exists():
            records.append(run_record(d, study.runs[rid], exps, label))
    legacy = _check_regenerable(records, study.numerics, keep_legacy)
    out.mkdir(parents=True, exist_ok=True)
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
    if config_path is not None:
        snapshot_config(Path(config_path), out)

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
            "superseded": superseded, "legacy": legacy}


def _check_regenerable(records: list[dict], numerics: str, keep_legacy: bool) -> int:
    """Mark (keep_legacy) or refuse, in one line before anything is written, the records that cannot be regenerated
    from the commit they name, or that ran in other numerics than the study's; returns how many were marked."""
    bad = []
    for r in records:
        why = regenerable(r)
        if why is None and numerics == "portable" and r.get("numerics") != "portable":
            why = f"ran in {r.get('numerics')} numerics; the study's are portable"
        if why is not None:
            bad.append((r, why))
    if bad and not keep_legacy:
        r, why = bad[0]
        raise ConfigError(f"export: {len(bad)} record(s) cannot be regenerated (first: {r['run_id']}: {why}); "
                          "re-run them from a clean commit in the study's numerics, or pass --keep-legacy to keep "
                          "them marked legacy")
    for r, why in bad:
        r["legacy"] = why
    return len(bad)


def snapshot_config(path: Path, out: Path) -> Path:
    """The study's config as exported beside its records (results/evidence/<study>/config/<path under config/>): the
    pages render against the config the evidence was made with, so a method added to the live config shows as not
    yet run instead of changing the committed verdicts (pages.Context.config)."""
    parts = path.parts
    last = len(parts) - 1 - parts[::-1].index("config") if "config" in parts[:-1] else None  # the repo's config/
    rel = Path(*parts[last + 1:]) if last is not None else Path(path.name)
    dst = out / "config" / rel
    copy_file(path, dst)
    return dst


def _checkpoint_files(study) -> list[Path]:
    """A leaderboard's checkpoint files that exist here: the screen's continued cells and the choice."""
    if study.leaderboard is None:
        return []
    from ..results.leaderboard.flow import choice_path, screen_path

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
    from ..core.util.io import write_text

    write_text(path, df.to_csv(index=False, float_format="%.6g", lineterminator="\n"))
