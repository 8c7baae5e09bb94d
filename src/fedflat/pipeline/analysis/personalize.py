"""Personalized-FL evaluation (FedSOL Table 9, App. D; per-client local test sets as test_align in github.com/Lee-Gihun/FedSOL).

One module for every row of Table 9, run as the `personalize` round hook at the final round of a
training run (so its numbers land in metrics.csv, a declared output, and the in-process builder
and the DAG need nothing extra):

* local test set of client k: for each class c, int(T · p_c^k) test images drawn without
  replacement from the class-c test images (p_c^k = the client's training label proportions,
  T = `test_per_client`, 1000 as the FedSOL code's `test_align`; capped by what the test split
  holds, which matters only for the tiny digits stand-ins). Seeded by (test_seed, client), so
  every algorithm and seed of a dataset evaluates client k on the same images.
* mode finetune (FedAvg, PerFedAvg, FedBABU, kNN-Per, FedSOL-FT): every client fine-tunes the
  final global model on its own training split for e epochs with plain cross-entropy SGD (the
  run's momentum, weight decay, batch size and augmentation; no perturbation, no correction, no
  loss term) at the server's current lr (lr_0·decay^T, the code's scheduler state), then is
  evaluated on its local test set. One epoch = ⌈n_k/B⌉ mini-batches, the last one partial (the
  engine's training.local_epochs; the FedSOL code's `finetune` iterates its DataLoader
  ft_epochs times). The fine-tuning is the engine's own local loop
  (Simulation.local_train) with the algorithm swapped for FedAvg: no copy of a training loop.
  e = 0 evaluates the global model itself.
* kNN-Per (runs whose algorithm carries the knn_* hyperparameters): after fine-tuning, the
  client's datastore holds the penultimate features (the head's input, eval mode, no
  augmentation) of at most `knn_capacity` of its training images; a test image's kNN
  distribution is p_kNN(y) = Σ_{j∈N_k} w_j 1[y_j = y] / Σ_j w_j with w_j = exp(−‖φ − φ_j‖²/(D·s)),
  D the feature dimension (FedSOL code's kernel); prediction argmax of
  λ p_kNN + (1 − λ) softmax(logits) (knn_mix=logits: the code's mix with raw logits).
* mode local (Local-only): the run is 1 round in which every client trains alone from the common
  initialisation; each client's own end-of-round model is evaluated on its local test set.

Columns (at the final round): pers_acc_e<e> = mean over clients of the local test accuracy (%),
pers_std_e<e> = its standard deviation across clients (population std, ddof 0), pers_clients.
Mode local writes the same numbers under every e. The per-client accuracies go to
personal.json in the run directory (for tracing; the tables read metrics.csv).
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

from ...core.errors import ConfigError
from ...core.util.io import write_json
from ...training.algorithms import build_algorithm
from ...training.algorithms.losses import head_name
from .analysis_hooks import AnalysisHook, _choice, _int, _num, register

_TEST_TAG = 0x7E57
_STORE_TAG = 0x5702


def _epochs(key, v):
    if not isinstance(v, list) or not v or any(isinstance(e, bool) or not isinstance(e, int) or e < 0 for e in v):
        raise ConfigError(f"{key}: a non-empty list of integers >= 0 (fine-tuning epochs), got {v!r}")
    return list(dict.fromkeys(v))


# ----------------------------------------------------------------------------- local test sets
def local_test_indices(train_labels: np.ndarray, test_labels: np.ndarray, num_classes: int, per_client: int,
                       rng: np.random.Generator) -> np.ndarray:
    """int(T·p_c) test indices of each class c, without replacement (capped by the class's count)."""
    hist = np.bincount(train_labels, minlength=num_classes).astype(float)
    p = hist / max(hist.sum(), 1.0)
    out = []
    for c in range(num_classes):
        pool = np.flatnonzero(test_labels == c)
        n = min(int(per_client * p[c]), len(pool))
        if n > 0:
            out.append(rng.choice(pool, size=n, replace=False))
    return np.sort(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)


# ----------------------------------------------------------------------------- model outputs
@torch.inference_mode()
def outputs(fm, theta: torch.Tensor, buffers: torch.Tensor, x: torch.Tensor, batch_size: int = 1024,
            features: bool = False) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    """Logits (and the head's input features) of the model `theta` on x, eval mode."""
    fm.load(theta, buffers)
    module = fm.module
    was = module.training
    module.eval()
    feats: list[torch.Tensor] = []
    handle = None
    if features:
        head = getattr(module, head_name(module))
        handle = head.register_forward_pre_hook(lambda mod, inp: feats.append(inp[0].flatten(1)))
    try:
        logits = torch.cat([module(x[s:s + batch_size]) for s in range(0, len(x), batch_size)]) if len(x) else \
            torch.zeros(0)
    finally:
        if handle is not None:
            handle.remove()
        module.train(was)
    return logits, (torch.cat(feats) if features and feats else None)


def knn_probs(query: torch.Tensor, store: torch.Tensor, store_y: torch.Tensor, k: int, scale: float,
              num_classes: int) -> torch.Tensor:
    """p_kNN(y|x) with kernel weights exp(−‖φ(x) − φ_j‖² / (D·scale)) over the k nearest φ_j."""
    d2 = torch.cdist(query, store).pow(2)
    kk = min(k, len(store))
    vals, idx = d2.topk(kk, dim=1, largest=False)
    # shifting by the row minimum leaves the normalised weights unchanged and avoids underflow
    w = torch.exp(-(vals - vals[:, :1]) / (query.shape[1] * scale))
    p = torch.zeros(len(query), num_classes, dtype=w.dtype, device=w.device)
    p.scatter_add_(1, store_y[idx], w)
    return p / w.sum(1, keepdim=True)


def knn_mix(logits: torch.Tensor, p_knn: torch.Tensor, weight: float, mix: str = "probs") -> torch.Tensor:
    base = F.softmax(logits, dim=1) if mix == "probs" else logits
    return weight * p_knn + (1.0 - weight) * base


# ----------------------------------------------------------------------------- fine-tuning
def plain_sgd(sim, epochs: int):
    """The simulation's local loop with the algorithm swapped for FedAvg (no perturbation,
    correction or loss term, no uplink compression) and `epochs` local epochs, for a `with` block."""
    return sim.evaluating_under(build_algorithm("fedavg", {}), training={"local_epochs": epochs})


def fine_tune(sim, cid: int, theta: torch.Tensor, epochs: int, lr: float, t: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(weights, buffers) after `epochs` passes of plain SGD over client cid's training split."""
    with plain_sgd(sim, epochs):
        res = sim.local_train(cid, t, theta, {}, lr)
    return res.end, res.buffers


# ----------------------------------------------------------------------------- the hook
@register("personalize")
class PersonalizeHook(AnalysisHook):
    """FedSOL Table 9: personalized accuracy on local test sets after e epochs of local fine-tuning."""

    PARAMS = {"epochs": ([1, 5], _epochs), "mode": ("finetune", _choice("finetune", "local")),
              "test_per_client": (1000, _int(1)), "test_seed": (0, _int(0)), "clients": (0, _int(0)),
              "lr_scale": (1.0, _num(0.0)), "batch_size": (1024, _int(1))}

    def on_start(self, sim) -> None:
        self._tests: dict[int, np.ndarray] = {}
        if self.mode == "local" and sim.spec.rounds != 1:
            raise ConfigError(f"analysis.hooks.personalize.mode: 'local' (Local-only) needs training.rounds = 1, "
                              f"got {sim.spec.rounds}: the local models must never have been averaged")

    def test_set(self, sim, cid: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not hasattr(self, "_tests"):
            self._tests = {}
        if cid not in self._tests:
            data = sim.data
            rng = np.random.default_rng([self.test_seed, cid, _TEST_TAG])
            tr = data.train_y[sim.client_idx[cid]].cpu().numpy()
            self._tests[cid] = local_test_indices(tr, data.test_y.cpu().numpy(), data.num_classes,
                                                  self.test_per_client, rng)
        idx = torch.as_tensor(self._tests[cid], device=sim.data.test_y.device)
        return sim.data.normalise(sim.data.test_x[idx]), sim.data.test_y[idx]

    def accuracy(self, sim, cid: int, theta, buffers) -> float:
        x, y = self.test_set(sim, cid)
        if len(y) == 0:
            return float("nan")
        hp = sim.algo.hp
        knn = "knn_k" in hp
        logits, feats = outputs(sim.fm, theta, buffers, x, self.batch_size, features=knn)
        if knn:
            idx = sim.client_idx[cid]
            rng = np.random.default_rng([self.test_seed, cid, _STORE_TAG])
            if len(idx) > hp["knn_capacity"]:
                idx = idx[torch.as_tensor(np.sort(rng.choice(len(idx), hp["knn_capacity"], replace=False)),
                                          device=idx.device)]
            _, store = outputs(sim.fm, theta, buffers, sim.data.normalise(sim.data.train_x[idx]), self.batch_size,
                               features=True)
            p = knn_probs(feats, store, sim.data.train_y[idx], hp["knn_k"], hp["knn_scale"], sim.data.num_classes)
            logits = knn_mix(logits, p, hp["knn_weight"], hp["knn_mix"])
        return 100.0 * float((logits.argmax(1) == y).float().mean())

    def on_round_end(self, sim, t, rnd, row) -> dict:
        if t != sim.spec.rounds:
            return {}
        per_e: dict[int, dict[int, float]] = {}
        if self.mode == "local":
            accs = {c.cid: self.accuracy(sim, c.cid, c.end, c.buffers) for c in rnd.clients}
            per_e = {e: accs for e in self.epochs}
        else:
            theta, bufs = sim.srv.theta, sim.srv.buffers
            cids = range(self.clients or sim.spec.num_clients)
            lr = sim.lr_at(t + 1) * self.lr_scale
            for e in self.epochs:
                per_e[e] = {}
                for cid in cids:
                    w, b = (theta, bufs) if e == 0 else fine_tune(sim, cid, theta, e, lr, t + 1)
                    per_e[e][cid] = self.accuracy(sim, cid, w, b)
        out: dict = {}
        for e, accs in per_e.items():
            v = np.array([a for a in accs.values() if np.isfinite(a)])
            out[f"pers_acc_e{e}"] = float(v.mean()) if len(v) else float("nan")
            out[f"pers_std_e{e}"] = float(v.std()) if len(v) else float("nan")
        out["pers_clients"] = len(next(iter(per_e.values())))
        write_json(sim.out.dir / "personal.json",
                   {"mode": self.mode, "params": self.params, "algorithm": sim.spec.algorithm,
                    "per_client": {f"e{e}": {str(k): v for k, v in accs.items()} for e, accs in per_e.items()},
                    **out})
        return out
