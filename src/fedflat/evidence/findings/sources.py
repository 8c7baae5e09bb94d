"""Where a finding's cells come from: the committed records (a unit's filters crossed with a candidate's), a cell of
an exported table (its runs, cells.csv), and the paper's published values."""
from __future__ import annotations

from ...core.errors import ConfigError
from ..legacy import regenerable_only
from .match import cell, prepared, published


def all_runs_of(ctx, f):
    """Every committed record of the finding's evidence, legacy ones too."""
    return ctx.memo(("runs", f.get("evidence")), lambda: prepared(ctx.evidence(f.get("evidence")).runs()))


def runs_of(ctx, f):
    """The records the finding reads: only those that can be regenerated (a legacy record never feeds a verdict,
    evidence/legacy.py)."""
    return ctx.memo(("runs", f.get("evidence"), "regenerable"), lambda: regenerable_only(all_runs_of(ctx, f)))


def paper_cell(f, u: dict) -> dict:
    """The paper cell a unit reads: the unit's table and column, under the finding's `paper:` and then the unit's."""
    return {"table": u.get("table"), "column": u.get("column"), **(f.get("paper") or {}), **(u.get("paper") or {})}


def paper_of(ctx, f, u: dict, row: str | None = None) -> float | None:
    p = paper_cell(f, u)
    if "value" in p:
        return p["value"]
    return published(ctx, f, {**p, **({"row": row} if row else {})})


def candidate_cells(ctx, f, runs) -> list[dict]:
    """Per unit: {unit, candidates, cells: {value: cell}, paper} (closes_shortfall)."""
    out = []
    for i, u in enumerate(f.units):
        cells = {c["value"]: cell(runs, [u.get("where") or {}, c["where"]], f.metric, f.seeds, f.where(f"units[{i}]"))
                 for c in f.candidates}
        out.append({"unit": u, "candidates": f.candidates, "cells": cells, "paper": paper_of(ctx, f, u)})
    return out


def table_run_ids(ctx, f, u: dict, row: str, key: str) -> list[str]:
    """The runs behind one cell of a table of the finding's evidence, as its export recorded them (cells.csv: the
    table kind's own cells): the unit's `table` and `column` (a column group), the arm's `row`."""
    cells = ctx.memo(("cells", f.get("evidence")), lambda: ctx.evidence(f.get("evidence")).cells())
    table, column = u.get("table"), u.get("column")
    if not table or not column:
        raise ConfigError(f"{key}: a `row` arm needs the unit's table and column (select: {{table, column}})")
    mine = cells[(cells["table"] == table) & (cells["row"] == row)]
    return [r for c, r in zip(mine["column"], mine["run_id"]) if c == column or str(c).startswith(f"{column} / ")]
