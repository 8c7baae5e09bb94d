"""Tiny float64 federated problem for the baseline presets, and a closed-form softmax gradient
for re-deriving their updates in NumPy (no fedflat algorithm code on the reference path)."""
from __future__ import annotations

import numpy as np
import torch

from fedflat.training.fl.batches import sample_clients
from fedflat.training.fl.engine import Simulation
from fedflat.core.spec import RunSpec, check_training
from foundation_helpers import C, tiny_problem as base_tiny_problem

D = 4  # input dim (C classes from foundation_helpers)
SETTINGS = dict(num_clients=4, participation=0.75, local_steps=3, lr=0.3, lr_decay=0.9, weight_decay=1e-3)


def tiny_problem(num_clients, per_client=5, seed=1):
    return base_tiny_problem(num_clients, per_client, seed, dim=D, n_test=5)


class Run:
    """A Simulation on the tiny problem plus what a reference needs: data, schedule, sampled sets."""

    def __init__(self, algorithm, hparams, tmp_path, per_client=5, **overrides):
        from fedflat.training.algorithms import PRESETS

        s = {**SETTINGS, **overrides}
        preset = PRESETS.get(algorithm)
        training = preset.training_for(check_training({"rounds": 3, "batch_size": per_client, "clip_grad_norm": 0.0,
                                                       "checkpoint_every": 0, **s}))  # as the study does
        self.N, self.K, self.wd = s["num_clients"], s["local_steps"], training["weight_decay"]
        self.lr0, self.decay = s["lr"], s["lr_decay"]
        data, part, self.x, self.y, self.clients = tiny_problem(self.N, per_client)
        spec = RunSpec("tiny", "manual", "linear", algorithm, 0, preset.resolve(hparams), {}, training)
        self.sim = Simulation(spec, data, part, tmp_path, progress=False)
        self.S = spec.clients_per_round
        self.theta0 = self.sim.srv.theta.clone().numpy()

    def lr(self, t):
        return self.lr0 * self.decay ** (t - 1)

    def sampled(self, t):
        return sample_clients(0, t, self.N, self.S)

    def grad(self, w, cid):
        c = self.clients[cid]
        return np_grad(w, self.x[c], self.y[c])

    def rounds(self, n):
        out = []
        for t in range(1, n + 1):
            self.sim.run_round(t)
            out.append(self.sim.srv.theta.clone().numpy())
        return out


def np_grad(theta, x, y):
    """Mean cross-entropy gradient of logits = xWᵀ + b (flat [W, b]): ((softmax − onehot)/n)."""
    W, b = theta[: C * D].reshape(C, D), theta[C * D:]
    z = x @ W.T + b
    z = z - z.max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    p[np.arange(len(y)), y] -= 1.0
    G = p / len(y)
    return np.concatenate([(G.T @ x).ravel(), G.sum(0)])
