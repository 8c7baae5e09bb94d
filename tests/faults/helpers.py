"""Shared pieces of the fault tests: a tiny run spec, its partition, and CLI/Snakemake runners."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
TINY = {"num_clients": 6, "participation": 0.5, "rounds": 8, "local_steps": 3, "batch_size": 16,
        "lr": 0.05, "eval_every": 2, "checkpoint_every": 2}


def make_spec(algorithm: str = "fedavg", seed: int = 0, hparams: dict | None = None, **training):
    from fedflat.training.algorithms import PRESETS
    from fedflat.core.spec import RunSpec, check_training

    tr = check_training({**TINY, **training})
    return RunSpec("digits", "iid", "mlp", algorithm, seed, PRESETS.get(algorithm).resolve(hparams or {}), {}, tr)


def make_partition_file(path: Path, num_clients: int = TINY["num_clients"]) -> Path:
    from fedflat.training.data import load_dataset, make_partition

    make_partition(load_dataset("digits").train_y.numpy(), "iid", num_clients, 0).save(path)
    return path


def train_cmd(spec, partition: Path, out_dir: Path) -> list[str]:
    return [sys.executable, "-m", "fedflat", "train", "--spec", json.dumps(spec.to_dict()), "--partition",
            str(partition), "--out-dir", str(out_dir), "--threads", "1"]


def workdir(tmp: Path) -> Path:
    """A scratch copy of the workflow (outputs land beside it, never in the repository)."""
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "Snakefile", tmp)
    shutil.copytree(REPO / "workflow", tmp / "workflow", ignore=shutil.ignore_patterns("profiles"))
    return tmp


def snakemake(cwd: Path, *args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([SNAKEMAKE, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
