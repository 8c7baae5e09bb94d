"""The import layers of .importlinter (docs/architecture.md) hold, and a forbidden import breaks them.

Each case lints a copy of the package with one import added, in a subprocess (the copy must shadow the
installed package), and checks that import-linter names the offending import."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="import-linter is in the test extras: pip install -e '.[test]'")

REPO = Path(__file__).resolve().parents[2]
LINT = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def _lint(src: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", LINT, str(REPO / ".importlinter"), "--no-cache"],
                          cwd=cwd, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])},
                          capture_output=True, text=True)


@pytest.fixture
def copy(tmp_path) -> Path:
    shutil.copytree(REPO / "src" / "fedflat", tmp_path / "src" / "fedflat",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "src"


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text() + f"\n{line}\n")


def test_the_package_keeps_its_contracts(copy, tmp_path):
    r = _lint(copy, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "6 kept, 0 broken" in r.stdout


def test_an_upward_import_between_folders_breaks_the_layers(copy, tmp_path):
    _append(copy / "fedflat" / "core" / "registry.py", "from ..pipeline import study  # noqa")  # core reaching the study
    r = _lint(copy, tmp_path)
    assert r.returncode == 1
    assert "fedflat.core is not allowed to import fedflat.pipeline" in r.stdout
    assert "fedflat.core.registry -> fedflat.pipeline.study" in r.stdout


@pytest.mark.parametrize("folder, module, line, message", [
    ("training", "models/lenet.py", "from ..algorithms import presets  # noqa",
     "fedflat.training.models is not allowed to import fedflat.training.algorithms"),
    ("pipeline", "study.py", "from . import inputs  # noqa", "fedflat.pipeline.study is not allowed to import "
     "fedflat.pipeline.inputs"),
    ("results", "papers/picks.py", "from ..leaderboard import protocol  # noqa",
     "fedflat.results.papers is not allowed to import fedflat.results.leaderboard"),
    ("core", "util/io.py", "from .. import spec  # noqa", "fedflat.core.util is not allowed to import fedflat.core.spec"),
])
def test_an_upward_import_inside_a_folder_breaks_its_layers(copy, tmp_path, folder, module, line, message):
    _append(copy / "fedflat" / folder / module, line)
    r = _lint(copy, tmp_path)
    assert r.returncode == 1
    assert f"{folder}: " in r.stdout.split("Broken contracts")[-1]
    assert message in r.stdout


def test_nothing_imports_a_command_entry_package(copy, tmp_path):
    # fedflat.papers is `python -m fedflat.papers` only: the catalogs are fedflat.results.papers
    _append(copy / "fedflat" / "cli.py", "from . import papers  # noqa")
    r = _lint(copy, tmp_path)
    assert r.returncode == 1
    assert "fedflat.cli is not allowed to import fedflat.papers" in r.stdout


def test_a_registry_importing_its_plugins_breaks_the_cycles_contract(copy, tmp_path):
    # the pattern the composition root replaced: a registry importing its own plugins at its end
    _append(copy / "fedflat" / "training" / "algorithms" / "presets.py", "from . import presets_sam  # noqa")
    r = _lint(copy, tmp_path)
    assert r.returncode == 1
    assert "No import cycles between sibling modules or subpackages, at any depth BROKEN" in r.stdout
    assert "presets" in r.stdout.split("could be made acyclic")[-1]


@pytest.mark.parametrize("where", ["", "training"])
def test_a_new_subpackage_must_be_placed_in_a_layer(copy, tmp_path, where):
    new = copy / "fedflat" / where / "newpart"
    new.mkdir()
    (new / "__init__.py").write_text("")
    r = _lint(copy, tmp_path)
    assert r.returncode == 1
    assert ("fedflat.training.newpart" if where else "fedflat.newpart") in r.stdout
