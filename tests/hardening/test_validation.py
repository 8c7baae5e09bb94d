"""Validation that used to let a wrong result through, and one set of checks for every entry point:

- a learning rate of .nan or .inf is refused (NaN passes no comparison, so `v <= 0` alone let it through);
- `fedflat validate`, the workflow and `fedflat train --spec` run the same checks (fedflat.pipeline.inputs): the schema's
  `training: [1, 2]` and `device: tpu`, a spec `{}`, a spec with rounds -4 (which used to record "completed");
- a partition is checked when loaded: a negative index (which trained to "completed" on samples counted from the
  end), an index past the training split (a raw IndexError before), a sample listed twice by a scheme that never
  repeats one.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from fedflat.cli import main as cli
from fedflat.training.data import Partition
from fedflat.core.errors import ConfigError
from fedflat.pipeline.inputs import check_run_spec, validate_config

from faults.helpers import make_partition_file, make_spec, train_cmd
from .helpers import one_line

REPO = Path(__file__).resolve().parents[2]
TINY = yaml.safe_load((REPO / "config/tiny.yaml").read_text())


def _with(path: str, value) -> dict:
    cfg = copy.deepcopy(TINY)
    *parents, last = path.split(".")
    d = cfg
    for k in parents:
        d = d[k]
    d[last] = value
    return cfg


BAD_CONFIGS = [
    ("training.lr", float("nan"), "training.lr: must be a finite number > 0, got nan"),
    ("training.lr", float("inf"), "training.lr: must be a finite number > 0, got inf"),
    ("training.lr_decay", float("inf"), "training.lr_decay: must be a finite number > 0"),
    ("training.weight_decay", float("nan"), "training.weight_decay: must be a finite number >= 0"),
    ("training.clip_grad_norm", float("inf"), "training.clip_grad_norm: must be a finite number >= 0"),
    ("experiments.main.training", {"lr": float("nan")}, "experiments.main.training.lr: must be a finite number"),
    ("training", [1, 2], "training: [1, 2] is not of type 'object'"),
    ("device", "tpu", "device: 'tpu' does not match"),
    ("training.rounds", -4, "training.rounds: -4 is less than the minimum of 1"),
]


@pytest.mark.parametrize("path,value,message", BAD_CONFIGS, ids=[f"{p}={v!r}" for p, v, _ in BAD_CONFIGS])
def test_validate_and_the_workflow_refuse_the_same_line(tmp_path, capsys, path, value, message):
    cfg = _with(path, value)
    with pytest.raises(ConfigError) as exc:
        validate_config(cfg)  # what workflow/rules/common.smk runs at parse time
    assert str(exc.value).startswith(message)
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    assert cli(["validate", str(tmp_path / "c.yaml")]) == 2
    assert one_line(capsys.readouterr().err) == f"fedflat: error: {exc.value}"


def test_the_shipped_tiny_config_still_validates(capsys):
    assert cli(["validate", str(REPO / "config/tiny.yaml")]) == 0
    assert capsys.readouterr().out.startswith("ok: 12 runs")


# ------------------------------------------------------------------ fedflat train --spec
SPEC = make_spec("fedavg", rounds=2).to_dict()

BAD_SPECS = [
    ({}, "--spec: missing key 'dataset'"),
    ([1], "--spec: must be a JSON object"),
    ({**SPEC, "training": {**SPEC["training"], "rounds": -4}}, "--spec.training.rounds: must be an integer >= 1, got -4"),
    ({**SPEC, "training": {**SPEC["training"], "lr": "nan"}}, "--spec.training.lr: must be a finite number > 0"),
    ({**SPEC, "training": [1, 2]}, "--spec.training: must be a mapping"),
    ({**SPEC, "algorithm": "nope"}, "--spec.algorithm: unknown value 'nope'"),
    ({**SPEC, "dataset": ["digits"]}, "--spec.dataset: unknown value ['digits']"),
    ({**SPEC, "model": "resnet1000"}, "--spec.model: unknown value 'resnet1000'"),
    ({**SPEC, "partition": "dir-1"}, "--spec.partition: partition: alpha must be > 0"),
    ({**SPEC, "seed": -1}, "--spec.seed: must be an integer >= 0"),
    ({**SPEC, "hparams": {"server_lr": float("inf")}}, "--spec.hparams.fedavg.server_lr: expected a number"),
    ({**SPEC, "uplink": {"kind": "zip"}}, "--spec.uplink.kind: unknown value 'zip'"),
    ({**SPEC, "analysis": {"hesian": {}}}, "--spec.analysis: unknown value 'hesian'"),
    ({**SPEC, "colour": 1}, "--spec: unknown key 'colour'"),
]


@pytest.mark.parametrize("spec,message", BAD_SPECS, ids=[m.split(":")[0] + str(i) for i, (_, m) in enumerate(BAD_SPECS)])
def test_train_refuses_a_bad_spec_before_anything_is_written(tmp_path, capsys, spec, message):
    part = make_partition_file(tmp_path / "p.npz")
    out = tmp_path / "out"
    assert cli(["train", "--spec", json.dumps(spec), "--partition", str(part), "--out-dir", str(out)]) == 2
    assert one_line(capsys.readouterr().err).startswith(f"fedflat: error: {message}")
    assert not out.exists()


def test_a_valid_spec_is_kept_as_given():
    """The check never rewrites a spec: the run id the workflow made is the run id trained."""
    spec = make_spec("fedsam", rounds=3)
    assert check_run_spec(json.loads(json.dumps(spec.to_dict()))).run_id() == spec.run_id()


# ------------------------------------------------------------------ partitions, checked when loaded
def _save(path: Path, clients: list, meta: dict) -> Path:
    Partition([np.asarray(c, dtype=np.int64) for c in clients], np.ones((len(clients), 10), dtype=np.int64),
              meta).save(path)
    return path


def _edited(tmp_path: Path, edit) -> Path:
    p = Partition.load(make_partition_file(tmp_path / "ok.npz"))
    clients = [c.copy() for c in p.clients]
    edit(clients)
    return _save(tmp_path / "bad.npz", clients, p.meta)


@pytest.mark.parametrize("case,edit,words", [
    ("negative index", lambda c: c[2].__setitem__(0, -3), ["client 2 holds index -3", "outside 0..1437"]),
    ("index past the split", lambda c: c[4].__setitem__(1, 99_999), ["client 4 holds index 99999", "outside"]),
    ("sample listed twice", lambda c: c[1].__setitem__(0, c[0][0]), ["is listed twice", "'iid'"]),
])
def test_a_partition_with_bad_indices_is_refused_by_train(tmp_path, capsys, case, edit, words):
    bad = _edited(tmp_path, edit)
    out = tmp_path / "out"
    assert cli(train_cmd(make_spec("fedavg", rounds=2), bad, out)[3:]) == 2
    one_line(capsys.readouterr().err, "bad.npz", *words, "regenerate it alone with `snakemake --cores 1")
    assert not (out / "summary.json").exists()


def test_the_size_of_the_data_bounds_the_indices(tmp_path):
    """Against the data the run trains on, not only the size the file records."""
    part = make_partition_file(tmp_path / "p.npz")
    Partition.load(part, num_samples=1438)
    with pytest.raises(ConfigError, match="outside 0..99 of the training split"):
        Partition.load(part, num_samples=100)


def test_schemes_that_refill_their_pools_may_repeat_samples(tmp_path):
    """dir<a>-rep and path<c> reuse samples across clients (FedNSAM / FL-Simulator): no false refusal."""
    from fedflat.training.data import load_dataset, make_partition

    y = load_dataset("digits").train_y.numpy()
    for spec in ("dir0.1-rep", "path2"):
        p = make_partition(y, spec, 40, 0, samples_per_client=60)
        flat = np.concatenate(p.clients)
        assert len(np.unique(flat)) < len(flat)  # the case the check must let through
        p.save(tmp_path / "r.npz")
        Partition.load(tmp_path / "r.npz", num_samples=len(y))


@pytest.mark.parametrize("config,scale", [("config/config.yaml", None), ("config/tiny.yaml", None),
                                          ("config/papers/fedsynsam.yaml", "tiny")])
def test_every_run_a_shipped_study_makes_passes_the_train_check_unchanged(config, scale):
    """What the train rule passes (RunSpec.job_params) is accepted and keeps its run id (checked by hand over every
    shipped study at paper and tiny scale: 11854 specs)."""
    from fedflat.pipeline.study import load_config_file

    cfg = load_config_file(REPO / config)
    if scale:
        cfg["scale"] = scale
    study = validate_config(cfg)
    assert study.runs
    for rid, spec in study.runs.items():
        assert check_run_spec(json.loads(spec.job_params())).run_id() == rid
