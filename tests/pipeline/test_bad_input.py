"""Bad input: each malformed config or file gives one clear error line naming the problem, a
non-zero exit, and leaves earlier results untouched.

Config errors are checked the way the Snakefile checks them at parse time (JSON schema, then
fedflat.pipeline.study.load_study; workflow/rules/common.smk), in-process for speed; a few go through a
real `snakemake` to show that path prints the same single line and exits before any job.
File errors go through the CLI entry points the rules call.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from fedflat.cli import main as cli
from fedflat.core.errors import ConfigError
from fedflat.pipeline.study import load_study, schema_error

from faults.helpers import make_partition_file, make_spec, snakemake, train_cmd, workdir

REPO = Path(__file__).resolve().parents[2]
SCHEMA = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
TINY = yaml.safe_load((REPO / "config/tiny.yaml").read_text())
DEL = object()


def mutate(base: dict, path: str, value) -> dict:
    cfg = copy.deepcopy(base)
    *parents, last = path.split("/")
    d = cfg
    for k in parents:
        d = d.setdefault(k, {})
    if value is DEL:
        d.pop(last)
    else:
        d[last] = value
    return cfg


def parse_time_error(cfg: dict) -> str | None:
    """What common.smk prints (after 'fedflat: config error: '), or None when the config is valid."""
    if list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(cfg)):
        return schema_error(cfg, SCHEMA)
    try:
        load_study(cfg)
    except ConfigError as exc:
        return str(exc)
    return None


# (case, path in config/tiny.yaml, bad value, words the message must contain)
CONFIG_CASES = [
    ("unknown algorithm", "experiments/main/algorithms", ["fedavg", "fedsamm"], ["experiments.main.algorithms", "'fedsamm'"]),
    ("unknown dataset", "experiments/main/datasets", ["digitz"], ["experiments.main.datasets", "'digitz'"]),
    ("unknown model", "experiments/main/models", ["resnet1000"], ["experiments.main.models", "'resnet1000'"]),
    ("unknown partition", "experiments/main/partitions", ["dirichlet0.1"], ["experiments.main.partitions", "'dirichlet0.1'"]),
    ("alpha = 0", "experiments/main/partitions", ["dir0"], ["experiments.main.partitions", "alpha must be > 0", "'dir0'"]),
    ("alpha < 0", "experiments/main/partitions", ["dir-0.5"], ["alpha must be > 0"]),
    ("participation = 0", "training/participation", 0, ["training.participation"]),
    ("participation > 1", "training/participation", 1.5, ["training.participation", "1.5"]),
    ("zero rounds", "training/rounds", 0, ["training.rounds"]),
    ("zero local steps in an experiment", "experiments/main/training", {"local_steps": 0}, ["experiments.main.training.local_steps"]),
    ("rho < 0", "algorithm_params", {"fedsam": {"rho": -0.1}}, ["algorithm_params.fedsam.rho", "-0.1"]),
    ("lambda = 1", "algorithm_params", {"fednsam": {"lam": 1.0}}, ["algorithm_params.fednsam.lam", "[0, 1)"]),
    ("lambda < 0 inline", "experiments/main/algorithms", [{"preset": "fednsam", "params": {"lam": -0.2}}], ["fednsam.lam"]),
    ("lr of wrong type", "training/lr", "fast", ["training.lr", "'fast'"]),
    ("seed of wrong type", "experiments/main/seeds", ["a"], ["experiments.main.seeds"]),
    ("float batch size", "training/batch_size", 16.5, ["training.batch_size"]),
    ("num_clients as a string", "training/num_clients", "8", ["training.num_clients"]),
    ("misspelled training key", "training/learning_rate", 0.1, ["training", "'learning_rate'"]),
    ("misspelled top-level key", "experiment", {}, ["unknown key 'experiment'"]),
    ("misspelled experiment key", "experiments/main/seed", [0], ["experiments.main", "'seed'"]),
    ("misspelled hyperparameter", "algorithm_params", {"fedsam": {"rhoo": 0.1}}, ["algorithm_params.fedsam", "'rhoo'"]),
    ("params for an undefined algorithm", "algorithm_params", {"fedsammm": {}}, ["algorithm_params", "'fedsammm'"]),
    ("table of an undefined experiment", "tables/accuracy", {"experiment": "mian"}, ["tables.accuracy.experiment", "'mian'"]),
    ("unknown figure kind", "figures/convergence", {"kind": "histogrm", "experiment": "main"}, ["figures.convergence.kind", "'histogrm'"]),
    ("unknown compressor", "uplink", {"kind": "zip"}, ["uplink.kind", "'zip'"]),
    ("unknown analysis hook", "analysis", {"hooks": {"hesian": {}}}, ["analysis.hooks", "'hesian'"]),
    ("unknown client-state backend", "training/client_state", "ssd", ["training.client_state", "'ssd'"]),
    ("no experiments", "experiments", {}, ["experiments"]),
    ("experiment without seeds", "experiments/main/seeds", DEL, ["experiments.main", "'seeds'"]),
    ("unknown device", "device", "tpu", ["device", "'tpu'"]),
]


@pytest.mark.parametrize("case,path,value,words", CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_bad_config_is_one_clear_line(case, path, value, words):
    assert parse_time_error(TINY) is None
    msg = parse_time_error(mutate(TINY, path, value))
    assert msg is not None, f"{case}: accepted"
    assert "\n" not in msg and len(msg) < 2000
    for w in words:
        assert w in msg, f"{case}: {msg!r} does not name {w!r}"


def _catalog() -> dict:
    cat = yaml.safe_load((REPO / "config/papers/fednsam.yaml").read_text())
    cat["scale"] = "tiny"
    return cat


def _first(d: dict) -> str:
    return next(iter(d))


CATALOG_CASES = [
    ("table of an undefined experiment", lambda c: c["tables"][_first(c["tables"])].update(experiment="t99"),
     ["experiment", "'t99'"]),
    ("experiment with an undefined algorithm", lambda c: c["experiments"][_first(c["experiments"])].update(
        algorithms=["fedavg", "fednsamx"]), ["algorithms", "'fednsamx'"]),
    ("unknown scale", lambda c: c.update(scale="huge"), ["scale", "'huge'"]),
]


@pytest.mark.parametrize("case,edit,words", CATALOG_CASES, ids=[c[0] for c in CATALOG_CASES])
def test_bad_paper_catalog(case, edit, words):
    cat = _catalog()
    assert parse_time_error(cat) is None
    edit(cat)
    msg = parse_time_error(cat)
    assert msg is not None and "\n" not in msg
    for w in words:
        assert w in msg, f"{case}: {msg!r} does not name {w!r}"


# ------------------------------------------------------------------ through real Snakemake
def _fingerprint(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(root.rglob("*")) if p.is_file() and ".snakemake" not in p.parts}


@pytest.fixture
def study_dir(tmp_path) -> Path:
    """A workflow copy with earlier results in place (a finished run, a partition, a table)."""
    wd = workdir(tmp_path / "wd")
    run = wd / "results/runs/digits/iid/mlp/fedavg/0000000000/seed0"
    run.mkdir(parents=True)
    (run / "metrics.csv").write_text("round,test_acc\n1,0.5\n")
    (run / "summary.json").write_text('{"status": "completed"}\n')
    (wd / "results/tables").mkdir(parents=True)
    (wd / "results/tables/accuracy.md").write_text("| earlier | table |\n")
    return wd


SNAKEMAKE_CASES = [  # one per parse-time path (JSON schema; study expansion of a paper catalog)
    ("schema", lambda: yaml.safe_dump(mutate(TINY, "training/participation", 1.5))),
    ("catalog", lambda: yaml.safe_dump({**_catalog(), "tables": {"t": {"kind": "paper_table", "experiment": "t99"}}})),
]


@pytest.mark.parametrize("case,text", SNAKEMAKE_CASES, ids=[c[0] for c in SNAKEMAKE_CASES])
def test_snakemake_stops_with_one_line_and_touches_nothing(study_dir, case, text):
    bad = study_dir / "bad.yaml"
    bad.write_text(text())
    before = _fingerprint(study_dir)
    r = snakemake(study_dir, "--cores", "1", "--configfile", "bad.yaml")
    assert r.returncode != 0
    lines = [l for l in r.stderr.splitlines() if l.startswith("fedflat:")]
    assert len(lines) == 1, r.stderr
    expected = parse_time_error(yaml.safe_load(text()))
    assert lines[0] == f"fedflat: config error: {expected}"
    assert "Traceback" not in r.stderr
    assert _fingerprint(study_dir) == before


# ------------------------------------------------------------------ files, through the CLI
def _fails_with_one_line(capsys, argv, *words) -> str:
    rc = cli(argv)
    err = capsys.readouterr().err.strip()
    assert rc != 0
    assert len(err.splitlines()) == 1 and err.startswith("fedflat: error:"), err
    for w in words:
        assert w in err, f"{err!r} does not name {w!r}"
    return err


@pytest.fixture
def files(tmp_path):
    part = make_partition_file(tmp_path / "part.npz")
    done = tmp_path / "runs/done"  # an earlier finished run
    done.mkdir(parents=True)
    (done / "metrics.csv").write_text("round,test_acc\n1,0.5\n")
    (done / "summary.json").write_text('{"status": "completed"}\n')
    return tmp_path, part


def _train_argv(spec, part, out):
    return train_cmd(spec, part, out)[3:]  # drop 'python -m fedflat'


FILE_CASES = ["missing partition", "garbage partition", "truncated partition", "partition of another client count",
              "truncated checkpoint", "checkpoint of other settings", "spec is not JSON", "spec names an unknown algorithm",
              "missing dataset files", "partition spec out of range", "missing config file", "config not YAML",
              "table input missing"]


@pytest.mark.parametrize("case", FILE_CASES)
def test_bad_file_is_one_clear_line(files, capsys, case):
    tmp, part = files
    spec = make_spec("fedavg", rounds=4)
    out = tmp / "runs/new"
    if case == "missing partition":
        argv, words = _train_argv(spec, tmp / "nope.npz", out), ["partition file missing", "nope.npz"]
    elif case == "garbage partition":
        (tmp / "g.npz").write_bytes(os.urandom(300))
        argv, words = _train_argv(spec, tmp / "g.npz", out), ["g.npz", "corrupted or truncated"]
    elif case == "truncated partition":
        b = part.read_bytes()
        (tmp / "t.npz").write_bytes(b[: len(b) // 2])
        argv, words = _train_argv(spec, tmp / "t.npz", out), ["t.npz", "corrupted or truncated"]
    elif case == "partition of another client count":
        other = make_partition_file(tmp / "p4.npz", num_clients=4)
        argv, words = _train_argv(spec, other, out), ["4 clients", "training.num_clients"]
    elif case == "truncated checkpoint":
        out.mkdir(parents=True)
        (out / "checkpoint.pt").write_bytes(b"PK\x03\x04" + os.urandom(64))
        argv, words = _train_argv(spec, part, out), ["checkpoint.pt", "corrupted or truncated"]
    elif case == "checkpoint of other settings":
        from fedflat.training.fl.engine import train

        train(make_spec("fedavg", rounds=4, lr=0.1), out, part, progress=False, stop_after=2)
        assert (out / "checkpoint.pt").exists()
        argv, words = _train_argv(spec, part, out), ["checkpoint.pt", "different settings"]
    elif case == "spec is not JSON":
        argv, words = ["train", "--spec", "{oops", "--partition", str(part), "--out-dir", str(out)], ["not valid JSON"]
    elif case == "spec names an unknown algorithm":
        bad = json.dumps({**spec.to_dict(), "algorithm": "nope"})
        argv, words = ["train", "--spec", bad, "--partition", str(part), "--out-dir", str(out)], ["'nope'"]
    elif case == "missing dataset files":
        argv = ["partition", "--dataset", "cifar10", "--spec", "iid", "--num-clients", "4",
                "--data-root", str(tmp / "nodata"), "--out", str(tmp / "p.npz")]
        words = ["cifar10", "download"]
    elif case == "partition spec out of range":
        argv = ["partition", "--dataset", "digits", "--spec", "dir0", "--num-clients", "4", "--out", str(tmp / "p.npz")]
        words = ["alpha must be > 0"]
    elif case == "missing config file":
        argv, words = ["validate", str(tmp / "none.yaml")], ["config file not found"]
    elif case == "config not YAML":
        (tmp / "bad.yaml").write_text("training: {rounds: 3\nexperiments: [")
        argv, words = ["validate", str(tmp / "bad.yaml")], ["bad.yaml", "not valid YAML"]
    elif case == "table input missing":
        m = {"kind": "accuracy", "entries": [{"dir": str(tmp / "runs/gone"), "algorithm": "FedAvg", "dataset": "digits",
                                              "model": "mlp", "partition": "iid", "seed": 0}]}
        argv, words = ["table", "--manifest", json.dumps(m), "--out", str(tmp / "t.md")], ["gone", "summary.json"]
    before = _fingerprint(tmp)
    _fails_with_one_line(capsys, argv, *words)
    assert _fingerprint(tmp) == before  # nothing written, nothing deleted (the checkpoint is kept)


def test_cli_subprocess_prints_no_traceback(files):
    """The same through a real process: exit status 2 and exactly one line on stderr."""
    tmp, part = files
    (tmp / "t.npz").write_bytes(part.read_bytes()[:100])
    r = subprocess.run(train_cmd(make_spec("fedavg", rounds=4), tmp / "t.npz", tmp / "runs/new"),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "corrupted or truncated" in r.stderr
