"""One local step of every perturbation part (and FedTOGA's βΔ correction, the loss terms) against
hand-computed values: a quadratic F(p) = ½pᵀAp − bᵀp with ∇F(p) = Ap − b in closed form, or a
linear softmax model whose KL/NTD gradients are written out by hand."""
import numpy as np
import pytest
import torch
import torch.nn as nn

from fedflat.training.algorithms import CORRECTIONS, PERTURBATIONS, ClientResult, RoundResult, ServerState
from fedflat.training.algorithms.losses import NTDLoss
from fedflat.core.errors import ConfigError

from .helpers_quadratic import TOL, N, _rng, ctx_for, g_np, step, w_np
from .helpers_sam import C, D, H, ce, forward, grad, tensor_slices


pytestmark = pytest.mark.usefixtures("float64")  # exact hand-derived comparisons


# ----------------------------------------------------------------------------------- SAM family
def test_sam_step_hand_computed():
    rho = 0.3
    part = PERTURBATIONS.get("sam")(rho=rho)
    g, calls = step(part, ctx_for(), w_np)
    g0 = g_np(w_np)
    expected = g_np(w_np + rho * g0 / np.linalg.norm(g0))
    np.testing.assert_allclose(g, expected, atol=TOL)
    assert len(calls) == part.grad_evals == 2


def test_asam_step_hand_computed():
    rho, eta = 0.5, 0.2
    part = PERTURBATIONS.get("asam")(rho=rho, asam_eta=eta)
    g, calls = step(part, ctx_for(), w_np)
    g0 = g_np(w_np)
    T = np.abs(w_np) + eta
    delta = rho * T * T * g0 / np.linalg.norm(T * g0)
    np.testing.assert_allclose(g, g_np(w_np + delta), atol=TOL)
    np.testing.assert_allclose(calls[1].numpy() - w_np, delta, atol=TOL)  # not the SAM point
    assert np.abs(delta - rho * g0 / np.linalg.norm(g0)).max() > 1e-3


@pytest.mark.parametrize("mode", ["G", "N", "fusion"])
def test_toga_perturbation_three_modes(mode):
    rho, kappa = 0.2, 1.5
    Dl = _rng.normal(size=N)
    part = PERTURBATIONS.get("toga")(rho=rho, kappa=kappa, toga_mode=mode)
    ctx = ctx_for(down={"toga_delta": torch.tensor(Dl)})
    part.client_begin(ctx)
    w1 = w_np.copy()
    g1, calls1 = step(part, ctx, w1)
    w2 = w1 - 0.1 * g1
    g2, calls2 = step(part, ctx, w2)
    # hand derivation, two steps
    if mode == "G":
        d1, d2 = g_np(w1) + kappa * Dl, g_np(w2) + kappa * Dl
    elif mode == "N":  # g̃_{-1} = 0, then the previous perturbed gradient
        d1, d2 = kappa * Dl, g1 + kappa * Dl
    else:
        d1, d2 = g_np(w1) + kappa * Dl, g_np(w2) + g1 + kappa * Dl
    e1 = g_np(w1 + rho * d1 / np.linalg.norm(d1))
    e2 = g_np(w2 + rho * d2 / np.linalg.norm(d2))
    np.testing.assert_allclose(g1, e1, atol=TOL)
    np.testing.assert_allclose(g2, e2, atol=TOL)
    assert len(calls2) == part.grad_evals == (1 if mode == "N" else 2)


def test_smoo_step_dual_and_server():
    rho = 0.3
    s = _rng.normal(size=N) * 0.1
    mu0 = _rng.normal(size=N) * 0.1
    part = PERTURBATIONS.get("smoo")(rho=rho)
    ctx = ctx_for(down={"smoo_s": torch.tensor(s)}, state={"smoo_mu": torch.tensor(mu0)})
    part.client_begin(ctx)
    g, _ = step(part, ctx, w_np)
    S = g_np(w_np) - mu0 - s
    shat = rho * S / np.linalg.norm(S)
    np.testing.assert_allclose(g, g_np(w_np + shat), atol=TOL)
    mu1 = mu0 + shat - s
    np.testing.assert_allclose(ctx.state["smoo_mu"].numpy(), mu1, atol=TOL)
    up = part.client_end(ctx, torch.tensor(w_np))["smoo_s"].numpy()
    np.testing.assert_allclose(up, mu1 - shat, atol=TOL)  # Alg. 2: s̃_i = μ_i − ŝ_K
    # server: s = ρ mean s̃ / ‖mean s̃‖
    other = _rng.normal(size=N)
    srv = ServerState(theta=torch.zeros(N), buffers=torch.zeros(0), num_clients=5)
    part.init_server(srv)
    rnd = _round([{"smoo_s": torch.tensor(up)}, {"smoo_s": torch.tensor(other)}])
    part.server_update(srv, rnd)
    m = (up + other) / 2
    np.testing.assert_allclose(srv.state["smoo_s"].numpy(), rho * m / np.linalg.norm(m), atol=TOL)


def _round(ups, deltas=None):
    deltas = deltas or [torch.zeros(N) for _ in ups]
    cl = [ClientResult(cid=i, delta=d, end=d, up=u, num_samples=1, train_loss=0.0, buffers=torch.zeros(0))
          for i, (u, d) in enumerate(zip(ups, deltas))]
    return RoundResult(round=1, sampled=list(range(len(cl))), clients=cl, weights=torch.full((len(cl),), 1.0 / len(cl)))


# ----------------------------------------------------------------------------------- fixed directions
def test_momentum_direction_is_minus_rho_m_hat_one_pass():
    rho = 0.4
    m = _rng.normal(size=N)
    part = PERTURBATIONS.get("momentum_direction")(rho=rho)
    ctx = ctx_for(down={"m": torch.tensor(m)})
    part.client_begin(ctx)
    g, calls = step(part, ctx, w_np)
    np.testing.assert_allclose(g, g_np(w_np - rho * m / np.linalg.norm(m)), atol=TOL)
    assert len(calls) == part.grad_evals == 1


@pytest.mark.parametrize("extrapolate", [False, True])
def test_own_momentum_direction(extrapolate):
    rho, lam = 0.4, 0.7
    part = PERTURBATIONS.get("own_momentum_direction")(rho=rho, lam=lam, extrapolate=extrapolate)
    srv = ServerState(theta=torch.zeros(N), buffers=torch.zeros(0), num_clients=3)
    part.init_server(srv)
    d1, d2 = _rng.normal(size=N), _rng.normal(size=N)
    part.server_update(srv, _round([{}, {}], [torch.tensor(d1), torch.tensor(d2)]))
    m = (d1 + d2) / 2  # m = λ·0 + mean Δ
    np.testing.assert_allclose(srv.state["nsam_m"].numpy(), m, atol=TOL)
    ctx = ctx_for(down=part.downlink(srv))
    part.client_begin(ctx)
    g, calls = step(part, ctx, w_np)
    point = w_np - rho * m / np.linalg.norm(m) + (lam * m if extrapolate else 0.0)
    np.testing.assert_allclose(g, g_np(point), atol=TOL)
    assert len(calls) == 1


def test_stale_direction_first_then_stale_model():
    rho = 0.3
    part = PERTURBATIONS.get("stale_direction")(rho=rho)
    srv = ServerState(theta=torch.tensor(_rng.normal(size=N)), buffers=torch.zeros(0), num_clients=3)
    part.init_server(srv)
    state = {"lesam_old": torch.zeros(N)}
    th1 = torch.tensor(_rng.normal(size=N))
    ctx = ctx_for(theta=th1, state=state)
    part.client_begin(ctx)
    g, calls = step(part, ctx, w_np)
    np.testing.assert_allclose(g, g_np(w_np), atol=TOL)  # first participation: δ = 0
    part.client_end(ctx, torch.tensor(w_np))
    np.testing.assert_allclose(state["lesam_old"].numpy(), th1.numpy(), atol=0)
    th2 = torch.tensor(_rng.normal(size=N))
    ctx = ctx_for(theta=th2, state=state)
    part.client_begin(ctx)
    g, calls = step(part, ctx, w_np)
    d = th1.numpy() - th2.numpy()
    np.testing.assert_allclose(g, g_np(w_np + rho * d / np.linalg.norm(d)), atol=TOL)
    assert len(calls) == part.grad_evals == 1
    # lesam_first=init: θ_old = θ^0 at the first participation
    part = PERTURBATIONS.get("stale_direction")(rho=rho, lesam_first="init")
    part.init_server(srv)
    ctx = ctx_for(theta=th2, state={"lesam_old": torch.zeros(N)})
    part.client_begin(ctx)
    g, _ = step(part, ctx, w_np)
    d = srv.theta.numpy() - th2.numpy()
    np.testing.assert_allclose(g, g_np(w_np + rho * d / np.linalg.norm(d)), atol=TOL)


def test_stale_direction_is_per_parameter_not_per_tensor():
    """The FedLESAM repo indexes the flat direction per parameter tensor, so each tensor moves by
    one scalar. Here the 6 entries form two 'tensors' of 3; the point must move entry-wise."""
    rho = 0.5
    part = PERTURBATIONS.get("stale_direction")(rho=rho)
    srv = ServerState(theta=torch.zeros(N), buffers=torch.zeros(0), num_clients=1)
    part.init_server(srv)
    old = torch.tensor([1.0, -2.0, 3.0, 0.5, 4.0, -1.0])
    theta = torch.tensor([0.2, 0.1, -0.3, 0.0, 1.0, 2.0])
    ctx = ctx_for(theta=theta, state={"lesam_old": old.clone()})
    part.client_begin(ctx)
    _, calls = step(part, ctx, w_np)
    moved = calls[0].numpy() - w_np
    d = (old - theta).numpy()
    np.testing.assert_allclose(moved, rho * d / np.linalg.norm(d), atol=TOL)
    for s in (slice(0, 3), slice(3, 6)):  # a per-tensor scalar would make these spreads 0
        assert np.ptp(moved[s]) > 0.1
    buggy = np.concatenate([np.full(3, rho * d[0] / np.linalg.norm(d)), np.full(3, rho * d[1] / np.linalg.norm(d))])
    assert np.abs(moved - buggy).max() > 0.1


def test_zero_direction_gives_zero_perturbation():
    for name, kw, down in (("momentum_direction", {}, {"m": torch.zeros(N)}),
                           ("toga", {"toga_mode": "N"}, {"toga_delta": torch.zeros(N)})):
        part = PERTURBATIONS.get(name)(**kw)
        ctx = ctx_for(down=down)
        part.client_begin(ctx)
        g, _ = step(part, ctx, w_np)
        np.testing.assert_allclose(g, g_np(w_np), atol=TOL)


def test_momentum_direction_without_server_momentum_is_config_error():
    with pytest.raises(ConfigError, match="momentum"):
        PERTURBATIONS.get("momentum_direction")().client_begin(ctx_for())


# ----------------------------------------------------------------------------------- FedTOGA's Δ
def test_global_delta_correction_and_server_estimate():
    beta, lr, K = 0.8, 0.1, 3
    corr = CORRECTIONS.get("global_delta")(beta=beta)
    srv = ServerState(theta=torch.zeros(N), buffers=torch.zeros(0), num_clients=4)
    corr.init_server(srv)
    np.testing.assert_allclose(srv.state["toga_delta"].numpy(), 0.0)  # Δ^0 = 0
    for cid in (0, 1):  # both clients of the round start (the server notes their K and lr)
        corr.client_begin(ctx_for(lr=lr, K=K, cid=cid))
    d1, d2 = _rng.normal(size=N), _rng.normal(size=N)
    corr.server_update(srv, _round([{}, {}], [torch.tensor(d1), torch.tensor(d2)]))
    delta = -(d1 + d2) / 2 / (K * lr)  # fedcm scale
    np.testing.assert_allclose(srv.state["toga_delta"].numpy(), delta, atol=TOL)
    ctx = ctx_for(down=corr.downlink(srv))
    g = torch.tensor(_rng.normal(size=N))
    np.testing.assert_allclose(corr.adjust(ctx, None, g).numpy(), g.numpy() + beta * delta, atol=TOL)
    # literal Alg. 1 scale: divide by K only
    corr = CORRECTIONS.get("global_delta")(beta=beta, delta_norm="step")
    srv2 = ServerState(theta=torch.zeros(N), buffers=torch.zeros(0), num_clients=4)
    corr.init_server(srv2)
    for cid in (0, 1):
        corr.client_begin(ctx_for(lr=lr, K=K, cid=cid))
    corr.server_update(srv2, _round([{}, {}], [torch.tensor(d1), torch.tensor(d2)]))
    np.testing.assert_allclose(srv2.state["toga_delta"].numpy(), -(d1 + d2) / 2 / K, atol=TOL)


# ----------------------------------------------------------------------------------- FedSOL
def linear_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(D, C))


def mlp_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(D, H), nn.ReLU(), nn.Linear(H, C))


def _sol_data():
    rng = np.random.default_rng(7)
    x = torch.tensor(rng.normal(size=(5, D)))
    y = torch.tensor(rng.integers(0, C, size=5))
    return x, y


def test_fedsol_fixed_linear_closed_form():
    """Linear model: ∇_z KL(p_θ‖p_w) (batchmean, logits/τ) = (p_w − p_θ)/(τB), so ∇W = that^T x."""
    rho, tau = 0.7, 3.0
    x, y = _sol_data()
    model = linear_model()
    n = C * D + C
    rng = np.random.default_rng(11)
    theta, w = rng.normal(size=n), rng.normal(size=n)
    Wt, bt, Ww, bw = theta[:15].reshape(C, D), theta[15:], w[:15].reshape(C, D), w[15:]
    X = x.numpy()

    def softmax(z):
        e = np.exp(z - z.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    G = (softmax((X @ Ww.T + bw) / tau) - softmax((X @ Wt.T + bt) / tau)) / (tau * len(X))
    gp = np.concatenate([(G.T @ X).ravel(), G.sum(0)])
    for adaptive in (False, True):
        part = PERTURBATIONS.get("fedsol")(rho=rho, sol_adaptive=adaptive, sol_tau=tau)
        eps = part.perturbation(model, torch.tensor(w), torch.tensor(theta), x).numpy()
        expected = rho * gp / np.linalg.norm(gp)
        if adaptive:  # Λ per parameter tensor: |w − θ| / ‖w − θ‖ over W, then over b
            a = np.abs(w - theta)
            lam = np.concatenate([a[:15] / np.linalg.norm(a[:15]), a[15:] / np.linalg.norm(a[15:])])
            expected = expected * lam
        np.testing.assert_allclose(eps, expected, atol=TOL)
        # and the step takes the local gradient at w + ε through grad_at
        ctx = ctx_for(theta=torch.tensor(theta))
        ctx.scratch["model"] = model
        _, calls = quad_like(part, ctx, w, (x, y))
        np.testing.assert_allclose(calls[0].numpy(), w + expected, atol=TOL)


def quad_like(part, ctx, w, batch):
    calls = []

    def grad_at(p, b):
        calls.append(p.clone())
        return torch.zeros(()), torch.zeros_like(p)

    out = part.gradient(ctx, torch.tensor(w), batch, grad_at)
    return out, calls


@pytest.mark.parametrize("target", ["head", "body", "full"])
@pytest.mark.parametrize("lam_mode", ["tensor", "dim0"])
def test_fedsol_partial_and_lambda_on_mlp(target, lam_mode):
    rho, tau = 1.3, 3.0
    x, _ = _sol_data()
    model = mlp_model()
    n = H * D + H + C * H + C
    rng = np.random.default_rng(5)
    theta, w = torch.tensor(rng.normal(size=n)), torch.tensor(rng.normal(size=n))

    def kl(t):  # plain-tensor reference, independent of fedflat
        lp = torch.log_softmax(forward(t, x, "mlp")[0] / tau, 1)
        q = torch.softmax(forward(theta, x, "mlp")[0] / tau, 1)
        return (q * (q.log() - lp)).sum() / len(x)

    gp = grad(kl, w)
    slices = tensor_slices("mlp")
    mask = torch.zeros(n)
    for s, is_head in slices:
        if target == "full" or (target == "head") == is_head:
            mask[s] = 1.0
    gp = gp * mask
    expected = rho * gp / gp.norm()
    lam = torch.zeros(n)
    shapes = [(H, D), (H,), (C, H), (C,)]
    for (s, _), shape in zip(slices, shapes):
        a = (w[s] - theta[s]).abs()
        if lam_mode == "tensor":
            lam[s] = a / a.norm()
        else:  # official code: normalise along dim 0 of each tensor
            a2 = a.view(shape)
            lam[s] = (a2 / a2.norm(dim=0, keepdim=True)).reshape(-1)
    expected = expected * lam
    part = PERTURBATIONS.get("fedsol")(rho=rho, sol_target=target, sol_lambda=lam_mode, sol_tau=tau)
    eps = part.perturbation(model, w, theta, x)
    np.testing.assert_allclose(eps.numpy(), expected.numpy(), atol=TOL)
    assert (eps[mask == 0] == 0).all() and eps.abs().max() > 1e-3


def test_fedsol_zero_at_round_start():
    x, _ = _sol_data()
    model = mlp_model()
    theta = torch.tensor(np.random.default_rng(2).normal(size=H * D + H + C * H + C))
    for adaptive in (True, False):
        eps = PERTURBATIONS.get("fedsol")(sol_adaptive=adaptive).perturbation(model, theta.clone(), theta, x)
        assert eps.abs().max().item() == 0.0


# ----------------------------------------------------------------------------------- loss terms
def test_ntd_loss_term_hand_computed():
    beta, tau = 0.7, 2.0
    x, y = _sol_data()
    model = linear_model()
    n = C * D + C
    rng = np.random.default_rng(9)
    theta, w = rng.normal(size=n), rng.normal(size=n)
    X, Y = x.numpy(), y.numpy()
    zl = X @ w[:15].reshape(C, D).T + w[15:]
    zg = X @ theta[:15].reshape(C, D).T + theta[15:]
    total = 0.0
    for i in range(len(X)):
        keep = [c for c in range(C) if c != Y[i]]
        q = np.exp(zg[i, keep] / tau); q /= q.sum()
        p = np.exp(zl[i, keep] / tau); p /= p.sum()
        total += (q * np.log(q / p)).sum()
    expected = beta * tau ** 2 * total / len(X)
    part = NTDLoss(ntd_beta=beta, ntd_tau=tau)
    ctx = ctx_for(theta=torch.tensor(theta))
    got = part.loss_term(ctx, torch.tensor(zl), x, y, model)
    assert abs(got.item() - expected) < TOL


def test_moon_loss_term_hand_computed():
    mu, tau = 0.3, 0.5
    x, y = _sol_data()
    model = mlp_model()
    n = H * D + H + C * H + C
    rng = np.random.default_rng(10)
    theta0, theta, prev, w = (torch.tensor(rng.normal(size=n)) for _ in range(4))
    part = CORRECTIONS.get("moon")(moon_mu=mu, moon_tau=tau)
    srv = ServerState(theta=theta0, buffers=torch.zeros(0), num_clients=2)
    part.init_server(srv)
    from fedflat.training.algorithms.losses import as_params
    for state_prev, used_prev in ((torch.zeros(n), theta0), (prev.clone(), prev)):
        ctx = ctx_for(theta=theta, state={"moon_prev": state_prev})
        ctx.scratch["model"] = model
        part.client_begin(ctx)
        with torch.no_grad():
            for p, v in zip(model.parameters(), as_params(model, w).values()):
                p.copy_(v)
        logits = model(x)  # the engine's forward: the hook records the local features
        got = part.loss_term(ctx, logits, x, y, model).item()
        z, zg, zp = forward(w, x, "mlp")[1], forward(theta, x, "mlp")[1], forward(used_prev, x, "mlp")[1]
        cos = lambda a, b: (a * b).sum(1) / (a.norm(dim=1) * b.norm(dim=1))
        a, b = cos(z, zg) / tau, cos(z, zp) / tau
        expected = mu * (-(a - torch.logaddexp(a, b))).mean().item()
        assert abs(got - expected) < TOL, (got, expected, z)
    part.client_end(ctx, w)
    assert torch.equal(ctx.state["moon_prev"], w)


# ----------------------------------------------------------------------------------- domains
@pytest.mark.parametrize("name,hp,word", [
    ("fedasam", {"rho": -0.1}, "rho"), ("fedtoga", {"beta": 1.5}, "beta"), ("fedtoga", {"kappa": -1.0}, "kappa"),
    ("fedtoga", {"toga_mode": "X"}, "toga_mode"), ("fednsam_no_nesterov", {"lam": 1.0}, "lam"),
    ("fedsol", {"sol_target": "neck"}, "sol_target"), ("fedsol", {"sol_tau": 0.0}, "sol_tau"),
    ("fedlesam", {"lesam_first": "x"}, "lesam_first"), ("moon", {"moon_mu": -1}, "moon_mu"),
    ("fedsmoo", {"smoo_upload": "y"}, "smoo_upload"), ("fedntd", {"nope": 1}, "nope"),
])
def test_bad_hyperparameters_are_config_errors(name, hp, word):
    from fedflat.training.algorithms import build_algorithm
    with pytest.raises(ConfigError, match=word):
        build_algorithm(name, hp)
