"""Figures: convergence curves with seed bands, partition heat-maps."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ...training.data import Partition
from .collect import load_curves
from .style import apply_style, color_for, marker_for, plt, save_all


def _panel_grid(n: int, width: float = 3.2, height: float = 2.6):
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, sharey=True)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def convergence(entries: list[dict], outs: list[str | Path], metric: str = "test_acc", title: str = "") -> None:
    """Test accuracy vs round, one panel per setting, one line per algorithm, band = min..max over seeds."""
    apply_style()
    df = load_curves(entries)
    df = df[df[metric].notna()]
    group_cols = [c for c in ("dataset", "model", "partition") if df[c].nunique() > 1] or ["partition"]
    panels = list(dict.fromkeys(df[group_cols].astype(str).agg(" / ".join, axis=1)))
    df["panel"] = df[group_cols].astype(str).agg(" / ".join, axis=1)
    fig, axes = _panel_grid(len(panels))
    scale = 100.0 if metric == "test_acc" else 1.0
    for ax, panel in zip(axes, panels):
        sub = df[df["panel"] == panel]
        for algo in dict.fromkeys(sub["algorithm"]):
            a = sub[sub["algorithm"] == algo]
            stats = a.groupby("round")[metric].agg(["mean", "min", "max"]) * scale
            c = color_for(algo)
            n_seeds = a["seed"].nunique()
            ax.plot(stats.index, stats["mean"], color=c, lw=1.4, marker=marker_for(algo),
                    markevery=max(1, len(stats) // 8), ms=3.5, label=f"{algo}")
            if n_seeds > 1:
                ax.fill_between(stats.index, stats["min"], stats["max"], color=c, alpha=0.18, lw=0)
        ax.set_title(panel)
        ax.set_xlabel("communication round")
    axes[0].set_ylabel("test accuracy (%)" if metric == "test_acc" else metric.replace("_", " "))
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 6), frameon=False,
               bbox_to_anchor=(0.5, -0.02 - 0.04 * math.ceil(len(labels) / 6)))
    seeds = sorted(df["seed"].unique().tolist())
    fig.suptitle((title + "\n" if title else "") + f"mean over seeds {seeds}; band: min–max", fontsize=9)
    save_all(fig, outs)


def partition_heatmap(partition_files: list[str | Path], outs: list[str | Path], title: str = "") -> None:
    """Clients x classes sample counts, one panel per partition (log colour scale)."""
    from matplotlib.colors import LogNorm

    apply_style()
    parts = [Partition.load(p) for p in partition_files]
    fig, axes = plt.subplots(1, len(parts), figsize=(3.4 * len(parts), 3.2), squeeze=False)
    vmax = max(int(p.histogram.max()) for p in parts)
    im = None
    for ax, p in zip(axes[0], parts):
        h = p.histogram.T.astype(float)
        h[h == 0] = np.nan
        im = ax.imshow(h, aspect="auto", cmap="viridis", norm=LogNorm(vmin=1, vmax=max(vmax, 2)), interpolation="nearest")
        ax.set_title(f"{p.meta['spec']} (N={p.num_clients}, seed {p.meta['seed']})")
        ax.set_xlabel("client")
        ax.grid(False)
    axes[0][0].set_ylabel("class")
    fig.colorbar(im, ax=axes[0].tolist(), label="samples per client and class (log)")
    if title:
        fig.suptitle(title)
    save_all(fig, outs, layout=False)  # the shared colour bar is placed by fig.colorbar
