"""Cell statistics over seeds: mean ± std of a final metric, rounds to a target accuracy.

Rounds to target: the first *evaluated* round at which the seed-mean test-accuracy curve reaches
the target (so the resolution is `eval_every`); never reached within T rounds -> "T+", the
papers' "1000+" convention. Mean ± std uses the sample std (ddof=1) over completed seeds; a
diverged seed is counted and shown, never averaged in.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from ...core.errors import ConfigError, choice_error
from ...training.fl.metrics import read_metrics
from ...core.recorded import FAILED, SUMMARY, read_file_value, read_outcome
from ...core.run_paths import run_of_file


@dataclass
class CellValue:
    mean: Optional[float] = None
    std: Optional[float] = None
    n: int = 0  # seeds that contributed
    seeds: int = 0  # seeds selected
    diverged: int = 0
    never: bool = False  # rounds metric: target not reached
    horizon: Optional[int] = None  # rounds metric: T
    per_seed: list = field(default_factory=list)

    def text(self, digits: int = 2, rounds: bool = False) -> str:
        if self.seeds == 0:
            return "not run"
        if rounds:
            if self.never:
                return f"{self.horizon}+"
            return "n/a" if self.mean is None else f"{int(round(self.mean))}"
        if self.mean is None:
            return "diverged" if self.diverged else "n/a"
        s = f"{self.mean:.{digits}f}"
        if self.std is not None and self.n > 1:
            s += f"±{self.std:.{digits}f}"
        if self.diverged:
            s += f" [{self.diverged}/{self.seeds} diverged]"
        return s


def mean_std(values) -> tuple[Optional[float], Optional[float], int]:
    v = np.asarray([x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))], float)
    if len(v) == 0:
        return None, None, 0
    return float(v.mean()), (float(v.std(ddof=1)) if len(v) > 1 else 0.0), len(v)


def _summary(run_dir: str) -> dict:
    """The run's summary.json, or its committed record where its directory is gone (fedflat.core.recorded): a table
    of summary metrics then renders without the run (its inputs leave recorded runs out)."""
    return read_outcome(run_dir, run_of_file(Path(run_dir) / SUMMARY))


def _metrics(run_dir: str) -> pd.DataFrame:
    return read_metrics(Path(run_dir) / "metrics.csv")


SUMMARY_METRICS = {
    # metric -> (summary key, scale, needs a completed run)
    "acc": ("final_acc", 100.0, True),
    "last10_acc": ("last10_acc", 100.0, True),
    "best_acc": ("best_acc", 100.0, False),  # FedSAGD's "top accuracy within the budget"
    "final_loss": ("final_loss", 1.0, True),
}


def summary_metric(run_dirs: list[str], metric: str) -> CellValue:
    key, scale, needs_completed = SUMMARY_METRICS[metric]
    vals, diverged = [], 0
    for d in run_dirs:
        s = _summary(d)
        ok = s.get("status") == "completed"
        diverged += s.get("status") in FAILED
        v = s.get(key)
        vals.append(v * scale if v is not None and (ok or not needs_completed) else None)
    m, sd, n = mean_std(vals)
    return CellValue(m, sd, n, len(run_dirs), diverged, per_seed=vals)


def per_round_metric(run_dirs: list[str], metric: str) -> CellValue:
    """wall_per_round: training seconds per round (evaluation excluded); up_mb_per_round: uplink MB."""
    vals = []
    for d in run_dirs:
        s = _summary(d)
        r = max(1, int(s.get("rounds_completed") or 1))
        if metric == "wall_per_round":
            vals.append(float(s.get("train_time", s.get("wall_time"))) / r)
        else:
            vals.append(float(s.get("up_bytes_total", 0)) / r / 1e6)
    m, sd, n = mean_std(vals)
    return CellValue(m, sd, n, len(run_dirs), per_seed=vals)


def column_metric(run_dirs: list[str], column: str, scale: float = 1.0) -> CellValue:
    """The last logged value of a metrics.csv column (e.g. an analysis hook's output)."""
    vals = []
    for d in run_dirs:
        m = _metrics(d)
        v = m[column].dropna() if column in m else pd.Series(dtype=float)
        vals.append(float(v.iloc[-1]) * scale if len(v) else None)
    mean, sd, n = mean_std(vals)
    return CellValue(mean, sd, n, len(run_dirs), per_seed=vals)


def rounds_to_target(curves: list[pd.DataFrame], target_pct: float, horizon: int,
                     metric: str = "test_acc") -> CellValue:
    """curves: one metrics frame per seed (columns round, test_acc as a fraction)."""
    if not curves:
        return CellValue()
    per_seed, series = [], []
    for c in curves:
        s = c[["round", metric]].dropna().set_index("round")[metric].astype(float) * 100.0
        series.append(s)
        hit = s[s >= target_pct - 1e-9]
        per_seed.append(int(hit.index[0]) if len(hit) else None)
    joint = pd.concat(series, axis=1, join="inner").mean(axis=1).sort_index()
    hit = joint[joint >= target_pct - 1e-9]
    if len(hit):
        return CellValue(float(hit.index[0]), None, len(curves), len(curves), horizon=horizon, per_seed=per_seed)
    return CellValue(None, None, len(curves), len(curves), never=True, horizon=horizon, per_seed=per_seed)


def rounds_metric(run_dirs: list[str], target_pct: float, horizon: int) -> CellValue:
    """horizon: the configured number of rounds T (a diverged run stops early; T+ still means T)."""
    return rounds_to_target([_metrics(d) for d in run_dirs], target_pct, horizon)


def file_metric(run_dirs: list[str], fname: str, key: str) -> CellValue:
    """A number from a JSON file an analysis rule wrote into each run directory, or from the run's committed
    record where the directory is gone and the record keeps that value (fedflat.core.recorded.FILE_COLUMNS)."""
    vals = [read_file_value(d, run_of_file(Path(d) / SUMMARY), fname, key) for d in run_dirs]
    # a null from a run that diverged (the analysis writes null for its model) counts as diverged, as in accuracy
    diverged = sum(v is None and _summary(d).get("status") in FAILED for v, d in zip(vals, run_dirs))
    m, sd, n = mean_std(vals)
    return CellValue(m, sd, n, len(run_dirs), diverged, per_seed=vals)


# --------------------------------------------------------------------------------------------
# the metric names a catalog entry may use
NAMED_METRICS = {"acc": "Acc", "last10_acc": "Acc (last 10%)", "best_acc": "Top acc", "final_loss": "Loss",
                 "wall_per_round": "s/round", "up_mb_per_round": "MB/round"}
# A file metric's header names its quantity; the group text says which Hessian (whose data, which reduction).
FILE_KEY_HEADERS = {"lambda_max": "λ_max", "lambda_max_mean": "λ_max", "lambda_max_max": "λ_max", "trace": "trace"}


def metric_header(metric: str) -> str:
    if metric in NAMED_METRICS:
        return NAMED_METRICS[metric]
    if metric.startswith("rounds@"):
        return f"R({metric[7:]}%)"
    key = metric.split(":")[-1]
    return FILE_KEY_HEADERS.get(key, key)


def check_metric(metric, key: str) -> str:
    if not isinstance(metric, str):
        raise ConfigError(f"{key}: metric must be a string, got {metric!r}")
    if metric in NAMED_METRICS:
        return metric
    if metric.startswith("rounds@"):
        try:
            t = float(metric[7:])
        except ValueError:
            t = -1
        if not 0 < t <= 100:
            raise ConfigError(f"{key}: {metric!r} needs a target accuracy in percent, e.g. rounds@78")
        return metric
    if metric.startswith("column:") and len(metric) > 7:
        return metric
    if metric.startswith("file:") and metric.count(":") == 2:  # file:hessian.json:lambda_max (analysis output)
        return metric
    raise choice_error(key, metric, sorted(NAMED_METRICS) + ["rounds@<target %>", "column:<name>"])
