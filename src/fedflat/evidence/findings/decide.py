"""The decision kinds, applied to a finding's cells (each unit's verdict, and what the rule adopts).

closes_shortfall  does a candidate close the gap between the baseline's cell and the paper's? In order: the
                  unit waits until every cell is recorded; the baseline may need no explaining (`baseline_ok`);
                  the candidates may coincide (one computation: none can act); else the candidates whose cell
                  passes `closes` are named; else (words.overshoots) those past the paper by more than the
                  tolerance on the far side from the baseline (the gap changed side: not closing). A side is `within` (|x - paper| <= tolerance, the default: above the
                  paper by more than the tolerance closes nothing), `not_below` (x >= paper - tolerance) or
                  `not_above` (x <= paper + tolerance). With `spread: checked` (the default) a test that one seed
                  std either way would flip makes the unit "inconclusive (seed spread)".
                  Each unit's `state` (waits, inconclusive, no_gap, coincide, closes, not_closed) labels the
                  cause of a gap it is declared for (evidence/paper_targets.py).
adopt_candidate   per group of units (`per`: a unit field, or all), adopt the candidate with the most units whose
                  cell lies within the tolerance of the paper (`count: alone`: a unit counts for a candidate only
                  when no other is within); ties: the declared order. Nothing is adopted before every cell is in.
ordering          is the treatment's cell above the baseline's beyond chance? `test: paired_t` (the default: as
                  paired_claim, the paper's effect optional) or `test: pooled_std` (the pages' first test, kept by
                  the findings written with it: the mean difference against sqrt((sd_a^2 + sd_b^2) / 2)).
paired_claim      the paired t-test of treatment - baseline per seed, Holm-adjusted within `family`, against the
                  paper's effect: supported / contradicted / inconclusive (docs/extending.md, "A finding"); a
                  failed seed decides by the registered rule, or (`failures: pairs_only`) is left out.
A cell with a diverged or missing seed is never within, never passes and never closes."""
from __future__ import annotations

import math

from ...core.util.paired import detectable, holm, paired_t
from ..legacy import legacy_only
from .declared import filter_of, findings, fmt
from .match import cell, coincide, complete, mask, mean, table_cell, values
from .sources import (all_runs_of, candidate_cells, catalog_values, exported_table, paper_of, preset_label, runs_of,
                      table_run_ids)

CLOSES_WORDS = {"waits": "waits for its runs", "no_gap": "no gap to explain: the baseline lies within {tolerance} "
                "points of the paper", "closes": "{label}: {closing} closes the gap",
                "not_closed": "unexplained: no candidate within {tolerance} points",
                "inconclusive": "inconclusive (seed spread): a seed std either way changes the answer", "join": ", "}
ORDER_WORDS = {"appears": "appears", "reversed": "reversed", "within": "within the seed spread",
               "unsettled": "not settled", "diverged": "{n} seed(s) diverged"}
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


def coinciding(f, units: list[dict]) -> list[str]:
    """The values of the `coincide.by` field whose units' candidates are one computation (match.coincide)."""
    by = (f.get("coincide") or {}).get("by")
    if not by:
        return []
    groups: dict = {}
    for r in units:
        groups.setdefault(r["unit"].get(by), []).append(list(r["cells"].values()))
    return [g for g, cells in groups.items() if coincide(cells, f.metric)]


def label(f) -> str:
    return "measured" if f.get("fixed") == "before_finals" else "post hoc"


def closes_shortfall(ctx, f, runs) -> dict:
    words = {**CLOSES_WORDS, **(f.get("words") or {})}
    tol, side_ok, side = f.tolerance, f.get("baseline_ok", "within"), f.get("closes", "within")
    checked = f.get("spread", "checked") == "checked"
    units = candidate_cells(ctx, f, runs)
    same = set(coinciding(f, units))
    by = (f.get("coincide") or {}).get("by")
    tokens = {"label": label(f), "tolerance": fmt(tol)}
    for r in units:
        u, cells, paper = r["unit"], r["cells"], r["paper"]
        base = u.get("baseline", f.get("baseline"))
        r["baseline"] = base
        if not complete(*cells.values()):
            r["verdict"], r["state"] = fill(words["waits"], **tokens), "waits"
            continue
        if checked and _flips(side_ok, cells[base], paper, tol):
            r["verdict"], r["state"] = fill(words["inconclusive"], **tokens), "inconclusive"
            continue
        if passes(side_ok, mean(cells[base]), paper, tol):
            r["verdict"], r["state"] = fill(words["no_gap"], **tokens), "no_gap"
            continue
        if by and u.get(by) in same and "coincide" in words:
            r["verdict"], r["state"] = fill(words["coincide"], **tokens), "coincide"
            continue
        names = {c["value"]: c["name"] for c in r["candidates"]}
        rest = [c["value"] for c in r["candidates"] if c["role"] == "candidate" and c["value"] != base]
        # past the paper on the far side from the baseline: the gap changed side, it did not close
        far = "not_above" if (mean(cells[base]) or -math.inf) < (paper or 0) else "not_below"
        texts, states = [], []
        for g in words.get("groups") or [{k: words[k] for k in ("closes", "not_closed", "overshoots") if k in words}]:
            vals = [v for v in rest if v in g["candidates"]] if "candidates" in g else rest
            if checked and any(_flips(side, cells[v], paper, tol) for v in vals):
                texts.append(fill(words["inconclusive"], **tokens))
                states.append("inconclusive")
                continue
            closing = [names[v] for v in vals if passes(side, mean(cells[v]), paper, tol)]
            over = [names[v] for v in vals if mean(cells[v]) is not None and not passes(far, mean(cells[v]), paper, tol)]
            text = g["closes"] if closing else g["overshoots"] if over and "overshoots" in g else g["not_closed"]
            states.append("closes" if closing else "not_closed")
            texts.append(fill(text, closing=words["join"].join(closing), overshooting=words["join"].join(over),
                              s="s" if len(over) == 1 else "", candidates=words["join"].join(names[v] for v in vals),
                              **tokens))
        r["verdict"] = fill(words.get("joined", "{groups}"), groups="; ".join(texts), **tokens)
        # the unit's state, as a gap's cause label reads it (paper_targets): closed by any group, else inconclusive
        r["state"] = next((x for x in ("closes", "inconclusive") if x in states), "not_closed")
    return {"units": units, "coinciding": [g for g in same if g is not None]}


def adopt_candidate(ctx, f, runs) -> dict:
    if f.get("by") == "score":
        return grid_picks(ctx, f, runs)
    units = candidate_cells(ctx, f, runs)
    order = [c["value"] for c in f.candidates]
    alone = f.get("count", "within") == "alone"
    per = f.get("per", "all")
    counts: dict = {}
    for r in units:
        r["within"] = [v for v, c in r["cells"].items() if passes("within", mean(c), r["paper"], f.tolerance)]
        r["supports"] = r["within"][0] if len(r["within"]) == 1 else None
        group = "" if per == "all" else r["unit"].get(per)
        n = counts.setdefault(group, dict.fromkeys(order, 0))
        for v in ([r["supports"]] if r["supports"] is not None else []) if alone else r["within"]:
            n[v] += 1
    done = all(complete(*r["cells"].values()) for r in units)
    picks = {g: max(order, key=lambda v: (n[v], -order.index(v))) for g, n in counts.items()}
    return {"units": units, "counts": counts, "picks": picks if done else {}, "complete": done,
            "coinciding": [g for g in coinciding(f, units) if g is not None]}


def grid_picks(ctx, f, runs) -> dict:
    """`by: score`, the grid-search rule (report.grids): within each declared unit, one grid per value of
    `grid.by` (the method, and the coordinate held fixed); per grid, the value of `grid.field` whose cell has the
    best mean, ties to the smaller value, a cell with a diverged seed never; no pick until the grid holds
    `grid.size` values with every seed. `unit.catalog` names the catalog experiments that take the pick: the
    grid run at the catalog's fixed coordinate is the one it follows, and `catalog` holds the values it runs."""
    import numpy as np

    g = f.get("grid") or {}
    field, by = g["field"], g.get("by", ["preset"])
    study = ctx.study(f.get("catalog")) if any(u.get("catalog") for u in f.units) else None
    out = []
    for u in f.units:
        sub = runs[mask(runs, u.get("where") or {}) & runs["seed"].isin(list(f.seeds)).to_numpy()]
        keys = list(zip(*(values(sub, b) for b in by))) if len(sub) else []
        for key in sorted(set(keys), key=lambda k: [preset_label(x) if b == "preset" else fmt(x) if x is not None else ""
                                                      for b, x in zip(by, k)]):
            h = sub[np.array([k == key for k in keys], dtype=bool)]
            vals = sorted(set(values(h, field)), key=float)
            cells = {float(v): cell(h, filter_of(field, v), f.metric, f.seeds) for v in vals}
            means = {v: (sum(c["acc"]) / len(c["acc"]) if c["acc"] and not c["diverged"] else math.nan)
                     for v, c in cells.items()}
            done = len(cells) >= int(g.get("size", 1)) and complete(*cells.values())
            ok = [v for v, m in means.items() if not math.isnan(m)]
            pick = min(ok, key=lambda v: (-means[v], v)) if done and ok else None
            preset = dict(zip(by, key)).get("preset")
            cat = catalog_values(study, u.get("catalog"), preset, [field] + [b for b in by if b != "preset"])
            at = tuple(fmt(x) if x is not None else "" for b, x in zip(by, key) if b != "preset")
            out.append({"unit": {**u, "method": preset_label(preset), "at": at[0] if at else ""}, "preset": preset, "means": means,
                        "cells": cells,
                        "complete": done, "pick": pick, "catalog": cat[0],
                        "follows": bool(cat[1]) and cat[1] == [{a} for a in at]})
    return {"units": out, "grids": True}


def _arm(ctx, f, u: dict, name: str, runs, i: int, value=None) -> tuple[dict | None, float | None]:
    """One arm's cell and the paper's value of it: a `row` of the unit's table (its runs, as the evidence's
    cells.csv records them); a `row` of an exported table (`table_csv`, the unit's `metric`); the cell a `grid` finding
    picked for `method` in the unit's grid the catalog follows (or its cell at `value`); or a record filter within
    the unit's `where`. None: the grid has no pick yet."""
    arm = {**(f.get(name) or {}), **(u.get(name) or {})}
    key = f.where(f"units[{i}].{name}")
    if "grid" in arm:
        return _grid_arm(ctx, u, arm, value), None
    if "table_csv" in arm:
        frame = ctx.memo(("csv", f.get("evidence"), arm["table_csv"]), lambda: exported_table(ctx, f.get("evidence"),
                                                                                    arm["table_csv"]))
        return (None if frame is None else table_cell(frame, arm["row"], u.get("metric"), u.get("group"))), None
    metric = u.get("metric") or f.metric
    if "row" in arm:
        ids = table_run_ids(ctx, f, u, arm["row"], key)
        c = cell(runs, {"run_id": ids or ["-"]}, metric, sorted(set(runs["seed"])), key)
        c["need"] = len(ids) or len(f.seeds)
        return c, paper_of(ctx, f, u, arm["row"])
    return cell(runs, [u.get("where") or {}, arm], metric, f.seeds, key), None


def _set_aside(ctx, f, u: dict, i: int) -> int:
    """How many legacy records the unit's two arms select: set aside by `records: regenerable` (said while it
    waits). A `row` arm's are the legacy runs cells.csv lists for it; a filter arm's, those its filters hold for."""
    legacy = ctx.memo(("legacy", f.get("evidence")), lambda: legacy_only(all_runs_of(ctx, f)))
    n = 0
    for name in ("treatment", "baseline"):
        arm = {**(f.get(name) or {}), **(u.get(name) or {})}
        if "row" in arm:
            n += int(legacy["run_id"].isin(table_run_ids(ctx, f, u, arm["row"], f.where(f"units[{i}].{name}"))).sum())
        elif "grid" not in arm and "table_csv" not in arm:
            n += int((mask(legacy, u.get("where") or {}) & mask(legacy, arm)
                      & legacy["seed"].isin(list(f.seeds)).to_numpy()).sum())
    return n


def _grid_arm(ctx, u: dict, arm: dict, value=None) -> dict | None:
    """The cell at the pick (or at `value`) of the complete grid the catalog follows for arm.method, in the unit
    of the `grid` finding whose fields the ordering unit shares."""
    g = next(x for x in findings(ctx) if x.id == arm["grid"])
    label = preset_label(arm["method"])
    for r in evaluate(ctx, g)["units"]:
        shared = [k for k in u if k in r["unit"] and k not in ("where", "paper", "catalog", "method")]
        if r["follows"] and r["unit"]["method"] == label and all(r["unit"][k] == u[k] for k in shared):
            at = r["pick"] if value is None else value
            return {**r["cells"][at], "pick": r["pick"]} if r["complete"] and at in r["cells"] else None
    return None


def _settled(c: dict | None) -> bool:
    """Every run of the cell is in the evidence and every completed one has its value (compare.cell_value)."""
    return c is not None and c["seeds"] == c["need"] and not c["unmeasured"]


def is_paired(f) -> bool:
    """paired_claim, and an ordering unless it declares the pages' first test (`test: pooled_std`)."""
    return f.kind == "paired_claim" or (f.kind == "ordering" and f.get("test", "paired_t") == "paired_t")


def ordering(ctx, f, runs) -> dict:
    """Both arms of every unit; the pooled-std verdict, or (paired) the raw paired test that `evaluate` judges.
    `versus` sets each verdict beside another: the same arms at another value of their grid ({value: x}), or a
    unit of another ordering ({finding: id, unit: {fields}}, the unit's own `versus` fields merged in). A unit
    whose grid arm has no pick yet is left out."""
    words = {**ORDER_WORDS, **(f.get("words") or {})}
    units = []
    for i, u in enumerate(f.units):
        (a, pa), (b, pb) = _arm(ctx, f, u, "treatment", runs, i), _arm(ctx, f, u, "baseline", runs, i)
        if (a is None or b is None) and any("grid" in (f.get(k) or {}) for k in ("treatment", "baseline")):
            continue
        effect = {**(f.get("paper") or {}), **(u.get("paper") or {})}.get("value")  # the published effect, if given
        # the declared effect; else the difference of the arms' published values (a `row` arm of a catalog table)
        paper = effect if effect is not None or None in (pa, pb) else pa - pb
        r = {"unit": u, "cells": (a, b), "paper": paper, "p": math.nan,
             **(_paired(a, b) if is_paired(f) else _compare(a, b, words))}
        if is_paired(f) and f.records != "all":
            r["set_aside"] = _set_aside(ctx, f, u, i)
        versus = {**(f.get("versus") or {}), **(u.get("versus") or {})}
        if "value" in versus:
            r["versus"] = _compare(_arm(ctx, f, u, "treatment", runs, i, versus["value"])[0],
                                   _arm(ctx, f, u, "baseline", runs, i, versus["value"])[0], words)
        elif "finding" in versus:
            other = next(x for x in findings(ctx) if x.id == versus["finding"])
            want = {k: v for k, v in versus.items() if k not in ("finding",)}
            want = {**want.pop("unit", {}), **want}
            r["versus"] = next((o for o in evaluate(ctx, other)["units"]
                                if all(o["unit"].get(k) == v for k, v in want.items())), None)
        units.append(r)
    return {"units": units}


def _compare(a: dict | None, b: dict | None, words: dict) -> dict:
    """The pooled-std test of two settled cells: ours (the difference of the seed means), spread, verdict, the
    means; no verdict while a cell is not settled or a seed diverged (`diverged` counts them)."""
    from ..compare import beyond_spread

    out = {"ours": math.nan, "spread": math.nan, "verdict": None, "mean": math.nan, "base_mean": math.nan,
           "diverged": 0}
    if not (_settled(a) and _settled(b)):
        return out
    out["diverged"] = a["diverged"] + b["diverged"]
    if a["acc"] and b["acc"] and not out["diverged"]:
        out["ours"], out["spread"], v = beyond_spread(a["acc"], b["acc"])
        out["verdict"] = words[{"appears": "appears", "reversed": "reversed"}.get(v, "within")]
        out["mean"], out["base_mean"] = sum(a["acc"]) / len(a["acc"]), sum(b["acc"]) / len(b["acc"])
    return out


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


KIND = {"closes_shortfall": closes_shortfall, "adopt_candidate": adopt_candidate, "ordering": ordering,
        "paired_claim": ordering}


def raw_result(ctx, f) -> dict:
    return ctx.memo(("raw", f.id), lambda: KIND[f.kind](ctx, f, runs_of(ctx, f)))


def evaluate(ctx, f) -> dict:
    """The finding's units with their cells, paper values and verdicts (memoised per render)."""
    out = raw_result(ctx, f)
    if f.kind in ("ordering", "paired_claim"):
        words = {**ORDER_WORDS, **(f.get("words") or {})}
        if is_paired(f) and "judged" not in out:
            judge_paired(f, out["units"], family_p(ctx, f.get("family", f.id)))
            out["judged"] = True
        for r in out["units"]:
            r["shown"] = r["verdict"] or (fill(words["diverged"], n=r["diverged"]) if r["diverged"]
                                          else words["unsettled"])
    return out
