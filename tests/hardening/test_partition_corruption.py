"""A corrupted partition never costs a finished run its outputs (Snakemake used to re-run training because the
damaged file was newer, remove the run's metrics.csv, summary.json and model.pt, then fail), and the advice
printed works as written: delete the file, run the printed command, run the study again."""
from __future__ import annotations

import hashlib
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from faults.helpers import SNAKEMAKE, snakemake, workdir
from .helpers import one_line

pytestmark = pytest.mark.e2e
STUDY = {"study": "part", "data_root": "data", "device": "cpu", "threads_per_job": 1,
         "training": {"num_clients": 4, "participation": 0.5, "rounds": 2, "local_steps": 1, "batch_size": 16,
                      "eval_every": 1},
         "experiments": {"main": {"datasets": ["digits"], "models": ["mlp"], "partitions": ["iid"], "seeds": [0],
                                  "algorithms": ["fedavg", "fedsam"]}},
         "tables": {"main": {"experiment": "main"}}}


def _runs(wd: Path) -> dict:
    return {str(p.relative_to(wd)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted((wd / "results/runs").rglob("*")) if p.is_file()}


def test_a_truncated_partition_is_refused_before_scheduling_and_the_advice_works(tmp_path):
    wd = workdir(tmp_path / "wd")
    (wd / "study.yaml").write_text(yaml.safe_dump(STUDY))
    r = snakemake(wd, "--cores", "1", "--configfile", "study.yaml")
    assert r.returncode == 0, r.stderr[-3000:]
    [part] = list((wd / "results/partitions").rglob("*.npz"))
    finished = _runs(wd)
    assert sum(p.endswith("summary.json") for p in finished) == 2

    data = part.read_bytes()
    part.write_bytes(data[: len(data) // 2])  # a full disk, an interrupted copy
    r = snakemake(wd, "--cores", "1", "--configfile", "study.yaml")
    assert r.returncode != 0
    line = one_line("\n".join(l for l in r.stderr.splitlines() if l.startswith("fedflat:")),
                    str(part.relative_to(wd)), "corrupted or truncated", "delete it")
    assert "Traceback" not in r.stderr and "rule train" not in r.stdout + r.stderr
    assert _runs(wd) == finished  # nothing removed, nothing rewritten

    # the advice, as written: delete the file, run the command in backquotes, run the study again
    command = re.search(r"`([^`]+)`", line).group(1)
    assert command.startswith(f"snakemake --cores 1 {part.relative_to(wd)} --configfile ")
    part.unlink()
    words = shlex.split(command)
    r = subprocess.run([SNAKEMAKE, *words[1:]], cwd=wd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert part.read_bytes() != data[: len(data) // 2] and part.stat().st_size > 0
    r = snakemake(wd, "--cores", "1", "--configfile", "study.yaml")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "rule train" not in r.stdout + r.stderr
    assert _runs(wd) == finished  # the finished runs were neither redone nor removed
