"""Tuning runs (training.holdout): a validation set carved from the training clients, never the test split."""
import numpy as np
import pytest
import torch

from fedflat.core.errors import ConfigError
from fedflat.training.fl.engine import hold_out
from fedflat.core.spec import RunSpec, check_training

from foundation_helpers import make_sim


def test_validation_is_carved_from_each_client_and_disjoint_from_training():
    clients = [np.arange(0, 20), np.arange(20, 30), np.arange(30, 32)]
    kept, val = hold_out(clients, 0.2, seed=3)
    assert [len(k) for k in kept] == [16, 8, 2]  # round(0.2 * 2) = 0 held out of the 2-sample client
    for c, k in zip(clients, kept):
        held = np.setdiff1d(c, k)
        assert len(k) >= 1 and set(held) <= set(val) and not set(k) & set(val)
    assert sorted(np.concatenate(kept + [val]).tolist()) == list(range(32))  # nothing lost, nothing repeated
    again, val2 = hold_out(clients, 0.2, seed=3)
    assert np.array_equal(val, val2) and all(np.array_equal(a, b) for a, b in zip(kept, again))
    assert not np.array_equal(val, hold_out(clients, 0.2, seed=4)[1])


def test_tuning_run_trains_without_and_evaluates_on_the_held_out_samples(tmp_path, float64):
    sim, x, y, clients = make_sim("fedavg", {}, tmp_path, per_client=10, rounds=1, holdout=0.2)
    held = np.setdiff1d(np.arange(30), np.concatenate([c.cpu().numpy() for c in sim.client_idx]))
    assert len(held) == 6 and sim.eval_split == "validation"
    assert torch.equal(sim.eval_data.test_y, torch.as_tensor(y[held]))  # the validation labels, not the test split's
    summary = sim.run()
    row = sim.log.rows[-1]
    assert row.get("val_acc") is not None and row.get("test_acc") is None
    assert summary["eval_split"] == "validation" and summary["final_acc"] == row["val_acc"]


def test_holdout_validation_and_run_ids():
    with pytest.raises(ConfigError, match=r"training.holdout: must be a fraction in \[0, 0.5\)"):
        check_training({"holdout": 0.5})
    base = RunSpec("d", "iid", "m", "fedavg", 0, {}, {}, check_training({}))
    tuned = RunSpec("d", "iid", "m", "fedavg", 0, {}, {}, check_training({"holdout": 0.1}))
    legacy = RunSpec("d", "iid", "m", "fedavg", 0, {}, {},
                     {k: v for k, v in check_training({}).items() if k != "holdout"})
    assert base.digest() == legacy.digest() != tuned.digest()  # runs without a holdout keep their ids
