"""Local-update discrepancy (FedSAGD Fig. 1, App. A.4): from one common start point x_t,

    D_k = max_{i≠j} ‖x^i_{t,k} − x^j_{t,k}‖₂        k = 0 … K   (D_0 = 0)

over a set of clients that each run the round's K local steps exactly as the engine does.

Readings of what the paper leaves open (App. A.4 says only "maximum discrepancy among client models"):
- which round: the hook measures after round t (every `every` rounds, the first and the last)
  the local trajectories of round t + 1, from that round's start point (the server's
  `start_point`, e.g. FedACG's look-ahead) with that round's mini-batches and learning rate;
  the figure averages D_k over the measured rounds (or shows one round).
- which clients: the clients sampled for round t + 1 (the ones that really train), padded with
  seeded other clients up to `min_clients` (≥ 2, so a pair exists at 1-client participation).
- K: the run's `local_steps`; columns `local_disc_k1 … local_disc_k{K}`. With training.local_epochs
  clients of different sizes run different K_i: D_k is defined while all measured clients still
  step, so the columns stop at the smallest K_i of the round's measured clients.
Local models are taken before uplink compression (x^i_{t,k} is the client's own iterate).

The measurement runs on copies (algorithm parts, server state, client state are copied, the
store is read-only, uplinks are not compressed, the global RNG is restored), so training is the
same with or without it.
Memory: n_clients × (K+1) parameter vectors while measuring.
"""
from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import torch

from ...training.fl.batches import sample_clients
from ...training.fl.round_hooks import RoundHook


class _ReadOnlyStore:
    """A client-state store view that hands out copies and forgets writes."""

    def __init__(self, store):
        self._store = store

    def get(self, cid: int) -> dict:
        return {k: v.clone() for k, v in self._store.get(cid).items()}

    def put(self, cid, state, t) -> None:
        return None


class _IterateRecorder(RoundHook):
    """Records the iterate x_{t,k} each local step starts from (the gradient is taken there)."""

    def __init__(self):
        super().__init__()
        self.iterates: list[torch.Tensor] = []

    def local_gradient(self, sim, ctx, w, batch, loss, g):
        self.iterates.append(w.detach().clone())
        return g


def measured_clients(sim, t: int, min_clients: int = 2) -> list[int]:
    """Round t's sampled clients, padded with seeded others (the same for every algorithm)."""
    spec = sim.spec
    cids = [int(c) for c in sample_clients(spec.seed, t, spec.num_clients, spec.clients_per_round)]
    if len(cids) < min_clients:
        rest = [c for c in np.random.default_rng([spec.seed, t, 0x10CA1]).permutation(spec.num_clients).tolist()
                if c not in cids]
        cids += rest[: min_clients - len(cids)]
    return cids


def local_trajectories(sim, t: int, cids: list[int]) -> torch.Tensor:
    """(clients, K+1, P): every client's iterates x_{t,0..K} of round t, without side effects on `sim`:
    the run's algorithm, server state and client states are replayed on copies (Simulation.evaluating_under)."""
    srv = replace(sim.srv, theta=sim.srv.theta.clone(), buffers=sim.srv.buffers.clone(),
                  state={k: v.clone() for k, v in sim.srv.state.items()}, extra=copy.deepcopy(sim.srv.extra), round=t)
    algo = copy.deepcopy(sim.algo)
    recorder = _IterateRecorder()
    trajs = []
    devices = ([sim.device.index if sim.device.index is not None else torch.cuda.current_device()]
               if sim.device.type == "cuda" else [])
    with sim.evaluating_under(algo, srv=srv, store=_ReadOnlyStore(sim.store), hooks=(recorder,)), \
            torch.random.fork_rng(devices=devices):
        start = algo.server.start_point(srv).clone()
        down: dict = {}
        for p in algo.parts:
            down.update(p.downlink(srv))
        torch.manual_seed(int(np.random.default_rng([sim.spec.seed, t]).integers(0, 2**62)))  # as run_round (dropout)
        for cid in cids:
            recorder.iterates.clear()
            res = sim.local_train(cid, t, start, down, sim.lr_at(t))
            if len(recorder.iterates) != res.steps:  # a fused local loop would bypass the recorder
                raise RuntimeError(f"local_discrepancy: recorded {len(recorder.iterates)} of {res.steps} local steps")
            trajs.append(torch.stack(recorder.iterates + [start + res.delta]))
    k1 = min(len(tr) for tr in trajs)  # unequal K_i (local_epochs): the steps every client takes
    return torch.stack([tr[:k1] for tr in trajs])


def max_pairwise(trajs: torch.Tensor) -> list[float]:
    """D_k = max_{i≠j} ‖x^i_k − x^j_k‖₂ for every k (NaN with fewer than two clients)."""
    n, k1 = trajs.shape[0], trajs.shape[1]
    if n < 2:
        return [float("nan")] * k1
    out = []
    for k in range(k1):
        x = trajs[:, k].double()
        out.append(float(torch.cdist(x.unsqueeze(0), x.unsqueeze(0)).max()))
    return out
