"""Client-drift measurements on one round's local models (all flat over trainable parameters).

  global-local divergence (FedSOL Fig. 6a):  mean_i ‖w_i,K − w_start‖₂, w_start = the model the
      clients received (start point; the look-ahead point for FedNSAM/FedACG)
  model divergence (FedTOGA Fig. 8, metric undefined; a best reading): mean_i ‖w_i,K − θ^{t+1}‖² to the new
      global model, and mean_i ‖w_i,K − w_start‖²
  divergence across local models (FedSOL Fig. 6b): mean pairwise ‖w_i − w_j‖₂ over sampled clients,
      and mean ‖w_i − w̄‖₂ to their (unweighted) mean
  proximal loss (FedSOL Fig. 3a): mean_i KL(softmax(f_start/T) ‖ softmax(f_i/T)) on client i's own
      non-augmented training data, T = 3, 'batchmean' (FedSOL code), eval mode
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ...training.fl.flat import FlatModel
from .loaded_run import Batches, eval_mode


def weight_divergence(ends: torch.Tensor, start: torch.Tensor, new_global: torch.Tensor) -> dict:
    """ends: (S, n) local models; start: (n,) or (S, n) start points; new_global: (n,)."""
    to_start = (ends - start).norm(dim=1)
    to_new = (ends - new_global).norm(dim=1)
    mean = ends.mean(0)
    S = ends.shape[0]
    pair = torch.cdist(ends.unsqueeze(0).double(), ends.unsqueeze(0).double())[0] if S > 1 else None
    return {
        "div_global_local": float(to_start.mean()),
        "div_global_local_sq": float((to_start**2).mean()),
        "div_new_global_sq": float((to_new**2).mean()),
        "div_pairwise": float(pair.sum() / (S * (S - 1))) if S > 1 else 0.0,
        "div_to_mean": float((ends - mean).norm(dim=1).mean()),
    }


@torch.no_grad()
def proximal_kl(fm: FlatModel, local: torch.Tensor, local_buf: torch.Tensor, ref: torch.Tensor,
                ref_buf: torch.Tensor, batches: Batches, temperature: float = 3.0) -> float:
    """KL(p_ref ‖ p_local) with temperature, averaged over samples."""
    total, n = 0.0, 0
    with eval_mode(fm.module):
        for x, y in batches:
            fm.load(ref, ref_buf)
            p_ref = F.softmax(fm.module(x) / temperature, dim=1)
            fm.load(local, local_buf)
            logq = F.log_softmax(fm.module(x) / temperature, dim=1)
            total += float(F.kl_div(logq, p_ref, reduction="sum"))
            n += len(y)
    return total / max(n, 1)
