"""FedSOL's analysis hooks: the personalization evaluation (Table 9), cos(g_u, g_p) (Fig. 3b) against
a direct autograd computation, and the layer-wise Λ (Fig. 5b) against a NumPy re-derivation."""
import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fedflat.training.algorithms import ClientContext, ClientResult, RoundResult
from fedflat.pipeline.analysis.fedsol_hooks import SOLCosineHook, lambda_vector
from fedflat.pipeline.analysis.personalize import PersonalizeHook, fine_tune, local_test_indices
from fedflat.core.errors import ConfigError
from fedflat.training.fl.engine import Simulation
from fedflat.training.fl.fast import make_grad_at

from .sim_helpers import partition, spec, synthetic


def _sim(algorithm, tmp_path, analysis=None, hp=None, rounds=2, **tr):
    data = synthetic()
    s = spec(algorithm, rounds=rounds, analysis=analysis, hp=hp, **tr)
    return Simulation(s, data, partition(data, s), tmp_path, progress=False)


def test_local_test_set_follows_the_client_label_distribution():
    test_y = np.repeat(np.arange(3), 10)
    rng = np.random.default_rng(0)
    idx = local_test_indices(np.array([0, 0, 0, 1]), test_y, 3, 8, rng)
    assert len(set(idx)) == len(idx) == 8  # int(8·0.75) = 6 of class 0, int(8·0.25) = 2 of class 1
    assert np.bincount(test_y[idx], minlength=3).tolist() == [6, 2, 0]
    capped = local_test_indices(np.array([0, 0, 0, 1]), test_y, 3, 40, rng)
    assert np.bincount(test_y[capped], minlength=3).tolist() == [10, 10, 0]  # 30 wanted, 10 exist


def test_personalize_lr0_is_the_global_model_per_client_and_std_is_across_clients(tmp_path):
    sim = _sim("fedavg", tmp_path, analysis={"personalize": {"epochs": [0, 1, 3], "lr_scale": 0.0,
                                                             "test_per_client": 20}})
    sim.run()
    row = sim.log.rows[-1]
    assert "pers_acc_e1" not in sim.log.rows[0]  # the final round only
    hook = sim.hooks[0]
    direct = []  # the global model on each client's local test set, computed here
    for cid in range(sim.spec.num_clients):
        x, y = hook.test_set(sim, cid)
        sim.fm.load(sim.srv.theta, sim.srv.buffers)
        with torch.no_grad():
            direct.append(100.0 * float((sim.fm.module(x).argmax(1) == y).float().mean()))
    assert np.std(direct) > 1.0  # the clients differ, so a std over anything else would show
    for e in (0, 1, 3):
        assert row[f"pers_acc_e{e}"] == pytest.approx(np.mean(direct), abs=1e-9)
        assert row[f"pers_std_e{e}"] == pytest.approx(np.std(direct), abs=1e-9)
    assert row["pers_clients"] == sim.spec.num_clients
    saved = json.loads((tmp_path / "personal.json").read_text())
    assert [saved["per_client"]["e3"][str(c)] for c in range(4)] == pytest.approx(direct)
    # with the round's lr the fine-tuning moves the model, and only the model: the run is untouched
    theta = sim.srv.theta.clone()
    w, _ = fine_tune(sim, 0, theta, 2, 0.1, 99)
    w0, _ = fine_tune(sim, 0, theta, 2, 0.0, 99)
    assert torch.equal(w0, theta) and (w - theta).abs().max() > 1e-4
    assert torch.equal(sim.srv.theta, theta) and sim.algo.name == "fedavg" and sim.spec.local_steps == 3


def test_personalize_local_mode_evaluates_each_clients_own_model(tmp_path):
    sim = _sim("localonly", tmp_path, analysis={"personalize": {"mode": "local", "test_per_client": 20}},
               rounds=1, participation=1.0)
    row = sim.run_round(1)
    hook = sim.hooks[0]
    # re-train client 2 alone from the initialisation: the same local model the hook evaluated
    sim2 = _sim("localonly", tmp_path / "b", rounds=1, participation=1.0)
    res = sim2.local_train(2, 1, sim2.srv.theta, {}, sim2.lr_at(1))
    saved = json.loads((tmp_path / "personal.json").read_text())
    assert saved["per_client"]["e1"]["2"] == pytest.approx(hook.accuracy(sim, 2, res.end, res.buffers))
    assert row["pers_acc_e1"] == row["pers_acc_e5"] and row["pers_clients"] == 4


def test_personalize_bad_params_name_the_key():
    with pytest.raises(ConfigError, match="personalize.epochs"):
        PersonalizeHook(epochs=[1, "5"])
    with pytest.raises(ConfigError, match="personalize.mode"):
        PersonalizeHook(mode="global")


def _ctx(sim, theta):
    return ClientContext(cid=0, round=1, lr=0.1, local_steps=1, theta=theta, start=theta, down={}, state={},
                         num_samples=8, scratch={"model": sim.fm.module})


@pytest.mark.parametrize("target", ["head", "full"])
def test_sol_cosine_matches_a_direct_autograd_computation(target, tmp_path, float64):
    sim = _sim("fedsol", tmp_path, analysis={"sol_cosine": {"every": 1}}, hp={"rho": 0.7, "sol_target": target})
    hook = sim.hooks[0]
    hook.on_start(sim)
    part = sim.algo.perturbation
    theta = sim.srv.theta.clone()
    g = torch.Generator().manual_seed(3)
    w = theta + 0.3 * torch.randn(theta.shape, generator=g, dtype=theta.dtype)
    x, y = sim.data.train_x[:8], sim.data.train_y[:8]
    ctx = _ctx(sim, theta)
    loss, g_u = part.gradient(ctx, w, (x, y), make_grad_at(sim.backend, sim.fm, None))
    assert hook.local_gradient(sim, ctx, w, (x, y), loss, g_u) is g_u  # the engine's call after the part's
    cos_sub, cos_full = hook._rec[-1]
    # direct: g_p = ∇_w KL(softmax(f_θ/3) ‖ softmax(f_w/3)) on the perturbed tensors; g_u = ∇ CE(w + ε)
    model = sim.fm.module
    names = [n for n, _ in model.named_parameters()]
    sizes = [p.numel() for _, p in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]

    def params(vec):
        return {n: t.view(s) for n, t, s in zip(names, torch.split(vec, sizes), shapes)}

    wl = w.clone().requires_grad_(True)
    with torch.no_grad():
        target_p = F.softmax(torch.func.functional_call(model, params(theta), (x,)) / 3.0, 1)
    kl = F.kl_div(F.log_softmax(torch.func.functional_call(model, params(wl), (x,)) / 3.0, 1), target_p,
                  reduction="batchmean")
    (gp,) = torch.autograd.grad(kl, wl)
    head_names = {"3.weight", "3.bias"} if target == "head" else set(names)
    mask = torch.cat([torch.full((s,), n in head_names) for n, s in zip(names, sizes)])
    gp = torch.where(mask, gp, torch.zeros_like(gp))
    eps = part.perturbation(model, w, theta, x)
    wu = (w + eps).detach().requires_grad_(True)
    (gu,) = torch.autograd.grad(F.cross_entropy(torch.func.functional_call(model, params(wu), (x,)), y), wu)
    cos = lambda a, b: float(a @ b / (a.norm() * b.norm()))
    assert cos_sub == pytest.approx(cos(gu[mask], gp[mask]), abs=1e-10)
    assert cos_full == pytest.approx(cos(gu, gp), abs=1e-10)
    assert abs(cos_sub) > 1e-3  # not a degenerate zero


def test_sol_cosine_leaves_training_unchanged_and_logs_only_due_rounds(tmp_path):
    a = _sim("fedsol", tmp_path / "a", analysis={"sol_cosine": {"every": 3}}, rounds=4, hp={"rho": 1.0})
    b = _sim("fedsol", tmp_path / "b", rounds=4, hp={"rho": 1.0})
    a.run()
    b.run()
    assert torch.equal(a.srv.theta, b.srv.theta)
    logged = [r.get("sol_cos") for r in a.log.rows]
    assert logged[1] is None  # due: t = 1, t % every = 0, the last round
    assert all(v is not None and math.isfinite(v) for v in (logged[0], logged[2], logged[3]))
    with pytest.raises(ConfigError, match="sol_cosine"):
        _sim("fedavg", tmp_path / "c", analysis={"sol_cosine": {}}).run()


def test_lambda_layers_hook_by_hand(tmp_path):
    sim = _sim("fedsol", tmp_path, analysis={"lambda_layers": {"fraction": 0.5}}, rounds=4, hp={"rho": 1.0})
    hook = sim.hooks[0]
    assert hook.round_of(sim) == 2
    theta = sim.srv.theta.clone()
    gen = torch.Generator().manual_seed(0)
    ends = [theta + torch.randn(theta.shape, generator=gen) * (i + 1) for i in range(2)]
    clients = [ClientResult(cid=i, delta=e - theta, end=e, up={}, num_samples=1, train_loss=0.0, buffers=torch.zeros(0))
               for i, e in enumerate(ends)]
    rnd = RoundResult(round=2, sampled=[0, 1], clients=clients, weights=torch.tensor([0.5, 0.5]))
    assert hook.on_round_end(sim, 1, rnd, {}) == {}
    out = hook.on_round_end(sim, 2, rnd, {})
    sizes = {n: p.numel() for n, p in sim.fm.module.named_parameters()}
    expected = {}
    for layer in ("1", "3"):
        per_client = []
        for e in ends:
            d = (e - theta).numpy()
            off, vals = 0, []
            for n, s in sizes.items():
                if n.split(".")[0] == layer:
                    v = np.abs(d[off:off + s])
                    vals.append(v / np.linalg.norm(v))  # Eq. 7 per tensor
                off += s
            per_client.append(np.concatenate(vals).mean())
        expected[f"lambda:{layer}"] = np.mean(per_client)
    assert out == pytest.approx(expected, rel=1e-6)
    # Λ is the scaling the FedSOL part applies: ε = ρ Λ ⊙ g_p/‖g_p‖ (full target)
    part = type(sim.algo.perturbation)(rho=0.5, sol_target="full")
    x = sim.data.train_x[:8]
    lam = lambda_vector(sim.fm.module, ends[0], theta)
    gp = part.prox_grad(sim.fm.module, ends[0], theta, x, part._targets(sim.fm.module))
    torch.testing.assert_close(part.perturbation(sim.fm.module, ends[0], theta, x), 0.5 * lam * gp / gp.norm())
