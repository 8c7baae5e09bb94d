"""The disk-backed client store: bounded files per client, no stale state from an earlier process.

(Resuming from a checkpoint is tested in tests/faults/test_resume.py.)
"""
from __future__ import annotations

import torch

from fedflat.training.fl.client_store import ClientStateStore


def _store(d):
    return ClientStateStore(("c_i", "h_i"), lambda n: torch.zeros(3), backend="disk", directory=d)


def _files(d, cid=0):
    return sorted(p.name for p in d.glob(f"client{cid:05d}.r*.pt"))


def _state(v):
    return {"c_i": torch.full((3,), float(v)), "h_i": torch.full((3,), -float(v))}


def test_disk_store_keeps_one_file_per_client_without_checkpoints(tmp_path):
    store = _store(tmp_path)
    for t in range(1, 6):
        store.put(0, _state(t), t)
        store.put(1, _state(100 + t), t)
    assert _files(tmp_path, 0) == ["client00000.r000005.pt"]
    assert _files(tmp_path, 1) == ["client00001.r000005.pt"]
    assert torch.equal(store.get(0)["h_i"], torch.full((3,), -5.0))


def test_disk_store_keeps_the_checkpointed_version_and_the_newest(tmp_path):
    store = _store(tmp_path)
    for t in (1, 2):
        store.put(0, _state(t), t)
    snap = store.snapshot(2)
    for t in (3, 4, 5):
        store.put(0, _state(t), t)
    assert _files(tmp_path) == ["client00000.r000002.pt", "client00000.r000005.pt"]
    assert torch.equal(store.get(0)["c_i"], torch.full((3,), 5.0))
    fresh = _store(tmp_path)  # the process was killed after round 5; resume from the round-2 checkpoint
    fresh.restore(snap, 2)
    assert torch.equal(fresh.get(0)["c_i"], torch.full((3,), 2.0))
    fresh.put(0, _state(33), 3)
    assert _files(tmp_path) == ["client00000.r000002.pt", "client00000.r000003.pt"]


def test_disk_store_without_restore_ignores_files_of_an_earlier_process(tmp_path):
    old = _store(tmp_path)  # a run killed before its first checkpoint left state behind
    old.put(0, _state(7), 1)
    old.put(4, _state(8), 2)
    new = _store(tmp_path)  # the rerun starts at round 1 with no checkpoint: initial values
    assert torch.equal(new.get(0)["c_i"], torch.zeros(3))
    assert not list(tmp_path.glob("client*.pt"))
    new.put(0, _state(1), 1)
    assert torch.equal(new.get(4)["h_i"], torch.zeros(3))
    assert _files(tmp_path) == ["client00000.r000001.pt"]


def test_disk_store_keeps_the_previous_checkpoints_version_until_the_next_is_written(tmp_path):
    """Killed while checkpoint 4 is being written: checkpoint 2 is still the valid one and must resume."""
    store = _store(tmp_path)
    for t in range(1, 7):
        store.put(0, _state(t), t)
        if t == 2:
            snap2 = store.snapshot(2)
        if t == 4:
            snap4 = store.snapshot(4)
    assert _files(tmp_path) == ["client00000.r000002.pt", "client00000.r000004.pt", "client00000.r000006.pt"]
    for snap, r in ((snap4, 4), (snap2, 2)):  # a restore drops what came after its round
        fresh = _store(tmp_path)
        fresh.restore(snap, r)
        assert torch.equal(fresh.get(0)["c_i"], torch.full((3,), float(r)))
