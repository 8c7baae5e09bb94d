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
from .results import load_runs, partition_title, per_method, unstable_methods
from .stats import ascent_verdict


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


UNSTABLE = "no stable setting (every continued cell diverged; not run)"


def _diverged_text(r) -> str:
    """'diverged 1/3 (others 84.21 ± 0.10)': how many seeds blew up, and what the completed ones reached (the
    sample std over them; one completed seed has none)."""
    text = f"diverged {r['diverged']:g}/{r['seeds']:g}"
    if r["diverged"] < r["seeds"] - 1:
        text += f" (others {r['ok_acc']:.2f} ± {r['ok_std']:.2f})"
    elif r["diverged"] < r["seeds"]:
        text += f" (the other {r['ok_acc']:.2f})"  # one completed seed: no spread
    return text


def _flatness_section(agg: pd.DataFrame, chosen: dict, parts: list[str], titles: dict) -> str:
    """The numbers behind flatness_vs_accuracy: Spearman's ρ between each curvature measure and the final
    accuracy across methods, with its 95 % bootstrap interval, for all methods and for those at the common lr."""
    c = flatness_correlations(agg, chosen, parts)
    t = pd.DataFrame({"Partition": c["partition"].map(titles), "Measure": c["measure"].map(MEASURES),
                      "Methods": c["subset"], "n": c["n"].astype(str),
                      "Spearman ρ [95 % CI]": [value_text(r) for r in c.to_dict("records")]})
    return ("## Does a flatter global model generalise better?\n\n" + md_table(t, index=False, disable_numparse=True)
            + "\n\nρ < 0 with an interval below 0: the flatter (smaller λ_max or flatness distance), the more accurate. "
            "Methods with a diverged seed have no mean and are left out; the interval resamples methods.\n")


def _blowups(bad: pd.DataFrame, titles: dict) -> str:
    return "; ".join(f"{meth} ({', '.join(f'{titles[r.partition]} seed {r.seed}: round {r.last_round}' for r in g.itertuples())})"
                     for meth, g in bad.sort_values(["partition", "seed"]).groupby("method", sort=True))


def _diverged_runs(runs: pd.DataFrame, titles: dict, rounds) -> str:
    """Every diverged run and the round it blew up in (a late blow-up at an lr that was stable for the tuning
    horizon is the short-horizon tuning's blind spot, docs/leaderboard.md)."""
    bad = runs[runs["status"] != "completed"]
    out = f"## Diverged runs ({len(bad)} of {len(runs)} at the tuned choice)\n\n"
    if bad.empty:
        return out + "None.\n"
    return out + f"The round (of {rounds}) in which the loss or the weights became non-finite: {_blowups(bad, titles)}.\n"


def edges(c: dict, grid: dict) -> list[str]:
    """The keys (lr included) whose chosen value lies on the edge of a grid of 3 or more values."""
    if not c or not grid:
        return []
    picked = {"lr": c["lr"], **c["params"]}
    return [k for k, vals in grid.items() if len(vals) >= 3 and picked.get(k) in (min(vals), max(vals))]


def _chosen_text(c: dict, grid: dict | None = None) -> str:
    if not c:
        return "—"
    text = setting_text({"lr": c["lr"], **c["params"]})
    edge = edges(c, grid or {})
    return text + (f" [edge: {', '.join(edge)}]" if edge else "")


def _ablation_section(m: dict, agg: pd.DataFrame, titles: dict) -> str:
    """Does each SAM-type method's ascent beat its own rho = 0 ablation? Full-horizon validation score of the pick
    against the same cell with rho = 0, judged against the seed spread of the method's final runs."""
    if not m.get("ablations"):
        return ""

    def score(runs):
        vals = [read_outcome(r["dir"], r["run_id"]) for r in runs]
        vals = [100 * v["last10_acc"] for v in vals if v["status"] == "completed"]
        return sum(vals) / len(vals) if len(vals) == len(runs) and vals else float("nan")

    by = agg.set_index(["partition", "method"])
    rows = []
    for a in m["ablations"]:
        pick, abl = score(a["pick"]), score(a["ablation"])
        std = by["ok_std"].get((a["partition"], a["method"]), float("nan"))
        d = pick - abl
        verdict = ascent_verdict(pick, abl, std)
        rows.append({"Partition": titles[a["partition"]], "Method": a["method"], "ρ = 0 is": a.get("same_as") or "—",
                     "Pick (val. %)": _num(pick, "{:.2f}"),
                     "ρ = 0 (val. %)": _num(abl, "{:.2f}"), "Δ": _num(d, "{:+.2f}"), "Seed std (final)": _num(std, "{:.2f}"),
                     "Verdict": verdict})
    t = pd.DataFrame(rows)
    return ("## Does the ascent help? The ρ = 0 ablation\n\n" + md_table(t, index=False, disable_numparse=True)
            + "\n\nPick and ρ = 0: mean validation accuracy over the last 10 % of the evaluated rounds at the full "
              "horizon (the continuation seeds); the ascent helps where Δ exceeds the standard deviation of the "
              "method's final test accuracy over seeds, and ρ = 0 is better where −Δ does; \"ρ = 0 diverged\": the "
              "twin blew up where the pick completed; \"ρ = 0 is\": the method the twin computes exactly "
              "(fedflat.algorithms.reductions).\n")


def _trials(method: str, trials: dict | None, continued: dict | None) -> str:
    """'16 + 2': screen trials plus full-horizon continuations (per partition); '16' without a continuation."""
    n = (trials or {}).get(method)
    if n is None:
        return "—"
    return f"{n} + {continued.get(method, 0)}" if continued else f"{n}"


def _partition_table(df: pd.DataFrame, chosen: dict, trials: dict | None = None,
                     grids: dict | None = None, continued: dict | None = None) -> pd.DataFrame:
    """One row per method; the second rank is the one over completed seeds (where it differs from the primary
    rank, a blow-up decided the place)."""
    rows = []
    for _, r in df.iterrows():
        c = chosen.get(r["method"]) or {}
        acc = (UNSTABLE if r.get("unstable") else _diverged_text(r) if r["diverged"]
               else f"{r['final_acc']:.2f} ± {r['final_std']:.2f}")
        rows.append({"Rank": _num(r["rank"], "{:g}"), "Band": _num(r.get("band"), "{:g}"),
                     "Rank, completed seeds": _num(r["ok_rank"], "{:g}"),
                     "Method": r["method"], "Trials": _trials(r["method"], trials, continued), "Final acc (%)": acc,
                     "Last 10 % (%)": _num(r["last10_acc"], "{:.2f}"), "λ_max": _num(r["lambda_max"]),
                     "Tr(H)": _num(r["trace"]), "Flatness dist.": _num(r["flatness"]),
                     "Up floats/round": _num(r["up_floats"], "{:.4g}"), "Down floats/round": _num(r["down_floats"], "{:.4g}"),
                     "Grad evals/step": _num(r["grad_evals_per_step"], "{:g}"), "Wall s/run": _num(r["wall_time"], "{:.3g}"),
                     "Chosen": _chosen_text(c, (grids or {}).get(r["method"]))})
    return pd.DataFrame(rows)


def render_leaderboard(m: dict, out_base: Path) -> pd.DataFrame:
    parts = m["partitions"]
    runs = load_runs(m["entries"])
    agg = per_method(runs, parts, unstable_methods(m["chosen"]))
    titles = {p: partition_title(p) for p in parts}
    rank_wide = agg.pivot(index="method", columns="partition", values="rank")[parts]
    rank_wide["mean rank"] = rank_wide.mean(axis=1)
    rank_wide = rank_wide.sort_values("mean rank").rename(columns=titles)
    rank_wide.index.name = "Method"
    sections = [f"# {m['title']}\n", protocol_text(m) + "\n", "## Ranks per partition (1 = highest mean final test accuracy)\n",
                md_table(rank_wide.map(lambda v: _num(v, "{:.3g}")), disable_numparse=True) + "\n"]
    tex = []
    for p in parts:
        t = _partition_table(agg[agg["partition"] == p], m["chosen"].get(p, {}), m.get("trials"),
                             m.get("grids"), m.get("continued"))
        sections += [f"## {titles[p]}\n", md_table(t, index=False, disable_numparse=True) + "\n"]
        tex.append(t.to_latex(index=False, escape=True, caption=f"Leaderboard, {titles[p]}", label=f"tab:leaderboard_{p}"))
    sections.append(_flatness_section(agg, m["chosen"], parts, titles))
    if m.get("ablations"):
        sections.append(_ablation_section(m, agg, titles))
    sections.append(_diverged_runs(runs, titles, m["protocol"]["training"].get("rounds")))
    dropped = sorted({meth for p in parts for meth, c in m["chosen"].get(p, {}).items() if c is None})
    excluded = "; ".join(f"{k} ({v})" for k, v in m["protocol"]["excluded"].items())
    sections.append(
        f"Final acc: test accuracy of the final global model, mean ± std over seeds; Last 10 %: mean over the last 10 % "
        f"of the evaluated rounds; λ_max, Tr(H): top Hessian eigenvalue and Hutchinson trace of the training loss at "
        f"the final model; flatness dist.: FedNSAM Def. 1, mean over rounds; floats per participating client and "
        f"round; grad evals/step: mini-batch gradient evaluations per local step; wall time per run on the machine "
        f"that ran it. A method with a diverged seed has no mean and ranks below every method whose seeds all completed, "
        f"ordered by its completed seeds' mean (\"diverged k/n\": k of its n seeds; the others' mean ± std in "
        f"brackets); Band: methods whose means differ by less than their pooled seed standard deviation share a "
        f"band (opened by its best method); Trials: the method's tuning trials (with the continuation: screen "
        f"trials + full-horizon continuations per partition); [edge: k]: the chosen k lies on "
        f"the edge of a grid of 3 or more values; its curvature, flatness and wall time average its completed "
        f"seeds. \"Rank, completed seeds\" ranks every method by the mean of its completed seeds alone. Pareto "
        f"figures: cost until a run first reaches {100 * REACH:g} % of its own final accuracy.\n\n"
        f"Not ranked (the reason in brackets): {excluded or 'none'}.\n\n"
        f"No stable setting in tuning (every continued cell, or every grid point, diverged; not run, and ranked "
        f"below every method that ran on that partition): {', '.join(dropped) or 'none'}.\n")
    write_text(out_base.with_suffix(".md"), "\n".join(sections))
    csv = agg.copy()
    csv["partition_title"] = csv["partition"].map(titles)
    csv["chosen"] = [_chosen_text(c) if (c := m["chosen"][p].get(meth)) else ""
                     for p, meth in zip(csv["partition"], csv["method"])]
    write_text(out_base.with_suffix(".csv"), csv.to_csv(index=False))
    write_text(out_base.with_suffix(".tex"), "\n".join(tex))
    return agg
