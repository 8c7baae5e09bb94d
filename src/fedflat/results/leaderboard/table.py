"""results/leaderboard/leaderboard.{md,csv,tex}: ranks per partition, accuracy, curvature, costs, the chosen
setting of every method, and the protocol that made them."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ...training.data.split_provenance import provenance
from ...pipeline.report.grids import setting_text
from ...core.recorded import read_outcome
from ...core.util.curves import REACH
from ...core.util.io import write_text
from ...core.util.markdown import md_table
from .flatness import MEASURES, flatness_correlations, value_text
from .ranking import ablation, accuracy, rules
from .results import load_runs, partition_title, per_method, unstable_methods


def _num(v, fmt="{:.3g}") -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def protocol_text(m: dict) -> str:
    p, tr, tu = m["protocol"], m["protocol"]["training"], m["protocol"]["tuning"]
    prov = provenance(p["dataset"])
    scale = "" if p["scale"] == "paper" else f" Scale: {p['scale']} ({p['scale_note']})."
    return (f"Data: {prov}. Model: {p['model']}. {tr['num_clients']} clients, {100 * tr['participation']:g} % "
            f"participation, {tr['rounds']} rounds, {tr['local_steps']} local steps of batch {tr['batch_size']} for "
            f"every method (one round and one local-work budget), seeds {p['seeds']}. Tuning, the same for every "
            f"method: {tu['trials']} trials of {tu['rounds']} rounds each: lr in {tu['lr']} times 4 points of its own "
            f"key hyperparameters, or {len(tu['lr_only'])} lr values for a method without one; "
            f"seeds {tu['seeds']}, on {', '.join(tu['partitions'])}"
            + (f"; then each method's best {c['cells']} of those cells run the full {tr['rounds']} rounds on every "
               f"ranked partition (seeds {c['seeds']}), and each partition picks its own cell (a diverged one never)"
               if (c := tu.get("continuation")) else "")
            + f"; scored by {tu['metric']} on a validation split of {100 * tu['holdout']:g} % of every client's "
              f"training samples (never the test split); grid, scores and choices: tuning.md.{scale}")


UNSTABLE = "no stable setting"


def interval_text(mean: float, lo: float, hi: float) -> str:
    """'86.73 [86.51, 86.95]': the mean over the completed seeds with its 95 % t-interval; one completed seed has
    no interval; none, no mean."""
    if math.isnan(mean):
        return "—"
    return f"{mean:.2f}" + ("" if math.isnan(lo) else f" [{lo:.2f}, {hi:.2f}]")


def stability_text(completed, seeds) -> str:
    """'4/5': completed of all final seeds; 'no pick' where the method had no stable setting to run."""
    return "no pick" if not seeds else f"{completed:g}/{seeds:g}"


def _flatness_section(agg: pd.DataFrame, chosen: dict, parts: list[str], titles: dict) -> str:
    """The numbers behind flatness_vs_accuracy: Spearman's ρ between each curvature measure and the final
    accuracy across methods, with its 95 % bootstrap interval, for all methods and for those at the common lr."""
    c = flatness_correlations(agg, chosen, parts)
    t = pd.DataFrame({"Partition": c["partition"].map(titles), "Measure": c["measure"].map(MEASURES),
                      "Methods": c["subset"], "n": c["n"].astype(str),
                      "Spearman ρ [95 % CI]": [value_text(r) for r in c.to_dict("records")]})
    return ("## Does a flatter global model generalise better?\n\n" + md_table(t, index=False, disable_numparse=True)
            + "\n\nρ < 0 with an interval below 0: the flatter (smaller λ_max or flatness distance), the more accurate; "
            "an interval that contains 0: no detectable correlation. Accuracy and curvature are means over the "
            "completed seeds; a method without a completed seed is left out; the interval resamples methods.\n")


def _blowups(bad: pd.DataFrame, titles: dict) -> str:
    return "; ".join(f"{meth} ({', '.join(f'{titles[r.partition]} seed {r.seed}: {r.status}, round {r.last_round}' for r in g.itertuples())})"
                     for meth, g in bad.sort_values(["partition", "seed"]).groupby("method", sort=True))


def _failed_runs(runs: pd.DataFrame, titles: dict, rounds) -> str:
    """Every failed final run (diverged or collapsed) and the round it stopped in (a late blow-up at an lr that was
    stable for the tuning horizon is the short-horizon tuning's blind spot, docs/leaderboard.md)."""
    bad = runs[runs["status"] != "completed"]
    out = f"## Failed runs ({len(bad)} of {len(runs)} at the tuned choice)\n\n"
    if bad.empty:
        return out + "None.\n"
    return out + (f"Diverged: the round (of {rounds}) in which the loss or the weights became non-finite; collapsed: "
                  f"finished at chance accuracy with an exploding loss (fl/engine.py), at its last round. "
                  f"{_blowups(bad, titles)}.\n")


def edges(c: dict, grid: dict) -> list[str]:
    """The keys (lr included) whose chosen value lies on the edge of a grid of 3 or more values."""
    if not c or not grid:
        return []
    picked = {"lr": c["lr"], **c["params"]}
    return [k for k, vals in grid.items() if len(vals) >= 3 and picked.get(k) in (min(vals), max(vals))]


def _chosen_text(c: dict, grid: dict | None = None, computes: str | None = None) -> str:
    """The pick's setting, its edge marks, and at rho = 0 the method it then computes (algorithms.reductions)."""
    if not c:
        return "—"
    text = setting_text({"lr": c["lr"], **c["params"]})
    edge = edges(c, grid or {})
    text += f" [edge: {', '.join(edge)}]" if edge else ""
    if c["params"].get("rho") == 0.0:
        text += f" (ρ = 0: computes {computes})" if computes else " (ρ = 0: the ascent off)"
    return text


def _ablation_section(m: dict, titles: dict) -> str:
    """Does each SAM-type method's ascent beat its own rho = 0 twin? The paired difference of their final test
    accuracies over the seeds both completed (the twin runs the pick's final seeds), Holm over every twin
    (leaderboard.ranking.ablation, the pages' own rule)."""
    def seeds(runs):
        out = {}
        for r in runs:
            v = read_outcome(r["dir"], r["run_id"])
            out[int(r["seed"])] = accuracy(v["status"], 100 * (v["final_acc"] if v["final_acc"] is not None else math.nan))
        return out

    rows = ablation([{**a, "pick": seeds(a["pick"]), "twin": seeds(a["ablation"])} for a in m["ablations"]],
                    m["protocol"].get("statistics"))
    t = pd.DataFrame([{"Partition": titles[r["partition"]], "Method": r["method"], "ρ = 0 computes": r.get("same_as") or "—",
                       "Pick stability": stability_text(_done(r["pick"]), len(r["pick"])),
                       "ρ = 0 stability": stability_text(_done(r["twin"]), len(r["twin"])), "Paired seeds": f"{r['n']}",
                       "Δ [95 % CI]": interval_text(r["mean"], r["lo"], r["hi"]).replace("—", "-"),
                       "Holm p": _num(r["p_holm"], "{:.2g}"), "Verdict": r["verdict"]} for r in rows])
    return ("## Does the ascent help? The ρ = 0 ablation\n\n" + md_table(t, index=False, disable_numparse=True)
            + "\n\nΔ: the pick's final test accuracy minus its ρ = 0 twin's (the same lr and other keys, the same "
              "final seeds, the test split), mean over the seeds both completed with its 95 % t-interval; a paired "
              "t-test, Holm's correction over every twin; \"ascent helps\" / \"ascent hurts\" only where the "
              "corrected p is below the declared alpha, \"not distinguishable\" otherwise, \"not testable\" with "
              "fewer than two paired seeds; \"ρ = 0 computes\": the method the twin is exactly "
              "(fedflat.training.algorithms.reductions).\n")


def _done(seeds: dict) -> int:
    return sum(not math.isnan(v) for v in seeds.values())


def _trials(method: str, trials: dict | None, continued: dict | None) -> str:
    """'16 + 2': screen trials plus full-horizon continuations (per partition); '16' without a continuation."""
    n = (trials or {}).get(method)
    if n is None:
        return "—"
    return f"{n} + {continued.get(method, 0)}" if continued else f"{n}"


def _partition_table(df: pd.DataFrame, chosen: dict, trials: dict | None = None, grids: dict | None = None,
                     continued: dict | None = None, computes: dict | None = None) -> pd.DataFrame:
    """One row per method, in rank order (the methods without a rank last)."""
    rows = []
    for _, r in df.iterrows():
        c = chosen.get(r["method"]) or {}
        acc = UNSTABLE if not r["completed"] else interval_text(r["final_acc"], r["ci_lo"], r["ci_hi"])
        rows.append({"Rank": _num(r["rank"], "{:g}"), "Band": _num(r["band"], "{:g}") if r["completed"] != 1
                     else "not testable", "Method": r["method"], "Trials": _trials(r["method"], trials, continued),
                     "Final acc (%) [95 % CI]": acc, "Stability": stability_text(r["completed"], r["seeds"]),
                     "Last 10 % (%)": _num(r["last10_acc"], "{:.2f}"), "λ_max": _num(r["lambda_max"]),
                     "Tr(H)": _num(r["trace"]), "Flatness dist.": _num(r["flatness"]),
                     "Up floats/round": _num(r["up_floats"], "{:.4g}"), "Down floats/round": _num(r["down_floats"], "{:.4g}"),
                     "Grad evals/step": _num(r["grad_evals_per_step"], "{:g}"), "Wall s/run": _num(r["wall_time"], "{:.3g}"),
                     "Chosen": _chosen_text(c, (grids or {}).get(r["method"]), (computes or {}).get(r["method"]))})
    return pd.DataFrame(rows)


def render_leaderboard(m: dict, out_base: Path) -> pd.DataFrame:
    from .ranking import mean_ranks

    parts = m["partitions"]
    stats = rules(m["protocol"].get("statistics"))
    runs = load_runs(m["entries"])
    agg = per_method(runs, parts, unstable_methods(m), stats)
    titles = {p: partition_title(p) for p in parts}
    order = mean_ranks(agg)
    rank_wide = agg.pivot(index="preset", columns="partition", values="rank").reindex(order["preset"])[parts]
    rank_wide["mean rank"] = order.set_index("preset")["mean_rank"]
    labels = dict(zip(agg["preset"], agg["method"]))
    rank_wide = rank_wide.rename(index=labels, columns=titles)
    rank_wide.index.name = "Method"
    sections = [f"# {m['title']}\n", protocol_text(m) + "\n",
                "## Ranks per partition (1 = highest mean final test accuracy over the completed seeds)\n",
                md_table(rank_wide.map(lambda v: _num(v, "{:.3g}")), disable_numparse=True) + "\n"]
    tex = []
    for p in parts:
        t = _partition_table(agg[agg["partition"] == p], m["chosen"].get(p, {}), m.get("trials"),
                             m.get("grids"), m.get("continued"), (m.get("computes") or {}).get(p))
        sections += [f"## {titles[p]}\n", md_table(t, index=False, disable_numparse=True) + "\n"]
        tex.append(t.to_latex(index=False, escape=True, caption=f"Leaderboard, {titles[p]}", label=f"tab:leaderboard_{p}"))
    sections.append(_flatness_section(agg, m["chosen"], parts, titles))
    if m.get("ablations"):
        sections.append(_ablation_section(m, titles))
    sections.append(_failed_runs(runs, titles, m["protocol"]["training"].get("rounds")))
    dropped = sorted({meth for p in parts for meth, c in m["chosen"].get(p, {}).items() if c is None})
    excluded = "; ".join(f"{k} ({v})" for k, v in m["protocol"]["excluded"].items())
    level, alpha = 100 * stats["interval"], stats["alpha"]
    sections.append(
        f"Final acc: test accuracy of the final global model, mean over the completed seeds with its {level:g} % "
        f"t-interval (one completed seed: no interval); Stability: completed of all final seeds (a diverged or "
        f"collapsed seed has no accuracy; \"no pick\": every continued cell diverged, so no final run); Last 10 %: "
        f"mean over the last 10 % of the evaluated rounds; λ_max, Tr(H): top Hessian eigenvalue and Hutchinson trace "
        f"of the training loss at the final model; flatness dist.: FedNSAM Def. 1, mean over rounds; floats per "
        f"participating client and round; grad evals/step: mini-batch gradient evaluations per local step; wall "
        f"time per run on the machine that ran it; curvature, flatness, costs to reach and wall time average the "
        f"completed seeds. Rank: by the mean over the completed seeds, among the methods with at least one; means "
        f"equal to 9 decimals are ordered by preset name; a method without a completed seed has no rank (\"{UNSTABLE}\"). "
        f"Band (fedflat.results.leaderboard.ranking): band 1 opens with the best method with two or more completed seeds; "
        f"a method joins it unless a paired t-test over the seeds both completed, Holm-corrected over every "
        f"comparison with that head, puts it below at alpha = {alpha:g}; the next band opens with the best method "
        f"left. A method with fewer than two seeds in common with a head waits for the next one; one completed seed "
        f"is \"not testable\" (no band). Trials: the method's tuning trials (with the continuation: screen trials "
        f"+ full-horizon continuations per partition); [edge: k]: the chosen k lies on the edge of a grid of 3 or "
        f"more values; (ρ = 0: computes M): the pick switched the ascent off and is then exactly method M. Pareto "
        f"figures: cost until a run first reaches {100 * REACH:g} % of its own final accuracy.\n\n"
        f"Not ranked (the reason in brackets): {excluded or 'none'}.\n\n"
        f"No stable setting in tuning (every continued cell, or every grid point, diverged; not run, no rank on "
        f"that partition): {', '.join(dropped) or 'none'}.\n")
    write_text(out_base.with_suffix(".md"), "\n".join(sections))
    csv = agg.copy()
    csv["partition_title"] = csv["partition"].map(titles)
    csv["chosen"] = [_chosen_text(c, None, (m.get("computes") or {}).get(p, {}).get(meth))
                     if (c := m["chosen"][p].get(meth)) else "" for p, meth in zip(csv["partition"], csv["method"])]
    write_text(out_base.with_suffix(".csv"), csv.to_csv(index=False))
    write_text(out_base.with_suffix(".tex"), "\n".join(tex))
    return agg
