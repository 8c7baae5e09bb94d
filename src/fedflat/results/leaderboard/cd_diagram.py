"""The critical-difference diagram (Demšar 2006, Fig. 1): every method's mean rank over the (partition, seed)
blocks of the final runs on one axis, with Nemenyi's critical difference and a bar joining each maximal group of
methods whose mean ranks differ by less than it (not significantly different). The numbers are
leaderboard.ranking.critical_difference's, the pages' own; one colour per method (report/style.py)."""
from __future__ import annotations

import math

from ...pipeline.report.style import apply_style, color_for, save_all
from .ranking import critical_difference as friedman_nemenyi
from .ranking import rules
from .results import load_runs, unstable_methods


def cliques(ranks: list[float], cd: float) -> list[tuple[int, int]]:
    """(first, last) indices of the maximal runs of consecutive methods (ranks sorted ascending) whose mean ranks
    span less than `cd`; a method alone is no group. A NaN cd (the test undefined) gives none."""
    if math.isnan(cd):
        return []
    out, last = [], -1
    for i in range(len(ranks)):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] - ranks[i] < cd:
            j += 1
        if j > last and j > i:
            out.append((i, j))
        last = max(last, j)
    return out


def ticks(k: int) -> list[int]:
    """Rank ticks 1, s, 2s, ... (s the smallest of 1, 2, 5, 10, 20 giving at most 12) and k where it stands apart."""
    s = next((s for s in (1, 2, 5, 10, 20) if (k - 1) / s <= 12), 50)
    out = [1] + [t for t in range(s, k + 1, s) if t > 1]
    return out + ([k] if k - out[-1] >= s / 2 else [])


def result(m: dict) -> tuple[dict, dict[str, str]]:
    """(ranking.critical_difference over the manifest's final runs, preset -> label)."""
    runs = load_runs(m["entries"], hessian=False)
    unstable = unstable_methods(m)
    labels = dict(zip(runs["preset"], runs["method"])) if len(runs) else {}
    for picks in unstable.values():
        labels.update({preset: label for label, preset in picks.items()})
    ran = set(runs["preset"]) if len(runs) else set()
    never = [p for p in labels if p not in ran]  # no final run on any partition
    frame = runs[["partition", "preset", "seed", "status", "final_acc"]] if len(runs) else runs
    return friedman_nemenyi(frame, m["protocol"].get("statistics"), never), labels


def critical_difference(m: dict, outs) -> None:
    import matplotlib.pyplot as plt

    apply_style()
    res, labels = result(m)
    names, ranks, k, cd = [labels[p] for p in res["presets"]], res["mean_ranks"], res["k"], res["cd"]
    groups = cliques(ranks, cd)
    half = math.ceil(k / 2)
    rows = max(half, 1)
    height = 1.5 + 0.17 * rows
    fig, ax = plt.subplots(figsize=(7.5, height))
    lo, hi = 1, max(k, 2)
    ax.set_xlim(lo - 0.15 * (hi - lo) - 1.5, hi + 0.15 * (hi - lo) + 1.5)
    ax.set_ylim(rows + 1.2, -2.2)
    ax.axis("off")
    ax.hlines(0, lo, hi, color="black", lw=1.0)  # the rank axis, rank 1 (best) on the left
    for t in ticks(hi):
        ax.vlines(t, -0.18, 0, color="black", lw=0.8)
        ax.text(t, -0.3, f"{t}", ha="center", va="bottom", fontsize=7)
    if not math.isnan(cd):
        ax.hlines(-1.5, lo, lo + cd, color="black", lw=1.2)
        for x in (lo, lo + cd):
            ax.vlines(x, -1.62, -1.38, color="black", lw=1.0)
        ax.text(lo + cd / 2, -1.7, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=7)
    left_x, right_x = lo - 0.12 * (hi - lo) - 0.5, hi + 0.12 * (hi - lo) + 0.5
    for i, (name, r) in enumerate(zip(names, ranks)):
        c = color_for(name)
        row = 1 + (i if i < half else k - 1 - i)  # the best and the worst nearest the axis, as Demšar draws
        x_end, ha = (left_x, "right") if i < half else (right_x, "left")
        ax.plot([r, r, x_end], [0, row * 0.95 + 0.3, row * 0.95 + 0.3], color=c, lw=0.8)
        ax.plot(r, 0, "o", color=c, ms=3)
        ax.text(x_end + (-0.2 if ha == "right" else 0.2), row * 0.95 + 0.3, f"{name} ({r:.1f})", ha=ha,
                va="center", fontsize=6.5, color=c)
    for g, (a, b) in enumerate(groups):  # groups stacked just under the axis, each its own row
        y = 0.45 + g * min(0.22, 0.9 * rows / max(len(groups), 1))
        ax.hlines(y, ranks[a] - 0.1, ranks[b] + 0.1, color="black", lw=1.8, alpha=0.8)
    fr = (f"Friedman $\\chi^2_F$ = {res['statistic']:.1f} (df {res['df']}, N = {res['n']} blocks), p = {res['p']:.2g}"
          if not math.isnan(res["statistic"]) else "Friedman test undefined (fewer than 3 methods or 2 blocks)")
    out = ", ".join(labels.get(p, p) for p in res["left_out"])
    fig.suptitle(f"Mean rank over the (partition, seed) blocks of the final runs (1 = best; a failed seed ranks last in "
                 f"its block). {fr}; Nemenyi CD at α = {rules(m['protocol'].get('statistics'))['alpha']:g}: "
                 f"methods joined by a bar are not significantly different."
                 + (f"\nLeft out (absent from a block: no pick on a partition): {out}." if out else ""),
                 fontsize=7.5, wrap=True)
    save_all(fig, outs)
