"""Tiny models and data for the analysis tests."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call



def tiny_mlp(seed=0, d_in=4, hidden=6, classes=3, unused=False):
    torch.manual_seed(seed)
    m = nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(), nn.Linear(hidden, classes)).double()
    return WithUnused(m) if unused else m


class WithUnused(nn.Module):
    """A network with a parameter the loss never reaches (PyHessian #12)."""

    def __init__(self, body):
        super().__init__()
        self.body = body
        self.extra = nn.Linear(2, 2).double()

    def forward(self, x):
        return self.body(x)


def tiny_data(n=64, d_in=4, classes=3, seed=1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=g, dtype=torch.float64)
    y = torch.randint(0, classes, (n,), generator=g)
    return x, y


def exact_hessian(module, x, y):
    """Dense Hessian of the mean cross-entropy w.r.t. all used parameters (flat, in order)."""
    names = [n for n, p in module.named_parameters() if not n.startswith("extra")]
    shapes = [dict(module.named_parameters())[n].shape for n in names]
    flat0 = torch.cat([dict(module.named_parameters())[n].detach().reshape(-1) for n in names])

    def f(flat):
        ps, off = {}, 0
        for n, s in zip(names, shapes):
            k = s.numel()
            ps[n] = flat[off:off + k].view(s)
            off += k
        return F.cross_entropy(functional_call(module, ps, (x,)), y)

    return torch.autograd.functional.hessian(f, flat0)


def train_a_bit(module, x, y, steps=200, lr=0.5):
    opt = torch.optim.SGD(module.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(module(x), y).backward()
        opt.step()
    opt.zero_grad(set_to_none=True)
    return module


def climb(module, x, y, steps=20, lr=0.2):
    """Gradient ascent on the loss: a point where the Hessian is indefinite with a negative trace
    (tiny_mlp(seed=1), 20 steps: tr H ≈ −5.1, λ ∈ [−0.81, 0.68], so the largest |λ| is negative)."""
    for _ in range(steps):
        module.zero_grad()
        F.cross_entropy(module(x), y).backward()
        with torch.no_grad():
            for p in module.parameters():
                p += lr * p.grad
    module.zero_grad(set_to_none=True)
    return module
