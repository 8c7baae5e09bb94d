"""Kind `tables`: a study's exported tables and figures shown as its own rules rendered them (a diagnostic that
selects nothing is shown, not re-derived), opened, where declared, by a `pattern` rule on one table's row means:
does each row land on the side of a threshold the paper's pattern puts it on (e.g. FedSOL Table 4's SCAFFOLD row: a
Base at chance that its Combined rescues; config/papers/tuning/fedsol_combined_reading.yaml)."""
from __future__ import annotations

import io
import math

from ...core.util.markdown import embed
from .decide import fill
from .declared import fmt

PENDING = "Not in the committed evidence yet: `python -m fedflat.evidence export <the study's config>` after its runs."


def trains(mean: float, threshold: float) -> bool:
    """At or above the threshold; a diverged row (NaN) fails."""
    return mean >= threshold if not math.isnan(mean) else False


def supported(means: dict[str, float], rule: dict) -> list[str]:
    """The readings whose row trains while every `fails` row fails (the paper's pattern); none when a `fails` row
    trains. `means`: row -> mean (NaN where every seed diverged); a row the table lacks counts as diverged."""
    got = {row: means.get(row, math.nan) for row in [*rule["fails"], *rule["readings"].values()]}
    if any(trains(got[row], rule["threshold"]) for row in rule["fails"]):
        return []
    return [name for name, row in rule["readings"].items() if trains(got[row], rule["threshold"])]


def _opening(ctx, f) -> str:
    import pandas as pd

    rule = f.get("pattern")
    long = pd.read_csv(io.StringIO(ctx.evidence(f.get("evidence")).table_text(rule["table"], "csv")))
    means = {r: float(v) for r, v in zip(long["row"], long["ours_mean"])}
    good = supported(means, rule)
    words = rule["words"]
    base = words["fails"] if all(not trains(means.get(r, math.nan), rule["threshold"]) for r in rule["fails"]) \
        else words["trains"]
    tail = words["none"] if not good else (words["one"] if len(good) == 1 else words["several"])
    return fill(rule["intro"], threshold=fmt(rule["threshold"]), baseline=base,
                readings=fill(tail, names=", ".join(good)))


def render(ctx, f) -> str:
    """The opening verdict (a `pattern`), then the tables, then the figures (PNG) in the declared order; PENDING
    until every table is exported."""
    ev = ctx.evidence(f.get("evidence"))
    texts = [ev.table_text(t) for t in f.get("tables")]
    if any(t is None for t in texts):
        return PENDING
    parts = [_opening(ctx, f)] if f.get("pattern") else []
    parts += [embed(t) for t in texts]
    for name in f.get("figures") or ():
        link = ctx.figure_link(f.get("evidence"), name)
        if link:
            parts.append(f"![{f.get('evidence')} {name}]({link})")
    return "\n\n".join(parts)
