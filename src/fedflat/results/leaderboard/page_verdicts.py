"""The leaderboard page's verdict blocks, from the committed evidence under the config's declared `statistics:`
(leaderboard.ranking computes every test): the rho = 0 ablation, the papers' headline comparisons, and the
statistics (power, Friedman/Nemenyi, rank correlations)."""
from __future__ import annotations

import math

from . import headline_claims
from . import page_records as records
from .page_blocks import STUDY, _config, _final_stage, _num, _waiting, rho0_computes, stage_totals, summary
from .ranking import (ASCENT_HELPS, ASCENT_HURTS, NOT_DISTINGUISHABLE, NOT_TESTABLE, ablation as ablation_test,
                      correlation_words, critical_difference, partition_agreement, power, rules, seed_accuracies)
from .results import partition_title as _title


def _p(p: float) -> str:
    return "-" if math.isnan(p) else f"{p:.2g}"


def _delta(r: dict) -> str:
    """'+1.20 [+0.40, +2.00]' (pick or proposed minus the other, points)."""
    if math.isnan(r["mean"]):
        return "-"
    return f"{r['mean']:+.2f}" + ("" if math.isnan(r["lo"]) else f" [{r['lo']:+.2f}, {r['hi']:+.2f}]")


def _done(seeds: dict) -> str:
    return f"{sum(not math.isnan(v) for v in seeds.values())}/{len(seeds)}" if seeds else "no pick"


def ablation(ctx) -> str:
    """Does each SAM-type method's ascent beat its own rho = 0 twin, per partition: the paired difference over the
    final seeds both completed, Holm over every twin (leaderboard.ranking.ablation)."""
    runs = ctx.evidence(STUDY).runs()
    lb = _config(ctx)
    totals = stage_totals(runs, lb)
    wait = _waiting(totals, "ablation", "the ρ = 0 ablation") or _waiting(
        totals, "final", "the ablation's verdicts (paired with the picks' final seeds)")
    if wait:
        return wait
    v = ablation_test(records.twins(runs), lb.get("statistics"))
    ranked = set(lb["methods"])
    lines = ["| Partition | Method | ρ = 0 computes | pick stability | ρ = 0 stability | paired seeds | "
             "Δ = pick − ρ = 0 [95 % CI] | Holm p | verdict |", "|---|---|---|---|---|---|---|---|---|"]
    for part in lb["partitions"]:
        for r in sorted((r for r in v if r["partition"] == part), key=lambda r: (-_key(r["mean"]), r["preset"])):
            same = records.method_label(r["same_as"]) if r["same_as"] in ranked else "-"
            lines.append(f"| {_title(part)} | {r['label']} | {same} | {_done(r['pick'])} | {_done(r['twin'])} | "
                         f"{r['n']} | {_delta(r)} | {_p(r['p_holm'])} | {r['verdict']} |")
    lines.append("")
    for part in lb["partitions"]:
        mine = [r["verdict"] for r in v if r["partition"] == part]
        lines.append(f"- {_title(part)}: " + ", ".join(f"{w} {mine.count(w)}" for w in
                                                      (ASCENT_HELPS, NOT_DISTINGUISHABLE, ASCENT_HURTS, NOT_TESTABLE)
                                                      if mine.count(w)) + f" (of {len(mine)} twins).")
    pairs = records.all_reduction_pairs(runs)  # each kind of pair computed once, read by stage below
    by = {stage: pairs[pairs["stage"] == stage] for stage in ("screen", "ablation", "final")}
    return "\n".join(lines + ["", _reductions_line(v, ranked, by["screen"], by["ablation"]),
                              "", _rho0_picks_line(runs, ranked, by["final"]), "", _by_code_line(pairs)])


def _key(x: float) -> float:
    return -math.inf if math.isnan(x) else x


def _rho0_picks_line(runs, ranked, fin) -> str:
    """The picks at rho = 0 (no twin): which method each then computes, and whether its final runs agree with
    that method's own final runs (`fin`: the final stage's reduction pairs) where the two picked the same setting."""
    z = records.rho0_picks(runs)
    if z.empty:
        return "No pick is at ρ = 0: every SAM-type method kept its ascent on every partition."
    names = []
    for r in z.sort_values(["partition", "label"], kind="stable").itertuples():
        base = f" (= {records.method_label(r.same_as)})" if r.same_as in ranked else ""
        names.append(f"{r.label} on {_title(r.partition)}{base}")
    text = (f"{len(z)} picks are at ρ = 0, where the validation choice switched the ascent off (so no twin; the "
            f"ranking and the claims mark them): " + "; ".join(names) + ". ")
    if not len(fin):
        return text + "None of them picked the setting its base method's own pick has."
    n = fin.groupby(["partition", "preset"]).ngroups
    return text + (f"{n} of them picked the same setting as the method they compute, so both ranked the same "
                   f"computation; seed by seed, " + _pairs_text(fin, "final test accuracies") + ".")


def _pair_counts(pairs):
    """(status agrees, the differences where both completed, how many of those are 0) of reduction pairs."""
    done = pairs["delta"].dropna()
    return int((pairs["status"] == pairs["base_status"]).sum()), done, int((done == 0).sum())


def _pairs_text(pairs, what: str = "validation scores") -> str:
    """'their status agrees in a; of the n pairs that both completed, k have identical validation scores, ...'."""
    agree, done, same = _pair_counts(pairs)
    text = f"their status agrees in {agree} of {len(pairs)}"
    if not len(done):
        return text
    return text + (f"; of the {len(done)} pairs that both completed, {same} have identical "
                   f"{what}, and the largest difference is {done.abs().max():.2f} points (the median "
                   f"{done.abs().median():.2f})")


def _by_code_line(pairs) -> str:
    """Every pair of runs an exact reduction says compute the same thing, split by whether the same code (commit and
    local-step backend) ran both: the reduction predicts identical numbers only within the same code."""
    parts = []
    for same, who in ((True, "share the commit and the backend"),
                      (False, "were made by different commits or backends (the fused compiled step or the eager one)")):
        g = pairs[pairs["same_code"] == same]
        if not len(g):
            continue
        agree, done, same = _pair_counts(g)
        text = (f"the {len(g)} whose runs {who} agree in status in {agree} and "
                f"are identical in {same} of the {len(done)} that both completed")
        parts.append(text + (f" (the largest difference {done.abs().max():.2f} points)" if (done != 0).any() else ""))
    if not parts:
        return "No pair of runs that an exact reduction says compute the same thing is in the evidence."
    return f"By code, over all {len(pairs)} such pairs (screen, twins and finals): " + "; ".join(parts) + "."


def _reductions_line(v: list[dict], ranked, screen, served) -> str:
    """Which twins are another ranked method (an exact reduction); for which of them that method's own final runs
    sit at the twin's setting (`served`: twin against base final, seed by seed); the screen's pairs of such runs."""
    same = [r for r in v if r["same_as"] in ranked]
    names = sorted({f"{r['label']} → {records.method_label(r['same_as'])}" for r in same})
    text = (f"ρ = 0 is another ranked method at the same setting for {len(same)} of the {len(v)} twins, by an exact "
            f"reduction (`fedflat.training.algorithms.reductions`, each proved to 1e-12 on a tiny model by "
            f"`tests/training/algorithms/test_rho0_reductions.py`): " + (", ".join(names) or "none") + ". ")
    text += (f"For {served.groupby(['partition', 'preset']).ngroups} of them that method's own final runs have the "
             f"twin's setting on the same partition; seed by seed, " + _pairs_text(served, "final test accuracies")
             + ". " if len(served) else "No final run of those methods has a twin's setting. ")
    if not len(screen):
        return text + "The screen holds no pair of such runs."
    return text + (f"The screen holds {len(screen)} pairs of such runs (a ρ = 0 cell and its base method's cell at "
                   f"the same lr and shared keys): " + _pairs_text(screen) + ".")


def claims_summary(ctx) -> str:
    """The README's view of `claims`: the verdict counts, the pairs left to the docs page."""
    return claims(ctx, details=False)


def _computes(preset: str, part: str, at0: dict) -> str | None:
    """"computes M" where the method's pick on `part` is at rho = 0 (M: the method it then is), else None."""
    if (part, preset) not in at0:
        return None
    base = at0[(part, preset)]
    return f"computes {records.method_label(base)}" if base else "the ascent off, no ranked method's twin"


def _marked(preset: str, part: str, at0: dict) -> str:
    """The method's label, with "(ρ = 0: computes M)" where its pick on `part` switched the ascent off."""
    what = _computes(preset, part, at0)
    return records.method_label(preset) + (f" (ρ = 0: {what})" if what else "")


def claims(ctx, details: bool = True) -> str:
    """Each proposed method against the baselines of its paper's headline table, per partition (headline_claims)."""
    runs, lb, wait = _final_stage(ctx, "each paper's headline comparison")
    if wait:
        return wait
    tables = {p: headline_claims.table_baselines(ctx.study(paper), table, p)
              for p, (paper, table) in headline_claims.HEADLINE.items() if p in lb["methods"]}
    s = summary(ctx, runs, lb)
    c = headline_claims.claims(seed_accuracies(records.stage_frame(runs)),
                        {p: [b for b in bases if b in lb["methods"]] for p, (_, bases) in tables.items()},
                        list(lb["partitions"]), lb.get("statistics"), set(zip(s["partition"], s["preset"])))
    at0 = rho0_computes(runs)
    parts = list(lb["partitions"])
    counted = ("better", NOT_DISTINGUISHABLE, "worse", NOT_TESTABLE)
    lines = ["| Method | its paper's table | " + " | ".join(_title(p) for p in parts) + " |",
             "|---" * (len(parts) + 2) + "|"]
    for proposed, (ref, bases) in tables.items():
        ranked = [b for b in bases if b in lb["methods"]]
        cells = []
        for p in parts:
            sub = c[(c["proposed"] == proposed) & (c["partition"] == p)]
            n = sub["verdict"].value_counts()
            mark = f"ρ = 0 pick ({_computes(proposed, p, at0)}): " if (p, proposed) in at0 else ""
            cells.append(mark + ", ".join(f"{v} {int(n[v])}" for v in counted if n.get(v, 0)) + f" (of {len(sub)})"
                         if len(sub) else "-")
        unranked = [b for b in bases if b not in lb["methods"]]
        lines.append(f"| {records.method_label(proposed)} | {ref}: {len(ranked)} baselines"
                     + (f" ({len(unranked)} not ranked here: {', '.join(unranked)})" if unranked else "")
                     + " | " + " | ".join(cells) + " |")
    st = lb.get("statistics") or {}
    lines += ["", f"Verdict counts per partition: the proposed method's final test accuracy minus each baseline's, "
              f"a paired t-test over the seeds both completed, Holm's correction over the baselines of one paper "
              f"on one partition; better or worse only where the corrected p is below α = {st.get('alpha', 0.05):g}, "
              f"not distinguishable otherwise, not testable with fewer than two seeds both completed (stability is "
              f"in its own block, never a verdict)."]
    if not details:
        lines[-1] += " Every pair, with its difference and interval: `docs/leaderboard.md`."
        return "\n".join(lines)
    lines += ["", "| Method | Partition | Baseline | paired seeds | Δ = method − baseline [95 % CI] | Holm p | verdict |",
              "|---|---|---|---|---|---|---|"]
    for r in c.itertuples():
        lines.append(f"| {_marked(r.proposed, r.partition, at0)} | {_title(r.partition)} | "
                     f"{_marked(r.baseline, r.partition, at0)} | {r.n} | {_delta(r._asdict())} | {_p(r.p_holm)} | "
                     f"{r.verdict} |")
    return "\n".join(lines)


def statistics(ctx) -> str:
    """Power per partition, Friedman's test with Nemenyi's critical difference, Kendall's tau between partitions
    and Spearman's rho of curvature against accuracy, each correlation with its bootstrap interval and its words."""
    runs, lb, wait = _final_stage(ctx, "every statistic of the final runs")
    if wait:
        return wait
    st = rules(lb.get("statistics"))
    fin = records.stage_frame(runs)
    s = summary(ctx, runs, lb)
    lines = ["| quantity | value |", "|---|---|"]
    pws = power(fin, st)
    for part in [p for p in lb["partitions"] if p in pws]:
        pw = pws[part]
        lines.append(f"| power, {_title(part)}: the smallest mean paired difference detected with {100 * st['power']:g} % "
                     f"power (α = {st['alpha']:g}, {pw['seeds']} seeds, median paired sd {_num(pw['sd'])} points over "
                     f"{pw['pairs']} pairs of methods with every seed completed) | {_num(pw['detectable'])} points |")
    never = sorted({p for ps in records.unstable(runs).values() for p in ps} - set(fin["preset"]))
    cd = critical_difference(fin, st, never)
    left = ", ".join(records.method_label(p) for p in cd["left_out"]) or "none"
    lines.append(f"| Friedman test over {cd['n']} (partition, seed) blocks, {cd['k']} methods (a failed seed ranks "
                 f"last in its block) | χ²_F = {_num(cd['statistic'], 1)}, df {cd['df']}, p = {_p(cd['p'])} |")
    lines.append(f"| Nemenyi critical difference of mean ranks (α = {st['alpha']:g}, q = {_num(cd['q'], 3)}) | "
                 f"{_num(cd['cd'])} |")
    if cd["presets"] and not math.isnan(cd["cd"]):
        best = cd["mean_ranks"][0]
        near = [p for p, r in zip(cd["presets"], cd["mean_ranks"]) if r - best < cd["cd"]]
        lines.append(f"| not significantly different from the best mean rank ({records.method_label(cd['presets'][0])}, "
                     f"{best:.2f}) | {len(near)} of {cd['k']} methods |")
    lines.append(f"| left out of the Friedman test (absent from a block: no pick on a partition) | {left} |")
    corr = partition_agreement(s)
    for c in corr:
        lines.append(f"| Kendall τ, {_title(c['a'])} vs {_title(c['b'])} (the ranked means of the methods ranked on "
                     f"both) | {_num(c['value'])} [{_num(c['lo'])}, {_num(c['hi'])}], n = {c['n']}: "
                     f"{correlation_words(c)} |")
    flat = records.flatness_accuracy(runs)
    names = {"lambda_max": "λ_max", "flatness": "flatness distance"}
    for part in lb["partitions"]:
        for c in flat[flat["partition"] == part].itertuples():
            subset = "all methods" if c.subset == "all" else f"methods at {c.subset.replace(' = ', '=')}"
            lines.append(f"| Spearman ρ({names[c.measure]}, final accuracy), {_title(part)}, {subset} | "
                         f"{_num(c.r)} [{_num(c.lo)}, {_num(c.hi)}], n = {c.n}: "
                         f"{correlation_words({'lo': c.lo, 'hi': c.hi})} |")
    lines += ["", f"{len(corr) + len(flat)} correlations are reported here ({len(corr)} between partitions, "
              f"{len(flat)} of curvature against accuracy, all means over the completed seeds); intervals are 95 % "
              f"percentile bootstraps over methods (pairs with a missing value dropped before resampling), and "
              f"\"no detectable correlation\" means the interval contains 0. Methods share parts, so they are not "
              f"independent samples and the intervals are optimistic; a correlation is not a cause."]
    return "\n".join(lines)
