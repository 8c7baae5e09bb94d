"""The generic checks every registered preset gets, parametrised over the registry (a new preset is
covered without editing a list): a smoke run that learns digits (preset_checks.LEARN), its
gradient-evaluation count, its communication count and a resume after a kill (preset_checks.TINY:
4 digits clients, 2 per round, 2 local steps of 16 samples, the MLP with 16 hidden units, 3 rounds)."""
import math

import pytest
import torch

from fedflat.training.algorithms import PRESETS
from fedflat.training.algorithms.fedsol_parts import ProjectionPerturbation
from fedflat.training.algorithms.losses import FedSOLPerturbation
from fedflat.training.data import load_dataset
from fedflat.training.data.partition import make_partition
from fedflat.training.fl.round_hooks import BYTES_PER_FLOAT
from .preset_checks import LEARN, TINY, recorded_last_round, tiny_sim, without_times

NAMES = PRESETS.names()


@pytest.fixture(scope="module")
def digits():
    data = load_dataset("digits")
    return data, make_partition(data.train_y.numpy(), "dir0.5", TINY["num_clients"], seed=0)


# Presets that do not reach 3x chance in the LEARN run with their defaults, and why (they still must
# complete, stay finite and move the model).
SLOW = {"perfedavg": "the meta step is scaled by β/lr with β = 0.01: 1/15 of FedAvg's step at lr 0.15"}


@pytest.fixture(scope="module")
def digits6():
    data = load_dataset("digits")
    return data, make_partition(data.train_y.numpy(), "dir0.5", LEARN["num_clients"], seed=0)


@pytest.mark.parametrize("name", NAMES)
def test_smoke_run_learns_digits(name, digits6, tmp_path):
    """Defaults, a few rounds on the embedded digits data: no NaN and accuracy at least 3x chance."""
    sim = tiny_sim(name, *digits6, tmp_path, settings=LEARN, hidden=32)
    theta0 = sim.srv.theta.clone()
    summary = sim.run()
    assert summary["status"] == "completed" and summary["rounds_completed"] == LEARN["rounds"]
    assert math.isfinite(summary["final_loss"]) and all(math.isfinite(r["train_loss"]) for r in sim.log.rows)
    assert (sim.srv.theta - theta0).abs().max() > 1e-4  # the preset trained
    if name not in SLOW:
        assert summary["final_acc"] > 0.3, f"{name} did not learn: {summary['final_acc']}"


# FedSOL's proximal gradient is counted as a pass (Part.grad_evals: the method's cost) where the part
# computes it in closed form (the L2 proximal term) or skips it (w = θ at a round's first step).
COUNTED_AS_COST = (FedSOLPerturbation, ProjectionPerturbation)


@pytest.mark.parametrize("name", NAMES)
def test_gradient_evaluations_are_counted_as_run(name, digits, tmp_path):
    sim, rec, row = recorded_last_round(name, *digits, tmp_path)
    measured = rec.samples / TINY["batch_size"]  # batches' worth of forward/backward passes
    steps = sum(r.steps for r in rec.round.clients)
    assert row["grad_evals"] == sim.algo.grad_evals_per_step * steps
    if isinstance(sim.algo.perturbation, COUNTED_AS_COST):
        assert steps <= measured <= row["grad_evals"]
    else:
        assert measured == row["grad_evals"], f"{name}: ran {measured} gradient evaluations, counted {row['grad_evals']}"


@pytest.mark.parametrize("name", NAMES)
def test_communication_is_counted_as_sent(name, digits, tmp_path):
    """Bytes on the wire are 4 per float of what the clients received (θ and every downlink vector)
    and of what the server received (Δ and every uplink vector), uncompressed."""
    sim, rec, row = recorded_last_round(name, *digits, tmp_path)
    clients = rec.round.clients
    assert sorted(rec.down) == sorted(c.cid for c in clients) and len(clients) == 2
    assert row["down_bytes"] == BYTES_PER_FLOAT * sum(rec.down.values())
    sent = sum(c.delta.numel() + sum(v.numel() for v in c.up.values()) for c in clients)
    assert row["up_bytes"] == BYTES_PER_FLOAT * sent and row["up_bytes"] >= 2 * BYTES_PER_FLOAT * sim.fm.numel


@pytest.mark.parametrize("name", NAMES)
def test_resume_after_a_kill_equals_an_uninterrupted_run(name, digits, tmp_path):
    ref = tiny_sim(name, *digits, tmp_path / "ref")
    ref.run()
    killed = tiny_sim(name, *digits, tmp_path / "run")
    assert killed.run(stop_after=1) == {"status": "stopped", "round": 1}  # the process dies after round 1
    assert killed.out.checkpoint.exists()
    resumed = tiny_sim(name, *digits, tmp_path / "run")  # a new process on the same directory
    summary = resumed.run()
    assert summary["status"] == "completed" and resumed.start_round == 2
    assert without_times(resumed.log.rows) == without_times(ref.log.rows)
    assert torch.equal(resumed.srv.theta, ref.srv.theta)
