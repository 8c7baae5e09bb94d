"""The final runs' outputs as one frame per run and one row per (partition, method): what every leaderboard
table and figure reads, computed in one place."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..util.stats import tie_bands
from .stats import cost_to_reach, ranks

REACH = 0.99  # cost to reach = cost until the run first reaches 99 % of its own final (last-10 %) accuracy


def partition_title(p: str) -> str:
    """iid -> IID, dir0.3[-norep] -> Dir(0.3), shards2 -> Path(2)."""
    base = p.split("-")[0]
    if base.startswith("dir"):
        return f"Dir({base[3:]})"
    if base.startswith("shards"):
        return f"Path({base[6:]})"
    return base.upper() if base == "iid" else base


def load_runs(entries: list[dict], hessian: bool = True) -> pd.DataFrame:
    """One row per final run: accuracies, costs per round, cost to reach its own final accuracy, curvature."""
    from ..fl.engine import BYTES_PER_FLOAT

    rows = []
    for e in entries:
        d = Path(e["dir"])
        s = json.loads((d / "summary.json").read_text())
        m = pd.read_csv(d / "metrics.csv")
        ok = s["status"] == "completed"
        per_client = m["clients"].clip(lower=1)
        row = {k: e[k] for k in ("partition", "method", "preset", "seed")}
        row.update({
            "status": s["status"], "final_acc": 100 * s["final_acc"] if ok else np.nan,
            "last10_acc": 100 * s["last10_acc"] if ok else np.nan,
            "grad_evals_per_step": s["grad_evals_per_step"],
            "up_floats": float((m["up_bytes"] / per_client).mean() / BYTES_PER_FLOAT),
            "down_floats": float((m["down_bytes"] / per_client).mean() / BYTES_PER_FLOAT),
            # a diverged run stopped early on exploding weights: its wall time, flatness and curvature describe
            # the blow-up, not the method, so they stay out of the method's means (completed seeds only)
            "wall_time": s["wall_time"] if ok else np.nan,
            "flatness": float(m["flatness_distance"].mean()) if ok else np.nan,
            "up_to_reach": np.nan, "grads_to_reach": np.nan, "lambda_max": np.nan, "trace": np.nan,
            "last_round": int(m["round"].iloc[-1]) if len(m) else 0,  # where a diverged run stopped
        })
        if ok:
            target = REACH * 100 * s["last10_acc"]
            acc = 100 * m["test_acc"].to_numpy(dtype=float)
            row["up_to_reach"] = cost_to_reach(acc, m["up_bytes"].to_numpy(dtype=float), target)
            row["grads_to_reach"] = cost_to_reach(acc, m["grad_evals"].to_numpy(dtype=float), target)
        h = d / "hessian.json"
        if ok and hessian and h.exists():
            hj = json.loads(h.read_text())
            row["lambda_max"], row["trace"] = hj.get("lambda_max", np.nan), hj.get("trace") or np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def primary_rank(acc: dict[str, float], ok_acc: dict[str, float]) -> dict[str, float]:
    """Rank 1 = the highest mean final accuracy among the methods whose every seed completed (`acc` finite; ties
    share the mean rank); every method with a diverged seed ranks below all of them, ordered by its completed
    seeds' mean (`ok_acc`; a method with no completed seed last)."""
    done = {m: a for m, a in acc.items() if not math.isnan(a)}
    out = ranks(done)
    rest = ranks({m: ok_acc.get(m, float("nan")) for m in acc if m not in done})
    return {**out, **{m: len(done) + r for m, r in rest.items()}}


def per_method(runs: pd.DataFrame, partitions: list[str]) -> pd.DataFrame:
    """One row per (partition, method): means over seeds (std of the final accuracy), the primary rank in its
    partition (`primary_rank`), the tie band (util.stats.tie_bands over the seeds of the methods that completed)
    and the rank over completed seeds alone (`ok_rank`). A method with a diverged seed gets no mean accuracy;
    `ok_acc` and `ok_std` keep the mean and std over its completed seeds, so the table can say what they reached."""
    cols = ["final_acc", "last10_acc", "lambda_max", "trace", "flatness", "up_floats", "down_floats",
            "grad_evals_per_step", "wall_time", "up_to_reach", "grads_to_reach"]
    g = runs.groupby(["partition", "method"], sort=False)
    out = g[cols].mean()
    out["final_std"] = g["final_acc"].std(ddof=0)
    out["ok_acc"], out["ok_std"] = out["final_acc"], out["final_std"]  # NaN seeds are skipped: completed ones
    out["seeds"] = g.size()
    out["diverged"] = g["status"].apply(lambda s: int((s != "completed").sum()))
    out["preset"] = g["preset"].first()
    for c in ("final_acc", "last10_acc", "up_to_reach", "grads_to_reach"):
        out.loc[out["diverged"] > 0, c] = np.nan
    seeds = g["final_acc"].apply(list)
    out = out.reset_index()
    out["rank"] = out["ok_rank"] = out["band"] = np.nan
    for p in partitions:
        sel = out["partition"] == p
        r = primary_rank(dict(zip(out.loc[sel, "method"], out.loc[sel, "final_acc"])),
                         dict(zip(out.loc[sel, "method"], out.loc[sel, "ok_acc"])))
        out.loc[sel, "rank"] = out.loc[sel, "method"].map(r)
        done = out[sel & (out["diverged"] == 0)].sort_values("rank")
        bands = tie_bands([(m, seeds[(p, m)]) for m in done["method"]])
        out.loc[sel, "band"] = out.loc[sel, "method"].map(bands)
        # the same ranking over completed seeds only: where the two differ, a blow-up decided the rank
        r_ok = ranks(dict(zip(out.loc[sel, "method"], out.loc[sel, "ok_acc"])))
        out.loc[sel, "ok_rank"] = out.loc[sel, "method"].map(r_ok)
    order = {p: i for i, p in enumerate(partitions)}
    return out.sort_values(["partition", "rank"], key=lambda s: s.map(order) if s.name == "partition" else s)
