"""FedRCL (Seo, Kim, Kim & Han, CVPR 2024, "Relaxed Contrastive Learning for Federated Learning"):
a supervised contrastive term on the local features plus a divergence penalty on same-class pairs
that are already too similar. FedTOGA compares against it (Table 1) without giving settings; the
defaults are the original's (its public config): τ = 0.05, λ = 0.7, β = 1, weight 1.

With f_i = z_i/‖z_i‖ the features of mini-batch sample i (the head's input), s_ij = f_iᵀf_j,
P_i = {j ≠ i: y_j = y_i}, A_i = {j ≠ i}, and Q_i = {j ∈ P_i: s_ij > λ} (pairs above the threshold):

    SCL_i = −1/|P_i| Σ_{p∈P_i} log( exp(s_ip/τ) / Σ_{a∈A_i} exp(s_ia/τ) )     (Khosla et al. 2020)
    DIV_i = −log( exp(1/τ) / (exp(1/τ) + Σ_{j∈Q_i} exp(s_ij/τ)) )
          = log(1 + Σ_{j∈Q_i} exp((s_ij − 1)/τ))                                 (the relaxation)
    L_RCL = mean_{i: P_i≠∅} SCL_i + β mean_i DIV_i ;   loss = CE + w · L_RCL

DIV treats the anchor itself (s_ii = 1) as its only positive and the too-similar same-class
samples as negatives, so ∂DIV_i/∂s_ij > 0 on Q_i: descent pushes those pairs apart until they
fall under λ; below λ it is exactly 0 (SCL alone would collapse each class to a point).
Deviation: the original averages L_RCL over the outputs of every ResNet stage (multi-level);
here it is applied to the penultimate features only (the same features for every model).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .parts import Param
from .corrections import CORRECTIONS
from .losses import LossTerm, head_name, model_of
from .presets import preset

_STORE = "_fedflat_rcl_store"


def rcl_loss(z: torch.Tensor, y: torch.Tensor, tau: float, lam: float, beta: float) -> torch.Tensor:
    """L_RCL of the module docstring on features z (B × d) with labels y."""
    f = F.normalize(z.flatten(1), dim=1)
    s = f @ f.T
    eye = torch.eye(len(y), dtype=torch.bool, device=z.device)
    pos = (y.view(-1, 1) == y.view(1, -1)) & ~eye
    logits = (s / tau).masked_fill(eye, float("-inf"))
    lse = torch.logsumexp(logits, dim=1)
    npos = pos.sum(1)
    has = npos > 0
    zero = s.new_zeros(())
    scl_i = lse - torch.where(pos, logits, zero).sum(1) / npos.clamp(min=1)
    scl = scl_i[has].mean() if bool(has.any()) else zero
    if beta == 0.0:
        return scl
    over = pos & (s.detach() > lam)
    e = torch.where(over, (s - 1.0) / tau, torch.full_like(s, float("-inf")))
    div = torch.logsumexp(torch.cat([torch.zeros_like(s[:, :1]), e], 1), dim=1)  # log(1 + Σ exp(...))
    return scl + beta * div.mean()


@CORRECTIONS.register("rcl")
class RCLLoss(LossTerm):
    """FedRCL's relaxed contrastive term (module docstring) on the penultimate features of the
    local model (captured by a forward pre-hook on the head, as MOON does). No state, 1× up/down."""

    name = "rcl"
    params = {"rcl_weight": Param(1.0, "weight w of L_RCL next to the cross-entropy", low=0.0),
              "rcl_beta": Param(1.0, "weight β of the divergence penalty", low=0.0),
              "rcl_tau": Param(0.05, "temperature τ", low=0.0, low_open=True),
              "rcl_lambda": Param(0.7, "similarity threshold λ above which same-class pairs are pushed apart",
                                  low=-1.0, high=1.0)}

    def client_begin(self, ctx):
        model = model_of(ctx, self.name)
        if model.__dict__.get(_STORE) is None:
            store: dict = {}
            model.__dict__[_STORE] = store
            getattr(model, head_name(model)).register_forward_pre_hook(
                lambda mod, inp: store.__setitem__("z", inp[0]) if torch.is_grad_enabled() else None)

    def loss_term(self, ctx, logits, x, y, model):
        if self.rcl_weight == 0.0:
            return None
        z = model.__dict__[_STORE]["z"]  # captured by this (grad-enabled) forward
        return self.rcl_weight * rcl_loss(z, y, self.rcl_tau, self.rcl_lambda, self.rcl_beta)


preset("fedrcl", "FedRCL", "none", "mean",
       "Seo et al. 2024 (FedRCL) SCL + divergence penalty; defaults of the original (τ=0.05, λ=0.7, β=1)",
       corrections=["rcl"])
