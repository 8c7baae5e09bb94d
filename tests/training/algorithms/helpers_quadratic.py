"""A quadratic F(p) = ½pᵀAp − bᵀp with ∇F(p) = Ap − b in closed form, a client context and one
perturbation step on it: shared by the part-level tests (test_perturbations, test_np_option, test_fedrcl)."""
import numpy as np
import torch

from fedflat.training.algorithms import ClientContext

TOL = 1e-12


N = 6
_rng = np.random.default_rng(3)
_M = _rng.normal(size=(N, N))
A_np = _M @ _M.T + np.eye(N)
b_np = _rng.normal(size=N)
w_np = _rng.normal(size=N)


def quad():
    """grad_at for the quadratic; records every point it is asked about."""
    A, b = torch.tensor(A_np), torch.tensor(b_np)
    calls = []

    def grad_at(p, batch):
        calls.append(p.clone())
        return 0.5 * p @ A @ p - b @ p, A @ p - b

    return grad_at, calls


def g_np(p):
    return A_np @ p - b_np


def ctx_for(theta=None, down=None, state=None, lr=0.1, K=3, start=None, cid=0):
    theta = torch.tensor(w_np) if theta is None else theta
    return ClientContext(cid=cid, round=1, lr=lr, local_steps=K, theta=theta, start=theta if start is None else start,
                         down=down or {}, state=state or {}, num_samples=6)


def step(part, ctx, w):
    grad_at, calls = quad()
    loss, g = part.gradient(ctx, torch.tensor(w), None, grad_at)
    return g.numpy().copy(), calls
