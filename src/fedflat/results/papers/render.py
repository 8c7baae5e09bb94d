"""Render paper tables (Markdown, CSV, LaTeX) and paper figures from a manifest."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core.util.io import write_text
from ...core.util.markdown import md_table
from ...pipeline.report.collect import load_curves
from ...pipeline.report.panels import panel_grid, shared_legend, suptitle
from ...pipeline.report.style import apply_style, color_for, marker_for, plt, save_all
from .cell_stats import (CellValue, SUMMARY_METRICS, column_metric, file_metric, metric_header, per_round_metric,
                         rounds_metric, summary_metric)
from .published import fmt, parse_published


def cell_value(metric: str, cell: list[dict]) -> CellValue:
    if not cell:
        return CellValue()
    dirs = [c["dir"] for c in cell]
    if metric in SUMMARY_METRICS:
        return summary_metric(dirs, metric)
    if metric in ("wall_per_round", "up_mb_per_round"):
        return per_round_metric(dirs, metric)
    if metric.startswith("rounds@"):
        return rounds_metric(dirs, float(metric[7:]), max(c["rounds"] for c in cell))
    if metric.startswith("file:"):
        _, fname, key = metric.split(":")
        return file_metric(dirs, fname, key)
    return column_metric(dirs, metric.split(":", 1)[1])


def _delta(metric: str, ours: CellValue, pub) -> float | None:
    if ours.mean is None or pub.mean is None or pub.never or ours.never:
        return None
    return ours.mean - pub.mean


def build_frames(m: dict) -> tuple[pd.DataFrame, pd.DataFrame, list[int]]:
    """(wide display frame, tidy long frame, seeds used)."""
    cols = m["columns"]
    headers = [(f"{c['group']} {_hdr(c['metric'])}".strip()) for c in cols]
    wide, long, seeds = {}, [], set()
    for i, row in enumerate(m["rows"]):
        pub_list = m["published"].get(row["label"]) or [None] * len(cols)
        line = {}
        for j, c in enumerate(cols):
            cell = m["cells"][i][j]
            seeds |= {e["seed"] for e in cell}
            rounds = c["metric"].startswith("rounds@")
            ours = cell_value(c["metric"], cell)
            pub = parse_published(pub_list[j])
            d = _delta(c["metric"], ours, pub)
            why = row["not_run"] or c.get("not_run")
            ours_txt = f"not run: {why}" if why else ours.text(digits=0 if rounds else 2, rounds=rounds)
            digits = 0 if rounds else 2
            line[(headers[j], "paper")] = pub.text
            line[(headers[j], "ours")] = ours_txt
            line[(headers[j], "Δ")] = "" if d is None else f"{d:+.{digits}f}"
            long.append({"row": row["label"], "group": c["group"], "metric": c["metric"],
                         "published": pub.text, "published_mean": pub.mean, "published_std": pub.std,
                         "published_never": pub.never, "ours": ours_txt, "ours_mean": ours.mean, "ours_std": ours.std,
                         "ours_never": ours.never, "n_seeds": ours.n, "seeds_selected": ours.seeds,
                         "diverged": ours.diverged, "delta": d,
                         "per_seed": ";".join("" if v is None else f"{v:g}" for v in ours.per_seed),
                         "scale": m["scale"].get("name", "paper")})
        wide[row["label"]] = line
    frame = pd.DataFrame.from_dict(wide, orient="index")
    frame.columns = pd.MultiIndex.from_tuples(frame.columns)
    frame.index.name = "Method"
    return frame, pd.DataFrame(long), sorted(seeds)


def _hdr(metric: str) -> str:
    return metric_header(metric)


def reference(m: dict) -> str:
    """What a table reproduces: the paper's name (none for a study of our own) and the table's ref."""
    return " ".join(t for t in (m["scale"].get("paper", ""), m["ref"]) if t)


def caption(m: dict, seeds: list[int]) -> str:
    sc = m["scale"]
    scale = sc.get("name", "paper")
    what = reference(m)
    ours = "ours = mean±std over seeds (final-round test accuracy, %, unless the column says otherwise)"
    scale_text = (f" Scale: {scale}" + (f" ({sc['note']})" if sc.get("note") else "") + ".") if sc else ""
    text = (("Reproduction of " if has_published(m) else "") + f"{what}.{scale_text} Seeds: {seeds}. "
            + (f"paper = published value; {ours}; Δ = ours − paper." if has_published(m) else f"{ours}.")
            + " R(x%) = first evaluated round at which the seed-mean test accuracy reaches x%; T+ = not reached "
            "within T rounds.")
    if sc and scale != "paper":
        text += " Not comparable to the paper at this scale: it checks the pipeline, not the claim."
    if m.get("note"):
        text += " " + m["note"]
    return text


def has_published(m: dict) -> bool:
    return any(v for v in (m.get("published") or {}).values())


def _markdown(frame: pd.DataFrame) -> str:
    flat = frame.copy()
    flat.columns = [f"{g} · {k}" if g else k for g, k in frame.columns]
    return md_table(flat)


def render_paper_table(m: dict, out_base) -> pd.DataFrame:
    out_base = Path(out_base)
    frame, long, seeds = build_frames(m)
    cap = caption(m, seeds)
    if not has_published(m):  # a study of our own: no paper or Δ column to show
        frame = frame.loc[:, [c for c in frame.columns if c[1] == "ours"]]
    md = f"# {reference(m)}: {m['title']}\n\n{_markdown(frame)}\n\n{cap}\n"
    write_text(out_base.with_suffix(".md"), md)
    write_text(out_base.with_suffix(".csv"), long.to_csv(index=False))
    tex = frame.to_latex(escape=True, caption=cap, label=f"tab:{m['scale'].get('paper', '')}-{m['name']}",
                         multicolumn=True, multicolumn_format="c")
    write_text(out_base.with_suffix(".tex"), tex.replace("±", r"$\pm$").replace("Δ", r"$\Delta$")
               .replace(r"λ\_max", r"$\lambda_{\max}$"))
    return long


# --------------------------------------------------------------------------------------------
# figures


def render_curves(m: dict, outs) -> None:
    apply_style()
    panels = m["panels"]
    n = len(panels)
    fig, axes = panel_grid(n)
    y, x, by = m["y"], m["x"], m.get("line_by", "algorithm")
    scale = 100.0 if y == "test_acc" else 1.0
    seeds = set()
    for ax, panel in zip(axes.flat, panels):
        df = load_curves([{**e, "run": e["dir"]} for e in panel["entries"]])
        if y not in df:
            ax.set_title(f"{panel.get('title', '')}\n(no '{y}' logged)")
            continue
        if x == "up_mb":
            df = df.sort_values(["run", "round"])
            df["up_mb"] = df.groupby("run")["up_bytes"].cumsum() / 1e6
        df = df[df[y].notna()]
        seeds |= set(df["seed"].unique().tolist())
        for line in dict.fromkeys(df[by]):
            a = df[df[by] == line]
            st = a.groupby("round").agg(x=(x, "mean"), mean=(y, "mean"), lo=(y, "min"), hi=(y, "max"))
            c = color_for(str(line))
            ax.plot(st["x"], st["mean"] * scale, color=c, lw=1.3, marker=marker_for(str(line)),
                    markevery=max(1, len(st) // 8), ms=3.2, label=str(line))
            if a["seed"].nunique() > 1:
                ax.fill_between(st["x"], st["lo"] * scale, st["hi"] * scale, color=c, alpha=0.18, lw=0)
        ax.set_title(panel.get("title", ""))
        ax.set_xlabel({"round": "communication round", "up_mb": "cumulative uplink (MB)",
                       "wall_time": "wall-clock (s)"}[x])
        ax.set_ylabel("test accuracy (%)" if y == "test_acc" else y.replace("_", " "))
    shared_legend(fig, axes.flat[:n], 5)
    fig.suptitle(suptitle(m, f"mean over seeds {sorted(seeds)}; band: min–max"), fontsize=8)
    save_all(fig, outs)


def render_sweep(m: dict, outs) -> None:
    apply_style()
    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    metric = m["metric"]
    rows = []
    for s in m["series"]:
        xs, means, stds = [], [], []
        for p in s["points"]:
            v = cell_value(metric, [{"dir": e["dir"], "seed": e["seed"], "rounds": 0} for e in p["entries"]])
            xs.append(p["x"])
            means.append(np.nan if v.mean is None else v.mean)
            stds.append(0.0 if v.std is None else v.std)
            rows.append((s["label"], p["x"], v.mean, v.std, v.n))
        c = color_for(s["label"])
        ax.errorbar(xs, means, yerr=stds, color=c, marker=marker_for(s["label"]), ms=4, lw=1.3, capsize=2,
                    label=s["label"])
    ref = m.get("reference")
    if ref:  # a line y = slope·x across the plotted x range (e.g. 2/η, gradient descent's stability edge)
        xs = sorted(p["x"] for s in m["series"] for p in s["points"])
        grid = np.geomspace(xs[0], xs[-1], 50) if m.get("xscale") == "log" and xs[0] > 0 else np.linspace(xs[0], xs[-1], 50)
        ax.plot(grid, ref["slope"] * grid, color="0.4", ls="--", lw=1.0, label=ref.get("label", f"{ref['slope']:g}·x"))
    ax.set_xscale(m.get("xscale", "linear"))
    ax.set_yscale(m.get("yscale", "linear"))
    ax.set_xlabel(m.get("xlabel", ""))
    ax.set_ylabel(m.get("ylabel") or metric_header(metric) + (" (%)" if metric.endswith("acc") else ""))
    ax.legend(frameon=False)
    fig.suptitle(suptitle(m, "mean ± std over seeds"), fontsize=8)
    save_all(fig, outs)
