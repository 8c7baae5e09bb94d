"""Snakemake `benchmark:` records of the train rule: parsing, the per-study table, which runs it lists."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from fedflat.pipeline.report.benchmarks import benchmark_manifest, benchmarks_output, read_benchmark, render_benchmarks
from fedflat.pipeline.study import load_config_file, load_study

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def _tsv(path, *rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + "".join("\t".join(map(str, r)) + "\n" for r in rows))
    return path


def test_read_one_record(tmp_path):
    p = _tsv(tmp_path / "b.tsv", (12.3456, "0:00:12", 512.34, 1200.5, 500.1, 505.2, 0.01, 3.2, 95.1, 11.8))
    assert read_benchmark(p) == {"wall_s": 12.3456, "max_rss_mb": 512.34, "cpu_s": 11.8, "repeats": 1}


def test_read_repeats_and_na(tmp_path):
    # repeat(..., 3): mean wall/CPU time, the largest max RSS; NA (too short for psutil) is skipped
    p = _tsv(tmp_path / "b.tsv",
             (10.0, "0:00:10", 300.0, 900, 290, 295, 0, 1, 90, 9.0),
             (14.0, "0:00:14", "NA", "NA", "NA", "NA", "NA", "NA", "NA", "NA"),
             (12.0, "0:00:12", 420.0, 950, 400, 410, 0, 1, 80, 11.0))
    r = read_benchmark(p)
    assert r["wall_s"] == pytest.approx(12.0) and r["max_rss_mb"] == 420.0
    assert r["cpu_s"] == pytest.approx(10.0) and r["repeats"] == 3
    only_na = read_benchmark(_tsv(tmp_path / "na.tsv", (0.5, "0:00:00", *["NA"] * 8)))
    assert only_na["wall_s"] == 0.5 and math.isnan(only_na["max_rss_mb"])
    assert read_benchmark(tmp_path / "absent.tsv") is None


def test_malformed_record_names_the_column(tmp_path):
    p = tmp_path / "bad.tsv"
    p.write_text("s\th:m:s\n1.0\t0:00:01\n")
    with pytest.raises(ValueError, match="max_rss"):
        read_benchmark(p)


def test_render_table(tmp_path):
    runs = [("a/fedavg/seed0", "FedAvg", 0, (20.0, "0:00:20", 800.0, 0, 0, 0, 0, 0, 99, 19.0)),
            ("a/fedsam/seed0", "FedSAM", 0, (40.0, "0:00:40", 1536.0, 0, 0, 0, 0, 0, 99, 39.0)),
            ("a/fedsam/seed1", "FedSAM", 1, None)]  # built before the directive existed
    manifest = []
    for rid, label, seed, row in runs:
        b = tmp_path / "runs" / rid / "benchmark.tsv"
        if row:
            _tsv(b, row)
        manifest.append({"run": rid, "benchmark": str(b), "summary": "", "algorithm": label, "dataset": "digits",
                         "model": "mlp", "partition": "iid", "seed": seed})
    df = render_benchmarks(manifest, tmp_path / "out" / "study.md", title="T")
    md = (tmp_path / "out" / "study.md").read_text()
    cells = [[c.strip() for c in ln.split("|")[1:-1]] for ln in md.splitlines() if ln.startswith("| Fed")]
    rows = {c[0] + c[4]: c[5:] for c in cells}  # algorithm + seed -> wall s, max RSS MB, CPU s
    assert rows == {"FedAvg0": ["20.0", "800", "19.0"], "FedSAM0": ["40.0", "1,536", "39.0"], "FedSAM1": ["—"] * 3}
    assert "2 of 3 runs recorded: total wall time 60.0 s" in md and "mean 30.0 s per run" in md
    assert "largest max RSS 1,536 MB (FedSAM, digits/iid/mlp, seed 0)" in md and "1 run(s) without a record" in md
    csv = pd.read_csv(tmp_path / "out" / "study.csv")
    assert list(csv["wall_s"].iloc[:2]) == [20.0, 40.0] and list(csv["max_rss_mb"].iloc[:2]) == [800.0, 1536.0]
    assert math.isnan(csv["wall_s"].iloc[2]) and list(df["repeats"]) == [1, 1, 0]


def test_manifest_lists_the_runs_the_outputs_need(repo):
    cfg = load_config_file(repo / "config" / "tiny.yaml")
    study = load_study(cfg)
    m = benchmark_manifest(study)
    assert m and {e["run"] for e in m} <= set(study.runs)
    assert all(e["benchmark"] == f"results/runs/{e['run']}/benchmark.tsv" for e in m)
    assert all(e["algorithm"] and e["seed"] is not None for e in m)
    assert benchmarks_output(study) == "results/benchmarks/tiny.md"
    # a study whose only output needs no training: no run is listed (none would be built for it)
    only_heatmap = {**cfg, "tables": {}, "figures": {k: v for k, v in cfg["figures"].items()
                                                     if v.get("kind") == "partition_heatmap"}}
    assert only_heatmap["figures"] and benchmark_manifest(load_study(only_heatmap)) == []


def test_bench_summary_reads_every_figure(repo, monkeypatch):
    """`python -m bench` ends with the figures of both speed issues, read from what each benchmark printed."""
    monkeypatch.syspath_prepend(str(repo))
    from bench.__main__ import figures

    printed = {
        "bench_overhead": "overhead ratio (...), goal <= 1.05; x86\n"
                          "  lenet5      fedavg  10x50 steps  engine    30.00s  bare    28.00s  (server side 70.0 ms)  "
                          "ratio 1.067  median per client 1.057\n",
        "bench_fast_step": "  mlp         fedavg 4x20 steps  bare     1.26 ms/step  compiled     0.99 ms/step  "
                           "speed-up 1.27x (best chunks 1.32x)  engine eager ÷ bare 1.07x  warm-up 12.0s\n",
        "bench_public_pattern": "  public pattern    70.90s (evaluation 42.80s)  fedflat[compile]    35.20s (evaluation "
                                "15.60s; warm-up before timing 89.7s)  speed-up 2.01x  (goal >= 1.5)\n"
                                "  lenet5: evaluation at TRAINING_DEFAULTS' schedule (eval_every=1, test split, batch "
                                "1024, inference_mode): 11.8% of run time (goal <= 10%)\n"
                                "  default study (config/config.yaml: digits, mlp, fedavg): evaluation 1.4% of 9.9s run time\n",
        "bench_memory": "...",
        "bench_real": "  steps      mlp2     fedsam    eager     38.0 ms/client  auto (fused)     30.0 ms/client  "
                      "speed-up 1.27x (CPU time 1.20x)  warm-up 7.7s\n"
                      "  today      mlp2     fedsam    eager + glibc default     45.0 ms/client  auto + tuned     30.0 "
                      "ms/client (CPU time, steady)  speed-up 1.50x\n"
                      "  fixed      mlp2     fedsam    auto (fused) start to end of first client 11.0s: imports 1.3s, "
                      "data 0.0s, build 0.0s, first client 7.9s; peak RSS 813 MB\n",
    }
    returned = {"bench_memory": [("5", "disk store 3.40 GiB")]}
    got = {t: found for t, _, _, found in figures(printed, returned, failed=set())}
    assert got == {"1": ["lenet5 fedavg: 1.067"], "2": ["mlp fedavg: 1.27"], "3": ["lenet5: 11.8%", "default study: 1.4%"],
                   "4": ["2.01"], "5": ["disk store 3.40 GiB"],
                   "6": ["mlp2 fedsam: 38.0 ms/client  auto (fused)     30.0 ms/client  speed-up 1.27x (CPU time 1.20x)"],
                   "7": ["mlp2 fedsam: 1.50x"], "8": ["mlp2 fedsam: auto (fused) start to end of first client 11.0s"]}
    got = {t: found for t, _, _, found in figures({"bench_overhead": "x\n"}, {}, failed={"bench_memory"})}
    assert got["1"] == ["no figure printed"] and got["2"] == ["not run"] and got["5"] == ["failed"]
