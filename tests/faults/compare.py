"""Compare two result trees of the same study: every output of `a` exists in `b`, and every
run's metrics (all columns but wall-clock times) and every table are identical.

    python tests/faults/compare.py DIR_A DIR_B     # exit 0 when equal, else one line per difference
"""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

TIME_COLUMNS = {"wall_time", "eval_time"}
TIME_KEYS = {"wall_time", "train_time"}


def metrics_rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return [{k: v for k, v in r.items() if k not in TIME_COLUMNS} for r in csv.DictReader(fh)]


def summary(path: Path) -> dict:
    return {k: v for k, v in json.loads(path.read_text()).items() if k not in TIME_KEYS}


def outputs(root: Path) -> list[Path]:
    """Every result file a study run leaves (not logs, not Snakemake's own state)."""
    found = []
    for sub in ("results/runs", "results/partitions", "results/tables", "figures"):
        base = root / sub
        if base.exists():
            found += [p.relative_to(root) for p in base.rglob("*")
                      if p.is_file() and p.suffix not in (".log",) and not p.name.startswith(".")]
    return sorted(found)


def compare_trees(a: str | Path, b: str | Path) -> list[str]:
    a, b = Path(a), Path(b)
    diffs = []
    files = outputs(a)
    if not any(p.name == "metrics.csv" for p in files):
        return [f"{a}: no metrics.csv found"]
    for rel in files:
        pa, pb = a / rel, b / rel
        if not pb.exists():
            diffs.append(f"missing in {b}: {rel}")
        elif rel.name == "metrics.csv" and metrics_rows(pa) != metrics_rows(pb):
            diffs.append(f"metrics differ: {rel}")
        elif rel.name == "summary.json" and summary(pa) != summary(pb):
            diffs.append(f"summary differs: {rel}")
        elif rel.suffix in (".csv", ".md") and rel.parts[:2] == ("results", "tables") and pa.read_text() != pb.read_text():
            diffs.append(f"table differs: {rel}")
    return diffs


if __name__ == "__main__":
    d = compare_trees(sys.argv[1], sys.argv[2])
    print("\n".join(d) if d else f"identical: {len(outputs(Path(sys.argv[1])))} outputs")
    sys.exit(1 if d else 0)
