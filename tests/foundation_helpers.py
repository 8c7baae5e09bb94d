"""A tiny float64 federated problem and an independent NumPy re-derivation of the updates."""
from __future__ import annotations

import numpy as np
import torch

from fedflat.training.data.array_dataset import ArrayDataset
from fedflat.training.data.partition import Partition
from fedflat.training.fl.engine import Simulation
from fedflat.core.spec import RunSpec, check_training

D, C = 5, 3


def tiny_problem(num_clients=3, per_client=6, seed=0, dim=D, n_test=6):
    """Gaussian inputs, random labels of C classes, client i holds samples [i*per_client, (i+1)*per_client)."""
    rng = np.random.default_rng(seed)
    n = num_clients * per_client
    x = rng.normal(size=(n, dim))
    y = rng.integers(0, C, size=n)
    data = ArrayDataset("tiny", torch.tensor(x), torch.tensor(y), torch.tensor(x[:n_test]), torch.tensor(y[:n_test]), C)
    clients = [np.arange(i * per_client, (i + 1) * per_client) for i in range(num_clients)]
    hist = np.stack([np.bincount(y[c], minlength=C) for c in clients])
    return data, Partition(clients, hist, {"spec": "manual", "seed": 0}), x, y, clients


def make_sim(algorithm, hparams, tmp_path, num_clients=3, per_client=6, local_steps=2, lr=0.3, rounds=2, **tr):
    from fedflat.training.algorithms import PRESETS

    data, part, x, y, clients = tiny_problem(num_clients, per_client)
    training = check_training({"num_clients": num_clients, "participation": 1.0, "rounds": rounds,
                               "local_steps": local_steps, "batch_size": per_client, "lr": lr, "lr_decay": 1.0,
                               "weight_decay": 0.0, "clip_grad_norm": 0.0, "eval_every": 1, "checkpoint_every": 0, **tr})
    spec = RunSpec("tiny", "manual", "linear", algorithm, 0, PRESETS.get(algorithm).resolve(hparams), {}, training)
    sim = Simulation(spec, data, part, tmp_path, progress=False)
    return sim, x, y, clients


def split(theta):
    th = np.asarray(theta, dtype=np.float64)
    return th[: C * D].reshape(C, D), th[C * D :]


def np_grad(theta, x, y):
    """Mean cross-entropy gradient of a linear softmax model, closed form: G = (softmax − onehot)/n."""
    W, b = split(theta)
    z = x @ W.T + b
    z -= z.max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    p[np.arange(len(y)), y] -= 1.0
    G = p / len(y)
    return np.concatenate([(G.T @ x).ravel(), G.sum(0)])


def unit(v):
    n = np.linalg.norm(v)
    return v / n if n > 0 else np.zeros_like(v)
