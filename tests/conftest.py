"""Shared test setup: one torch thread (CI has 2 cores and pytest runs serially), deterministic
algorithms, float64 helpers for hand-derived checks."""
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _as_clean_checkout() -> None:
    """Tests run as from a clean checkout of HEAD (FEDFLAT_GIT_COMMIT, core/util/provenance.py): an uncommitted edit of a
    developer must not make the paper-scale end-to-end tests hit the clean-commit refusal, which its own test
    (tests/faults/test_clean_commit.py) triggers with an explicit dirty commit."""
    import subprocess

    if "FEDFLAT_GIT_COMMIT" in os.environ:
        return
    out = subprocess.run(["git", "describe", "--always", "--abbrev=12"], cwd=REPO, capture_output=True, text=True)
    if out.returncode == 0 and out.stdout.strip():
        os.environ["FEDFLAT_GIT_COMMIT"] = out.stdout.strip()


_as_clean_checkout()

import torch  # noqa: E402

import fedflat.plugins  # noqa: F401  (the composition root, as every entry point: the registries are complete)

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True, warn_only=True)


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture
def float64():
    """Default dtype float64 for the test: hand-derived updates compare to 1e-12."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)
