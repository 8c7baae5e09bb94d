"""Hessian spectrum of a trained global model: top-k eigenvalues and trace with PyHessian, the
eigenvalue density with our own Lanczos (stochastic Lanczos quadrature) on the same operator.

PyHessian 0.1 (the PyPI wheel) is used through `pyhessian.hessian` in its dataloader mode, which
recomputes forward + double-backward over a fixed list of mini-batches for every Hessian-vector
product (mini-batched HVPs on the device; the loss is the sample-weighted mean over the subset).
Workarounds for its breakage, each documented in docs/analysis.md:
  * density(): calls torch.eig, removed from PyTorch -> replaced by `lanczos_density` below
    (scipy.linalg.eigh_tridiagonal on the symmetric tridiagonal matrix, full reorthogonalisation);
  * trace(): its stopping test |mean - prev|/(prev + 1e-6) < tol divides by the signed running mean,
    so a negative trace stops it after two samples, and near 0 it is meaningless -> our own
    `hutchinson` on the same operator: a fixed number of Rademacher probes from a private seeded
    generator, mean and standard error reported (no data-dependent stop, which would also bias it);
  * power iteration draws its start vectors from the global torch RNG -> seeded inside
    torch.random.fork_rng, so the caller's RNG stream is left as it was;
  * parameters that get no gradient make autograd.grad fail ("element 0 of variables does not
    require grad", PyHessian #12) -> they are found with one probe backward and frozen
    (requires_grad=False) on a private copy of the model; their names are reported;
  * `cuda=True` means the device string 'cuda': we pass cuda=False on CPU and move every batch to
    the model's device ourselves (dataloader mode calls .to('cuda') on inputs only then);
  * PyHessian calls model.zero_grad(), which would detach the FlatModel's gradient views: it works
    on a deep copy with independent parameters, never on the engine's model.
"""
from __future__ import annotations

import copy
import math
from typing import Callable, Iterable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ...core.errors import ConfigError
from .loaded_run import Batches


def standalone_copy(module: nn.Module) -> nn.Module:
    """A deep copy whose parameters own their storage and have no gradient attached."""
    m = copy.deepcopy(module)
    for p in m.parameters():
        p.data = p.data.clone()
        p.grad = None
    return m.eval()


def freeze_unused(module: nn.Module, batches: Batches) -> list[str]:
    """Freeze parameters the loss does not reach (PyHessian #12). Returns their names."""
    module.zero_grad(set_to_none=True)
    x, y = batches[0]
    F.cross_entropy(module(x), y).backward()
    dropped = [n for n, p in module.named_parameters() if p.requires_grad and p.grad is None]
    for n, p in module.named_parameters():
        if n in dropped:
            p.requires_grad_(False)
    module.zero_grad(set_to_none=True)
    return dropped


class HessianOperator:
    """H·v for the mean cross-entropy over fixed batches, on flat vectors, via PyHessian."""

    def __init__(self, module: nn.Module, batches: Batches):
        from pyhessian import hessian as PyHessian

        if not batches:
            raise ConfigError("hessian: the evaluation subset is empty")
        self.module = standalone_copy(module)
        self.dropped = freeze_unused(self.module, batches)
        device = next(self.module.parameters()).device
        self.ph = PyHessian(self.module, F.cross_entropy, dataloader=batches, cuda=False)
        self.ph.device = device  # dataloader mode allocates accumulators on ph.device
        self.params = self.ph.params
        self.shapes = [p.shape for p in self.params]
        self.dim = sum(p.numel() for p in self.params)
        self.dtype = self.params[0].dtype
        self.device = device
        self.calls = 0

    def split(self, v: torch.Tensor) -> list[torch.Tensor]:
        out, off = [], 0
        for s in self.shapes:
            k = math.prod(s)
            out.append(v[off : off + k].view(s))
            off += k
        return out

    def __call__(self, v: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        _, hv = self.ph.dataloader_hv_product(self.split(v.to(self.dtype)))
        return torch.cat([h.reshape(-1) for h in hv]).to(self.dtype)

    def top_eigenpairs(self, k: int, max_iter: int, tol: float, seed: int) -> tuple[list[float], list]:
        """PyHessian power iteration with deflation (largest |λ| first), seeded; the global RNG is
        restored afterwards."""
        with torch.random.fork_rng(devices=[]):  # PyHessian draws its start vectors on the CPU
            torch.manual_seed(seed)
            vals, vecs = self.ph.eigenvalues(maxIter=max_iter, tol=tol, top_n=k)
        return [float(v) for v in vals], vecs

    def trace(self, samples: int, seed: int) -> list[float]:
        """`samples` Hutchinson samples v^T H v (see `hutchinson`)."""
        return hutchinson(self, self.dim, samples, seed, self.dtype, self.device)


def rademacher(gen: torch.Generator, dim: int, dtype, device) -> torch.Tensor:
    """A ±1 vector drawn on the CPU from `gen` (the same values on every device)."""
    return (torch.randint(0, 2, (dim,), generator=gen) * 2 - 1).to(device=device, dtype=dtype)


def hutchinson(hvp: Callable[[torch.Tensor], torch.Tensor], dim: int, samples: int, seed: int,
               dtype=torch.float64, device="cpu") -> list[float]:
    """Hutchinson's trace estimator: v_sᵀ H v_s for `samples` Rademacher probes v_s, E[vᵀHv] = tr H
    for any symmetric H (indefinite, negative or zero trace alike), variance 2 Σ_{i≠j} H_ij² per
    probe. A fixed count: the mean and its standard error are the caller's report."""
    gen = torch.Generator().manual_seed(int(seed))
    out = []
    for _ in range(samples):
        v = rademacher(gen, dim, dtype, device)
        out.append(float(torch.dot(hvp(v).double(), v.double())))
    return out


def lanczos(hvp: Callable[[torch.Tensor], torch.Tensor], v0: torch.Tensor, iters: int) -> tuple[np.ndarray, np.ndarray]:
    """`iters` steps of Lanczos from v0 with full reorthogonalisation. Returns the diagonal (alpha)
    and off-diagonal (beta) of the tridiagonal T; stops early on an invariant subspace (beta ~ 0)."""
    Q = torch.empty(iters, v0.numel(), dtype=v0.dtype, device=v0.device)  # the Lanczos basis, row by row
    Q[0] = v0 / v0.norm()
    alphas, betas = [], []
    for j in range(iters):
        w = hvp(Q[j])
        a = float(torch.dot(w, Q[j]))
        alphas.append(a)
        if j == iters - 1:
            break
        basis = Q[: j + 1]
        for _ in range(2):  # classical Gram-Schmidt twice: orthogonal to working precision
            w = w - basis.T @ (basis @ w)
        b = float(w.norm())
        if b <= 1e-10 * max(1.0, abs(a)):
            break
        betas.append(b)
        Q[j + 1] = w / b
    return np.asarray(alphas), np.asarray(betas)


def lanczos_density(hvp: Callable, dim: int, iters: int, runs: int, seed: int, dtype=torch.float64,
                    device="cpu") -> tuple[np.ndarray, np.ndarray]:
    """Stochastic Lanczos quadrature (Ghorbani et al. 2019; PyHessian's density): Ritz values of
    each run's T as nodes, squared first eigenvector components as weights, each run weighted 1/runs.
    The weights sum to 1 and Σ w θ^k = v^T H^k v exactly for k < 2·iters (Gauss quadrature)."""
    from scipy.linalg import eigh_tridiagonal

    gen = torch.Generator().manual_seed(int(seed))
    nodes, weights = [], []
    for _ in range(runs):
        a, b = lanczos(hvp, rademacher(gen, dim, dtype, device), min(iters, dim))
        theta, vecs = eigh_tridiagonal(a, b)
        nodes.append(theta)
        weights.append(vecs[0, :] ** 2 / runs)
    return np.concatenate(nodes), np.concatenate(weights)


def smooth_density(nodes: np.ndarray, weights: np.ndarray, grid: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian-smoothed spectral density on a grid (integrates to Σ weights = 1)."""
    z = (grid[:, None] - nodes[None, :]) / sigma
    return (np.exp(-0.5 * z**2) / (sigma * math.sqrt(2 * math.pi))) @ weights


def hessian_spectrum(module: nn.Module, batches: Batches, top_k: int = 5, max_iter: int = 100, tol: float = 1e-3,
                     trace_samples: int = 100, density_iters: int = 80, density_runs: int = 1,
                     seed: int = 0) -> dict:
    """Everything hessian.json holds (see docs/analysis.md §Hessian)."""
    op = HessianOperator(module, batches)
    eig = op.top_eigenpairs(top_k, max_iter, tol, seed)[0] if top_k > 0 else []
    tr = op.trace(trace_samples, seed + 1) if trace_samples > 0 else []
    out = {
        "eigenvalues": eig,
        "lambda_max": eig[0] if eig else None,
        "lambda_5": eig[4] if len(eig) >= 5 else None,
        "lambda_ratio_1_5": eig[0] / eig[4] if len(eig) >= 5 and eig[4] != 0 else None,
        "trace": float(np.mean(tr)) if tr else None,
        "trace_sem": float(np.std(tr, ddof=1) / math.sqrt(len(tr))) if len(tr) > 1 else None,
        "trace_samples": len(tr),
        "num_params": op.dim,
        "frozen_unused": op.dropped,
        "num_samples": sum(len(y) for _, y in batches),
        "num_batches": len(batches),
    }
    if density_iters > 0 and density_runs > 0:
        nodes, w = lanczos_density(op, op.dim, density_iters, density_runs, seed + 2, op.dtype, op.device)
        out["density"] = {"nodes": nodes.tolist(), "weights": w.tolist(), "iters": density_iters, "runs": density_runs}
    out["hvp_calls"] = op.calls
    return out


def client_spectra(module: nn.Module, client_batches: list[Batches], max_iter: int = 100, tol: float = 1e-3,
                   trace_samples: int = 0, seed: int = 0) -> dict:
    """The Hessian of each client's own loss at one model (FedSynSAM Table I's candidate protocol (b)): λ_max
    and, with trace_samples > 0, the Hutchinson trace per client, their mean and maximum. λ_max of the mean
    Hessian is at most the mean of the clients' λ_max (convexity of the largest eigenvalue), so on one-class
    clients this can be far larger than the union's value (tests/pipeline/analysis/test_hessian.py checks both)."""
    return paired_spectra(((module, b) for b in client_batches), max_iter, tol, trace_samples, seed)


def paired_spectra(pairs: Iterable[tuple[nn.Module, Batches]], max_iter: int = 100, tol: float = 1e-3,
                   trace_samples: int = 0, seed: int = 0) -> dict:
    """λ_max (and trace) of each (model, batches) pair, their mean and maximum: one model on every client's data
    (client_spectra), or each client's own model on its own data (FedSynSAM Table I's candidate protocol (d)).
    Each module is copied when its pair is taken, so a generator may reload one module between pairs."""
    lam, tr = [], []
    for module, batches in pairs:
        out = hessian_spectrum(module, batches, top_k=1, max_iter=max_iter, tol=tol, trace_samples=trace_samples,
                               density_iters=0, seed=seed)
        lam.append(out["lambda_max"])
        tr.append(out["trace"])
    res = {"clients": len(lam), "lambda_max_clients": lam, "lambda_max_mean": float(np.mean(lam)),
           "lambda_max_max": float(np.max(lam))}
    if trace_samples > 0:
        res.update(trace_clients=tr, trace_mean=float(np.mean(tr)), trace_max=float(np.max(tr)))
    return res


def top_eigenvectors(fm, theta: torch.Tensor, batches: Batches, k: int, max_iter: int = 100, tol: float = 1e-3,
                     seed: int = 0) -> tuple[list[float], list[torch.Tensor]]:
    """Top-k Hessian eigenpairs (PyHessian power iteration) as flat vectors over fm's parameters
    (unit norm; zero on frozen/unused parameters). Axes of FedSOL Fig. 8's landscapes."""
    fm.flat.copy_(theta)
    op = HessianOperator(fm.module, batches)
    vals, vecs = op.top_eigenpairs(k, max_iter, tol, seed)
    used = [n for n, p in op.module.named_parameters() if p.requires_grad]
    out = []
    for vec in vecs:
        by_name = dict(zip(used, vec))
        flat = torch.zeros_like(theta)
        for name, (a, b) in zip(fm.names, fm.slices):
            if name in by_name:
                flat[a:b] = by_name[name].reshape(-1).to(flat.dtype)
        out.append(flat / flat.norm())
    return vals, out
