"""Generated blocks of docs/leaderboard.md and the README's leaderboard section, from the leaderboard's
committed evidence and its config (never from run directories)."""
from __future__ import annotations

import math

from . import lbstats

STUDY = "leaderboard"  # the evidence these blocks render (v3; v2 is legacy: docs/leaderboard_v2.md)


def _config(ctx) -> dict:
    from ..pipeline.study import load_config_file

    return load_config_file(ctx.config("leaderboard.yaml", STUDY))["leaderboard"]


def _title(partition: str) -> str:
    from ..results.leaderboard.results import partition_title  # the table's own names, so the pages match it

    return partition_title(partition)


def _f(x, d=2) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{d}f}"


def _got(runs, stage: str) -> int:
    return len(lbstats.stage_runs(runs, stage))


def _continuation_expected(lb: dict) -> int:
    c = lb["tuning"]["continuation"]
    return len(lb["methods"]) * int(c["cells"]) * len(lb["partitions"]) * len(c["seeds"])


def stage_totals(runs, lb: dict) -> dict[str, tuple[int, int | None]]:
    """{stage: (runs in the evidence, runs the protocol calls for)} for the continuation, the final stage and the
    ablation; the last two follow from the picks, so their totals are None until the continuation is complete."""
    from ..results.leaderboard.protocol import ablation_cell

    out = {"continuation": (_got(runs, "continuation"), _continuation_expected(lb))}
    final = ablation = None
    if out["continuation"][0] >= out["continuation"][1]:
        picks = lbstats.continuation_choices(runs, lb["tuning"].get("metric", "last10_acc"))
        picks = picks[picks["lr"].notna()]
        final = len(picks) * len(lb["seeds"])
        ablation = len(lb["tuning"]["continuation"]["seeds"]) * sum(
            ablation_cell(lb, r.preset, {"lr": r.lr, "params": r.params}) is not None for r in picks.itertuples())
    out["final"] = (_got(runs, "final"), final)
    out["ablation"] = (_got(runs, "ablation"), ablation)
    return out


def _waiting(totals: dict, stage: str, what: str) -> str | None:
    """The line a block shows while `stage` is incomplete in the evidence, or None once it is complete."""
    got, expected = totals[stage]
    if expected is not None and got >= expected:
        return None
    of = (f"{got} of {expected} runs" if expected is not None
          else f"{got} runs; how many it needs follows from the choice per partition")
    return f"The {stage} stage is not complete in the evidence ({of}): {what} appears here once it is."


def _final_stage(ctx, what: str):
    """(the leaderboard's records, its config section, the waiting line or None once the final stage is complete)."""
    runs = ctx.evidence(STUDY).runs()
    lb = _config(ctx)
    return runs, lb, _waiting(stage_totals(runs, lb), "final", what)


def status(ctx) -> str:
    runs = ctx.evidence(STUDY).runs()
    lb = _config(ctx)
    n_methods = len(lb["methods"])
    if runs.empty:
        return "No leaderboard run is in the committed evidence yet."
    counts = lbstats.stage_counts(runs)
    lines = [f"Committed evidence: `results/evidence/leaderboard/runs.csv` ({len(runs)} runs; {n_methods} methods "
             f"ranked by `config/leaderboard.yaml`).", "", "| stage | runs | completed | diverged |", "|---|---|---|---|"]
    for stage, row in counts.iterrows():
        lines.append(f"| {stage} | {row['runs']} | {row['completed']} | {row['diverged']} |")
    screen = int(counts.loc["screen", "runs"]) if "screen" in counts.index else 0
    expected = n_methods * int(lb["tuning"]["trials"]) * len(lb["tuning"]["partitions"]) * len(lb["tuning"]["seeds"])
    shared = int(runs["experiments"].map(lambda e: len(lbstats.stages_of(e)) > 1).sum())
    if shared:
        lines += ["", f"{shared} runs serve two stages and count in both: a continued ρ = 0 cell that is also the "
                      f"ablation twin of a pick (the same settings, so the same run)."]
    lines += ["", f"Screen: {screen} of {expected} trials in the evidence."]
    gone = ctx.evidence(STUDY).superseded()
    if len(gone):
        per_stage = lbstats.stage_counts(gone)["runs"]
        lines += ["", f"Out of every count here: {len(gone)} runs made at a pick since corrected ("
                      + ", ".join(f"{n} {stage}" for stage, n in per_stage.items()) + "; the choice had filled a key "
                      "the two continued cells shared with the grid's first value), kept in "
                      "`results/evidence/leaderboard/superseded.csv`."]
    return "\n".join(lines + _not_yet_run(ctx, lb))


def _not_yet_run(ctx, lb: dict) -> list[str]:
    """The methods the live config ranks that the evidence's own config (its snapshot) does not: not yet run, so the
    committed blocks stay as the evidence renders them (a new preset never changes a verdict before its runs)."""
    from ..training.algorithms import PRESETS
    from ..pipeline.study import load_config_file

    live = ctx.live_config("leaderboard.yaml")
    if live == ctx.config("leaderboard.yaml", STUDY) or not live.exists():
        return []
    new = [m for m in load_config_file(live)["leaderboard"]["methods"] if m not in lb["methods"]]
    names = ", ".join(PRESETS.get(m).label if m in PRESETS.names() else m for m in new)
    return ["", f"Not yet run (in `config/leaderboard.yaml`, not in the configuration this evidence was made with): "
                f"{names}."] if new else []


def screen(ctx) -> str:
    runs = ctx.evidence(STUDY).runs()
    lb = _config(ctx)
    tu = lb["tuning"]
    expected = len(lb["methods"]) * int(tu["trials"])
    ch = lbstats.screen_choices(runs, lb["methods"], tu["lr"], tu["lr_only"], tu.get("metric", "last10_acc"))
    got = _got(runs, "screen")
    if got < expected:
        return (f"The screen is not complete in the evidence ({got} of {expected} trials): its choices and counts "
                f"appear here once every trial has run.")
    rho = ch[ch["preset"].map(lambda p: "rho" in lb["methods"].get(p, {}))]
    edge_lr = ch[ch["edges"].map(lambda e: "lr" in e)]
    edge_key = ch[ch["edges"].map(lambda e: any(k != "lr" for k in e))]
    multi = [p for p, g in lb["methods"].items() if any(len(v) >= 3 for v in g.values())]
    lines = [f"- {len(ch)} methods have a completed screen cell; the best validation score is "
             f"{_f(ch['score'].max())} % ({ch.loc[ch['score'].idxmax(), 'label']}).",
             f"- ρ = 0 (the ascent switched off) is the best screen cell for {int(rho['rho0'].sum())} of the "
             f"{len(rho)} methods with a radius grid" + (": " + ", ".join(sorted(rho.loc[rho['rho0'], 'preset'].map(lbstats.method_label))) if rho['rho0'].any() else "") + ".",
             f"- The chosen lr sits on an edge of the lr grid for {len(edge_lr)} of {len(ch)} methods"
             + (": " + ", ".join(f"{lbstats.method_label(r.preset)} ({r.lr:g})" for r in edge_lr.itertuples()) if len(edge_lr) else "") + ".",
             f"- An own key with 3 or more values sits on an edge of its grid for {len(edge_key)} of the {len(multi)} "
             f"methods with such a key" + (": " + ", ".join(lbstats.method_label(r.preset) for r in edge_key.itertuples()) if len(edge_key) else "") + "."]
    return "\n".join(lines)


def ranking(ctx) -> str:
    """Every ranked method on every partition (the docs page); the README shows the top 10 (`top`)."""
    return top(ctx, None)


def top(ctx, n: int | None = 10) -> str:
    runs, _, wait = _final_stage(ctx, "the ranking")
    if wait:
        return wait
    ranks = lbstats.primary_ranks(runs)
    parts = _parts(ranks["partition"].unique())
    wide = ranks.pivot(index="preset", columns="partition", values="rank")
    order = ranks.groupby("preset")["mean_rank"].first().sort_values(kind="stable")
    head = "| Method | " + " | ".join(_title(p) for p in parts) + " | mean rank |"
    lines = [head, "|---" * (len(parts) + 2) + "|"]
    by = {(r.preset, r.partition): r for r in ranks.itertuples()}
    for preset in order.index[:n]:
        cells = []
        for p in parts:
            r = by.get((preset, p))
            if r is None:
                cells.append("-")
            elif r.unstable:
                cells.append(f"no stable setting ({r.rank:g})")
            elif r.diverged:
                cells.append(f"diverged {r.diverged}/{r.seeds} ({_f(r.mean)}) ({r.rank:g})")
            else:
                cells.append(f"{_f(r.mean)} ± {_f(r.std)} ({r.rank:g}, band {r.band})")
        label = ranks.loc[ranks["preset"] == preset, "label"].iloc[0]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {order[preset]:.2f} |")
    if n is None:  # the docs page: who cannot be told apart from the best, per partition
        lines.append("")
        for p in parts:
            first = ranks[(ranks["partition"] == p) & (ranks["band"] == 1)].sort_values("rank", kind="stable")
            lines.append(f"- Band 1 on {_title(p)} (within the pooled seed spread of the best method): "
                         f"{', '.join(first['label'])} ({len(first)} method{'s' if len(first) != 1 else ''}).")
    return "\n".join(lines)


def statistics(ctx) -> str:
    runs, _, wait = _final_stage(ctx, "every statistic of the final runs")
    if wait:
        return wait
    means = lbstats.final_means(runs)
    spread = lbstats.median_seed_std(means)
    corr = lbstats.partition_correlations(means)
    fin = lbstats.stage_runs(runs, "final")
    div = fin[fin["status"] != "completed"]
    lines = ["| quantity | value |", "|---|---|"]
    for p, v in spread.items():
        lines.append(f"| median seed std of final accuracy, {_title(p)} | {_f(v)} points |")
    for c in corr:
        lines.append(f"| Kendall τ, {_title(c['a'])} vs {_title(c['b'])} (methods with every seed completed) | "
                     f"{_f(c['value'])} [{_f(c['lo'])}, {_f(c['hi'])}], n = {c['n']} |")
    lines.append(f"| diverged final runs | {len(div)} of {len(fin)} ({div[['partition', 'preset']].drop_duplicates().shape[0]} "
                 f"(partition, method) pairs) |")
    picks = lbstats.continuation_choices(runs)
    lines.append(f"| (partition, method) pairs with no stable setting (every continued cell diverged; no final run) | "
                 f"{int(picks['lr'].isna().sum())} of {len(picks)} |")
    flat = lbstats.flatness_accuracy(runs)
    names = {"lambda_max": "λ_max", "flatness": "flatness distance"}
    for c in flat.itertuples():
        subset = "all methods" if c.subset == "all" else f"methods at {c.subset.replace(' = ', '=')}"
        lines.append(f"| Spearman ρ({names[c.measure]}, final accuracy), {_title(c.partition)}, {subset} | "
                     f"{_f(c.r)} [{_f(c.lo)}, {_f(c.hi)}], n = {c.n} |")
    lines += ["", f"{len(corr) + len(flat)} correlations are reported here ({len(corr)} between partitions, "
              f"{len(flat)} of curvature against accuracy); intervals are 95 % percentile bootstraps over methods "
              f"(pairs with a missing value dropped before resampling). Methods share parts, so they are not "
              f"independent samples and the intervals are optimistic."]
    return "\n".join(lines)


def cost(ctx) -> str:
    from ..results.leaderboard.plan import estimate, render
    from ..pipeline.study import load_config_file

    cfg = load_config_file(ctx.config("leaderboard.yaml", STUDY))  # the snapshot the evidence was made with
    return render(estimate(cfg, 2, exhaustive=False), 2)


def _parts(parts) -> list[str]:
    """IID first, then the Dirichlet partitions from the mildest to the most skewed."""
    return sorted(parts, key=lambda p: (p != "iid", -float(p.split("-")[0][3:] or 0) if p.startswith("dir") else 0))


def choice(ctx) -> str:
    """The v2 choice per partition, from the continuation's records: each method's pick with its edge marks."""
    from ..results.leaderboard.table import edges
    from ..pipeline.report.grids import setting_text

    runs = ctx.evidence(STUDY).runs()
    lb = _config(ctx)
    c = lb["tuning"]["continuation"]
    got, expected = _got(runs, "continuation"), _continuation_expected(lb)
    if got < expected:
        return (f"The continuation is not complete in the evidence ({got} of {expected} full-horizon validation "
                f"runs): the picks appear here once every continued cell has run.")
    ch = lbstats.continuation_choices(runs, lb["tuning"].get("metric", "last10_acc"))
    parts = _parts(ch["partition"].unique())
    by = {(r.partition, r.preset): r for r in ch.itertuples()}
    lines = ["| Method | trials | " + " | ".join(_title(p) for p in parts) + " |", "|---" * (len(parts) + 2) + "|"]
    for preset in sorted(lb["methods"], key=lambda m: by[(parts[0], m)].label if (parts[0], m) in by else m):
        cells = []
        for p in parts:
            r = by.get((p, preset))
            if r is None or math.isnan(r.lr):
                cells.append("every continued cell diverged" if r is not None else "-")
                continue
            edge = edges({"lr": r.lr, "params": r.params}, {"lr": lb["tuning"]["lr"] if lb["methods"][preset]
                                                            else lb["tuning"]["lr_only"], **lb["methods"][preset]})
            tuned = {k: r.params.get(k) for k in lb["methods"][preset]}  # the preset's other defaults stay out
            cells.append(f"{setting_text({'lr': r.lr, **tuned})} ({_f(r.score)} %)"
                         + (f" [edge: {', '.join(edge)}]" if edge else ""))
        label = next((by[(p, preset)].label for p in parts if (p, preset) in by), preset)
        lines.append(f"| {label} | {lb['tuning']['trials']} + {c['cells']} | " + " | ".join(cells) + " |")
    none = ch[ch["lr"].isna()]
    kept = lbstats.picks_against_screen(runs, lb)
    moved = {p: int((~g["screen_pick"] & g["lr"].notna()).sum()) for p, g in kept.groupby("partition")}
    lines += ["", f"Trials: {lb['tuning']['trials']} screen trials of {lb['tuning']['rounds']} rounds plus "
              f"{c['cells']} full-horizon continuations per partition, the same for every method. A method whose "
              f"every continued cell diverged on a partition has no pick there and no final runs: "
              f"{len(none)} (partition, method) pairs" + (": " + ", ".join(f"{r.label} on {_title(r.partition)}"
                                                                            for r in none.itertuples()) if len(none) else "") + ".",
              "", "The full horizon changed the choice: the pick differs from the 50-round Dir(0.3) screen's best cell "
              "(the choice a short-horizon, one-partition rule takes from the same grid) for "
              + ", ".join(f"{moved.get(p, 0)} of {int((kept['partition'] == p).sum())} methods on {_title(p)}" for p in parts)
              + " (a method with no stable setting not counted as changed)."]
    return "\n".join(lines)


def ablation(ctx) -> str:
    """Does each SAM-type method's ascent beat its own rho = 0, per partition, beyond the seed spread?"""
    runs = ctx.evidence(STUDY).runs()
    totals = stage_totals(runs, _config(ctx))
    wait = _waiting(totals, "ablation", "the ρ = 0 ablation") or _waiting(
        totals, "final", "the ablation's verdicts (judged against the final seeds' spread)")
    if wait:
        return wait
    v = lbstats.ablation_verdicts(runs)
    v.loc[~v["same_as"].isin(list(_config(ctx)["methods"])), "same_as"] = ""  # only a method ranked here serves
    label = _labels(runs)
    parts = _parts(v["partition"].unique())
    lines = ["| Partition | Method | ρ = 0 is | pick (val. %) | ρ = 0 (val. %) | Δ | seed std (final) | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for p in parts:
        for r in v[v["partition"] == p].sort_values("delta", ascending=False, kind="stable").itertuples():
            lines.append(f"| {_title(p)} | {r.label} | {label.get(r.same_as, '-')} | {_f(r.pick)} | {_f(r.ablation)} | "
                         f"{'-' if math.isnan(r.delta) else f'{r.delta:+.2f}'} | {_f(r.std)} | {r.verdict} |")
    counts = v.groupby("partition")["verdict"].value_counts().unstack(fill_value=0)
    lines.append("")
    for p in parts:
        row = counts.loc[p] if p in counts.index else {}
        lines.append(f"- {_title(p)}: " + ", ".join(f"{k}: {int(n)}" for k, n in row.items() if n) + ".")
    pairs = lbstats.all_reduction_pairs(runs)  # each kind of pair computed once, read by stage below
    by = {stage: pairs[pairs["stage"] == stage] for stage in ("screen", "ablation", "final")}
    return "\n".join(lines + ["", _reductions_line(v, by["screen"], label, by["ablation"]),
                              "", _rho0_picks_line(runs, label, _config(ctx)["methods"], by["final"]),
                              "", _by_code_line(pairs)])


def _rho0_picks_line(runs, label: dict, ranked, fin) -> str:
    """The picks at rho = 0 (no twin): which method each then computes, and whether its final runs agree with
    that method's own final runs (`fin`: the final stage's reduction pairs) where the two picked the same setting."""
    z = lbstats.rho0_picks(runs)
    if z.empty:
        return "No pick is at ρ = 0: every SAM-type method kept its ascent on every partition."
    z = z.assign(same_as=z["same_as"].where(z["same_as"].isin(list(ranked)), ""))
    parts = _parts(z["partition"].unique())
    names = []
    for p in parts:
        for r in z[z["partition"] == p].sort_values("label", kind="stable").itertuples():
            names.append(f"{r.label} on {_title(p)}" + (f" (= {label.get(r.same_as, r.same_as)})" if r.same_as else ""))
    text = (f"{len(z)} picks are at ρ = 0, where the validation choice switched the ascent off (so no twin): "
            + "; ".join(names) + ". ")
    if not len(fin):
        return text + "None of them picked the setting its base method's own pick has."
    n = fin.groupby(["partition", "preset"]).ngroups
    return text + (f"{n} of them picked the same setting as the method they compute, so both ranked the same "
                   f"computation; seed by seed, " + _pairs_text(fin, "final test accuracies") + ".")


def _labels(runs) -> dict[str, str]:
    """preset -> its label as the pages print it (lbstats.method_label)."""
    return {p: lbstats.method_label(p) for p in runs["preset"].unique()}


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
    return f"By code, over all {len(pairs)} such pairs (screen, twins and finals): " + "; ".join(parts) + "."


def _reductions_line(v, screen, label: dict, served) -> str:
    """Which twins are another ranked method (an exact reduction); which of them a continued run of that method
    already had; and what the screen's pairs of such runs show."""
    same = v[v["same_as"] != ""]
    names = sorted({f"{label.get(r.preset, r.preset)} → {label.get(r.same_as, r.same_as)}" for r in same.itertuples()})
    text = (f"ρ = 0 is another ranked method at the same setting for {len(same)} of the {len(v)} twins, by an exact "
            f"reduction (`fedflat.algorithms.reductions`, each proved to 1e-12 on a tiny model by "
            f"`tests/training/algorithms/test_rho0_reductions.py`): " + (", ".join(names) or "none") + ". ")
    text += (f"For {len(served)} of them a continued cell of that method has the same setting on the same partition: "
             + _pairs_text(served) + ". " if len(served) else "No continued cell of those methods has a twin's setting. ")
    if not len(screen):
        return text + "The screen holds no pair of such runs."
    return text + (f"The screen holds {len(screen)} pairs of such runs (a ρ = 0 cell and its base method's cell at "
                   f"the same lr and shared keys): " + _pairs_text(screen) + ".")


def _move_cell(r) -> str:
    """'23 → 12 (+11)': v1's rank, v2's rank among v1's methods and the places gained; ↓ v1 ranked it by re-runs
    at a lower lr after a seed diverged; † v2's pick there is not the 50-round Dir(0.3) screen's best cell."""
    v1 = f"{r.v1_rank:g}" + (" ↓" if r.v1_fallback == "yes" else "")
    if math.isnan(r.v2_rank):
        return f"{v1} → -"
    v2 = f"{r.v2_rank:g}" + (" (no stable setting)" if r.v2_unstable else f" (diverged {r.v2_diverged})" if r.v2_diverged else "")
    return f"{v1} → {v2} ({r.up:+g})" + ("" if r.screen_pick or r.v2_unstable else " †")


def v1(ctx) -> str:
    """What changed against v1: its published ranks against v2's, per partition, with the agreement."""
    from . import lbv1

    runs, lb, wait = _final_stage(ctx, "the comparison with v1's published ranks")
    if wait:
        return wait
    m = lbv1.moves(runs, lbv1.published(ctx), lbv1.methods(ctx), lb)
    parts = _parts(m["partition"].unique())
    by = {(r.preset, r.partition): r for r in m.itertuples()}
    order = m.groupby("preset", sort=False)["v1_rank"].mean().sort_values(kind="stable")
    lines = ["| Method | " + " | ".join(f"{_title(p)}: v1 → v2" for p in parts) + " |", "|---" * (len(parts) + 1) + "|"]
    for preset in order.index:
        label = m.loc[m["preset"] == preset, "label"].iloc[0]
        lines.append(f"| {label} | " + " | ".join(_move_cell(by[(preset, p)]) if (preset, p) in by else "-"
                                                  for p in parts) + " |")
    n_methods = len(lbv1.methods(ctx))
    agree = lbv1.rank_agreement(m)
    moved = m[m["up"].abs() > 5]
    lines += ["", f"Ranks among v1's {n_methods} methods (v2's five 2025 methods left out of v2's ranks here). "
              f"↓: v1 ranked the method by re-runs at a lower lr after a final seed diverged (the post-hoc fallback "
              f"v2 removed). †: v2's pick on that partition differs from the best cell of the 50-round Dir(0.3) "
              f"screen, the choice a v1-style rule (short horizon, one partition) takes from v2's grid.", ""]
    for a in agree:
        lines.append(f"- Kendall τ, v1 vs v2 ranks, {_title(a['partition'])}: {_f(a['value'])} "
                     f"[{_f(a['lo'])}, {_f(a['hi'])}], n = {a['n']}.")
    lines.append(f"- {len(moved)} of the {len(m)} published (method, partition) ranks moved by more than 5 places; "
                 f"{int((~m['screen_pick'] & ~m['v2_unstable']).sum())} of the {len(m)} v2 picks differ from the "
                 f"50-round screen's choice; {int((m['v1_fallback'] == 'yes').sum())} of the v1 ranks rested on "
                 f"the fallback.")
    lines += ["", f"{len(agree)} rank correlations are reported here; intervals are 95 % percentile bootstraps over "
              f"the published methods (a selection, not a sample: v1 published the top 10 and the ranks it "
              f"discussed), so read them as descriptive."]
    return "\n".join(lines)


def claims_summary(ctx) -> str:
    """The README's view of `claims`: the verdict counts, without the pairs the proposed method does not win."""
    return claims(ctx, details=False)


def claims(ctx, details: bool = True) -> str:
    """Each proposed method against the baselines of its paper's headline table, per partition (lbclaims)."""
    from . import lbclaims

    runs, lb, wait = _final_stage(ctx, "each paper's headline comparison")
    if wait:
        return wait
    tables = {p: lbclaims.table_baselines(ctx.study(paper), table, p)
              for p, (paper, table) in lbclaims.HEADLINE.items() if p in lb["methods"]}
    c = lbclaims.claims(runs, {p: [b for b in bases if b in lb["methods"]] for p, (_, bases) in tables.items()})
    ranks = lbstats.primary_ranks(runs)
    label = dict(zip(ranks["preset"], ranks["label"]))
    parts = _parts(c["partition"].unique())
    counted = (lbclaims.BETTER, lbclaims.BASELINE_DIVERGED, lbclaims.WITHIN, lbclaims.WORSE, lbclaims.DIVERGED,
               lbclaims.BOTH)
    lines = ["| Method | its paper's table | " + " | ".join(_title(p) for p in parts) + " |",
             "|---" * (len(parts) + 2) + "|"]
    lost = []
    for proposed, (ref, bases) in tables.items():
        ranked = [b for b in bases if b in lb["methods"]]
        cells = []
        for p in parts:
            sub = c[(c["proposed"] == proposed) & (c["partition"] == p)]
            n = sub["verdict"].value_counts()
            cells.append(", ".join(f"{v} {int(n[v])}" for v in counted if n.get(v, 0)) + f" (of {len(sub)})"
                         if len(sub) else "-")
            if len(unwon := sub[~sub["verdict"].isin([lbclaims.BETTER, lbclaims.BASELINE_DIVERGED])]):
                lost.append(f"- {label.get(proposed, proposed)} on {_title(p)}, not beaten: " + "; ".join(
                    f"{label.get(r.baseline, r.baseline)} ({r.verdict}"
                    + (f", Δ {r.delta:+.2f} ± {_f(r.pooled_std)}" if not math.isnan(r.delta) else "") + ")"
                    for r in unwon.sort_values("delta", kind="stable").itertuples()))
        unranked = [b for b in bases if b not in lb["methods"]]
        lines.append(f"| {label.get(proposed, proposed)} | {ref}: {len(ranked)} baselines"
                     + (f" ({len(unranked)} not ranked here: {', '.join(unranked)})" if unranked else "")
                     + " | " + " | ".join(cells) + " |")
    lines += ["", "Verdict counts per partition: the proposed method's final test accuracy against each baseline's, "
              "better or worse where the means (completed seeds) differ by at least the two methods' pooled seed "
              "standard deviation, within the seed spread otherwise; a diverged final seed or no stable setting "
              "loses to a method whose every seed completed."]
    if not details:
        lines[-1] += " The pairs behind each count: `docs/leaderboard.md`."
        return "\n".join(lines)
    lines[-1] += " Every pair the proposed method does not win, with Δ = proposed minus baseline (points) ± the pooled seed std:"
    return "\n".join(lines + [""] + (lost or ["- none."]))


def figures(ctx) -> str:
    """The study's four figures, as committed with the evidence (figures/evidence/leaderboard/)."""
    from ..results.leaderboard.protocol import FIGURES

    links = {name: ctx.figure_link("leaderboard", name) for name in FIGURES}
    if not all(links.values()):
        missing = ", ".join(n for n, link in links.items() if not link)
        return (f"Not in the committed evidence yet ({missing}): the figures are exported once the final stage is "
                f"complete and `snakemake --configfile config/leaderboard.yaml` has rendered them.")
    return "\n\n".join(f"**{title}** (`{name}`)\n\n![{title}]({links[name]})" for name, title in FIGURES.items())
