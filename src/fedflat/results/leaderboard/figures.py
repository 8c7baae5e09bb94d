"""The leaderboard's figures: one panel per partition, one colour and marker per method (report/style.py)."""
from __future__ import annotations

import numpy as np

from ...pipeline.report.style import apply_style, color_for, marker_for, save_all
from ...core.util.curves import REACH
from .flatness import MEASURES, common_lr, correlation, correlation_text, flatness_correlations
from .results import load_runs, partition_title, per_method, unstable_methods
from .stats import kendall, pareto_front


def _agg(m: dict, hessian: bool = False):
    return per_method(load_runs(m["entries"], hessian=hessian), m["partitions"], unstable_methods(m),
                      m["protocol"].get("statistics"))


def _legend(fig, methods: list[str], rows_below: bool = True) -> None:
    import matplotlib.lines as mlines

    handles = [mlines.Line2D([], [], color=color_for(x), marker=marker_for(x), ls="", ms=5, label=x) for x in methods]
    ncol = min(len(methods), 6)
    fig.legend(handles=handles, loc="upper center", ncol=ncol, frameon=False, fontsize=7,
               bbox_to_anchor=(0.5, 0.0))


def _cost_axis(ax, values, unit: str = "") -> None:
    """Log scale where the values span more than a decade (ticks at 1, 2, 5 x 10^k), engineering prefixes for
    counts and bytes (8 kB, 2 M), plain numbers for small curvatures."""
    from matplotlib.ticker import EngFormatter, FuncFormatter, LogLocator, MaxNLocator, NullLocator

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size and v.max() / v.min() > 10:
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_minor_locator(NullLocator())
    else:
        ax.xaxis.set_major_locator(MaxNLocator(4))
    if unit or (v.size and v.max() >= 1e4):
        ax.xaxis.set_major_formatter(EngFormatter(unit=unit, places=None))
    else:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))


def spread(y, gap: float, lo: float, hi: float) -> np.ndarray:
    """Label positions for values `y`: the same order, at least `gap` apart, within [lo, hi] where the room
    allows, each as near its value as a forward then a backward pass leaves it."""
    y = np.asarray(y, dtype=float)
    order = np.argsort(y, kind="stable")
    v = y[order].copy()
    for i in range(len(v)):
        v[i] = max(v[i], lo if i == 0 else v[i - 1] + gap)
    for i in reversed(range(len(v))):
        v[i] = min(v[i], hi if i == len(v) - 1 else v[i + 1] - gap)
    out = np.empty_like(v)
    out[order] = v
    return out


def _dot(ax, x, y, label: str, hollow: bool = False) -> None:
    marker, c = marker_for(label), color_for(label)
    ax.scatter(x, y, marker=marker, s=70 if marker in "*pPhX" else 34, zorder=3,
               **({"facecolor": "none", "edgecolor": c, "linewidth": 1.0} if hollow
                  else {"color": c, "edgecolor": "white", "linewidth": 0.4}))


def pareto(m: dict, outs, cost: str, xlabel: str, unit: str = "") -> None:
    """Final accuracy vs the cost to reach it, per method (means over the completed seeds); the Pareto frontier
    joined."""
    import matplotlib.pyplot as plt

    apply_style()
    agg = _agg(m)
    parts = m["partitions"]
    fig, axes = plt.subplots(1, len(parts), figsize=(3.6 * len(parts), 3.4), squeeze=False)
    for ax, p in zip(axes[0], parts):
        d = agg[agg["partition"] == p].reset_index(drop=True)
        for _, r in d.iterrows():
            _dot(ax, r[cost], r["final_acc"], r["method"])
        front = pareto_front(d[cost].tolist(), d["final_acc"].tolist())
        if front:
            f = d.loc[front]
            ax.step(f[cost], f["final_acc"], where="post", color="black", lw=0.9, ls="--", zorder=2)
            lo, hi = d["final_acc"].min(), d["final_acc"].max()
            ys = spread(f["final_acc"].to_numpy(), 0.05 * (hi - lo or 1.0), -np.inf, np.inf)  # frontier names apart
            for (_, r), y in zip(f.iterrows(), ys):
                ax.annotate(r["method"], (r[cost], y), fontsize=6, xytext=(3, -8), textcoords="offset points")
        _cost_axis(ax, d[cost], unit)
        ax.set_title(partition_title(p))
        ax.set_xlabel(xlabel)
    axes[0][0].set_ylabel("final test accuracy (%)")
    _legend(fig, sorted(agg["method"].unique()))
    fig.suptitle(f"{m['title']}: final accuracy vs the cost to first reach {100 * REACH:g} % of it; dashed: Pareto frontier "
                 f"(means over the completed seeds of {m['protocol']['seeds']})", fontsize=9)
    save_all(fig, outs)


def _corr_text(x, y, stat, name: str) -> str:
    return correlation_text(correlation(x, y, stat), name, n=False)


def flatness_vs_accuracy(m: dict, outs) -> None:
    """λ_max and the flatness distance against test accuracy across methods, per partition, with the Spearman
    rank correlation and its 95 % bootstrap interval (resampling methods)."""
    import matplotlib.pyplot as plt

    apply_style()
    agg = _agg(m, hessian=True)
    parts = m["partitions"]
    corr = flatness_correlations(agg, m["chosen"], parts)
    fig, axes = plt.subplots(len(parts), 2, figsize=(9.0, 3.3 * len(parts)), squeeze=False)
    for i, p in enumerate(parts):
        d = agg[(agg["partition"] == p)]
        _, same = common_lr(d["method"], m["chosen"].get(p, {}))
        for j, (col, label) in enumerate(MEASURES.items()):
            ax = axes[i][j]
            for (_, r), s in zip(d.iterrows(), same):
                _dot(ax, r[col], r["final_acc"], r["method"], hollow=not s)
            _cost_axis(ax, d[col])
            c = corr[(corr["partition"] == p) & (corr["measure"] == col)]
            lines = [("" if r["subset"] == "all" else f"{r['subset']} only: ") + correlation_text(r)
                     for r in c.to_dict("records")]
            ax.set_title(f"{partition_title(p)}: " + "\n".join(lines), fontsize=7)
            ax.set_xlabel(label)
            ax.set_ylabel("final test accuracy (%)")
    _legend(fig, sorted(agg["method"].unique()))
    fig.suptitle("Does a flatter global model generalise better? One point per method (means over the completed seeds); λ_max: top "
                 "eigenvalue of the training-loss Hessian;\nflatness distance: FedNSAM Def. 1; [95 % bootstrap interval "
                 "over methods]; hollow: a method whose chosen lr is not the most common one", fontsize=8)
    save_all(fig, outs)


def rank_stability(m: dict, outs) -> None:
    """Each method's rank per partition (bump chart), Kendall τ between the first and the last partition."""
    import matplotlib.pyplot as plt

    apply_style()
    agg = _agg(m)
    parts = m["partitions"]
    wide = agg.pivot(index="method", columns="partition", values="rank")[parts]
    n = len(wide)
    fig, ax = plt.subplots(figsize=(2.2 + 1.6 * len(parts), max(3.0, 0.17 * n + 1.2)))
    x = np.arange(len(parts))
    for meth, r in wide.iterrows():
        c = color_for(meth)
        ax.plot(x, r.to_numpy(), color=c, marker=marker_for(meth), ms=4, lw=1.1, alpha=0.9)
    # the names stay one rank apart (ranks are distinct; spread keeps it so), the points where they are
    for col, dx, ha in ((0, -0.08, "right"), (len(parts) - 1, 0.08, "left")):
        ys = wide.iloc[:, col].to_numpy(dtype=float)
        ok = np.isfinite(ys)
        for meth, y in zip(wide.index[ok], spread(ys[ok], 1.0, 0.5, n + 0.5)):
            ax.text(x[col] + dx, y, meth, ha=ha, va="center", fontsize=6, color=color_for(meth))
    ax.set_xticks(x, [partition_title(p) for p in parts])
    ax.set_xlim(-0.9, len(parts) - 0.1)
    ax.set_ylim(n + 0.5, 0.5)
    ax.set_yticks(range(1, n + 1, max(1, n // 12)))
    ax.set_ylabel("rank (1 = highest mean final test accuracy, completed seeds)")
    ax.grid(axis="x", alpha=0)
    tau = _corr_text(wide[parts[0]].to_numpy(), wide[parts[-1]].to_numpy(), kendall, "Kendall τ")
    ax.set_title(f"Rank stability, {partition_title(parts[0])} → {partition_title(parts[-1])}: {tau}\n"
                 f"[95 % bootstrap interval over methods]", fontsize=9)
    save_all(fig, outs)
