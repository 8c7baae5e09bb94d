"""What every entry point checks before it computes, so that the workflow, `fedflat validate` and `fedflat train`
refuse the same inputs with the same one line naming the key:

  validate_config  a study config: the workflow's JSON schema (workflow/schemas/config.schema.yaml), then the
                   study's expansion (fedflat.pipeline.study.load_study), which checks every name and number;
  check_run_spec   a run spec (`fedflat train --spec`, what the train rule passes): its names against the
                   registries, its training settings with check_training, its hyperparameters with the preset's
                   domains, before any data is loaded (a spec with rounds -4 never trains to "completed").
"""
from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from ..core.spec import RunSpec, check_training

# the workflow's schema: one file, read by the Snakefile (workflow/rules/common.smk) and by the CLI alike
SCHEMA_PATH = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"


def load_schema(path: str | Path | None = None) -> dict:
    import yaml

    path = Path(path or SCHEMA_PATH)
    if not path.exists():
        raise ConfigError(f"config schema missing: {path} (fedflat validates a study from a repository checkout)")
    return yaml.safe_load(path.read_text())


def validate_config(config: Any, schema_path: str | Path | None = None):
    """The expanded Study of a config that passes the schema and the study's checks; else one ConfigError line."""
    import jsonschema

    from .study import load_study, schema_error

    if not isinstance(config, dict):
        raise ConfigError(f"config: must be a mapping of keys (study, experiments, ...), got {type(config).__name__}")
    schema = load_schema(schema_path)
    if next(jsonschema.Draft202012Validator(schema).iter_errors(config), None) is not None:
        raise ConfigError(schema_error(config, schema))
    return load_study(config)


_REQUIRED = ("dataset", "partition", "model", "algorithm", "seed")
_MAPPINGS = ("hparams", "model_kwargs", "training", "analysis", "uplink")


def check_run_spec(d: Any, key: str = "--spec") -> RunSpec:
    """A RunSpec from its JSON form, every field checked; the spec itself is kept as given (its run id unchanged)."""
    from ..training.algorithms import PRESETS
    from ..training.data import DATASETS
    from ..training.data.partition import parse_partition
    from ..training.models import MODELS
    from .study import check_hooks, check_uplink

    if not isinstance(d, dict):
        raise ConfigError(f"{key}: must be a JSON object with keys {', '.join(_REQUIRED)}, ...")
    allowed = {f.name for f in fields(RunSpec)}
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise ConfigError(f"{key}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(allowed))}")
    missing = [k for k in _REQUIRED if k not in d]
    if missing:
        raise ConfigError(f"{key}: missing key {missing[0]!r}")
    for k in _MAPPINGS:
        if not isinstance(d.get(k, {}), dict):
            raise ConfigError(f"{key}.{k}: must be a mapping, got {d[k]!r}")
    DATASETS.get(d["dataset"], key=f"{key}.dataset")
    MODELS.get(d["model"], key=f"{key}.model")
    preset = PRESETS.get(d["algorithm"], key=f"{key}.algorithm")
    if d["partition"] != "natural":
        if not isinstance(d["partition"], str):
            raise ConfigError(f"{key}.partition: must be a partition name such as iid or dir0.1-rep, "
                              f"got {d['partition']!r}")
        try:
            parse_partition(d["partition"])
        except ConfigError as exc:
            raise ConfigError(f"{key}.partition: {exc}") from None
    seed = d["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"{key}.seed: must be an integer >= 0, got {seed!r}")
    training = check_training(d.get("training", {}), key=f"{key}.training")
    preset.resolve(d.get("hparams", {}), key=f"{key}.hparams")
    preset.check_single_decay(d.get("hparams", {}), training, key=f"{key}.training")
    check_hooks({"hooks": d.get("analysis", {})}, None, key, hooks_key=f"{key}.analysis")
    if d.get("uplink"):
        check_uplink(dict(d["uplink"]), f"{key}.uplink.kind")
    return RunSpec.from_dict(d)
