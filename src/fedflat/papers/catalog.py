"""Paper catalogs: apply the `scale` knob and promote pending entries before the study expands.

A paper config is a study config with three extra top-level keys, consumed here so that
fedflat.study.load_study sees a plain study:

  paper:   {name: FedNSAM, title: ..., source: ...}   shown in every table/figure caption
  scales:  {reduced: OVERRIDES, tiny: OVERRIDES}       `scale: paper` uses the config as written
  pending_tables / pending_figures: entries whose kind (or analysis hook) is not registered yet;
           each is promoted into tables/figures as soon as what it `waits_for` is registered.

OVERRIDES (top level, and per experiment under `experiments.<name>.scales.<scale>`):
  training:     {key: value}  -- a number sets the value; "x0.1" multiplies the paper value
                                 (integers round, minimum 1); experiment-level wins
  datasets:     {paper name: substitute}   e.g. {cifar10: tiny_cifar10}
  models:       {paper name: substitute}
  model_params: {substitute model: kwargs}
  note:         one line stating what was shrunk (printed under every table)

The scale must keep the DAG's shape: two runs that differ at paper scale must differ after
scaling. This is checked here (ConfigError naming the experiment) before anything is built.
"""
from __future__ import annotations

import copy
import json
import sys
from typing import Any

from ..errors import ConfigError, choice_error

SCALES = ("paper", "reduced", "tiny")
SCALE_KEYS = {"training", "datasets", "models", "model_params", "note"}
CATALOG_KEYS = ("paper", "scales", "pending_tables", "pending_figures")


def is_catalog(config: dict) -> bool:
    return any(k in config for k in CATALOG_KEYS)


def _scale_value(key: str, paper_value: Any, override: Any) -> Any:
    if isinstance(override, str) and override.startswith("x"):
        try:
            factor = float(override[1:])
        except ValueError:
            raise ConfigError(f"scales.training.{key}: {override!r} is not 'x<factor>'") from None
        if isinstance(paper_value, bool) or not isinstance(paper_value, (int, float)):
            raise ConfigError(f"scales.training.{key}: cannot multiply non-numeric value {paper_value!r}")
        if isinstance(paper_value, int):
            return max(1, int(round(paper_value * factor)))
        return paper_value * factor
    return override


def _scaled_entry(entry: Any, overrides: dict) -> Any:
    """A method's own training values (an algorithm entry's `training`) scale like the experiment's."""
    if not isinstance(entry, dict) or not isinstance(entry.get("training"), dict):
        return entry  # load_study names a malformed entry
    tr = {k: _scale_value(k, v, overrides[k]) if k in overrides else v for k, v in entry["training"].items()}
    return {**entry, "training": tr}


def _check_overrides(ov: Any, key: str) -> dict:
    if ov is None:
        return {}
    if not isinstance(ov, dict):
        raise ConfigError(f"{key}: must be a mapping with keys {', '.join(sorted(SCALE_KEYS))}")
    bad = sorted(set(ov) - SCALE_KEYS)
    if bad:
        raise ConfigError(f"{key}: unknown key {bad[0]!r}; allowed: {', '.join(sorted(SCALE_KEYS))}")
    return ov


def _run_signatures(exp: dict, training: dict) -> set[str]:
    """Every run an experiment asks for, as a string (before preset resolution; enough for shape)."""
    out = set()
    rest = json.dumps({k: exp.get(k) for k in ("analysis", "uplink")}, sort_keys=True)
    tr = json.dumps(training, sort_keys=True)
    for d in exp.get("datasets") or []:
        for m in exp.get("models") or []:
            for p in exp.get("partitions") or []:
                for a in exp.get("algorithms") or []:
                    for s in exp.get("seeds") or []:
                        out.add(json.dumps([d, m, p, a, s, tr, rest], sort_keys=True))
    return out


def apply_scale(config: dict) -> dict:
    """Returns a plain study config: the chosen scale applied, catalog keys consumed."""
    config = copy.deepcopy(config)
    scale = config.get("scale", "paper")
    if scale not in SCALES:
        raise choice_error("scale", scale, SCALES)
    paper = config.pop("paper", None) or {}
    if not isinstance(paper, dict):
        raise ConfigError("paper: must be a mapping with name, title, source")
    scales = config.pop("scales", None) or {}
    if not isinstance(scales, dict):
        raise ConfigError("scales: must be a mapping of scale name to overrides")
    for s in scales:
        if s not in SCALES:
            raise choice_error("scales", s, SCALES)
    top = _check_overrides(scales.get(scale), f"scales.{scale}") if scale != "paper" else {}
    dmap = dict(top.get("datasets") or {})
    mmap = dict(top.get("models") or {})
    base_training = config.get("training") or {}
    before: set[str] = set()
    after: set[str] = set()
    for ename, exp in (config.get("experiments") or {}).items():
        if not isinstance(exp, dict):
            continue  # load_study names the error
        exp_scales = exp.pop("scales", None) or {}
        for s in exp_scales:
            if s not in SCALES:
                raise choice_error(f"experiments.{ename}.scales", s, SCALES)
        paper_training = {**base_training, **(exp.get("training") or {})}
        before |= _run_signatures(exp, paper_training)
        if scale == "paper":
            after |= _run_signatures(exp, paper_training)
            continue
        local = _check_overrides(exp_scales.get(scale), f"experiments.{ename}.scales.{scale}")
        from ..spec import TRAINING_DEFAULTS

        training = dict(paper_training)
        for src in (top.get("training") or {}, local.get("training") or {}):
            for k, v in src.items():
                training[k] = _scale_value(k, paper_training.get(k, TRAINING_DEFAULTS.get(k)), v)
        exp["training"] = training
        overrides = {**(top.get("training") or {}), **(local.get("training") or {})}
        exp["algorithms"] = [_scaled_entry(a, overrides) for a in exp.get("algorithms") or []]
        edmap = {**dmap, **(local.get("datasets") or {})}
        emmap = {**mmap, **(local.get("models") or {})}
        dmap.update(local.get("datasets") or {})
        mmap.update(local.get("models") or {})
        exp["datasets"] = [edmap.get(d, d) for d in exp.get("datasets") or []]
        exp["models"] = [emmap.get(m, m) for m in exp.get("models") or []]
        after |= _run_signatures(exp, training)
    if len(after) != len(before):
        raise ConfigError(f"scales.{scale}: the scaled grid has {len(after)} distinct runs but the paper grid has "
                          f"{len(before)}; a substitution or training override merges runs that differ in the paper "
                          f"(give the experiment its own `scales.{scale}.training`)")
    if scale != "paper":
        config["model_params"] = {**(config.get("model_params") or {}), **(top.get("model_params") or {})}
    info = {"name": scale, "note": str(top.get("note", "")) if scale != "paper" else "the paper's settings",
            "datasets": dmap, "models": mmap, "paper": paper.get("name", config.get("study", "")),
            "source": paper.get("source", "")}
    _promote_pending(config)
    for section in ("tables", "figures"):
        for entry in (config.get(section) or {}).values():
            if isinstance(entry, dict):
                entry.setdefault("scale_info", info)
    return config


def _waits_for(entry: dict) -> list[str]:
    w = entry.get("waits_for") or []
    return [w] if isinstance(w, str) else list(w)


def _registered(name: str) -> bool:
    from ..fl.hooks import COMPRESSORS, ROUND_HOOKS
    from ..report.kinds import FIGURE_KINDS, TABLE_KINDS

    return any(name in r for r in (FIGURE_KINDS, TABLE_KINDS, ROUND_HOOKS, COMPRESSORS))


def _promote_pending(config: dict) -> None:
    """Move pending entries whose kind and `waits_for` names are all registered into tables/figures."""
    from ..fl.hooks import ROUND_HOOKS

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
