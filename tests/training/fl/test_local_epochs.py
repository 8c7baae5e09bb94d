"""training.local_epochs (issue #13 item 5): client i runs E·⌈n_i/B⌉ steps, E passes over its data
with a DataLoader's last partial batch, and every use of K (FedNova's τ_i, the K_eff divisions,
grad_evals, the fused compiled step) sees the client's own count. Run ids without the key are
unchanged."""
import math

import numpy as np
import pytest
import torch

from fedflat.training.algorithms import PRESETS
from fedflat.training.algorithms.parts import effective_steps
from fedflat.training.data.partition import Partition
from fedflat.core.errors import ConfigError
from fedflat.training.fl.engine import Simulation
from fedflat.pipeline.scale import apply_scale
from fedflat.core.spec import RunSpec, check_training
from foundation_helpers import C, tiny_problem

SIZES = (5, 8, 13)  # B = 4: ⌈n/B⌉ = 2, 2, 4 batches per epoch; leftovers 1, 0, 1


def _sim(tmp_path, algorithm="fedavg", hp=None, sizes=SIZES, **tr):
    data, _, _, y, _ = tiny_problem(1, sum(sizes), seed=3)
    bounds = np.cumsum((0,) + sizes)
    clients = [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    hist = np.stack([np.bincount(y[c], minlength=C) for c in clients])
    training = check_training({"num_clients": len(sizes), "participation": 1.0, "rounds": 1, "batch_size": 4,
                               "lr": 0.1, "weight_decay": 0.0, "clip_grad_norm": 0.0, "checkpoint_every": 0,
                               "aggregation": "samples", **tr})
    spec = RunSpec("tiny", "manual", "linear", algorithm, 0, PRESETS.get(algorithm).resolve(hp or {}), {}, training)
    return Simulation(spec, data, Partition(clients, hist, {"spec": "manual", "seed": 0}), tmp_path, progress=False)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "5"])
def test_local_epochs_must_be_a_non_negative_integer(bad):
    with pytest.raises(ConfigError, match=r"training\.local_epochs: must be an integer >= 0"):
        check_training({"local_epochs": bad})


def test_run_ids_without_local_epochs_are_unchanged():
    tr = check_training({})
    assert tr["local_epochs"] == 0
    assert RunSpec("d", "p", "mlp", "fedavg", 0, {}, {}, tr).digest() == "0835910459"  # before the key existed
    old = {k: v for k, v in tr.items() if k != "local_epochs"}  # a spec written before the key existed
    assert RunSpec("d", "p", "mlp", "fedavg", 0, {}, {}, old).digest() == "0835910459"
    assert RunSpec("d", "p", "mlp", "fedavg", 0, {}, {}, {**tr, "local_epochs": 2}).digest() != "0835910459"


@pytest.mark.usefixtures("float64")
def test_each_client_runs_its_own_epochs_with_a_partial_last_batch(tmp_path):
    sim = _sim(tmp_path, "fedsam", {"rho": 0.1}, local_epochs=2, local_steps=7)
    seen: dict[int, list[np.ndarray]] = {}
    real = sim.data.train_batch

    def recording(idx, gen=None):
        seen.setdefault(cid, []).append(idx.numpy().copy())
        return real(idx, gen)

    sim.data.train_batch = recording
    start = sim.srv.theta.clone()
    for cid, n in enumerate(SIZES):
        res = sim.local_train(cid, 1, start, {}, 0.1)
        per_epoch = math.ceil(n / 4)
        assert res.steps == sim.client_steps(cid) == 2 * per_epoch  # local_steps (7) is not used
        own = set(sim.client_idx[cid].tolist())
        for e in range(2):  # each epoch: every sample exactly once, full batches then the leftovers
            batches = seen[cid][e * per_epoch:(e + 1) * per_epoch]
            assert [len(b) for b in batches] == [4] * (n // 4) + ([n % 4] if n % 4 else [])
            got = np.concatenate(batches)
            assert sorted(got.tolist()) == sorted(own)
        assert not np.array_equal(np.concatenate(seen[cid][:per_epoch]), np.concatenate(seen[cid][per_epoch:]))
    sim.data.train_batch = real
    row = sim.run_round(1)
    assert row["grad_evals"] == 2 * sum(2 * math.ceil(n / 4) for n in SIZES)  # 2 passes per SAM step


@pytest.mark.usefixtures("float64")
def test_step_mode_keeps_full_batches_only(tmp_path):
    sim = _sim(tmp_path, local_steps=3)
    stream = sim.client_stream(0, 1)  # n = 5, B = 4: the leftover sample waits for the next shuffle
    assert [len(stream.next()) for _ in range(3)] == [4, 4, 4]
    assert sim.client_steps(2) == 3


@pytest.mark.usefixtures("float64")
def test_fednova_uses_each_clients_steps_and_the_local_momentum(tmp_path):
    nova, avg = _sim(tmp_path / "n", "fednova", local_epochs=1, local_momentum=0.5), \
        _sim(tmp_path / "a", "fedavg", local_epochs=1, local_momentum=0.5)
    nova.run_round(1)
    avg.run_round(1)
    a = nova.algo.server._a
    assert a == {i: effective_steps(math.ceil(n / 4), 0.5) for i, n in enumerate(SIZES)}
    assert (nova.srv.theta - avg.srv.theta).abs().max() > 1e-4  # unequal τ_i: not a FedAvg rerun
    # equal sizes: equal τ_i, and FedNova is FedAvg again
    eq_n, eq_a = (_sim(tmp_path / f"e{k}", k, sizes=(8, 8, 8), local_epochs=1, local_momentum=0.5)
                  for k in ("fednova", "fedavg"))
    eq_n.run_round(1)
    eq_a.run_round(1)
    torch.testing.assert_close(eq_n.srv.theta, eq_a.srv.theta, rtol=0, atol=1e-6)


def test_scales_multiply_or_set_local_epochs():
    cfg = {"scale": "reduced", "training": {"local_epochs": 5, "local_steps": 50},
           "scales": {"reduced": {"training": {"local_epochs": "x0.4"}},
                      "tiny": {"training": {"local_epochs": 0, "local_steps": 1}}},
           "experiments": {"a": {"datasets": ["d"], "models": ["m"], "partitions": ["p"], "algorithms": ["x"],
                                 "seeds": [0]},
                           "b": {"datasets": ["d"], "models": ["m"], "partitions": ["p"], "algorithms": ["x"],
                                 "seeds": [0], "training": {"local_epochs": 10},
                                 "scales": {"tiny": {"training": {"local_steps": 3}}}}}}
    red = apply_scale(cfg).config["experiments"]
    assert red["a"]["training"]["local_epochs"] == 2 and red["b"]["training"]["local_epochs"] == 4
    tiny = apply_scale({**cfg, "scale": "tiny"}).config["experiments"]
    assert tiny["a"]["training"]["local_epochs"] == 0 and tiny["a"]["training"]["local_steps"] == 1
    assert tiny["b"]["training"]["local_steps"] == 3


@pytest.mark.usefixtures("float64")
def test_analyses_and_estimates_use_the_clients_own_steps(tmp_path):
    from types import SimpleNamespace

    from fedflat.pipeline.analysis.local_discrepancy import local_trajectories
    from fedflat.results.papers.compute import run_sample_grads
    from fedflat.training.synsam.source import mean_effective_steps

    sim = _sim(tmp_path, local_epochs=1)
    trajs = local_trajectories(sim, 1, [0, 1, 2])  # K_i = 2, 2, 4: D_k exists while all clients step
    assert trajs.shape[:2] == (3, 3)
    fake = SimpleNamespace(spec=SimpleNamespace(num_clients=3, local_momentum=0.5), client_steps=lambda c: (2, 2, 4)[c])
    assert mean_effective_steps(fake) == pytest.approx((2 * effective_steps(2, 0.5) + effective_steps(4, 0.5)) / 3)
    tr = check_training({"num_clients": 100, "participation": 0.1, "rounds": 3, "local_epochs": 5, "batch_size": 50})
    spec = RunSpec("cifar10-cutout", "dir0.1", "cnn_fedavg", "fedsam", 0, PRESETS.get("fedsam").resolve({}), {}, tr)
    assert run_sample_grads(spec) == 3 * 10 * 5 * 500 * 2  # an epoch sees the mean client's 500 samples once
