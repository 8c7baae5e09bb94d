"""Trajectory matching on a tiny linear-softmax problem: the loss is the hand formula, distillation
lowers it, and it is deterministic for a seed."""
import numpy as np
import pytest
import torch
import torch.nn as nn

from fedflat.training.synsam.distill import distill, flat_forward, init_synthetic, matching_loss, segment_loss
from fedflat.training.synsam.distill_settings import DistillConfig, PROFILES, profile_for

D, C = 4, 3


def linear_forward():
    torch.manual_seed(0)
    m = nn.Linear(D, C).double()
    names = ["weight", "bias"]
    return flat_forward(m, names, [(0, C * D), (C * D, C * D + C)], [(C, D), (C,)])


def np_grad(w, x, y):
    W, b = w[: C * D].reshape(C, D), w[C * D:]
    z = x @ W.T + b
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(y)), y] -= 1
    G = p / len(y)
    return np.concatenate([(G.T @ x).ravel(), G.sum(0)])


def real_trajectory(n_models=8, lr=0.5):
    """Global models of a 'federation' = full-batch GD on real data, one step per round."""
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(C), 10)
    x = rng.normal(size=(30, D)) + 2.0 * np.eye(C, D)[y]
    w = 0.1 * rng.normal(size=C * D + C)
    traj = [w]
    for _ in range(n_models - 1):
        w = w - lr * np_grad(w, x, y)
        traj.append(w)
    return torch.tensor(np.stack(traj))


def cfg(**kw):
    base = dict(ipc=2, iters=40, steps=2, lr_img=0.05, lr_lr=1e-3, optim="adam", momentum=0.5,
                loss="normalized", profile="fmnist")
    return DistillConfig(**{**base, **kw})


def test_segment_loss_is_the_unrolled_hand_formula():
    fwd, traj = linear_forward(), real_trajectory()
    x, y = init_synthetic(2, C, (D,), seed=0, dtype=torch.float64)
    alpha, r, s = 0.3, 1, 2
    w = traj[r].numpy()
    for _ in range(s):
        w = w - alpha * np_grad(w, x.numpy(), y.numpy())
    target = traj[r + s].numpy()
    mse = ((w - target) ** 2).sum()
    got = segment_loss(fwd, traj, r, x, y, torch.tensor(alpha, dtype=torch.float64), s, "mse", create_graph=False)
    assert got.item() == pytest.approx(mse, rel=1e-10)
    norm = segment_loss(fwd, traj, r, x, y, torch.tensor(alpha, dtype=torch.float64), s, "normalized", False)
    assert norm.item() == pytest.approx(mse / ((traj[r] - traj[r + s]) ** 2).sum().item(), rel=1e-10)


def test_gradients_reach_the_images_and_the_step_size():
    fwd, traj = linear_forward(), real_trajectory()
    x, y = init_synthetic(2, C, (D,), seed=0, dtype=torch.float64)
    x.requires_grad_(True)
    alpha = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    segment_loss(fwd, traj, 0, x, y, alpha, 2, "normalized").backward()
    assert x.grad.abs().sum() > 0 and alpha.grad.abs() > 0  # second-order path through the unrolled steps
    # the gradient w.r.t. α matches a finite difference
    h = 1e-6
    lp = segment_loss(fwd, traj, 0, x.detach(), y, alpha.detach() + h, 2, "normalized", False)
    lm = segment_loss(fwd, traj, 0, x.detach(), y, alpha.detach() - h, 2, "normalized", False)
    assert alpha.grad.item() == pytest.approx((lp - lm).item() / (2 * h), rel=1e-5)


def test_distillation_lowers_the_matching_loss_and_is_deterministic():
    fwd, traj = linear_forward(), real_trajectory()
    x0, y = init_synthetic(2, C, (D,), seed=7, dtype=torch.float64)
    c = cfg()
    before = matching_loss(fwd, traj, x0, y, 0.5, c.steps, c.loss)
    res = distill(fwd, traj, x0, y, 0.5, c, seed=7)
    after = matching_loss(fwd, traj, res.x, y, res.alpha, c.steps, c.loss)
    assert after < 0.5 * before
    again = distill(fwd, traj, x0, y, 0.5, c, seed=7)
    assert torch.equal(res.x, again.x) and res.alpha == again.alpha and res.losses == again.losses
    other = distill(fwd, traj, x0, y, 0.5, c, seed=8)
    assert other.losses != res.losses  # a different seed samples other segments
    assert torch.equal(y, torch.tensor([0, 0, 1, 1, 2, 2]))  # hard, class-balanced labels


def test_sgd_variant_also_lowers_the_loss():
    fwd, traj = linear_forward(), real_trajectory()
    x0, y = init_synthetic(2, C, (D,), seed=1, dtype=torch.float64)
    c = cfg(optim="sgd", lr_img=1.0, iters=40)
    before = matching_loss(fwd, traj, x0, y, 0.5, c.steps, c.loss)
    res = distill(fwd, traj, x0, y, 0.5, c, seed=1)
    assert matching_loss(fwd, traj, res.x, y, res.alpha, c.steps, c.loss) < before


def test_noise_init_is_seeded_and_profiles_follow_the_paper():
    a, _ = init_synthetic(3, C, (1, 2, 2), seed=0)
    b, _ = init_synthetic(3, C, (1, 2, 2), seed=0)
    assert torch.equal(a, b) and a.shape == (9, 1, 2, 2)
    assert PROFILES["fmnist"] == {"ipc": 20, "optim": "adam", "lr_img": 0.05, "steps": 3, "iters": 200}
    assert PROFILES["cifar10"]["lr_img"] == 1000.0 and PROFILES["cinic10"]["ipc"] == 40
    assert profile_for("digits", (1, 8, 8)) == "fmnist" and profile_for("cifar10", (3, 32, 32)) == "cifar10"
    assert profile_for("cinic10", (3, 32, 32)) == "cinic10" and profile_for("tiny", (5,)) == "fmnist"
    assert profile_for("digits_as_cifar10", (1, 8, 8)) == "cifar10"  # tiny stand-ins keep the paper's profile
    assert profile_for("digits_as_cinic10", (1, 8, 8)) == "cinic10" and profile_for("digits_as_fmnist", (1, 8, 8)) == "fmnist"
