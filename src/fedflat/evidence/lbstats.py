"""The leaderboard's quoted statistics, computed from its evidence (runs.csv) alone: the screen's choices and
edge-of-grid counts, seed spread, divergences, rank correlations between partitions. Each has a test."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..core.util.rank_stats import correlation, kendall, seed_std

STAGES = {"tune_": "screen", "cont_": "continuation", "final_": "final", "ablation_": "ablation"}


def method_label(preset: str) -> str:
    """A preset's name as the pages print it: its registry label (a record's `label` also names its setting)."""
    from ..training.algorithms import PRESETS

    return PRESETS.get(preset).label


def stages_of(experiments: str) -> list[str]:
    """Every stage a run serves, from the experiments it belongs to: a continued rho = 0 cell that is also a pick's
    ablation twin (the same settings, so the same run id) serves both the continuation and the ablation."""
    out = []
    for e in str(experiments).split(";"):
        out += [stage for prefix, stage in STAGES.items() if e.startswith(prefix) and stage not in out]
    return out


def stage_runs(runs: pd.DataFrame, stage: str) -> pd.DataFrame:
    """The records of the runs that serve `stage`, with their settings parsed (`params`)."""
    r = runs[runs["experiments"].map(lambda e: stage in stages_of(e))] if len(runs) else runs
    return r.assign(params=r["hparams"].map(json.loads))


def stage_counts(runs: pd.DataFrame) -> pd.DataFrame:
    """stage x (runs, completed, diverged), in the protocol's order; a run serving two stages counts in both."""
    rows = {}
    for stage in STAGES.values():
        status = stage_runs(runs, stage)["status"]
        if len(status):
            rows[stage] = {"runs": len(status), "completed": int((status == "completed").sum()),
                           "diverged": int((status != "completed").sum())}
    return pd.DataFrame.from_dict(rows, orient="index", columns=["runs", "completed", "diverged"])


def screen_choices(runs: pd.DataFrame, grids: dict[str, dict], lr: list, lr_only: list,
                   metric: str = "last10_acc") -> pd.DataFrame:
    """Per method (preset): its best screen cell (highest `metric` among completed runs; ties: the smaller lr,
    then the earlier grid value) and whether the choice sits on an edge of its grid: the lr at the lowest or
    highest grid value, or an own key with 3 or more values at its lowest or highest. `rho0` marks a choice
    with rho = 0 (the method's ascent switched off)."""
    from ..results.leaderboard.table import edges as table_edges

    r = stage_runs(runs, "screen")
    r = r[r["status"] == "completed"]
    out = []
    for preset, sub in r.groupby("preset", sort=True):
        grid = grids.get(preset, {})
        sub = sub.assign(_lr=sub["lr"].astype(float)).sort_values(["_lr"], kind="stable")
        best = sub.loc[sub[metric].astype(float).idxmax()] if sub[metric].notna().any() else None
        if best is None:
            continue
        edges = table_edges({"lr": float(best["lr"]), "params": best["params"]},
                            {"lr": lr if grid else lr_only, **grid})
        out.append({"preset": preset, "label": best["label"], "lr": float(best["lr"]),
                    "params": {k: best["params"].get(k) for k in grid}, "score": float(best[metric]),
                    "edges": edges, "rho0": "rho" in grid and best["params"].get("rho") == 0.0,
                    "cells": int(len(sub))})
    return pd.DataFrame(out)


def final_means(runs: pd.DataFrame) -> pd.DataFrame:
    """method label x partition: mean final accuracy over completed seeds of the final stage (NaN if a seed
    diverged: the strict rule), with the completed-seeds mean, seed std and seed count beside it."""
    r = stage_runs(runs, "final")
    rows = []
    for (method, part), sub in r.groupby(["preset", "partition"], sort=True):
        acc = sub["final_acc"].astype(float)
        done = acc[sub["status"] == "completed"]
        rows.append({"preset": method, "partition": part, "seeds": len(sub), "diverged": int((sub["status"] != "completed").sum()),
                     "mean": float(done.mean()) if len(done) == len(sub) and len(done) else float("nan"),
                     "mean_completed": float(done.mean()) if len(done) else float("nan"),
                     "std": seed_std(done)})
    return pd.DataFrame(rows)


def median_seed_std(means: pd.DataFrame) -> dict[str, float]:
    """Per partition: the median over methods of the seed standard deviation of final accuracy."""
    return {p: float(np.nanmedian(g["std"])) for p, g in means.groupby("partition")} if len(means) else {}


def partition_correlations(means: pd.DataFrame, column: str = "mean") -> list[dict]:
    """Kendall tau between the per-method scores of every pair of partitions, with its bootstrap interval over
    methods (methods without a score on either side dropped before resampling) and n."""
    wide = means.pivot(index="preset", columns="partition", values=column)
    parts = list(wide.columns)
    out = []
    for i, a in enumerate(parts):
        for b in parts[i + 1:]:
            out.append({"a": a, "b": b, **correlation(wide[a].to_numpy(), wide[b].to_numpy(), kendall)})
    return out


def primary_ranks(runs: pd.DataFrame) -> pd.DataFrame:
    """The primary rank per partition from the evidence, computed by the results table's own ranker
    (leaderboard.results.per_method: methods whose every final seed completed by mean final accuracy, then every
    method with a diverged seed, ordered by its completed seeds' mean; tie bands over the completed methods' seeds),
    with the mean rank over partitions. A method whose every continued cell diverged on a partition has no final run
    there; it ranks below every method that ran (`unstable`, no seed). `mean` and `std` are over completed seeds."""
    from ..results.leaderboard.results import per_method

    r = stage_runs(runs, "final")
    picks = continuation_choices(runs)
    unstable = picks[picks["lr"].isna()]
    parts = sorted(r["partition"].unique())
    frame = pd.DataFrame({"partition": r["partition"], "method": r["preset"], "preset": r["preset"],
                          "status": r["status"], "final_acc": r["final_acc"].astype(float)})
    lost = {p: dict(zip(g["preset"], g["preset"])) for p, g in unstable.groupby("partition")}
    agg = per_method(frame, parts, lost)
    labels = {p: method_label(p) for p in set(unstable["preset"]) | set(r["preset"])}
    df = pd.DataFrame({"partition": agg["partition"], "preset": agg["preset"], "label": agg["preset"].map(labels),
                       "diverged": agg["diverged"].astype(int), "seeds": agg["seeds"].astype(int),
                       "mean": agg["ok_acc"].astype(float), "std": agg["ok_std"].astype(float),
                       "unstable": agg["unstable"].astype(bool), "rank": agg["rank"], "band": agg["band"].astype("Int64")})
    df = df.sort_values(["partition", "rank"], kind="stable").reset_index(drop=True)
    if len(df):
        df["mean_rank"] = df.groupby("preset")["rank"].transform("mean")
    return df


def _grid_frame(sub: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Records as report.grids.grid_scores lays out a grid (method = preset, row = the settings as JSON,
    value = lr, acc NaN unless the run completed), so the pages apply the checkpoints' own selection rule."""
    return pd.DataFrame({"method": sub["preset"].to_numpy(),
                         "row": sub["hparams"].map(lambda h: json.dumps(json.loads(h), sort_keys=True)).to_numpy(),
                         "value": sub["lr"].astype(float).to_numpy(), "seed": sub["seed"].to_numpy(),
                         "acc": sub[metric].astype(float).where(sub["status"] == "completed").to_numpy()})


def continuation_choices(runs: pd.DataFrame, metric: str = "last10_acc") -> pd.DataFrame:
    """Per (partition, preset): the pick of the v2 choice, its best full-horizon validation cell among the
    continued ones by the choice checkpoint's own rule (report.grids.cell_means and ranked_cells: the mean over
    the continuation seeds, a cell with a diverged seed never picked; ties: the earlier cell, then the smaller
    lr), with `continued` (cells run) and `diverged` (cells with a diverged seed). A method whose every
    continued cell diverged has lr NaN: it is left out of the final runs."""
    from ..pipeline.report.grids import cell_means, ranked_cells

    out = []
    for (part, preset), sub in stage_runs(runs, "continuation").groupby(["partition", "preset"], sort=True):
        means = cell_means(_grid_frame(sub, metric))
        best = next(iter(ranked_cells(means.unstack("value")).get(preset, [])), None)
        out.append({"partition": part, "preset": preset, "label": method_label(preset),
                    "lr": float(best[1]) if best else float("nan"), "params": json.loads(best[0]) if best else {},
                    "score": float(best[2]) if best else float("nan"),
                    "continued": len(means), "diverged": int(means.isna().sum())})
    return pd.DataFrame(out, columns=["partition", "preset", "label", "lr", "params", "score", "continued", "diverged"])


def rho0_picks(runs: pd.DataFrame, metric: str = "last10_acc") -> pd.DataFrame:
    """The picks (continuation_choices) of a radius grid at rho = 0: the validation choice switched the ascent off,
    so the method has no twin to run, and `same_as` names the preset it then computes exactly (RHO0), or ""."""
    from ..training.algorithms.reductions import rho0_base

    picks = continuation_choices(runs, metric)
    at0 = picks[picks["params"].map(lambda p: "rho" in p and float(p["rho"]) == 0.0)].copy()
    at0["same_as"] = [(rho0_base(r.preset, r.params) or ("",))[0] for r in at0.itertuples()]
    return at0.reset_index(drop=True)


def ablation_verdicts(runs: pd.DataFrame, metric: str = "last10_acc") -> pd.DataFrame:
    """Per (partition, SAM-type preset) with a rho = 0 ablation run: the pick's full-horizon validation score,
    its rho = 0 twin's, their difference, the seed spread of the method's final test accuracy, and the verdict
    (leaderboard.stats.ascent_verdict, the leaderboard table's own rule); `same_as`: the preset the twin is by an
    exact reduction (algorithms.reductions.RHO0), or "" where none holds."""
    from ..training.algorithms.reductions import rho0_base
    from ..results.leaderboard.stats import ascent_verdict

    abl = stage_runs(runs, "ablation")
    if abl.empty:
        return pd.DataFrame()
    from ..pipeline.report.grids import cell_means

    picks = continuation_choices(runs, metric).set_index(["partition", "preset"])
    fin = final_means(runs).set_index(["partition", "preset"]) if len(stage_runs(runs, "final")) else None
    out = []
    for (part, preset), sub in abl.groupby(["partition", "preset"], sort=True):
        for (_, _, lr), score in cell_means(_grid_frame(sub, metric)).items():  # one rho = 0 cell per pick
            pick = float(picks["score"].get((part, preset), float("nan")))
            std = float(fin["std"].get((part, preset), float("nan"))) if fin is not None else float("nan")
            d = pick - score
            same = rho0_base(preset, sub["params"].iloc[0])
            out.append({"partition": part, "preset": preset, "label": method_label(preset),
                        "lr": lr, "pick": pick, "ablation": score, "delta": d, "std": std,
                        "verdict": ascent_verdict(pick, score, std), "same_as": same[0] if same else ""})
    return pd.DataFrame(out)


def flatness_accuracy(runs: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard table's flatness-vs-accuracy correlations (leaderboard.flatness.flatness_correlations, the
    same function) from the evidence: per partition, Spearman's rho of lambda_max and of the flatness distance
    (means over completed seeds) against mean final accuracy (NaN where a seed diverged), over all methods and
    over the methods at the most common picked lr, each with its bootstrap interval over methods."""
    from ..results.leaderboard.flatness import flatness_correlations

    r = stage_runs(runs, "final")
    rows, chosen = [], {}
    for (part, preset), g in r.groupby(["partition", "preset"], sort=True):
        ok = g[g["status"] == "completed"]
        rows.append({"partition": part, "method": preset,
                     "final_acc": float(ok["final_acc"].mean()) if len(ok) == len(g) else float("nan"),
                     "lambda_max": float(ok["lambda_max"].astype(float).mean()) if len(ok) else float("nan"),
                     "flatness": float(ok["flatness_mean"].astype(float).mean()) if len(ok) else float("nan")})
        chosen.setdefault(part, {})[preset] = {"lr": float(g["lr"].iloc[0])}
    agg = pd.DataFrame(rows, columns=["partition", "method", "final_acc", "lambda_max", "flatness"])
    return flatness_correlations(agg, chosen, sorted(chosen))


def picks_against_screen(runs: pd.DataFrame, lb: dict) -> pd.DataFrame:
    """Per (partition, preset) pick of the continuation: `screen_pick`, whether it is the 50-round screen's best
    cell (the same lr and tuned keys), i.e. the cell a short-horizon, one-partition rule would have chosen from
    the same grid. A method with no stable setting there has screen_pick False. `lb`: the leaderboard config."""
    grids = lb["methods"]

    def key(lr, params, preset):
        return lr, json.dumps({k: params.get(k) for k in sorted(grids.get(preset, {}))})

    screen = {r.preset: key(r.lr, r.params, r.preset) for r in screen_choices(
        runs, grids, lb["tuning"]["lr"], lb["tuning"]["lr_only"], lb["tuning"].get("metric", "last10_acc")).itertuples()}
    picks = continuation_choices(runs, lb["tuning"].get("metric", "last10_acc"))
    kept = [not np.isnan(r.lr) and screen.get(r.preset) == key(r.lr, r.params, r.preset) for r in picks.itertuples()]
    return picks.assign(screen_pick=kept)


def reduction_pairs(runs: pd.DataFrame, stage: str = "screen", base_stage: str | None = None,
                    metric: str = "last10_acc") -> pd.DataFrame:
    """Every pair of runs that an exact rho = 0 reduction (algorithms.reductions.RHO0) says compute the same thing:
    a SAM-type preset's rho = 0 run of `stage` and its base preset's run of `base_stage` (default: the same stage)
    on the same partition and seed, at the same lr and shared keys. Per pair: both statuses, the difference of
    their `metric` (NaN unless both completed), and whether the same code ran both (commit and backend)."""
    from ..training.algorithms.reductions import rho0_base

    r = stage_runs(runs, base_stage or stage)
    out = []
    for a in stage_runs(runs, stage).itertuples():
        rb = rho0_base(a.preset, a.params)
        if rb is None:
            continue
        base, shared = rb
        m = r[(r["preset"] == base) & (r["partition"] == a.partition) & (r["lr"].astype(float) == float(a.lr))
              & (r["seed"].astype(int) == int(a.seed))]
        for b in m[m["params"].map(lambda p: all(p.get(k) == v for k, v in shared.items()))].itertuples():
            both = a.status == b.status == "completed"
            out.append({"preset": a.preset, "base": base, "partition": a.partition, "lr": float(a.lr),
                        "status": a.status, "base_status": b.status,
                        "delta": float(getattr(a, metric)) - float(getattr(b, metric)) if both else float("nan"),
                        # the same code: the commit that ran each, and the local step (fused compiled or eager)
                        "same_code": getattr(a, "git_commit", None) == getattr(b, "git_commit", None)
                        and getattr(a, "backend", None) == getattr(b, "backend", None)})
    return pd.DataFrame(out, columns=["preset", "base", "partition", "lr", "status", "base_status", "delta",
                                      "same_code"])


def all_reduction_pairs(runs: pd.DataFrame) -> pd.DataFrame:
    """Every pair of runs an exact reduction says compute the same thing, with `stage`: the screen's pairs, the
    ablation twins against continued cells (both scored on validation), the finals seed by seed (final_acc)."""
    out = [reduction_pairs(runs).assign(stage="screen"),
           reduction_pairs(runs, "ablation", "continuation").assign(stage="ablation"),
           reduction_pairs(runs, "final", metric="final_acc").assign(stage="final")]
    return pd.concat([o for o in out if len(o)] or out[:1], ignore_index=True)

