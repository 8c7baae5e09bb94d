"""Figure kind `layer_bars`: one bar per layer from per-layer metrics.csv columns (FedSOL Fig. 5b).

Config entry:
    kind: layer_bars
    experiment: f5_lambda
    prefix: "lambda:"                 # columns <prefix><layer> written by a round hook
    series: [{label: "FedSOL ρ=1.0", select: {algorithm: "FedSOL ρ=1.0"}}]   # grouped bars
    ylabel: "mean Λ"
Each bar: the last logged value of the column in each run, mean over the selected runs (seeds),
error bar = min–max over seeds. Layers in the order of the columns (the model's parameter order).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...core.errors import ConfigError
from ...core.kind_registry import FIGURE_KINDS
from ...pipeline.report.panels import suptitle
from ...pipeline.report.select import figure_runs, target_caption
from ...training.fl.metrics import read_metrics
from .kinds_paper import _figure_inputs


def layer_values(run_dirs: list[str], prefix: str) -> dict[str, list[float]]:
    """{layer: [value per run]}: the last non-empty value of every `<prefix><layer>` column."""
    out: dict[str, list[float]] = {}
    for d in run_dirs:
        m = read_metrics(f"{d}/metrics.csv")
        for col in m.columns:
            if col.startswith(prefix):
                v = m[col].dropna()
                if len(v):
                    out.setdefault(col[len(prefix):], []).append(float(v.iloc[-1]))
    return out


@FIGURE_KINDS.register("layer_bars")
class LayerBars:
    @staticmethod
    def check(study, name, spec):
        if not isinstance(spec.get("prefix", ""), str) or not spec.get("prefix"):
            raise ConfigError(f"figures.{name}.prefix: the metrics.csv column prefix, e.g. 'lambda:'")
        figure_runs(study, name, spec, "series")

    @staticmethod
    def inputs(study, name, spec):
        return _figure_inputs(study, name, spec, "series", ("metrics.csv",))

    @staticmethod
    def manifest(study, name, spec):
        return {"title": spec.get("title", ""), "caption": target_caption(spec), "prefix": spec["prefix"],
                "ylabel": spec.get("ylabel", spec["prefix"].rstrip(":")),
                "series": figure_runs(study, name, spec, "series")}

    @staticmethod
    def render(m, outs):
        from ...pipeline.report.style import apply_style, color_for, plt, save_all
        apply_style()
        series = [(s.get("label", f"series {i + 1}"), layer_values([e["dir"] for e in s["entries"]], m["prefix"]))
                  for i, s in enumerate(m["series"])]
        layers = list(dict.fromkeys(k for _, vals in series for k in vals))
        fig, ax = plt.subplots(figsize=(max(3.5, 0.6 * len(layers) + 1.5), 3.0))
        width = 0.8 / max(1, len(series))
        x = np.arange(len(layers))
        for i, (label, vals) in enumerate(series):
            mean = [np.mean(vals[k]) if k in vals else math.nan for k in layers]
            lo = [mean[j] - min(vals[k]) if k in vals else 0.0 for j, k in enumerate(layers)]
            hi = [max(vals[k]) - mean[j] if k in vals else 0.0 for j, k in enumerate(layers)]
            ax.bar(x + (i - (len(series) - 1) / 2) * width, mean, width, yerr=[lo, hi], capsize=2,
                   color=color_for(label), label=label)
        ax.set_xticks(x)
        ax.set_xticklabels(layers or ["(no columns logged)"] * 0, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel(m["ylabel"])
        if len(series) > 1:
            ax.legend(frameon=False)
        fig.suptitle(suptitle(m, "bar: mean over seeds; error bar: min–max"), fontsize=8)
        save_all(fig, outs)
