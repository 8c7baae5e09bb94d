"""Build one table or figure of a catalog in-process (no Snakemake): partitions, runs, render.

For tests and quick looks; the DAG (`snakemake <target>`) does the same through the rules, in
parallel. Paths are relative to `workdir`, exactly as the rules would write them.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def _chdir(path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def _ensure_run(study, rid: str, data_root: str) -> None:
    from ..data import load_dataset, make_partition
    from ..fl.engine import train

    spec = study.runs[rid]
    if Path(study.run_dir(rid), "summary.json").exists():
        return
    pid = spec.partition_id()
    ppath = Path(study.partition_path(pid))
    if not ppath.exists():
        p = study.partitions[pid]
        data = load_dataset(p["dataset"], data_root, False)
        part = make_partition(data.train_y.numpy(), p["partition"], p["num_clients"], p["seed"], p["variant"],
                              p["samples_per_client"] or None, data.num_classes)
        part.meta["dataset"] = p["dataset"]
        part.save(ppath)
    train(spec, study.run_dir(rid), str(ppath), data_root, "cpu", False, progress=False)


def build(study, name: str, workdir, data_root: str = "data", section: str = "tables") -> list[Path]:
    """Train what `name` needs and render it; returns the written files."""
    from ..study import figure_inputs, figure_manifest, table_inputs, table_manifest
    from ..report.kinds import FIGURE_KINDS, TABLE_KINDS

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    with _chdir(workdir):
        inputs = table_inputs(study, name) if section == "tables" else figure_inputs(study, name)
        run_ids = dict.fromkeys(str(Path(f).parent)[len("results/runs/"):] for f in inputs
                                if f.startswith("results/runs/"))
        for rid in run_ids:
            _ensure_run(study, rid, data_root)
        if section == "tables":
            base = Path(study.tables_dir) / name
            TABLE_KINDS.get(study.tables[name]["kind"]).render(table_manifest(study, name), base)
            return [workdir / base.with_suffix(s) for s in (".md", ".csv", ".tex")]
        outs = [f"{study.figures_dir}/{name}.pdf", f"{study.figures_dir}/{name}.png"]
        FIGURE_KINDS.get(study.figures[name]["kind"]).render(figure_manifest(study, name), outs)
        return [workdir / o for o in outs]
