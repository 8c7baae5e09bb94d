"""Which runs a table or figure entry selects: the `select:` mapping of the paper and analysis kinds, its
substitutions at reduced scales, and the caption line naming the paper and the scale.

Shared by the paper kinds (results/papers/kinds_paper.py) and the analysis figure kinds (pipeline/analysis/overlay.py,
pipeline/analysis/stability_figures.py), so it sits in the report layer below both.
"""
from __future__ import annotations

from ...core.errors import ConfigError, choice_error

SELECT_KEYS = {"experiment", "algorithm", "preset", "dataset", "model", "partition"}


def normalise_select(raw, key: str, scale_info: dict) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{key}: must be a mapping with keys from {', '.join(sorted(SELECT_KEYS))}")
    bad = sorted(set(raw) - SELECT_KEYS)
    if bad:
        raise ConfigError(f"{key}: unknown key {bad[0]!r}; allowed: {', '.join(sorted(SELECT_KEYS))}")
    out = {k: str(v) for k, v in raw.items()}
    # the catalog names paper datasets/models; at reduced/tiny scale the runs carry the substitutes
    if "dataset" in out:
        out["dataset"] = (scale_info.get("datasets") or {}).get(out["dataset"], out["dataset"])
    if "model" in out:
        out["model"] = (scale_info.get("models") or {}).get(out["model"], out["model"])
    return out


def _matches(labels: dict, sel: dict) -> bool:
    for k, v in sel.items():
        if k == "experiment":
            continue
        have = str(labels.get(k))
        if have != v and not (k == "partition" and have.startswith(v + "-")):
            return False
    return True


def select_runs(study, sel: dict, default_experiment: str, key: str) -> list[tuple[str, dict]]:
    ename = sel.get("experiment", default_experiment)
    if ename not in study.experiments:
        raise choice_error(f"{key}.experiment", ename, study.experiments)
    return [(rid, lab) for rid, lab in study.experiments[ename] if _matches(lab, sel)]


def experiment_of(entry: dict) -> dict:
    sel = dict(entry.get("select") or {})
    if "experiment" in entry:
        sel["experiment"] = entry["experiment"]
    return sel


def figure_runs(study, name: str, spec: dict, items_key: str) -> list[dict]:
    info = spec.get("scale_info") or {}
    default = spec.get("experiment")
    out = []
    for i, item in enumerate(spec.get(items_key) or []):
        key = f"figures.{name}.{items_key}[{i}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{key}: must be a mapping")
        sel = normalise_select(experiment_of(item), key, info)
        if "experiment" not in sel and default is None:
            raise ConfigError(f"{key}: no experiment (set the figure's `experiment`)")
        runs = select_runs(study, sel, default, key)
        if not runs:
            raise ConfigError(f"{key}: selects no run")
        out.append({**{k: v for k, v in item.items() if k not in ("select", "experiment")},
                    "entries": [{**lab, "dir": study.run_dir(rid)} for rid, lab in runs]})
    if not out:
        raise ConfigError(f"figures.{name}.{items_key}: at least one is required")
    return out


def target_caption(spec: dict) -> str:
    info = spec.get("scale_info") or {}
    ref = spec.get("ref", "")
    paper = info.get("paper", "")
    s = f"{paper} {ref}".strip()
    if not s:
        return ""
    return f"{s} — scale: {info.get('name', 'paper')}" if info else s  # a study of our own states no scale
