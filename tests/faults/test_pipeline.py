"""Faults at the Snakemake level, on a four-job study (one partition, two runs, one table):

- a diverging run (server lr 1e20) ends with status `diverged`, its table says "diverged", the DAG completes;
- the same config gives identical results at --cores 1 and --cores 2;
- a job failing once on a transient error is retried (--retries) and the results are unchanged;
- a job killed half-way through writing its outputs is never counted as done: Snakemake refuses
  the partial outputs until --rerun-incomplete redoes the job.
Faults are injected from outside the package (inject/sitecustomize.py on PYTHONPATH).
"""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from .compare import compare_trees
from .helpers import SNAKEMAKE, snakemake, workdir

pytestmark = pytest.mark.e2e
INJECT = str(Path(__file__).with_name("inject"))
BLOWUP = "FedAvg (server lr 1e20)"
STUDY = {
    "study": "faults", "data_root": "data", "device": "cpu", "threads_per_job": 1,
    "training": {"num_clients": 4, "participation": 0.5, "rounds": 4, "local_steps": 2, "batch_size": 16,
                 "lr": 0.05, "eval_every": 2, "checkpoint_every": 2},
    "experiments": {"main": {"datasets": ["digits"], "models": ["mlp"], "partitions": ["iid"], "seeds": [0],
                             "algorithms": ["fedavg", {"preset": "fedavg", "label": BLOWUP,
                                                       "params": {"server_lr": 1.0e20}}]}},
    "tables": {"main": {"experiment": "main"}},
}


def study_copy(tmp: Path) -> Path:
    wd = workdir(tmp)
    (wd / "study.yaml").write_text(yaml.safe_dump(STUDY))
    return wd


def fault_env(wd: Path, fault: str | None) -> dict:
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [INJECT, os.environ.get("PYTHONPATH")]))}
    if fault:
        env["FEDFLAT_TEST_FAULT"] = f"{fault}:{wd}"
    return env


def run(wd: Path, *args: str, fault: str | None = None) -> subprocess.CompletedProcess:
    return snakemake(wd, "--configfile", "study.yaml", *args, env=fault_env(wd, fault), timeout=600)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    wd = study_copy(tmp_path_factory.mktemp("cores1"))
    r = run(wd, "--cores", "1")
    assert r.returncode == 0, r.stderr[-3000:]
    return wd


def test_diverged_run_is_recorded_and_tabled(reference):
    statuses = {}
    for d in (reference / "results/runs").rglob("summary.json"):
        server_lr = json.loads((d.parent / "config.json").read_text())["spec"]["hparams"]["server_lr"]
        statuses[server_lr] = json.loads(d.read_text())["status"]
        rows = list(csv.DictReader(open(d.parent / "metrics.csv")))
        if server_lr > 1:
            assert rows[-1]["status"] == "diverged" and int(rows[-1]["round"]) < 4  # stopped at that round
            assert all(r["status"] == "ok" for r in rows[:-1])
    assert statuses == {1.0: "completed", 1.0e20: "diverged"}
    table = (reference / "results/tables/main.md").read_text()
    blowup = next(l for l in table.splitlines() if BLOWUP in l)
    fedavg = next(l for l in table.splitlines() if l.startswith("| FedAvg "))
    assert "diverged" in blowup and "nan" not in table.lower()
    assert "±" in fedavg and "diverged" not in fedavg


def test_killed_job_then_transient_failure_at_cores_2_equals_cores_1(reference, tmp_path):
    """One scenario, three faults (one Snakemake completion run keeps the test short):
    1. a job dies half-way through writing its outputs, and Snakemake is SIGKILLed with it;
    2. Snakemake refuses the partial outputs (even in a dry run) until --rerun-incomplete
       (after `--unlock`: the killed Snakemake left its directory lock);
    3. the rerun at --cores 2 meets a transient failure, which --retries 1 absorbs;
    and the results equal the --cores 1 reference."""
    wd = study_copy(tmp_path / "cores2")
    proc = subprocess.Popen([SNAKEMAKE, "--configfile", "study.yaml", "--cores", "2"], cwd=wd, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, **fault_env(wd, "hang")})
    marker = wd / "fault.hanging"
    try:
        deadline = time.monotonic() + 300
        while not (marker.exists() and marker.read_text()):
            assert proc.poll() is None and time.monotonic() < deadline, "the injected hang never started"
            time.sleep(0.1)
    finally:  # SIGKILL everything: Snakemake cannot clean up, as when a node dies
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if marker.exists() and marker.read_text():
            try:
                os.kill(int(marker.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass
    partial = [p for p in (wd / "results/runs").rglob("metrics.csv") if not (p.parent / "summary.json").exists()]
    assert partial, "the killed job left no partial output"
    r = run(wd, "--cores", "2", "-n")
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "Incomplete files" in out, out[-2000:]
    assert all(str(p.relative_to(wd)) in out for p in partial), out[-2000:]
    assert run(wd, "--unlock").returncode == 0  # the SIGKILLed Snakemake left its lock behind
    r = run(wd, "--cores", "2", "--rerun-incomplete", "--retries", "1", fault="fail")
    assert r.returncode == 0, r.stderr[-3000:]
    assert (wd / "fault.fail").exists() and "Error in rule train" in r.stderr  # it did fail once
    assert compare_trees(reference, wd) == []
