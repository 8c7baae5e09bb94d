"""The leaderboard's v3 statistics, exactly as config/leaderboard.yaml's `statistics:` block fixed them before the
runs (issue 47): one module, read by the results table (leaderboard/table.py, from run directories) and by the
result pages (leaderboard/page_blocks.py, from the committed records), so both rank alike.

Input: the final runs as rows (partition, preset, seed, status, final_acc in %). A seed whose status is not
`completed` (diverged, or collapsed by fl/engine.py's rule) has no accuracy.

- Per (partition, method): the completed seeds, the stability rate (completed of all), and the mean over the
  completed seeds with its two-sided t-interval at `interval` (util.paired.paired_t of the accuracies).
- Rank: by that mean, highest first, among the methods with at least one completed seed; means equal to 9
  decimals are ordered by preset name (`ties: mean_desc_then_preset`), so ranks are distinct integers and never
  depend on the order the runs were read in. A method with no completed seed (every final seed failed, or no
  pick: every continued cell diverged) is "no stable setting" and has no rank.
- Bands (`band: not_below_best`): band 1 opens with the best method that has at least two completed seeds (its
  head); every other method is compared with the head by a paired t-test over the seeds both completed, Holm's
  correction over all those comparisons at `alpha`, and joins the band unless it is significantly below the head.
  The next band opens with the best method left, and so on. A method with fewer than two seeds in common with a
  head is not tested against it and waits for the next head; a method with one completed seed can never be
  tested and has no band ("not testable").
- Pairwise verdicts of a family (claims: one per paper and partition; ablation: every twin): the paired t over
  the seeds both sides completed, Holm over the family; "better" (or the family's own word) only where the
  corrected p is below `alpha`, otherwise "not distinguishable"; fewer than two paired seeds: "not testable".
- Power: util.paired.detectable with the median sd of the paired differences over every pair of methods whose
  final seeds all completed, and the number of final seeds.
- Critical difference: Friedman's test over the (partition, seed) blocks, a failed seed ranked last in its block,
  Nemenyi's critical difference of the mean ranks (util.friedman); a method absent from a block (no pick on a
  partition) is left out of the test and listed.

Accuracies are rounded to 9 decimals when read: the same mean read from run directories (100 x a fraction) and
from records (a percentage) differs in its last bits, which must not order two methods or move a test."""
from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd

from ...core.util.paired import detectable, holm, paired_t
from .protocol import STATISTICS

DECIMALS = 9
DEFAULTS = {k: v[0] for k, v in STATISTICS.items()}  # a config without `statistics:` gets the only allowed values
NOT_DISTINGUISHABLE, NOT_TESTABLE = "not distinguishable", "not testable"
ASCENT_HELPS, ASCENT_HURTS = "ascent helps", "ascent hurts"  # the ablation's words for a significant pick - twin
COLUMNS = ["partition", "preset", "seeds", "completed", "failed", "stability", "mean", "sd", "lo", "hi", "rank",
           "band", "testable", "unstable"]


def rules(statistics: dict | None) -> dict:
    """The statistics a leaderboard config declares, with the protocol's defaults for a key it leaves out."""
    return {**DEFAULTS, **(statistics or {})}


def accuracy(status: str, final_acc) -> float:
    """A seed's final accuracy (%) as every statistic here reads it: rounded to 9 decimals, NaN unless the run
    completed (a diverged or collapsed seed has none)."""
    return round(float(final_acc), DECIMALS) if status == "completed" else math.nan


def seed_accuracies(runs: pd.DataFrame) -> dict[tuple[str, str], dict[int, float]]:
    """(partition, preset) -> {seed: final accuracy, NaN where the seed did not complete}."""
    out: dict[tuple[str, str], dict[int, float]] = {}
    for r in runs.itertuples():
        out.setdefault((r.partition, r.preset), {})[int(r.seed)] = accuracy(r.status, r.final_acc)
    return out


def paired(a: dict[int, float], b: dict[int, float], level: float = 0.95) -> dict:
    """util.paired.paired_t of a - b over the seeds both completed, with `seeds`: those seeds."""
    seeds = sorted(s for s in a if s in b and math.isfinite(a[s]) and math.isfinite(b[s]))
    return {**paired_t([a[s] - b[s] for s in seeds], level), "seeds": seeds}


def rank_order(means: dict[str, float]) -> list[str]:
    """The presets with a finite mean, best first; means equal to 9 decimals ordered by preset name."""
    return sorted((p for p, m in means.items() if math.isfinite(m)), key=lambda p: (-round(means[p], DECIMALS), p))


def bands(order: list[str], acc: dict[str, dict[int, float]], alpha: float = 0.05, level: float = 0.95) -> dict:
    """{preset: {band, head, n, delta, lo, hi, p, p_holm}} for the presets in rank order (the module's rule); the
    test fields describe the method's comparison with the head of its band (NaN for a head and for a method with
    no band). `acc`: preset -> {seed: accuracy, NaN where failed}."""
    def done(p):
        return sum(math.isfinite(v) for v in acc[p].values())

    left, out, band = list(order), {}, 0
    while True:
        head = next((p for p in left if done(p) >= 2), None)
        if head is None:
            break
        band += 1
        out[head] = {"band": band, "head": head, "n": done(head), "delta": math.nan, "lo": math.nan, "hi": math.nan,
                     "p": math.nan, "p_holm": math.nan}
        tests = {p: paired(acc[head], acc[p], level) for p in left if p != head}
        tests = {p: t for p, t in tests.items() if t["n"] >= 2}  # the others wait for the next head
        adjusted = dict(zip(tests, holm([t["p"] for t in tests.values()])))
        for p, t in tests.items():
            if not (adjusted[p] < alpha and t["mean"] > 0):  # not significantly below the head
                out[p] = {"band": band, "head": head, "n": t["n"], "delta": -t["mean"], "lo": -t["hi"], "hi": -t["lo"],
                          "p": t["p"], "p_holm": adjusted[p]}
        left = [p for p in left if p not in out]
    return out


def summarise(runs: pd.DataFrame, unstable: dict[str, list[str]] | None = None, statistics: dict | None = None,
              partitions: list[str] | None = None) -> pd.DataFrame:
    """One row per (partition, preset) of the final runs (COLUMNS), plus a row per method with no pick on a
    partition (`unstable`: {partition: [preset]}; no seed, no rank). Rows in partition order, then by rank, the
    methods without a rank last by preset name. `partitions`: the order (default: as they appear)."""
    st = rules(statistics)
    acc = seed_accuracies(runs)
    parts = list(partitions or dict.fromkeys(list(runs["partition"]) + list((unstable or {}))))
    rows = []
    for part in parts:
        mine = {preset: a for (p, preset), a in acc.items() if p == part}
        means = {}
        for preset, a in mine.items():
            ok = [v for v in a.values() if math.isfinite(v)]
            t = paired_t(ok, st["interval"])
            means[preset] = t["mean"] if ok else math.nan
            rows.append({"partition": part, "preset": preset, "seeds": len(a), "completed": len(ok),
                         "failed": len(a) - len(ok), "stability": len(ok) / len(a), "mean": means[preset],
                         "sd": t["sd"], "lo": t["lo"], "hi": t["hi"], "unstable": False})
        for preset in (unstable or {}).get(part, []):
            if preset not in mine:
                rows.append({"partition": part, "preset": preset, "seeds": 0, "completed": 0, "failed": 0,
                             "stability": math.nan, "mean": math.nan, "sd": math.nan, "lo": math.nan, "hi": math.nan,
                             "unstable": True})
        order = rank_order(means)
        b = bands(order, mine, st["alpha"], st["interval"])
        for r in rows:
            if r["partition"] == part:
                r["rank"] = order.index(r["preset"]) + 1 if r["preset"] in order else math.nan
                r["band"] = b[r["preset"]]["band"] if r["preset"] in b else math.nan
                r["testable"] = r["completed"] >= 2
    df = pd.DataFrame(rows, columns=COLUMNS)
    pos = {p: i for i, p in enumerate(parts)}
    df = df.assign(_p=df["partition"].map(pos), _r=df["rank"].fillna(np.inf))
    return df.sort_values(["_p", "_r", "preset"], kind="stable").drop(columns=["_p", "_r"]).reset_index(drop=True)


def mean_ranks(summary: pd.DataFrame) -> pd.DataFrame:
    """preset, mean_rank (over the partitions where it is ranked), ranked_on (how many): the methods ranked on
    every partition first by mean rank, then the others by how many partitions rank them and their mean rank;
    ties by preset name."""
    parts = summary["partition"].nunique()
    g = summary.groupby("preset")["rank"]
    out = pd.DataFrame({"mean_rank": g.mean(), "ranked_on": g.count()}).reset_index()
    out = out.assign(_k=parts - out["ranked_on"], _m=out["mean_rank"].round(DECIMALS).fillna(np.inf))
    return out.sort_values(["_k", "_m", "preset"], kind="stable").drop(columns=["_k", "_m"]).reset_index(drop=True)


def family(comparisons: list[dict], statistics: dict | None = None, better: str = "better",
           worse: str = "worse") -> list[dict]:
    """Each comparison ({a, b: {seed: accuracy}} and any other keys) with its paired test of a - b (`paired`:
    n, mean, lo, hi, p, seeds), Holm's adjusted p over the family (`p_holm`; the untestable ones left out of it) and
    its verdict: `better` / `worse` where the adjusted p is below alpha, "not distinguishable" otherwise, "not
    testable" with fewer than two paired seeds."""
    st = rules(statistics)
    tests = [paired(c["a"], c["b"], st["interval"]) for c in comparisons]
    adjusted = holm([t["p"] if t["n"] >= 2 else math.nan for t in tests])
    out = []
    for c, t, q in zip(comparisons, tests, adjusted):
        verdict = (NOT_TESTABLE if t["n"] < 2 else (better if t["mean"] > 0 else worse) if q < st["alpha"]
                   else NOT_DISTINGUISHABLE)
        out.append({**c, **{k: t[k] for k in ("n", "mean", "lo", "hi", "p", "seeds")}, "p_holm": q, "verdict": verdict})
    return out


def ablation(twins: list[dict], statistics: dict | None = None) -> list[dict]:
    """The rho = 0 ablation (`ablation: every twin` is one Holm family): each twin ({pick, twin: {seed: accuracy}}
    and any other keys) with the paired test of pick - twin over the seeds both completed and its verdict, "ascent
    helps" / "ascent hurts" where significant after the correction (family)."""
    return family([{**t, "a": t["pick"], "b": t["twin"]} for t in twins], statistics, ASCENT_HELPS, ASCENT_HURTS)


def power(runs: pd.DataFrame, statistics: dict | None = None) -> dict[str, dict]:
    """{partition: {seeds, pairs, sd, detectable}}: the smallest mean paired difference (points) the design
    detects at the declared power and alpha with `seeds` final seeds, from the median sd of the paired differences
    over the `pairs` pairs of methods whose final seeds all completed."""
    st = rules(statistics)
    acc = seed_accuracies(runs)
    out = {}
    for part in dict.fromkeys(runs["partition"]):
        mine = {p: a for (q, p), a in acc.items() if q == part}
        n = max((len(a) for a in mine.values()), default=0)
        full = sorted(p for p, a in mine.items() if len(a) == n and all(math.isfinite(v) for v in a.values()))
        sds = [paired(mine[a], mine[b])["sd"] for a, b in combinations(full, 2)]
        sd = float(np.median(sds)) if sds else math.nan
        out[part] = {"seeds": n, "pairs": len(sds), "sd": sd,
                     "detectable": detectable(sd, n, st["alpha"], st["power"])}
    return out


def critical_difference(runs: pd.DataFrame, statistics: dict | None = None, unstable=()) -> dict:
    """Friedman's test and Nemenyi's critical difference over the (partition, seed) blocks of the final runs:
    {presets (in the test, by mean rank), mean_ranks, left_out (presets absent from a block, with `unstable`: those
    with no final run anywhere), blocks, and util.friedman.friedman_nemenyi's k, n, statistic, df, p, q, cd}. A
    failed seed ranks last in its block."""
    from ...core.util.friedman import friedman_nemenyi

    st = rules(statistics)
    acc = seed_accuracies(runs)
    blocks = sorted({(part, s) for (part, _), a in acc.items() for s in a})
    presets = sorted({p for _, p in acc} | set(unstable))
    present = [p for p in presets if all(s in acc.get((part, p), {}) for part, s in blocks)]
    values = np.array([[acc[(part, p)][s] for p in present] for part, s in blocks], dtype=float)
    res = friedman_nemenyi(values.reshape(len(blocks), len(present)), st["alpha"])
    order = sorted(range(len(present)), key=lambda i: (round(res["mean_ranks"][i], DECIMALS), present[i]))
    return {**res, "presets": [present[i] for i in order], "mean_ranks": [float(res["mean_ranks"][i]) for i in order],
            "left_out": [p for p in presets if p not in present], "blocks": blocks}


def correlation_words(c: dict) -> str:
    """'no detectable correlation' where the interval contains 0; else the sign the interval shows."""
    lo, hi = c.get("lo", math.nan), c.get("hi", math.nan)
    if math.isnan(lo) or math.isnan(hi):
        return "undefined"
    if lo <= 0 <= hi:
        return "no detectable correlation"
    return "positive correlation" if lo > 0 else "negative correlation"


def partition_agreement(summary: pd.DataFrame) -> list[dict]:
    """Kendall's tau between the ranked means of every pair of partitions (methods ranked on both), with its
    bootstrap interval over methods and n (core.util.rank_stats.correlation)."""
    from ...core.util.rank_stats import correlation, kendall

    ranked = summary[summary["rank"].notna()]
    wide = ranked.pivot(index="preset", columns="partition", values="mean")
    parts = [p for p in dict.fromkeys(summary["partition"]) if p in wide.columns]
    return [{"a": a, "b": b, **correlation(wide[a].to_numpy(), wide[b].to_numpy(), kendall)}
            for i, a in enumerate(parts) for b in parts[i + 1:]]
