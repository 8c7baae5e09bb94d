"""Figure kinds of FedSAGD's empirical stability (App. A.4, Figs. 1-2), registered into FIGURE_KINDS:

  stability_curve     Fig. 2: global model discrepancy ‖x_t − x'_t‖₂ vs round t, read from each
                      run's stability.json (`per_round`, written by `python -m fedflat.analysis
                      stability`: the run retrained in lockstep on a neighbouring dataset)
  local_discrepancy_curve  Fig. 1: local model discrepancy max_{i≠j} ‖x^i_{t,k} − x^j_{t,k}‖₂ vs local
                      step k, read from the `local_disc_k*` columns of metrics.csv (the
                      `local_discrepancy` round hook); averaged over the measured rounds, or one
                      round with `round: <t>`

Config entry (like paper_curves):
    kind: stability_curve | local_discrepancy_curve
    experiment: t2_cifar                       # default experiment of every panel
    panels: [{title: "CIFAR-10", select: {dataset: cifar10-half}}, {title: EMNIST, experiment: t2_emnist}]
    algorithms: [FedAvg, FedProx, ...]         # optional: the curves to draw (labels or presets), in this order
    yscale: linear | log                       # optional
    round: mean | <t>                          # local_discrepancy only (default mean)
One line per algorithm: mean over seeds, band min–max over seeds.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ...core.errors import ConfigError, choice_error
from ...core.kind_registry import FIGURE_KINDS
from ...training.fl.metrics import read_metrics
from ..report.panels import panel_grid, shared_legend, suptitle
from ..report.select import figure_runs, target_caption
from . import paths

LOCAL_PREFIX = "local_disc_k"


def _panels(study, name: str, spec: dict) -> list[dict]:
    panels = figure_runs(study, name, spec, "panels")
    want = spec.get("algorithms")
    if want is not None:
        if not isinstance(want, list) or not want:
            raise ConfigError(f"figures.{name}.algorithms: a non-empty list of algorithm labels or presets")
        order = {str(a): i for i, a in enumerate(want)}
        for i, p in enumerate(panels):
            kept = [e for e in p["entries"] if e["algorithm"] in order or e["preset"] in order]
            if not kept:
                raise ConfigError(f"figures.{name}.panels[{i}]: none of the algorithms {want} is in its runs")
            p["entries"] = sorted(kept, key=lambda e: order.get(e["algorithm"], order.get(e["preset"], 0)))
    return panels


def _check_common(name: str, spec: dict) -> None:
    if spec.get("yscale", "linear") not in ("linear", "log"):
        raise choice_error(f"figures.{name}.yscale", spec.get("yscale"), ("linear", "log"))


def _manifest(study, name, spec, extra: dict) -> dict:
    return {"title": spec.get("title", ""), "caption": target_caption(spec), "yscale": spec.get("yscale", "linear"),
            "panels": _panels(study, name, spec), **extra}


def stability_frame(entries: list[dict]) -> pd.DataFrame:
    """Tidy (algorithm, seed, x=round, y=‖x_t − x'_t‖) rows from the runs' stability.json."""
    rows = []
    for e in entries:
        d = json.loads((Path(e["dir"]) / paths.STABILITY).read_text())
        for t, v in enumerate([0.0] + list(d["per_round"])):  # x_0 = x'_0: the same initialisation
            rows.append({"algorithm": e["algorithm"], "seed": e["seed"], "x": t, "y": v})
    return pd.DataFrame(rows, columns=["algorithm", "seed", "x", "y"])


def local_frame(entries: list[dict], round_sel="mean") -> pd.DataFrame:
    """Tidy (algorithm, seed, x=k, y=D_k) rows: D_k averaged over the measured rounds (or one round)."""
    rows = []
    for e in entries:
        m = read_metrics(Path(e["dir"]) / "metrics.csv")
        cols = sorted((c for c in m.columns if c.startswith(LOCAL_PREFIX)), key=lambda c: int(c[len(LOCAL_PREFIX):]))
        if not cols:
            continue
        m = m[m[cols[0]].notna()]
        if round_sel != "mean":
            m = m[m["round"] == int(round_sel)]
        if m.empty:
            continue
        means = m[cols].mean(axis=0)
        rows.append({"algorithm": e["algorithm"], "seed": e["seed"], "x": 0, "y": 0.0})  # common start point
        for c in cols:
            rows.append({"algorithm": e["algorithm"], "seed": e["seed"], "x": int(c[len(LOCAL_PREFIX):]),
                         "y": float(means[c])})
    return pd.DataFrame(rows, columns=["algorithm", "seed", "x", "y"])


NEIGHBOUR_TEXT = {"sample": "one sample replaced in every client", "client": "one client replaced"}


def neighbour_note(entries: list[dict]) -> str:
    """How the neighbouring datasets were made, from the runs' stability.json parameters."""
    modes = set()
    for e in entries:
        p = json.loads((Path(e["dir"]) / paths.STABILITY).read_text()).get("params") or {}
        same = " (same labels)" if p.get("same_label") else ""
        modes.add(NEIGHBOUR_TEXT.get(p.get("neighbour", "sample"), str(p.get("neighbour"))) + same)
    return "; ".join(sorted(modes))


def _render(m: dict, outs, frame_of, xlabel: str, ylabel: str, note: str) -> None:
    from matplotlib.ticker import MaxNLocator

    from ..report.style import apply_style, color_for, marker_for, save_all

    apply_style()
    panels = m["panels"]
    n = len(panels)
    fig, axes = panel_grid(n)
    seeds = set()
    for ax, panel in zip(axes.flat, panels):
        df = frame_of(panel["entries"])
        ax.set_title(panel.get("title", ""))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if df.empty:
            ax.text(0.5, 0.5, "nothing measured", ha="center", va="center", transform=ax.transAxes)
            continue
        seeds |= set(df["seed"].unique().tolist())
        for line in dict.fromkeys(df["algorithm"]):
            a = df[df["algorithm"] == line]
            st = a.groupby("x")["y"].agg(["mean", "min", "max"])
            c = color_for(str(line))
            ax.plot(st.index, st["mean"], color=c, lw=1.3, marker=marker_for(str(line)),
                    markevery=max(1, len(st) // 8), ms=3.2, label=str(line))
            if a["seed"].nunique() > 1:
                ax.fill_between(st.index, st["min"], st["max"], color=c, alpha=0.18, lw=0)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if m.get("yscale") == "log" and (df["y"] > 0).any():
            ax.set_yscale("log")
    shared_legend(fig, axes.flat[:n], 4)
    fig.suptitle(suptitle(m, f"{note}; mean over seeds {sorted(seeds)}; band: min–max"), fontsize=8)
    save_all(fig, outs)


@FIGURE_KINDS.register("stability_curve")
class StabilityCurve:
    @staticmethod
    def check(study, name, spec):
        _check_common(name, spec)
        _panels(study, name, spec)

    @staticmethod
    def inputs(study, name, spec):
        return list(dict.fromkeys(f"{e['dir']}/{paths.STABILITY}" for p in _panels(study, name, spec)
                                  for e in p["entries"]))

    @staticmethod
    def manifest(study, name, spec):
        return _manifest(study, name, spec, {})

    @staticmethod
    def render(m, outs):
        how = neighbour_note([e for p in m["panels"] for e in p["entries"]])
        _render(m, outs, stability_frame, "communication round t", "‖x_t − x'_t‖₂",
                f"global model discrepancy on neighbouring datasets ({how})")


@FIGURE_KINDS.register("local_discrepancy_curve")
class LocalDiscrepancyCurve:
    @staticmethod
    def check(study, name, spec):
        _check_common(name, spec)
        r = spec.get("round", "mean")
        if r != "mean" and (isinstance(r, bool) or not isinstance(r, int) or r < 1):
            raise ConfigError(f"figures.{name}.round: 'mean' or a round number >= 1, got {r!r}")
        _panels(study, name, spec)

    @staticmethod
    def inputs(study, name, spec):
        return list(dict.fromkeys(f"{e['dir']}/metrics.csv" for p in _panels(study, name, spec)
                                  for e in p["entries"]))

    @staticmethod
    def manifest(study, name, spec):
        return _manifest(study, name, spec, {"round": spec.get("round", "mean")})

    @staticmethod
    def render(m, outs):
        r = m.get("round", "mean")
        _render(m, outs, lambda entries: local_frame(entries, r), "local step k",
                "max pairwise ‖x^i_k − x^j_k‖₂",
                "local model discrepancy from a common start point, " +
                ("mean over the measured rounds" if r == "mean" else f"round {r}"))
