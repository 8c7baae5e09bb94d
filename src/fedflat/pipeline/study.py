"""Expand a study config into the runs, partitions, tables and figures it needs.

The Snakefile calls this at parse time, so every config error is raised before any job starts,
and every output path is a function of the run's parameters.
"""
from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..training.algorithms import PRESETS
from ..training.compression.interface import COMPRESSORS
from ..training.data import DATASETS
from ..training.data.partition import canonical_partition
from ..core.errors import ConfigError, choice_error
from ..training.fl.round_hooks import ROUND_HOOKS
from ..core.kind_registry import FIGURE_KINDS, TABLE_KINDS
from ..training.models import MODELS
from ..core.registry import Registry
from ..core.recorded import SUMMARY, covers, read_outcome
from ..core.run_paths import run_dir
from .scale import apply_scale, check_methods_act, check_scaled, experiment_targets
from ..core.spec import RunSpec, check_training
from ..core.util.names import check_name, check_relative_dir
from ..core.util.numerics import check_mode, of_config as numerics_of_config

TOP_KEYS = {"study", "data_root", "download", "device", "threads_per_job", "training", "algorithm_params", "uplink",
            "model_params", "experiments", "tables", "figures", "tables_dir", "figures_dir", "scale", "analysis",
            "resources", "reuse_evidence", "numerics", "allow_dirty",
            "findings"}  # findings: declarations read by the findings mechanism (docs), never by the expansion
EXPERIMENT_KEYS = {"datasets", "models", "partitions", "algorithms", "seeds", "training", "description",
                   "analysis", "uplink", "missing_classes"}


@dataclass
class AlgoEntry:
    preset: str
    label: str
    params: dict
    training: dict | None = None  # the experiment's training with this entry's overrides (None: none)
    uplink: dict | None = None  # keys that override the experiment's uplink for this entry's runs (None: none)


@dataclass(frozen=True)
class StudyPreparer:
    """What a package above the study (the leaderboard, the paper catalogs) adds to it, registered in
    STUDY_PREPARERS from that package's module, which the composition root (fedflat.plugins) imports; the study
    never imports those packages. load_study applies every preparer whose `applies(config)` holds, by
    increasing `order` (then registration order), each to the config the previous one returned:
      prepare(config) -> (a config closer to a plain study, the preparer's state);
      after_scale(scaled config, scale info, state): adjust the scaled config (e.g. tag its targets);
      attach(study, state): keep the state on the expanded study;
      in_process(study, data_root): set the study up for an in-process build (fedflat.pipeline.build)."""
    applies: Callable[[dict], bool]
    prepare: Callable[[dict], tuple[dict, Any]]
    after_scale: Callable[[dict, dict, Any], None] | None = None
    attach: Callable[["Study", Any], None] | None = None
    in_process: Callable[["Study", str], None] | None = None
    order: int = 0  # a preparer that generates experiments (the leaderboard) before one that annotates them


STUDY_PREPARERS: Registry[StudyPreparer] = Registry("study preparer")


# An entry may not change what shapes the experiment's partitions (shared by all its algorithms).
_PARTITION_KEYS = ("num_clients", "dirichlet_variant", "samples_per_client")


@dataclass
class Study:
    config: dict
    runs: dict[str, RunSpec] = field(default_factory=dict)  # run id -> spec
    partitions: dict[str, dict] = field(default_factory=dict)  # partition id -> how to make it
    experiments: dict[str, list[tuple[str, dict]]] = field(default_factory=dict)  # name -> [(run id, labels)]
    tables: dict[str, dict] = field(default_factory=dict)
    figures: dict[str, dict] = field(default_factory=dict)
    leaderboard: dict | None = None  # the leaderboard protocol (fedflat.results.leaderboard.protocol), if this is one
    screen: Callable[[], dict] | None = None  # the leaderboard's screen cells to continue, once known (leaderboard.flow)
    choice: Callable[[], dict] | None = None  # the leaderboard's tuning choice, once known (leaderboard.flow)
    final_cache: dict = field(default_factory=dict)  # leaderboard.flow: the final runs of the current choice

    def run_dir(self, run_id: str) -> str:
        return run_dir(run_id)

    @property
    def reuse_evidence(self) -> bool:
        """Whether a run recorded in the committed evidence counts as done (fedflat.core.recorded)."""
        return config_bool(self.config, "reuse_evidence", True)

    @property
    def at_paper_scale(self) -> bool:
        return self.config.get("scale", "paper") == "paper"

    @property
    def numerics(self) -> str:
        """portable | native (core/util/numerics.py `of_config`: portable at paper scale unless `numerics:` says)."""
        return numerics_of_config(self.config)

    @property
    def requires_clean(self) -> bool:
        """Evidence runs (paper scale) refuse a modified working tree unless `allow_dirty: true`."""
        return self.at_paper_scale and not config_bool(self.config, "allow_dirty", False)


    def outcome(self, run_id: str) -> dict:
        """The run's summary.json, or its committed record where the directory is gone (fedflat.core.recorded), one
        that can stand for a run in this study's numerics (a portable study never reads a legacy record)."""
        return read_outcome(self.run_dir(run_id), run_id, self.reuse_evidence, numerics=self.numerics)

    def outcome_inputs(self, run_ids, needs: tuple[str, ...] = ()) -> list[str]:
        """The summary.json of each run that a selection reads and the committed evidence does not already hold
        (with every key of `needs` measured): what the workflow must still run."""
        return [f"{self.run_dir(r)}/{SUMMARY}" for r in self.unrecorded(run_ids, needs)]

    def unrecorded(self, run_ids, needs: tuple[str, ...] = ()) -> list[str]:
        """The runs the committed evidence does not hold with every key of `needs` measured (all of them with
        reuse_evidence off)."""
        return [r for r in run_ids if not (self.reuse_evidence and covers(r, needs, numerics=self.numerics))]

    def partition_path(self, pid: str) -> str:
        return f"results/partitions/{pid}.npz"

    @property
    def tables_dir(self) -> str:
        return self.config.get("tables_dir", "results/tables")

    @property
    def figures_dir(self) -> str:
        return self.config.get("figures_dir", "figures")

    def table_outputs(self) -> list[str]:
        return [f"{self.tables_dir}/{n}.{ext}" for n in self.tables for ext in ("md", "csv", "tex")]

    def figure_outputs(self) -> list[str]:
        return [f"{self.figures_dir}/{n}.{ext}" for n in self.figures for ext in ("pdf", "png")]


def _as_list(exp_name: str, exp: dict, key: str) -> list:
    v = exp.get(key)
    if v is None or (isinstance(v, list) and not v):
        raise ConfigError(f"experiments.{exp_name}.{key}: must be a non-empty list")
    return v if isinstance(v, list) else [v]


def _algo_entry(exp_name: str, raw, global_params: dict, training: dict) -> AlgoEntry:
    """One algorithm of an experiment. `training:` overrides the experiment's training for this entry's runs
    only (a paper's per-method setting, e.g. FedTOGA App. B.2's lr decay 0.9995 for FedSMOO on ResNet-18);
    a scale's training overrides apply to these values too (fedflat.pipeline.scale). `uplink:` overrides keys of the
    experiment's uplink for this entry's runs only (e.g. how one 2x method sends its second vector,
    `other_vectors`, while the experiment's compressor applies to all)."""
    key = f"experiments.{exp_name}.algorithms"
    if isinstance(raw, str):
        raw = {"preset": raw}
    if not isinstance(raw, dict) or "preset" not in raw:
        raise ConfigError(f"{key}: each entry is a preset name or a mapping with 'preset'; got {raw!r}")
    bad = sorted(set(raw) - {"preset", "params", "label", "training", "uplink"})
    if bad:
        raise ConfigError(f"{key}: unknown key {bad[0]!r}; allowed: label, params, preset, training, uplink")
    name = raw["preset"]
    preset = PRESETS.get(name, key=key)
    params = {**(global_params.get(name) or {}), **(raw.get("params") or {})}
    resolved = preset.resolve(params, key="algorithm_params")
    up = raw.get("uplink")
    if up is not None and (not isinstance(up, dict) or "kind" in up):
        raise ConfigError(f"{key}.{name}.uplink: a mapping of the experiment's compressor settings to override "
                          f"(its kind stays the experiment's); got {up!r}")
    own = raw.get("training")
    if own is None:
        return AlgoEntry(name, raw.get("label") or preset.label, resolved, uplink=up)
    tkey = f"{key}.{name}.training"
    if not isinstance(own, dict):
        raise ConfigError(f"{tkey}: must be a mapping of training settings")
    shaping = sorted(set(own) & set(_PARTITION_KEYS))
    if shaping:
        raise ConfigError(f"{tkey}.{shaping[0]}: shapes the experiment's partitions; "
                          f"set it in experiments.{exp_name}.training")
    return AlgoEntry(name, raw.get("label") or preset.label, resolved, check_training({**training, **own}, key=tkey),
                     uplink=up)


def _entry_uplink(ename: str, uplink: dict, a: AlgoEntry) -> dict:
    """The experiment's uplink with the entry's overrides, checked by its compressor at parse time."""
    if not a.uplink:
        return uplink
    key = f"experiments.{ename}.algorithms.{a.preset}.uplink"
    if not uplink:
        raise ConfigError(f"{key}: the experiment sends its uplink uncompressed; there is nothing to override")
    merged = {**uplink, **a.uplink}
    check_uplink(merged, key)
    return merged


def check_uplink(uplink: dict, key: str) -> None:
    """The compressor validates its parameters at parse time, naming `key`."""
    COMPRESSORS.get(uplink.get("kind"), key=key)(**{k: v for k, v in uplink.items() if k != "kind"})


def check_hooks(base, override, key: str, hooks_key: str | None = None) -> dict:
    """Round hooks for the runs: the top-level `analysis.hooks` merged with the experiment's; errors name
    `hooks_key` (default `<key>.hooks`)."""
    hooks_key = hooks_key or f"{key}.hooks"
    for section in (base, override):
        if not isinstance(section or {}, dict) or not isinstance((section or {}).get("hooks") or {}, dict):
            raise ConfigError(f"{hooks_key}: must be a mapping of hook names to their parameters")
    hooks = {**((base or {}).get("hooks") or {}), **((override or {}).get("hooks") or {})}
    for name in hooks:
        hook_cls = ROUND_HOOKS.get(name, key=hooks_key)
        if not isinstance(hooks[name] or {}, dict):
            raise ConfigError(f"{hooks_key}.{name}: must be a mapping of the hook's parameters, got {hooks[name]!r}")
        if hasattr(hook_cls, "check"):  # analysis hooks validate their parameters at parse time
            hook_cls.check(dict(hooks[name] or {}), f"{hooks_key}.{name}")
    return {k: dict(v or {}) for k, v in sorted(hooks.items())}


def load_study(config: dict) -> Study:
    """The study at its `scale`, checked against its paper scale (fedflat.pipeline.scale) before any job runs."""
    config = copy.deepcopy(config)
    applied = []
    for prep in sorted(STUDY_PREPARERS.values(), key=lambda p: p.order):  # e.g. a leaderboard's experiments
        if prep.applies(config):
            config, state = prep.prepare(config)
            applied.append((prep, state))
    targets = experiment_targets(config)
    scaled = apply_scale(config)
    for prep, state in applied:
        if prep.after_scale is not None:
            prep.after_scale(scaled.config, scaled.info, state)
    study = _expand(scaled.config)
    if scaled.paper is not None:
        check_scaled(_expand(scaled.paper, targets=False), study, scaled.info, targets)
    check_methods_act(study, targets, scaled.info["name"] if scaled.paper is not None else "paper")
    for prep, state in applied:
        if prep.attach is not None:
            prep.attach(study, state)
    return study


def _expand(config: dict, targets: bool = True) -> Study:
    """Runs, partitions and (with `targets`) tables/figures of a plain study config, every name checked."""
    unknown = sorted(set(config) - TOP_KEYS)
    if unknown:
        raise ConfigError(f"config: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(TOP_KEYS))}")
    for key, default in (("reuse_evidence", True), ("allow_dirty", False)):
        config_bool(config, key, default)  # one line naming the key where it is not a yes/no
    if "numerics" in config:
        check_mode(config["numerics"], "numerics")
    check_output_names(config)
    base_training = config.get("training") or {}
    check_training(base_training)  # name bad global keys as 'training.x'
    global_algo = config.get("algorithm_params") or {}
    for name in global_algo:
        PRESETS.get(name, key="algorithm_params")
    model_params = config.get("model_params") or {}
    exps = config.get("experiments") or {}
    if not exps:
        raise ConfigError("experiments: at least one experiment is required")
    study = Study(config)
    for ename, exp in exps.items():
        if not isinstance(exp, dict):
            raise ConfigError(f"experiments.{ename}: must be a mapping")
        bad = sorted(set(exp) - EXPERIMENT_KEYS)
        if bad:
            raise ConfigError(f"experiments.{ename}: unknown key {bad[0]!r}; allowed: {', '.join(sorted(EXPERIMENT_KEYS))}")
        training = check_training({**base_training, **(exp.get("training") or {})}, key=f"experiments.{ename}.training")
        datasets = _as_list(ename, exp, "datasets")
        models = _as_list(ename, exp, "models")
        for d in datasets:
            DATASETS.get(d, key=f"experiments.{ename}.datasets")
        for m in models:
            MODELS.get(m, key=f"experiments.{ename}.models")
        try:
            parts = [canonical_partition(p, training["dirichlet_variant"]) for p in _as_list(ename, exp, "partitions")]
        except ConfigError as exc:  # name the config key, not only the value
            raise ConfigError(f"experiments.{ename}.partitions: {exc}") from None
        algos = [_algo_entry(ename, a, global_algo, training) for a in _as_list(ename, exp, "algorithms")]
        seeds = _as_list(ename, exp, "seeds")
        analysis = check_hooks(config.get("analysis"), exp.get("analysis"), f"experiments.{ename}.analysis")
        uplink = exp.get("uplink", config.get("uplink")) or {}
        if not isinstance(uplink, dict):
            where = f"experiments.{ename}.uplink" if "uplink" in exp else "uplink"
            raise ConfigError(f"{where}: must be a mapping with the compressor's kind and settings, got {uplink!r}")
        uplink = dict(uplink)
        if uplink and uplink.get("kind", "none") == "none":
            uplink = {}
        if uplink:
            check_uplink(uplink, f"experiments.{ename}.uplink.kind")
        if exp.get("missing_classes", "error") not in ("error", "allow"):
            raise choice_error(f"experiments.{ename}.missing_classes", exp.get("missing_classes"), ("error", "allow"))
        for s in seeds:
            if isinstance(s, bool) or not isinstance(s, int) or s < 0:
                raise ConfigError(f"experiments.{ename}.seeds: seeds must be integers >= 0, got {s!r}")
        uplinks = {a.preset: _entry_uplink(ename, uplink, a) for a in algos}
        entries = []
        for d, m, p, a, s in itertools.product(datasets, models, parts, algos, seeds):
            spec = RunSpec(d, p, m, a.preset, s, a.params, dict(model_params.get(m) or {}),
                           PRESETS.get(a.preset).training_for(a.training or training),  # the run's one weight decay
                           analysis=analysis, uplink=uplinks[a.preset])
            rid = spec.run_id()
            study.runs[rid] = spec
            study.partitions[spec.partition_id()] = {
                "dataset": d, "partition": p, "num_clients": training["num_clients"], "seed": s,
                "samples_per_client": training["samples_per_client"], "variant": training["dirichlet_variant"],
                # only when set: the params of every existing partition job stay as they were (no rerun)
                **({"missing_classes": "allow"} if exp.get("missing_classes") == "allow" else {})}
            entries.append((rid, {"dataset": d, "model": m, "partition": p, "algorithm": a.label,
                                  "preset": a.preset, "seed": s}))
        study.experiments[ename] = entries
    if not targets:
        return study
    for section, registry, default_kind in (("tables", TABLE_KINDS, "accuracy"), ("figures", FIGURE_KINDS, None)):
        for name, entry in (config.get(section) or {}).items():
            if not isinstance(entry, dict):
                raise ConfigError(f"{section}.{name}: must be a mapping")
            entry = {"kind": default_kind, **entry}
            kind_cls = registry.get(entry["kind"], key=f"{section}.{name}.kind")
            if "experiment" in entry and (not isinstance(entry["experiment"], str)
                                          or entry["experiment"] not in study.experiments):
                raise choice_error(f"{section}.{name}.experiment", entry["experiment"], study.experiments)
            if hasattr(kind_cls, "check"):
                kind_cls.check(study, name, entry)
            getattr(study, section)[name] = entry
    return study


_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def config_bool(config: dict, key: str, default: bool) -> bool:
    """A yes/no key as users type it: YAML's true/false, or the strings `snakemake --config key=false` passes."""
    v = config.get(key, default)
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in _TRUE + _FALSE:
        return v.strip().lower() in _TRUE
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    raise ConfigError(f"{key}: must be true or false; got {v!r}")


def check_output_names(config: dict) -> None:
    """Names that become paths (the study's, its output directories', its experiments', tables' and figures'):
    safe words (core/util/names.py), refused in one line before anything is written or run."""
    if "study" in config:
        check_name("study", config["study"])
    for key in ("tables_dir", "figures_dir"):
        if key in config:
            check_relative_dir(key, config[key])
    for section in ("experiments", "tables", "figures"):
        for name in config.get(section) or {}:
            check_name(f"{section}.{name}", name)


def table_inputs(study: Study, name: str) -> list[str]:
    t = study.tables[name]
    return TABLE_KINDS.get(t["kind"]).inputs(study, name, t)


def figure_inputs(study: Study, name: str) -> list[str]:
    f = study.figures[name]
    return FIGURE_KINDS.get(f["kind"]).inputs(study, name, f)


def load_config_file(path: str | Path) -> dict:
    import yaml

    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config file not found: {path}")
    try:
        cfg = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(cfg, dict):
        raise ConfigError(f"config file {path} must contain a mapping")
    return cfg


def table_manifest(study: Study, name: str) -> dict:
    t = study.tables[name]
    return {"kind": t["kind"], **TABLE_KINDS.get(t["kind"]).manifest(study, name, t)}


def figure_manifest(study: Study, name: str) -> dict:
    f = study.figures[name]
    return {"kind": f["kind"], **FIGURE_KINDS.get(f["kind"]).manifest(study, name, f)}


def schema_error(config: dict, schema: dict) -> str:
    """The most relevant JSON-schema violation as one line naming the key."""
    import jsonschema

    err = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(config))
    if err is None:
        return "config does not match workflow/schemas/config.schema.yaml"
    path = ".".join(str(p) for p in err.absolute_path) or "config"
    message = " ".join(err.message.split())  # jsonschema quotes the whole offending value: keep one short line
    return f"{path}: {message if len(message) <= 300 else message[:297] + '...'}"
