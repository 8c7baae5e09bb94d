"""Server parts: one server step each against hand-computed values (float64)."""
import math

import pytest
import torch

from fedflat.training.algorithms import SERVERS, ClientContext, ClientResult, RoundResult, ServerState

T = lambda *v: torch.tensor(v, dtype=torch.float64)  # noqa: E731


def close(a, b):
    torch.testing.assert_close(a, T(*b), rtol=0, atol=1e-12)


def rnd(*deltas, weights=None, cids=None):
    cids = cids or list(range(len(deltas)))
    cl = [ClientResult(cid=c, delta=T(*d), end=T(*d), up={}, num_samples=5, train_loss=0.0, buffers=torch.zeros(0))
          for c, d in zip(cids, deltas)]
    w = torch.tensor(weights or [1.0 / len(deltas)] * len(deltas), dtype=torch.float64)
    return RoundResult(1, cids, cl, w)


def srv(theta=(0.0, 0.0), n=5):
    return ServerState(theta=T(*theta), buffers=torch.zeros(0), num_clients=n)


def test_fedadam_two_steps():
    s, st = SERVERS.get("adam")(server_lr=0.5, beta1=0.9, beta2=0.99, tau=0.1), srv((1.0, 1.0))
    s.init_server(st)
    close(st.state["opt_v"], (0.01, 0.01))  # v⁰ = τ²
    s.apply(st, rnd((0.2, -0.4)))
    m, v = (0.02, -0.04), (0.99 * 0.01 + 0.01 * 0.04, 0.99 * 0.01 + 0.01 * 0.16)
    th = tuple(1.0 + 0.5 * mi / (math.sqrt(vi) + 0.1) for mi, vi in zip(m, v))
    close(st.theta, th)
    s.apply(st, rnd((0.0, 0.4)))
    m = (0.9 * m[0], 0.9 * m[1] + 0.04)
    v = (0.99 * v[0], 0.99 * v[1] + 0.01 * 0.16)
    close(st.theta, tuple(t + 0.5 * mi / (math.sqrt(vi) + 0.1) for t, mi, vi in zip(th, m, v)))


def test_fedyogi_second_moment_moves_by_sign():
    s, st = SERVERS.get("yogi")(server_lr=0.5, beta1=0.9, beta2=0.99, tau=0.1), srv()
    s.init_server(st)
    st.state["opt_v"] = T(0.01, 1.0)  # first coordinate v < Δ², second v > Δ²
    s.apply(st, rnd((0.2, -0.4)))
    v = (0.01 + 0.01 * 0.04, 1.0 - 0.01 * 0.16)  # v − (1−β2)Δ² sign(v − Δ²)
    close(st.state["opt_v"], v)
    close(st.theta, (0.5 * 0.02 / (math.sqrt(v[0]) + 0.1), 0.5 * -0.04 / (math.sqrt(v[1]) + 0.1)))


def test_adam_v0_zero_switch():
    s, st = SERVERS.get("adam")(tau=0.1, adam_v0="zero"), srv()
    s.init_server(st)
    close(st.state["opt_v"], (0.0, 0.0))


def _begin(server, cid, steps, momentum=0.0):
    server.client_begin(ClientContext(cid=cid, round=1, lr=0.1, local_steps=steps, theta=T(0, 0), start=T(0, 0),
                                      down={}, state={}, num_samples=5, local_momentum=momentum))


@pytest.mark.parametrize("rho,a", [(0.0, (2.0, 4.0)), (0.5, (2.5, 6.125))])
def test_fednova_normalises_by_local_steps(rho, a):
    # a_i = (τ − ρ(1−ρ^τ)/(1−ρ))/(1−ρ): ρ=0.5, τ=2: (2 − 0.75)/0.5 = 2.5; τ=4: (4 − 0.9375)/0.5 = 6.125
    s, st = SERVERS.get("nova")(), srv()
    _begin(s, 3, 2, rho)  # ρ is the clients' local momentum (training.local_momentum), not a server knob
    _begin(s, 7, 4, rho)
    s.apply(st, rnd((0.2, 0.0), (0.0, 0.8), cids=[3, 7]))
    tau_eff = 0.5 * a[0] + 0.5 * a[1]  # Σ p_i a_i
    close(st.theta, (tau_eff * 0.5 * 0.2 / a[0], tau_eff * 0.5 * 0.8 / a[1]))


def test_fednova_with_equal_steps_is_fedavg():
    s, st = SERVERS.get("nova")(), srv((1.0, 1.0))
    _begin(s, 0, 3)
    _begin(s, 1, 3)
    s.apply(st, rnd((0.3, 0.0), (0.0, 0.9), weights=[0.25, 0.75]))
    close(st.theta, (1.075, 1.675))


def test_feddyn_server_without_dual_is_the_plain_mean():
    s, st = SERVERS.get("feddyn")(alpha=0.5, dyn_server_dual=False), srv()
    st.state["h"] = T(1.0, 1.0)
    s.apply(st, rnd((1.0, 2.0), (3.0, 0.0)))
    close(st.theta, (2.0, 1.0))


def test_momentum_server_lookahead_start_point():
    s, st = SERVERS.get("momentum")(lam=0.5, lookahead=True), srv((1.0, 1.0))
    s.init_server(st)
    st.state["m"] = T(0.2, -0.4)
    close(s.start_point(st), (1.1, 0.8))
    s.apply(st, rnd((0.1, 0.1)))
    close(st.state["m"], (0.2, -0.1))  # λm + mean Δ
    close(st.theta, (1.2, 0.9))
