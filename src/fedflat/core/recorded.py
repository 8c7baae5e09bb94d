"""Runs whose outcome is committed evidence, read back instead of re-run.

Run directories stay out of git, so a fresh machine starts with none, while the committed records
(results/evidence/<study>/runs.csv, written by fedflat.evidence) keep what every earlier run measured. A run id
is a function of all of a run's settings (spec.RunSpec.run_id), so the record with a run's id is that run's
outcome: a selection stage (a tuning grid, the leaderboard's screen and continuation) reads it as it reads the
run's summary.json, and the workflow does not schedule the run again. A study turns this off with
`reuse_evidence: false` (`snakemake --config reuse_evidence=false`), which re-runs every run whose directory is
missing. A record keeps what the tables read of a run's per-round curve (its costs, fedflat.core.util.curves) and its
Hessian values (FILE_COLUMNS); what it cannot give back (the whole curve, the model) still needs the run directory.

The record also says which commit made the run (git_commit): a run id covers the settings, not the code, as a
run directory's does.
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from .util.curves import CURVE_COSTS
from .util.numerics import NUMERICS_VERSION

EVIDENCE_ROOT = Path("results/evidence")
# a run that did not complete: NaN weights (diverged) or chance accuracy with an exploding loss (collapsed, the
# collapse rule of training/fl/engine.py); both have no final accuracy and count alike wherever runs are counted
FAILED = ("diverged", "collapsed")
SUMMARY = "summary.json"

_cache: dict[tuple, dict[str, dict]] = {}

# analysis outputs a record keeps: (file, JSON key) -> runs.csv column (fedflat.evidence.records)
FILE_COLUMNS = {("hessian.json", "lambda_max"): "lambda_max", ("hessian.json", "trace"): "trace",
                ("hessian_clients.json", "lambda_max_mean"): "lambda_max_clients_mean",
                ("hessian_clients.json", "lambda_max_max"): "lambda_max_clients_max",
                ("hessian_test.json", "lambda_max"): "lambda_max_test"}
# what a run that did not complete has nothing of: its record covers these whatever they hold
_COMPLETED_ONLY = (*FILE_COLUMNS.values(), "up_to_reach", "grads_to_reach")


def _files(root: Path) -> list[Path]:
    return sorted(Path(root).glob("*/runs.csv"))


def records(root: Path | str = EVIDENCE_ROOT) -> dict[str, dict]:
    """{run id: its committed record (the runs.csv row, strings)} over every study's evidence under `root`; a run
    recorded by two studies keeps the record of the later file in name order (the two are the same run)."""
    files = _files(Path(root))
    key = tuple((str(f), f.stat().st_mtime_ns) for f in files)
    if key not in _cache:
        out: dict[str, dict] = {}
        for f in files:
            with f.open(newline="") as fh:
                for row in csv.DictReader(fh):
                    out[row["run_id"]] = {**row, "evidence": f.parent.name}
        _cache.clear()
        _cache[key] = out
    return _cache[key]


def _fraction(x: str) -> float | None:
    """A record's accuracy (%, '' where the run diverged) as summary.json holds it (a fraction, None)."""
    v = finite_number(x)
    return None if v is None else v / 100


def finite_number(x) -> float | None:
    """A record's or a table's value as a finite float; None where it is empty, not a number, NaN or infinite."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def outcome_of_record(row: dict) -> dict:
    """The summary.json keys a selection reads, from a committed record, and where they came from."""
    ok = row["status"] == "completed"  # "collapsed" and "diverged" runs have no final accuracy
    rounds = finite_number(row.get("rounds_completed", ""))
    return {"status": row["status"], "eval_split": row.get("eval_split") or "test",
            "final_acc": _fraction(row["final_acc"]) if ok else None,
            "last10_acc": _fraction(row["last10_acc"]) if ok else None,
            "best_acc": _fraction(row.get("best_acc", "")),
            "final_loss": finite_number(row.get("final_loss", "")) if ok else None,
            "rounds_completed": None if rounds is None else int(rounds),
            **{col: finite_number(row.get(col, "")) for col in FILE_COLUMNS.values()},
            # what the leaderboard's tables read of the run beyond its summary (fedflat.core.util.curves)
            **{col: finite_number(row.get(col, "")) for col in CURVE_COSTS},
            "flatness_mean": finite_number(row.get("flatness_mean", "")) if ok else None,
            "wall_time": finite_number(row.get("wall_time_s", "")),
            "grad_evals_per_step": finite_number(row.get("grad_evals_per_step", "")),
            "diverged_round": finite_number(row.get("diverged_round", "")),
            "source": f"evidence:{row['evidence']}@{row.get('git_commit') or 'unknown commit'}"}


def recorded(run_id: str, root: Path | str = EVIDENCE_ROOT, numerics: str = "native") -> dict | None:
    """The committed outcome of a run (outcome_of_record), None where no study's evidence holds it in a form that
    can stand for a run made in `numerics` (matches_numerics: a portable study never reads a legacy record)."""
    row = records(root).get(run_id)
    return None if row is None or not matches_numerics(row, numerics) else outcome_of_record(row)


def matches_numerics(row: dict, mode: str) -> bool:
    """Whether a committed record (a runs.csv row) can stand for a run made in numerics `mode` today: a portable
    run only by a portable record of today's numerics version, made at a clean commit and not marked legacy
    (core/util/numerics.py); native makes no promise across machines, so any record of the run will do."""
    if mode != "portable":
        return True
    commit = row.get("git_commit") or ""
    return (row.get("numerics") == "portable" and str(row.get("numerics_version")) == str(NUMERICS_VERSION)
            and bool(commit) and not commit.endswith("-dirty") and not row.get("legacy"))


def covers(run_id: str, needs: tuple[str, ...] = (), root: Path | str = EVIDENCE_ROOT,
           numerics: str = "native") -> bool:
    """Whether the evidence holds this run with every key of `needs` measured (e.g. ('lambda_max',) for a run
    whose Hessian the study reads), under the study's `numerics` (matches_numerics). A run that did not complete
    has no Hessian and no cost to reach: its record covers those keys as it is (running it again would diverge
    again)."""
    row = records(root).get(run_id)
    if row is None or not matches_numerics(row, numerics):
        return False
    out = outcome_of_record(row)
    done = out["status"] == "completed"
    return all(out.get(k) is not None for k in needs if done or k not in _COMPLETED_ONLY)


def current_keys(summary: dict) -> dict:
    """summary.json under today's keys: runs written before 29 Nov 2026 named the final loss on their eval_split
    "final_test_loss", also where that split was the validation one."""
    if "final_test_loss" in summary and "final_loss" not in summary:
        summary = {**summary, "final_loss": summary["final_test_loss"]}
        del summary["final_test_loss"]
    return summary


def read_outcome(run_dir: str | Path, run_id: str | None, reuse: bool = True,
                 root: Path | str = EVIDENCE_ROOT, numerics: str = "native") -> dict:
    """A run's summary.json where its directory has one, else (with `reuse`) its committed record; a clear error
    naming the file where neither exists."""
    path = Path(run_dir) / SUMMARY
    if path.exists():
        return current_keys(json.loads(path.read_text()))
    out = recorded(run_id, root, numerics) if (reuse and run_id) else None
    if out is None:
        raise FileNotFoundError(f"{path}: missing, and no committed evidence records run {run_id!r}; "
                                f"run it first (snakemake {path})")
    return out


def file_column(fname: str, key: str) -> str | None:
    """The runs.csv column that keeps an analysis file's value (None: a record does not keep it)."""
    return FILE_COLUMNS.get((fname, key))


def read_file_value(run_dir: str | Path, run_id: str | None, fname: str, key: str, reuse: bool = True,
                    root: Path | str = EVIDENCE_ROOT) -> float | None:
    """An analysis output (e.g. hessian_clients.json's lambda_max_mean) from the run directory, else (with
    `reuse`, for the values a record keeps) from the committed record; a clear error naming the file otherwise."""
    path = Path(run_dir) / fname
    if path.exists():
        v = json.loads(path.read_text()).get(key)
        return None if v is None else float(v)
    col = file_column(fname, key)
    out = recorded(run_id, root) if (reuse and run_id and col) else None
    if out is not None and out.get(col) is None and out["status"] != "completed":
        return None  # the analysis writes null for a diverged run's model, and its record keeps that null
    if out is None or out.get(col) is None:
        raise FileNotFoundError(f"{path}: missing, and no committed record keeps its {key!r} for run {run_id!r}; "
                                f"run it first (snakemake {path})")
    return out[col]

