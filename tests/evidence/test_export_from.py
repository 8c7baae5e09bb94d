"""`python -m fedflat.evidence export CONFIG --from DIR`: a long study's runs are read from its own worktree and the
evidence (with the config snapshot) is written here; nothing is written inside DIR, whose tree must stay clean."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from fedflat.pipeline.build import build
from fedflat.pipeline.study import load_study

CONFIG = {"study": "fromtiny", "scale": "tiny",
          "training": {"num_clients": 4, "participation": 0.5, "rounds": 2, "local_steps": 2, "batch_size": 16},
          "experiments": {"e": {"datasets": ["digits"], "models": ["mlp"], "partitions": ["iid"], "seeds": [0],
                                "algorithms": ["fedavg"]}},
          "tables": {"acc": {"experiment": "e"}}}


def test_export_reads_the_runs_of_another_checkout_and_writes_here(tmp_path):
    runs, here = tmp_path / "worktree", tmp_path / "main"
    for d in (runs, here):
        (d / "config").mkdir(parents=True)
        (d / "config/fromtiny.yaml").write_text(yaml.safe_dump(CONFIG))
    old = os.getcwd()
    os.chdir(runs)
    try:
        build(load_study(CONFIG), "acc", runs)
    finally:
        os.chdir(old)
    done = subprocess.run([sys.executable, "-m", "fedflat.evidence", "export", "config/fromtiny.yaml", "--from",
                           str(runs), "--keep-legacy"], cwd=here, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (here / "results/evidence/fromtiny/runs.csv").read_text().count("\n") == 2  # header + one run
    assert (here / "results/evidence/fromtiny/config/fromtiny.yaml").exists()
    assert not (runs / "results/evidence").exists()
