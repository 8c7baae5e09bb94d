"""File-backed datasets and paper models run through the real engine (one tiny round each)."""
from __future__ import annotations

import math

import numpy as np

from data_formats import PLAY_TEXT, write_cifar_batch, write_cifar_meta
from fedflat.training.algorithms import PRESETS
from fedflat.training.data import load_dataset
from fedflat.training.data import torchvision_sets as tvs
from fedflat.training.data.natural import natural_partition
from fedflat.training.data.partition import make_partition
from fedflat.training.fl.engine import Simulation
from fedflat.core.spec import RunSpec, check_training


def _run(ds, part, model, model_kwargs, tmp_path, algorithm="fedavg"):
    training = check_training({"num_clients": part.num_clients, "participation": 1.0, "rounds": 1, "local_steps": 2,
                               "batch_size": 4, "lr": 0.05, "lr_decay": 1.0, "weight_decay": 0.0,
                               "clip_grad_norm": 0.0, "eval_every": 1, "checkpoint_every": 0})
    spec = RunSpec(ds.name, "manual", model, algorithm, 0, PRESETS.get(algorithm).resolve({}), model_kwargs, training)
    return Simulation(spec, ds, part, tmp_path / "run", progress=False).run()


def test_shakespeare_natural_partition_char_lstm(tmp_path):
    (tmp_path / "shakespeare").mkdir()
    (tmp_path / "shakespeare" / "raw_data.txt").write_text(PLAY_TEXT)
    ds = load_dataset("shakespeare-all", tmp_path)
    summary = _run(ds, natural_partition(ds), "char_lstm", {"hidden": 8}, tmp_path)
    assert summary["status"] == "completed" and math.isfinite(summary["final_loss"])
    assert summary["num_params"] == 640 + (4 * 8 * 8 + 4 * 8 * 8 + 64) + (4 * 8 * 16 + 64) + 8 * 80 + 80


def test_cifar10_augmented_lenet5(tmp_path, monkeypatch):
    monkeypatch.setattr(tvs, "CHECKSUMS", {})
    rng = np.random.default_rng(0)
    d = tmp_path / "data" / "cifar-10-batches-py"
    for i in range(1, 6):
        write_cifar_batch(d / f"data_batch_{i}", rng.integers(0, 256, (4, 3, 32, 32), dtype=np.uint8),
                          rng.integers(0, 10, 4), "labels")
    write_cifar_batch(d / "test_batch", rng.integers(0, 256, (4, 3, 32, 32), dtype=np.uint8), [0, 1, 2, 3], "labels")
    write_cifar_meta(d / "batches.meta", "label_names", [str(i) for i in range(10)])
    ds = load_dataset("cifar10", tmp_path / "data")
    part = make_partition(ds.train_y.numpy(), "iid", 2, seed=0)
    summary = _run(ds, part, "lenet5", {}, tmp_path)
    assert summary["status"] == "completed" and math.isfinite(summary["final_loss"])
    assert summary["num_params"] == 797_962
