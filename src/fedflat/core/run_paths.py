"""Where a run's outputs live, and which run a file belongs to: results/runs/<run id>/<file>.

A run id (spec.RunSpec.run_id) is itself a path, e.g. digits/iid/mlp/fedavg/<params hash>/seed0, so the run of
a file is found by stripping the runs directory and the file name, never by slicing the literal elsewhere.
The workflow's rules spell the same pattern (results/runs/{run}/...) as Snakemake wildcards.
"""
from __future__ import annotations

from pathlib import Path

RUNS_DIR = "results/runs"


def run_dir(run_id: str) -> str:
    """The directory of a run's outputs (relative to the working directory, as the rules write it)."""
    return f"{RUNS_DIR}/{run_id}"


def run_of_file(path: str | Path) -> str | None:
    """The run id of a file directly inside a run's directory (results/runs/<run id>/<file>); None for a path
    outside results/runs (a partition, a table)."""
    parent = Path(path).parent.as_posix()
    prefix = RUNS_DIR + "/"
    return parent[len(prefix):] if parent.startswith(prefix) else None
