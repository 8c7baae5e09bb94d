"""Which runs make which cell of a table: (row, column, run id), as each table kind declares them (its optional
`cells` hook, fedflat.core.kind_registry). The trace command and the atlas read them back from cells.csv, so a fresh clone can
answer "what is behind this number"."""
from __future__ import annotations

Cell = tuple[str, str, str]  # (row, column, run id)


def table_cells(study, name: str) -> list[Cell]:
    """Every (row, column, run id) of table `name`; [] for a kind that declares no cells."""
    from ..core.kind_registry import TABLE_KINDS

    spec = study.tables[name]
    cells = getattr(TABLE_KINDS.get(spec["kind"]), "cells", None)
    return list(dict.fromkeys(cells(study, name, spec))) if cells else []
