"""Where a finding's cells come from: the committed records (a unit's filters crossed with a candidate's), a cell of
an exported table (its runs, cells.csv), a row of a study's exported table (its per-seed values), the catalog's own runs (the
values it uses), and the paper's published values."""
from __future__ import annotations

from ...core.errors import ConfigError
from ..legacy import regenerable_only
from .declared import fmt
from .match import cell, prepared, published, spec_value


def all_runs_of(ctx, f):
    """Every committed record of the finding's evidence, legacy ones too."""
    return ctx.memo(("runs", f.get("evidence")), lambda: prepared(ctx.evidence(f.get("evidence")).runs()))


def runs_of(ctx, f):
    """The records the finding reads: only those that can be regenerated (`records: regenerable`, the default: a
    legacy record never feeds a verdict, evidence/legacy.py), or every one (`records: all`, the findings written
    over legacy evidence, whose block says so)."""
    if f.records == "all":
        return all_runs_of(ctx, f)
    return ctx.memo(("runs", f.get("evidence"), "regenerable"), lambda: regenerable_only(all_runs_of(ctx, f)))


def paper_of(ctx, f, u: dict, row: str | None = None) -> float | None:
    p = {"table": u.get("table"), "column": u.get("column"), **(f.get("paper") or {}), **(u.get("paper") or {})}
    if "value" in p:
        return p["value"]
    return published(ctx, f, {**p, **({"row": row} if row else {})})


def candidate_cells(ctx, f, runs) -> list[dict]:
    """Per unit: {unit, candidates, cells: {value: cell}, paper} (adopt_candidate, closes_shortfall)."""
    out = []
    for i, u in enumerate(f.units):
        cands = u.get("candidates") or f.candidates
        cells = {c["value"]: cell(runs, [u.get("where") or {}, c["where"]], f.metric, f.seeds, f.where(f"units[{i}]"))
                 for c in cands}
        out.append({"unit": u, "candidates": cands, "cells": cells, "paper": paper_of(ctx, f, u)})
    return out


def preset_label(preset) -> str:
    from ...training.algorithms import PRESETS

    return PRESETS.get(preset).label if preset else ""


def catalog_values(study, experiments, preset, names: list[str]) -> tuple[set, list[set]]:
    """(the values of names[0], [the values of each other name]) the catalog's runs of `preset` use in
    `experiments` ('%g'; '' where the run has none)."""
    if study is None or not experiments:
        return set(), []
    got = [set() for _ in names]
    for e in experiments:
        for rid, _ in study.experiments[e]:
            spec = study.runs[rid]
            if spec.algorithm == preset:
                for s, n in zip(got, names):
                    v = spec_value(spec, n)
                    s.add(fmt(v) if v is not None else "")
    return got[0], got[1:]


def exported_table(ctx, study: str, table: str):
    import io

    import pandas as pd

    text = ctx.evidence(study).table_text(table, "csv")
    return None if text is None else pd.read_csv(io.StringIO(text))


def table_run_ids(ctx, f, u: dict, row: str, key: str) -> list[str]:
    """The runs behind one cell of a table of the finding's evidence, as its export recorded them (cells.csv: the
    table kind's own cells): the unit's `table` and `column` (a column group), the arm's `row`."""
    cells = ctx.memo(("cells", f.get("evidence")), lambda: ctx.evidence(f.get("evidence")).cells())
    table, column = u.get("table"), u.get("column")
    if not table or not column:
        raise ConfigError(f"{key}: a `row` arm needs the unit's table and column (select: {{table, column}})")
    mine = cells[(cells["table"] == table) & (cells["row"] == row)]
    return [r for c, r in zip(mine["column"], mine["run_id"]) if c == column or str(c).startswith(f"{column} / ")]
