"""A tiny federated problem for compressor tests run through the engine."""
from __future__ import annotations

import numpy as np
import torch

from fedflat.training.algorithms import PRESETS
from fedflat.training.data.array_dataset import ArrayDataset
from fedflat.training.data.partition import Partition
from fedflat.training.fl.engine import Simulation
from fedflat.core.spec import RunSpec, check_training

D, C = 5, 3


def tiny_sim(tmp_path, algorithm="fedavg", uplink=None, hparams=None, num_clients=3, per_client=6, rounds=2,
             local_steps=2, lr=0.3, seed=0, **tr):
    rng = np.random.default_rng(0)
    n = num_clients * per_client
    x = torch.tensor(rng.normal(size=(n, D)), dtype=torch.float32)
    y = torch.tensor(rng.integers(0, C, size=n))
    data = ArrayDataset("tiny", x, y, x[:6], y[:6], C)
    clients = [np.arange(i * per_client, (i + 1) * per_client) for i in range(num_clients)]
    hist = np.stack([np.bincount(y.numpy()[c], minlength=C) for c in clients])
    part = Partition(clients, hist, {"spec": "manual", "seed": 0})
    training = check_training({"num_clients": num_clients, "participation": 1.0, "rounds": rounds,
                               "local_steps": local_steps, "batch_size": per_client, "lr": lr, "lr_decay": 1.0,
                               "weight_decay": 0.0, "clip_grad_norm": 0.0, "eval_every": 1, "checkpoint_every": 0,
                               **tr})
    spec = RunSpec("tiny", "manual", "linear", algorithm, seed, PRESETS.get(algorithm).resolve(hparams or {}), {},
                   training, uplink=dict(uplink or {}))
    return Simulation(spec, data, part, tmp_path, progress=False)
