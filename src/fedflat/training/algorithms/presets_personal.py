"""Personalized-FL comparators of FedSOL Table 9 (App. D).

Training-side parts, as compositions of the usual vocabulary; the personalization evaluation
itself (fine-tuning, local test sets, kNN interpolation) is one module for every row:
fedflat/pipeline/analysis/personalize.py (the `personalize` round hook).

* PerFedAvg (Fallah et al. 2020), first-order MAML step (`perfedavg` perturbation): per local step
  the engine's mini-batch ζ is split into two halves D, D′;
      w′ = w − α ∇f(w; D)            (inner step, α = the round's lr, as the FedSOL code's step 1)
      g  = ∇f(w′; D′)                 (outer gradient at the adapted point)
  and the step applied is w ← w − β g. The engine multiplies by the round's lr, so the part
  returns (β/lr)·g (momentum/weight decay then act as in every preset; the code's outer step
  applies its weight decay with lr β instead of the round's lr, a 1e-5-sized difference).
  The FedSOL code draws two full mini-batches per meta-step; here one engine batch is split
  (each half B/2), so a meta-step costs the data of one step. β = 0.01 (code config).
* FedBABU (Oh et al. 2022): the head (the model's last child with parameters, as FedSOL's head)
  is frozen during federated training: its gradient is zeroed every step and the head is reset
  to the received value at the end of the round (so weight decay cannot move it either); the
  head therefore stays at its random initialisation. Personalization fine-tunes all layers.
* kNN-Per (Marfoq et al. 2022): federated training is FedAvg; the `knn_personal` part carries the
  datastore hyperparameters (capacity 500, k 5, interpolation weight 0.5, kernel scale 1; FedSOL
  code) into the run's configuration, where the personalize hook reads them. No training effect.
* Local-only: FedAvg parts run for 1 round with every client and many local steps (the FedSOL
  code's "1 round, all clients, 200 local epochs"); the personalize hook in `mode: local` then
  evaluates each client's own local model on its local test set (no communication is used).
"""
from __future__ import annotations

from .parts import Correction, Param, Perturbation
from .corrections import CORRECTIONS
from .losses import head_name, layout, model_of
from .perturbations import PERTURBATIONS
from .presets import preset


@PERTURBATIONS.register("perfedavg")
class PerFedAvgPerturbation(Perturbation):
    """First-order Per-FedAvg meta-step (Fallah et al. 2020, Alg. 1 with the FO approximation):
    g = (β/lr) ∇f(w − lr ∇f(w; D); D′), D/D′ the two halves of the step's mini-batch: two passes
    over half a batch each, i.e. one batch's worth of sample-gradients (what grad_evals counts)."""

    name = "perfedavg"
    grad_evals = 1
    params = {"perfed_beta": Param(0.01, "outer (meta) step size β of Per-FedAvg", low=0.0)}

    def gradient(self, ctx, w, batch, grad_at):
        x, y = batch
        h = len(y) // 2
        if h == 0:  # a one-sample batch: both halves are the same sample
            d1 = d2 = (x, y)
        else:
            d1, d2 = (x[:h], y[:h]), (x[h:], y[h:])
        loss, g1 = grad_at(w, d1)
        adapted = w - ctx.lr * g1  # computed before the next call reuses g1's buffer
        _, g2 = grad_at(adapted, d2)
        return loss, g2 * (self.perfed_beta / ctx.lr)


def head_slices(model) -> list[slice]:
    head = head_name(model) + "."
    return [s for n, s, _ in layout(model) if n.startswith(head)]


@CORRECTIONS.register("freeze_head")
class FreezeHead(Correction):
    """FedBABU: no update of the head during federated training (gradient zeroed each step, the
    head reset to the received value at the end of the round)."""

    name = "freeze_head"

    def client_begin(self, ctx):
        ctx.scratch["frozen"] = head_slices(model_of(ctx, self.name))

    def adjust(self, ctx, w, g):
        g = g.clone()
        for s in ctx.scratch["frozen"]:
            g[s] = 0.0
        return g

    def client_end(self, ctx, w):
        for s in ctx.scratch["frozen"]:
            w[s] = ctx.start[s]
        return {}


@CORRECTIONS.register("knn_personal")
class KNNPersonal(Correction):
    """kNN-Per's datastore settings (used by the personalize hook after training; no training effect)."""

    name = "knn_personal"
    params = {
        "knn_k": Param(5, "neighbours k", low=1),
        "knn_capacity": Param(500, "datastore capacity (random subset of the client's training features)", low=1),
        "knn_weight": Param(0.5, "interpolation weight λ of the kNN distribution", low=0.0, high=1.0),
        "knn_scale": Param(1.0, "kernel scale s: weight exp(−‖φ−φ_j‖² / (dim·s))", low=0.0, low_open=True),
        "knn_mix": Param("probs", "mix kNN with the model's probabilities (kNN-Per) or raw logits (FedSOL code)",
                         choices=("probs", "logits")),
    }

    def adjust(self, ctx, w, g):
        return g


SRC = "FedSOL Table 9 / App. D"
# Evaluated per client (fine-tuned or local models), not as one global model: comparisons of global models
# (fedflat.leaderboard) refuse them.
PERSONAL_PRESETS = ("perfedavg", "fedbabu", "knnper", "localonly")
preset("perfedavg", "PerFedAvg", "perfedavg", "mean", f"Fallah et al. 2020 (Per-FedAvg, first-order); {SRC}",
       defaults={"perfed_beta": 0.01})
preset("fedbabu", "FedBABU", "none", "mean", f"Oh et al. 2022 (FedBABU: head frozen during FL); {SRC}",
       corrections=("freeze_head",))
preset("knnper", "kNN-Per", "none", "mean", f"Marfoq et al. 2022 (kNN-Per: FedAvg + local kNN datastore); {SRC}",
       corrections=("knn_personal",))
preset("localonly", "Local-only", "none", "mean", f"no communication: 1 round, every client, many local steps; {SRC}")
