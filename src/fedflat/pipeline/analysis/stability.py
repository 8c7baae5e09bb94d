"""Empirical stability (FedSAGD App. A.4, Fig. 2): train the same run twice from the same
initialisation with the same seeds, on two datasets that differ in one sample per client (or in one
client), and measure ‖x_t − x'_t‖₂ per round and at the end.

The neighbouring dataset is a partition variant. `neighbour: sample` (sample-level, Hardt et al.):
in every client, one index (a seeded random position) is replaced by a training index the client
does not hold (`same_label: true` draws it from the same class), in place: the client's index list
keeps its order, so the seeded mini-batch streams (training/fl/batches.py: permutations of positions) of the
two runs are identical except in the slots that draw the swapped sample.

`neighbour: client` (FedSAGD's Definition 3.4: client sets S, S^(i) that differ in one client): one
seeded client i is replaced by a new client of the same size (client i: a seeded choice among the
clients sampled in round 1, so that the two trainings separate from the first round; under partial
participation an arbitrary client may not be sampled for many rounds), every index drawn from the
training indices client i does not hold (without replacement while there are enough, else with),
with `same_label: true` each from the class of the index it replaces (so the new client has client
i's label histogram; a class the client holds entirely is replaced by any other samples), position
by position: the new client's batches hold new[j] exactly where client i's held old[j]. The other
clients are unchanged.

Both runs go through the engine's own round (`Simulation.run_round`) in lockstep, with the round
hooks switched off, so the curve needs no saved trajectory; the first run reproduces the trained
run exactly (same spec and seed), which the output records.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ...core.errors import ConfigError
from ...training.data import Partition
from ...training.fl.engine import Simulation

_SWAP_TAG = 0x57AB


def neighbouring_partition(part: Partition, labels: np.ndarray, seed: int, same_label: bool = False,
                           neighbour: str = "sample", candidates=None) -> tuple[Partition, list]:
    """One index per client (or every index of one client, a seeded choice among `candidates`
    when given) replaced; returns the new partition and [(client, old, new)]."""
    if neighbour == "client":
        return _client_neighbour(part, labels, seed, same_label, candidates)
    if neighbour != "sample":
        raise ConfigError(f"analysis.stability.neighbour: {neighbour!r} not allowed; allowed: sample, client")
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
        idx[pos] = new  # in place, no re-sort: every mini-batch slot keeps its sample but this one's
        clients.append(idx)
        swaps.append((cid, old, new))
    return _with(part, labels, clients, seed, same_label, "sample"), swaps


def _with(part: Partition, labels, clients, seed, same_label, neighbour) -> Partition:
    k = part.histogram.shape[1]
    hist = np.stack([np.bincount(labels[c], minlength=k) for c in clients])
    meta = {**part.meta, "neighbour_of": part.meta.get("spec"), "swap_seed": seed, "same_label": same_label,
            "neighbour": neighbour}
    return Partition(clients, hist, meta)


def _client_neighbour(part: Partition, labels: np.ndarray, seed: int, same_label: bool,
                      candidates=None) -> tuple[Partition, list]:
    rng = np.random.default_rng([seed, _SWAP_TAG, 1])
    sizes = [len(c) for c in part.clients]
    pick = [i for i in (range(len(sizes)) if candidates is None else candidates) if sizes[int(i)] > 0]
    if not pick:
        raise ConfigError("stability: no non-empty client to replace")
    cid = int(rng.choice(pick))
    old = np.asarray(part.clients[cid])
    pool = np.setdiff1d(np.arange(len(labels)), old)
    if len(pool) == 0:
        raise ConfigError(f"stability: client {cid} holds every training sample; no neighbouring client exists")
    if same_label:
        new = np.empty_like(old)
        for c in np.unique(labels[old]):
            pos = np.flatnonzero(labels[old] == c)
            cand = pool[labels[pool] == c]
            if len(cand) == 0:  # the client holds the whole class: any other sample
                cand = pool
            new[pos] = rng.choice(cand, len(pos), replace=len(cand) < len(pos))
    else:
        new = rng.choice(pool, len(old), replace=len(pool) < len(old))
    clients = [np.asarray(c).copy() for c in part.clients]
    clients[cid] = new  # position by position (no re-sort): slot j of every batch holds new[j] where it held old[j]
    swaps = [(cid, int(o), int(w)) for o, w in zip(old.tolist(), new.tolist())]
    return _with(part, labels, clients, seed, same_label, "client"), swaps


def lockstep_distances(sim_a, sim_b, rounds: int) -> list[float]:
    """Run two simulations round by round; ‖θ_a − θ_b‖₂ (in float64) after each of the first `rounds` rounds."""
    out = []
    for t in range(1, rounds + 1):
        for s in (sim_a, sim_b):
            s.run_round(t)
        out.append(float((sim_a.srv.theta - sim_b.srv.theta).double().norm()))
    return out


def paired_distance(spec, data, part_a: Partition, part_b: Partition, out_dir: str | Path,
                    device: str = "cpu") -> dict:
    """Train on both partitions in lockstep; ‖θ_t − θ'_t‖₂ after every round."""
    spec = replace(spec, analysis={})
    out_dir = Path(out_dir)
    sims = [Simulation(spec, data, p, out_dir / name, device=device, progress=False)
            for p, name in ((part_a, "a"), (part_b, "b"))]
    per_round = lockstep_distances(sims[0], sims[1], spec.rounds)
    ta, tb = sims[0].srv.theta, sims[1].srv.theta
    return {"distance": per_round[-1], "relative": per_round[-1] / max(float(ta.double().norm()), 1e-30),
            "per_round": per_round, "theta_a": ta.cpu(), "theta_b": tb.cpu()}
