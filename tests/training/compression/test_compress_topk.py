"""Top-k sparsification (k = kept fraction) and error feedback."""
import math

import pytest
import torch

from fedflat.training.compression import StochasticQuantizer, TopK, kept_count
from fedflat.core.errors import ConfigError


def distinct(d, seed=0):
    g = torch.Generator().manual_seed(seed)
    mags = torch.randperm(d, generator=g).double() + 1.0  # distinct magnitudes 1..d
    signs = torch.where(torch.rand(d, generator=g) < 0.5, -1.0, 1.0).double()
    return mags * signs


def test_keeps_exactly_the_k_largest_magnitudes():
    v = distinct(50)
    out, nbytes = TopK(k=0.1).compress(v, 0, "delta", {})
    kept = torch.nonzero(out).flatten()
    assert len(kept) == 5
    assert set(kept.tolist()) == set(torch.argsort(v.abs(), descending=True)[:5].tolist())
    assert torch.equal(out[kept], v[kept])
    # 5 float32 values + positions as the cheaper of 5·⌈log2 50⌉ = 30 bits and a 50-bit bitmap
    assert nbytes == math.ceil((5 * 32 + 30) / 8)


def test_bitmap_when_cheaper_and_k_one_is_identity():
    v = distinct(64)
    out, nbytes = TopK(k=0.5).compress(v, 0, "delta", {})
    assert (out != 0).sum() == 32 and nbytes == math.ceil((32 * 32 + 64) / 8)  # 64-bit bitmap < 32·6 bits
    out, _ = TopK(k=1.0).compress(v, 0, "delta", {})
    assert torch.equal(out, v)


def test_per_tensor_scope_ranks_each_tensor():
    v = torch.cat([distinct(20, 1) * 100, distinct(30, 2)])  # the first tensor dominates globally
    t = TopK(k=0.25, scope="per_tensor")
    t.set_layout([(0, 20), (20, 50)])
    out, _ = t.compress(v, 0, "delta", {})
    assert (out[:20] != 0).sum() == 5 and (out[20:] != 0).sum() == kept_count(0.25, 30) == 8
    assert set(torch.nonzero(out[20:]).flatten().tolist()) == set(torch.argsort(v[20:].abs(), descending=True)[:8].tolist())
    g, _ = TopK(k=0.25).compress(v, 0, "delta", {})
    assert (g[20:] != 0).sum() == 0  # global scope: all 12 from the first tensor (and 0.25·50 → 13 kept)
    assert (g != 0).sum() == 13


def test_kept_count_rounding():
    assert kept_count(0.1, 5) == 1 and kept_count(0.1, 3) == 1 and kept_count(0.25, 30) == 8
    assert kept_count(1.0, 7) == 7 and kept_count(1e-9, 7) == 1


def test_error_feedback_off_by_default_and_telescopes_when_on():
    vs = [distinct(20, s) for s in range(4)]
    st: dict = {}
    plain = TopK(k=0.2)
    for v in vs:
        plain.compress(v, 0, "delta", st)
    assert not any(k.startswith("ef/") for k in st)
    ef, st = TopK(k=0.2, error_feedback=True), {}
    sent = []
    for v in vs:
        sent.append(ef.compress(v, 0, "delta", st)[0])
    # e_t = (v_t + e_{t−1}) − Q(v_t + e_{t−1})  ⇒  Σ Q + e_T = Σ v exactly
    assert torch.allclose(sum(sent) + st["ef/delta"], sum(vs), atol=1e-12)
    # the second message compresses v_2 + the first residual
    e1 = vs[0] - sent[0]
    q2, _ = TopK(k=0.2).compress(vs[1] + e1, 0, "delta", {})
    assert torch.equal(sent[1], q2)


def test_error_feedback_is_per_uplink_key():
    ef, st = StochasticQuantizer(bits=2, error_feedback=True), {}
    ef.compress(torch.ones(4), 0, "delta", st)
    ef.compress(torch.ones(4) * 2, 0, "dc", st)
    assert {"ef/delta", "ef/dc"} <= set(st)


@pytest.mark.parametrize("k", [0, -0.1, 1.5, "a"])
def test_bad_k(k):
    with pytest.raises(ConfigError, match=r"uplink\.k"):
        TopK(k=k)


def test_other_vectors_readings_leave_the_model_update_alone():
    """FedSynSAM's 2x methods: the second uplink vector raw, with error feedback, or compressed like the update."""
    v, w = distinct(20, 1), distinct(20, 2)
    literal, st0 = TopK(k=0.2), {}
    q_delta, b_delta = literal.compress(v, 0, "delta", st0)
    q_dc, b_dc = literal.compress(w, 0, "dc", st0)
    assert (q_dc != 0).sum() == 4 and b_dc == b_delta  # "compress": the second vector like the update
    raw, st1 = TopK(k=0.2, other_vectors="raw"), {}
    assert torch.equal(raw.compress(v, 0, "delta", st1)[0], q_delta)  # the update is still compressed
    sent, nbytes = raw.compress(w, 0, "dc", st1)
    assert torch.equal(sent, w) and nbytes == 20 * 4 and not st1.get("ef/dc")  # 32-bit floats, counted as such
    ef, st2 = TopK(k=0.2, other_vectors="error_feedback"), {}
    ef.compress(v, 0, "delta", st2)
    first, _ = ef.compress(w, 0, "dc", st2)
    assert "ef/delta" not in st2 and torch.allclose(st2["ef/dc"], w - first)  # feedback on the second vector only
    second, _ = ef.compress(w, 0, "dc", st2)
    q2, _ = TopK(k=0.2).compress(w + (w - first), 0, "dc", {})
    assert torch.equal(second, q2)


def test_other_vectors_is_checked():
    with pytest.raises(ConfigError, match=r"uplink\.other_vectors"):
        TopK(k=0.2, other_vectors="zip")
