"""Load run outputs into tidy pandas frames."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ...training.fl.metrics import read_metrics


def load_runs(entries: list[dict]) -> pd.DataFrame:
    """entries: dicts with the run's labels and 'dir'. Returns one row per run with its summary."""
    rows = []
    for e in entries:
        s = json.loads((Path(e["dir"]) / "summary.json").read_text())
        rows.append({**{k: v for k, v in e.items() if k != "dir"}, **s, "dir": e["dir"]})
    return pd.DataFrame(rows)


def load_curves(entries: list[dict]) -> pd.DataFrame:
    frames = []
    for e in entries:
        m = read_metrics(Path(e["dir"]) / "metrics.csv")
        for k, v in e.items():
            if k != "dir":
                m[k] = v
        frames.append(m)
    return pd.concat(frames, ignore_index=True)
