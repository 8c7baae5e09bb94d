"""FedSynSAM's local step against a hand computation on quadratics F(w; b) = ½ (w − c_b)ᵀ A_b (w − c_b)."""
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from fedflat.training.algorithms import PRESETS, build_algorithm
from fedflat.training.algorithms.parts import ClientContext
from fedflat.core.errors import ConfigError
from fedflat.training.synsam.perturbation import SynSAMPerturbation

A_LOC, C_LOC = np.diag([2.0, 1.0]), np.array([0.0, 0.0])
A_SYN, C_SYN = np.diag([1.0, 3.0]), np.array([1.0, -1.0])


def quad_grad_at():
    """Like FlatModel.grad_at: returns one buffer that every call overwrites; batch = (c, A)."""
    buf = torch.zeros(2, dtype=torch.float64)

    def grad_at(point, batch):
        c, A = batch
        r = point - c
        buf.copy_(A @ r)
        return 0.5 * r @ (A @ r), buf

    return grad_at


def part_with(syn, R=3, rho=0.1, beta=0.9):
    p = SynSAMPerturbation(**{**{k: s.default for k, s in SynSAMPerturbation.params.items()},
                              "rho": rho, "beta": beta, "syn_round": R})
    p._srv = SimpleNamespace(state={} if syn is None else {"syn_x": syn[0], "syn_y": syn[1]})
    return p


def ctx(rnd):
    z = torch.zeros(2, dtype=torch.float64)
    return ClientContext(cid=0, round=rnd, lr=0.1, local_steps=1, theta=z, start=z, down={}, state={},
                         num_samples=1)


def run(part, rnd, w):
    c = ctx(rnd)
    part.client_begin(c)
    batch = (torch.tensor(C_LOC), torch.tensor(A_LOC))
    loss, g = part.gradient(c, torch.tensor(w), batch, quad_grad_at())
    return float(loss), g.numpy().copy()


def test_after_R_the_ascent_mixes_local_and_synthetic_gradients():
    w, rho, beta = np.array([1.0, 2.0]), 0.1, 0.9
    part = part_with((torch.tensor(C_SYN), torch.tensor(A_SYN)), R=3, rho=rho, beta=beta)
    loss, g = run(part, 4, w)
    g_loc = A_LOC @ (w - C_LOC)  # [2, 2]
    g_syn = A_SYN @ (w - C_SYN)  # [0, 9]
    d = beta * g_loc + (1 - beta) * g_syn  # [1.8, 2.7]: raw gradients mixed, normalised after
    w_tilde = w + rho * d / np.linalg.norm(d)
    expected = A_LOC @ (w_tilde - C_LOC)  # descent gradient on the local batch only
    np.testing.assert_allclose(g, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(g, [2 * (1 + 0.1 * 1.8 / math.sqrt(10.53)), 2 + 0.1 * 2.7 / math.sqrt(10.53)], atol=1e-12)
    assert loss == pytest.approx(0.5 * w @ A_LOC @ w)


@pytest.mark.parametrize("rnd", [1, 3])
def test_up_to_round_R_it_is_fedsam(rnd):
    w, rho = np.array([1.0, 2.0]), 0.1
    part = part_with((torch.tensor(C_SYN), torch.tensor(A_SYN)), R=3, rho=rho)
    _, g = run(part, rnd, w)
    g_loc = A_LOC @ w
    np.testing.assert_allclose(g, A_LOC @ (w + rho * g_loc / np.linalg.norm(g_loc)), atol=1e-12)


def test_no_synthetic_set_yet_is_fedsam_and_beta_one_ignores_it():
    w = np.array([1.0, 2.0])
    sam = A_LOC @ (w + 0.1 * (A_LOC @ w) / np.linalg.norm(A_LOC @ w))
    np.testing.assert_allclose(run(part_with(None), 9, w)[1], sam, atol=1e-12)
    np.testing.assert_allclose(run(part_with((torch.tensor(C_SYN), torch.tensor(A_SYN)), beta=1.0), 9, w)[1], sam,
                               atol=1e-12)


def test_beta_zero_uses_the_synthetic_direction_only():
    w = np.array([1.0, 2.0])
    _, g = run(part_with((torch.tensor(C_SYN), torch.tensor(A_SYN)), beta=0.0), 9, w)
    d = A_SYN @ (w - C_SYN)
    np.testing.assert_allclose(g, A_LOC @ (w + 0.1 * d / np.linalg.norm(d)), atol=1e-12)


def test_syn_batch_draws_a_seeded_subset():
    x = torch.arange(10.0).reshape(10, 1)
    y = torch.arange(10)
    part = part_with((x, y))
    part.syn_batch = 4
    c1, c2 = ctx(5), ctx(5)
    part.client_begin(c1)
    part.client_begin(c2)
    z1, z2 = part._zeta(c1), part._zeta(c2)
    assert len(z1[1]) == 4 and torch.equal(z1[1], z2[1]) and torch.equal(z1[0][:, 0].long(), z1[1])


def test_preset_and_param_errors():
    p = PRESETS.get("fedsynsam")
    hp = p.resolve({})
    assert hp["beta"] == 0.9 and hp["syn_round"] == 30 and p.perturbation == "synsam"
    assert build_algorithm("fedsynsam").perturbation.grad_evals == 2
    with pytest.raises(ConfigError, match="beta"):
        p.resolve({"beta": 1.5})
    with pytest.raises(ConfigError, match="syn_loss"):
        p.resolve({"syn_loss": "l1"})
    with pytest.raises(ConfigError, match="syn_round"):
        build_algorithm("fedsynsam", {"syn_round": 2.5})
