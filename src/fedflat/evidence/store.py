"""The committed evidence, read back with pandas: what result pages, the atlas and trace use (no run
directories needed)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .export import EVIDENCE, SUPERSEDED
from .runs_schema import read_runs


@dataclass
class Evidence:
    """One study's evidence: runs (one row per run) and cells (table, row, column, run_id)."""
    study: str
    root: Path

    @property
    def dir(self) -> Path:
        return Path(self.root) / self.study

    def exists(self) -> bool:
        return (self.dir / "runs.csv").exists()

    def runs(self):
        return self._records("runs.csv")

    def superseded(self):
        """Records of runs no experiment lists any more (export.py): made at a setting since corrected."""
        return self._records(SUPERSEDED)

    def _records(self, name: str):
        import pandas as pd

        path = self.dir / name
        if not path.exists():
            return pd.DataFrame(columns=list(_columns()))
        return read_runs(path)  # checked against the declared schema: a damaged file is one line, never a page

    def cells(self):
        import pandas as pd

        path = self.dir / "cells.csv"
        if not path.exists():
            return pd.DataFrame(columns=["table", "row", "column", "run_id"])
        return pd.read_csv(path, dtype=str)

    def table_text(self, name: str, ext: str = "md") -> str | None:
        path = self.dir / "tables" / f"{name}.{ext}"
        return path.read_text() if path.exists() else None

    def files(self) -> list[Path]:
        """Every file of this study's evidence (what the pages target depends on)."""
        return sorted(p for p in self.dir.rglob("*") if p.is_file()) if self.dir.exists() else []


def _columns():
    from .records import COLUMNS

    return COLUMNS


def load(study: str, root: Path | str = EVIDENCE) -> Evidence:
    return Evidence(study, Path(root))
