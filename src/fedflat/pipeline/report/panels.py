"""Multi-panel figure layout shared by the paper kinds and the analysis figure kinds: the title block, a grid of
up to three panels per row, one legend under the panels."""
from __future__ import annotations

import math


def suptitle(m: dict, extra: str = "") -> str:
    parts = [p for p in (m.get("caption", ""), m.get("title", ""), extra) if p]
    return "\n".join(parts)


def panel_grid(n: int):
    """Up to three panels per row, the unused cells of the last row hidden."""
    from .style import plt

    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.3 * cols, 2.7 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes


def shared_legend(fig, axes, per_row: int) -> None:
    """One legend under the panels, each label once (in order of first appearance)."""
    handles, labels = {}, []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    if labels:  # every panel may be empty (nothing logged yet): then there is no legend to draw
        fig.legend([handles[lab] for lab in labels], labels, loc="lower center", ncol=min(len(labels), per_row),
                   frameon=False, bbox_to_anchor=(0.5, -0.03 - 0.045 * math.ceil(len(labels) / per_row)))
