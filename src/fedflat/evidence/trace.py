"""The runs behind one table cell, from the committed evidence (no run directories needed):

    python -m fedflat.evidence trace fedsynsam table2_A_fmnist FedSAM "FMNIST Q4"
    python -m fedflat.papers trace fedsynsam table2_A_fmnist FedSAM "FMNIST Q4"   (the same)

ROW and COLUMN match a cell's row and column label exactly, else case-insensitively as a prefix; an
ambiguous or unknown label is an error that lists the candidates."""
from __future__ import annotations

from pathlib import Path

from ..core.errors import ConfigError
from ..core.util.markdown import md_table
from .export import EVIDENCE
from .store import load

SHOW = ("run_id", "seed", "status", "final_acc", "last10_acc", "lambda_max", "lr", "hparams", "uplink", "rounds",
        "eval_split", "git_commit", "fedflat", "torch")


def _pick(values: list[str], want: str, what: str) -> str:
    if want in values:
        return want
    hits = [v for v in values if v.lower().startswith(want.lower())]
    if len(hits) == 1:
        return hits[0]
    shown = ", ".join(repr(v) for v in (hits or values)[:12])
    raise ConfigError(f"{what} {want!r} is {'ambiguous' if hits else 'not in the table'}; "
                      f"{'candidates' if hits else 'choose from'}: {shown}")


def trace(study: str, table: str, row: str, column: str, root: Path = EVIDENCE):
    """(row, column, the runs' records) behind one cell."""
    ev = load(study, root)
    if not ev.exists():
        raise ConfigError(f"no evidence for study {study!r} under {Path(root) / study} (export it: "
                          f"snakemake evidence --configfile <its config>)")
    cells = ev.cells()
    t = cells[cells["table"] == table]
    if t.empty:
        raise ConfigError(f"table {table!r} is not in {ev.dir / 'cells.csv'}; tables: "
                          f"{', '.join(sorted(cells['table'].unique()))}")
    r = _pick(list(dict.fromkeys(t["row"])), row, "row")
    t = t[t["row"] == r]
    c = _pick(list(dict.fromkeys(t["column"])), column, "column")
    ids = t.loc[t["column"] == c, "run_id"].tolist()
    runs = ev.runs()
    found = runs[runs["run_id"].isin(ids)]
    return r, c, ids, found


def render(study: str, table: str, row: str, column: str, root: Path = EVIDENCE) -> str:
    r, c, ids, found = trace(study, table, row, column, root)
    lines = [f"{study} / {table} / {r} / {c}: {len(ids)} runs, {len(found)} in the evidence", ""]
    if len(found):
        lines.append(md_table(found[[k for k in SHOW if k in found.columns]], index=False))
        lines += ["", f"data: {found['data'].iloc[0]}"]
    missing = sorted(set(ids) - set(found["run_id"]))
    if missing:
        lines += ["", "not in the evidence (not run yet, or not exported): " + ", ".join(missing)]
    return "\n".join(lines)
