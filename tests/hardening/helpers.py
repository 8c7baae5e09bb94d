"""Shared pieces of the hardening tests: a planted pickle that would run code, and one-line error checks."""
from __future__ import annotations

import os
from pathlib import Path

import torch


class _RunsCode:
    """Unpickling this calls os.system: what a crafted checkpoint.pt or model.pt would do."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def plant_pickle(path: Path, marker: Path, **entries) -> Path:
    """A torch file that holds the entries a real one has and one object whose unpickling runs `touch marker`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({**entries, "payload": _RunsCode(marker)}, path)
    return path


def one_line(err: str, *words: str) -> str:
    """`err` (a process's stderr) is exactly one line holding every word; returns it."""
    lines = [l for l in err.strip().splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], f"{lines[0]!r} does not name {w!r}"
    return lines[0]
