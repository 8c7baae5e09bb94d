"""Config expansion and validation: bad values fail with one line naming the key, before compute."""
import copy

import pytest
import yaml

from fedflat.core.errors import ConfigError
from fedflat.pipeline.study import load_study


@pytest.fixture
def cfg(repo):
    return yaml.safe_load((repo / "config" / "tiny.yaml").read_text())


def test_tiny_expands_to_the_grid(cfg):
    st = load_study(cfg)
    assert len(st.runs) == 1 * 1 * 2 * 3 * 2  # datasets x models x partitions x algorithms x seeds
    assert len(st.partitions) == 2 * 2  # shared by every algorithm
    assert all(r.count("/") == 5 for r in st.runs)


def test_run_ids_depend_on_every_setting(cfg):
    a = load_study(cfg)
    cfg2 = copy.deepcopy(cfg)
    cfg2["training"]["lr"] = 0.01
    b = load_study(cfg2)
    assert not set(a.runs) & set(b.runs)
    cfg3 = copy.deepcopy(cfg)
    cfg3["algorithm_params"] = {"fedsam": {"rho": 0.2}}
    c = load_study(cfg3)
    changed = set(c.runs) - set(a.runs)
    assert changed and all("/fedsam/" in r for r in changed)


def test_job_params_leave_out_unset_late_keys_and_round_trip(cfg):
    """Snakemake reruns a job whose params string changed: a training key added later (local_epochs,
    holdout, eval_subset) must not change the params of runs that leave it unset, as it does not
    change their run id."""
    import json

    from fedflat.core.spec import _HASHED_WHEN_SET, _SPEED_ONLY, RunSpec

    spec = next(iter(load_study(cfg).runs.values()))
    params = json.loads(spec.job_params())
    assert not (set(_HASHED_WHEN_SET) | set(_SPEED_ONLY)) & set(params["training"])
    assert RunSpec.from_dict(params) == spec  # the train job gets every default back
    set_ = RunSpec.from_dict({**spec.to_dict(), "training": {**spec.training, "local_epochs": 2}})
    assert json.loads(set_.job_params())["training"]["local_epochs"] == 2
    assert set_.run_id() != spec.run_id()


def test_an_entry_training_override_changes_only_its_own_runs(cfg):
    """A per-method setting (FedTOGA App. B.2: lr decay 0.9995 for FedSMOO on ResNet-18) applies to that
    entry's runs; every other run keeps its id."""
    a = load_study(cfg)
    cfg2 = copy.deepcopy(cfg)
    cfg2["experiments"]["main"]["algorithms"] = ["fedavg", {"preset": "fedsam", "training": {"lr_decay": 0.9995}},
                                                 "fednsam"]
    b = load_study(cfg2)
    changed = set(b.runs) - set(a.runs)
    assert len(changed) == 2 * 2 and all("/fedsam/" in r for r in changed)  # partitions x seeds
    for rid, spec in b.runs.items():
        assert spec.training["lr_decay"] == (0.9995 if rid in changed else 1.0)
        assert spec.training["local_steps"] == 4  # the experiment's other settings still hold
    assert b.partitions == a.partitions


def test_an_entry_uplink_override_changes_only_its_own_runs(cfg):
    """How one 2x method sends its second vector (FedSynSAM Sec. VI-A leaves it open) is that entry's setting;
    the experiment's compressor still applies, and every other run keeps its id."""
    cfg["experiments"]["main"]["uplink"] = {"kind": "quant", "bits": 4}
    a = load_study(cfg)
    cfg["experiments"]["main"]["algorithms"] = ["fedavg", {"preset": "fedsam", "uplink": {"other_vectors": "raw"}},
                                                "fednsam"]
    b = load_study(cfg)
    changed = set(b.runs) - set(a.runs)
    assert len(changed) == 2 * 2 and all("/fedsam/" in r for r in changed)
    for rid, spec in b.runs.items():
        want = {"kind": "quant", "bits": 4, **({"other_vectors": "raw"} if rid in changed else {})}
        assert spec.uplink == want


@pytest.mark.parametrize("up,match", [
    ({"other_vectors": "sometimes"}, r"other_vectors"),
    ({"kind": "topk"}, r"algorithms.fedsam.uplink: a mapping of the experiment's compressor settings"),
    ("raw", r"algorithms.fedsam.uplink: a mapping"),
])
def test_bad_entry_uplink_names_the_key(cfg, up, match):
    cfg["experiments"]["main"]["uplink"] = {"kind": "quant", "bits": 4}
    cfg["experiments"]["main"]["algorithms"] = ["fedavg", {"preset": "fedsam", "uplink": up}]
    with pytest.raises(ConfigError, match=match):
        load_study(cfg)
    cfg["experiments"]["main"].pop("uplink")
    cfg["experiments"]["main"]["algorithms"] = ["fedavg", {"preset": "fedsam", "uplink": {"bits": 8}}]
    with pytest.raises(ConfigError, match="uncompressed; there is nothing to override"):
        load_study(cfg)


@pytest.mark.parametrize("entry,match", [
    ({"preset": "fedsam", "training": {"lr_decayy": 0.9}},
     r"experiments.main.algorithms.fedsam.training: unknown key 'lr_decayy'"),
    ({"preset": "fedsam", "training": {"lr_decay": -1}}, r"experiments.main.algorithms.fedsam.training.lr_decay: must be"),
    ({"preset": "fedsam", "training": {"num_clients": 4}},
     r"algorithms.fedsam.training.num_clients: shapes the experiment's partitions"),
    ({"preset": "fedsam", "training": 0.9}, r"algorithms.fedsam.training: must be a mapping"),
    ({"preset": "fedsam", "train": {}}, r"unknown key 'train'; allowed: label, params, preset, training, uplink"),
])
def test_bad_entry_training_names_the_key(cfg, entry, match):
    cfg["experiments"]["main"]["algorithms"] = ["fedavg", entry]
    with pytest.raises(ConfigError, match=match):
        load_study(cfg)


@pytest.mark.parametrize("path,value,match", [
    (("experiments", "main", "algorithms"), ["fedavg", "fedfoo"], r"algorithms: unknown value 'fedfoo'; allowed: .*fedavg"),
    (("experiments", "main", "datasets"), ["cifar1000"], r"datasets: unknown value 'cifar1000'"),
    (("experiments", "main", "models"), ["resnet999"], r"models: unknown value 'resnet999'"),
    (("experiments", "main", "partitions"), ["dir0"], r"alpha must be > 0"),
    (("experiments", "main", "partitions"), ["dir-0.5"], r"partition"),
    (("training", "participation"), 0.0, r"training.participation: must be in \(0, 1\]"),
    (("training", "participation"), 1.5, r"training.participation"),
    (("training", "rounds"), 0, r"training.rounds: must be an integer >= 1"),
    (("training", "local_steps"), 0, r"training.local_steps"),
    (("training", "lr"), -0.1, r"training.lr"),
    (("training", "lrr"), 0.1, r"training: unknown key 'lrr'"),
    (("algorithm_params",), {"fedsam": {"rho": -1.0}}, r"algorithm_params.fedsam.rho: -1.0 outside its domain \[0, inf\)"),
    (("algorithm_params",), {"fednsam": {"lam": 1.0}}, r"fednsam.lam: 1.0 outside its domain \[0, 1\)"),
    (("algorithm_params",), {"fedsam": {"rhoo": 0.1}}, r"unknown hyperparameter 'rhoo'; allowed: (.*, )?rho, "),
    (("tables", "accuracy", "experiment"), "nope", r"tables.accuracy.experiment: unknown value 'nope'"),
    (("figures", "convergence", "kind"), "pie", r"figures.convergence.kind: unknown value 'pie'"),
])
def test_bad_values_name_the_key(cfg, path, value, match):
    d = cfg
    for k in path[:-1]:
        d = d.setdefault(k, {})
    d[path[-1]] = value
    with pytest.raises(ConfigError, match=match) as e:
        load_study(cfg)
    assert "\n" not in str(e.value)
