"""The decision kinds, applied to a finding's cells (each unit's verdict).

closes_shortfall  does a candidate close the gap between the baseline's cell and the paper's? In order: the
                  unit waits until every cell is recorded; the baseline may need no explaining (`baseline_ok`);
                  else the candidates whose cell passes `closes` are named; else (words.overshoots) those past the
                  paper by more than the tolerance on the far side from the baseline (the gap changed side: not
                  closing). A side is `within` (|x - paper| <= tolerance, the default: above the paper by more than
                  the tolerance closes nothing), `not_below` (x >= paper - tolerance) or `not_above` (x <= paper +
                  tolerance). A test that one seed std either way would flip makes the unit "inconclusive (seed
                  spread)". Each unit's `state` (waits, inconclusive, no_gap, closes, not_closed) labels the cause of
                  a gap it is declared for (evidence/paper_targets.py).
ordering          is the treatment's cell above the baseline's beyond chance? The paired test of paired_claim, the
                  paper's effect optional (else the difference of the arms' published values).
paired_claim      the paired t-test of treatment - baseline per seed, Holm-adjusted within `family`, against the
                  paper's effect: supported / contradicted / inconclusive (docs/extending.md, "A finding"); a
                  failed seed decides by the registered rule, or (`failures: pairs_only`) is left out.
A cell with a diverged or missing seed is never within, never passes and never closes."""
from __future__ import annotations

import math

from ...core.util.paired import detectable, holm, paired_t
from ..legacy import legacy_only
from .declared import findings, fmt
from .match import cell, complete, mask, mean
from .sources import all_runs_of, candidate_cells, paper_of, runs_of, table_run_ids

CLOSES_WORDS = {"waits": "waits for its runs", "no_gap": "no gap to explain: the baseline lies within {tolerance} "
                "points of the paper", "closes": "{label}: {closing} closes the gap",
                "not_closed": "unexplained: no candidate within {tolerance} points",
                "inconclusive": "inconclusive (seed spread): a seed std either way changes the answer"}
CLAIM_WORDS = {"supported": "supported", "contradicted": "contradicted", "inconclusive": "inconclusive",
               "waits": "waits for its runs: {recorded} of {expected} in `{evidence}`{unmeasured}{set_aside}",
               "unmeasured": "; {n} of them without {metric} yet", "set_aside": "; {n} legacy record(s) set aside",
               "beyond_margin": "(larger than the paper's margin, not significant after Holm)",
               "treatment_failed": "(the treatment failed on seed {seeds})",
               "baseline_failed": "(no pair: the baseline failed on seed {seeds})",
               "pairs_only": "({seeds} left out: one arm failed)", "post_hoc": "post hoc: {verdict}"}
# a paired unit's state (r["state"]), as counts name it
STATE_NAMES = {"supported": "supported", "contradicted": "contradicted", "inconclusive": "inconclusive",
               "waits": "waiting for runs"}


def fill(template: str, **tokens) -> str:
    """`template` with each {name} replaced by its token (no format mini-language: settings such as {0.01, 0.1}
    in prose stay as written)."""
    for k, v in tokens.items():
        template = template.replace("{" + k + "}", str(v))
    return template


def passes(side: str, x: float | None, paper: float | None, tol: float) -> bool:
    if x is None or paper is None or (isinstance(x, float) and math.isnan(x)):
        return False
    return {"within": abs(x - paper) <= tol, "not_below": x >= paper - tol, "not_above": x <= paper + tol}[side]


def _sd(c: dict) -> float:
    a = c["acc"]
    return math.sqrt(sum((x - sum(a) / len(a)) ** 2 for x in a) / (len(a) - 1)) if len(a) > 1 else 0.0


def _flips(side: str, c: dict, paper: float | None, tol: float) -> bool:
    m = mean(c)
    return m is not None and len({passes(side, m + s * _sd(c), paper, tol) for s in (-1, 0, 1)}) > 1


def label(f) -> str:
    return "measured" if f.get("fixed") == "before_finals" else "post hoc"


def closes_shortfall(ctx, f, runs) -> dict:
    words = {**CLOSES_WORDS, **(f.get("words") or {})}
    tol, side_ok, side, base = f.tolerance, f.get("baseline_ok", "within"), f.get("closes", "within"), f.get("baseline")
    units = candidate_cells(ctx, f, runs)
    tokens = {"label": label(f), "tolerance": fmt(tol)}
    for r in units:
        cells, paper = r["cells"], r["paper"]
        r["baseline"] = base
        if not complete(*cells.values()):
            r["verdict"], r["state"] = fill(words["waits"], **tokens), "waits"
        elif _flips(side_ok, cells[base], paper, tol):
            r["verdict"], r["state"] = fill(words["inconclusive"], **tokens), "inconclusive"
        elif passes(side_ok, mean(cells[base]), paper, tol):
            r["verdict"], r["state"] = fill(words["no_gap"], **tokens), "no_gap"
        else:
            r["verdict"], r["state"] = _closing(r, words, base, side, tol, tokens)
    return {"units": units}


def _closing(r: dict, words: dict, base, side: str, tol: float, tokens: dict) -> tuple[str, str]:
    """(verdict, state) of a unit whose baseline leaves a gap: the candidates that close it, else those that
    overshoot the paper on the far side from the baseline (words.overshoots), else none; inconclusive where one
    seed std either way would change a candidate's answer."""
    cells, paper = r["cells"], r["paper"]
    names = {c["value"]: c["name"] for c in r["candidates"]}
    vals = [c["value"] for c in r["candidates"] if c["value"] != base]
    if any(_flips(side, cells[v], paper, tol) for v in vals):
        return fill(words["inconclusive"], **tokens), "inconclusive"
    # past the paper on the far side from the baseline: the gap changed side, it did not close
    far = "not_above" if (mean(cells[base]) or -math.inf) < (paper or 0) else "not_below"
    closing = [names[v] for v in vals if passes(side, mean(cells[v]), paper, tol)]
    over = [names[v] for v in vals if mean(cells[v]) is not None and not passes(far, mean(cells[v]), paper, tol)]
    text = words["closes"] if closing else words["overshoots"] if over and "overshoots" in words else words["not_closed"]
    return (fill(text, closing=", ".join(closing), overshooting=", ".join(over),
                 candidates=", ".join(names[v] for v in vals), **tokens), "closes" if closing else "not_closed")


def _arm(ctx, f, u: dict, name: str, runs, i: int) -> tuple[dict, float | None]:
    """One arm's cell and the paper's value of it: a `row` of the unit's table (its runs, as the evidence's
    cells.csv records them), or a record filter within the unit's `where`."""
    arm = {**(f.get(name) or {}), **(u.get(name) or {})}
    key = f.where(f"units[{i}].{name}")
    metric = u.get("metric") or f.metric
    if "row" in arm:
        ids = table_run_ids(ctx, f, u, arm["row"], key)
        c = cell(runs, {"run_id": ids or ["-"]}, metric, sorted(set(runs["seed"])), key)
        c["need"] = len(ids) or len(f.seeds)
        return c, paper_of(ctx, f, u, arm["row"])
    return cell(runs, [u.get("where") or {}, arm], metric, f.seeds, key), None


def _set_aside(ctx, f, u: dict, i: int) -> int:
    """How many legacy records the unit's two arms select: set aside, since a legacy record feeds no verdict (said
    while it waits). A `row` arm's are the legacy runs cells.csv lists for it; a filter arm's, those its filters hold for."""
    legacy = ctx.memo(("legacy", f.get("evidence")), lambda: legacy_only(all_runs_of(ctx, f)))
    n = 0
    for name in ("treatment", "baseline"):
        arm = {**(f.get(name) or {}), **(u.get(name) or {})}
        if "row" in arm:
            n += int(legacy["run_id"].isin(table_run_ids(ctx, f, u, arm["row"], f.where(f"units[{i}].{name}"))).sum())
        else:
            n += int((mask(legacy, u.get("where") or {}) & mask(legacy, arm)
                      & legacy["seed"].isin(list(f.seeds)).to_numpy()).sum())
    return n


def is_paired(f) -> bool:
    """paired_claim and ordering: both judged by the paired test (judge_paired)."""
    return f.kind in ("paired_claim", "ordering")


def ordering(ctx, f, runs) -> dict:
    """Both arms of every unit and their raw paired test, which `evaluate` judges; how many legacy records the arms
    set aside."""
    units = []
    for i, u in enumerate(f.units):
        (a, pa), (b, pb) = _arm(ctx, f, u, "treatment", runs, i), _arm(ctx, f, u, "baseline", runs, i)
        effect = {**(f.get("paper") or {}), **(u.get("paper") or {})}.get("value")  # the published effect, if given
        # the declared effect; else the difference of the arms' published values (a `row` arm of a catalog table)
        paper = effect if effect is not None or None in (pa, pb) else pa - pb
        units.append({"unit": u, "cells": (a, b), "paper": paper, "p": math.nan, **_paired(a, b),
                      "set_aside": _set_aside(ctx, f, u, i)})
    return {"units": units}


def _paired(a: dict, b: dict) -> dict:
    """The paired test over the seeds both arms completed; the seeds where only one arm diverged, by arm."""
    def by_seed(c):  # {seed: value} of the measured seeds, and the seeds that did not complete
        rows = c["rows"]
        return c["per_seed"], set(rows[rows["status"] != "completed"]["seed"].astype(int))
    (va, fa), (vb, fb) = by_seed(a), by_seed(b)
    seeds = sorted(set(va) & set(vb))
    t = paired_t([va[s] - vb[s] for s in seeds])
    return {"ours": t["mean"], "spread": t["sd"], "lo": t["lo"], "hi": t["hi"], "p": t["p"], "n": t["n"],
            "failed": {"treatment": sorted(fa - fb), "baseline": sorted(fb - fa)}, "complete": complete(a, b)}


def family_p(ctx, family: str) -> dict:
    """{(finding id, unit index): Holm-adjusted p} over every paired unit of the findings declaring `family` (a
    finding without one is its own family)."""
    def make():
        raw = [((g.id, i), r["p"]) for g in findings(ctx) if is_paired(g) and g.get("family", g.id) == family
               for i, r in enumerate(raw_result(ctx, g)["units"])]
        return dict(zip([k for k, _ in raw], holm([p for _, p in raw])))
    return ctx.memo(("family", family), make)


def judge_paired(f, units: list[dict], adjusted: dict) -> None:
    """Each paired unit's verdict from its Holm-adjusted p and 95 % interval. `failures: rule` (the default): a
    diverged seed is a failure of its arm, the treatment's contradicts the claim, the baseline's leaves it
    inconclusive (no pair to test). `failures: pairs_only`: the seeds both arms completed decide, the others are
    named as left out. A rule declared `fixed: post_hoc` says so in every verdict."""
    words = {**CLAIM_WORDS, **(f.get("words") or {})}
    alpha = float(f.get("alpha", 0.05))
    pairs_only = f.get("failures", "rule") == "pairs_only"
    for i, r in enumerate(units):
        r["p_holm"] = adjusted.get((f.id, i), r["p"])
        r["detectable"] = detectable(r["spread"], r["n"], alpha)
        sign = 1.0 if not r["paper"] else math.copysign(1.0, r["paper"])
        failed = {"treatment": [], "baseline": []} if pairs_only else r["failed"]
        if not r["complete"]:
            r["state"] = "waits"
        elif failed["treatment"]:
            r["state"] = "contradicted"
        elif failed["baseline"] or r["n"] < 2:
            r["state"] = "inconclusive"
        elif r["p_holm"] < alpha and r["ours"] * sign > 0:
            r["state"] = "supported"
        elif _contradicts(r, sign):
            r["state"] = "contradicted"
        else:
            r["state"] = "inconclusive"
        r["verdict"] = fill(words[r["state"]], **_waiting(f, r, words))
        if r["state"] == "waits":
            continue
        if r["state"] == "inconclusive" and _beyond_margin(r, sign):
            r["verdict"] += " " + words["beyond_margin"]
        left = sorted(r["failed"]["treatment"] + r["failed"]["baseline"])
        if pairs_only and left:
            named = ("seeds " if len(left) > 1 else "seed ") + ", ".join(map(str, left))
            r["verdict"] += " " + fill(words["pairs_only"], seeds=named)
        for arm in ("treatment", "baseline") if r["state"] in ("contradicted", "inconclusive") else ():
            if failed[arm]:  # the verdict rests on a failed seed, not on the interval: say which
                r["verdict"] += " " + fill(words[f"{arm}_failed"], seeds=", ".join(map(str, failed[arm])))
                break
        if f.get("fixed") == "post_hoc":
            r["verdict"] = fill(words["post_hoc"], verdict=r["verdict"])


def _contradicts(r: dict, sign: float) -> bool:
    """Contradicted: the whole 95 % interval lies on the side of 0 opposite the paper's, or its paper-side bound
    falls short of the paper's margin. An interval wholly past the paper's margin contradicts nothing: the claim
    holds there in the paper's direction, it is only not significant after Holm (rule of 2026-11-29, fixed before
    any v3 final was read; until then a margin outside the interval on either side read as contradicted)."""
    far = max(r["lo"] * sign, r["hi"] * sign)  # the interval's bound on the paper's side
    return far < 0 or (r["paper"] is not None and far < abs(r["paper"]))


def _beyond_margin(r: dict, sign: float) -> bool:
    """The whole interval lies past the paper's margin, on its side."""
    return r["paper"] is not None and min(r["lo"] * sign, r["hi"] * sign) > abs(r["paper"])


def _waiting(f, r: dict, words: dict) -> dict:
    """What a waiting unit waits for: {recorded} and {expected} runs of both arms, {evidence}, {unmeasured} (the
    completed runs whose metric is not measured yet), {set_aside}."""
    a, b = r["cells"]
    n, m = r.get("set_aside", 0), a["unmeasured"] + b["unmeasured"]
    metric = r["unit"].get("metric") or f.metric
    return {"recorded": a["seeds"] + b["seeds"], "expected": a["need"] + b["need"], "evidence": f.get("evidence"),
            "unmeasured": fill(words["unmeasured"], n=m, metric=metric) if m else "",
            "set_aside": fill(words["set_aside"], n=n) if n else ""}


KIND = {"closes_shortfall": closes_shortfall, "ordering": ordering, "paired_claim": ordering}


def raw_result(ctx, f) -> dict:
    return ctx.memo(("raw", f.id), lambda: KIND[f.kind](ctx, f, runs_of(ctx, f)))


def evaluate(ctx, f) -> dict:
    """The finding's units with their cells, paper values and verdicts (memoised per render)."""
    out = raw_result(ctx, f)
    if is_paired(f) and "judged" not in out:
        judge_paired(f, out["units"], family_p(ctx, f.get("family", f.id)))
        out["judged"] = True
    return out
