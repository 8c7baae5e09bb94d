"""Hook synsam_mix: the parts of FedSynSAM's ascent direction, against a direct computation."""
import math

import numpy as np
import torch
import torch.nn.functional as F

from fedflat.training.fl.round_hooks import ROUND_HOOKS

from compression.helpers import C, D, tiny_sim

SYN = {"rho": 0.1, "beta": 0.7, "syn_round": 2, "syn_steps": 1, "syn_iters": 2, "syn_ipc": 1, "syn_lr_img": 0.05}


def _grad(theta, x, y):
    theta = theta.detach().clone().requires_grad_(True)
    W, b = theta[: C * D].view(C, D), theta[C * D:]
    F.cross_entropy(x @ W.T + b, y).backward()
    return theta.grad


def test_columns_match_a_direct_computation(tmp_path):
    sim = tiny_sim(tmp_path, "fedsynsam", hparams=SYN, rounds=3)
    sim.hooks.append(ROUND_HOOKS.get("synsam_mix")(every=1))
    sim.run()
    first, last = sim.log.rows[0], sim.log.rows[-1]
    assert math.isnan(first["mix_syn_norm"]) and math.isnan(first["mix_cos_mix"])  # no D_syn before round R + 1
    w = sim.srv.theta
    x, y = sim.data.train_x, sim.data.train_y
    G = torch.stack([_grad(w, x[c], y[c]) for c in sim.client_idx]).mean(0)
    xs, ys = sim.srv.state["syn_x"], sim.srv.state["syn_y"]
    g_s = _grad(w, xs, ys)
    cos = lambda a, b: float(a @ b / (a.norm() * b.norm()))
    g_l = [_grad(w, x[c], y[c]) for c in sim.client_idx]  # batch = the whole client: its order does not matter
    np.testing.assert_allclose(last["mix_syn_norm"], float(g_s.norm()), rtol=1e-5)
    np.testing.assert_allclose(last["mix_cos_syn"], cos(g_s, G), rtol=1e-5)
    np.testing.assert_allclose(last["mix_cos_local"], np.mean([cos(g, G) for g in g_l]), rtol=1e-5)
    np.testing.assert_allclose(last["mix_cos_mix"], np.mean([cos(0.7 * g + 0.3 * g_s, G) for g in g_l]), rtol=1e-5)
    np.testing.assert_allclose(last["mix_syn_share"],
                               np.mean([0.3 * float(g_s.norm()) / (0.7 * float(g.norm())) for g in g_l]), rtol=1e-5)


def test_measuring_does_not_change_training(tmp_path):
    plain = tiny_sim(tmp_path / "a", "fedsynsam", hparams=SYN, rounds=3)
    plain.run()
    measured = tiny_sim(tmp_path / "b", "fedsynsam", hparams=SYN, rounds=3)
    measured.hooks.append(ROUND_HOOKS.get("synsam_mix")(every=1))
    measured.run()
    assert torch.equal(plain.srv.theta, measured.srv.theta)
