"""Property: any config built from the tiny study by changing, adding or deleting one value anywhere (any JSON/YAML
kind: null, booleans, huge or negative integers, NaN and infinite floats, shell metacharacters, `../`, lists and
mappings) either validates or fails with one ConfigError line naming a key; never a traceback. The same for the
run spec `fedflat train --spec` takes. Derandomized with a fixed number of examples, so CI sees the same cases."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from fedflat.core.errors import ConfigError
from fedflat.pipeline.inputs import check_run_spec, validate_config
from fedflat.core.spec import TRAINING_DEFAULTS
from fedflat.pipeline.study import EXPERIMENT_KEYS, TOP_KEYS

from faults.helpers import make_spec

REPO = Path(__file__).resolve().parents[2]
TINY = yaml.safe_load((REPO / "config/tiny.yaml").read_text())
SETTINGS = settings(max_examples=400, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

WORDS = ["$(touch x)", "`touch x`", "a;b", "../x", "..", "", " ", "iid", "dir0.1", "dir-1", "shards0", "fedavg",
         "digits", "mlp", "main", "accuracy", "convergence", "cuda", "cpu", "tiny", "paper", "topk", "sharpness",
         "nan", "inf", "1e309", "é|x"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70), st.integers(-3, 12),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6), st.sampled_from(WORDS))
KEYS = st.sampled_from(sorted({*TOP_KEYS, *EXPERIMENT_KEYS, *TRAINING_DEFAULTS, "kind", "experiment", "preset",
                               "params", "label", "hooks", "rho", "seed", "x"}))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(KEYS | st.text(max_size=4), inner, max_size=3)),
                      max_leaves=5)


def _paths(node, prefix=()) -> list[tuple]:
    """Every place in a config: each key and list item, and a new key under every mapping."""
    out = [prefix + ("<new>",)] if isinstance(node, dict) else []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        out.append(prefix + (k,))
        out += _paths(v, prefix + (k,))
    return out


CONFIG_PATHS = _paths(TINY)
SPEC = make_spec("fedsam", rounds=3).to_dict()
SPEC_PATHS = _paths(SPEC)


def _set(base, path, value, new_key, delete: bool):
    cfg = copy.deepcopy(base)
    node = cfg
    for k in path[:-1]:
        node = node[k]
    last = new_key if path[-1] == "<new>" else path[-1]
    if delete and path[-1] != "<new>":
        del node[last]
    else:
        node[last] = value
    return cfg, last


def _names_a_key(msg: str, path: tuple, last) -> bool:
    """The line names a key: a part of the changed path, or it opens with a key path (`training.lr: ...`)."""
    parts = {str(p) for p in (*path[:-1], last)}
    return any(p and p in msg for p in parts) or re.match(r"^(--spec)?[\w.\[\]'-]+: ", msg) is not None


def _check(validate, base, path, value, new_key, delete):
    cfg, last = _set(base, path, value, new_key, delete)
    try:
        validate(cfg)
    except ConfigError as exc:
        msg = str(exc)
        assert "\n" not in msg and 0 < len(msg) < 2000, msg
        assert _names_a_key(msg, path, last), f"{msg!r} names no key (changed {'.'.join(map(str, path))})"


@SETTINGS
@given(path=st.sampled_from(CONFIG_PATHS), value=VALUES, new_key=KEYS, delete=st.booleans())
def test_any_config_validates_or_names_a_key(path, value, new_key, delete):
    _check(validate_config, TINY, path, value, new_key, delete)


@SETTINGS
@given(path=st.sampled_from(SPEC_PATHS), value=VALUES, new_key=KEYS, delete=st.booleans())
def test_any_run_spec_validates_or_names_a_key(path, value, new_key, delete):
    _check(lambda d: check_run_spec(json.loads(json.dumps(d, default=str))), SPEC, path, value, new_key, delete)
