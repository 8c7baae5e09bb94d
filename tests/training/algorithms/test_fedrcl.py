"""FedRCL's relaxed contrastive loss against a hand derivation on fabricated 2-D features.

Features z_k = r_k (cos φ_k, sin φ_k): after normalisation s_ij = cos(φ_i − φ_j), so the loss is a
function of the angles with ∂s_ij/∂φ_i = −sin(φ_i − φ_j) = −∂s_ij/∂φ_j. The reference (NumPy, loops,
no fedflat code) writes out
  ∂SCL_i/∂s_ij = (softmax_{a≠i}(s_ia/τ)_j − [j∈P_i]/|P_i|)/τ
  ∂DIV_i/∂s_ij = [j∈Q_i] exp((s_ij−1)/τ) / (τ (1 + Σ_{k∈Q_i} exp((s_ik−1)/τ))),  Q_i = {j∈P_i: s_ij > λ}
A flipped relaxation sign, a reversed threshold or a missing pair changes value and gradient.
"""
import numpy as np
import pytest
import torch
import torch.nn as nn

from fedflat.training.algorithms import CORRECTIONS, build_algorithm
from fedflat.training.algorithms.fedrcl import rcl_loss
from fedflat.core.errors import ConfigError

pytestmark = pytest.mark.usefixtures("float64")

TOL = 1e-10
# class 0: three samples, two close (cos 0.3 rad ≈ 0.955 > λ) and one 1.2 rad away (cos ≈ 0.36 < λ);
# class 1: two samples 0.5 rad apart (cos ≈ 0.878 > λ); class 2: a singleton (no positive).
PHI = np.array([0.0, 0.3, 1.2, 2.5, 3.0, 4.4])
Y = np.array([0, 0, 0, 1, 1, 2])
R = np.array([1.0, 2.0, 0.5, 1.5, 3.0, 0.7])  # norms must not matter
TAU, LAM, BETA = 0.5, 0.7, 0.8


def reference(phi, y, tau, lam, beta):
    B = len(y)
    s = np.cos(phi[:, None] - phi[None, :])
    dLds = np.zeros((B, B))  # ∂L/∂s_ij with s_ij seen from anchor i
    anchors = [i for i in range(B) if any(y[j] == y[i] for j in range(B) if j != i)]
    scl = 0.0
    for i in anchors:
        P = [j for j in range(B) if j != i and y[j] == y[i]]
        A = [j for j in range(B) if j != i]
        ex = {a: np.exp(s[i, a] / tau) for a in A}
        Z = sum(ex.values())
        scl += -np.mean([np.log(ex[p] / Z) for p in P])
        for a in A:
            dLds[i, a] += (ex[a] / Z - (1.0 / len(P) if a in P else 0.0)) / tau / len(anchors)
    scl /= len(anchors)
    div = 0.0
    for i in range(B):
        Q = [j for j in range(B) if j != i and y[j] == y[i] and s[i, j] > lam]
        e = {j: np.exp((s[i, j] - 1.0) / tau) for j in Q}
        den = 1.0 + sum(e.values())
        div += np.log(den)
        for j in Q:
            dLds[i, j] += beta * e[j] / (tau * den) / B
    div /= B
    grad = np.zeros(B)
    for i in range(B):
        for j in range(B):
            d = -np.sin(phi[i] - phi[j]) * dLds[i, j]
            grad[i] += d
            grad[j] -= d
    return scl + beta * div, grad, scl


def features(phi):
    t = torch.tensor(phi, requires_grad=True)
    z = torch.tensor(R)[:, None] * torch.stack([torch.cos(t), torch.sin(t)], 1)
    return t, z


def test_rcl_value_and_gradient_hand_derived():
    want, want_grad, _ = reference(PHI, Y, TAU, LAM, BETA)
    t, z = features(PHI)
    got = rcl_loss(z, torch.tensor(Y), TAU, LAM, BETA)
    (g,) = torch.autograd.grad(got, t)
    assert abs(got.item() - want) < TOL
    np.testing.assert_allclose(g.numpy(), want_grad, atol=TOL)


def test_divergence_pushes_apart_only_above_threshold():
    """β-part alone (total minus β=0): on the close class-0 pair (0, 1) descent −∂/∂φ widens the
    angle; sample 2 (below λ against both) gets no divergence gradient at all."""
    t, z = features(PHI)
    y = torch.tensor(Y)
    div = rcl_loss(z, y, TAU, LAM, BETA) - rcl_loss(z, y, TAU, LAM, 0.0)
    (g,) = torch.autograd.grad(div, t)
    step = -g.numpy()
    assert step[1] - step[0] > 1e-3  # φ1 > φ0: the gap φ1 − φ0 grows
    assert step[4] - step[3] > 1e-3  # class 1 pair, likewise
    assert abs(g[2].item()) < 1e-14 and abs(g[5].item()) < 1e-14  # round-off of the SCL difference only
    assert div.item() > 0
    # raising λ above every similarity switches the penalty off exactly
    t2, z2 = features(PHI)
    assert (rcl_loss(z2, y, TAU, 0.99, BETA) - rcl_loss(z2, y, TAU, 0.99, 0.0)).item() == 0.0


def test_loss_term_uses_local_penultimate_features():
    """Through the part, on an MLP: the head's input (captured with grad by the hook) is what enters."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3))
    part = CORRECTIONS.get("rcl")(rcl_weight=0.5, rcl_beta=BETA, rcl_tau=TAU, rcl_lambda=LAM)
    from .helpers_quadratic import ctx_for
    ctx = ctx_for()
    ctx.scratch["model"] = model
    part.client_begin(ctx)
    x = torch.tensor(np.random.default_rng(3).normal(size=(6, 4)))
    y = torch.tensor(Y)
    logits = model(x)
    with torch.no_grad():
        model(x + 1.0)  # an evaluation forward must not overwrite the captured features
    got = part.loss_term(ctx, logits, x, y, model)
    z = torch.relu(model[1](x))
    assert abs(got.item() - 0.5 * rcl_loss(z, y, TAU, LAM, BETA).item()) < TOL
    assert got.requires_grad


def test_preset_defaults_and_domains():
    hp = build_algorithm("fedrcl").hp
    assert (hp["rcl_tau"], hp["rcl_lambda"], hp["rcl_beta"], hp["rcl_weight"]) == (0.05, 0.7, 1.0, 1.0)
    for bad, word in (({"rcl_tau": 0.0}, "rcl_tau"), ({"rcl_lambda": 1.5}, "rcl_lambda")):
        with pytest.raises(ConfigError, match=word):
            build_algorithm("fedrcl", bad)


def test_engine_step_adds_the_rcl_gradient(tmp_path):
    """One round through the engine (MLP, one client, one full-batch step): the client moves by
    −lr ∇(CE + w L_RCL(hidden features)) exactly, and w = 0 is FedAvg."""
    from .helpers_sam import forward, make_sim, run

    hp = {"rcl_weight": 0.7, "rcl_beta": BETA, "rcl_tau": TAU, "rcl_lambda": 0.2}
    kw = dict(arch="mlp", num_clients=1, local_steps=1, lr=0.3, rounds=1)
    sim, x, y, clients = make_sim("fedrcl", hp, tmp_path / "a", **kw)
    theta0, theta1 = run(sim, 1)
    idx = clients[0]

    def loss(th):
        logits, z = forward(th, x[idx], "mlp")
        return torch.nn.functional.cross_entropy(logits, y[idx]) + 0.7 * rcl_loss(z, y[idx], TAU, 0.2, BETA)

    t = theta0.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(loss(t), t)
    np.testing.assert_allclose(theta1.numpy(), (theta0 - 0.3 * g).numpy(), atol=1e-10)
    sim0, *_ = make_sim("fedrcl", {**hp, "rcl_weight": 0.0}, tmp_path / "b", **kw)
    simf, *_ = make_sim("fedavg", {}, tmp_path / "c", **kw)
    assert torch.equal(run(sim0, 1)[1], run(simf, 1)[1])
    assert (theta1 - simf.srv.theta).abs().max() > 1e-6  # the term really moves the step
