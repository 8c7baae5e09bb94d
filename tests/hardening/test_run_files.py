"""A run's files read back whole, and written for the next reader:

- a metrics.csv cut mid-row, or holding fewer rounds than its summary.json says were completed, is refused in one
  line (it used to draw a convergence figure from half the rounds, exit 0);
- a label holding '|' stays one Markdown cell;
- a killed run's train.log lines survive its resume (Snakemake clears a rule's log before each attempt).
"""
from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from fedflat.cli import main as cli
from fedflat.core.errors import ConfigError
from fedflat.training.fl.engine import train
from fedflat.training.fl.metrics import read_metrics
from fedflat.core.util.attempt_log import HISTORY
from fedflat.core.util.markdown import md_cell, md_table

from faults.helpers import make_partition_file, make_spec, train_cmd
from .helpers import one_line


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runs")
    part = make_partition_file(tmp / "p.npz")
    out = []
    for seed in (0, 1):
        d = tmp / f"seed{seed}"
        train(make_spec("fedavg", seed=seed, rounds=6, eval_every=1), d, part, progress=False)
        out.append(d)
    return out


def _figure(tmp_path, dirs) -> list[str]:
    m = {"kind": "convergence", "entries": [{"dir": str(d), "algorithm": "FedAvg", "seed": i, "dataset": "digits",
                                             "model": "mlp", "partition": "iid"} for i, d in enumerate(dirs)]}
    return ["figure", "--manifest", json.dumps(m), "--out", str(tmp_path / "f.pdf"), str(tmp_path / "f.png")]


def _copy(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True)
    for f in ("metrics.csv", "summary.json"):
        (dst / f).write_bytes((src / f).read_bytes())
    return dst


def test_whole_metrics_draw(runs, tmp_path, capsys):
    assert cli(_figure(tmp_path, runs)) == 0
    assert (tmp_path / "f.png").exists()
    assert len(read_metrics(runs[0] / "metrics.csv")) == 6


def test_metrics_cut_mid_row_are_refused(runs, tmp_path, capsys):
    cut = _copy(runs[1], tmp_path / "cut")
    text = (cut / "metrics.csv").read_text()
    (cut / "metrics.csv").write_text(text[: len(text) // 2])  # a full disk or an interrupted copy
    assert text[len(text) // 2 - 1] != "\n"
    assert cli(_figure(tmp_path, [runs[0], cut])) == 2
    one_line(capsys.readouterr().err, "cut/metrics.csv", "truncated", "retrain the run")
    assert not (tmp_path / "f.png").exists()


def test_metrics_missing_whole_rounds_are_refused(runs, tmp_path):
    short = _copy(runs[1], tmp_path / "short")
    lines = (short / "metrics.csv").read_text().splitlines(keepends=True)
    (short / "metrics.csv").write_text("".join(lines[:4]))  # cut at a line end: 3 of 6 rounds
    with pytest.raises(ConfigError, match=r"holds rounds up to 3 but summary.json says 6 were completed"):
        read_metrics(short / "metrics.csv")


def test_every_reader_of_metrics_goes_through_the_check():
    src = Path(__file__).resolve().parents[2] / "src/fedflat"
    readers = [f.relative_to(src).as_posix() for f in src.rglob("*.py") if "metrics.csv\")" in f.read_text()
               and "read_csv" in f.read_text() and "read_metrics" not in f.read_text()]
    assert readers == [], f"read metrics.csv with fl.metrics.read_metrics: {readers}"


# ------------------------------------------------------------------ Markdown
def test_a_label_with_a_pipe_stays_one_cell():
    frame = pd.DataFrame({"acc": ["81.2 ± 0.3", "80.1"]}, index=["FedSAM | ρ=0.05", "FedAvg"])
    frame.index.name = "Algorithm"
    md = md_table(frame)
    rows = [l for l in md.splitlines() if l.startswith("| FedSAM")]
    assert len(rows) == 1 and rows[0].count(" | ") == frame.shape[1]  # one separator per column after the label
    assert "FedSAM \\| ρ=0.05" in md
    assert md_cell("a \\| b") == "a \\| b" and md_cell("x\ny") == "x y" and md_cell(3.5) == 3.5
    assert frame.to_markdown().splitlines()[2].count(" | ") == 2  # the control: unescaped, the label splits


def test_the_accuracy_table_escapes_labels(tmp_path, runs):
    m = {"kind": "accuracy", "entries": [{"dir": str(runs[0]), "algorithm": "FedAvg | η=0.05", "dataset": "digits",
                                          "model": "mlp", "partition": "iid", "seed": 0}]}
    assert cli(["table", "--manifest", json.dumps(m), "--out", str(tmp_path / "t.md")]) == 0
    row = next(l for l in (tmp_path / "t.md").read_text().splitlines() if l.startswith("| FedAvg"))
    assert "FedAvg \\| η=0.05" in row


# ------------------------------------------------------------------ train.log across a kill
def test_a_resumed_attempt_starts_with_the_killed_attempts_lines(tmp_path):
    """What Snakemake's `2>&1 | tee train.log` records of an attempt: after a kill and a resume it holds the killed
    attempt's lines first; the history is dropped once the run has finished."""
    part = make_partition_file(tmp_path / "p.npz")
    spec = make_spec("fedsam", rounds=12, local_steps=4, checkpoint_every=2)
    out = tmp_path / "run"
    cmd = train_cmd(spec, part, out)
    with open(tmp_path / "attempt1.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while not (out / "checkpoint.pt").exists():
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.01)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    first = (tmp_path / "attempt1.log").read_text()
    assert "round" in first and (out / HISTORY).exists()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    second = done.stderr
    assert second.startswith(first.strip().splitlines()[0])  # the killed attempt's lines come first
    assert second.index(first.strip().splitlines()[-1]) < second.index("resumed from checkpoint")
    assert not (out / HISTORY).exists()
