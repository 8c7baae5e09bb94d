"""What each paper states about its runs, and the check that our catalog runs exactly that.

`config/papers/settings/<paper>.yaml` is a machine-readable statement of a paper's settings: per
group of catalog experiments (fnmatch globs on experiment names), the training settings, partition,
seeds, data, model, uplink and every method's hyperparameters, each value with the sentence of the
paper it comes from:

    scopes:
      - experiments: ["t2A_*", "t2B_*"]           # later scopes win over earlier ones, key by key
        training:
          batch_size: {value: 128, source: "Sec. VI-A: 'the batch size is 128'"}
        partition: {value: shards1, source: "Sec. VI-A: Path(1) ..."}
        seeds: {value: [0, 1, 2], source: "Sec. VI-A: 'repeated 3 times'"}
        algorithms:
          fedsynsam:
            beta: {value: 0.9, source: "Sec. VI-A"}
            rho: {sweep: [0.001, 0.01], source: "Fig. 5"}   # the set of values over the experiment's runs
            training: {weight_decay: {value: 0, source: ...}}  # per-method training settings
            uplink: {value: {other_vectors: raw}, source: ...}  # keys over the scope's uplink, for this method

A `source` that starts with "unstated:" marks a value the paper leaves open; the rest of the
sentence says how ours was chosen (a validation split, another paper's code, ...).

`check(paper)` resolves every run of the catalog at `scale: paper` and returns one `Finding` per
difference (target, key, paper's value, ours) and per required setting that no scope states, so a
drifting catalog fails CI with the target named. Required per run: REQUIRED_TRAINING (local_steps
or local_epochs), the partition, the seeds, and every hyperparameter a method's preset sets by
default or the catalog overrides.
"""
from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ...core.errors import ConfigError
from ...pipeline.scale import experiment_targets
from ...pipeline.study import load_config_file, load_study
from ...training.algorithms import PRESETS
from ...training.data.partition import canonical_partition

REQUIRED_TRAINING = ("num_clients", "participation", "rounds", "batch_size", "lr", "lr_decay", "weight_decay",
                     "local_momentum")
STEP_KEYS = ("local_steps", "local_epochs")  # one of them must be stated
SCOPE_KEYS = {"experiments", "training", "partition", "seeds", "datasets", "models", "uplink", "algorithms", "note"}
UNSTATED = "unstated:"


@dataclass(frozen=True)
class Stated:
    value: Any
    source: str
    sweep: bool = False  # value is the set of values over the experiment's runs

    @property
    def from_paper(self) -> bool:
        return not self.source.startswith(UNSTATED)


@dataclass(frozen=True)
class Finding:
    target: str
    experiment: str
    run: str
    key: str
    paper: Any
    ours: Any
    source: str

    def __str__(self) -> str:
        if self.paper is _MISSING:
            return f"{self.target} [{self.experiment}] {self.run}: {self.key} is not stated (ours: {self.ours!r})"
        return (f"{self.target} [{self.experiment}] {self.run}: {self.key}: paper {self.paper!r} ({self.source}), "
                f"ours {self.ours!r}")


_MISSING = object()


def statement_path(paper: str, root: Path | str = "config/papers") -> Path:
    return Path(root) / "settings" / f"{paper}.yaml"


def _stated(raw: Any, key: str) -> Stated:
    if not isinstance(raw, dict) or "source" not in raw or ("value" in raw) == ("sweep" in raw):
        raise ConfigError(f"{key}: must be {{value: V, source: '...'}} or {{sweep: [..], source: '...'}}, got {raw!r}")
    src = raw["source"]
    if not isinstance(src, str) or len(src.strip()) < 3:
        raise ConfigError(f"{key}.source: must name the paper's section (or 'unstated: how it was chosen')")
    if "sweep" in raw:
        if not isinstance(raw["sweep"], list) or not raw["sweep"]:
            raise ConfigError(f"{key}.sweep: must be a non-empty list")
        return Stated(raw["sweep"], src, sweep=True)
    return Stated(raw["value"], src)


def load_statement(paper: str, root: Path | str = "config/papers") -> list[dict]:
    """The scopes of a paper's statement, each value parsed into `Stated` (errors name the key)."""
    import yaml

    path = statement_path(paper, root)
    if not path.exists():
        raise ConfigError(f"settings statement not found: {path}")
    doc = yaml.safe_load(path.read_text()) or {}
    scopes = doc.get("scopes")
    if not isinstance(scopes, list) or not scopes:
        raise ConfigError(f"{path}: scopes: must be a non-empty list")
    out = []
    for i, sc in enumerate(scopes):
        key = f"{path.name}: scopes[{i}]"
        if not isinstance(sc, dict):
            raise ConfigError(f"{key}: must be a mapping")
        bad = sorted(set(sc) - SCOPE_KEYS)
        if bad:
            raise ConfigError(f"{key}: unknown key {bad[0]!r}; allowed: {', '.join(sorted(SCOPE_KEYS))}")
        globs = sc.get("experiments")
        globs = [globs] if isinstance(globs, str) else globs
        if not isinstance(globs, list) or not globs:
            raise ConfigError(f"{key}.experiments: a glob or a list of globs on the catalog's experiment names")
        parsed: dict[str, Any] = {"experiments": globs, "training": {}, "algorithms": {}}
        for k, v in (sc.get("training") or {}).items():
            parsed["training"][k] = _stated(v, f"{key}.training.{k}")
        for k in ("partition", "seeds", "datasets", "models", "uplink"):
            if k in sc:
                parsed[k] = _stated(sc[k], f"{key}.{k}")
        for preset, hps in (sc.get("algorithms") or {}).items():
            entry: dict[str, Any] = {"training": {}}
            for k, v in (hps or {}).items():
                if k == "training":
                    entry["training"] = {tk: _stated(tv, f"{key}.algorithms.{preset}.training.{tk}")
                                         for tk, tv in (v or {}).items()}
                else:
                    entry[k] = _stated(v, f"{key}.algorithms.{preset}.{k}")
            parsed["algorithms"][preset] = entry
        out.append(parsed)
    return out


def _matches(name: str, globs: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, g) for g in globs)


def _resolve_for(scopes: list[dict], experiment: str) -> dict:
    """The merged statement for one experiment: later scopes override earlier ones, key by key."""
    res: dict[str, Any] = {"training": {}, "algorithms": {}}
    for sc in scopes:
        if not _matches(experiment, sc["experiments"]):
            continue
        res["training"].update(sc["training"])
        for k in ("partition", "seeds", "datasets", "models", "uplink"):
            if k in sc:
                res[k] = sc[k]
        for preset, hps in sc["algorithms"].items():
            cur = res["algorithms"].setdefault(preset, {"training": {}})
            cur["training"].update(hps["training"])
            cur.update({k: v for k, v in hps.items() if k != "training"})
    return res


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _same_set(stated: list, ours: list) -> bool:
    return len(stated) == len(ours) and all(any(_same(s, o) for o in ours) for s in stated)


def check(paper: str, root: Path | str = "config/papers") -> list[Finding]:
    """Every difference between the paper's statement and the catalog's runs at scale: paper."""
    root = Path(root)
    scopes = load_statement(paper, root)
    config = load_config_file(root / f"{paper}.yaml")
    targets = experiment_targets(config)
    config["scale"] = "paper"
    study = load_study(config)
    findings: list[Finding] = []
    used = [False] * len(scopes)
    for ename, entries in study.experiments.items():
        for i, sc in enumerate(scopes):
            used[i] |= _matches(ename, sc["experiments"])
        st = _resolve_for(scopes, ename)
        target = ", ".join(targets.get(ename, [])) or "(no target)"

        def add(run, key, paper_v, ours, source=""):
            findings.append(Finding(target, ename, run, key, paper_v, ours, source))

        specs = [study.runs[rid] for rid, _ in entries]
        labels = [lab for _, lab in entries]
        seeds = sorted({s.seed for s in specs})
        if "seeds" not in st:
            add("*", "seeds", _MISSING, seeds)
        elif not _same_set(st["seeds"].value, seeds):
            add("*", "seeds", st["seeds"].value, seeds, st["seeds"].source)
        for k in ("datasets", "models"):
            ours = sorted({getattr(s, k[:-1]) for s in specs})
            if k in st and not _same_set(st[k].value, ours):
                add("*", k, st[k].value, ours, st[k].source)
        by_preset: dict[str, list] = {}
        for spec, lab in zip(specs, labels):
            by_preset.setdefault(spec.algorithm, []).append(spec)
        for spec, lab in zip(specs, labels):
            run = f"{lab['algorithm']} seed{spec.seed}"
            alg = st["algorithms"].get(spec.algorithm, {"training": {}})
            training = {**st["training"], **alg["training"]}
            for k in REQUIRED_TRAINING:
                if k not in training:
                    add(run, f"training.{k}", _MISSING, spec.training.get(k))
            if not any(k in training for k in STEP_KEYS):
                add(run, "training.local_steps", _MISSING, spec.training.get("local_steps"))
            for k, s in training.items():
                if s.sweep:
                    continue
                ours = spec.training.get(k, _MISSING)
                if ours is _MISSING:
                    ours = None
                want = s.value
                if k == "dirichlet_variant" and not spec.partition.startswith("dir"):
                    continue  # only Dirichlet partitions read it
                if not _same(want, ours):
                    add(run, f"training.{k}", want, ours, s.source)
            if "partition" not in st:
                add(run, "partition", _MISSING, spec.partition)
            else:
                s = st["partition"]
                values = s.value if s.sweep else [s.value]
                canon = [canonical_partition(str(v), spec.training["dirichlet_variant"]) for v in values]
                if spec.partition not in canon:
                    add(run, "partition", s.value, spec.partition, s.source)
            if "uplink" in st or "uplink" in alg:  # a method's own keys (e.g. how it sends a second vector) on top
                base_up, own_up = st.get("uplink"), alg.get("uplink")
                want = {**((base_up.value if base_up else None) or {}), **((own_up.value if own_up else None) or {})}
                if not _same(want, spec.uplink or {}):
                    source = "; ".join(x.source for x in (base_up, own_up) if x is not None)
                    add(run, "uplink", want, spec.uplink, source)
            preset = PRESETS.get(spec.algorithm)
            base = preset.resolve({})
            required = set(preset.defaults) | {k for k, v in spec.hparams.items() if not _same(base.get(k), v)}
            for k in sorted(required):
                if k not in alg:
                    add(run, f"algorithms.{spec.algorithm}.{k}", _MISSING, spec.hparams.get(k))
            for k, s in alg.items():
                if k in ("training", "uplink") or s.sweep:
                    continue
                if k not in spec.hparams:
                    add(run, f"algorithms.{spec.algorithm}.{k}", s.value, "(no such hyperparameter)", s.source)
                elif not _same(s.value, spec.hparams[k]):
                    add(run, f"algorithms.{spec.algorithm}.{k}", s.value, spec.hparams[k], s.source)
        for name, group in by_preset.items():  # sweeps: the set of values over the experiment's runs
            alg = st["algorithms"].get(name, {"training": {}})
            for k, s in alg.items():
                if k != "training" and s.sweep:
                    ours = sorted({g.hparams.get(k) for g in group}, key=str)
                    if not _same_set(s.value, ours):
                        add(f"{name} (all runs)", f"algorithms.{name}.{k}", s.value, ours, s.source)
            for k, s in {**st["training"], **alg["training"]}.items():
                if s.sweep:
                    ours = sorted({g.training.get(k) for g in group}, key=str)
                    if not _same_set(s.value, ours):
                        add(f"{name} (all runs)", f"training.{k}", s.value, ours, s.source)
    for i, sc in enumerate(scopes):
        if not used[i]:
            findings.append(Finding("(statement)", "-", "-", f"scopes[{i}].experiments", sc["experiments"],
                                    "matches no experiment of the catalog", ""))
    return findings


def render_markdown(paper: str, root: Path | str = "config/papers") -> str:
    """The statement as a table: scope, key, value, source (unstated choices flagged)."""
    rows = ["| experiments | setting | value | source |", "|---|---|---|---|"]
    for sc in load_statement(paper, root):
        scope = ", ".join(f"`{g}`" for g in sc["experiments"])
        items: list[tuple[str, Stated]] = [(f"training.{k}", v) for k, v in sc["training"].items()]
        items += [(k, sc[k]) for k in ("partition", "seeds", "datasets", "models", "uplink") if k in sc]
        for preset, hps in sc["algorithms"].items():
            items += [(f"{preset}.training.{k}", v) for k, v in hps["training"].items()]
            items += [(f"{preset}.{k}", v) for k, v in hps.items() if k != "training"]
        for key, s in items:
            val = ("sweep " if s.sweep else "") + str(s.value)
            src = s.source.replace("|", "\\|")
            rows.append(f"| {scope} | `{key}` | {val} | {'**' + src + '**' if not s.from_paper else src} |")
    return "\n".join(rows) + "\n"
