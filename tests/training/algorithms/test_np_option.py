"""FedTOGA's N-perturbation as an option of the sam and smoo parts (Fig. 5: FedSpeed/FedSMOO + N-P).

Two local steps on the quadratic F(p) = ½pᵀAp − bᵀp of test_perturbations (∇F = Ap − b in closed
form), each checked against the formula of FedTOGA Sec. 4.2 / App. A.3:
  off    δ_k = ρ d(g_k)/‖·‖            (g_k = ∇F(w_k), fresh)
  N      δ_k = ρ d(g̃_{k−1})/‖·‖        (g̃_{k−1} = the previous step's perturbed gradient, g̃_{−1} = 0)
  fusion δ_k = ρ d(g_k + g̃_{k−1})/‖·‖
with d(v) = v for SAM and d(v) = v − μ_i − s for FedSMOO (μ_i updated after every ascent).
"""
import numpy as np
import pytest
import torch

from fedflat.training.algorithms import PERTURBATIONS, build_algorithm

from .helpers_quadratic import TOL, N, ctx_for, g_np, step, w_np

pytestmark = pytest.mark.usefixtures("float64")

LR = 0.1


def unit(v):
    n = np.linalg.norm(v)
    return v / n if n > 0 else 0 * v


def two_steps(part, ctx):
    part.client_begin(ctx)
    w1 = w_np.copy()
    g1, calls1 = step(part, ctx, w1)
    w2 = w1 - LR * g1
    g2, calls2 = step(part, ctx, w2)
    return (w1, g1, calls1), (w2, g2, calls2)


@pytest.mark.parametrize("mode", ["off", "N", "fusion"])
def test_sam_neighbour_option(mode):
    rho = 0.3
    part = PERTURBATIONS.get("sam")(rho=rho, np_mode=mode)
    (w1, g1, c1), (w2, g2, c2) = two_steps(part, ctx_for())
    if mode == "off":
        d1, d2 = g_np(w1), g_np(w2)
    elif mode == "N":
        d1, d2 = np.zeros(N), g1  # first step: no g̃ yet, δ = 0 (plain gradient)
    else:
        d1, d2 = g_np(w1), g_np(w2) + g1
    np.testing.assert_allclose(g1, g_np(w1 + rho * unit(d1)), atol=TOL)
    np.testing.assert_allclose(g2, g_np(w2 + rho * unit(d2)), atol=TOL)
    # the point the gradient is taken at moves exactly by δ (direction and length)
    np.testing.assert_allclose(c2[-1].numpy() - w2, rho * unit(d2), atol=TOL)
    assert len(c2) == part.grad_evals == (1 if mode == "N" else 2)
    if mode != "off":  # the option really changes the direction (not the fresh SAM one)
        assert np.abs(unit(d2) - unit(g_np(w2))).max() > 1e-3


@pytest.mark.parametrize("mode", ["off", "N", "fusion"])
def test_smoo_neighbour_option(mode):
    rho = 0.3
    rng = np.random.default_rng(21)
    s, mu0 = rng.normal(size=N) * 0.1, rng.normal(size=N) * 0.1
    part = PERTURBATIONS.get("smoo")(rho=rho, np_mode=mode)
    ctx = ctx_for(down={"smoo_s": torch.tensor(s)}, state={"smoo_mu": torch.tensor(mu0)})
    (w1, g1, _), (w2, g2, c2) = two_steps(part, ctx)
    v1, v2 = {"off": (g_np(w1), g_np(w2)), "N": (np.zeros(N), g1), "fusion": (g_np(w1), g_np(w2) + g1)}[mode]
    mu = mu0.copy()
    S1 = v1 - mu - s
    sh1 = rho * unit(S1)
    mu = mu + sh1 - s
    S2 = v2 - mu - s
    sh2 = rho * unit(S2)
    mu = mu + sh2 - s
    np.testing.assert_allclose(g1, g_np(w1 + sh1), atol=TOL)
    np.testing.assert_allclose(g2, g_np(w2 + sh2), atol=TOL)
    np.testing.assert_allclose(ctx.state["smoo_mu"].numpy(), mu, atol=TOL)
    assert len(c2) == part.grad_evals == (1 if mode == "N" else 2)


def test_np_presets_and_domain():
    from fedflat.core.errors import ConfigError
    for name, base in (("fedspeed_np", "fedspeed"), ("fedsmoo_np", "fedsmoo")):
        a, b = build_algorithm(name), build_algorithm(base)
        assert a.hp["np_mode"] == "N" and b.hp["np_mode"] == "off"
        assert {k: v for k, v in a.hp.items() if k != "np_mode"} == {k: v for k, v in b.hp.items() if k != "np_mode"}
        assert a.grad_evals_per_step == 1 and b.grad_evals_per_step == 2
    with pytest.raises(ConfigError, match="np_mode"):
        build_algorithm("fedspeed", {"np_mode": "G"})


def test_compiled_fused_step_refuses_the_option():
    """The fused compile path hard-codes the fresh-gradient SAM step: with np_mode it must fall back."""
    from types import SimpleNamespace

    from fedflat.training.fl.fused import fused_blocker
    sim = lambda hp: SimpleNamespace(backend="compile", algo=build_algorithm("fedsam", hp))
    assert fused_blocker(sim({})) is None
    assert "np_mode" in fused_blocker(sim({"np_mode": "N"}))
    assert "np_mode" in fused_blocker(sim({"np_mode": "fusion"}))
