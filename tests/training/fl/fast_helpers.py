"""Shared by the fast-path tests: a tiny image problem (1x6x6, 3 classes, 3 clients of 8 samples) and
a Simulation on it with clipping, weight decay and local momentum on, so every term of the local step
runs; FedSynSAM's synthetic set as after its distillation."""
import numpy as np
import torch

from fedflat.training.algorithms import PRESETS
from fedflat.training.data.augment import random_hflip
from fedflat.training.data.array_dataset import ArrayDataset
from fedflat.training.data.partition import Partition
from fedflat.training.fl.engine import Simulation
from fedflat.core.spec import RunSpec, check_training

CLIENTS, PER, C = 3, 8, 3


def _problem():
    g = torch.Generator().manual_seed(0)
    n = CLIENTS * PER
    x = torch.randint(0, 256, (n, 1, 6, 6), generator=g, dtype=torch.uint8)
    y = torch.randint(0, C, (n,), generator=g)
    data = ArrayDataset("tiny_img", x, y, x[:6], y[:6], C, mean=torch.tensor([0.5]), std=torch.tensor([0.25]))
    clients = [np.arange(i * PER, (i + 1) * PER) for i in range(CLIENTS)]
    hist = np.stack([np.bincount(y[c].numpy(), minlength=C) for c in clients])
    return data, Partition(clients, hist, {"spec": "manual", "seed": 0})


def _sim(tmp_path, model, algorithm, backend, hp=None, augment=False, uplink=None, **tr):
    data, part = _problem()
    if augment:  # random flips drawn from the per-(seed, round, client) generator, eagerly
        data.augment = lambda x, gen: random_hflip(x, gen)
    training = check_training({"num_clients": CLIENTS, "participation": 1.0, "rounds": 1, "local_steps": 3,
                               "batch_size": 4, "lr": 0.2, "weight_decay": 1e-3, "local_momentum": 0.5,
                               "clip_grad_norm": 1.0, "checkpoint_every": 0, "backend": backend, **tr})
    spec = RunSpec("tiny_img", "manual", model, algorithm, 0, PRESETS.get(algorithm).resolve(hp or {}), {}, training,
                   {}, dict(uplink or {}))
    return Simulation(spec, data, part, tmp_path / backend, progress=False)


def _with_synthetic_set(sim, n=5, seed=1):
    """FedSynSAM as after its distillation: D_syn in the server state (no trajectory to record)."""
    g = torch.Generator().manual_seed(seed)
    sim.srv.state.pop("syn_traj", None)
    sim.srv.state["syn_x"] = torch.randn((n, 1, 6, 6), generator=g)
    sim.srv.state["syn_y"] = torch.arange(n) % C
    return sim


SYN_HP = {"rho": 0.5, "beta": 0.3, "syn_round": 1, "syn_steps": 1}
Q4 = {"kind": "quant", "bits": 4}
