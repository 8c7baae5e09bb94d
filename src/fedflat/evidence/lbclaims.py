"""Do the five papers' headline comparisons survive one protocol? Each proposed method against the baselines of
its paper's headline table, on every leaderboard partition, by the final runs' test accuracy.

A pair is judged by the tie bands' own criterion (util.stats.tie_bands): the two means differ by at least the
pooled seed standard deviation of the two methods, or they are within the spread. A method with a diverged final
seed, or with no stable setting on the partition, loses to one whose every seed completed (the primary rank's
rule: stability is part of the score)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.util.rank_stats import pooled_std, within_spread
from .lbstats import continuation_choices, stage_runs

# proposed preset: (paper catalog under config/papers/, table key) -- the table whose rows are the paper's main
# comparison (its first results table; FedSOL's Dirichlet half, the partition family the leaderboard ranks on).
HEADLINE = {
    "fednsam": ("fednsam", "table2"),             # FedNSAM Table 2: CIFAR-10/100, Dir(0.6)
    "fedsagd": ("fedsagd", "table2"),             # FedSAGD Table 2: CIFAR-10/100, Dir(0.3)
    "fedsol": ("fedsol", "table2_lda"),           # FedSOL Table 2 (LDA)
    "fedsynsam": ("fedsynsam", "table2_A_fmnist"),  # FedSynSAM Table II (A), Fashion-MNIST columns
    "fedtoga": ("fedtoga", "table1_upper"),       # FedTOGA Table 1 (upper): CIFAR-10, 100 clients
}
BETTER, WITHIN, WORSE = "better", "within the seed spread", "worse"
BASELINE_DIVERGED, DIVERGED, BOTH = "better (baseline diverged)", "worse (diverged)", "both diverged"


def table_baselines(study, table: str, proposed: str) -> tuple[str, list[str]]:
    """(the table's reference, e.g. 'Table 2'; the presets of its experiment other than `proposed`, in order),
    from the paper's catalog as the study loader reads it (evidence.atlas.paper_study)."""
    spec = study.tables.get(table)
    if spec is None or spec.get("experiment") not in study.experiments:
        raise ConfigError(f"lbclaims.HEADLINE[{proposed!r}]: the catalog has no table {table!r} with an experiment")
    out = []
    for rid, _ in study.experiments[spec["experiment"]]:
        name = study.runs[rid].algorithm
        if name != proposed and name not in out:
            out.append(name)
    return str(spec.get("ref", table)), out


def _cells(runs: pd.DataFrame) -> dict[tuple[str, str], dict]:
    """(partition, preset) -> {acc: completed seeds' final accuracy, ok: every seed completed}; a method with no
    stable setting (every continued cell diverged, so no final run) is present with ok False."""
    out = {}
    for (part, preset), g in stage_runs(runs, "final").groupby(["partition", "preset"], sort=True):
        done = g["status"] == "completed"
        out[(part, preset)] = {"acc": g.loc[done, "final_acc"].astype(float).to_numpy(), "ok": bool(done.all())}
    picks = continuation_choices(runs)
    for r in picks[picks["lr"].isna()].itertuples():
        out[(r.partition, r.preset)] = {"acc": np.array([]), "ok": False}
    return out


def verdict(a: dict, b: dict) -> tuple[float, float, str]:
    """(mean of a minus mean of b over completed seeds, their pooled seed std, a's verdict against b)."""
    d = float(np.mean(a["acc"]) - np.mean(b["acc"])) if len(a["acc"]) and len(b["acc"]) else float("nan")
    s = pooled_std(a["acc"], b["acc"])
    if not a["ok"]:
        return d, s, BOTH if not b["ok"] else DIVERGED
    if not b["ok"]:
        return d, s, BASELINE_DIVERGED
    return d, s, WITHIN if within_spread(a["acc"], b["acc"]) else BETTER if d > 0 else WORSE


def claims(runs: pd.DataFrame, headline: dict[str, list[str]]) -> pd.DataFrame:
    """One row per (proposed method, partition, baseline ranked and run there): delta, pooled std, verdict."""
    cells = _cells(runs)
    rows = []
    for proposed, bases in headline.items():
        for part in sorted({p for p, _ in cells}):
            if (part, proposed) not in cells:
                continue
            for b in bases:
                if (part, b) in cells:
                    d, s, v = verdict(cells[(part, proposed)], cells[(part, b)])
                    rows.append({"proposed": proposed, "partition": part, "baseline": b, "delta": d, "pooled_std": s,
                                 "verdict": v})
    return pd.DataFrame(rows, columns=["proposed", "partition", "baseline", "delta", "pooled_std", "verdict"])
