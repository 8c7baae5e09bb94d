"""Where a number came from: the source commit of the code that made it (recorded in every run's config.json
from issue 23 on, and in every evidence record)."""
from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path


@functools.lru_cache(maxsize=1)
def source_commit() -> str | None:
    """`git describe --always --dirty --abbrev=12` of the checkout the package is imported from; the
    FEDFLAT_GIT_COMMIT environment variable where there is no checkout (an installed wheel, a container);
    None where neither exists."""
    env = os.environ.get("FEDFLAT_GIT_COMMIT")
    if env:
        return env
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=here,
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
