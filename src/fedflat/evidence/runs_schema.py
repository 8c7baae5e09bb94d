"""The declared schema of a committed runs.csv (and superseded.csv), checked each time the evidence is read.

The result pages draw verdicts from these records, so a damaged file (a NaN where a completed run's accuracy
stands, a truncated or garbled line, a lost column) must stop the reading with one line naming the file, the row
and the column, before any page is rendered from it; `git checkout -- <file>` restores the committed one.

A hand-written declaration rather than a schema library: the rules are a few kinds of column and one row rule,
and the reader stays free of a dependency. A test checks that the declaration covers records.COLUMNS exactly.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ConfigError


@dataclass(frozen=True)
class Col:
    kind: str  # "text" (any string, may be empty) | "id" (non-empty, unique) | "word" | "int" | "number"
    low: float | None = None  # numbers: the smallest value allowed
    high: float | None = None  # numbers: the largest value allowed
    nullable: bool = True  # numbers: an empty cell allowed


_TEXT, _INT0 = Col("text"), Col("int", low=0)
_PCT = Col("number", low=0.0, high=100.0)
_NONNEG = Col("number", low=0.0)

# every column of runs.csv as fedflat.evidence.records writes it (records.COLUMNS)
RUNS_SCHEMA: dict[str, Col] = {
    "run_id": Col("id"), "settings_hash": _TEXT, "experiments": _TEXT, "label": _TEXT, "dataset": _TEXT,
    "partition": _TEXT, "model": _TEXT, "preset": _TEXT, "hparams": _TEXT,
    "lr": Col("number", low=0.0), "rounds": Col("int", low=1), "local_steps": Col("int", low=1),
    "batch_size": Col("int", low=1), "num_clients": Col("int", low=1),
    "participation": Col("number", low=0.0, high=1.0),
    "holdout": Col("number", low=0.0, high=0.5), "uplink": _TEXT, "seed": Col("int", low=0),
    "eval_split": _TEXT, "data": _TEXT, "status": Col("word"), "rounds_completed": _INT0, "diverged_round": _INT0,
    "final_acc": _PCT, "last10_acc": _PCT, "best_acc": _PCT, "final_loss": _NONNEG, "flatness_mean": _NONNEG,
    "lambda_max": Col("number"), "trace": Col("number"), "lambda_max_clients_mean": Col("number"),
    "lambda_max_clients_max": Col("number"), "lambda_max_test": Col("number"),
    "up_bytes_total": _INT0, "down_bytes_total": _INT0, "up_floats": _NONNEG, "down_floats": _NONNEG,
    "up_to_reach": _NONNEG, "grads_to_reach": _NONNEG, "grad_evals_per_step": _INT0,
    "wall_time_s": _NONNEG, "peak_rss_mb": _NONNEG, "backend": _TEXT, "fedflat": _TEXT, "git_commit": _TEXT,
    "torch": _TEXT,
}
# columns records gained later (what made the run: util/numerics.py; `legacy`): checked where a file has them, as
# records made before they existed lack them
LATER_COLUMNS: dict[str, Col] = {
    "numerics": _TEXT, "numerics_version": _TEXT, "cpu_model": _TEXT, "cpu_capability": _TEXT, "mkl": _TEXT,
    "threads": Col("int", low=1), "resumed_from": _TEXT, "legacy": _TEXT,
}
# a completed run's record holds its result, the accuracies the pages' verdicts read: numbers (the row rule;
# records.run_record writes them; best_acc, which a diverged run also has, is checked as a column)
COMPLETED_HOLDS = ("final_acc", "last10_acc")
_WORD = re.compile(r"[a-z][a-z_]*")


_checked: dict[tuple, object] = {}  # (path, mtime, size) -> the checked frame: pages read one file many times


def read_runs(path: str | Path):
    """runs.csv as a frame (pandas' own types), checked against RUNS_SCHEMA; a ConfigError naming the file, row
    (1 = the first record, on line 2) and column where it does not match."""
    import pandas as pd

    path = Path(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _checked:
        try:
            frame = pd.read_csv(path, dtype={"git_commit": str, "uplink": str}, keep_default_na=True)
        except pd.errors.EmptyDataError:
            raise ConfigError(_refusal(path, "the file is empty")) from None
        except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(_refusal(path, f"not a readable CSV ({' '.join(str(exc).split())[:200]})")) from None
        check_runs(frame, path)
        _checked[key] = frame
    return _checked[key].copy()  # a reader may add columns: never to the cached frame


def check_runs(frame, path) -> None:
    import numpy as np

    missing = [c for c in RUNS_SCHEMA if c not in frame.columns]
    if missing:
        raise ConfigError(_refusal(path, f"column {missing[0]!r} is missing"))
    for col, spec in [*RUNS_SCHEMA.items(), *((c, k) for c, k in LATER_COLUMNS.items() if c in frame.columns)]:
        problem = _first_bad(frame[col], spec)
        if problem is not None:
            row, why = problem
            raise ConfigError(_refusal(path, why, row, col))
    done = (frame["status"] == "completed").to_numpy()
    for col in COMPLETED_HOLDS:
        bad = done & ~np.isfinite(frame[col].to_numpy(dtype=float))
        if bad.any():
            row = int(bad.nonzero()[0][0])
            raise ConfigError(_refusal(path, f"a completed run's {col} must be a number, got {frame[col].iloc[row]!r}",
                                       row, col))


def _first_bad(series, spec: Col) -> tuple[int, str] | None:
    """(row, why) of the first cell that breaks `spec`, None where every cell keeps it."""
    import numpy as np
    import pandas as pd

    if spec.kind in ("text", "id", "word"):
        text = series.astype("string")
        if spec.kind == "id":
            empty = (text.isna() | (text.str.len() == 0)).to_numpy(dtype=bool)
            if empty.any():
                return _first(empty), "an empty run id"
            dup = text.duplicated().to_numpy()
            if dup.any():
                return _first(dup), f"run id {text.iloc[_first(dup)]!r} is listed twice"
        if spec.kind == "word":
            bad = ~text.fillna("").str.fullmatch(_WORD.pattern).to_numpy(dtype=bool)
            if bad.any():
                return _first(bad), f"{series.iloc[_first(bad)]!r} is not a status word"
        return None
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
    given = series.notna().to_numpy()
    unreadable = np.isnan(values) & given
    if unreadable.any():
        return _first(unreadable), f"{series.iloc[_first(unreadable)]!r} is not a number"
    if not spec.nullable and np.isnan(values).any():
        return _first(np.isnan(values)), "an empty cell where a number is due"
    infinite = np.isinf(values)
    if infinite.any():
        return _first(infinite), f"{values[_first(infinite)]:g} is not a finite number"
    with np.errstate(invalid="ignore"):
        out = np.zeros(len(values), dtype=bool)
        if spec.low is not None:
            out |= values < spec.low
        if spec.high is not None:
            out |= values > spec.high
        if spec.kind == "int":
            out |= np.isfinite(values) & (values != np.round(values))
    if out.any():
        return _first(out), f"{values[_first(out)]:g} is outside {_domain(spec)}"
    return None


def _domain(spec: Col) -> str:
    what = "integers" if spec.kind == "int" else "numbers"
    lo = "" if spec.low is None else f" >= {spec.low:g}"
    hi = "" if spec.high is None else f" <= {spec.high:g}"
    return f"{what}{lo}{' and' if lo and hi else ''}{hi}"


def _first(mask) -> int:
    return int(mask.nonzero()[0][0])


def _refusal(path, why: str, row: int | None = None, col: str | None = None) -> str:
    where = "" if row is None else f" row {row + 1} (line {row + 2}), column {col}:"
    return (f"{path}:{where} {why}; the file does not match the runs.csv schema (fedflat/evidence/runs_schema.py) "
            f"and no page is rendered from it: restore it (git checkout -- {path}) or export the study again")
