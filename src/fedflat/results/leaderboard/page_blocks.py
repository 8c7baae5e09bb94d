"""Generated blocks of docs/leaderboard.md and the README's leaderboard section, from the leaderboard's
committed evidence and its config (never from run directories): the status, the screen, the choice, the ranking
and the stability (this module), the verdicts (page_verdicts). Every statistic is computed by
fedflat.results.leaderboard.ranking under the config's declared `statistics:`, as the results table computes it."""
from __future__ import annotations

import math

from ...pipeline.report.grids import setting_text
from ...core.recorded import finite_number
from ...pipeline.study import load_config_file
from ...training.algorithms import PRESETS
from . import page_records as records
from . import plan
from .protocol import FIGURES, ablation_cell
from .ranking import mean_ranks
from .results import partition_title as _title  # the table's own names, so the pages match it
from .table import edges

STUDY = "leaderboard"  # the evidence these blocks render (v3; v2 is legacy: docs/leaderboard_v2.md)


def _config(ctx, whole: bool = False) -> dict:
    """The `leaderboard:` section (or the whole file) of the config the evidence was made with (its snapshot)."""
    cfg = load_config_file(ctx.config("leaderboard.yaml", STUDY))
    return cfg if whole else cfg["leaderboard"]


def _num(x, d: int = 2) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{d}f}"


def _got(runs, stage: str) -> int:
    return len(records.stage_runs(runs, stage))


def _continuation_expected(lb: dict) -> int:
    c = lb["tuning"]["continuation"]
    return len(lb["methods"]) * int(c["cells"]) * len(lb["partitions"]) * len(c["seeds"])


def stage_totals(runs, lb: dict) -> dict[str, tuple[int, int | None]]:
    """{stage: (runs in the evidence, runs the protocol calls for)} for the continuation, the final stage and the
    ablation; the last two follow from the picks, so their totals are None until the continuation is complete."""
    out = {"continuation": (_got(runs, "continuation"), _continuation_expected(lb))}
    final = ablation = None
    if out["continuation"][0] >= out["continuation"][1]:
        picks = records.continuation_choices(runs, lb["tuning"].get("metric", "last10_acc"))
        picks = picks[picks["lr"].notna()]
        final = len(picks) * len(lb["seeds"])
        ablation = len(lb["seeds"]) * sum(  # v3: every twin runs the final seeds
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
    counts = records.stage_counts(runs)
    lines = [f"Committed evidence: `results/evidence/leaderboard/runs.csv` ({len(runs)} runs; {n_methods} methods "
             f"ranked by `config/leaderboard.yaml`).", "", "| stage | runs | completed | diverged | collapsed |",
             "|---|---|---|---|---|"]
    for stage, row in counts.iterrows():
        lines.append(f"| {stage} | {row['runs']} | {row['completed']} | {row['diverged']} | {row['collapsed']} |")
    screen = int(counts.loc["screen", "runs"]) if "screen" in counts.index else 0
    expected = n_methods * int(lb["tuning"]["trials"]) * len(lb["tuning"]["partitions"]) * len(lb["tuning"]["seeds"])
    shared = int(runs["experiments"].map(lambda e: len(records.stages_of(e)) > 1).sum())
    if shared:
        lines += ["", f"{shared} runs serve two stages and count in both (the same settings, so the same run)."]
    lines += ["", f"Screen: {screen} of {expected} trials in the evidence."]
    gone = ctx.evidence(STUDY).superseded()
    if len(gone):
        per_stage = records.stage_counts(gone)["runs"]
        lines += ["", f"Out of every count here: {len(gone)} runs made at a pick since corrected ("
                      + ", ".join(f"{n} {stage}" for stage, n in per_stage.items()) + "; the choice had filled a key "
                      "the two continued cells shared with the grid's first value), kept in "
                      "`results/evidence/leaderboard/superseded.csv`."]
    return "\n".join(lines + _not_yet_run(ctx, lb))


def _not_yet_run(ctx, lb: dict) -> list[str]:
    """The methods the live config ranks that the evidence's own config (its snapshot) does not: not yet run, so the
    committed blocks stay as the evidence renders them (a new preset never changes a verdict before its runs)."""
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
    ch = records.screen_choices(runs, lb["methods"], tu["lr"], tu["lr_only"], tu.get("metric", "last10_acc"))
    got = _got(runs, "screen")
    if got < expected:
        return (f"The screen is not complete in the evidence ({got} of {expected} trials): its choices and counts "
                f"appear here once every trial has run.")
    rho = ch[ch["preset"].map(lambda p: "rho" in lb["methods"].get(p, {}))]
    edge_lr = ch[ch["edges"].map(lambda e: "lr" in e)]
    edge_key = ch[ch["edges"].map(lambda e: any(k != "lr" for k in e))]
    multi = [p for p, g in lb["methods"].items() if any(len(v) >= 3 for v in g.values())]
    lines = [f"- {len(ch)} methods have a completed screen cell; the best validation score is "
             f"{_num(ch['score'].max())} % ({ch.loc[ch['score'].idxmax(), 'label']}).",
             f"- ρ = 0 (the ascent switched off) is the best screen cell for {int(rho['rho0'].sum())} of the "
             f"{len(rho)} methods with a radius grid" + (": " + ", ".join(sorted(rho.loc[rho['rho0'], 'preset'].map(records.method_label))) if rho['rho0'].any() else "") + ".",
             f"- The chosen lr sits on an edge of the lr grid for {len(edge_lr)} of {len(ch)} methods"
             + (": " + ", ".join(f"{records.method_label(r.preset)} ({r.lr:g})" for r in edge_lr.itertuples()) if len(edge_lr) else "") + ".",
             f"- An own key with 3 or more values sits on an edge of its grid for {len(edge_key)} of the {len(multi)} "
             f"methods with such a key" + (": " + ", ".join(records.method_label(r.preset) for r in edge_key.itertuples()) if len(edge_key) else "") + "."]
    return "\n".join(lines)


def _setting(lb: dict, pick) -> str:
    """A pick's lr and tuned keys (the preset's other defaults stay out)."""
    return setting_text({"lr": pick.lr, **{k: pick.params.get(k) for k in lb["methods"].get(pick.preset, {})}})


def _pick_text(lb: dict, pick, computes: str | None) -> str:
    """The pick's tuned setting, with "ρ = 0: computes M" where the pick switched the ascent off."""
    if pick is None or math.isnan(pick.lr):
        return "every continued cell diverged"
    text = _setting(lb, pick)
    if computes is not None:
        text += f" (ρ = 0: computes {records.method_label(computes)})" if computes else " (ρ = 0: the ascent off)"
    return text


def summary(ctx, runs, lb: dict):
    """records.summary of the evidence, once per render (every final-stage block reads it)."""
    return ctx.memo(("leaderboard-summary", STUDY), lambda: records.summary(runs, lb))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def rho0_computes(runs) -> dict[tuple[str, str], str]:
    """(partition, preset) -> the preset a pick at rho = 0 then computes ("" where no exact reduction holds)."""
    z = records.rho0_picks(runs)
    return {(records.config_partition(r.partition), r.preset): r.same_as for r in z.itertuples()}


def interval(mean, lo, hi) -> str:
    """'86.73 [86.51, 86.95]' (one completed seed: no interval; none: '-')."""
    if mean is None or math.isnan(mean):
        return "-"
    return f"{mean:.2f}" + ("" if math.isnan(lo) else f" [{lo:.2f}, {hi:.2f}]")


def _stability(r) -> str:
    return "no pick" if r.unstable else f"{r.completed}/{r.seeds}"


def _band(r) -> str:
    return f"{r.band:g}" if not math.isnan(r.band) else "not testable" if r.completed == 1 else "-"


def ranking(ctx) -> str:
    """Every method on every partition, one table per partition in rank order (the docs page)."""
    runs, lb, wait = _final_stage(ctx, "the ranking")
    if wait:
        return wait
    s = summary(ctx, runs, lb)
    picks = {(records.config_partition(r.partition), r.preset): r for r in records.continuation_choices(runs).itertuples()}
    at0 = rho0_computes(runs)
    lines = []
    for part in lb["partitions"]:
        lines += [f"**{_title(part)}**", "", "| rank | method | final accuracy (%) [95 % CI] | stability | band | pick |",
                  "|---|---|---|---|---|---|"]
        for r in s[s["partition"] == part].itertuples():
            rank = f"{r.rank:g}" if not math.isnan(r.rank) else "-"
            acc = interval(r.mean, r.lo, r.hi) if r.completed else "no stable setting"
            lines.append(f"| {rank} | {r.label} | {acc} | {_stability(r)} | {_band(r)} | "
                         f"{_pick_text(lb, picks.get((part, r.preset)), at0.get((part, r.preset)))} |")
        first = s[(s["partition"] == part) & (s["band"] == 1)]
        lines += ["", f"Band 1 on {_title(part)} (its head and every method not significantly below it after Holm's "
                      f"correction): {', '.join(first['label']) or 'none'} ({_plural(len(first), 'method')}).", ""]
    return "\n".join(lines[:-1])


def top(ctx, n: int | None = 10) -> str:
    """The README's view: the ten best by mean rank (leaderboard.ranking.mean_ranks), one column per partition."""
    runs, lb, wait = _final_stage(ctx, "the ranking")
    if wait:
        return wait
    s = summary(ctx, runs, lb)
    at0 = rho0_computes(runs)
    by = {(r.preset, r.partition): r for r in s.itertuples()}
    parts = list(lb["partitions"])
    lines = ["| Method | " + " | ".join(_title(p) for p in parts) + " | mean rank |", "|---" * (len(parts) + 2) + "|"]
    for o in mean_ranks(s).head(n).itertuples():
        cells = []
        for p in parts:
            r = by.get((o.preset, p))
            if r is None or math.isnan(r.rank):
                cells.append("no stable setting" + (f" ({_stability(r)})" if r is not None else ""))
                continue
            mark = f"; ρ = 0: {records.method_label(at0[(p, o.preset)]) if at0[(p, o.preset)] else 'ascent off'}" \
                if (p, o.preset) in at0 else ""
            cells.append(f"{interval(r.mean, r.lo, r.hi)} (rank {r.rank:g}, band {_band(r)}, {_stability(r)}{mark})")
        lines.append(f"| {records.method_label(o.preset)} | " + " | ".join(cells) + f" | {o.mean_rank:.2f} |")
    return "\n".join(lines)


def stability(ctx) -> str:
    """Per method and partition: how many final seeds completed, and what the others did (diverged: the round its
    weights or loss became non-finite; collapsed: chance accuracy with an exploding loss at the end)."""
    runs, lb, wait = _final_stage(ctx, "the stability of every method")
    if wait:
        return wait
    s = summary(ctx, runs, lb)
    fin = records.stage_runs(runs, "final")
    fin = fin.assign(part=fin["partition"].map(records.config_partition))
    bad = fin[fin["status"] != "completed"]
    parts = list(lb["partitions"])
    by = {(r.preset, r.partition): r for r in s.itertuples()}
    shaky = sorted({r.preset for r in s.itertuples() if r.unstable or r.failed}, key=records.method_label)
    lines = [f"- {s['preset'].nunique() - len(shaky)} of {s['preset'].nunique()} methods completed every final seed "
             f"on every partition."]
    for p in parts:
        sub, b = s[s["partition"] == p], bad[bad["part"] == p]
        lines.append(f"- {_title(p)}: {len(b)} of {int(sub['seeds'].sum())} final runs failed ("
                     f"{int((b['status'] == 'diverged').sum())} diverged, {int((b['status'] == 'collapsed').sum())} "
                     f"collapsed) in {_plural(int((sub['failed'] > 0).sum()), 'method')}; "
                     f"{_plural(int(sub['unstable'].sum()), 'method')} without a pick; "
                     f"{_plural(int(((sub['completed'] == 0) & ~sub['unstable']).sum()), 'method')} with a pick and "
                     f"no completed seed.")
    if not shaky:
        return "\n".join(lines)
    lines += ["", "| Method | " + " | ".join(_title(p) for p in parts) + " |", "|---" * (len(parts) + 1) + "|"]
    for preset in shaky:
        cells = []
        for p in parts:
            r = by.get((preset, p))
            if r is None:
                cells.append("-")
                continue
            seeds = bad[(bad["preset"] == preset) & (bad["part"] == p)].sort_values("seed")
            why = "; ".join(f"seed {x.seed} {x.status}" + (
                f" (round {int(float(x.diverged_round))})"
                if x.status == "diverged" and finite_number(x.diverged_round) is not None else "")
                for x in seeds.itertuples())
            cells.append(_stability(r) + (f": {why}" if why else ""))
        lines.append(f"| {records.method_label(preset)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cost(ctx) -> str:
    return plan.render(plan.estimate(_config(ctx, whole=True), 2, exhaustive=False), 2)


def _parts(parts) -> list[str]:
    """IID first, then the Dirichlet partitions from the mildest to the most skewed."""
    return sorted(parts, key=lambda p: (p != "iid", -float(p.split("-")[0][3:] or 0) if p.startswith("dir") else 0))


def choice(ctx) -> str:
    """The choice per partition, from the continuation's records: each method's pick with its edge marks."""
    runs = ctx.evidence(STUDY).runs()
    lb = _config(ctx)
    c = lb["tuning"]["continuation"]
    got, expected = _got(runs, "continuation"), _continuation_expected(lb)
    if got < expected:
        return (f"The continuation is not complete in the evidence ({got} of {expected} full-horizon validation "
                f"runs): the picks appear here once every continued cell has run.")
    ch = records.continuation_choices(runs, lb["tuning"].get("metric", "last10_acc"))
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
            cells.append(f"{_setting(lb, r)} ({_num(r.score)} %)"
                         + (f" [edge: {', '.join(edge)}]" if edge else ""))
        label = next((by[(p, preset)].label for p in parts if (p, preset) in by), preset)
        lines.append(f"| {label} | {lb['tuning']['trials']} + {c['cells']} | " + " | ".join(cells) + " |")
    none = ch[ch["lr"].isna()]
    kept = records.picks_against_screen(runs, lb)
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


def figures(ctx) -> str:
    """The study's figures, as committed with the evidence (figures/evidence/leaderboard/)."""
    links = {name: ctx.figure_link("leaderboard", name) for name in FIGURES}
    if not all(links.values()):
        missing = ", ".join(n for n, link in links.items() if not link)
        return (f"Not in the committed evidence yet ({missing}): the figures are exported once the final stage is "
                f"complete and `snakemake --configfile config/leaderboard.yaml` has rendered them.")
    return "\n\n".join(f"**{title}** (`{name}`)\n\n![{title}]({links[name]})" for name, title in FIGURES.items())
