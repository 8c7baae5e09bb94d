"""Tiny float64 federated problems for the SAM-family tests, and an independent reference:
plain tensors + autograd on a linear softmax model or a one-hidden-layer ReLU MLP. Nothing here
calls fedflat's parts; only the simulation under test is built through fedflat."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from fedflat.training.algorithms import PRESETS
from fedflat.training.fl.engine import Simulation
from fedflat.core.spec import RunSpec, check_training
from foundation_helpers import C, tiny_problem as base_tiny_problem

D, H = 5, 4  # input dim, MLP hidden width (C classes from foundation_helpers)


def tiny_problem(num_clients=3, per_client=6, seed=1):
    data, part, x, y, clients = base_tiny_problem(num_clients, per_client, seed, dim=D)
    return data, part, torch.tensor(x), torch.tensor(y), clients


def make_sim(algorithm, hparams, tmp_path, arch="linear", num_clients=3, per_client=6, local_steps=2, lr=0.2,
             rounds=2, participation=1.0, **tr):
    data, part, x, y, clients = tiny_problem(num_clients, per_client)
    training = check_training({"num_clients": num_clients, "participation": participation, "rounds": rounds,
                               "local_steps": local_steps, "batch_size": per_client, "lr": lr, "lr_decay": 1.0,
                               "weight_decay": 0.0, "clip_grad_norm": 0.0, "eval_every": 1, "checkpoint_every": 0, **tr})
    model, kw = ("linear", {}) if arch == "linear" else ("mlp", {"hidden": H, "depth": 1})
    spec = RunSpec("tiny", "manual", model, algorithm, 0, PRESETS.get(algorithm).resolve(hparams), kw, training)
    sim = Simulation(spec, data, part, tmp_path, progress=False)
    return sim, x, y, [torch.as_tensor(c) for c in clients]


def run(sim, rounds):
    thetas = [sim.srv.theta.clone()]
    for t in range(1, rounds + 1):
        sim.run_round(t)
        thetas.append(sim.srv.theta.clone())
    return thetas


# ------------------------------------------------------------------------- reference model
def unpack(theta, arch):
    """Linear: [W (C×D), b]; MLP: [W1 (H×D), b1, W2 (C×H), b2] (nn.Linear's weight-then-bias order)."""
    if arch == "linear":
        return {"W": theta[: C * D].view(C, D), "b": theta[C * D :]}
    o = 0
    out = {}
    for k, shape in (("W1", (H, D)), ("b1", (H,)), ("W2", (C, H)), ("b2", (C,))):
        n = int(np.prod(shape))
        out[k] = theta[o : o + n].view(shape)
        o += n
    return out


def tensor_slices(arch):
    """Flat index ranges of each parameter tensor and whether it is the head (last layer)."""
    if arch == "linear":
        return [(slice(0, C * D), True), (slice(C * D, C * D + C), True)]
    a, b, c = H * D, H * D + H, H * D + H + C * H
    return [(slice(0, a), False), (slice(a, b), False), (slice(b, c), True), (slice(c, c + C), True)]


def forward(theta, x, arch):
    """(logits, penultimate features)."""
    p = unpack(theta, arch)
    if arch == "linear":
        return x @ p["W"].T + p["b"], x
    z = torch.relu(x @ p["W1"].T + p["b1"])
    return z @ p["W2"].T + p["b2"], z


def ce(theta, x, y, arch="linear"):
    return F.cross_entropy(forward(theta, x, arch)[0], y)


def grad(loss_fn, theta):
    t = theta.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(loss_fn(t), t)
    return g


def ce_grad(theta, x, y, arch="linear"):
    return grad(lambda t: ce(t, x, y, arch), theta)


def unit(v):
    n = v.norm()
    return v / n if n > 0 else torch.zeros_like(v)
