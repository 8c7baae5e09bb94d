"""The `scale` knob of a study: run the same DAG smaller, without merging or emptying what it compares.

`scale: paper` runs the config as written. Any other scale applies `scales.<scale>` (top level, then
`experiments.<name>.scales.<scale>`, which wins):

  training:         {key: value}  a number sets the value; "x0.1" multiplies the paper value
                                  (integers round half to even, minimum 1); an algorithm entry's own
                                  `training` values (a paper's per-method setting) scale alike
  algorithm_params: {preset: {hyperparameter: value or "x<factor>"}}  applied to every run of the preset,
                                  "x" multiplying the run's resolved paper value (its own params, the
                                  study's algorithm_params, the preset default), e.g. syn_round with rounds
  datasets:         {paper name: substitute}
  models:           {paper name: substitute}
  model_params:     {substitute model: kwargs}   (top level only)
  note:             one line stating every scaled setting (printed under every paper table)

What the scale must keep is checked on the *effective* settings of every run, i.e. what drives the
computation (RunSpec, with participation replaced by clients per round = max(1, round(p·N)), and
local_steps and local_epochs as one local work, in epochs where set, else in steps):

  - two runs that differ at paper scale must differ at this scale (no merge), and runs shared at
    paper scale stay shared (no split): the DAG keeps its shape;
  - a comparison along one numeric setting (all else equal) keeps its order: 10 < 50 local steps at
    paper scale may not become 2 > 1;
  - at every scale, no run may hollow out its method: a part that only acts after a round
    threshold (`Part.round_thresholds`, e.g. FedSynSAM's syn_round R: D_syn is used for t > R) needs
    R < rounds, else FedSynSAM is FedSAM and DynaFed is FedAvg; a part that is zero at a round's
    start point (`Part.first_step_inert`: FedSOL's perturbation, FedProx's and the KL proximal
    terms, the projection) needs 2 local steps, else FedSOL is FedAvg.

Each refusal is one ConfigError line naming the scale, the experiments, the tables/figures that read
them and the setting.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigError, choice_error
from ..core.spec import TRAINING_DEFAULTS
from ..training.algorithms import PRESETS

SCALES = ("paper", "reduced", "tiny")
SCALE_KEYS = {"training", "algorithm_params", "datasets", "models", "model_params", "note"}
_EXPERIMENT_SCALE_KEYS = SCALE_KEYS - {"model_params", "note"}
_NOT_NUMBERS = ("backend",)  # training keys that change speed, not numbers (see RunSpec.digest)
# what a run measures, not what it trains: two runs that train alike merge even if these differ
_MEASUREMENT = ("analysis", "training.eval_every", "training.eval_batch_size", "training.eval_subset",
                "training.checkpoint_every", "training.client_state", "training.snapshot_rounds")


@dataclass
class Scaled:
    config: dict  # the study config at the chosen scale, `scales` consumed
    paper: dict | None  # the same config at paper scale (None when nothing was scaled)
    info: dict  # {name, note, datasets: {paper: substitute}, models: {...}}


def experiment_targets(config: dict) -> dict[str, list[str]]:
    """{experiment: [table/figure names that read it]}: every entry of a top-level section (tables,
    figures, pending ones) that names an `experiment:` (or `overlay_experiment:`, or lists `experiments:`,
    as grid_search does) anywhere inside it."""
    out: dict[str, list[str]] = {}

    def walk(node, target):
        if isinstance(node, dict):
            listed = node.get("experiments") if isinstance(node.get("experiments"), list) else []
            for e in [node.get("experiment"), node.get("overlay_experiment"), *listed]:  # landscape_overlay panels
                if isinstance(e, str) and target not in out.setdefault(e, []):
                    out[e].append(target)
            for v in node.values():
                walk(v, target)
        elif isinstance(node, list):
            for v in node:
                walk(v, target)

    for section, entries in config.items():
        if section not in ("experiments", "scales") and isinstance(entries, dict):
            for name, entry in entries.items():
                walk(entry, name)
    return out


# ------------------------------------------------------------------------------------ overrides
def _scale_value(key: str, paper_value: Any, override: Any) -> Any:
    if isinstance(override, str) and override.startswith("x"):
        try:
            factor = float(override[1:])
        except ValueError:
            raise ConfigError(f"{key}: {override!r} is not 'x<factor>'") from None
        if isinstance(paper_value, bool) or not isinstance(paper_value, (int, float)):
            raise ConfigError(f"{key}: cannot multiply non-numeric value {paper_value!r}")
        if isinstance(paper_value, int):
            return max(1, int(round(paper_value * factor)))
        return paper_value * factor
    return override


def _overrides(ov: Any, key: str, allowed: set[str]) -> dict:
    if ov is None:
        return {}
    if not isinstance(ov, dict):
        raise ConfigError(f"{key}: must be a mapping with keys {', '.join(sorted(allowed))}")
    bad = sorted(set(ov) - allowed)
    if bad:
        raise ConfigError(f"{key}: unknown key {bad[0]!r}; allowed: {', '.join(sorted(allowed))}")
    for k in sorted(set(ov) - {"note"}):
        if ov[k] is not None and not isinstance(ov[k], dict):
            raise ConfigError(f"{key}.{k}: must be a mapping")
    return ov


def _check_algorithm_overrides(ov: dict, key: str) -> None:
    for name, params in ov.items():
        preset = PRESETS.get(name, key=key)
        if not isinstance(params, dict):
            raise ConfigError(f"{key}.{name}: must be a mapping of hyperparameter to value or 'x<factor>'")
        specs = preset.param_specs()
        for k in params:
            if k not in specs:
                raise ConfigError(f"{key}.{name}: unknown hyperparameter {k!r}; allowed: {', '.join(sorted(specs))}")


def _scaled_entry(raw: Any, training: dict, params: dict, global_params: dict, key: str) -> Any:
    """An algorithm entry at the scale: its own `training` values (a paper's per-method setting) scaled like
    the experiment's by `training` ({k: v}), its hyperparameters by `params` ({preset: {k: v}})."""
    if not isinstance(raw, (str, dict)) or (isinstance(raw, str) and raw not in params):
        return raw  # unchanged (load_study names a malformed entry)
    entry = {"preset": raw} if isinstance(raw, str) else raw
    name = entry.get("preset")
    if isinstance(entry.get("training"), dict):
        entry = {**entry, "training": {k: _scale_value(f"{key}.training.{k}", v, training[k]) if k in training else v
                                       for k, v in entry["training"].items()}}
    if isinstance(name, str) and name in params:  # a malformed preset is named by load_study
        own = dict(entry.get("params") or {})
        paper = PRESETS.get(name).resolve({**(global_params.get(name) or {}), **own}, key=key)
        for k, v in params[name].items():
            own[k] = _scale_value(f"{key}.algorithm_params.{name}.{k}", paper[k], v)
        entry = {**entry, "params": own}
    return entry


def apply_scale(config: dict) -> Scaled:
    """The config at its `scale` (and at paper scale, for the checks), `scales` consumed."""
    config = copy.deepcopy(config)
    scale = config.get("scale", "paper")
    if scale not in SCALES:
        raise choice_error("scale", scale, SCALES)
    scales = config.pop("scales", None) or {}
    if not isinstance(scales, dict):
        raise ConfigError("scales: must be a mapping of scale name to overrides")
    for s in scales:
        if s not in SCALES or s == "paper":
            raise choice_error("scales", s, SCALES[1:])
    top = _overrides(scales.get(scale), f"scales.{scale}", SCALE_KEYS) if scale != "paper" else {}
    _check_algorithm_overrides(top.get("algorithm_params") or {}, f"scales.{scale}.algorithm_params")
    paper_cfg = copy.deepcopy(config)
    for exp in (paper_cfg.get("experiments") or {}).values():
        if isinstance(exp, dict):
            exp.pop("scales", None)
    dmap, mmap = dict(top.get("datasets") or {}), dict(top.get("models") or {})
    base_training = config.get("training") or {}
    global_params = config.get("algorithm_params") or {}
    for ename, exp in (config.get("experiments") or {}).items():
        if not isinstance(exp, dict):
            continue  # load_study names the error
        exp_scales = exp.pop("scales", None) or {}
        if not isinstance(exp_scales, dict):
            raise ConfigError(f"experiments.{ename}.scales: must be a mapping of scale name to overrides")
        for s in exp_scales:
            if s not in SCALES or s == "paper":
                raise choice_error(f"experiments.{ename}.scales", s, SCALES[1:])
        if scale == "paper":
            continue
        key = f"experiments.{ename}.scales.{scale}"
        local = _overrides(exp_scales.get(scale), key, _EXPERIMENT_SCALE_KEYS)
        _check_algorithm_overrides(local.get("algorithm_params") or {}, f"{key}.algorithm_params")
        paper_training = {**base_training, **(exp.get("training") or {})}
        training = dict(paper_training)
        for where, src in ((f"scales.{scale}", top), (key, local)):
            for k, v in (src.get("training") or {}).items():
                training[k] = _scale_value(f"{where}.training.{k}", paper_training.get(k, TRAINING_DEFAULTS.get(k)), v)
        exp["training"] = training
        tr_ov = {**(top.get("training") or {}), **(local.get("training") or {})}
        algo_ov = {**(top.get("algorithm_params") or {})}
        for name, params in (local.get("algorithm_params") or {}).items():
            algo_ov[name] = {**(algo_ov.get(name) or {}), **params}
        if isinstance(exp.get("algorithms"), list):
            exp["algorithms"] = [_scaled_entry(a, tr_ov, algo_ov, global_params, key) for a in exp["algorithms"]]
        edmap = {**dmap, **(local.get("datasets") or {})}
        emmap = {**mmap, **(local.get("models") or {})}
        dmap.update(local.get("datasets") or {})
        mmap.update(local.get("models") or {})
        if isinstance(exp.get("datasets"), list):
            exp["datasets"] = [edmap.get(d, d) for d in exp["datasets"]]
        if isinstance(exp.get("models"), list):
            exp["models"] = [emmap.get(m, m) for m in exp["models"]]
    if scale != "paper":
        config["model_params"] = {**(config.get("model_params") or {}), **(top.get("model_params") or {})}
    note = str(top.get("note", "")) if scale != "paper" else "the paper's settings"
    info = {"name": scale, "note": note, "datasets": dmap, "models": mmap}
    return Scaled(config, paper_cfg if scale != "paper" and scales else None, info)


# ------------------------------------------------------------------------------------ checks
def effective_settings(spec) -> dict:
    """What drives a run's computation, flattened to dotted keys: participation is replaced by the
    clients per round it gives; local_steps / local_epochs become one `local_work` (epochs where set, else steps)."""
    tr = {k: v for k, v in spec.training.items() if k not in ("participation",) + _NOT_NUMBERS}
    tr["clients_per_round"] = spec.clients_per_round
    # one local-work key, so epochs at paper scale compare with the steps a scale may use instead
    epochs, steps = tr.pop("local_epochs", 0), tr.pop("local_steps", None)
    tr["local_work"], tr["local_work_unit"] = (epochs, "epochs") if epochs else (steps, "steps")
    out = {"dataset": spec.dataset, "partition": spec.partition, "model": spec.model, "algorithm": spec.algorithm,
           "seed": spec.seed, "analysis": json.dumps(spec.analysis, sort_keys=True),
           "uplink": json.dumps(spec.uplink, sort_keys=True)}
    out.update({f"training.{k}": v for k, v in tr.items()})
    out.update({f"hparams.{k}": v for k, v in spec.hparams.items()})
    out.update({f"model_kwargs.{k}": v for k, v in spec.model_kwargs.items()})
    return out


def _key(eff: dict, drop: tuple[str, ...] = ()) -> str:
    return json.dumps({k: v for k, v in eff.items() if k not in drop}, sort_keys=True, default=str)


def _where(runs: list[tuple[str, Any]], targets: dict[str, list[str]]) -> str:
    exps = sorted({e for e, _ in runs})
    tgts = sorted({t for e in exps for t in targets.get(e, [])})
    return f"experiments {', '.join(exps)}; targets {', '.join(tgts) or '(none)'}"


def _differences(a: dict, b: dict, limit: int = 3) -> list[str]:
    keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return keys[:limit]


def _describe(keys: list[str], pa: dict, pb: dict, sa: dict, sb: dict, paper_a, paper_b) -> str:
    parts = []
    for k in keys:
        text = f"{k} {pa.get(k)!r} vs {pb.get(k)!r} at paper scale -> {sa.get(k)!r} vs {sb.get(k)!r}"
        if k == "training.clients_per_round":
            na, nb = sa.get("training.num_clients"), sb.get("training.num_clients")
            text += (f" (participation {paper_a.training['participation']:g} vs {paper_b.training['participation']:g}"
                     f" of {na if na == nb else f'{na} vs {nb}'} clients)")
        parts.append(text)
    return "; ".join(parts)


def check_scaled(paper_study, study, info: dict, targets: dict[str, list[str]]) -> None:
    """Refuse a scale that merges or splits runs, or inverts a one-setting comparison (see module doc)."""
    scale = info["name"]
    rows = []  # (experiment, paper spec, scaled spec, paper effective, scaled effective)
    for ename, entries in study.experiments.items():
        for (rid, _), (pid, _) in zip(entries, paper_study.experiments[ename]):
            p, s = paper_study.runs[pid], study.runs[rid]
            rows.append((ename, p, s, effective_settings(p), effective_settings(s)))
    by_scaled: dict[str, dict[str, tuple]] = {}
    by_paper: dict[str, dict[str, tuple]] = {}
    for row in rows:
        by_scaled.setdefault(_key(row[4], _MEASUREMENT), {}).setdefault(_key(row[3], _MEASUREMENT), row)
        by_paper.setdefault(_key(row[3]), {}).setdefault(_key(row[4]), row)
    for group in by_scaled.values():
        if len(group) > 1:
            a, b = list(group.values())[:2]
            diff = _differences(*(dict((k, v) for k, v in r[3].items() if k not in _MEASUREMENT) for r in (a, b)))
            raise ConfigError(f"scales.{scale}: merges runs that differ at paper scale: "
                              f"{_describe(diff, a[3], b[3], a[4], b[4], a[1], b[1])} "
                              f"({_where([a[:2], b[:2]], targets)}); keep them apart at this scale")
    for group in by_paper.values():
        if len(group) > 1:
            a, b = list(group.values())[:2]
            diff = _differences(a[4], b[4])
            raise ConfigError(f"scales.{scale}: splits a run shared at paper scale: "
                              + "; ".join(f"{k} {a[4].get(k)!r} vs {b[4].get(k)!r}" for k in diff)
                              + f" ({_where([a[:2], b[:2]], targets)}); scale the experiments alike")
    _check_order(rows, scale, targets)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_order(rows: list[tuple], scale: str, targets: dict[str, list[str]]) -> None:
    """Runs that train alike at paper scale but for one numeric setting keep that setting's order."""
    scaled = sorted({k for r in rows for k, v in r[3].items()
                     if _number(v) and r[4].get(k) != v and k not in _MEASUREMENT})  # only these can move
    for k in scaled:
        groups: dict[str, dict[Any, tuple]] = {}
        for r in rows:
            if _number(r[3].get(k)) and _number(r[4].get(k)):
                groups.setdefault(_key(r[3], (k,) + _MEASUREMENT), {}).setdefault(r[3][k], r)
        for group in groups.values():
            ordered = sorted(group.items(), key=lambda kv: kv[0])
            for (pa, a), (pb, b) in zip(ordered, ordered[1:]):
                if not a[4][k] < b[4][k]:
                    raise ConfigError(f"scales.{scale}: does not keep a comparison's order: {k} {pa!r} < {pb!r} at paper "
                                      f"scale but {a[4][k]!r} vs {b[4][k]!r} at this scale "
                                      f"({_where([a[:2], b[:2]], targets)}); scale the setting by one factor")


def check_methods_act(study, targets: dict[str, list[str]], scale: str = "paper") -> None:
    """Refuse a run whose method never acts: a part's round threshold R >= rounds (Part.round_thresholds),
    or a part that is zero at a round's start point with one local step (Part.first_step_inert)."""
    where = f"scales.{scale}: " if scale != "paper" else ""
    for ename, entries in study.experiments.items():
        tgts = ", ".join(targets.get(ename, [])) or "(none)"
        for rid, labels in entries:
            spec, preset = study.runs[rid], PRESETS.get(study.runs[rid].algorithm)
            label = labels["algorithm"] if preset.label in labels["algorithm"] else f"{preset.label} {labels['algorithm']}"
            run = f"{where}experiments.{ename}: {label}"
            for cls in preset.part_classes():
                for param, what in cls.round_thresholds.items():
                    r = spec.hparams.get(param)
                    if _number(r) and r >= spec.rounds:
                        raise ConfigError(f"{run} {param} {r} >= training.rounds {spec.rounds}: {what} (targets {tgts}); "
                                          f"lower {param} (at a scale: algorithm_params: {{{spec.algorithm}: "
                                          f"{{{param}: x<factor>}}}})")
                if cls.first_step_inert and spec.training.get("local_steps") == 1 and not spec.training.get("local_epochs"):
                    raise ConfigError(f"{run} with training.local_steps 1: {cls.first_step_inert} (targets {tgts}); "
                                      f"give it at least 2 local steps")
