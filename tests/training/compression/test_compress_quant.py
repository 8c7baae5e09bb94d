"""Stochastic quantization (FedSynSAM Eqs. 3-4): grid of a levels, unbiasedness, analytical variance,
bytes, scopes, determinism, config errors."""
import math

import numpy as np
import pytest
import torch

from fedflat.training.compression import StochasticQuantizer, num_levels, stochastic_quantize
from fedflat.training.compression.quantization import segment_norms
from fedflat.core.errors import ConfigError


def unit_vector_with_ratios(ratios):
    """v with ‖v‖ = 1 whose first entries are the given |v_i|/‖v‖ (last entry takes the rest)."""
    r = np.asarray(ratios, dtype=np.float64)
    return torch.tensor(np.append(r, math.sqrt(1.0 - (r ** 2).sum())), dtype=torch.float64)


def test_level_rules():
    assert num_levels(4, "2^b+1") == 17 and num_levels(8, "2^b+1") == 257  # the paper, literally
    assert num_levels(4, "2^b-1") == 15 and num_levels(4, "2^(b-1)-1") == 7
    assert StochasticQuantizer(bits=4).a == 17


@pytest.mark.parametrize("rule,a", [("2^b+1", 17), ("2^b-1", 15)])
def test_values_round_to_the_two_neighbouring_levels(rule, a):
    fracs = [0.25, 0.5, 0.75, 0.3]
    lows = [0, 1, 2, 3]
    v = unit_vector_with_ratios([(l + f) / a for l, f in zip(lows, fracs)])
    q = StochasticQuantizer(bits=4, levels=rule)
    draws = torch.stack([q.compress(v, 0, "delta", st)[0] for st in [{}] for _ in range(600)])
    lv = draws[:, :4] * a  # ‖v‖ = 1: Q(v)_i·a is the level index
    assert torch.allclose(lv, lv.round(), atol=1e-9)
    for j, (l, f) in enumerate(zip(lows, fracs)):
        vals = set(lv[:, j].round().long().tolist())
        assert vals == {l, l + 1}, (j, vals)
        up = float((lv[:, j].round() == l + 1).double().mean())
        assert abs(up - f) < 5 * math.sqrt(f * (1 - f) / 600)  # P(upper level) = r·a − l


def test_a_one_hot_vector_is_sent_exactly():
    v = torch.zeros(7, dtype=torch.float64)
    v[3] = -2.5  # r = 1: the top level a/a
    out, _ = StochasticQuantizer(bits=4).compress(v, 0, "delta", {})
    assert torch.equal(out, v)


def test_unbiased_with_the_analytical_variance():
    g = torch.Generator().manual_seed(3)
    v = torch.randn(40, generator=g, dtype=torch.float64)
    a, n = 3, 4000  # 2 bits with a = 2^b − 1 = 3 levels: coarse, so the variance is large
    # n independent draws at once: n copies of v, one norm segment per copy
    draws = stochastic_quantize(v.repeat(n), a, [(i * 40, (i + 1) * 40) for i in range(n)], g).view(n, 40)
    norm = v.norm()
    p = (v.abs() / norm * a) - (v.abs() / norm * a).floor()
    var = norm ** 2 * p * (1 - p) / a ** 2  # Var Q(v)_i = ‖v‖² p(1−p)/a²
    assert (var > 0).sum() > 30
    err = (draws.mean(0) - v).abs()
    assert bool((err <= 5 * (var / n).sqrt() + 1e-12).all())
    emp = draws.var(0, unbiased=True)
    mask = var > 1e-3 * norm ** 2 / a ** 2
    assert torch.allclose(emp[mask], var[mask], rtol=0.25)
    # and through the compressor (fresh draws per call, same grid): a few calls average towards v
    q, st = StochasticQuantizer(bits=2, levels="2^b-1"), {}
    mean = sum(q.compress(v, 1, "delta", st)[0] for _ in range(200)) / 200
    assert bool(((mean - v).abs() <= 5 * (var / 200).sqrt() + 1e-12).all())


def test_per_tensor_and_bucket_norms():
    v = torch.tensor([3.0, 4.0, 0.0, 1.0, 0.0, 0.0], dtype=torch.float64)  # ‖v[:2]‖ = 5, ‖v[2:]‖ = 1
    q = StochasticQuantizer(bits=4, levels="2^b-1", scope="per_tensor")
    q.set_layout([(0, 2), (2, 6)])
    out, nbytes = q.compress(v, 0, "delta", {})
    a = 15
    assert torch.allclose(out[:2] / 5 * a, (out[:2] / 5 * a).round(), atol=1e-9)
    assert torch.equal(out[2:], v[2:])  # the second tensor is one-hot: exact
    assert nbytes == math.ceil(6 * 5 / 8) + 2 * 4  # 5 bits per signed level (31 symbols) + 2 norms
    b = StochasticQuantizer(bits=4, levels="2^b-1", bucket_size=4)
    assert b.segments(10) == [(0, 4), (4, 8), (8, 10)]


def test_stochastic_quantize_matches_segmentwise_global():
    v = torch.randn(12, dtype=torch.float64)
    g1, g2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    both = stochastic_quantize(v, 5, [(0, 5), (5, 12)], g1)
    u = torch.rand(12, generator=g2, dtype=torch.float64)
    for s, e in [(0, 5), (5, 12)]:
        seg = v[s:e]
        r = seg.abs() / seg.norm() * 5
        ref = seg.norm() * seg.sign() * (r.floor() + (u[s:e] < r - r.floor()).double()) / 5
        assert torch.allclose(both[s:e], ref, atol=1e-12)


@pytest.mark.parametrize("bits,rule,per_value", [(4, "2^b+1", 6), (8, "2^b+1", 10), (4, "2^b-1", 5),
                                                 (4, "2^(b-1)-1", 4), (8, "2^(b-1)-1", 8)])
def test_bytes(bits, rule, per_value):
    v = torch.randn(100)
    _, nbytes = StochasticQuantizer(bits=bits, levels=rule).compress(v, 0, "delta", {})
    assert nbytes == math.ceil(100 * per_value / 8) + 4


def test_zero_vector_and_determinism():
    q = StochasticQuantizer(bits=4)
    out, _ = q.compress(torch.zeros(5), 0, "delta", {})
    assert torch.equal(out, torch.zeros(5))
    v = torch.randn(50)
    a1, a2, b = StochasticQuantizer(bits=2), StochasticQuantizer(bits=2), StochasticQuantizer(bits=2)
    s1, s2, s3 = {}, {}, {}
    seq1 = [a1.compress(v, 4, "delta", s1)[0] for _ in range(3)]
    seq2 = [a2.compress(v, 4, "delta", s2)[0] for _ in range(3)]
    other = b.compress(v, 5, "delta", s3)[0]
    assert all(torch.equal(x, y) for x, y in zip(seq1, seq2))
    assert not torch.equal(seq1[0], seq1[1]) and not torch.equal(seq1[0], other)


@pytest.mark.parametrize("params,needle", [
    ({"bits": 0}, "uplink.bits"), ({"bits": 4.5}, "uplink.bits"), ({"levels": "2^b"}, "uplink.levels"),
    ({"bitz": 4}, "uplink.bitz"), ({"bits": 1, "levels": "2^(b-1)-1"}, "uplink.bits"),
    ({"bucket_size": 8, "scope": "per_tensor"}, "uplink.bucket_size"), ({"scope": "layer"}, "uplink.scope"),
])
def test_config_errors(params, needle):
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        StochasticQuantizer(**params)


def test_per_tensor_needs_the_layout():
    with pytest.raises(ConfigError, match="per_tensor"):
        StochasticQuantizer(scope="per_tensor").compress(torch.ones(3), 0, "delta", {})


def _quantize_out_of_place(v, a, norm, gen):
    """The quantizer as first written (one new tensor per op): the in-place one must equal it bit for bit."""
    safe = torch.where(norm > 0, norm, torch.ones_like(norm))
    scaled = (v.abs() / safe).clamp_(max=1.0) * a
    low = scaled.floor()
    u = torch.rand(v.shape, generator=gen, dtype=v.dtype)
    level = low + (u < scaled - low).to(v.dtype)
    return torch.where(norm > 0, norm * torch.sign(v) * level / a, torch.zeros_like(v))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_in_place_quantizer_is_the_out_of_place_formula_bit_for_bit(dtype):
    g = torch.Generator().manual_seed(3)
    v = torch.randn(5000, generator=g, dtype=dtype) * 1e-3
    v[:7] = 0.0  # zeros quantize to zero, whatever the draw
    for segs in ([(0, 5000)], [(0, 3000), (3000, 5000)]):
        norm = segment_norms(v, segs)
        got = stochastic_quantize(v, 17, segs, torch.Generator().manual_seed(9))
        ref = _quantize_out_of_place(v, 17, norm, torch.Generator().manual_seed(9))
        assert torch.equal(got, ref)
    z = torch.zeros(10, dtype=dtype)  # ‖v‖ = 0: exactly zero, no NaN
    assert torch.equal(stochastic_quantize(z, 17, [(0, 10)], torch.Generator().manual_seed(0)), z)
    nan = torch.full((4,), float("nan"), dtype=dtype)  # a diverged update: zeros, as before
    assert torch.equal(stochastic_quantize(nan, 17, [(0, 4)], torch.Generator().manual_seed(0)), torch.zeros(4, dtype=dtype))
