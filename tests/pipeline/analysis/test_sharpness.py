import numpy as np
import torch
import torch.nn as nn

from fedflat.pipeline.analysis.sharpness import global_sharpness
from fedflat.training.fl.flat import FlatModel


def softmax_regression_loss(W, b, X, Y):
    z = X @ W.T + b
    z = z - z.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    return -logp[np.arange(len(Y)), Y].mean(), np.exp(logp)


def test_sharpness_equals_closed_form_on_softmax_regression():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4)).double()
    fm = FlatModel(model)
    theta = fm.flat.clone()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(30, 3, generator=g, dtype=torch.float64)
    y = torch.randint(0, 4, (30,), generator=g)
    rho = 0.05
    out = global_sharpness(fm, theta, [(x[:7], y[:7]), (x[7:], y[7:])], rho)
    # hand computation: ∇_W = mean (p - onehot) x^T, ∇_b = mean (p - onehot)
    W, b = model[0].weight.detach().numpy().copy(), model[0].bias.detach().numpy().copy()
    X, Y = x.numpy(), y.numpy()
    f0, P = softmax_regression_loss(W, b, X, Y)
    E = P.copy()
    E[np.arange(len(Y)), Y] -= 1
    gW, gb = E.T @ X / len(Y), E.mean(0)
    gn = np.sqrt((gW**2).sum() + (gb**2).sum())
    f1, _ = softmax_regression_loss(W + rho * gW / gn, b + rho * gb / gn, X, Y)
    assert abs(out["sharpness_loss"] - f0) < 1e-12
    assert abs(out["sharpness_grad_norm"] - gn) < 1e-12
    assert abs(out["sharpness"] - (f1 - f0)) < 1e-12
    assert out["sharpness"] > 0
    # first order: S ≈ ρ‖∇F‖ for small ρ (a wrong sign would give ≈ −ρ‖∇F‖)
    small = global_sharpness(fm, theta, [(x, y)], 1e-4)
    assert abs(small["sharpness"] / (1e-4 * gn) - 1) < 1e-2
    assert torch.equal(fm.flat, theta)
