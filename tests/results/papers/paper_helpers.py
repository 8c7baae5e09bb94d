"""A paper catalog's config at a scale, for fedflat.pipeline.study.load_study: an unknown preset, data set, model or kind
in a catalog fails its test (the ConfigError names it), never a skip."""
from __future__ import annotations

from pathlib import Path

from fedflat.pipeline.study import load_config_file

ROOT = Path(__file__).resolve().parents[3]
PAPERS = tuple(sorted(p.stem for p in (ROOT / "config" / "papers").glob("*.yaml")))  # every catalog


def paper_config(paper: str, scale: str) -> dict:
    cfg = load_config_file(ROOT / "config" / "papers" / f"{paper}.yaml")
    cfg["scale"] = scale
    return cfg
