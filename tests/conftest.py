"""Shared test setup: one torch thread (CI has 2 cores and pytest runs serially), deterministic
algorithms, float64 helpers for hand-derived checks."""
import os
import sys
from pathlib import Path

import pytest
import torch

import fedflat.plugins  # noqa: F401  (the composition root, as every entry point: the registries are complete)

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True, warn_only=True)
REPO = Path(__file__).resolve().parents[1]


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
