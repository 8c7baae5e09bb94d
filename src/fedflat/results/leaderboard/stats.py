"""The leaderboard's Pareto frontiers; rank correlations and their bootstrap intervals come from fedflat.core.util.rank_stats,
and the v3 ranks, bands and pairwise verdicts from fedflat.results.leaderboard.ranking. Plain numpy on small arrays; tested
on hand-made inputs."""
from __future__ import annotations

import math

from ...core.util.rank_stats import bootstrap_ci, kendall, spearman  # noqa: F401  (one NaN-safe bootstrap for the project)


def pareto_front(cost: list[float], acc: list[float]) -> list[int]:
    """Indices of the points no other point dominates (cost no higher and accuracy no lower, one strictly),
    ordered by increasing cost. Points with a NaN coordinate are never on the front."""
    pts = [(c, a, i) for i, (c, a) in enumerate(zip(cost, acc)) if not (math.isnan(c) or math.isnan(a))]
    front = []
    for c, a, i in pts:
        if not any((c2 <= c and a2 >= a) and (c2 < c or a2 > a) for c2, a2, _ in pts):
            front.append((c, i))
    return [i for _, i in sorted(front)]
