"""A training process killed with SIGKILL at any point and started again ends with exactly the
metrics and model of an uninterrupted run (CPU, deterministic)."""
from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest
import torch

from fedflat.training.algorithms import PRESETS, build_algorithm
from fedflat.training.fl.client_store import ClientStateStore
from fedflat.training.fl.engine import train

from .compare import metrics_rows
from .helpers import make_spec, train_cmd

LONG = {"rounds": 12, "local_steps": 4, "checkpoint_every": 2}


def _kill_after_checkpoint(cmd, ckpt, delay_s: float) -> None:
    """Start the job, wait for a new checkpoint to appear, SIGKILL it `delay_s` later."""
    before = ckpt.stat().st_mtime_ns if ckpt.exists() else None
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (ckpt.exists() and ckpt.stat().st_mtime_ns != before):
            assert proc.poll() is None, "the run ended before it wrote a new checkpoint"
            assert time.monotonic() < deadline
            time.sleep(0.002)
        time.sleep(delay_s)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL


def _resume_matches(spec, partition_file, tmp_path, kills=(0.0, 0.05)):
    ref = tmp_path / "ref"
    train(spec, ref, partition_file, progress=False)
    run = tmp_path / "killed"
    cmd = train_cmd(spec, partition_file, run)
    for delay in kills:  # right after a checkpoint, then somewhere inside a later round
        _kill_after_checkpoint(cmd, run / "checkpoint.pt", delay)
        assert not (run / "summary.json").exists(), "killed too late: the run had finished"
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "resumed from checkpoint" in done.stderr
    assert not (run / "checkpoint.pt").exists()  # removed once the run completes
    assert metrics_rows(run / "metrics.csv") == metrics_rows(ref / "metrics.csv")
    a, b = torch.load(ref / "model.pt"), torch.load(run / "model.pt")
    assert torch.equal(a["theta"], b["theta"])
    # the run says it resumed, and from which checkpoint rounds (the evidence record's resumed_from)
    resumed = json.loads((run / "summary.json").read_text())["resumed_from"]
    assert len(resumed) == len(kills) and all(t % LONG["checkpoint_every"] == 0 for t in resumed), resumed
    assert json.loads((ref / "summary.json").read_text())["resumed_from"] == []
    return run


def test_sigkill_and_resume_equals_uninterrupted(partition_file, tmp_path):
    _resume_matches(make_spec("fedsam", **LONG), partition_file, tmp_path)


def _stateful_preset():
    for name in ("scaffold", "feddyn", "fedspeed", "fedgamma", *PRESETS.names()):
        if name in PRESETS.names() and build_algorithm(name, PRESETS.get(name).resolve({})).client_state_names:
            return name
    return None


def test_sigkill_and_resume_disk_client_state(partition_file, tmp_path):
    name = _stateful_preset()
    assert name is not None, "SCAFFOLD, FedDyn, FedSpeed and FedGAMMA keep per-client state: one must be registered"
    run = _resume_matches(make_spec(name, client_state="disk", **LONG), partition_file, tmp_path)
    assert any((run / "client_state").glob("client*.pt"))


@pytest.mark.parametrize("backend", ["memory", "disk"])
def test_client_store_restores_the_checkpointed_version(tmp_path, backend):
    """State written after the checkpoint round is dropped on resume: the store is as it was."""
    make = lambda n: torch.zeros(3)
    store = ClientStateStore(("c_i",), make, backend=backend, directory=tmp_path / "cs")
    for t in (1, 2, 3, 4):
        for cid in (0, 1):
            if (t + cid) % 2 == 0 or t == 1:  # client 1 is not sampled in round 2 and 4
                store.put(cid, {"c_i": torch.full((3,), 10.0 * t + cid)}, t)
        if t == 2:
            snap = store.snapshot(2)
    # a killed process: the store object is gone; a new one restores from the checkpoint
    fresh = ClientStateStore(("c_i",), make, backend=backend, directory=tmp_path / "cs")
    fresh.restore(snap, 2)
    assert torch.equal(fresh.get(0)["c_i"], torch.full((3,), 20.0))
    assert torch.equal(fresh.get(1)["c_i"], torch.full((3,), 11.0))
    assert torch.equal(fresh.get(5)["c_i"], torch.zeros(3))  # never sampled: initial value
