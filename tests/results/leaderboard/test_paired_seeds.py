"""Paired seeds (leaderboard v3): a seed fixes the partition, the clients sampled each round, every client's
mini-batches and the initial weights, the same for every method, so two methods compare seed by seed. What a
method does with its own randomness (none of the presets here draws any before its first step) cannot move these."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from fedflat.training.data import load_dataset
from fedflat.training.fl.batches import sample_clients
from fedflat.training.fl.engine import Simulation
from fedflat.results.leaderboard.protocol import prepare
from fedflat.pipeline.study import load_study

from .helpers import small_config
from tests.faults.helpers import make_partition_file, make_spec

METHODS = ("fedavg", "fedsam", "feddyn", "scaffold", "fedsynsam", "fedtoga", "fedgf", "fedscam", "mimelite")


@pytest.fixture(scope="module")
def sims(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("paired")
    from fedflat.training.data.partition import Partition

    part = Partition.load(make_partition_file(tmp / "p.npz"))
    data = load_dataset("digits")
    return {m: Simulation(make_spec(m, seed=3), data, part, tmp / m, progress=False) for m in METHODS}


def test_every_method_starts_from_the_same_weights_for_a_seed(sims):
    ref = sims["fedavg"].srv.theta
    for m, sim in sims.items():
        assert torch.equal(sim.srv.theta, ref), m
    other = Simulation(make_spec("fedavg", seed=4), sims["fedavg"].data, _part(sims), sims["fedavg"].out.dir,
                       progress=False)
    assert not torch.equal(other.srv.theta, ref)  # and the seed does set them


def _part(sims):
    from fedflat.training.data.partition import Partition

    s = sims["fedavg"]
    return Partition([c.numpy() for c in s.client_idx], np.zeros((len(s.client_idx), 1), dtype=np.int64), {})


def test_every_method_samples_the_same_clients_and_batches(sims):
    for t in (1, 2, 7):
        picks = {m: sample_clients(s.spec.seed, t, s.spec.num_clients, s.spec.clients_per_round) for m, s in sims.items()}
        assert len({tuple(p) for p in picks.values()}) == 1
        cid = picks["fedavg"][0]
        batches = {m: tuple(s.client_stream(cid, t).next().tolist()) for m, s in sims.items()}
        assert len(set(batches.values())) == 1


def test_the_leaderboard_pairs_its_final_and_ablation_runs_by_seed():
    """Every final run of a partition shares the partition file of its seed; the ablation twins run the same seeds
    on the test split (no holdout), not the validation split."""
    cfg = small_config({"fedavg": {}, "fedsam": {"rho": [0.0, 0.1]}}, lr=(0.1, 0.3), continuation={"cells": 2, "seeds": [0]})
    cfg["leaderboard"]["seeds"] = [0, 1, 2]
    pick = {"lr": 0.1, "params": {"rho": 0.1}, "score": 80.0}
    chosen = {"partitions": {p: {"fedavg": {"lr": 0.3, "params": {}, "score": 79.0}, "fedsam": pick}
                             for p in cfg["leaderboard"]["partitions"]}, "stage": "continuation"}
    plain, _ = prepare(cfg, chosen, screen={"methods": {"fedavg": [], "fedsam": [pick]}})
    study = load_study(plain)
    for part in cfg["leaderboard"]["partitions"]:
        name = part.replace(".", "p").replace("-", "_")
        finals, twins = study.experiments[f"final_{name}"], study.experiments[f"ablation_{name}"]
        assert sorted(lab["seed"] for _, lab in twins) == [0, 1, 2]
        for rid, lab in twins:
            spec = study.runs[rid]
            assert spec.hparams["rho"] == 0.0 and spec.training["holdout"] == 0.0 and spec.training["lr"] == 0.1
            mate = next(r for r, l in finals if l["preset"] == "fedsam" and l["seed"] == lab["seed"])
            assert study.runs[mate].partition_id() == spec.partition_id()
            assert {k: v for k, v in study.runs[mate].hparams.items() if k != "rho"} == \
                {k: v for k, v in spec.hparams.items() if k != "rho"}
