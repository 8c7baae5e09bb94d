"""Table and figure kinds for the paper catalogs (registered into fedflat.core.kind_registry' registries).

paper_table: rows x column groups x metrics; every cell shows the published value, ours and the
  difference, and the caption states the scale and the seeds. Config entry:
    kind: paper_table
    ref: "Table 2"                      # the paper's number, in every caption
    experiment: t2                      # default experiment of every cell
    metrics: [acc]                      # default metrics of every column group
    rows: [FedAvg, {label: "FedNSAM-S", select: {algorithm: FedNSAM-S}}, {label: FedRCL, not_run: why}]
    (a row or column group with `not_run: <reason>` shows the published values only, with the reason)
    columns:                            # column groups
      - {group: "CIFAR-10 / LeNet-5", select: {dataset: cifar10, model: lenet5}, metrics: [acc, rounds@78]}
    published: {FedAvg: ["79.63±0.27", 574, ...]}   # one value per (group, metric), in order
  A row string selects runs by algorithm label; "{row}" in a column's select value is replaced by
  the row label (e.g. algorithm: "{row} ρ=0.5"), "{name}" by the row's `vars: {name: value}`. `select` keys: experiment, algorithm, preset,
  dataset, model, partition (dir0.6 matches dir0.6-rep). Every cell must select at least one run.
  Metrics: acc (final round), last10_acc, best_acc (max over rounds, FedSAGD's protocol),
  final_loss, rounds@<target %>, wall_per_round, up_mb_per_round, column:<metrics.csv column>,
  file:<run file>:<JSON key> (e.g. file:hessian.json:lambda_max, made by the analysis rules).

paper_curves: panels of per-round curves, one line per algorithm with a min-max band over seeds.
    panels: [{title: "Dir-0.3", select: {...}}], y: test_acc | <metrics.csv column>,
    x: round | up_mb (cumulative uplink) | wall_time

paper_sweep: a final metric against a swept value (λ/ρ sensitivity, participation, ...).
    series: [{label: FedNSAM, points: [{x: 0.95, select: {...}}, ...]}], metric: acc, xlabel: "λ"
    optional: ylabel, reference: {slope: 2.0, label: "2/η"} (the line y = slope·x, e.g. GD's stability edge)
"""
from __future__ import annotations

from ...core.errors import ConfigError, choice_error
from ...core.kind_registry import FIGURE_KINDS, TABLE_KINDS
from ...core.recorded import SUMMARY, file_column
from ...pipeline.report.select import experiment_of, figure_runs, normalise_select, select_runs, target_caption
from .cell_stats import SUMMARY_METRICS, check_metric
from .published import parse_published

# --------------------------------------------------------------------------------------------
# selection


def _fill(value, variables: dict, key: str):
    """Column select values may name the row: "{row} ρ=0.5", or a row's `vars`: "t4_{k}"."""
    if not isinstance(value, str) or "{" not in value:
        return value
    try:
        return value.format(**variables)
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(f"{key}: cannot fill {value!r} from the row's vars {sorted(variables)} ({exc})") from None


def _merge(a: dict, b: dict, key: str) -> dict:
    for k in sorted(set(a) & set(b)):  # sorted: the same key named in every process
        if a[k] != b[k]:
            raise ConfigError(f"{key}: row and column both select {k} ({a[k]!r} vs {b[k]!r})")
    return {**a, **b}


# --------------------------------------------------------------------------------------------
# paper_table


def _rows(study, name: str, spec: dict) -> list[dict]:
    raw = spec.get("rows")
    if raw is None:
        ename = spec.get("experiment")
        if ename is None:
            raise ConfigError(f"tables.{name}.rows: required when the table has no `experiment`")
        raw = list(dict.fromkeys(lab["algorithm"] for _, lab in study.experiments[ename]))
    rows = []
    for i, r in enumerate(raw):
        if isinstance(r, str):
            r = {"label": r, "select": {"algorithm": r}}
        if not isinstance(r, dict) or "label" not in r:
            raise ConfigError(f"tables.{name}.rows[{i}]: a label string or a mapping with 'label'")
        bad = sorted(set(r) - {"label", "select", "experiment", "not_run", "vars"})
        if bad:
            raise ConfigError(f"tables.{name}.rows[{i}]: unknown key {bad[0]!r}; allowed: experiment, label, not_run, select, vars")
        sel = experiment_of(r)
        if not r.get("not_run") and "select" not in r:
            sel = {"algorithm": r["label"], **sel}
        rows.append({"label": str(r["label"]), "select": sel, "not_run": r.get("not_run"),
                     "vars": {"row": str(r["label"]), **{k: str(v) for k, v in (r.get("vars") or {}).items()}}})
    labels = [r["label"] for r in rows]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"tables.{name}.rows: duplicate row label")
    return rows


def _columns(name: str, spec: dict) -> list[dict]:
    default_metrics = spec.get("metrics") or ["acc"]
    raw = spec.get("columns") or [{"group": ""}]
    cols = []
    for i, g in enumerate(raw):
        key = f"tables.{name}.columns[{i}]"
        if not isinstance(g, dict):
            raise ConfigError(f"{key}: must be a mapping with group, select, metrics")
        bad = sorted(set(g) - {"group", "select", "experiment", "metrics", "not_run"})
        if bad:
            raise ConfigError(f"{key}: unknown key {bad[0]!r}; allowed: experiment, group, metrics, not_run, select")
        metrics = g.get("metrics") or default_metrics
        if isinstance(metrics, str):
            metrics = [metrics]
        for m in metrics:
            cols.append({"group": str(g.get("group", "")), "select": experiment_of(g),
                         "metric": check_metric(m, f"{key}.metrics"), "not_run": g.get("not_run")})
    return cols


def _cells(study, name: str, spec: dict) -> tuple[list[dict], list[dict], list[list[list[tuple[str, dict]]]]]:
    info = spec.get("scale_info") or {}
    rows, cols = _rows(study, name, spec), _columns(name, spec)
    default = spec.get("experiment")
    grid = []
    for r in rows:
        line = []
        for j, c in enumerate(cols):
            key = f"tables.{name} cell ({r['label']!r}, column {j + 1} {c['group']!r} {c['metric']})"
            if r["not_run"] or c["not_run"]:
                line.append([])
                continue
            csel = {k: _fill(v, r["vars"], key) for k, v in c["select"].items()}
            sel = _merge(normalise_select(r["select"], key, info), normalise_select(csel, key, info), key)
            if "experiment" not in sel and default is None:
                raise ConfigError(f"{key}: no experiment (set the table's `experiment` or the column's)")
            runs = select_runs(study, sel, default, key)
            if not runs:
                raise ConfigError(f"{key}: selects no run; check the experiment's algorithms/datasets/partitions")
            line.append(runs)
        grid.append(line)
    return rows, cols, grid


def _record_column(metric: str) -> str | None:
    """The committed record's column that keeps a file: metric's value (None: not kept, or not a file metric)."""
    return file_column(*metric.split(":")[1:]) if metric.startswith("file:") else None


def table_cells(study, name: str, spec: dict):
    """(rows, column groups x metrics, runs per cell) of a paper_table: what evidence.cells and trace read."""
    return _cells(study, name, spec)


@TABLE_KINDS.register("paper_table")
class PaperTable:
    @staticmethod
    def cells(study, name, spec):
        rows, cols, grid = _cells(study, name, spec)
        for r, line in zip(rows, grid):
            for c, cell in zip(cols, line):
                column = " / ".join(x for x in (c["group"], c["metric"]) if x)
                for rid, _ in cell:
                    yield r["label"], column, rid

    @staticmethod
    def check(study, name, spec):
        rows, cols, _ = _cells(study, name, spec)
        pub = spec.get("published") or {}
        if not isinstance(pub, dict):
            raise ConfigError(f"tables.{name}.published: a mapping of row label to a list of values")
        labels = {r["label"] for r in rows}
        for label, values in pub.items():
            if label not in labels:
                raise choice_error(f"tables.{name}.published", label, labels)
            if not isinstance(values, list) or len(values) != len(cols):
                got = len(values) if isinstance(values, list) else type(values).__name__
                raise ConfigError(f"tables.{name}.published.{label}: needs {len(cols)} values (one per column), got {got}")
            for v in values:
                parse_published(v, f"tables.{name}.published.{label}")

    @staticmethod
    def inputs(study, name, spec):
        _, _, grid = _cells(study, name, spec)
        rids = dict.fromkeys(rid for line in grid for cell in line for rid, _ in cell)
        cols = _columns(name, spec)
        kept = [_record_column(c["metric"]) for c in cols]
        if all(c["metric"] in SUMMARY_METRICS or k for c, k in zip(cols, kept)):  # a record holds all a cell reads
            needs = tuple(k for k in kept if k)
            todo = set(study.unrecorded(rids, needs))
            out = [f"{study.run_dir(r)}/{SUMMARY}" for r in rids if r in todo]
        else:
            todo = set(rids)
            out = [f"{study.run_dir(r)}/{f}" for r in rids for f in ("summary.json", "metrics.csv")]
        for line in grid:
            for c, cell in zip(cols, line):
                if c["metric"].startswith("file:"):
                    out += [f"{study.run_dir(rid)}/{c['metric'].split(':')[1]}" for rid, _ in cell if rid in todo]
        return list(dict.fromkeys(out))

    @staticmethod
    def manifest(study, name, spec):
        rows, cols, grid = _cells(study, name, spec)
        cells = [[[{"dir": study.run_dir(rid), "seed": lab["seed"], "rounds": study.runs[rid].training["rounds"]}
                   for rid, lab in cell] for cell in line] for line in grid]
        return {"name": name, "title": spec.get("title", name), "ref": spec.get("ref", name),
                "note": spec.get("note", ""), "scale": spec.get("scale_info") or {},
                "rows": [{"label": r["label"], "not_run": r["not_run"]} for r in rows],
                "columns": [{"group": c["group"], "metric": c["metric"], "not_run": c["not_run"]} for c in cols],
                "cells": cells, "published": spec.get("published") or {}}

    @staticmethod
    def render(m, out_base):
        from .render import render_paper_table

        render_paper_table(m, out_base)


# --------------------------------------------------------------------------------------------
# figures


def _figure_inputs(study, name, spec, items_key, files):
    groups = figure_runs(study, name, spec, items_key)
    dirs = dict.fromkeys(e["dir"] for g in groups for e in g["entries"])
    return [f"{d}/{f}" for d in dirs for f in files]


@FIGURE_KINDS.register("paper_curves")
class PaperCurves:
    @staticmethod
    def check(study, name, spec):
        if spec.get("x", "round") not in ("round", "up_mb", "wall_time"):
            raise choice_error(f"figures.{name}.x", spec.get("x"), ("round", "up_mb", "wall_time"))
        figure_runs(study, name, spec, "panels")

    @staticmethod
    def inputs(study, name, spec):
        return _figure_inputs(study, name, spec, "panels", ("metrics.csv",))

    @staticmethod
    def manifest(study, name, spec):
        return {"title": spec.get("title", ""), "caption": target_caption(spec), "y": spec.get("y", "test_acc"),
                "x": spec.get("x", "round"), "panels": figure_runs(study, name, spec, "panels"),
                "line_by": spec.get("line_by", "algorithm")}

    @staticmethod
    def render(m, outs):
        from .render import render_curves

        render_curves(m, outs)


@FIGURE_KINDS.register("paper_sweep")
class PaperSweep:
    @staticmethod
    def check(study, name, spec):
        check_metric(spec.get("metric", "acc"), f"figures.{name}.metric")
        series = spec.get("series")
        if not isinstance(series, list) or not series:
            raise ConfigError(f"figures.{name}.series: a non-empty list of {{label, points}}")
        for i, s in enumerate(series):
            if not isinstance(s, dict) or "label" not in s:
                raise ConfigError(f"figures.{name}.series[{i}]: needs 'label' and 'points'")
            figure_runs(study, name, {**spec, "points": s.get("points")}, "points")
        for axis in ("xscale", "yscale"):
            if spec.get(axis, "linear") not in ("linear", "log"):
                raise choice_error(f"figures.{name}.{axis}", spec[axis], ["linear", "log"])
        ref = spec.get("reference")
        if ref is not None and not (isinstance(ref, dict) and set(ref) <= {"slope", "label"}
                                    and isinstance(ref.get("slope"), (int, float)) and ref["slope"] > 0):
            raise ConfigError(f"figures.{name}.reference: a mapping {{slope: <positive number>, label: <text>}}")

    @staticmethod
    def inputs(study, name, spec):
        metric = spec.get("metric", "acc")
        files = ("summary.json", "metrics.csv") + ((metric.split(":")[1],) if metric.startswith("file:") else ())
        out = []
        for s in spec["series"]:
            out += _figure_inputs(study, name, {**spec, "points": s["points"]}, "points", files)
        return list(dict.fromkeys(out))

    @staticmethod
    def manifest(study, name, spec):
        series = [{"label": s["label"], "points": figure_runs(study, name, {**spec, "points": s["points"]}, "points")}
                  for s in spec["series"]]
        return {"title": spec.get("title", ""), "caption": target_caption(spec), "metric": spec.get("metric", "acc"),
                "xlabel": spec.get("xlabel", ""), "xscale": spec.get("xscale", "linear"), "series": series,
                "ylabel": spec.get("ylabel", ""), "yscale": spec.get("yscale", "linear"),
                "reference": spec.get("reference")}

    @staticmethod
    def render(m, outs):
        from .render import render_sweep

        render_sweep(m, outs)

