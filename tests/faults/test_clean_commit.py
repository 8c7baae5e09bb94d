"""Evidence runs record the commit that made them, so a study at paper scale refuses to train from a modified
working tree: one line before any job starts. A dry run and `allow_dirty=true` (the string `--config` passes) go
through (a study at tiny scale is not refused: tests/core/util/test_numerics.py, Study.requires_clean); `fedflat train
--require-clean` refuses on its own too."""
from __future__ import annotations

import json
import subprocess
import sys

import yaml

from .helpers import make_partition_file, make_spec, snakemake, workdir

STUDY = {"study": "clean_check", "data_root": "data",
         "training": {"num_clients": 4, "participation": 0.5, "rounds": 2, "local_steps": 2, "batch_size": 16},
         "experiments": {"e": {"datasets": ["digits"], "models": ["mlp"], "partitions": ["iid"], "seeds": [0],
                               "algorithms": ["fedavg"]}},
         "tables": {"acc": {"experiment": "e"}}}
DIRTY = {"FEDFLAT_GIT_COMMIT": "0123456789ab-dirty"}


def _study(tmp_path, **top):
    wd = workdir(tmp_path / "wd")
    (wd / "study.yaml").write_text(yaml.safe_dump({**STUDY, **top}))
    return wd


def test_paper_scale_refuses_a_modified_tree_in_one_line_before_any_job(tmp_path):
    wd = _study(tmp_path)  # no `scale:`: paper scale, portable numerics
    done = snakemake(wd, "--cores", "1", "--configfile", "study.yaml", env=DIRTY)
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("fedflat: config error: the working tree is modified (0123456789ab-dirty)"), last
    assert "allow_dirty=true" in last
    assert not (wd / "results").exists() or not any((wd / "results").rglob("summary.json"))
    assert snakemake(wd, "-n", "--configfile", "study.yaml", env=DIRTY).returncode == 0  # a dry run is not refused


def test_allow_dirty_goes_through_and_the_run_says_so(tmp_path):
    wd = _study(tmp_path)
    done = snakemake(wd, "--cores", "1", "--configfile", "study.yaml", "--config", "allow_dirty=true", env=DIRTY)
    assert done.returncode == 0, done.stderr[-2000:]
    run = next((wd / "results/runs").rglob("config.json"))
    env = json.loads(run.read_text())["environment"]
    assert env["git_commit"] == DIRTY["FEDFLAT_GIT_COMMIT"] and env["numerics"] == "portable"


def test_train_require_clean_refuses_a_modified_tree(tmp_path):
    part = make_partition_file(tmp_path / "p.npz")
    cmd = [sys.executable, "-m", "fedflat", "train", "--spec", json.dumps(make_spec("fedavg", rounds=1).to_dict()),
           "--partition", str(part), "--out-dir", str(tmp_path / "run"), "--require-clean"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**__import__("os").environ, **DIRTY})
    assert done.returncode == 2 and "evidence runs need a clean commit" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()
