"""The leaderboard's statistics: ranks, Pareto frontiers; rank correlations and
their bootstrap intervals come from fedflat.util.stats. Plain numpy/scipy on small arrays; each is tested on hand-made inputs."""
from __future__ import annotations

import math

import numpy as np

from ...core.util.rank_stats import bootstrap_ci, kendall, spearman  # noqa: F401  (one NaN-safe bootstrap for the project)


def ranks(scores: dict[str, float]) -> dict[str, float]:
    """Rank 1 = the highest score; ties share the mean of their ranks; a missing score (NaN: diverged
    everywhere) ranks below every finite one (tied among themselves). Scores equal to 9 decimals tie: the same
    mean summed in another order (the table from run directories, the pages from records) differs in its last
    bits, which must not order two methods."""
    from scipy.stats import rankdata

    names = list(scores)
    vals = np.array([scores[n] for n in names], dtype=float)
    key = np.where(np.isnan(vals), -np.inf, np.round(vals, 9))
    r = rankdata(-key, method="average")
    return {n: float(x) for n, x in zip(names, r)}


def pareto_front(cost: list[float], acc: list[float]) -> list[int]:
    """Indices of the points no other point dominates (cost no higher and accuracy no lower, one strictly),
    ordered by increasing cost. Points with a NaN coordinate are never on the front."""
    pts = [(c, a, i) for i, (c, a) in enumerate(zip(cost, acc)) if not (math.isnan(c) or math.isnan(a))]
    front = []
    for c, a, i in pts:
        if not any((c2 <= c and a2 >= a) and (c2 < c or a2 > a) for c2, a2, _ in pts):
            front.append((c, i))
    return [i for _, i in sorted(front)]


def ascent_verdict(pick: float, ablation: float, std: float) -> str:
    """Does a SAM-type method's ascent beat its own rho = 0 ablation? `pick`, `ablation`: full-horizon validation
    scores (NaN where a seed diverged); their difference is judged against `std`, the seed spread of the method's
    final test accuracy. A twin that diverged where the pick completed is a verdict of its own: without the
    ascent the method is not stable at that setting."""
    if math.isnan(ablation) and not math.isnan(pick):
        return "ρ = 0 diverged"
    delta = pick - ablation
    if math.isnan(delta):
        return "—"
    if not math.isnan(std) and delta > std:
        return "the ascent helps"
    if not math.isnan(std) and delta < -std:
        return "ρ = 0 is better"
    return "within the seed spread"
