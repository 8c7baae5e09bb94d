"""Every SAM-family / proposed preset: two rounds with 3 clients on a tiny float64 model, against
a straightforward re-derivation from the papers' equations (plain tensors + autograd, helpers_sam),
plus the reductions the papers state (the digits smoke run: tests/training/algorithms/test_every_preset.py)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fedflat.training.algorithms import PRESETS, build_algorithm
from fedflat.training.algorithms.presets_2025 import PRESETS_2025
from fedflat.training.algorithms.presets_sam import SAM_PRESETS
from fedflat.training.fl.batches import sample_clients

from .helpers_sam import ce, ce_grad, forward, grad, make_sim, run, tensor_slices, unit

K, LR, ATOL = 2, 0.2, 1e-10


pytestmark = pytest.mark.usefixtures("float64")  # exact hand-derived comparisons


def fed(theta0, X, Y, clients, local, server, rounds=2, start=None, sampled=None):
    """The FL loop written out: every sampled client runs `local` from the start point, then `server`."""
    S, states, th, out = {}, [dict() for _ in clients], theta0.clone(), [theta0.clone()]
    for t in range(1, rounds + 1):
        st = start(th, S) if start else th
        ids = sampled(t) if sampled else range(len(clients))
        ends = {i: local(i, st.clone(), X[clients[i]], Y[clients[i]], th, S, states[i]) for i in ids}
        th = server(th, st, ends, S, states)
        out.append(th.clone())
    return out


def mean(vs):
    return torch.stack(list(vs)).mean(0)


def sgd(w, step):
    for _ in range(K):
        w = w - LR * step(w)
    return w


def sam_g(w, x, y, rho, arch="linear"):
    g = ce_grad(w, x, y, arch)
    return ce_grad(w + rho * unit(g), x, y, arch)


def check(name, hp, reference, arch="linear", rounds=2, **kw):
    sim, X, Y, clients = make_sim(name, hp, kw.pop("tmp"), arch=arch, local_steps=K, lr=LR,
                                  rounds=rounds, **kw)
    got = run(sim, rounds)
    want = fed(got[0], X, Y, clients, rounds=rounds, **reference)
    for t, (a, b) in enumerate(zip(got, want)):
        assert torch.allclose(a, b, atol=ATOL, rtol=0), f"{name}: round {t} differs by {(a - b).abs().max():.3g}"
    assert (got[-1] - got[0]).abs().max() > 1e-3
    return got


def feddyn_server(alpha, n):
    def server(th, st, ends, S, states):
        S.setdefault("h", torch.zeros_like(th))
        S["h"] = S["h"] - alpha / n * sum(ends[i][0] - th for i in ends)
        return mean(e[0] for e in ends.values()) - S["h"] / alpha
    return server


def dyn(g, w, th, st, alpha):
    return g - st.setdefault("h_i", torch.zeros_like(w)) + alpha * (w - th)


def dyn_end(w, th, st, alpha):
    st["h_i"] = st.get("h_i", torch.zeros_like(w)) - alpha * (w - th)


def mean_server(th, st, ends, S, states):
    return th + mean(e[0] - st for e in ends.values())


# ------------------------------------------------------------------------------- SAM family
def test_fedasam(tmp_path):
    rho, eta = 0.5, 0.2

    def local(i, w, x, y, th, S, st):
        def step(w):
            g = ce_grad(w, x, y)
            T = w.abs() + eta
            return ce_grad(w + rho * T * T * g / (T * g).norm(), x, y)
        return (sgd(w, step),)

    check("fedasam", {"rho": rho, "asam_eta": eta}, dict(local=local, server=mean_server), tmp=tmp_path)


def test_mofedsam(tmp_path):
    rho, a = 0.3, 0.4

    def local(i, w, x, y, th, S, st):
        d = S.get("d", torch.zeros_like(w))
        return (sgd(w, lambda w: a * sam_g(w, x, y, rho) + (1 - a) * d),)

    def server(th, st, ends, S, states):
        D = mean(e[0] - th for e in ends.values())
        S["d"] = -D / (K * LR)  # FedCM: the descent displacement as a gradient estimate
        return th + D

    check("mofedsam", {"rho": rho, "cm_alpha": a}, dict(local=local, server=server), tmp=tmp_path)


def scaffold_local(i, w, x, y, th, S, st, grad_fn, start=None):
    c, ci = S.get("c", torch.zeros_like(w)), st.get("c_i", torch.zeros_like(w))
    w0 = w.clone()
    w = sgd(w, lambda w: grad_fn(w) + c - ci)
    new = ci - c + (w0 - w) / (K * LR)
    return w, new - ci, new


def scaffold_server(n, move=None):
    def server(th, st, ends, S, states):
        for i, e in ends.items():
            states[i]["c_i"] = e[2]
        S["c"] = S.get("c", torch.zeros_like(th)) + sum(e[1] for e in ends.values()) / n
        return move(th, st, ends, S) if move else th + mean(e[0] - th for e in ends.values())
    return server


def test_fedgamma(tmp_path):
    rho = 0.3
    local = lambda i, w, x, y, th, S, st: scaffold_local(i, w, x, y, th, S, st, lambda w: sam_g(w, x, y, rho))
    check("fedgamma", {"rho": rho}, dict(local=local, server=scaffold_server(3)), tmp=tmp_path)


def test_fedspeed(tmp_path):
    rho, alpha = 0.3, 0.1

    def local(i, w, x, y, th, S, st):
        w = sgd(w, lambda w: dyn(sam_g(w, x, y, rho), w, th, st, alpha))
        dyn_end(w, th, st, alpha)
        return (w,)

    check("fedspeed", {"rho": rho, "alpha": alpha}, dict(local=local, server=feddyn_server(alpha, 3)), tmp=tmp_path)


@pytest.mark.parametrize("upload", ["paper", "mu"])
def test_fedsmoo(tmp_path, upload):
    rho, alpha = 0.3, 0.1

    def local(i, w, x, y, th, S, st):
        s = S.get("s", torch.zeros_like(w))
        st.setdefault("mu", torch.zeros_like(w))
        last = [None]

        def step(w):
            Sv = ce_grad(w, x, y) - st["mu"] - s
            shat = rho * unit(Sv)
            st["mu"] = st["mu"] + shat - s
            last[0] = shat
            return dyn(ce_grad(w + shat, x, y), w, th, st, alpha)

        w = sgd(w, step)
        dyn_end(w, th, st, alpha)
        return w, (st["mu"] - last[0]) if upload == "paper" else st["mu"].clone()

    dyn_srv = feddyn_server(alpha, 3)

    def server(th, st, ends, S, states):
        S["s"] = rho * unit(mean(e[1] for e in ends.values()))
        return dyn_srv(th, st, ends, S, states)

    check("fedsmoo", {"rho": rho, "alpha": alpha, "smoo_upload": upload}, dict(local=local, server=server),
          tmp=tmp_path, rounds=3)


def lesam_delta(st, th, rho):
    old = st.get("old")
    return torch.zeros_like(th) if old is None else rho * unit(old - th)


@pytest.mark.parametrize("name", ["fedlesam", "fedlesam_s", "fedlesam_d"])
def test_fedlesam_family(tmp_path, name):
    rho, alpha = 0.4, 0.1

    def local(i, w, x, y, th, S, st):
        delta = lesam_delta(st, th, rho)
        st["old"] = th.clone()
        g = lambda w: ce_grad(w + delta, x, y)
        if name == "fedlesam_s":
            return scaffold_local(i, w, x, y, th, S, st, g)
        if name == "fedlesam_d":
            w = sgd(w, lambda w: dyn(g(w), w, th, st, alpha))
            dyn_end(w, th, st, alpha)
            return (w,)
        return (sgd(w, g),)

    server = {"fedlesam": mean_server, "fedlesam_s": scaffold_server(3), "fedlesam_d": feddyn_server(alpha, 3)}[name]
    check(name, {"rho": rho, **({"alpha": alpha} if name == "fedlesam_d" else {})},
          dict(local=local, server=server), tmp=tmp_path, rounds=3)


def stale_local(rho):
    def local(i, w, x, y, th, S, st):
        delta = lesam_delta(st, th, rho)
        st["old"] = th.clone()
        return (sgd(w, lambda w: ce_grad(w + delta, x, y)),)
    return local


def test_fedlesam_partial_participation_uses_each_clients_own_stale_model(tmp_path):
    rho, N = 0.4, 4
    sampled = lambda t: sample_clients(0, t, N, 2)
    got = check("fedlesam", {"rho": rho}, dict(local=stale_local(rho), server=mean_server, sampled=sampled),
                tmp=tmp_path, rounds=4, num_clients=N, participation=0.5)
    assert len(got) == 5


def test_fedlesam_global_reading_uses_the_last_global_update_for_every_client(tmp_path):
    """FedSynSAM Alg. 1 line 9: g = w^{t−1} − w^t for every sampled client, also one that skipped round t−1
    (the stale reading above would use that client's own older model instead)."""
    rho, N = 0.4, 4
    sampled = lambda t: sample_clients(0, t, N, 2)

    def local(i, w, x, y, th, S, st):
        prev = S.get("prev")
        delta = torch.zeros_like(th) if prev is None else rho * unit(prev - th)
        return (sgd(w, lambda w: ce_grad(w + delta, x, y)),)

    def server(th, st, ends, S, states):
        S["prev"] = th.clone()
        return mean_server(th, st, ends, S, states)

    got = check("fedlesam", {"rho": rho, "lesam_dir": "global"}, dict(local=local, server=server, sampled=sampled),
                tmp=tmp_path, rounds=4, num_clients=N, participation=0.5)
    stale = check("fedlesam", {"rho": rho}, dict(local=stale_local(rho), server=mean_server, sampled=sampled),
                  tmp=tmp_path / "stale", rounds=4, num_clients=N, participation=0.5)
    assert (got[-1] - stale[-1]).abs().max() > 1e-6  # partial participation tells the readings apart


# ------------------------------------------------------------------------------- FedNSAM variants
def momentum_server(lam, move_by_m=True, extra=None):
    def server(th, st, ends, S, states):
        if extra:
            extra(th, st, ends, S, states)
        D = mean(e[0] - st for e in ends.values())
        S["m"] = lam * S.get("m", torch.zeros_like(th)) + D
        return th + S["m"] if move_by_m else th + D
    return server


def lookahead(lam):
    return lambda th, S: th + lam * S.get("m", torch.zeros_like(th))


def test_fednsam_s(tmp_path):
    rho, lam = 0.3, 0.6

    def local(i, w, x, y, th, S, st):
        m = S.get("m", torch.zeros_like(w))
        return scaffold_local(i, w, x, y, th, S, st, lambda w: ce_grad(w - rho * unit(m), x, y))

    def update_c(th, st, ends, S, states):
        for i, e in ends.items():
            states[i]["c_i"] = e[2]
        S["c"] = S.get("c", torch.zeros_like(th)) + sum(e[1] for e in ends.values()) / 3

    check("fednsam_s", {"rho": rho, "lam": lam},
          dict(local=local, server=momentum_server(lam, extra=update_c), start=lookahead(lam)), tmp=tmp_path, rounds=3)


def test_fednsam_d_alg1_per_step_extrapolation(tmp_path):
    rho, lam, alpha = 0.3, 0.6, 0.1

    def local(i, w, x, y, th, S, st):
        m = S.get("m", torch.zeros_like(w))
        w = sgd(w, lambda w: dyn(ce_grad(w + lam * m - rho * unit(m), x, y), w, th, st, alpha))
        dyn_end(w, th, st, alpha)
        return (w,)

    dyn_srv = feddyn_server(alpha, 3)

    def server(th, st, ends, S, states):
        S["m"] = lam * S.get("m", torch.zeros_like(th)) + mean(e[0] - th for e in ends.values())
        return dyn_srv(th, st, ends, S, states)

    check("fednsam_d", {"rho": rho, "lam": lam, "alpha": alpha}, dict(local=local, server=server), tmp=tmp_path, rounds=3)


@pytest.mark.parametrize("name", ["fedavg_nesterov", "fedsam_nesterov"])
def test_nesterov_rows(tmp_path, name):
    rho, lam = 0.3, 0.6
    g = (lambda w, x, y: ce_grad(w, x, y)) if name == "fedavg_nesterov" else (lambda w, x, y: sam_g(w, x, y, rho))
    local = lambda i, w, x, y, th, S, st: (sgd(w, lambda w: g(w, x, y)),)
    check(name, {"lam": lam, **({"rho": rho} if name == "fedsam_nesterov" else {})},
          dict(local=local, server=momentum_server(lam), start=lookahead(lam)), tmp=tmp_path, rounds=3)


@pytest.mark.parametrize("name,move_by_m", [("fednsam_no_nesterov", False), ("fednsam_no_nesterov_m", True)])
def test_fednsam_without_nesterov(tmp_path, name, move_by_m):
    rho, lam = 0.3, 0.6

    def local(i, w, x, y, th, S, st):
        m = S.get("m", torch.zeros_like(w))
        return (sgd(w, lambda w: ce_grad(w - rho * unit(m), x, y)),)

    check(name, {"rho": rho, "lam": lam}, dict(local=local, server=momentum_server(lam, move_by_m)),
          tmp=tmp_path, rounds=3)


# ------------------------------------------------------------------------------- FedSOL
def sol_eps(w, th, x, rho, adaptive, tau=3.0):
    if torch.equal(w, th):
        return torch.zeros_like(w)
    q = torch.softmax(forward(th, x, "mlp")[0] / tau, 1)
    kl = lambda t: (q * (q.log() - torch.log_softmax(forward(t, x, "mlp")[0] / tau, 1))).sum() / len(x)
    gp = grad(kl, w)
    lam = torch.zeros_like(w)
    for s, head in tensor_slices("mlp"):
        if head:
            a = (w[s] - th[s]).abs()
            lam[s] = a / a.norm() if adaptive else 1.0
        else:
            gp[s] = 0.0
    return rho * lam * gp / gp.norm()


@pytest.mark.parametrize("name", ["fedsol", "fedsol_fixed"])
def test_fedsol_head_only(tmp_path, name):
    rho = 1.5

    def local(i, w, x, y, th, S, st):
        return (sgd(w, lambda w: ce_grad(w + sol_eps(w, th, x, rho, name == "fedsol"), x, y, "mlp")),)

    check(name, {"rho": rho}, dict(local=local, server=mean_server), arch="mlp", tmp=tmp_path)


# ------------------------------------------------------------------------------- FedTOGA
@pytest.mark.parametrize("mode,norm", [("G", "fedcm"), ("N", "fedcm"), ("fusion", "fedcm"), ("G", "step")])
def test_fedtoga(tmp_path, mode, norm):
    rho, kappa, beta, alpha = 0.3, 1.5, 0.8, 0.1

    def local(i, w, x, y, th, S, st):
        Dl = S.get("D", torch.zeros_like(w))
        prev = [torch.zeros_like(w)]

        def step(w):
            if mode == "N":
                d = prev[0] + kappa * Dl
            else:
                d = ce_grad(w, x, y) + kappa * Dl + (prev[0] if mode == "fusion" else 0.0)
            gt = ce_grad(w + rho * unit(d), x, y)
            prev[0] = gt
            return dyn(gt, w, th, st, alpha) + beta * Dl

        w = sgd(w, step)
        dyn_end(w, th, st, alpha)
        return (w,)

    dyn_srv = feddyn_server(alpha, 3)

    def server(th, st, ends, S, states):
        S["D"] = -mean(e[0] - th for e in ends.values()) / (K * (LR if norm == "fedcm" else 1.0))
        return dyn_srv(th, st, ends, S, states)

    check("fedtoga", {"rho": rho, "kappa": kappa, "beta": beta, "alpha": alpha, "toga_mode": mode, "delta_norm": norm},
          dict(local=local, server=server), tmp=tmp_path, rounds=3)


# ------------------------------------------------------------------------------- loss terms
def test_fedntd(tmp_path):
    b, tau = 0.7, 2.0

    def local(i, w, x, y, th, S, st):
        zg = forward(th, x, "linear")[0].detach()
        keep = torch.ones_like(zg, dtype=torch.bool).scatter_(1, y.view(-1, 1), False)

        def loss(t):
            z = forward(t, x, "linear")[0]
            q = torch.softmax(zg[keep].view(len(x), -1) / tau, 1)
            lp = torch.log_softmax(z[keep].view(len(x), -1) / tau, 1)
            return ce(t, x, y) + b * tau ** 2 * (q * (q.log() - lp)).sum() / len(x)

        return (sgd(w, lambda w: grad(loss, w)),)

    check("fedntd", {"ntd_beta": b, "ntd_tau": tau}, dict(local=local, server=mean_server), tmp=tmp_path)


def test_moon(tmp_path):
    mu, tau = 0.5, 0.5
    theta0 = {}

    def local(i, w, x, y, th, S, st):
        theta0.setdefault("v", th.clone())  # round 1's θ is the shared initialisation
        prev = st.get("prev", theta0["v"])
        zg, zp = forward(th, x, "mlp")[1].detach(), forward(prev, x, "mlp")[1].detach()
        # cosine as torch documents it, x·y / max(‖x‖‖y‖, 1e-8): a dead-ReLU sample has z = 0
        cos = lambda a, b: (a * b).sum(1) / (a.norm(dim=1) * b.norm(dim=1)).clamp_min(1e-8)

        def loss(t):
            z = forward(t, x, "mlp")[1]
            a, b = cos(z, zg) / tau, cos(z, zp) / tau
            return ce(t, x, y, "mlp") + mu * (torch.logaddexp(a, b) - a).mean()

        w = sgd(w, lambda w: grad(loss, w))
        st["prev"] = w.clone()
        return (w,)

    check("moon", {"moon_mu": mu, "moon_tau": tau}, dict(local=local, server=mean_server), arch="mlp",
          tmp=tmp_path, rounds=3)


# ------------------------------------------------------------------------------- reductions
# (every rho = 0 reduction is in test_rho0_reductions.py; these need other keys at 0)
def same(a_name, a_hp, b_name, b_hp, tmp_path, arch="linear", rounds=3):
    a, *_ = make_sim(a_name, a_hp, tmp_path / "a", arch=arch, local_steps=K, lr=LR, rounds=rounds)
    b, *_ = make_sim(b_name, b_hp, tmp_path / "b", arch=arch, local_steps=K, lr=LR, rounds=rounds)
    ta, tb = run(a, rounds), run(b, rounds)
    for x, y in zip(ta, tb):
        assert torch.allclose(x, y, atol=1e-12, rtol=0)
    return ta, tb


@pytest.mark.parametrize("name,hp,base,base_hp", [
    ("fedtoga", {"kappa": 0.0, "beta": 0.0, "rho": 0.0, "alpha": 0.1}, "feddyn", {"alpha": 0.1}),  # FedTOGA App. B.9
    ("fedsam_nesterov", {"rho": 0.0, "lam": 0.0}, "fedavg", {}),
    ("fedavg_nesterov", {"lam": 0.0}, "fedavg", {}),
    ("fednsam_s", {"rho": 0.0, "lam": 0.0}, "scaffold", {}),
    ("fednsam_d", {"rho": 0.0, "lam": 0.0, "alpha": 0.1}, "feddyn", {"alpha": 0.1}),
    ("fedntd", {"ntd_beta": 0.0}, "fedavg", {}),
    ("moon", {"moon_mu": 0.0}, "fedavg", {}),
])
def test_reductions(tmp_path, name, hp, base, base_hp):
    same(name, hp, base, base_hp, tmp_path)


def test_fedtoga_reduction_is_not_trivial(tmp_path):
    """κ and β each change the trajectory, so the FedDyn reduction above tests something."""
    for hp in ({"kappa": 0.0, "beta": 0.5, "rho": 0.0}, {"kappa": 1.0, "beta": 0.0, "rho": 0.3}):
        with pytest.raises(AssertionError):
            same("fedtoga", {**hp, "alpha": 0.1}, "feddyn", {"alpha": 0.1}, tmp_path / str(hp["beta"]))


# ------------------------------------------------------------------------------- registry facts
GRAD_EVALS = {"fedasam": 2, "mofedsam": 2, "fedgamma": 2, "fedspeed": 2, "fedsmoo": 2, "fedlesam": 1,
              "fedlesam_s": 1, "fedlesam_d": 1, "fedlesam_d_up": 1, "fednsam_s": 1, "fednsam_d": 1, "fedavg_nesterov": 1,
              "fedsam_nesterov": 2, "fednsam_no_nesterov": 1, "fednsam_no_nesterov_m": 1, "fedsol": 2,
              "fedsol_fixed": 2, "fedtoga": 2, "fedntd": 1, "moon": 1,
              "fedgloss": 2, "fedswa": 1, "fedmoswa": 1, "fedwmsam": 1, "fedgmt": 1}


@pytest.mark.parametrize("name", SAM_PRESETS + PRESETS_2025)
def test_grad_evals_source_and_defaults(name):
    algo = build_algorithm(name)
    assert algo.grad_evals_per_step == GRAD_EVALS[name]
    assert algo.preset.source and algo.preset.label
    assert build_algorithm("fedtoga", {"toga_mode": "N"}).grad_evals_per_step == 1


# The digits smoke run of every preset (this file's included) is tests/training/algorithms/test_every_preset.py.


@pytest.mark.parametrize("name", ["fedlesam", "fedsmoo", "moon"])
def test_client_state_on_disk_matches_memory(tmp_path, name):
    """Stale models, FedSMOO's μ_i and MOON's previous model survive the disk-backed store."""
    arch = "mlp" if name == "moon" else "linear"
    kw = dict(arch=arch, local_steps=K, lr=LR, rounds=4, num_clients=4, participation=0.5)
    a, *_ = make_sim(name, {}, tmp_path / "mem", **kw)
    b, *_ = make_sim(name, {}, tmp_path / "disk", client_state="disk", **kw)
    for x, y in zip(run(a, 4), run(b, 4)):
        assert torch.equal(x, y)
