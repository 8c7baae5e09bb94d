"""Paper catalogs: the paper-specific keys of a catalog, consumed before the study expands.

A paper config is a study config (whose `scales:` the study applies, see fedflat.pipeline.scale) with three
extra top-level keys, consumed here so that fedflat.pipeline.study.load_study sees a plain study:

  paper:   {name: FedNSAM, title: ..., source: ...}   shown in every table/figure caption
  pending_tables / pending_figures: entries whose kind (or analysis hook) is not registered yet;
           each is promoted into tables/figures as soon as what it `waits_for` is registered.

Every table/figure of a catalog carries `scale_info` (the scale's name, note and substitutions, the
paper's name and source): the paper kinds print it under the table and map selects to substitutes.
"""
from __future__ import annotations

import sys

from ...core.errors import ConfigError
from ...core.kind_registry import FIGURE_KINDS, TABLE_KINDS
from ...pipeline.study import STUDY_PREPARERS, StudyPreparer
from ...training.compression.interface import COMPRESSORS
from ...training.fl.round_hooks import ROUND_HOOKS

CATALOG_KEYS = ("paper", "pending_tables", "pending_figures")


def is_catalog(config: dict) -> bool:
    return any(k in config for k in CATALOG_KEYS)


def prepare_catalog(config: dict) -> tuple[dict, dict]:
    """(the config with pending entries promoted and catalog keys consumed, the paper's caption info)."""
    paper = config.pop("paper", None) or {}
    if not isinstance(paper, dict):
        raise ConfigError("paper: must be a mapping with name, title, source")
    _promote_pending(config)
    return config, {"paper": paper.get("name", config.get("study", "")), "source": paper.get("source", "")}


def tag_targets(config: dict, scale_info: dict, caption: dict) -> None:
    """Every table/figure records the scale that made it and the paper it reproduces."""
    info = {**scale_info, **caption}
    for section in ("tables", "figures"):
        for entry in (config.get(section) or {}).values():
            if isinstance(entry, dict):
                entry.setdefault("scale_info", info)


def _waits_for(entry: dict) -> list[str]:
    w = entry.get("waits_for") or []
    return [w] if isinstance(w, str) else list(w)


def _registered(name: str) -> bool:
    return any(name in r for r in (FIGURE_KINDS, TABLE_KINDS, ROUND_HOOKS, COMPRESSORS))


def _promote_pending(config: dict) -> None:
    """Move pending entries whose kind and `waits_for` names are all registered into tables/figures."""
    for pending, section in (("pending_tables", "tables"), ("pending_figures", "figures")):
        entries = config.pop(pending, None) or {}
        for name, entry in entries.items():
            if not isinstance(entry, dict) or "kind" not in entry:
                raise ConfigError(f"{pending}.{name}: must be a mapping with 'kind' and 'waits_for'")
            names = [entry["kind"]] + _waits_for(entry)
            if all(_registered(n) for n in names):
                config.setdefault(section, {})[name] = {k: v for k, v in entry.items() if k != "waits_for"}
    # Hooks named by experiments but not registered yet are dropped (their figures stay pending);
    # the run ids change once they land, which re-runs exactly the runs that gain the measurement.
    for ename, exp in (config.get("experiments") or {}).items():
        hooks = ((exp or {}).get("analysis") or {}).get("hooks") or {}
        missing = [h for h in hooks if h not in ROUND_HOOKS]
        for h in missing:
            del hooks[h]
            print(f"fedflat: note: experiments.{ename}.analysis.hooks.{h} is not registered yet; skipped",
                  file=sys.stderr)


def report_caption(study, section: str, name: str) -> str:
    """Caption for `snakemake --report`: the paper's table/figure it reproduces, its title, the scale."""
    entry = getattr(study, section)[name]
    info = entry.get("scale_info") or {}
    ref = " ".join(x for x in (info.get("paper", ""), entry.get("ref", "")) if x)
    title = entry.get("title", "")
    text = f"{ref}: {title}" if ref and title else (ref or title or name)
    if info:
        text += f" (scale: {info.get('name', 'paper')}"
        text += f"; {info['note']})" if info.get("note") else ")"
    elif study.config.get("scale"):
        text += f" (scale: {study.config['scale']})"
    return " ".join(text.split())


# A catalog is prepared (pending entries promoted, `paper:` consumed) and its targets tagged with the paper and
# the scale; the composition root imports this module, which registers it (study.StudyPreparer).
STUDY_PREPARERS.add("paper_catalog", StudyPreparer(applies=is_catalog, prepare=prepare_catalog, after_scale=tag_targets,
                                                   order=1))
