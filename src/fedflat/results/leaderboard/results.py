"""The final runs' outputs as one frame per run and one row per (partition, method): what every leaderboard
table and figure reads, computed in one place."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ...training.fl.metrics import read_metrics
from ...core.recorded import SUMMARY, read_outcome
from ...core.util.curves import CURVE_COSTS, curve_costs
from ...core.util.rank_stats import tie_bands
from .stats import ranks


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
    whose directory is gone is read from its committed record (fedflat.recorded), which keeps the same numbers
    (fedflat.util.curves), so a leaderboard whose stages span sessions renders from the evidence."""
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


def primary_rank(acc: dict[str, float], ok_acc: dict[str, float]) -> dict[str, float]:
    """Rank 1 = the highest mean final accuracy among the methods whose every seed completed (`acc` finite; ties
    share the mean rank); every method with a diverged seed ranks below all of them, ordered by its completed
    seeds' mean (`ok_acc`; a method with no completed seed last)."""
    done = {m: a for m, a in acc.items() if not math.isnan(a)}
    out = ranks(done)
    rest = ranks({m: ok_acc.get(m, float("nan")) for m in acc if m not in done})
    return {**out, **{m: len(done) + r for m, r in rest.items()}}


def unstable_methods(chosen: dict) -> dict[str, dict[str, str]]:
    """{partition: {method: method}} of the methods the choice left without a setting on a partition (every
    continued cell, or every grid point, diverged), from {partition: {method: pick or None}}."""
    return {p: {m: m for m, c in picks.items() if c is None} for p, picks in chosen.items()}


def per_method(runs: pd.DataFrame, partitions: list[str], unstable: dict[str, dict[str, str]] | None = None) -> pd.DataFrame:
    """One row per (partition, method): means over seeds (std of the final accuracy), the primary rank in its
    partition (`primary_rank`), the tie band (util.stats.tie_bands over the seeds of the methods that completed)
    and the rank over completed seeds alone (`ok_rank`). A method with a diverged seed gets no mean accuracy;
    `ok_acc` and `ok_std` keep the mean and std over its completed seeds, so the table can say what they reached.
    `unstable` ({partition: {method label: preset}}): methods with no stable setting there, so no final run; they
    get a row (`unstable` True, no seed) and rank below every method that ran, as a method whose every seed
    diverged does."""
    cols = ["final_acc", "last10_acc", "lambda_max", "trace", "flatness", "up_floats", "down_floats",
            "grad_evals_per_step", "wall_time", "up_to_reach", "grads_to_reach"]
    g = runs.groupby(["partition", "method"], sort=False)
    out = g[[c for c in cols if c in runs]].mean()  # the evidence's ranking (evidence.lbstats) brings accuracy only
    out["final_std"] = g["final_acc"].std(ddof=1)  # the sample std over completed seeds, as util.stats.seed_std
    out["ok_acc"], out["ok_std"] = out["final_acc"], out["final_std"]  # NaN seeds are skipped: completed ones
    out["seeds"] = g.size()
    out["diverged"] = g["status"].apply(lambda s: int((s != "completed").sum()))
    out["preset"] = g["preset"].first()
    for c in ("final_acc", "last10_acc", "up_to_reach", "grads_to_reach"):
        out.loc[out["diverged"] > 0, c] = np.nan
    seeds = g["final_acc"].apply(list)
    out = out.reset_index()
    out["unstable"] = False
    extra = [{"partition": p, "method": m, "preset": preset, "seeds": 0, "diverged": 0, "unstable": True}
             for p, methods in (unstable or {}).items() if p in partitions for m, preset in methods.items()]
    if extra:
        out = pd.concat([out, pd.DataFrame(extra)], ignore_index=True)
    out["rank"] = out["ok_rank"] = out["band"] = np.nan
    for p in partitions:
        sel = out["partition"] == p
        r = primary_rank(dict(zip(out.loc[sel, "method"], out.loc[sel, "final_acc"])),
                         dict(zip(out.loc[sel, "method"], out.loc[sel, "ok_acc"])))
        out.loc[sel, "rank"] = out.loc[sel, "method"].map(r)
        done = out[sel & (out["diverged"] == 0) & ~out["unstable"]].sort_values("rank")
        bands = tie_bands([(m, seeds[(p, m)]) for m in done["method"]])
        out.loc[sel, "band"] = out.loc[sel, "method"].map(bands)
        # the same ranking over completed seeds only: where the two differ, a blow-up decided the rank
        r_ok = ranks(dict(zip(out.loc[sel, "method"], out.loc[sel, "ok_acc"])))
        out.loc[sel, "ok_rank"] = out.loc[sel, "method"].map(r_ok)
    order = {p: i for i, p in enumerate(partitions)}
    return out.sort_values(["partition", "rank"], key=lambda s: s.map(order) if s.name == "partition" else s)
