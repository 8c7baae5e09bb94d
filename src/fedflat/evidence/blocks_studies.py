"""Generated blocks of the small real-data studies that stand beside their method's documentation (the digits that
ship with scikit-learn, CPU minutes): FedSAGD's stability protocol (docs/papers.md), FedSOL Combined's reading
(docs/algorithms_sam.md) and FedSynSAM at tiny scale (docs/fedsynsam.md). Each shows its study's tables and
figures as the study's rules rendered them, from the committed evidence."""
from __future__ import annotations

import math

from .store import embed

PENDING = "Not in the committed evidence yet: `python -m fedflat.evidence export <the study's config>` after its runs."


def study_block(study: str, tables: tuple[str, ...], figures: tuple[str, ...] = (), verdict=None):
    """The study's tables (and figures, PNG) in that order; `verdict(ctx) -> str`, if given, opens the block."""
    def block(ctx) -> str:
        ev = ctx.evidence(study)
        texts = [ev.table_text(t) for t in tables]
        if any(t is None for t in texts):
            return PENDING
        parts = [verdict(ctx)] if verdict else []
        parts += [embed(t) for t in texts]
        for f in figures:
            link = ctx.figure_link(study, f)
            if link:
                parts.append(f"![{study} {f}]({link})")
        return "\n\n".join(parts)
    return block


# FedSOL Combined's reading: the rule of config/papers/tuning/fedsol_combined_reading.yaml, fixed before its runs.
SOL_STUDY, SOL_TABLE = "fedsol_combined_reading", "combined_scaffold"
SOL_BASE, SOL_READINGS = "SCAFFOLD (Base)", {"decoupled": "Combined, decoupled",
                                             "kept in the step": "Combined, kept in the step"}
CHANCE = 10.0


def fails(acc: float) -> bool:
    """Below twice chance (or diverged: NaN) is a failed run by the study's rule."""
    return not (acc >= 2 * CHANCE)


def supported_readings(means: dict[str, float]) -> list[str]:
    """The readings under which Base fails and Combined trains (the paper's pattern); `means`: row -> mean final
    accuracy (%, NaN where every seed diverged)."""
    if not fails(means.get(SOL_BASE, math.nan)):
        return []
    return [name for name, row in SOL_READINGS.items() if not fails(means.get(row, math.nan))]


def sol_verdict(ctx) -> str:
    import io

    import pandas as pd

    long = pd.read_csv(io.StringIO(ctx.evidence(SOL_STUDY).table_text(SOL_TABLE, "csv")))
    means = {r: float(v) for r, v in zip(long["row"], long["ours_mean"])}
    good = supported_readings(means)
    base = "fails" if fails(means.get(SOL_BASE, math.nan)) else "trains"
    if len(good) == 1:
        tail = f"only the **{good[0]}** reading reproduces the paper's pattern."
    elif good:
        tail = "both readings reproduce the paper's pattern, so neither is ruled out."
    else:
        tail = "neither reading reproduces the paper's pattern, so neither is ruled out."
    return (f"By the study's rule (failed: mean final accuracy below {2 * CHANCE:g} %, twice chance): SCAFFOLD's "
            f"Base {base}; {tail}")


fedsagd_stability = study_block("fedsagd_stability_digits", ("stability", "accuracy"),
                                ("fig2_stability", "fig1_local_stability"))
fedsol_reading = study_block(SOL_STUDY, (SOL_TABLE,), verdict=sol_verdict)
fedsynsam_tiny = study_block("fedsynsam_table1_tiny", ("fedsynsam_table1",), ("fedsynsam_fig2_cosine",))
