"""Load a paper catalog at a scale; skip (naming the missing names) only while a registry lacks one."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from fedflat.errors import ConfigError
from fedflat.study import load_config_file, load_study

ROOT = Path(__file__).resolve().parents[2]
PAPERS = ("fednsam", "fedsagd", "fedsol", "fedsynsam", "fedtoga")
_MISSING = re.compile(r"^(?P<key>[\w.\-]+(?:algorithms|datasets|models|kind|algorithm_params)): unknown value (?P<v>'[^']*')")


def paper_config(paper: str, scale: str) -> dict:
    cfg = load_config_file(ROOT / "config" / "papers" / f"{paper}.yaml")
    cfg["scale"] = scale
    return cfg


def load_or_skip(cfg: dict):
    try:
        return load_study(cfg)
    except ConfigError as exc:
        m = _MISSING.match(str(exc))
        if m:
            pytest.skip(f"not registered yet: {m.group('v')} ({m.group('key')})")
        raise
