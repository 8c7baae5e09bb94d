"""Displacement → gradient estimates under local heavy-ball momentum (issue #13 item 1).

With buf ← m·buf + g, w ← w − lr·buf, a constant direction g moves w by lr·K_eff·g after K steps,
K_eff = (K − m(1−m^K)/(1−m))/(1−m). Every part that divides a displacement by K·lr to get a mean
gradient must divide by K_eff·lr (and per client when the K_i differ): SCAFFOLD's control variates,
FedCM/MoFedSAM's d, FedSAGD's v, FedTOGA's Δ (fedcm scale), FedNova's a_i.
"""
import numpy as np
import pytest
import torch

from fedflat.training.algorithms import CORRECTIONS, SERVERS, ClientContext, ClientResult, RoundResult, ServerState
from fedflat.training.algorithms.parts import effective_steps

from .helpers_baselines import Run

T = lambda *v: torch.tensor(v, dtype=torch.float64)  # noqa: E731


def heavy_ball(grad, w0, lr, m, k):
    """k steps of PyTorch-SGD heavy ball (dampening 0, buf⁰ = 0); returns (w_k, [∇ at w_0..w_{k−1}])."""
    w, buf, grads = np.array(w0, dtype=np.float64), np.zeros(len(w0)), []
    for _ in range(k):
        g = grad(w)
        grads.append(g)
        buf = m * buf + g
        w = w - lr * buf
    return w, grads


@pytest.mark.parametrize("m", [0.0, 0.5, 0.9])
@pytest.mark.parametrize("k", [1, 7, 50])
def test_effective_steps_is_the_heavy_ball_displacement_of_a_constant_direction(m, k):
    g = np.array([0.3, -1.2])
    w, _ = heavy_ball(lambda w: g, [0.0, 0.0], 0.1, m, k)
    np.testing.assert_allclose(-w / (0.1 * g), effective_steps(k, m), rtol=1e-12)
    assert effective_steps(k, 0.0) == k


def ctx(cid, K, m, lr=0.1, down=None, state=None):
    z = T(0.0, 0.0)
    return ClientContext(cid=cid, round=1, lr=lr, local_steps=K, theta=z, start=z, down=down or {},
                         state=state or {}, num_samples=5, local_momentum=m)


def round_of(*deltas, weights=(0.25, 0.75)):
    cl = [ClientResult(cid=i, delta=T(*d), end=T(*d), up={}, num_samples=5, train_loss=0.0, buffers=torch.zeros(0))
          for i, d in enumerate(deltas)]
    return RoundResult(1, list(range(len(cl))), cl, torch.tensor(weights, dtype=torch.float64))


def test_scaffold_control_variate_divides_by_k_eff():
    p = CORRECTIONS.get("scaffold")()
    c = ctx(0, K=4, m=0.5, down={"c": T(0.1, -0.2)}, state={"c_i": T(0.3, 0.1)})
    p.client_end(c, T(-0.2, 0.4))
    keff = (4 - 0.5 * (1 - 0.5 ** 4) / 0.5) / 0.5  # 6.125
    torch.testing.assert_close(c.state["c_i"], T(0.2, 0.3) + T(0.2, -0.4) / (keff * 0.1), rtol=0, atol=1e-12)


# K = (2, 4), m = 0.5: K_eff = (2.5, 6.125); weights (0.25, 0.75); lr 0.1
KEFF, W, D1, D2 = (2.5, 6.125), (0.25, 0.75), (-0.2, 0.4), (0.2, 0.8)
MEAN_DIR = [-(W[0] * a / KEFF[0] + W[1] * b / KEFF[1]) / 0.1 for a, b in zip(D1, D2)]  # −Σ p_i Δ_i/(K_eff,i·lr)


def after_round(p, **state):
    """Server state after one round of clients 0 (K = 2) and 1 (K = 4), m = 0.5, Δ = D1, D2."""
    srv = ServerState(theta=T(0.0, 0.0), buffers=torch.zeros(0), num_clients=5)
    p.init_server(srv)
    srv.state.update({k: T(*v) for k, v in state.items()})
    for cid, K in ((0, 2), (1, 4)):
        p.client_begin(ctx(cid, K, 0.5))
    p.server_update(srv, round_of(D1, D2))
    return srv.state


def test_fedcm_estimate_is_the_mean_direction_per_client():
    st = after_round(CORRECTIONS.get("momentum_mix")(cm_alpha=0.25))
    torch.testing.assert_close(st["d"], T(*MEAN_DIR), rtol=0, atol=1e-12)


def test_fedsagd_server_momentum_uses_the_mean_direction():
    st = after_round(CORRECTIONS.get("sagd_momentum")(beta=0.5), v=(0.2, 0.4))
    # v ← β/(1+β)·v + (1/(1+β))·(−Σ p_i Δ_i/(K_eff,i·lr))
    torch.testing.assert_close(st["v"], T(*[v / 3 + d / 1.5 for v, d in zip((0.2, 0.4), MEAN_DIR)]),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("norm,expected", [
    ("fedcm", MEAN_DIR),
    ("step", [-(W[0] * a / 2 + W[1] * b / 4) for a, b in zip(D1, D2)])])  # Alg. 1 literal: per step, no K_eff
def test_toga_global_delta_scales(norm, expected):
    st = after_round(CORRECTIONS.get("global_delta")(beta=0.8, delta_norm=norm))
    torch.testing.assert_close(st["toga_delta"], T(*expected), rtol=0, atol=1e-12)


def test_fednova_with_momentum_matches_the_closed_form_on_quadratics():
    """Wang et al. 2020: Δ_i = −lr Σ_k a_{i,k} ∇F_i(w_{i,k}), a_{i,k} = (1 − m^{τ_i−k})/(1 − m), and the
    server moves θ by −lr·τ_eff·Σ p_i d_i with d_i = Σ_k a_{i,k}∇F_i(w_{i,k})/‖a_i‖₁, τ_eff = Σ p_i‖a_i‖₁.
    Clients run heavy ball on F_i(w) = ½(w − b_i)ᵀA_i(w − b_i) with τ = (3, 8) steps, m = 0.9."""
    m, lr, taus, p = 0.9, 0.05, (3, 8), (0.4, 0.6)
    A = [np.diag([1.0, 3.0]), np.array([[2.0, 0.5], [0.5, 1.0]])]
    b = [np.array([1.0, -2.0]), np.array([-1.5, 0.5])]
    theta = np.array([0.3, 0.7])
    server = SERVERS.get("nova")()
    clients, dirs, norms = [], [], []
    for i, tau in enumerate(taus):
        w, grads = heavy_ball(lambda w, i=i: A[i] @ (w - b[i]), theta, lr, m, tau)
        a = np.array([(1 - m ** (tau - k)) / (1 - m) for k in range(tau)])
        np.testing.assert_allclose(w - theta, -lr * sum(ak * g for ak, g in zip(a, grads)), atol=1e-12)
        dirs.append(sum(ak * g for ak, g in zip(a, grads)) / a.sum())
        norms.append(a.sum())
        server.client_begin(ClientContext(cid=i, round=1, lr=lr, local_steps=tau, theta=torch.tensor(theta),
                                          start=torch.tensor(theta), down={}, state={}, num_samples=5,
                                          local_momentum=m))
        clients.append(ClientResult(cid=i, delta=torch.tensor(w - theta), end=torch.tensor(w), up={},
                                    num_samples=5, train_loss=0.0, buffers=torch.zeros(0)))
    srv = ServerState(theta=torch.tensor(theta), buffers=torch.zeros(0), num_clients=2)
    server.apply(srv, RoundResult(1, [0, 1], clients, torch.tensor(p, dtype=torch.float64)))
    tau_eff = sum(pi * ni for pi, ni in zip(p, norms))
    np.testing.assert_allclose(srv.theta.numpy(), theta - lr * tau_eff * sum(pi * d for pi, d in zip(p, dirs)),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(norms, [effective_steps(t, m) for t in taus], rtol=1e-12)


@pytest.mark.usefixtures("float64")
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_scaffold_control_variate_estimates_the_local_gradient_in_the_engine(tmp_path, momentum):
    """The issue's measurement: K = 50, tiny lr (the gradient barely moves), full-batch steps. After
    round 1 (c = c_i = 0) c_i = (θ − w_K)/(K_eff·lr) ≈ ∇F_i(θ); dividing by K instead gave 8.2x."""
    r = Run("scaffold", {}, tmp_path, local_steps=50, lr=1e-5, lr_decay=1.0, weight_decay=0.0,
            local_momentum=momentum)
    r.rounds(1)
    for cid in r.sampled(1):
        c_i = r.sim.store.get(cid)["c_i"].numpy()
        g = r.grad(r.theta0, cid)
        ratio = np.linalg.norm(c_i) / np.linalg.norm(g)
        assert abs(ratio - 1.0) < 5e-3, ratio
        assert c_i @ g / (np.linalg.norm(c_i) * np.linalg.norm(g)) > 0.9999
