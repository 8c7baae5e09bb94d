"""The collapse rule (training/fl/engine.py Simulation.collapsed): a run that ends with finite weights at chance accuracy
and an exploding loss is `collapsed`, not `completed` (it has no final accuracy, like a diverged run); a healthy run
and a barely trained one near chance (loss near ln C) stay completed. The thresholds are the rule's: moving either
across the measured values fails here."""
from __future__ import annotations

import math

import pytest

from fedflat.training.fl import engine
from fedflat.training.fl.engine import train
from tests.faults.helpers import make_partition_file, make_spec


@pytest.fixture(scope="module")
def part(tmp_path_factory):
    return make_partition_file(tmp_path_factory.mktemp("p") / "p.npz")


def _last_eval(run_dir):
    import pandas as pd

    m = pd.read_csv(run_dir / "metrics.csv")
    return m.dropna(subset=["test_acc"]).iloc[-1]


def test_lr_1e3_under_the_default_clip_collapses(part, tmp_path):
    """The issue's case: lr 1e3 with the default gradient clip trains at a huge loss to chance accuracy."""
    s = train(make_spec("fedavg", lr=1e3, clip_grad_norm=10.0, rounds=4), tmp_path / "r", part, progress=False)
    last = _last_eval(tmp_path / "r")
    assert math.isfinite(last["test_loss"]) and last["test_loss"] > 2 * math.log(10)  # finite weights, loss exploded
    assert last["test_acc"] <= 0.1 + engine.COLLAPSE_MARGIN
    assert s["status"] == "collapsed" and s["final_acc"] is None and s["last10_acc"] is None
    assert s["rounds_completed"] == 4  # it ran to the end: not a divergence


def test_a_healthy_run_and_a_barely_trained_one_stay_completed(part, tmp_path):
    ok = train(make_spec("fedavg", rounds=4), tmp_path / "ok", part, progress=False)
    assert ok["status"] == "completed" and ok["final_acc"] > 0.1 + engine.COLLAPSE_MARGIN
    slow = train(make_spec("fedavg", lr=1e-6, rounds=2), tmp_path / "slow", part, progress=False)
    last = _last_eval(tmp_path / "slow")
    assert last["test_acc"] <= 0.1 + engine.COLLAPSE_MARGIN  # at chance ...
    assert last["test_loss"] < engine.COLLAPSE_LOSS * math.log(10)  # ... with the loss of an untrained model
    assert slow["status"] == "completed"


def test_the_rule_reads_the_last_evaluation(monkeypatch):
    """Both conditions are needed, and each threshold bites where it should."""
    class Fake:
        acc_key = "test_acc"
        data = type("D", (), {"num_classes": 10})()

        def __init__(self, acc, loss):
            self.log = type("L", (), {"rows": [{"test_acc": 0.9, "test_loss": 0.3}, {"round": 2},
                                               {"test_acc": acc, "test_loss": loss}]})()

    rule = engine.Simulation.collapsed
    assert rule(Fake(0.10, 1e7)) and rule(Fake(0.149, float("nan"))) and rule(Fake(0.10, 4.7))
    assert not rule(Fake(0.16, 1e7))  # above chance + 5 points
    assert not rule(Fake(0.10, 4.5))  # loss below 2 ln 10 = 4.61
