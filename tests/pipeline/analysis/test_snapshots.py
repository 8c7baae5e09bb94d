"""training.snapshot_rounds (training/fl/snapshots.py) and the Hessian of a snapshot under FedSynSAM Table I's candidate
protocols (pipeline/analysis/analysis_commands.py: hessian with params round and split; split local is protocol (d))."""
import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from fedflat.training.algorithms import PRESETS
from fedflat.pipeline.analysis.analysis_commands import main as analysis_main
from fedflat.training.data import load_dataset, make_partition
from fedflat.core.errors import ConfigError
from fedflat.training.fl.batches import sample_clients
from fedflat.training.fl.engine import train
from fedflat.training.fl.flat import FlatModel
from fedflat.training.fl.snapshots import clients_snapshot, global_snapshot
from fedflat.training.models import build_model
from fedflat.core.spec import RunSpec, check_training

from .helpers import exact_hessian

KW = {"hidden": 3, "depth": 1}  # 235 parameters: the exact Hessian is cheap


def digits_spec(partition="iid", **training):
    tr = check_training({"num_clients": 6, "participation": 0.5, "rounds": 3, "local_steps": 5, "batch_size": 16,
                         "lr": 0.5, "eval_every": 3, "checkpoint_every": 0, "weight_decay": 0.0,
                         "clip_grad_norm": 0.0, **training})
    return RunSpec("digits", partition, "mlp", "fedavg", 0, PRESETS.get("fedavg").resolve({}), dict(KW),
                   PRESETS.get("fedavg").training_for(tr))


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits", "data", False)


def _partition(digits, spec, tmp):
    part = make_partition(digits.train_y.numpy(), spec.partition, spec.num_clients, spec.seed,
                          num_classes=digits.num_classes)
    path = tmp / f"{spec.partition}.npz"
    part.save(path)
    return part, path


def _train(digits, spec, tmp, name, **kw):
    _, ppath = _partition(digits, spec, tmp)
    out = tmp / name
    train(spec, out, ppath, "data", progress=False, **kw)
    return out


def test_run_id_without_the_option_is_unchanged():
    """A spec that does not set snapshot_rounds has the id it had before the key existed: the same digest as a
    spec whose training lacks the key, and the id this spec had on main before the option (hard-coded)."""
    s = digits_spec()
    legacy = replace(s, training={k: v for k, v in s.training.items() if k != "snapshot_rounds"})
    assert s.run_id() == legacy.run_id() == "digits/iid/mlp/fedavg/d7091b31d6/seed0"
    assert "snapshot_rounds" not in json.loads(s.job_params())["training"]
    snap = digits_spec(snapshot_rounds=[3, 1])
    assert snap.run_id() != s.run_id() and snap.training["snapshot_rounds"] == [1, 3]
    assert digits_spec(snapshot_rounds=[1, 3]).run_id() == snap.run_id()  # one id for any order


@pytest.mark.parametrize("bad, msg", [([0], "outside 1..training.rounds"), ([4], "outside"), ([1, 1], "twice"),
                                      (5, "list of round numbers"), ([True], "list of round numbers")])
def test_bad_snapshot_rounds_name_the_key(bad, msg):
    with pytest.raises(ConfigError, match=rf"^training\.snapshot_rounds: .*{msg}"):
        digits_spec(snapshot_rounds=bad)


def test_snapshots_written_at_the_chosen_rounds_and_the_last_equals_the_final_model(digits, tmp_path):
    spec = digits_spec(snapshot_rounds=[1, 3])
    out = _train(digits, spec, tmp_path, "run")
    assert sorted(p.name for p in (out / "snapshots").iterdir()) == ["r1.pt", "r1_clients.pt", "r3.pt", "r3_clients.pt"]
    final = torch.load(out / "model.pt", weights_only=False)
    last = torch.load(global_snapshot(out, 3), weights_only=False)
    assert last["round"] == 3 and torch.equal(last["theta"], final["theta"]) and last["spec"] == final["spec"]
    for t in (1, 3):
        ck = torch.load(clients_snapshot(out, t), weights_only=False)
        assert ck["clients"] == sample_clients(spec.seed, t, spec.num_clients, spec.clients_per_round)
        assert ck["thetas"].shape == (spec.clients_per_round, final["theta"].numel())
    # the global model of round 3 is the mean of round 3's local models (FedAvg, η_g = 1, no compression)
    ck = torch.load(clients_snapshot(out, 3), weights_only=False)
    assert torch.allclose(ck["thetas"].mean(0), final["theta"], atol=1e-6)
    plain = _train(digits, digits_spec(), tmp_path, "plain")  # the option changes no number of the run
    assert not (plain / "snapshots").exists()
    assert torch.equal(torch.load(plain / "model.pt", weights_only=False)["theta"], final["theta"])


@pytest.mark.parametrize("every, kill", [(1, 2), (2, 3)])
def test_a_resumed_run_still_writes_every_snapshot(digits, tmp_path, every, kill):
    """Killed after round `kill` and resumed from its checkpoint (every `every` rounds): the snapshots taken before
    the kill stay, the rest are written, and all equal an uninterrupted run's."""
    spec = digits_spec(rounds=4, snapshot_rounds=[1, 3], checkpoint_every=every)
    whole = _train(digits, spec, tmp_path, "whole")
    cut = _train(digits, spec, tmp_path, "cut", stop_after=kill)
    assert (cut / "checkpoint.pt").exists() and not (cut / "model.pt").exists()
    before = {p.name: p.stat().st_mtime_ns for p in (cut / "snapshots").iterdir()}
    # killed after round 2: round 1's snapshot is on disk; after round 3 with the checkpoint of round 2: both are,
    # and round 3 is replayed from the checkpoint (its snapshot written again, the same)
    assert set(before) == ({"r1.pt", "r1_clients.pt"} | ({"r3.pt", "r3_clients.pt"} if kill == 3 else set()))
    train(spec, cut, tmp_path / "iid.npz", "data", progress=False)
    for name in ("r1.pt", "r1_clients.pt", "r3.pt", "r3_clients.pt"):
        a = torch.load(whole / "snapshots" / name, weights_only=False)
        b = torch.load(cut / "snapshots" / name, weights_only=False)
        key = "theta" if "theta" in a else "thetas"
        assert torch.equal(a[key], b[key]), name
    if every == 1:  # resumed after round 2: round 1's snapshot was not rewritten
        assert (cut / "snapshots" / "r1.pt").stat().st_mtime_ns == before["r1.pt"]


def _exact_top(digits, theta, idx):
    """Top eigenvalue of the exact (float64) Hessian of the mean cross-entropy over training samples idx at theta."""
    module = build_model("mlp", digits.input_shape, digits.num_classes, **KW).double()
    fm = FlatModel(module)
    fm.flat.copy_(theta.double())
    idx = torch.as_tensor(idx)
    x, y = digits.normalise(digits.train_x[idx]).double(), digits.train_y[idx]
    return float(torch.linalg.eigvalsh(exact_hessian(fm.module, x, y))[-1])


def test_local_protocol_is_each_clients_own_hessian_at_its_own_model(digits, tmp_path):
    """Protocol (d): λ_max of every client sampled in round t, of its own loss at its own end-of-round model, checked
    against the exact Hessian; the global model or the union's data would each give other values."""
    spec = digits_spec("dir0.1", snapshot_rounds=[2])
    out = _train(digits, spec, tmp_path, "run")
    part, _ = _partition(digits, spec, tmp_path)
    res = tmp_path / "hessian_r2_local.json"
    params = {"split": "local", "round": 2, "max_iter": 1000, "tol": 1e-9, "trace_samples": 0, "density_iters": 0}
    assert analysis_main(["hessian", "--run-dir", str(out), "--out", str(res), "--params", json.dumps(params)]) == 0
    got = json.loads(res.read_text())
    ck = torch.load(clients_snapshot(out, 2), weights_only=False)
    glob = torch.load(global_snapshot(out, 2), weights_only=False)["theta"]
    union = np.concatenate(part.clients)
    assert got["client_ids"] == ck["clients"] and got["clients"] == spec.clients_per_round
    exact = [_exact_top(digits, ck["thetas"][i], part.clients[c]) for i, c in enumerate(ck["clients"])]
    np.testing.assert_allclose(got["lambda_max_clients"], exact, rtol=1e-4)
    assert got["lambda_max_mean"] == pytest.approx(np.mean(exact), rel=1e-4)
    assert got["lambda_max_max"] == pytest.approx(max(exact), rel=1e-4)
    # the wrong model (the global one of the same round) or the wrong data (the union) is far off the tolerance
    for i, c in enumerate(ck["clients"]):
        assert abs(_exact_top(digits, glob, part.clients[c]) / exact[i] - 1) > 1e-2
        assert abs(_exact_top(digits, ck["thetas"][i], union) / exact[i] - 1) > 1e-2


def test_global_protocols_read_the_snapshot_not_the_final_model(digits, tmp_path):
    """Protocols (a)-(c) at round t measure the round-t global model: (b) at round 2 equals the exact per-client
    Hessians at r2.pt, which differ from those of the final model."""
    spec = digits_spec("dir0.1", snapshot_rounds=[2])
    out = _train(digits, spec, tmp_path, "run")
    part, _ = _partition(digits, spec, tmp_path)
    res = tmp_path / "hessian_r2_clients.json"
    params = {"split": "clients", "round": 2, "max_iter": 1000, "tol": 1e-9, "trace_samples": 0}
    assert analysis_main(["hessian", "--run-dir", str(out), "--out", str(res), "--params", json.dumps(params)]) == 0
    got = json.loads(res.read_text())["lambda_max_clients"]
    at2 = torch.load(global_snapshot(out, 2), weights_only=False)["theta"]
    final = torch.load(out / "model.pt", weights_only=False)["theta"]
    np.testing.assert_allclose(got, [_exact_top(digits, at2, c) for c in part.clients], rtol=1e-4)
    assert abs(got[0] / _exact_top(digits, final, part.clients[0]) - 1) > 1e-2


def test_a_round_without_snapshot_and_local_without_round_fail_in_one_line(digits, tmp_path, capsys):
    out = _train(digits, digits_spec(snapshot_rounds=[2]), tmp_path, "run")
    for params, msg in (({"split": "train", "round": 1}, "run model missing: .*r1.pt .*snapshot_rounds"),
                        ({"split": "local"}, r"analysis\.hessian\.split: 'local' .*round >= 1")):
        assert analysis_main(["hessian", "--run-dir", str(out), "--out", str(tmp_path / "h.json"),
                              "--params", json.dumps(params)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and __import__("re").search(msg, err), err


def test_a_model_past_its_divergence_has_a_null_hessian_and_an_earlier_snapshot_a_real_one(digits, tmp_path):
    """The final model of a diverged run (or a snapshot after its last completed round) has no Hessian: the file
    says so with nulls, and the DAG goes on (the table shows the seed as diverged); a snapshot the run completed
    before diverging is measured as usual."""
    out = _train(digits, digits_spec(snapshot_rounds=[2]), tmp_path, "run")
    summary = json.loads((out / "summary.json").read_text())
    (out / "summary.json").write_text(json.dumps({**summary, "status": "diverged", "rounds_completed": 1}))
    for params in ({"split": "train", "round": 2}, {"split": "clients", "round": 2}, {"split": "train"}):
        res = tmp_path / "h.json"
        assert analysis_main(["hessian", "--run-dir", str(out), "--out", str(res), "--params", json.dumps(params)]) == 0
        got = json.loads(res.read_text())
        assert got["status"] == "diverged" and got["rounds_completed"] == 1
        assert got["lambda_max"] is None and got["lambda_max_mean"] is None and got["trace"] is None
    (out / "summary.json").write_text(json.dumps({**summary, "status": "diverged", "rounds_completed": 2}))
    res = tmp_path / "h2.json"
    params = {"split": "train", "round": 2, "trace_samples": 0, "density_iters": 0, "samples": 64}
    assert analysis_main(["hessian", "--run-dir", str(out), "--out", str(res), "--params", json.dumps(params)]) == 0
    got = json.loads(res.read_text())
    assert "status" not in got and got["lambda_max"] > 0


def test_a_diverged_seed_counts_as_diverged_in_a_table_of_hessian_values(tmp_path):
    from fedflat.results.papers.cell_stats import file_metric

    dirs = []
    for i, (status, lam) in enumerate((("completed", 4.0), ("completed", 6.0), ("diverged", None))):
        d = tmp_path / f"r{i}"
        d.mkdir()
        (d / "summary.json").write_text(json.dumps({"status": status, "rounds_completed": 3}))
        (d / "hessian.json").write_text(json.dumps({"lambda_max": lam}))
        dirs.append(str(d))
    cell = file_metric(dirs, "hessian.json", "lambda_max")
    assert (cell.mean, cell.n, cell.seeds, cell.diverged) == (5.0, 2, 3, 1)
    assert cell.text() == "5.00±1.41 [1/3 diverged]"
    assert file_metric(dirs[2:], "hessian.json", "lambda_max").text() == "diverged"
