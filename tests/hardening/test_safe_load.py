"""No code runs from a data file: every checkpoint, model and state file is loaded with weights_only=True
(core/util/safe_load.py). A planted pickle that would run code is refused in one line naming the file, before any
other check of the file, at every load site; the files fedflat itself writes still load."""
from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest
import torch

from fedflat.pipeline.analysis.analysis_commands import main as analysis_main
from fedflat.cli import main as cli
from fedflat.core.errors import ConfigError
from fedflat.training.fl.engine import train
from fedflat.core.util.safe_load import load_tensors

from faults.helpers import make_partition_file, make_spec, train_cmd
from .helpers import one_line, plant_pickle

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished run with snapshots (model.pt, snapshots/r2.pt, r2_clients.pt) and its partition."""
    tmp = tmp_path_factory.mktemp("run")
    part = make_partition_file(tmp / "part.npz")
    spec = make_spec("fedavg", rounds=2, snapshot_rounds=[2])
    train(spec, tmp / "run", part, progress=False)
    return tmp / "run", part


def test_a_planted_checkpoint_is_refused_before_its_settings_are_read(tmp_path, capsys):
    part = make_partition_file(tmp_path / "part.npz")
    spec = make_spec("fedavg", rounds=4)
    out, marker = tmp_path / "out", tmp_path / "marker"
    plant_pickle(out / "checkpoint.pt", marker, digest="0" * 10, round=2)  # also of other settings: refused first
    assert cli(train_cmd(spec, part, out)[3:]) == 2
    one_line(capsys.readouterr().err, "checkpoint", "checkpoint.pt", "refused", "run as code")
    assert not marker.exists()
    assert not (out / "summary.json").exists()
    torch.load(out / "checkpoint.pt", weights_only=not True)  # the control: loaded the unsafe way, it runs its code
    assert marker.exists()


@pytest.mark.parametrize("cmd", ["hessian", "landscape", "stability"])
def test_a_planted_model_is_refused_by_every_analysis(finished, tmp_path, capsys, cmd):
    run, part = finished
    crafted, marker = tmp_path / "crafted", tmp_path / "marker"
    crafted.mkdir()
    for f in ("config.json", "summary.json"):
        (crafted / f).write_bytes((run / f).read_bytes())
    ck = torch.load(run / "model.pt")
    plant_pickle(crafted / "model.pt", marker, **ck)
    argv = [cmd, "--run-dir", str(crafted), "--out", str(tmp_path / "out.json")]
    argv += ["--partition", str(part)] if cmd == "stability" else []
    assert analysis_main(argv) == 2
    one_line(capsys.readouterr().err, "run model", "model.pt", "refused")
    assert not marker.exists() and not (tmp_path / "out.json").exists()


def test_a_planted_client_snapshot_is_refused(finished, tmp_path, capsys):
    run, _ = finished
    crafted, marker = tmp_path / "crafted", tmp_path / "marker"
    for f in ("config.json", "summary.json", "model.pt", "snapshots/r2.pt"):
        (crafted / f).parent.mkdir(parents=True, exist_ok=True)
        (crafted / f).write_bytes((run / f).read_bytes())
    plant_pickle(crafted / "snapshots/r2_clients.pt", marker, **torch.load(run / "snapshots/r2_clients.pt"))
    argv = ["hessian", "--run-dir", str(crafted), "--out", str(tmp_path / "h.json"),
            "--params", '{"round": 2, "split": "local", "samples": 32, "max_iter": 2, "top_k": 1}']
    assert analysis_main(argv) == 2
    one_line(capsys.readouterr().err, "client models", "r2_clients.pt", "refused")
    assert not marker.exists()


def test_a_planted_client_state_file_is_refused(tmp_path):
    from fedflat.training.fl.client_store import ClientStateStore

    store = ClientStateStore(("c",), lambda n: torch.zeros(3), backend="disk", directory=tmp_path)
    store.put(0, {"c": torch.ones(3)}, 1)
    [f] = list(tmp_path.glob("client00000.*.pt"))
    marker = tmp_path / "marker"
    plant_pickle(f, marker, c=torch.ones(3))
    with pytest.raises(ConfigError, match="client state .* refused"):
        store.get(0)
    assert not marker.exists()


def test_every_file_a_run_writes_loads_safely(tmp_path):
    """What the refusal must never hit: checkpoints with each client-state backend and an error-feedback uplink
    (server memory, client states, compressor memory), snapshots, the model."""
    part = make_partition_file(tmp_path / "part.npz")
    specs = {"disk": make_spec("scaffold", rounds=4, checkpoint_every=1, client_state="disk", snapshot_rounds=[1]),
             "memory": dataclasses.replace(make_spec("fedavg", rounds=4, checkpoint_every=1),
                                           uplink={"kind": "topk", "k": 0.1, "error_feedback": True}),
             "wmsam": make_spec("fedwmsam", rounds=4, checkpoint_every=1)}
    seen = set()
    for name, spec in specs.items():
        out = tmp_path / name
        train(spec, out, part, progress=False, stop_after=2)  # a checkpoint and client state files stay behind
        for f in sorted(out.rglob("*.pt")):
            load_tensors(f)
            seen.add(re.sub(r"\d+", "N", f.name))
        train(spec, out, part, progress=False)  # and the run resumes from them (the engine's own safe load)
        load_tensors(out / "model.pt", keys=("theta", "buffers", "spec"))
    assert {"checkpoint.pt", "clientN.rN.pt", "rN.pt", "rN_clients.pt"} <= seen


def test_corrupted_files_are_one_line_too(tmp_path):
    (tmp_path / "t.pt").write_bytes(b"PK\x03\x04" + b"\0" * 40)
    with pytest.raises(ConfigError, match=r"checkpoint .*t.pt is corrupted or truncated"):
        load_tensors(tmp_path / "t.pt", "checkpoint")
    torch.save(torch.zeros(2), tmp_path / "plain.pt")
    with pytest.raises(ConfigError, match=r"is not a fedflat run model: no 'spec' entry"):
        load_tensors(tmp_path / "plain.pt", "run model", keys=("spec",))


def test_no_unsafe_load_anywhere_in_the_package():
    """Every torch.load in src passes weights_only=True (only core/util/safe_load.py calls it), and the text
    weights_only=False appears nowhere."""
    calls = []
    for f in sorted((REPO / "src/fedflat").rglob("*.py")):
        text = f.read_text()
        assert "weights_only=False" not in text, f
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "load" \
                    and getattr(node.func.value, "id", None) == "torch":
                kw = {k.arg: k.value for k in node.keywords}
                assert isinstance(kw.get("weights_only"), ast.Constant) and kw["weights_only"].value is True, \
                    f"{f}:{node.lineno}: torch.load without weights_only=True"
                calls.append(f.relative_to(REPO / "src/fedflat").as_posix())
    assert "core/util/safe_load.py" in calls
