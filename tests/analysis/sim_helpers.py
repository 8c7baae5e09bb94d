"""A tiny in-memory federated setting for the hook and stability tests."""
import torch

from fedflat.algorithms import PRESETS
from fedflat.data import ArrayDataset, make_partition
from fedflat.spec import RunSpec, check_training


def synthetic(n_train=96, n_test=40, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, 1, 3, 3, generator=g) * 2
    ytr = torch.randint(0, classes, (n_train,), generator=g)
    yte = torch.randint(0, classes, (n_test,), generator=g)
    xtr = centers[ytr] + torch.randn(n_train, 1, 3, 3, generator=g)
    xte = centers[yte] + torch.randn(n_test, 1, 3, 3, generator=g)
    return ArrayDataset("synthetic", xtr, ytr, xte, yte, classes)


def spec(algorithm="fedsam", model="mlp", rounds=3, analysis=None, hp=None, **training):
    tr = check_training({"num_clients": 4, "participation": 0.5, "rounds": rounds, "local_steps": 3,
                         "batch_size": 8, "lr": 0.1, "eval_every": 1, "checkpoint_every": 0, **training})
    kwargs = {"hidden": 8, "depth": 1} if model == "mlp" else {}
    return RunSpec("synthetic", "iid", model, algorithm, 0, PRESETS.get(algorithm).resolve(hp or {}), kwargs, tr,
                   analysis=analysis or {})


def partition(data, s, spec_str="iid"):
    return make_partition(data.train_y.numpy(), spec_str, s.num_clients, s.seed, num_classes=data.num_classes)
