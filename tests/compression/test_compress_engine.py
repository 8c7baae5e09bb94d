"""Compressors inside the round loop: what the server receives, bytes per round, extra uplink vectors,
parse-time validation."""
import math

import pytest
import torch

from fedflat.errors import ConfigError
from fedflat.study import load_study

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
