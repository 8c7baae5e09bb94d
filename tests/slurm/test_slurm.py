"""The real SLURM test (ci/slurm_test.sh) from pytest. It takes a few minutes (each SLURM job
costs ~10 s of scheduling), so it runs only when asked:  FEDFLAT_SLURM_TEST=1 pytest -m slurm"""
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slurm
@pytest.mark.skipif(os.environ.get("FEDFLAT_SLURM_TEST") != "1", reason="set FEDFLAT_SLURM_TEST=1 to run the SLURM test")
def test_tiny_study_on_single_node_slurm():
    r = subprocess.run(["bash", str(REPO / "ci/slurm_test.sh")], capture_output=True, text=True, timeout=1800)
    if r.returncode == 77:
        pytest.skip(r.stderr.strip().splitlines()[-1])
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert "PASS" in r.stdout
