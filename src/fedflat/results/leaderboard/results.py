"""The final runs' outputs as one frame per run and one row per (partition, method): what every leaderboard
table and figure reads, computed in one place."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ...training.fl.metrics import read_metrics
from ...core.recorded import SUMMARY, read_outcome
from ...core.util.curves import CURVE_COSTS, curve_costs


def partition_title(p: str) -> str:
    """iid -> IID, dir0.3[-norep] -> Dir(0.3), shards2 -> Path(2)."""
    base = p.split("-")[0]
    if base.startswith("dir"):
        return f"Dir({base[3:]})"
    if base.startswith("shards"):
        return f"Path({base[6:]})"
    return base.upper() if base == "iid" else base


def load_runs(entries: list[dict], hessian: bool = True) -> pd.DataFrame:
    """One row per final run: accuracies, costs per round, cost to reach its own final accuracy, curvature. A run
    whose directory is gone is read from its committed record (fedflat.core.recorded), which keeps the same numbers
    (fedflat.core.util.curves), so a leaderboard whose stages span sessions renders from the evidence."""
    return pd.DataFrame([_row(e, hessian) for e in entries])


def _row(e: dict, hessian: bool) -> dict:
    from ...training.fl.engine import BYTES_PER_FLOAT

    d = Path(e["dir"])
    if (d / SUMMARY).exists():
        s, m = json.loads((d / SUMMARY).read_text()), read_metrics(d / "metrics.csv")
        ok = s["status"] == "completed"
        last10 = 100 * s["last10_acc"] if ok else np.nan
        costs = curve_costs(m, last10, ok, BYTES_PER_FLOAT)
        flat = float(m["flatness_distance"].mean()) if ok else np.nan
        last_round = int(m["round"].iloc[-1]) if len(m) else 0
        hj = json.loads((d / "hessian.json").read_text()) if (hessian and (d / "hessian.json").exists()) else {}
    else:
        s = read_outcome(d, e["run_id"])  # the committed record: its keys mirror summary.json's
        ok = s["status"] == "completed"
        last10 = 100 * s["last10_acc"] if ok else np.nan
        costs = {k: np.nan if s.get(k) is None else s[k] for k in CURVE_COSTS}
        flat = s.get("flatness_mean") if ok else np.nan
        last_round = int(s.get("diverged_round") or s.get("rounds_completed") or 0)
        hj = {"lambda_max": s.get("lambda_max"), "trace": s.get("trace")} if hessian else {}
    row = {k: e[k] for k in ("partition", "method", "preset", "seed")}
    row.update({
        "status": s["status"], "final_acc": 100 * s["final_acc"] if ok else np.nan, "last10_acc": last10,
        "grad_evals_per_step": float(s["grad_evals_per_step"]), **costs,
        # a diverged run stopped early on exploding weights: its wall time, flatness and curvature describe
        # the blow-up, not the method, so they stay out of the method's means (completed seeds only)
        "wall_time": s["wall_time"] if ok else np.nan, "flatness": np.nan if flat is None else flat,
        "lambda_max": np.nan, "trace": np.nan,
        "last_round": last_round,  # where a diverged run stopped
    })
    if ok and hj:
        row["lambda_max"], row["trace"] = hj.get("lambda_max") or np.nan, hj.get("trace") or np.nan
    return row


def unstable_methods(m: dict) -> dict[str, dict[str, str]]:
    """{partition: {method label: preset}} of the methods the choice left without a setting on a partition (every
    continued cell, or every grid point, diverged), from a leaderboard manifest (`chosen`: {partition: {label: pick
    or None}}; `presets`: {label: preset})."""
    presets = m.get("presets") or {}
    return {p: {label: presets.get(label, label) for label, c in picks.items() if c is None}
            for p, picks in m["chosen"].items()}


def per_method(runs: pd.DataFrame, partitions: list[str], unstable: dict[str, dict[str, str]] | None = None,
               statistics: dict | None = None) -> pd.DataFrame:
    """One row per (partition, method): the statistics of leaderboard.ranking (the pages' own rule: seeds,
    completed and failed seeds, stability rate, the mean final accuracy over the completed seeds (`final_acc`)
    with its sd (`final_std`) and 95 % t-interval (`ci_lo`, `ci_hi`), rank, band, `testable`), and the mean over
    the completed seeds of every other column (a failed run's curvature, flatness, costs to reach and wall time
    describe its blow-up, so load_runs leaves them NaN). `unstable` ({partition: {method label: preset}}):
    methods with no stable setting there, so no final run; they get a row (`unstable` True, no seed, no rank).
    `statistics`: the config's declared rules (ranking.rules)."""
    from .ranking import summarise

    cols = ["last10_acc", "lambda_max", "trace", "flatness", "up_floats", "down_floats", "grad_evals_per_step",
            "wall_time", "up_to_reach", "grads_to_reach"]
    g = runs.groupby(["partition", "method"], sort=False)
    means = g[[c for c in cols if c in runs]].mean().reset_index()  # the evidence's frame brings accuracy only
    label = dict(zip(runs["preset"], runs["method"]))
    for methods in (unstable or {}).values():
        label.update({preset: meth for meth, preset in methods.items()})
    summary = summarise(runs[["partition", "preset", "seed", "status", "final_acc"]],
                        {p: list(m.values()) for p, m in (unstable or {}).items() if p in partitions},
                        statistics, partitions)
    summary = summary[summary["partition"].isin(partitions)]
    out = summary.rename(columns={"mean": "final_acc", "sd": "final_std", "lo": "ci_lo", "hi": "ci_hi"})
    out.insert(1, "method", out["preset"].map(label))
    return out.merge(means, on=["partition", "method"], how="left").reset_index(drop=True)
