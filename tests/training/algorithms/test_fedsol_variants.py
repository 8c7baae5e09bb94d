"""FedSOL Tables 1, 4, 10 parts against hand-derived updates (float64, tiny linear / MLP models):
Eq. 3 projection (both branches), the proximal-loss sources of the Combined perturbation
(L2, FedProx, SCAFFOLD, FedDyn, MOON, KL), and the A1-A6 loss/point options. References are plain
tensors + autograd (tests/training/algorithms/helpers_sam.py), never fedflat's parts."""
import numpy as np
import pytest
import torch
import torch.nn as nn

from fedflat.training.algorithms import CORRECTIONS, PERTURBATIONS, ClientContext, ServerState, build_algorithm
from fedflat.core.errors import ConfigError

from .helpers_sam import C, D, H, forward, grad, make_sim, run, tensor_slices

pytestmark = pytest.mark.usefixtures("float64")
TOL = 1e-10
TAU = 3.0
N_MLP = H * D + H + C * H + C


def mlp_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(D, H), nn.ReLU(), nn.Linear(H, C))


def data(seed=7, n=5):
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.normal(size=(n, D))), torch.tensor(rng.integers(0, C, size=n))


def vecs(seed, k=2, scale=1.0):
    rng = np.random.default_rng(seed)
    return [torch.tensor(rng.normal(size=N_MLP)) * scale for _ in range(k)]


def ce_ref(x, y):
    return lambda t: torch.nn.functional.cross_entropy(forward(t, x, "mlp")[0], y)


def kl_ref(theta, x):
    """KL(softmax(f_θ/τ) ‖ softmax(f_w/τ)), batchmean, written out."""
    q = torch.softmax(forward(theta, x, "mlp")[0] / TAU, 1)

    def f(t):
        lp = torch.log_softmax(forward(t, x, "mlp")[0] / TAU, 1)
        return (q * (q.log() - lp)).sum() / len(x)
    return f


def head_mask():
    m = torch.zeros(N_MLP)
    for s, is_head in tensor_slices("mlp"):
        if is_head:
            m[s] = 1.0
    return m


def lam_tensor(w, theta):
    """Λ per parameter tensor: |w − θ|/‖w − θ‖ (FedSOL Eq. 7)."""
    out = torch.zeros(N_MLP)
    for s, _ in tensor_slices("mlp"):
        a = (w[s] - theta[s]).abs()
        out[s] = a / a.norm()
    return out


def ctx_for(theta, model, state=None, down=None, start=None):
    ctx = ClientContext(cid=0, round=1, lr=0.1, local_steps=3, theta=theta, start=theta if start is None else start,
                        down=down or {}, state=state or {}, num_samples=5)
    ctx.scratch["model"] = model
    return ctx


def recording(x, y):
    """grad_at from the plain reference; records the points it is asked about."""
    calls = []

    def grad_at(p, batch):
        calls.append(p.clone())
        f = ce_ref(x, y)
        return f(p).detach(), grad(f, p)

    return grad_at, calls


# ------------------------------------------------------------------------ Table 1: projection (Eq. 3)
@pytest.mark.parametrize("source", ["l2", "kl"])
def test_projection_both_branches(source):
    x, y = data()
    model = mlp_model()
    w, r = vecs(1)
    g_l = grad(ce_ref(x, y), w)
    seen = set()
    for theta in (w - r, w + r):  # g_p flips sign between the two: one conflicts, one does not
        g_p = (w - theta) if source == "l2" else grad(kl_ref(theta, x), w)
        dot = float(g_l @ g_p)
        expected = g_l - dot / float(g_p @ g_p) * g_p if dot < 0 else g_l
        part = PERTURBATIONS.get("projection")(sol_prox=source, sol_tau=TAU)
        grad_at, calls = recording(x, y)
        _, got = part.gradient(ctx_for(theta, model), w.clone(), (x, y), grad_at)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=TOL)
        assert len(calls) == 1 and torch.equal(calls[0], w)  # no perturbation
        if dot < 0:
            assert abs(float(got @ g_p)) < 1e-9 * g_p.norm() * g_l.norm()  # orthogonal after projection
            assert not torch.allclose(got, g_l)
        else:
            assert torch.equal(got, g_l)
        seen.add(dot < 0)
    assert seen == {True, False}


def test_projection_at_round_start_is_plain_sgd():
    x, y = data()
    w = vecs(2, 1)[0]
    for source in ("l2", "kl"):
        part = PERTURBATIONS.get("projection")(sol_prox=source)
        grad_at, _ = recording(x, y)
        _, got = part.gradient(ctx_for(w.clone(), mlp_model()), w.clone(), (x, y), grad_at)
        np.testing.assert_allclose(got.numpy(), grad(ce_ref(x, y), w).numpy(), atol=TOL)


def test_kl_prox_loss_term_value_and_gradient():
    x, y = data()
    model = mlp_model()
    theta, w = vecs(3)
    beta = 0.7
    part = CORRECTIONS.get("kl_prox")(kl_beta=beta, sol_tau=TAU)
    ctx = ctx_for(theta, model)
    t = w.clone().requires_grad_(True)
    from fedflat.training.algorithms.losses import as_params, forward_with
    got = part.loss_term(ctx, forward_with(model, as_params(model, t), x), x, y, model)
    ref = beta * kl_ref(theta, x)(w)
    assert abs(got.item() - ref.item()) < TOL
    (g,) = torch.autograd.grad(got, t)
    np.testing.assert_allclose(g.numpy(), (beta * grad(kl_ref(theta, x), w)).numpy(), atol=TOL)


# ------------------------------------------------------------------------ Table 4: proximal sources
def _combined(corr_name, corr_hp, state, down, expected_gp, seed=4):
    """g_p of the part's sources equals the hand gradient, and the step is ∇CE at w + ρΛ⊙ĝ_p."""
    x, y = data()
    model = mlp_model()
    theta, w = vecs(seed)
    rho = 0.9
    part = PERTURBATIONS.get("fedsol_general")(rho=rho, sol_target="full", sol_prox="parts")
    peer = CORRECTIONS.get(corr_name)(**corr_hp)
    srv = ServerState(theta=theta.clone(), buffers=torch.zeros(0), num_clients=2)
    peer.init_server(srv)
    part.peers = [peer]
    ctx = ctx_for(theta, model, state=state, down=down)
    peer.client_begin(ctx)
    gp_ref = expected_gp(theta, w, x, y)
    gp = part.prox_gradient(ctx, model, w, x, y, part._targets(model))
    np.testing.assert_allclose(gp.numpy(), gp_ref.numpy(), atol=TOL)
    grad_at, calls = recording(x, y)
    part.gradient(ctx, w.clone(), (x, y), grad_at)
    eps = rho * lam_tensor(w, theta) * gp_ref / gp_ref.norm()
    assert len(calls) == 1
    np.testing.assert_allclose(calls[0].numpy(), (w + eps).numpy(), atol=TOL)
    return gp


def test_combined_fedprox_is_l2_direction():
    mu = 0.6
    _combined("prox", {"mu": mu}, {}, {}, lambda th, w, x, y: mu * (w - th))
    # and sol_prox=l2 needs no peer: the same direction (ε is scale-free)
    x, y = data()
    theta, w = vecs(4)
    part = PERTURBATIONS.get("fedsol_general")(rho=0.9, sol_target="full", sol_prox="l2")
    grad_at, calls = recording(x, y)
    part.gradient(ctx_for(theta, mlp_model()), w.clone(), (x, y), grad_at)
    eps = 0.9 * lam_tensor(w, theta) * (w - theta) / (w - theta).norm()
    np.testing.assert_allclose(calls[0].numpy(), (w + eps).numpy(), atol=TOL)


def test_combined_scaffold_uses_c_minus_ci():
    c, c_i = vecs(5)
    _combined("scaffold", {}, {"c_i": c_i.clone()}, {"c": c.clone()}, lambda th, w, x, y: c - c_i)


def test_combined_feddyn_linear_plus_quadratic():
    alpha = 0.3
    h_i = vecs(6, 1)[0]
    _combined("feddyn", {"alpha": alpha}, {"h_i": h_i.clone()}, {}, lambda th, w, x, y: -h_i + alpha * (w - th))


def test_combined_moon_contrastive_gradient():
    mu, tau = 0.4, 0.5
    prev = vecs(8, 1)[0]

    def moon_grad(theta, w, x, y):
        def f(t):
            z, zg, zp = forward(t, x, "mlp")[1], forward(theta, x, "mlp")[1], forward(prev, x, "mlp")[1]
            cos = lambda a, b: (a * b).sum(1) / (a.norm(dim=1) * b.norm(dim=1))
            a, b = cos(z, zg) / tau, cos(z, zp) / tau
            return mu * (-(a - torch.logaddexp(a, b))).mean()
        return grad(f, w)

    gp = _combined("moon", {"moon_mu": mu, "moon_tau": tau}, {"moon_prev": prev.clone()}, {}, moon_grad,
                   seed=9)  # seed 9: no sample has all-zero ReLU features (cos would be 0/0)
    assert gp[head_mask() == 1].abs().max() == 0  # the contrastive loss lives on the features (body)


def test_combined_kl_matches_fedsol_on_full_model():
    x, y = data()
    model = mlp_model()
    theta, w = vecs(9)
    a = PERTURBATIONS.get("fedsol_general")(rho=1.1, sol_target="full")
    b = PERTURBATIONS.get("fedsol")(rho=1.1, sol_target="full")
    np.testing.assert_allclose(a._eps(ctx_for(theta, model), model, w, x, y, a._targets(model), None).numpy(),
                               b.perturbation(model, w, theta, x).numpy(), atol=TOL)


def test_parts_source_without_proximal_part_is_config_error():
    part = PERTURBATIONS.get("fedsol_general")(sol_prox="parts")
    with pytest.raises(ConfigError, match="bind"):
        part._peer_parts()
    part.peers = [CORRECTIONS.get("momentum_mix")()]
    with pytest.raises(ConfigError, match="sol_prox"):
        part._peer_parts()


def test_parts_source_on_fedsol_alone_fails_before_training(tmp_path):
    with pytest.raises(ConfigError, match="sol_prox"):
        make_sim("fedsol_general", {"sol_prox": "parts"}, tmp_path)


# ------------------------------------------------------------------------ Table 10: A1-A6
VARIANTS = {"A1": ("eps_p", "none"), "A2": ("w", "eps_p"), "A3": ("eps_p", "eps_p"),
            "A4": ("eps_c", "eps_c"), "A5": ("w", "w"), "A6": ("eps_p", "w")}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_table10_variants_hand_derived(name):
    local_at, prox_at = VARIANTS[name]
    rho, beta = 1.3, 0.7
    x, y = data()
    model = mlp_model()
    theta, w = vecs(10)
    ce, kl = ce_ref(x, y), kl_ref(theta, x)
    head, lam = head_mask(), lam_tensor(w, theta)
    gp_head = grad(kl, w) * head
    eps_p = rho * lam * gp_head / gp_head.norm()
    gc = (grad(ce, w) + beta * grad(kl, w)) * head
    eps_c = rho * lam * gc / gc.norm()
    pts = {"w": w, "eps_p": w + eps_p, "eps_c": w + eps_c}
    expected = grad(ce, pts[local_at])
    if prox_at != "none":
        expected = expected + beta * grad(kl, pts[prox_at])  # the proximal term is over the whole model
    part = PERTURBATIONS.get("fedsol_general")(rho=rho, sol_beta=beta, sol_local_at=local_at, sol_prox_at=prox_at,
                                               sol_tau=TAU)
    grad_at, calls = recording(x, y)
    _, got = part.gradient(ctx_for(theta, model), w.clone(), (x, y), grad_at)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=TOL)
    assert any(torch.allclose(c, pts[local_at], atol=TOL) for c in calls)
    assert (eps_p * (1 - head)).abs().max() == 0 and eps_p.abs().max() > 1e-3


def test_defaults_are_fedsol():
    """With its defaults the general part perturbs exactly as `fedsol` (same points, same gradient)."""
    x, y = data()
    model = mlp_model()
    theta, w = vecs(11)
    out = []
    for name in ("fedsol", "fedsol_general"):
        grad_at, calls = recording(x, y)
        _, g = PERTURBATIONS.get(name)(rho=2.0).gradient(ctx_for(theta, model), w.clone(), (x, y), grad_at)
        out.append((calls[-1], g.clone()))
    np.testing.assert_allclose(out[0][0].numpy(), out[1][0].numpy(), atol=TOL)
    np.testing.assert_allclose(out[0][1].numpy(), out[1][1].numpy(), atol=TOL)


# ------------------------------------------------------------------------ presets run end to end
@pytest.mark.parametrize("name", ["fedprox_kl", "proj_l2", "proj_kl", "fedsol_prox", "fedsol_scaffold",
                                  "fedsol_dyn", "fedsol_moon", "fedsol_nova"])
def test_presets_train(name, tmp_path):
    sim, *_ = make_sim(name, {}, tmp_path, arch="mlp", local_steps=3)
    thetas = run(sim, 2)
    assert all(torch.isfinite(t).all() for t in thetas) and not torch.equal(thetas[0], thetas[-1])
    if name.startswith("fedsol_") and name != "fedsol_nova":
        assert sim.algo.perturbation.peers  # bound to the algorithm's parts by the engine


def test_bad_options_are_config_errors():
    with pytest.raises(ConfigError, match="sol_local_at"):
        build_algorithm("fedsol_general", {"sol_local_at": "x"})
    with pytest.raises(ConfigError, match="sol_beta"):
        build_algorithm("fedsol_general", {"sol_beta": -1.0})
    with pytest.raises(ConfigError, match="sol_prox"):
        build_algorithm("fedsol_general", {"sol_prox": "ntd2"})


def test_variant_options_reach_the_engine(tmp_path):
    """Through the engine (3 local steps, 2 rounds): A1 is FedSOL bit for bit, A2-A6 each differ."""
    finals = {}
    for name, (local_at, prox_at) in VARIANTS.items():
        sim, *_ = make_sim("fedsol_general", {"sol_local_at": local_at, "sol_prox_at": prox_at, "rho": 0.5},
                           tmp_path / name, arch="mlp", local_steps=3)
        finals[name] = run(sim, 2)[-1]
    sim, *_ = make_sim("fedsol", {"rho": 0.5}, tmp_path / "fedsol", arch="mlp", local_steps=3)
    assert torch.equal(run(sim, 2)[-1], finals["A1"])
    names = sorted(finals)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert (finals[a] - finals[b]).abs().max() > 1e-8, (a, b)


def test_combined_decoupled_removes_the_step_term_only(tmp_path):
    """Default (FedSOL Eq. 6): FedProx's objective only perturbs. Since g_p = μ(w − θ) ∝ w − θ, the run
    equals FedSOL with the L2 perturbation on the full model; with sol_prox_in_step it differs."""
    def final(name, hp):
        sim, *_ = make_sim(name, {"rho": 0.5, **hp}, tmp_path / f"{name}{len(hp)}", arch="mlp", local_steps=3)
        return sim, run(sim, 2)[-1]
    sim, a = final("fedsol_prox", {"mu": 0.7})
    _, b = final("fedsol_l2", {})
    _, c = final("fedsol_prox", {"mu": 0.7, "sol_prox_in_step": True})
    np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-10)
    assert (a - c).abs().max() > 1e-6
    prox = sim.algo.corrections[0]
    ctx = ctx_for(sim.srv.theta, mlp_model())
    w, g = vecs(12)
    assert torch.equal(prox.adjust(ctx, w, g), g)  # out of the step ...
    kept = type(prox).adjust(prox, ctx, w, g)  # ... but still the gradient g_p is made of
    np.testing.assert_allclose(kept.numpy(), (g + 0.7 * (w - ctx.start)).numpy())


def test_combined_moon_decoupled_drops_the_loss_term(tmp_path):
    sim, *_ = make_sim("fedsol_moon", {}, tmp_path / "d", arch="mlp")
    moon = sim.algo.corrections[0]
    assert moon.loss_term(None, None, None, None, None) is None and type(moon).loss_term is not None
    sim2, *_ = make_sim("fedsol_moon", {"sol_prox_in_step": True}, tmp_path / "k", arch="mlp")
    assert "loss_term" not in vars(sim2.algo.corrections[0])  # kept: the engine adds MOON's loss
