"""A full disk is one line naming the file and "no space left on device", at every write site, and leaves no
half-written file under a final name (util/io.atomic_write).

Each family of writers is pointed at /dev/full, so the kernel itself answers ENOSPC (no tmpfs needed):
  torch files  (checkpoint, model, snapshots, client state: util.io.torch_save)  -> fedflat train
  text/JSON    (config.json, metrics.csv, summary.json, tables: util.io.write_text/write_json) -> fedflat train, table
  NumPy npz    (partitions: data.partition; landscapes: analysis.analysis_commands)           -> fedflat partition, analysis landscape
  figures      (matplotlib savefig through util.io.atomic_write)                -> fedflat figure
  copies       (evidence export: util.io.copy_file)                             -> evidence.export.export_study
"""
from __future__ import annotations

import builtins
import json
from pathlib import Path

import pytest

import fedflat.pipeline.analysis.analysis_commands as analysis_cli
import fedflat.training.data.partition as partition_mod
import fedflat.core.util.io as io_mod
from fedflat.pipeline.analysis.analysis_commands import main as analysis_main
from fedflat.cli import main as cli
from fedflat.core.errors import OutputError
from fedflat.training.fl.engine import train

from faults.helpers import make_partition_file, make_spec, train_cmd
from .helpers import one_line

FULL = "no space left on device"


def _to_dev_full(real_open, suffixes: tuple[str, ...]):
    """open() that sends writes of a temporary file for one of `suffixes` to /dev/full."""
    def fake(file, mode="r", *a, **k):
        name = Path(file).name
        if "w" in mode and name.endswith(".tmp") and any(s in name for s in suffixes):
            return real_open("/dev/full", mode, *a, **k)
        return real_open(file, mode, *a, **k)
    return fake


@pytest.fixture
def part(tmp_path):
    return make_partition_file(tmp_path / "p.npz")


def _no_final_files(out: Path, *names: str) -> None:
    for n in names:
        assert not (out / n).exists(), n
    assert not list(out.rglob("*.tmp")), "a temporary file was left behind"


def test_torch_files(tmp_path, part, capsys, monkeypatch):
    monkeypatch.setattr(io_mod, "open", _to_dev_full(builtins.open, (".pt.",)), raising=False)
    out = tmp_path / "run"
    assert cli(train_cmd(make_spec("fedavg", rounds=4, checkpoint_every=2), part, out)[3:] + ["--quiet"]) == 2
    one_line(capsys.readouterr().err, f"{out}/checkpoint.pt", FULL)
    _no_final_files(out, "checkpoint.pt", "summary.json", "model.pt")


def test_text_and_json(tmp_path, part, capsys, monkeypatch):
    real_write_text = Path.write_text

    def write_text(self, text, *a, **k):
        if self.name.endswith(".tmp"):
            with open("/dev/full", "w") as fh:
                return fh.write(text)
        return real_write_text(self, text, *a, **k)

    monkeypatch.setattr(Path, "write_text", write_text)
    out = tmp_path / "run"
    assert cli(train_cmd(make_spec("fedavg", rounds=2), part, out)[3:] + ["--quiet"]) == 2
    one_line(capsys.readouterr().err, f"{out}/config.json", FULL)
    _no_final_files(out, "config.json", "metrics.csv", "summary.json")
    done = tmp_path / "done"
    monkeypatch.setattr(Path, "write_text", real_write_text)
    train(make_spec("fedavg", rounds=2), done, part, progress=False)
    monkeypatch.setattr(Path, "write_text", write_text)
    m = {"kind": "accuracy", "entries": [{"dir": str(done), "algorithm": "FedAvg", "dataset": "digits", "model": "mlp",
                                          "partition": "iid", "seed": 0}]}
    assert cli(["table", "--manifest", json.dumps(m), "--out", str(tmp_path / "t.md")]) == 2
    one_line(capsys.readouterr().err, str(tmp_path / "t."), FULL)


def test_partition_and_landscape_npz(tmp_path, part, capsys, monkeypatch):
    monkeypatch.setattr(partition_mod, "open", _to_dev_full(builtins.open, (".npz.",)), raising=False)
    out = tmp_path / "new.npz"
    assert cli(["partition", "--dataset", "digits", "--spec", "iid", "--num-clients", "4", "--out", str(out)]) == 2
    one_line(capsys.readouterr().err, str(out), FULL)
    assert not out.exists() and not list(tmp_path.glob("*.tmp"))

    run = tmp_path / "run"
    train(make_spec("fedavg", rounds=1), run, part, progress=False)
    monkeypatch.setattr(analysis_cli, "open", _to_dev_full(builtins.open, (".npz.",)), raising=False)
    land = run / "landscape_1d.npz"
    params = {"points_1d": 3, "train_samples": 32, "test_samples": 32, "batch_size": 32}
    assert analysis_main(["landscape", "--dims", "1", "--run-dir", str(run), "--out", str(land),
                          "--params", json.dumps(params)]) == 2
    err = capsys.readouterr().err
    one_line(err, str(land), FULL)
    assert not land.exists()


def test_figures(tmp_path, part, capsys, monkeypatch):
    from matplotlib.figure import Figure

    run = tmp_path / "run"
    train(make_spec("fedavg", rounds=2), run, part, progress=False)
    real = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, fname, **kw: real(self, "/dev/full", **kw))
    m = {"kind": "convergence", "entries": [{"dir": str(run), "algorithm": "FedAvg", "seed": 0, "dataset": "digits",
                                             "model": "mlp", "partition": "iid"}]}
    out = [str(tmp_path / "f.pdf"), str(tmp_path / "f.png")]
    assert cli(["figure", "--manifest", json.dumps(m), "--out", *out]) == 2
    one_line(capsys.readouterr().err, "f.pdf", FULL)
    assert not any(Path(o).exists() for o in out)


def test_copies(tmp_path, monkeypatch):
    import shutil

    src = tmp_path / "src.md"
    src.write_text("| a |\n" * 1000)
    real = shutil.copyfile
    monkeypatch.setattr(io_mod.shutil, "copyfile", lambda s, d: real(s, "/dev/full"))
    with pytest.raises(OutputError, match=f"{tmp_path}/ev/tables/t.md: {FULL}"):
        io_mod.copy_file(src, tmp_path / "ev/tables/t.md")
    assert not (tmp_path / "ev/tables/t.md").exists()
    source = Path(__file__).resolve().parents[2] / "src/fedflat/evidence/export.py"
    assert "shutil.copyfile" not in source.read_text()  # the export copies only through copy_file


def test_every_writer_goes_through_atomic_write():
    """The families above are all: no module writes a file but through util.io (a new writer would escape the
    full-disk line and the atomic rename)."""
    import re

    src = Path(__file__).resolve().parents[2] / "src/fedflat"
    direct = re.compile(r"\.savefig\(|\.to_csv\(\s*[^)]|shutil\.copy|torch\.save\(|np\.save|open\([^)]*[\"'][wa]b?[\"']")
    allowed = {"core/util/io.py", "core/util/attempt_log.py",  # the writers; a log copy that never fails a run
               "training/data/partition.py", "pipeline/analysis/analysis_commands.py",  # np.savez into atomic_write's temporary file
               "pipeline/report/style.py"}  # fig.savefig into atomic_write's temporary file
    found = sorted(f.relative_to(src).as_posix() for f in src.rglob("*.py")
                   if direct.search(re.sub(r"\.to_csv\((index=False|\))", "", f.read_text())))
    assert "core/util/io.py" in found and set(found) <= allowed, found
