import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fedflat.pipeline.analysis.divergence import proximal_kl, weight_divergence
from fedflat.pipeline.analysis.analysis_hooks import PerturbationCosineHook, SharpnessHook
from fedflat.core.errors import ConfigError
from fedflat.training.fl.engine import Simulation
from fedflat.training.fl.round_hooks import RoundHook

from .sim_helpers import partition, spec, synthetic

ALL_HOOKS = {"sharpness": {"every": 2, "samples": 50}, "perturbation_cosine": {"every": 2},
             "divergence": {}, "proximal_loss": {"every": 1}, "class_accuracy": {"every": 1},
             "local_accuracy": {"every": 1}}


class Recorder(RoundHook):
    def on_round_end(self, sim, t, rnd, row):
        self.ends = torch.stack([c.end for c in rnd.clients])
        self.row = dict(row)
        return {}


def run(s, data, tmp_path, extra_hooks=()):
    sim = Simulation(s, data, partition(data, s), tmp_path, progress=False)
    sim.hooks += list(extra_hooks)
    sim.run()
    return sim


def test_hooks_do_not_change_training_and_fill_their_columns(tmp_path):
    data = synthetic()
    for algo in ("fednsam", "fedsam"):
        a = run(spec(algo), data, tmp_path / f"{algo}a")
        b = run(spec(algo, analysis=ALL_HOOKS), data, tmp_path / f"{algo}b")
        assert torch.equal(a.srv.theta, b.srv.theta), algo
        rows = b.log.rows
        assert [r.get("sharpness") is not None for r in rows] == [True, True, True]  # t=1, 2 and the last
        assert all(r["div_global_local"] > 0 and r["proximal_loss"] > 0 for r in rows)
        for r in rows:  # class-wise accuracies average to the accuracy; the global acc is the logged one
            counts = np.bincount(data.test_y.numpy(), minlength=3)
            acc = sum(r[f"class_acc_{k}"] * counts[k] for k in range(3)) / counts.sum()
            assert abs(acc - r["test_acc"]) < 1e-6 and r["global_acc"] == r["test_acc"]
            assert 0 <= r["local_acc_min"] <= r["local_acc_mean"] <= 1
        assert -1 <= rows[-1]["perturbation_cosine"] <= 1


def test_flatness_distance_equals_direct_computation_from_client_models(tmp_path):
    rec = Recorder()
    sim = run(spec("fedavg", rounds=2), synthetic(), tmp_path, [rec])
    ends = rec.ends.double()
    direct = float(((ends - ends.mean(0)) ** 2).sum(1).mean())
    assert abs(rec.row["flatness_distance"] - direct) < 1e-6 * direct
    div = weight_divergence(rec.ends, rec.ends.mean(0), sim.srv.theta)
    assert abs(div["div_new_global_sq"] - direct) < 1e-5 * direct  # FedAvg: θ^{t+1} = mean of ends


def test_weight_divergence_by_hand():
    ends = torch.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 4.0]])
    out = weight_divergence(ends, torch.zeros(2), torch.tensor([0.0, 4.0]))
    assert out["div_global_local"] == pytest.approx((0 + 5 + 4) / 3)
    assert out["div_global_local_sq"] == pytest.approx((0 + 25 + 16) / 3)
    assert out["div_new_global_sq"] == pytest.approx((16 + 9 + 0) / 3)
    assert out["div_pairwise"] == pytest.approx((5 + 4 + 3) / 3)
    m = ends.mean(0)
    assert out["div_to_mean"] == pytest.approx(float((ends - m).norm(dim=1).mean()))


def test_proximal_kl_by_hand():
    data = synthetic()
    s = spec("fedavg")
    sim = Simulation(s, data, partition(data, s), "unused", progress=False)
    fm = sim.fm
    ref = fm.flat.clone()
    local = ref + 0.3 * torch.randn_like(ref, generator=None)
    x, y = data.train_x[:20], data.train_y[:20]
    empty = torch.zeros(0)
    assert abs(proximal_kl(fm, ref, empty, ref, empty, [(x, y)])) < 1e-7
    fm.load(ref); p = F.softmax(fm.module(x) / 3, 1)
    fm.load(local); q = F.softmax(fm.module(x) / 3, 1)
    expect = float((p * (p.log() - q.log())).sum(1).mean().detach())
    assert abs(proximal_kl(fm, local, empty, ref, empty, [(x[:7], y[:7]), (x[7:], y[7:])]) - expect) < 1e-6


def test_perturbation_cosine_is_one_for_full_batch_sam(tmp_path):
    data = synthetic()
    s = spec("fedsam", model="linear", rounds=2, num_clients=1, participation=1.0,
             analysis={"perturbation_cosine": {"every": 1, "batch": "full"}})
    rows = run(s, data, tmp_path / "a").log.rows
    assert all(abs(r["perturbation_cosine"] - 1) < 1e-5 for r in rows)
    assert abs(rows[0]["perturbation_norm"] - 0.05) < 1e-6  # ‖δ‖ = ρ
    # a mini-batch SAM perturbation is a noisy estimate of the global one
    s = spec("fedsam", model="linear", rounds=2, num_clients=1, participation=1.0, batch_size=4,
             analysis={"perturbation_cosine": {"every": 1}})
    rows = run(s, data, tmp_path / "b").log.rows
    assert all(r["perturbation_cosine"] < 0.999 for r in rows)
    # no perturbation: no cosine
    s = spec("fedavg", rounds=1, analysis={"perturbation_cosine": {"every": 1}})
    assert math.isnan(run(s, data, tmp_path / "c").log.rows[0]["perturbation_cosine"])


def test_hook_parameters_are_checked():
    with pytest.raises(ConfigError, match="analysis.hooks.sharpness.rho"):
        SharpnessHook(rho=-1)
    with pytest.raises(ConfigError, match="unknown key 'bogus'"):
        SharpnessHook(bogus=1)
    with pytest.raises(ConfigError, match="target"):
        PerturbationCosineHook.check({"target": "nowhere"}, "x")
