"""Wall time and memory per training run, from Snakemake's `benchmark:` records.

The `train` rule writes `results/runs/{run}/benchmark.tsv` (Snakemake's format: one header line,
one row per repeat, columns s, h:m:s, max_rss, max_vms, max_uss, max_pss, io_in, io_out,
mean_load, cpu_time; memory in MB, times in seconds, `NA` where psutil could not sample a process
that ended too fast). The `benchmarks` rule (workflow/rules/report.smk) renders one table per
study: one row per run that the study's tables and figures need, with its algorithm label.

A run built before the records existed has no file; it is shown as "—" rather than retrained
(the rule's inputs are the runs' summaries, so an old run is not rebuilt for its record).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
from pathlib import Path

import pandas as pd

from ...core.util.io import read_manifest, write_text
from ...core.util.markdown import md_table
from ...core.util.names import under

BENCHMARK_FILE = "benchmark.tsv"
COLUMNS = ("s", "h:m:s", "max_rss", "max_vms", "max_uss", "max_pss", "io_in", "io_out", "mean_load", "cpu_time")
LABELS = ("algorithm", "dataset", "model", "partition", "seed")


def _num(v) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return math.nan  # Snakemake writes NA when the process was too short to sample
    return x


def read_benchmark(path: str | Path) -> dict | None:
    """One Snakemake benchmark TSV → {wall_s, max_rss_mb, cpu_s, repeats}; None when there is no file.

    Several rows (`repeat(...)`): the mean wall and CPU time, the largest max RSS."""
    path = Path(path)
    if not path.exists():
        return None
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    if not lines:
        raise ValueError(f"benchmark record {path} is empty")
    header = lines[0].split("\t")
    missing = [c for c in ("s", "max_rss") if c not in header]
    if missing:
        raise ValueError(f"benchmark record {path}: no column {missing[0]!r} (header: {' '.join(header)})")
    rows = [dict(zip(header, ln.split("\t"))) for ln in lines[1:]]
    if not rows:
        raise ValueError(f"benchmark record {path} has a header but no measurement")
    col = lambda c: [_num(r.get(c)) for r in rows]
    finite = lambda xs: [x for x in xs if not math.isnan(x)]
    wall, rss, cpu = finite(col("s")), finite(col("max_rss")), finite(col("cpu_time"))
    return {"wall_s": sum(wall) / len(wall) if wall else math.nan, "max_rss_mb": max(rss) if rss else math.nan,
            "cpu_s": sum(cpu) / len(cpu) if cpu else math.nan, "repeats": len(rows)}


# ------------------------------------------------------------------------------------------ study side
def needed_runs(study) -> list[str]:
    """The run ids whose outputs the study's tables and figures read (in the study's order)."""
    from ..study import figure_inputs, table_inputs

    by_dir = {study.run_dir(rid): rid for rid in study.runs}
    found: set[str] = set()
    for section, inputs in (("tables", table_inputs), ("figures", figure_inputs)):
        for name in getattr(study, section):
            for p in inputs(study, name):
                for parent in Path(p).parents:
                    rid = by_dir.get(str(parent))
                    if rid is not None:
                        found.add(rid)
                        break
    return [rid for rid in study.runs if rid in found]


def benchmark_manifest(study) -> list[dict]:
    """One entry per needed run: its record's path, its summary (the rule's input) and its labels."""
    labels: dict[str, dict] = {}
    for entries in study.experiments.values():
        for rid, lab in entries:
            labels.setdefault(rid, lab)
    out = []
    for rid in needed_runs(study):
        d = study.run_dir(rid)
        lab = labels.get(rid, {})
        out.append({"run": rid, "benchmark": f"{d}/{BENCHMARK_FILE}", "summary": f"{d}/summary.json",
                    **{k: lab.get(k) for k in LABELS}})
    return out


def benchmarks_output(study) -> str:
    """Where a study's table goes: results/benchmarks/<study name>.md (outside the table rule's pattern)."""
    return str(under("results/benchmarks", f"{study.config.get('study') or 'study'}.md", key="study"))


def manifest_digest(manifest: list[dict]) -> str:
    return hashlib.sha1(json.dumps(manifest, sort_keys=True).encode()).hexdigest()[:12]


# ------------------------------------------------------------------------------------------ rendering
def collect(manifest: list[dict]) -> pd.DataFrame:
    rows = []
    for e in manifest:
        rec = read_benchmark(e["benchmark"]) or {"wall_s": math.nan, "max_rss_mb": math.nan, "cpu_s": math.nan,
                                                  "repeats": 0}
        rows.append({**{k: e.get(k) for k in LABELS}, **rec, "run": e["run"]})
    return pd.DataFrame(rows, columns=[*LABELS, "wall_s", "max_rss_mb", "cpu_s", "repeats", "run"])


def _fmt(x: float, digits: int) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.{digits}f}"


def render_benchmarks(manifest: list[dict], out_md: str | Path, title: str = "", note: str = "") -> pd.DataFrame:
    """Write `<out>.md` (one row per run, and a total) and `<out>.csv` (the numbers)."""
    df = collect(manifest)
    out_md = Path(out_md)
    shown = pd.DataFrame({
        "Algorithm": df["algorithm"], "Dataset": df["dataset"], "Model": df["model"],
        "Partition": df["partition"], "Seed": df["seed"],
        "Wall (s)": [_fmt(x, 1) for x in df["wall_s"]], "Max RSS (MB)": [_fmt(x, 0) for x in df["max_rss_mb"]],
        "CPU (s)": [_fmt(x, 1) for x in df["cpu_s"]],
    })
    recorded = df[df["repeats"] > 0]
    if len(df) == 0:
        body = "No training run is needed by this study's tables and figures."
    else:
        body = md_table(shown, index=False, disable_numparse=True,  # keep the formatted figures
                                 colalign=("left",) * 4 + ("right",) * 4)
    parts = [f"# {title}" if title else "", body]
    if len(recorded):
        i = recorded["max_rss_mb"].fillna(-1).idxmax()
        parts.append(f"{len(recorded)} of {len(df)} runs recorded: total wall time {recorded['wall_s'].sum():,.1f} s "
                     f"({recorded['wall_s'].sum() / 3600:.2f} h), mean {recorded['wall_s'].mean():,.1f} s per run; "
                     f"largest max RSS {_fmt(recorded.loc[i, 'max_rss_mb'], 0)} MB ({recorded.loc[i, 'algorithm']}, "
                     f"{recorded.loc[i, 'dataset']}/{recorded.loc[i, 'partition']}/{recorded.loc[i, 'model']}, "
                     f"seed {recorded.loc[i, 'seed']}).")
    missing = len(df) - len(recorded)
    if missing:
        parts.append(f"{missing} run(s) without a record (—): built before the `benchmark:` directive existed.")
    parts.append("Wall time, peak resident memory (max RSS, the job's process tree) and CPU time of each `train` "
                 "job as recorded by Snakemake's `benchmark:` directive (results/runs/<run>/benchmark.tsv)."
                 + (f" {note}" if note else ""))
    write_text(out_md, "\n\n".join(p for p in parts if p) + "\n")
    write_text(out_md.with_suffix(".csv"), df.to_csv(index=False))
    return df


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="render a study's Snakemake benchmark records as a table")
    ap.add_argument("--manifest", required=True, help="JSON list, or @file holding it")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="")
    a = ap.parse_args(argv)
    render_benchmarks(read_manifest(a.manifest), a.out, a.title)


if __name__ == "__main__":
    main()
