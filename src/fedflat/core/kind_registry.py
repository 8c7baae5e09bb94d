"""Registries of table and figure kinds, so new kinds plug in without editing the study code.

A kind declares
  inputs(study, name, spec) -> list of files the output depends on (Snakemake inputs)
  manifest(study, name, spec) -> JSON-able dict handed to render
  render(manifest, outs) -> writes every path in outs (tables: base path without suffix)
and optionally check(study, name, spec) to validate its config entry (raise ConfigError), and (tables)
cells(study, name, spec) -> iterable of (row, column, run id): the runs behind each cell, which the committed
evidence records (cells.csv) and `python -m fedflat.evidence trace` reads.
Register with @FIGURE_KINDS.register("name") on a class with these as staticmethods, in a module that the
composition root (fedflat.plugins) imports. The registries sit in the bottom layer so that the study parser
and every package that adds kinds (report, analysis, papers, leaderboard) can reach them without an upward
import (docs/architecture.md).
"""
from __future__ import annotations

from .registry import Registry

FIGURE_KINDS: Registry[type] = Registry("figure kind")
TABLE_KINDS: Registry[type] = Registry("table kind")


def run_entries(study, ename: str) -> list[dict]:
    """One dict per run of an experiment: its labels and output directory."""
    return [{**labels, "dir": study.run_dir(rid)} for rid, labels in study.experiments[ename]]


def run_files(study, ename: str, files=("summary.json", "metrics.csv")) -> list[str]:
    return [f"{study.run_dir(rid)}/{f}" for rid, _ in study.experiments[ename] for f in files]
