"""Build one table or figure of a study in-process (no Snakemake): partitions, runs, analysis files, render.

For tests and quick looks; the DAG (`snakemake <target>`) does the same through the rules, in
parallel. Paths are relative to `workdir`, exactly as the rules would write them.

Public API: build(study, name, workdir) for a whole target; ensure_partition, ensure_run and ensure_analysis
for one rule's output each (the leaderboard's in-process checkpoints train their inputs with ensure_run).
What a package adds to a study sets the study up for an in-process build through its
StudyPreparer.in_process (the leaderboard: its checkpoints train what they rest on).
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path

from ..core.kind_registry import FIGURE_KINDS, TABLE_KINDS
from ..core.run_paths import run_of_file
from ..training.data import load_dataset, make_partition
from ..training.fl.engine import train
from .analysis import paths
from .analysis.analysis_commands import main as analysis_main
from .analysis.params import from_config
from .study import STUDY_PREPARERS, figure_inputs, figure_manifest, table_inputs, table_manifest


@contextmanager
def _chdir(path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def ensure_run(study, rid: str, data_root: str) -> None:
    """The `train` rule's outputs for run `rid`, in-process (nothing to do once its summary exists)."""
    spec = study.runs[rid]
    if Path(study.run_dir(rid), "summary.json").exists():
        return
    ppath = ensure_partition(study, spec.partition_id(), data_root)
    train(spec, study.run_dir(rid), str(ppath), data_root, "cpu", False, progress=False, numerics_mode=study.numerics)


def ensure_partition(study, pid: str, data_root: str) -> Path:
    """The `partition` rule's output, in-process."""
    ppath = Path(study.partition_path(pid))
    if not ppath.exists():
        p = study.partitions[pid]
        data = load_dataset(p["dataset"], data_root, False)
        if p["partition"] == "natural":  # clients given by the data (Shakespeare roles), as the partition rule
            from ..training.data.natural import natural_partition

            part = natural_partition(data, p["num_clients"], p["seed"])
        else:
            part = make_partition(data.train_y.numpy(), p["partition"], p["num_clients"], p["seed"], p["variant"],
                                  p["samples_per_client"] or None, data.num_classes, standin="standin_for" in data.meta,
                                  missing_classes=p.get("missing_classes", "error"))
        part.meta["dataset"] = p["dataset"]
        part.save(ppath)
    return ppath


def ensure_analysis(study, path: str, data_root: str) -> None:
    """The per-run analysis rules' outputs (hessian, landscape, stability; pipeline/analysis/analysis_commands.py), in-process."""
    out = Path(path)
    cmds = {paths.HESSIAN: ("hessian", []), paths.STABILITY: ("stability", []),
            **{f: ("hessian", []) for f in paths.HESSIAN_SPLITS},
            **{f: ("landscape", ["--dims", str(d)]) for d, f in paths.LANDSCAPE.items()}}
    at = paths.parse_hessian_at(out.name)  # rule hessian_snapshot: a snapshot round under one protocol
    if (out.name not in cmds and at is None) or out.exists():
        return
    cmd, extra = cmds[out.name] if at is None else ("hessian", [])
    if cmd == "stability":  # the rule's second input: the run's partition
        spec = study.runs[run_of_file(out)]
        extra = ["--partition", str(study.partition_path(spec.partition_id()))]
    p = from_config(study.config, cmd)
    if at is not None:
        p = {**p, "round": at[0], "split": at[1]}
    elif out.name in paths.HESSIAN_SPLITS:  # as the rule: the split from the file's name
        p = {**p, "split": paths.HESSIAN_SPLITS[out.name]}
    params = json.dumps(p)
    if analysis_main([cmd, "--run-dir", str(out.parent), "--out", str(out), "--params", params,
                      "--data-root", data_root, "--numerics", study.numerics, *extra]) != 0:
        raise RuntimeError(f"{cmd} analysis failed for {out.parent}")


def build(study, name: str, workdir, data_root: str = "data", section: str = "tables") -> list[Path]:
    """Train what `name` needs and render it; returns the written files."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    with _chdir(workdir):
        for prep in STUDY_PREPARERS.values():
            if prep.in_process is not None:
                prep.in_process(study, data_root)
        inputs = table_inputs(study, name) if section == "tables" else figure_inputs(study, name)
        run_ids = dict.fromkeys(r for r in map(run_of_file, inputs) if r is not None)
        for rid in run_ids:
            ensure_run(study, rid, data_root)
        by_path = {str(study.partition_path(pid)): pid for pid in study.partitions}
        for f in inputs:
            if str(f) in by_path:  # figures of partitions themselves (partition_heatmap)
                ensure_partition(study, by_path[str(f)], data_root)
        for f in inputs:
            if run_of_file(f) is not None:
                ensure_analysis(study, f, data_root)
        if section == "tables":
            base = Path(study.tables_dir) / name
            TABLE_KINDS.get(study.tables[name]["kind"]).render(table_manifest(study, name), base)
            return [workdir / base.with_suffix(s) for s in (".md", ".csv", ".tex")]
        outs = [f"{study.figures_dir}/{name}.pdf", f"{study.figures_dir}/{name}.png"]
        FIGURE_KINDS.get(study.figures[name]["kind"]).render(figure_manifest(study, name), outs)
        return [workdir / o for o in outs]
