"""A new method in its own module needs one edit elsewhere: its import line in the composition root.

The method (a server part and a preset, docs/extending.md's worked example) is written into a copy of the
package, with one line added to the copy's plugins.py and nothing else changed; a subprocess on the copy then
lists the preset through the CLI, trains it through the study and the in-process builder, and the import
layers still hold."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

METHOD = '''"""FedDamp: clients as FedSAM, the server moves by a damped mean update (an example method)."""
from __future__ import annotations

from .parts import Param, ServerOpt
from .presets import preset
from .servers import SERVERS


@SERVERS.register("damped_mean")
class DampedMeanServer(ServerOpt):
    """θ ← θ + (1 − d) · mean_i Δ_i."""

    name = "damped_mean"
    params = {"damp": Param(0.5, "fraction of the mean update held back", low=0.0, high=1.0, high_open=True)}

    def apply(self, srv, rnd) -> None:
        srv.theta.add_(rnd.mean_delta, alpha=1.0 - self.damp)


preset("feddamp", "FedDamp", "sam", "damped_mean", "docs/extending.md (example)", defaults={"rho": 0.05})
'''

RUN = '''
import json, os, sys
os.environ["FEDFLAT_NUMERICS"] = "portable"  # a study at paper scale runs portable: pinned before torch loads
from fedflat import plugins  # noqa: F401
from fedflat.pipeline.build import build
from fedflat.pipeline.study import load_study

cfg = {"study": "ext", "training": {"num_clients": 4, "participation": 1.0, "rounds": 2, "local_steps": 2,
                                    "batch_size": 16, "lr": 0.05, "eval_every": 1, "checkpoint_every": 0},
       "experiments": {"e": {"datasets": ["digits"], "models": ["mlp"], "partitions": ["iid"],
                             "algorithms": ["feddamp"], "seeds": [0]}},
       "tables": {"t": {"experiment": "e"}}}
study = load_study(cfg)
files = build(study, "t", sys.argv[1])
print(json.dumps({"runs": sorted(study.runs), "table": files[0].read_text()}))
'''


@pytest.fixture
def package(tmp_path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(REPO / "src" / "fedflat", src / "fedflat", ignore=shutil.ignore_patterns("__pycache__"))
    (src / "fedflat" / "training" / "algorithms" / "feddamp.py").write_text(METHOD)
    root = src / "fedflat" / "plugins.py"
    root.write_text(root.read_text() + "from .training.algorithms import feddamp  # noqa: F401  (FedDamp)\n")
    return src


def _py(src: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_only_the_root_changes(package):
    changed = [p.relative_to(package).as_posix() for p in (package / "fedflat").rglob("*.py")
               if not (REPO / "src" / p.relative_to(package)).exists()
               or (REPO / "src" / p.relative_to(package)).read_text() != p.read_text()]
    assert sorted(changed) == ["fedflat/plugins.py", "fedflat/training/algorithms/feddamp.py"]


def test_a_new_method_registers_and_trains_through_the_root(package, tmp_path):
    listed = _py(package, "-m", "fedflat", "algorithms", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    row = {r["name"]: r for r in json.loads(listed.stdout)}["feddamp"]
    assert row["parts"] == "sam | - | damped_mean" and "damp=0.5" in row["defaults"] and "rho=0.05" in row["defaults"]

    work = tmp_path / "work"
    built = _py(package, "-c", RUN, str(work), cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    out = json.loads(built.stdout.splitlines()[-1])
    assert len(out["runs"]) == 1 and "/feddamp/" in out["runs"][0]
    assert (work / "results" / "runs" / out["runs"][0] / "summary.json").exists()
    assert "FedDamp" in out["table"]


def test_a_new_method_keeps_the_layers(package, tmp_path):
    pytest.importorskip("importlinter", reason="import-linter is in the test extras: pip install -e '.[test]'")
    r = _py(package, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()",
            str(REPO / ".importlinter"), "--no-cache", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
