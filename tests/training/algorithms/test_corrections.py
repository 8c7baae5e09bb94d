"""Every correction part: one local step (adjust), its client-end state update and its server step,
on hand-made vectors whose expected values are worked out by hand in the comments (float64, 1e-12)."""
import pytest
import torch

from fedflat.training.algorithms import CORRECTIONS, SERVERS, ClientContext, ClientResult, RoundResult, ServerState
from fedflat.core.errors import ConfigError

T = lambda *v: torch.tensor(v, dtype=torch.float64)  # noqa: E731


def close(a, b):
    torch.testing.assert_close(a, T(*b) if not isinstance(b, torch.Tensor) else b, rtol=0, atol=1e-12)


def ctx(start=(0.0, 0.0), theta=None, lr=0.1, K=4, down=None, state=None, cid=0):
    start = T(*start)
    return ClientContext(cid=cid, round=1, lr=lr, local_steps=K, theta=start if theta is None else T(*theta),
                         start=start, down=down or {}, state=state or {}, num_samples=5)


def client(cid, delta, end=None, up=None):
    end = T(*(end or delta))
    return ClientResult(cid=cid, delta=T(*delta), end=end, up=up or {}, num_samples=5, train_loss=0.0,
                        buffers=torch.zeros(0))


def rnd(*clients):
    w = torch.full((len(clients),), 1.0 / len(clients), dtype=torch.float64)
    return RoundResult(1, [c.cid for c in clients], list(clients), w)


def server(n=5, **state):
    s = ServerState(theta=T(0.0, 0.0), buffers=torch.zeros(0), num_clients=n)
    s.state.update({k: T(*v) for k, v in state.items()})
    return s


def part(name, **hp):
    return CORRECTIONS.get(name)(**hp)


def test_prox_step_pulls_to_start_or_theta():
    p = part("prox", mu=0.1)
    c = ctx(start=(0.5, -1.0), theta=(0.0, 0.0))
    close(p.adjust(c, T(1.0, 2.0), T(0.3, 0.4)), (0.35, 0.7))  # g + 0.1·([1,2] − [0.5,−1])
    q = part("prox", mu=0.1, prox_anchor="theta")
    close(q.adjust(c, T(1.0, 2.0), T(0.3, 0.4)), (0.4, 0.6))  # g + 0.1·([1,2] − 0)


def test_scaffold_step_client_end_and_server_divide_by_all_clients():
    p = part("scaffold")
    srv = server(n=5)
    p.init_server(srv)
    srv.state["c"] = T(0.1, -0.2)
    c = ctx(start=(0.0, 0.0), lr=0.1, K=2, down=p.downlink(srv), state={"c_i": T(0.3, 0.1)})
    close(p.adjust(c, T(0.0, 0.0), T(1.0, 1.0)), (0.8, 0.7))  # g + c − c_i
    up = p.client_end(c, T(-0.2, 0.4))
    # c_i⁺ = c_i − c + (start − w)/(K·lr) = [0.2, 0.3] + [1.0, −2.0]
    close(c.state["c_i"], (1.2, -1.7))
    close(up["dc"], (0.9, -1.8))
    p.server_update(srv, rnd(client(0, (0, 0), up=up), client(1, (0, 0), up={"dc": T(0.1, 0.2)})))
    close(srv.state["c"], (0.1 + 1.0 / 5, -0.2 - 1.6 / 5))  # c + (1/N)·Σ_S Δc_i with N = 5, |S| = 2


def test_feddyn_step_client_end_and_dual_over_active_clients_divided_by_n():
    p = part("feddyn", alpha=0.5)
    c = ctx(start=(0.5, 0.0), state={"h_i": T(0.2, -0.4)})
    close(p.adjust(c, T(1.0, 1.0), T(0.1, 0.1)), (0.15, 1.0))  # g − h_i + α(w − θ)
    p.client_end(c, T(1.0, 1.0))
    close(c.state["h_i"], (-0.05, -0.9))  # h_i − α(w_K − θ)
    srv = server(n=5, h=(0.1, 0.1))
    r = rnd(client(0, (1.0, 2.0), end=(1.0, 1.0)), client(1, (3.0, -1.0), end=(3.0, 0.0)))
    p.server_update(srv, r)
    close(srv.state["h"], (0.1 - 0.5 * 4 / 5, 0.1 - 0.5 * 1 / 5))  # h − α·(1/N)·Σ_S Δ_i
    s = SERVERS.get("feddyn")(alpha=0.5)
    s.init_server(srv)
    s.apply(srv, r)
    close(srv.theta, (2.0 + 0.3 / 0.5, 0.5 - 0.0 / 0.5))  # mean_S w_i − h/α
    q = part("feddyn", alpha=0.5, dyn_scale="sampled")
    srv2 = server(n=5, h=(0.1, 0.1))
    q.server_update(srv2, r)
    close(srv2.state["h"], (0.1 - 0.5 * 4 / 2, 0.1 - 0.5 * 1 / 2))  # the 1/|S| variant


def test_feddyn_sent_uploads_its_dual_increment_and_the_server_sums_what_it_receives():
    """FedSynSAM's FedLESAM-D (Sec. VI-A, 2x): the client sends Δh_i = −α(w_K − θ) up; the server's dual moves by
    (1/N)·Σ_S of the RECEIVED Δh_i, not by α times the received model updates (here deliberately different)."""
    p = part("feddyn_sent", alpha=0.5)
    c = ctx(start=(0.5, 0.0), state={"h_i": T(0.2, -0.4)})
    close(p.adjust(c, T(1.0, 1.0), T(0.1, 0.1)), (0.15, 1.0))  # FedDyn's step, unchanged
    up = p.client_end(c, T(1.0, 1.0))
    close(up["dh"], (-0.25, -0.5))  # −α(w_K − θ) = −0.5·[0.5, 1]
    close(c.state["h_i"], (-0.05, -0.9))  # h_i + Δh_i: the same h_i as feddyn's
    srv = server(n=5, h=(0.1, 0.1))
    # what the server received: the compressed Δh_i, not −α·(received Δ_i) (= [-0.5, -1] and [-1.5, 0.5])
    r = rnd(client(0, (1.0, 2.0), up={"dh": T(-0.4, -1.0)}), client(1, (3.0, -1.0), up={"dh": T(-1.6, 0.6)}))
    p.server_update(srv, r)
    close(srv.state["h"], (0.1 - 2.0 / 5, 0.1 - 0.4 / 5))  # h + (1/N)·Σ_S received Δh_i, N = 5
    q = part("feddyn_sent", alpha=0.5, dyn_scale="sampled")
    srv2 = server(n=5, h=(0.1, 0.1))
    q.server_update(srv2, r)
    close(srv2.state["h"], (0.1 - 2.0 / 2, 0.1 - 0.4 / 2))  # the 1/|S| variant


def test_momentum_mix_step_and_gradient_estimate_from_the_rounds_lr():
    p = part("momentum_mix", cm_alpha=0.25)
    srv = server()
    p.init_server(srv)
    close(p.downlink(srv)["d"], (0.0, 0.0))  # d⁰ = 0
    c = ctx(lr=0.1, K=4, down={"d": T(0.4, -0.8)})
    p.client_begin(c)
    p.client_begin(ctx(lr=0.1, K=4, down={"d": T(0.4, -0.8)}, cid=1))  # every sampled client starts
    close(p.adjust(c, T(0.0, 0.0), T(1.0, 2.0)), (0.55, -0.1))  # 0.25·g + 0.75·d
    p.server_update(srv, rnd(client(0, (-0.2, 0.4)), client(1, (0.2, 0.8))))
    close(srv.state["d"], (0.0, -1.5))  # −mean Δ/(K·lr) = −[0, 0.6]/0.4


@pytest.mark.parametrize("name,expected", [("sagd_momentum", (1.1, 2.2)), ("anag_momentum", (1.55, 3.1))])
def test_global_momentum_step_and_server_rule(name, expected):
    p = part(name, beta=0.5)
    c = ctx(lr=0.1, K=4, down={"v": T(0.2, 0.4)})
    p.client_begin(c)
    p.client_begin(ctx(lr=0.1, K=4, down={"v": T(0.2, 0.4)}, cid=1))
    close(p.adjust(c, T(0.0, 0.0), T(1.0, 2.0)), expected)  # sagd: g + βv; anag: (1+β)g + β²v
    srv = server(v=(0.2, 0.4))
    p.server_update(srv, rnd(client(0, (-0.2, 0.4)), client(1, (0.2, 0.8))))
    # v ← β/(1+β)·v − mean Δ/((1+β)·lr·K) = [0.2, 0.4]/3 − [0, 0.6]/0.6
    close(srv.state["v"], (0.2 / 3, 0.4 / 3 - 1.0))


def test_hybrid_prox_is_prox_plus_decay():
    p = part("hybrid_prox", prox_lam=0.1, decay_mu=0.02)
    c = ctx(start=(0.5, 0.5))
    close(p.adjust(c, T(1.0, 2.0), T(0.0, 0.0)), (0.07, 0.19))  # (λ+μ)w − λθ


def test_local_nesterov_two_steps_and_buffer_averaging():
    p = part("local_nesterov", beta=0.5)
    srv = server()
    p.init_server(srv)
    c = ctx(down={"m_loc": T(0.2, 0.0)})
    p.client_begin(c)
    close(p.adjust(c, T(0.0, 0.0), T(1.0, -1.0)), (0.8, -0.75))  # m⁺ = [0.6, −0.5]; 1.5m⁺ − 0.5m
    close(p.adjust(c, T(0.0, 0.0), T(0.0, 2.0)), (0.15, 1.375))  # m⁺ = [0.3, 0.75]
    up = p.client_end(c, T(0.0, 0.0))
    close(up["m_loc"], (0.3, 0.75))
    p.server_update(srv, rnd(client(0, (0, 0), up=up), client(1, (0, 0), up={"m_loc": T(0.1, 0.25)})))
    close(srv.state["m_loc"], (0.2, 0.5))
    q = part("local_nesterov", beta=0.5, lnag_share=False)
    assert q.downlink(srv) == {}
    c2 = ctx()
    q.client_begin(c2)
    close(q.adjust(c2, T(0.0, 0.0), T(1.0, -1.0)), (0.75, -0.75))  # m = 0: 1.5·0.5·g
    assert q.client_end(c2, T(0.0, 0.0)) == {}


def test_local_nesterov_matches_nesterov_in_the_papers_variables_on_a_quadratic():
    """f(w) = ½ Σ a_j w_j²: FedSAGD App. C.5 with y = x − lr·βm, m⁺ = βm + (1−β)∇f(y), x⁺ = x − lr·m⁺.
    The engine's iterate is y: stepping y with the part's direction must reproduce the paper's y_k."""
    a, lr, beta = T(1.0, 3.0), 0.2, 0.7
    p = part("local_nesterov", beta=beta, lnag_share=False)
    c = ctx(start=(1.0, -2.0))
    p.client_begin(c)
    y = c.start.clone()
    x, m = c.start.clone(), T(0.0, 0.0)  # m⁰ = 0 so x⁰ = y⁰
    for _ in range(4):
        y = y - lr * p.adjust(c, y, a * y)
        m = beta * m + (1 - beta) * a * (x - lr * beta * m)
        x = x - lr * m
        close(y, x - lr * beta * m)


@pytest.mark.parametrize("mode,sent", [("first_batch", (0.5, 0.5)), ("local_mean", (1.0, 0.5))])
def test_mimelite_step_sent_gradient_and_server_momentum(mode, sent):
    p = part("mimelite", beta=0.2, mime_grad=mode)
    srv = server()
    p.init_server(srv)
    c = ctx(down={"mime_m": T(1.0, -1.0)})
    p.client_begin(c)
    close(p.adjust(c, T(0.0, 0.0), T(0.5, 0.5)), (0.6, 0.2))  # 0.8·g + 0.2·m
    close(p.adjust(c, T(0.0, 0.0), T(1.5, 0.5)), (1.4, 0.2))
    up = p.client_end(c, T(0.0, 0.0))
    close(up["mime_g"], sent)
    srv.state["mime_m"] = T(1.0, -1.0)
    p.server_update(srv, rnd(client(0, (0, 0), up={"mime_g": T(0.5, 0.5)}),
                             client(1, (0, 0), up={"mime_g": T(1.5, -0.5)})))
    close(srv.state["mime_m"], (1.0, -0.2))  # β·m + (1−β)·mean g = [0.2, −0.2] + 0.8·[1, 0]


def test_feddc_step_drift_and_both_server_aggregations():
    p = part("feddc", alpha=0.5)
    c = ctx(start=(0.5, 0.5), state={"dc_h": T(0.2, 0.0)})
    close(p.adjust(c, T(1.0, 1.0), T(0.0, 0.0)), (0.35, 0.25))  # α(w + h_i − θ)
    up = p.client_end(c, T(1.0, 1.0))
    close(c.state["dc_h"], (0.7, 0.5))  # h_i + (w_K − θ)
    close(up["dc_h"], (0.7, 0.5))
    srv = server(n=4)
    s = SERVERS.get("feddc")()
    s.init_server(srv)
    r = rnd(client(0, (0.5, 0.5), end=(1.0, 1.0), up=up),
            client(1, (-0.5, 1.5), end=(0.0, 2.0), up={"dc_h": T(-0.1, 0.1)}))
    s.server_update(srv, r)
    s.apply(srv, r)
    close(srv.theta, (0.8, 1.8))  # mean_S(w_i + h_i)
    q = part("feddc", alpha=0.5, feddc_agg="all")
    assert q.client_end(ctx(state={"dc_h": T(0.0, 0.0)}), T(1.0, 1.0)) == {}
    s2 = SERVERS.get("feddc")(feddc_agg="all")
    srv2 = server(n=4)
    s2.init_server(srv2)
    s2.server_update(srv2, r)
    close(srv2.state["dc_H"], (0.0, 0.5))  # (1/N) Σ_S Δ_i, N = 4
    s2.apply(srv2, r)
    close(srv2.theta, (0.5, 2.0))  # mean_S w_i + H


def test_parts_fail_clearly_without_their_server_vectors():
    with pytest.raises(ConfigError, match="scaffold"):
        part("scaffold").adjust(ctx(state={"c_i": T(0.0, 0.0)}), T(0.0, 0.0), T(0.0, 0.0))
    with pytest.raises(ConfigError, match="feddyn"):
        SERVERS.get("feddyn")().init_server(server())
