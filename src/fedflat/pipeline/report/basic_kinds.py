"""The report package's own table and figure kinds: accuracy tables, convergence curves, partition heatmaps.

The registries and the kind protocol are in fedflat.core.kind_registry; the composition root (fedflat.plugins) imports this
module with every other plugin."""
from __future__ import annotations

from ...core.kind_registry import FIGURE_KINDS, TABLE_KINDS, run_entries, run_files
from .tables import render_accuracy_table


@TABLE_KINDS.register("accuracy")
class AccuracyTable:
    @staticmethod
    def cells(study, name, spec):
        for rid, lab in study.experiments[spec["experiment"]]:
            yield lab["algorithm"], study.runs[rid].partition, rid

    @staticmethod
    def inputs(study, name, spec):
        return run_files(study, spec["experiment"])

    @staticmethod
    def manifest(study, name, spec):
        return {"title": spec.get("title", name), "note": spec.get("note", ""),
                "entries": run_entries(study, spec["experiment"])}

    @staticmethod
    def render(m, out_base):
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
        from .plots import convergence

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
        from .plots import partition_heatmap

        partition_heatmap(m["partitions"], outs, m.get("title", ""))

