"""FedAvg, FedSAM and FedNSAM against hand-derived updates on a tiny linear softmax model."""
import numpy as np
import pytest
import torch

from foundation_helpers import make_sim, np_grad, unit


pytestmark = pytest.mark.usefixtures("float64")  # exact hand-derived comparisons


def run(sim, rounds):
    thetas = [sim.srv.theta.clone().numpy()]
    for t in range(1, rounds + 1):
        sim.run_round(t)
        thetas.append(sim.srv.theta.clone().numpy())
    return thetas


def test_fedsam_local_step_matches_hand_derivation(tmp_path):
    rho, lr = 0.2, 0.3
    sim, x, y, clients = make_sim("fedsam", {"rho": rho}, tmp_path, num_clients=1, local_steps=1, lr=lr, rounds=1)
    th0, th1 = run(sim, 1)
    g = np_grad(th0, x, y)
    w_adv = th0 + rho * g / np.linalg.norm(g)  # ascent on the same mini-batch
    expected = th0 - lr * np_grad(w_adv, x, y)  # descent with the perturbed gradient, applied at th0
    np.testing.assert_allclose(th1, expected, rtol=0, atol=1e-12)
    # the unperturbed step is measurably different, so the test sees the perturbation
    assert np.abs(th1 - (th0 - lr * g)).max() > 1e-4


def test_fedavg_two_rounds(tmp_path):
    sim, x, y, clients = make_sim("fedavg", {}, tmp_path)
    thetas = run(sim, 2)
    th = thetas[0]
    for t in range(2):
        ends = []
        for c in clients:
            w = th.copy()
            for _ in range(2):
                w = w - 0.3 * np_grad(w, x[c], y[c])
            ends.append(w)
        th = np.mean(ends, 0)
        np.testing.assert_allclose(thetas[t + 1], th, atol=1e-12)


def test_fednsam_two_rounds_match_algorithm_1(tmp_path):
    rho, lam, lr, K = 0.1, 0.85, 0.3, 2
    sim, x, y, clients = make_sim("fednsam", {"rho": rho, "lam": lam}, tmp_path, local_steps=K, lr=lr)
    thetas = run(sim, 2)
    theta, m = thetas[0], np.zeros_like(thetas[0])
    for t in range(2):
        deltas = []
        for c in clients:
            w = theta.copy()  # Alg. 1 literally: θ_{i,0} = θ, gradient at θ_k + λm − ρ m/‖m‖
            for _ in range(K):
                point = w + lam * m - rho * unit(m)
                w = w - lr * np_grad(point, x[c], y[c])
            deltas.append(w - theta)
        m = lam * m + np.mean(deltas, 0)
        theta = theta + m
        np.testing.assert_allclose(thetas[t + 1], theta, atol=1e-12)


def test_fednsam_round_one_is_plain_sgd_and_round_two_is_not(tmp_path):
    a, *_ = make_sim("fednsam", {}, tmp_path / "a")
    b, *_ = make_sim("fedavg", {}, tmp_path / "b")
    ta, tb = run(a, 2), run(b, 2)
    np.testing.assert_allclose(ta[1], tb[1], atol=1e-12)  # m = 0: δ = 0, no look-ahead
    assert np.abs(ta[2] - tb[2]).max() > 1e-4


@pytest.mark.parametrize("algorithm,hp", [("fedsam", {"rho": 0.0}), ("fednsam", {"rho": 0.0, "lam": 0.0})])
def test_reductions_to_fedavg(tmp_path, algorithm, hp):
    a, *_ = make_sim(algorithm, hp, tmp_path / "a", rounds=3)
    b, *_ = make_sim("fedavg", {}, tmp_path / "b", rounds=3)
    for ta, tb in zip(run(a, 3), run(b, 3)):
        np.testing.assert_allclose(ta, tb, atol=1e-12)


def test_flatness_distance_and_bytes(tmp_path):
    sim, x, y, clients = make_sim("fednsam", {}, tmp_path, rounds=2)
    sim.run_round(1)
    row = sim.run_round(2)
    # recompute round 2's client deltas independently from the engine's state is long; check the
    # definition on the returned results instead: mean squared distance from the mean delta
    n = sim.fm.numel
    assert row["down_bytes"] == 2 * n * 4 * 3  # θ and m to each of 3 clients (FedNSAM Alg. 1 lines 7-8: clients need m as well as θ)
    assert row["up_bytes"] == n * 4 * 3
    assert row["grad_evals"] == 1 * 2 * 3
    s, *_ = make_sim("fedsam", {}, tmp_path / "s", rounds=1)
    assert s.run_round(1)["grad_evals"] == 2 * 2 * 3


def test_flatness_distance_definition():
    from fedflat.training.algorithms import ClientResult
    from fedflat.training.fl.engine import Simulation

    d = [torch.tensor([1.0, 0.0]), torch.tensor([3.0, 0.0]), torch.tensor([2.0, 3.0])]
    res = [ClientResult(i, v, v, {}, 1, 0.0, torch.zeros(0)) for i, v in enumerate(d)]
    mean = torch.stack(d).mean(0)
    expected = sum(float(((v - mean) ** 2).sum()) for v in d) / 3
    assert Simulation.flatness_distance(res) == pytest.approx(expected)
