"""Empirical stability (FedSAGD App. A.4, notes 001 §6): train the same run twice from the same
initialisation with the same seeds, on two datasets that differ in one sample per client, and
measure ‖x_t − x'_t‖₂ per round and at the end.

The neighbouring dataset is a partition variant: in every client, one index (a seeded random
position) is replaced by a training index the client does not hold (`same_label: true` draws it
from the same class). Both runs go through the engine's own round (`Simulation.run_round`) in
lockstep, with the round hooks switched off, so the curve needs no saved trajectory; the first
run reproduces the trained run exactly (same spec and seed), which the output records.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ..data import Partition
from ..errors import ConfigError

_SWAP_TAG = 0x57AB


def neighbouring_partition(part: Partition, labels: np.ndarray, seed: int, same_label: bool = False) -> tuple[Partition, list]:
    """One index per client replaced; returns the new partition and [(client, old, new)]."""
    rng = np.random.default_rng([seed, _SWAP_TAG])
    n = len(labels)
    clients, swaps = [], []
    for cid, idx in enumerate(part.clients):
        idx = np.asarray(idx).copy()
        if len(idx) == 0:
            clients.append(idx)
            continue
        pos = int(rng.integers(len(idx)))
        old = int(idx[pos])
        pool = np.setdiff1d(np.flatnonzero(labels == labels[old]) if same_label else np.arange(n), idx)
        if len(pool) == 0:
            raise ConfigError(f"stability: client {cid} holds every candidate sample; no neighbouring dataset exists")
        new = int(rng.choice(pool))
        idx[pos] = new
        clients.append(np.sort(idx))
        swaps.append((cid, old, new))
    k = part.histogram.shape[1]
    hist = np.stack([np.bincount(labels[c], minlength=k) for c in clients])
    meta = {**part.meta, "neighbour_of": part.meta.get("spec"), "swap_seed": seed, "same_label": same_label}
    return Partition(clients, hist, meta), swaps


def paired_distance(spec, data, part_a: Partition, part_b: Partition, out_dir: str | Path,
                    device: str = "cpu") -> dict:
    """Train on both partitions in lockstep; ‖θ_t − θ'_t‖₂ after every round."""
    from ..fl.engine import Simulation

    spec = replace(spec, analysis={})
    out_dir = Path(out_dir)
    sims = [Simulation(spec, data, p, out_dir / name, device=device, progress=False)
            for p, name in ((part_a, "a"), (part_b, "b"))]
    per_round = []
    for t in range(1, spec.rounds + 1):
        for s in sims:
            s.run_round(t)
        per_round.append(float((sims[0].srv.theta - sims[1].srv.theta).double().norm()))
    ta, tb = sims[0].srv.theta, sims[1].srv.theta
    return {"distance": per_round[-1], "relative": per_round[-1] / max(float(ta.double().norm()), 1e-30),
            "per_round": per_round, "theta_a": ta.cpu(), "theta_b": tb.cpu()}
