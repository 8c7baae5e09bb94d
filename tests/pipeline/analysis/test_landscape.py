import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from fedflat.pipeline.analysis.loaded_run import mean_loss
from fedflat.pipeline.analysis.directions import directions, filter_normalize, random_direction
from fedflat.pipeline.analysis.landscape import evaluate_points, surface
from fedflat.core.errors import ConfigError
from fedflat.training.fl.flat import FlatModel


def conv_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, 5),
                         nn.ReLU(), nn.Linear(5, 3)).double()


def data(n=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 1, 4, 4, generator=g, dtype=torch.float64), torch.randint(0, 3, (n,), generator=g)


def filters(fm, vec):
    out = []
    for (a, b), p in zip(fm.slices, fm.params):
        out.append(vec[a:b].view(p.shape))
    return out


def test_filter_normalisation_gives_each_filter_the_weight_norm():
    fm = FlatModel(conv_model())
    theta = fm.flat.clone()
    d = random_direction(fm, theta, seed=3)
    for dv, tv, p in zip(filters(fm, d), filters(fm, theta), fm.params):
        if p.dim() <= 1:
            assert torch.all(dv == 0)  # default policy: biases stay fixed
            continue
        dn = dv.reshape(p.shape[0], -1).norm(dim=1)
        tn = tv.reshape(p.shape[0], -1).norm(dim=1)
        torch.testing.assert_close(dn, tn, rtol=1e-9, atol=1e-12)
        assert not torch.allclose(dv, tv)  # a random direction, not the weights themselves


def test_one_d_policies_and_bad_policy():
    fm = FlatModel(conv_model())
    theta = fm.flat.clone()
    raw = torch.randn(theta.numel(), dtype=torch.float64)
    dw = filter_normalize(raw, theta, fm, "weight")
    df = filter_normalize(raw, theta, fm, "filter")
    for a, b, t, r, p in zip(filters(fm, dw), filters(fm, df), filters(fm, theta), filters(fm, raw), fm.params):
        if p.dim() <= 1:
            assert torch.equal(a, t)
            assert torch.equal(b.abs(), t.abs()) and torch.equal(torch.sign(b), torch.sign(r))
    with pytest.raises(ConfigError, match="one_d"):
        filter_normalize(raw, theta, fm, "bogus")


def test_same_seed_gives_the_same_raw_directions_for_different_models():
    fa, fb = FlatModel(conv_model(0)), FlatModel(conv_model(1))
    da = random_direction(fa, fa.flat.clone(), seed=7)
    db = random_direction(fb, fb.flat.clone(), seed=7)
    for (a, b), p in zip(fa.slices, fa.params):
        if p.dim() > 1:
            ua = F.normalize(da[a:b].view(p.shape[0], -1), dim=1)
            ub = F.normalize(db[a:b].view(p.shape[0], -1), dim=1)
            torch.testing.assert_close(ua, ub)
    assert not torch.allclose(da, random_direction(fa, fa.flat.clone(), seed=8))


@pytest.mark.parametrize("chunk", [1, 4])
def test_origin_of_the_2d_landscape_is_the_model_loss(chunk):
    fm = FlatModel(conv_model())
    theta = fm.flat.clone()
    x, y = data()
    batches = [(x[:10], y[:10]), (x[10:], y[10:])]
    d1, d2 = directions(fm, theta, seed=0, count=2)
    axis = np.linspace(-1, 1, 5)
    res = surface(fm, theta, [d1, d2], axis, {"train": batches}, chunk=chunk)
    assert torch.equal(fm.flat, theta)  # the model is left at theta
    fm.module.eval()
    direct = F.cross_entropy(fm.module(x), y).item()
    if chunk == 1:
        assert res["train_loss"][2, 2] == mean_loss(fm, theta, batches)  # same code path: bit for bit
    assert abs(res["train_loss"][2, 2] - direct) < 1e-12
    # every grid point is the loss at theta + a d1 + b d2, with [j, i] = (axis[i], axis[j])
    for i, j in ((0, 4), (3, 1)):
        expect = mean_loss(fm, theta + axis[i] * d1 + axis[j] * d2, batches)
        assert abs(res["train_loss"][j, i] - expect) < 1e-12


def test_vmapped_chunks_match_plain_evaluation_and_1d():
    fm = FlatModel(conv_model())
    theta = fm.flat.clone()
    x, y = data()
    (d,) = directions(fm, theta, seed=1, count=1)
    coords = np.linspace(-0.5, 0.5, 7)[:, None]
    l1, a1 = evaluate_points(fm, theta, [d], coords, [(x, y)], chunk=1)
    l7, a7 = evaluate_points(fm, theta, [d], coords, [(x, y)], chunk=7)
    np.testing.assert_allclose(l1, l7, rtol=1e-12)
    np.testing.assert_array_equal(a1, a7)
    assert np.ptp(l1) > 1e-3  # the direction moves the loss
    res = surface(fm, theta, [d], coords[:, 0], {"test": [(x, y)]})
    np.testing.assert_allclose(res["test_loss"], l1, rtol=1e-12)
