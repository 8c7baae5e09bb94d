"""Compressors inside the round loop: what the server receives, bytes per round, extra uplink vectors,
parse-time validation."""
import math

import pytest
import torch

from fedflat.core.errors import ConfigError
from fedflat.pipeline.study import load_study

from .helpers import C, D, tiny_sim

P = C * D + C  # linear model parameters


def test_topk_one_equals_no_compression_and_bytes_are_logged(tmp_path):
    a = tiny_sim(tmp_path / "a")
    a.run()
    b = tiny_sim(tmp_path / "b", uplink={"kind": "topk", "k": 1.0})
    b.run()
    assert torch.equal(a.srv.theta, b.srv.theta)
    assert a.log.rows[0]["up_bytes"] == 3 * P * 4
    assert b.log.rows[0]["up_bytes"] == 3 * math.ceil((P * 32 + P) / 8)  # values + a P-bit bitmap


def test_quantized_run_sends_fewer_bytes_and_changes_the_model(tmp_path):
    a = tiny_sim(tmp_path / "a")
    a.run()
    q = tiny_sim(tmp_path / "q", uplink={"kind": "quant", "bits": 4})
    q.run()
    assert q.log.rows[0]["up_bytes"] == 3 * (math.ceil(P * 6 / 8) + 4)
    assert not torch.equal(a.srv.theta, q.srv.theta)


def test_per_tensor_scope_gets_the_model_layout(tmp_path):
    s = tiny_sim(tmp_path, uplink={"kind": "quant", "bits": 4, "scope": "per_tensor"})
    assert s.compressor.slices == [(0, C * D), (C * D, P)]
    s.run()
    assert s.log.rows[0]["up_bytes"] == 3 * (math.ceil(P * 6 / 8) + 2 * 4)


def test_extra_uplink_vectors_go_through_the_same_compressor(tmp_path):
    s = tiny_sim(tmp_path, algorithm="scaffold", uplink={"kind": "topk", "k": 0.25})
    s.run()
    m = math.ceil(0.25 * P)  # 4.5 → round half up = 5
    per_vec = math.ceil((m * 32 + min(m * math.ceil(math.log2(P)), P)) / 8)
    assert s.log.rows[0]["up_bytes"] == 3 * 2 * per_vec  # Δ and SCAFFOLD's control-variate change


def test_compressor_state_survives_a_resume(tmp_path):
    up = {"kind": "topk", "k": 0.25, "error_feedback": True}
    full = tiny_sim(tmp_path / "full", uplink=up, rounds=3, checkpoint_every=1)
    full.run()
    part = tiny_sim(tmp_path / "cut", uplink=up, rounds=3, checkpoint_every=1)
    part.run(stop_after=1)
    resumed = tiny_sim(tmp_path / "cut", uplink=up, rounds=3, checkpoint_every=1)
    resumed.run()
    assert torch.equal(full.srv.theta, resumed.srv.theta)


def _study(uplink):
    return {"experiments": {"e": {"datasets": ["digits"], "models": ["linear"], "partitions": ["iid"],
                                  "algorithms": ["fedavg"], "seeds": [0], "uplink": uplink}}}


def test_study_validates_compressor_parameters_at_parse_time():
    assert load_study(_study({"kind": "quant", "bits": 8})).runs
    with pytest.raises(ConfigError, match=r"uplink\.bits"):
        load_study(_study({"kind": "quant", "bits": 99}))
    with pytest.raises(ConfigError, match=r"uplink\.kind"):
        load_study(_study({"kind": "zip"}))


def _dual_round(tmp_path, algorithm, uplink):
    """One round of a FedDyn-type preset; returns (sim, the raw Δh_i each client returned, what the server received
    per client (delta, up), the server's dual before and after)."""
    s = tiny_sim(tmp_path, algorithm=algorithm, uplink=uplink, hparams={"alpha": 0.5}, rounds=1)
    corr = s.algo.corrections[0]
    raw, seen = [], {}
    end, update = corr.client_end, corr.server_update

    def client_end(ctx, w):  # the part's own output, before the engine compresses it
        out = end(ctx, w)
        raw.append({k: v.clone() for k, v in out.items()})
        return out

    def server_update(srv, rnd):
        seen.update(h0=srv.state["h"].clone(), clients=[(c.delta.clone(), dict(c.up)) for c in rnd.clients],
                    cids=[c.cid for c in rnd.clients])
        update(srv, rnd)
        seen["h1"] = srv.state["h"].clone()

    corr.client_end, corr.server_update = client_end, server_update
    s.run()
    return s, raw, seen


def test_fedlesam_d_sends_its_dynamic_correction_through_the_compressor(tmp_path):
    """FedSynSAM Sec. VI-A: FedLESAM-D's extra vector (its dynamic correction) is "transmitted with the same
    compressor used for gradient compression". Fails if the vector is missing (bytes of one vector, no "dh"),
    sent uncompressed (32-bit bytes, off the quantizer's grid) or not what the server's dual sums."""
    up = {"kind": "quant", "bits": 4}
    s, raw, seen = _dual_round(tmp_path, "fedlesam_d_up", up)
    per_vec = math.ceil(P * 6 / 8) + 4  # 4 bits + sign and a 17-level code per value, one 32-bit norm
    assert s.log.rows[0]["up_bytes"] == 3 * 2 * per_vec  # Δ_i and Δh_i, both quantized, for each of 3 clients
    a = 17  # a = 2^4 + 1 levels (Eq. 3, literally)
    total = torch.zeros(P)
    for r, cid, (delta, got) in zip(raw, seen["cids"], seen["clients"]):
        assert set(got) == {"dh"}
        q, x = got["dh"], r["dh"]
        torch.testing.assert_close(s.store.get(cid)["h_i"], x)  # raw Δh_i: the client's h_i increment (h_i⁰ = 0) ...
        levels = q.abs() / x.norm() * a
        assert torch.allclose(levels, levels.round(), atol=1e-4) and not torch.equal(q, x)  # ... sent quantized
        assert not torch.allclose(q, -0.5 * delta)  # an independent draw: not α times the received update
        total += q
    torch.testing.assert_close(seen["h1"], seen["h0"] + total / 3)  # h + (1/N) Σ received Δh_i (N = |S| = 3)
    # the 1x preset (FedTOGA Alg. 3; FedLESAM's code) sends one vector only
    s1 = tiny_sim(tmp_path / "one", algorithm="fedlesam_d", uplink=up, hparams={"alpha": 0.5}, rounds=1)
    s1.run()
    assert s1.log.rows[0]["up_bytes"] == 3 * per_vec
    raw_up = tiny_sim(tmp_path / "raw", algorithm="fedlesam_d_up", uplink={**up, "other_vectors": "raw"},
                      hparams={"alpha": 0.5}, rounds=1)
    raw_up.run()
    assert raw_up.log.rows[0]["up_bytes"] == 3 * (per_vec + P * 4)  # the named variant: Δh_i as 32-bit floats


def test_under_topk_the_sent_correction_is_alpha_times_the_sent_update(tmp_path):
    """Top-k is scale-equivariant and deterministic: Q(−αΔ) = −α·Q(Δ), so under it the 2x reading moves the model
    as the 1x preset does (to rounding) and only the bytes double."""
    up = {"kind": "topk", "k": 0.25}
    s, _, seen = _dual_round(tmp_path, "fedlesam_d_up", up)
    for delta, got in seen["clients"]:
        torch.testing.assert_close(got["dh"], -0.5 * delta)
    s1 = tiny_sim(tmp_path / "one", algorithm="fedlesam_d", uplink=up, hparams={"alpha": 0.5}, rounds=1)
    s1.run()
    torch.testing.assert_close(s.srv.theta, s1.srv.theta)
    assert s.log.rows[0]["up_bytes"] == 2 * s1.log.rows[0]["up_bytes"]
