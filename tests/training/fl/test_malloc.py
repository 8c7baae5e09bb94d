"""core/util/malloc.py: the engine's allocator thresholds are set once per process, and can be switched off."""
import os
import subprocess
import sys

import pytest

CODE = "from fedflat.core.util.malloc import tune_allocator as t; print(t(), t())"


def _run(**env):
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True,
                         env={**os.environ, **env})
    return out.stdout.split()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_thresholds_are_set_once_unless_switched_off():
    assert _run() == ["True", "True"]
    assert _run(FEDFLAT_MALLOC="default") == ["False", "False"]
