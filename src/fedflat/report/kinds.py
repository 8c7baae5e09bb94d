"""Registries of table and figure kinds, so new kinds plug in without editing the study code.

A kind declares
  inputs(study, name, spec) -> list of files the output depends on (Snakemake inputs)
  manifest(study, name, spec) -> JSON-able dict handed to render
  render(manifest, outs) -> writes every path in outs (tables: base path without suffix)
and optionally check(study, name, spec) to validate its config entry (raise ConfigError).
Register with @FIGURE_KINDS.register("name") on a class with these as staticmethods.
"""
from __future__ import annotations

from ..registry import Registry

FIGURE_KINDS: Registry[type] = Registry("figure kind")
TABLE_KINDS: Registry[type] = Registry("table kind")


def run_entries(study, ename: str) -> list[dict]:
    """One dict per run of an experiment: its labels and output directory."""
    return [{**labels, "dir": study.run_dir(rid)} for rid, labels in study.experiments[ename]]


def run_files(study, ename: str, files=("summary.json", "metrics.csv")) -> list[str]:
    return [f"{study.run_dir(rid)}/{f}" for rid, _ in study.experiments[ename] for f in files]


@TABLE_KINDS.register("accuracy")
class AccuracyTable:
    @staticmethod
    def inputs(study, name, spec):
        return run_files(study, spec["experiment"])

    @staticmethod
    def manifest(study, name, spec):
        return {"title": spec.get("title", name), "note": spec.get("note", ""),
                "entries": run_entries(study, spec["experiment"])}

    @staticmethod
    def render(m, out_base):
        from .tables import render_accuracy_table

        render_accuracy_table(m["entries"], out_base, m.get("title", ""), m.get("note", ""))


@FIGURE_KINDS.register("convergence")
class ConvergenceFigure:
    @staticmethod
    def inputs(study, name, spec):
        return run_files(study, spec["experiment"], ("metrics.csv",))

    @staticmethod
    def manifest(study, name, spec):
        return {"title": spec.get("title", ""), "metric": spec.get("metric", "test_acc"),
                "entries": run_entries(study, spec["experiment"])}

    @staticmethod
    def render(m, outs):
        from .figures import convergence

        convergence(m["entries"], outs, m.get("metric", "test_acc"), m.get("title", ""))


@FIGURE_KINDS.register("partition_heatmap")
class PartitionHeatmap:
    @staticmethod
    def inputs(study, name, spec):
        entries = study.experiments[spec["experiment"]]
        seed = spec.get("seed", min(l["seed"] for _, l in entries))
        pids = list(dict.fromkeys(study.runs[r].partition_id() for r, l in entries if l["seed"] == seed))
        return [study.partition_path(p) for p in pids]

    @staticmethod
    def manifest(study, name, spec):
        return {"title": spec.get("title", ""), "partitions": PartitionHeatmap.inputs(study, name, spec)}

    @staticmethod
    def render(m, outs):
        from .figures import partition_heatmap

        partition_heatmap(m["partitions"], outs, m.get("title", ""))


from ..papers import kinds as _paper_kinds  # noqa: E402,F401  (paper_table, paper_curves, paper_sweep)

from ..analysis import figures as _analysis_figures  # noqa: E402,F401  (landscape, hessian kinds)
from ..analysis import overlay as _overlay  # noqa: E402,F401  (landscape_overlay: FedSynSAM Fig. 1)
from ..analysis import stability_figures as _stability_figures  # noqa: E402,F401  (stability_curve, local_discrepancy_curve)
from ..papers import kinds_bars as _kinds_bars  # noqa: E402,F401  (layer_bars: FedSOL Fig. 5b)
from ..papers import toy_fedsol as _toy_fedsol  # noqa: E402,F401  (fedsol_toy: FedSOL Fig. 12)
from ..papers import kinds_tuning as _kinds_tuning  # noqa: E402,F401  (grid_search: validation-split tuning)
from ..leaderboard import kinds as _leaderboard_kinds  # noqa: E402,F401  (leaderboard table, Pareto, flatness, rank figures)
