"""Natural partitions: datasets whose clients are given by the data (Shakespeare: one per role).

A dataset with a natural split sets `meta["train_groups"]` (client id per training sample) and
`meta["clients"]` (names). `natural_partition` turns that into the same Partition artifact the
synthetic partitioners produce, so the engine needs no special case. Wiring a `natural` spec
into partition.parse_partition / the `partition` CLI is left to that module's owner (it needs the
dataset, not only the labels): call this function when the spec is "natural".
"""
from __future__ import annotations

import numpy as np

from ...core.errors import ConfigError
from .array_dataset import ArrayDataset
from .partition import Partition


def has_natural_partition(ds: ArrayDataset) -> bool:
    return "train_groups" in ds.meta


def natural_partition(ds: ArrayDataset, num_clients: int | None = None, seed: int = 0) -> Partition:
    """One client per natural group; with `num_clients` < #groups, a seeded subset of groups."""
    if not has_natural_partition(ds):
        raise ConfigError(f"partition: 'natural' needs a dataset with natural clients (e.g. shakespeare); "
                          f"{ds.name} has none")
    groups = np.asarray(ds.meta["train_groups"])
    labels = np.asarray(ds.train_y)
    ids = np.unique(groups)
    if num_clients is not None:
        if num_clients > len(ids):
            raise ConfigError(f"num_clients: {num_clients} exceeds the {len(ids)} natural clients of {ds.name}")
        ids = np.sort(np.random.default_rng([seed, 0x4A7]).choice(ids, num_clients, replace=False))
    clients = [np.flatnonzero(groups == g).astype(np.int64) for g in ids]
    hist = np.stack([np.bincount(labels[c], minlength=ds.num_classes) for c in clients])
    names = ds.meta.get("clients")
    meta = {"spec": "natural", "kind": "natural", "params": {}, "num_clients": len(clients), "seed": seed,
            "num_samples": int(len(labels)),
            "client_names": [names[int(g)] for g in ids] if names is not None else None}
    return Partition(clients, hist, meta)
