"""Filter-normalised random directions (Li et al. 2018, loss-landscape `net_plotter.py`).

For a parameter tensor with dim >= 2, a "filter" is one slice along dim 0 (a conv output channel,
a linear layer's neuron row). A Gaussian direction d is rescaled filter by filter:
    d_f <- d_f · ‖θ_f‖ / (‖d_f‖ + 1e-10)
so each filter of d has the norm of the model's filter, which removes the scale invariance of
ReLU networks from the picture.

Policy for 1-D parameters (biases, BatchNorm/GroupNorm affine weights), `one_d`:
  zero   (default; Li et al. ignore='biasbn') the direction is 0: these parameters stay fixed;
  weight (Li et al. without ignore) the direction equals θ itself for those tensors;
  filter each scalar is a filter: |d_i| = |θ_i| with a random sign.
BatchNorm running statistics are never perturbed (eval mode uses the global ones).

The direction depends only on (architecture, θ's filter norms, seed): draws are made on the CPU in
float64 in parameter order from a generator seeded with `seed`, so every algorithm trained on the
same architecture gets the same raw Gaussian directions.
"""
from __future__ import annotations

import torch

from ...core.errors import ConfigError
from ...training.fl.flat import FlatModel

ONE_D_POLICIES = ("zero", "weight", "filter")


def filter_normalize(raw: torch.Tensor, theta: torch.Tensor, fm: FlatModel, one_d: str = "zero") -> torch.Tensor:
    if one_d not in ONE_D_POLICIES:
        raise ConfigError(f"landscape.one_d: {one_d!r} not allowed; allowed: {', '.join(ONE_D_POLICIES)}")
    d = raw.clone()
    for (a, b), p in zip(fm.slices, fm.params):
        dv, tv = d[a:b].view(p.shape), theta[a:b].view(p.shape)
        if p.dim() <= 1:
            if one_d == "zero":
                dv.zero_()
            elif one_d == "weight":
                dv.copy_(tv)
            else:
                dv.copy_(torch.sign(dv) * tv.abs())
            continue
        df, tf = dv.reshape(p.shape[0], -1), tv.reshape(p.shape[0], -1)
        df.mul_((tf.norm(dim=1) / (df.norm(dim=1) + 1e-10)).unsqueeze(1))
    return d


def random_direction(fm: FlatModel, theta: torch.Tensor, seed: int, one_d: str = "zero") -> torch.Tensor:
    gen = torch.Generator().manual_seed(int(seed))
    raw = torch.randn(theta.numel(), generator=gen, dtype=torch.float64).to(device=theta.device, dtype=theta.dtype)
    return filter_normalize(raw, theta, fm, one_d)


def directions(fm: FlatModel, theta: torch.Tensor, seed: int, count: int, one_d: str = "zero") -> list[torch.Tensor]:
    """`count` directions from one seed (the i-th uses seed*1000+i, so the 1-D direction is the
    first direction of the 2-D plot)."""
    return [random_direction(fm, theta, seed * 1000 + i, one_d) for i in range(count)]
