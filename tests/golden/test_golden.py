"""The golden runs (tests/golden/golden_runs.py) give the committed weights: a change that moves any number of a
run fails here until it bumps the numerics version and rewrites golden.json (`python -m tests.golden.golden_runs
--update`), so that every record says which numerics made it."""
from __future__ import annotations

import json

import pytest
import torch

from fedflat.core.util.numerics import NUMERICS_VERSION

from .golden_runs import COMPILED, GOLDEN, RUNS, measure


@pytest.fixture(scope="module")
def golden():
    return json.loads(GOLDEN.read_text())


@pytest.fixture(scope="module")
def measured():
    return measure()


def test_golden_file_is_of_todays_numerics_version_and_covers_every_run(golden):
    assert golden["numerics_version"] == NUMERICS_VERSION, (
        "NUMERICS_VERSION changed: rewrite golden.json with `python -m tests.golden.golden_runs --update`")
    assert sorted(golden["runs"]) == sorted(RUNS)


@pytest.mark.parametrize("name", [n for n in RUNS if n not in COMPILED])
def test_a_portable_golden_run_gives_its_committed_weights(golden, measured, name):
    want = golden["runs"][name]
    got = measured[name]
    assert got["backend"] == want["backend"]
    assert got["sha256"] == want["sha256"], (
        f"{name}: the weights changed. If deliberate, bump NUMERICS_VERSION (src/fedflat/core/util/numerics.py), run "
        "`python -m tests.golden.golden_runs --update` and say why in the commit")


@pytest.mark.parametrize("name", COMPILED)
def test_a_compiled_golden_run_gives_its_weights_under_its_compiler(golden, measured, name):
    """Bit for bit under the compiler that made the hash; under another compiler, the eager twin's weights to 1e-4
    (inductor's kernels are the host compiler's: docs/reproducibility.md)."""
    want, got = golden["runs"][name], measured[name]
    assert got["backend"] == "compile"
    if got["compiler"] == want["compiler"]:
        assert got["sha256"] == want["sha256"], f"{name}: the compiled weights changed (bump NUMERICS_VERSION)"
    twin = measured[RUNS[name][3]]
    assert torch.allclose(torch.tensor(got["theta"]), torch.tensor(twin["theta"]), rtol=1e-4, atol=1e-5)
