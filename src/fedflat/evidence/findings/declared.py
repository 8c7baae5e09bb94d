"""The declarations: every `findings:` entry of the configs under config/, checked and expanded.

A finding's cells are its units (what gets a verdict: a method on a column, a block) crossed with its candidates
(the settings compared: an lr grid, the readings of a setting) or its two arms (treatment, baseline). A unit
`each: [[...], [...]]` stands for the product of its axes; a part of an axis may name a `method` (a preset: the
records' `preset`, the page shows its label, the paper's row is that label). Bad input is one line naming the
config, the finding and the key, before anything is computed."""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...core.errors import ConfigError

# The kinds, keys and choices the declarations may use; the mechanisms only the legacy v2 findings used (kind
# adopt_candidate, grid picks, grid and exported-table arms, `versus`, `test: pooled_std`, the adopt and grid layouts,
# `records: all`, ...) were retired with them (docs/architecture.md): naming one is an error here.
KINDS = ("closes_shortfall", "ordering", "paired_claim", "summary", "tables")
FIXED = ("before_finals", "post_hoc")
COMMON = {"id", "question", "kind", "fixed", "fixed_note", "evidence", "catalog", "select", "units", "metric", "seeds",
          "tolerance", "page", "intro", "words", "layout", "paper"}
PAIRED_KEYS = {"treatment", "baseline", "alpha", "family", "failures"}
KIND_KEYS = {"closes_shortfall": {"candidates", "baseline", "baseline_ok", "closes"},
             "ordering": PAIRED_KEYS, "paired_claim": PAIRED_KEYS,  # decide.judge_paired: the paired test, Holm
             "summary": {"of", "untestable", "link"},  # findings/summary.py: counts over groups of paired findings
             "tables": {"tables", "figures", "pattern"}}  # findings/shown.py: a study's tables as its rules rendered them
PAIRED_WORDS = {"supported", "contradicted", "inconclusive", "waits", "unmeasured", "set_aside", "beyond_margin",
                "treatment_failed", "baseline_failed", "pairs_only", "post_hoc"}  # decide.CLAIM_WORDS
WORDS = {"closes_shortfall": {"waits", "no_gap", "closes", "not_closed", "inconclusive", "overshoots"},
         "ordering": PAIRED_WORDS, "paired_claim": PAIRED_WORDS}  # decide.CLOSES_WORDS, words.overshoots
LAYOUT_TOKENS = {"@paper", "@candidates", "@verdict", "@ours", "@interval", "@p", "@detectable"}  # layout._cell
PATTERN_KEYS = {"table", "threshold", "fails", "readings", "intro", "words"}
PATTERN_WORDS = {"fails", "trains", "one", "several", "none"}
SIDES = ("within", "not_below", "not_above")  # |x - paper| <= tol; x >= paper - tol; x <= paper + tol
CHOICES = {"baseline_ok": SIDES, "closes": SIDES,
           "failures": ("rule", "pairs_only")}  # decide.judge_paired: a failed seed decides, or is left out
MERGED = ("where", "paper", "treatment", "baseline")  # unit keys whose mappings merge across parts
_ID = re.compile(r"^[A-Za-z0-9_]+$")


@dataclass(frozen=True)
class Finding:
    id: str
    kind: str
    spec: dict                         # the declaration as written (every optional key read through `get`)
    units: tuple                       # expanded units: {descriptor fields..., where, paper, ...}
    candidates: tuple = ()             # {value, head, name, where, role: baseline | candidate | shown}
    source: Path = field(default=Path("."), compare=False)

    def get(self, key: str, default=None):
        return self.spec.get(key, default)

    @property
    def seeds(self) -> tuple:
        return tuple(self.spec.get("seeds", (0, 1, 2)))

    @property
    def tolerance(self) -> float:
        from ..compare import TOLERANCE

        return float(self.spec.get("tolerance", TOLERANCE))

    @property
    def metric(self) -> str:
        return self.spec.get("metric", "final_acc")

    @property
    def pages(self) -> list[tuple[str, str]]:
        """(file, block) of every page block the finding renders into (`page`: one mapping, or a list of them)."""
        raw = self.spec["page"]
        return [(p["file"], p["block"]) for p in (raw if isinstance(raw, list) else [raw])]

    @property
    def page(self) -> tuple[str, str]:
        return self.pages[0]

    def where(self, key: str) -> str:
        return f"{self.source}: findings.{self.id}.{key}"


def fmt(value) -> str:
    """A setting's value as pages print it: '%g' of a number, the text of anything else."""
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _merge(*parts: dict) -> dict:
    out: dict = {}
    for p in parts:
        for k, v in p.items():
            if k in MERGED and isinstance(v, dict):
                merged = dict(out.get(k) or {})
                for kk, vv in v.items():
                    merged[kk] = {**merged[kk], **vv} if isinstance(vv, dict) and isinstance(merged.get(kk), dict) else vv
                out[k] = merged
            else:
                out[k] = v
    return out


def _method(part: dict) -> dict:
    """A part naming `method: <preset>`: the records' preset, the page's label, the paper's row."""
    if "method" not in part:
        return part
    from ...training.algorithms import PRESETS

    preset = part["method"]
    label = PRESETS.get(preset, key="findings.method").label
    return _merge({"where": {"preset": preset}, "paper": {"row": label}}, {**part, "method": label})


def _units(f: dict, where) -> list[dict]:
    raw = f.get("units") or [{}]
    if not isinstance(raw, list):
        raise ConfigError(f"{where('units')}: a list of units (or of {{each: [axis, ...]}} products)")
    out = []
    for item in raw:
        axes = item.get("each") if isinstance(item, dict) else None
        if axes is None:
            out.append(_method(item))
            continue
        rest = {k: v for k, v in item.items() if k != "each"}
        for combo in itertools.product(*axes):
            out.append(_merge(rest, *map(_method, combo)))
    select = f.get("select") or {}
    return [_merge({"where": {k: v for k, v in select.items() if k not in ("table", "column")},
                    **{k: v for k, v in select.items() if k in ("table", "column")}}, u) for u in out]


def filter_of(field_name: str, value) -> dict:
    """'hparams.rho', 0.1 -> {hparams: {rho: 0.1}}; 'lr', 0.1 -> {lr: 0.1}."""
    head, _, tail = field_name.partition(".")
    return {head: {tail: value}} if tail else {head: value}


def _candidates(raw, f: dict, where) -> list[dict]:
    if raw is None:
        return []
    if isinstance(raw, dict):  # {field, values, head, name}: one candidate per value
        if "field" not in raw or not isinstance(raw.get("values"), list):
            raise ConfigError(f"{where('candidates')}: {{field: <record field>, values: [...]}} or a list of candidates")
        raw = [{"value": v, "where": filter_of(raw["field"], v), "head": raw.get("head", "{value}").replace(
            "{value}", fmt(v)), "name": raw.get("name", "{value}").replace("{value}", fmt(v))} for v in raw["values"]]
    out = []
    for i, c in enumerate(raw):
        if not isinstance(c, dict) or "where" not in c:
            raise ConfigError(f"{where(f'candidates[{i}]')}: a mapping with `where` (a record filter)")
        value = c.get("value", c.get("name", c.get("head")))
        out.append({"value": value, "head": str(c.get("head", fmt(value))), "name": str(c.get("name", fmt(value))),
                    "where": c["where"]})
    return out


def _experiments_named(node) -> list[str]:
    """Every experiment a finding's filters name (under any `where` / `select` / candidate)."""
    if isinstance(node, dict):
        out = [e for e in ([node["experiment"]] if isinstance(node.get("experiment"), str)
                           else node.get("experiment") or []) if isinstance(e, str)]
        return out + [e for v in node.values() for e in _experiments_named(v)]
    return [e for v in node for e in _experiments_named(v)] if isinstance(node, list) else []


def check(f: dict, source: Path, experiments=None) -> Finding:
    """One declaration, checked and expanded; `experiments`: the study's experiment names, when the finding reads
    the evidence of the config it is declared in (an experiment it names must be one of them)."""
    fid = f.get("id") if isinstance(f, dict) else None
    if not isinstance(fid, str) or not _ID.match(fid):
        raise ConfigError(f"{source}: findings: every finding needs an `id` of [A-Za-z0-9_]+ (got {fid!r})")

    def where(key):
        return f"{source}: findings.{fid}.{key}"

    kind = f.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"{where('kind')}: {kind!r} is not one of {', '.join(KINDS)}")
    bad = sorted(set(f) - COMMON - KIND_KEYS[kind])
    if bad:
        raise ConfigError(f"{where(bad[0])}: unknown key for kind {kind}; allowed: "
                          f"{', '.join(sorted(COMMON | KIND_KEYS[kind]))}")
    for key in ("question", "evidence", "page"):
        if not f.get(key):
            raise ConfigError(f"{where(key)}: missing")
    if kind == "tables":
        _check_tables(f, where)
    # a summary counts verdicts and a `tables` block shows tables: neither has a rule of its own, unless a pattern
    if (kind not in ("summary", "tables") or f.get("pattern")) and f.get("fixed") not in FIXED:
        raise ConfigError(f"{where('fixed')}: {f.get('fixed')!r} is not one of {', '.join(FIXED)} (when the rule was "
                          f"written, relative to the final runs it judges; post_hoc where unknown)")
    for p in f["page"] if isinstance(f["page"], list) else [f["page"]]:
        if not isinstance(p, dict) or set(p) != {"file", "block"}:
            raise ConfigError(f"{where('page')}: {{file: <page under the repository>, block: <marker name>}} (or a "
                              f"list of them)")
    for key, allowed in CHOICES.items():
        if key in f and f[key] not in allowed:
            raise ConfigError(f"{where(key)}: {f[key]!r} is not one of {', '.join(allowed)}")
    for e in _experiments_named(f) if experiments is not None else ():
        if e not in experiments:
            raise ConfigError(f"{where('experiment')}: {e!r} is not an experiment of this config")
    _check_text(f, kind, where)
    units = _units(f, where)
    cands = _candidates(f.get("candidates"), f, where)
    if kind == "summary":
        _check_summary(f, where)
    if kind in ("ordering", "paired_claim") and not (f.get("treatment") or all("treatment" in u for u in units)):
        raise ConfigError(f"{where('treatment')}: missing (the arm the claim is about)")
    if kind == "closes_shortfall":
        if not cands:
            raise ConfigError(f"{where('candidates')}: missing (the settings the rule compares)")
        for i, u in enumerate(units):
            if "candidates" in u or "baseline" in u:
                raise ConfigError(f"{where(f'units[{i}]')}: a unit names no candidates or baseline of its own (the "
                                  f"finding's `candidates` and `baseline` hold for every unit)")
        if f.get("baseline") not in [c["value"] for c in cands]:
            raise ConfigError(f"{where('baseline')}: {f.get('baseline')!r} is none of the candidates' values")
    return Finding(fid, kind, f, tuple(units), tuple(cands), source)


def _check_text(f: dict, kind: str, where) -> None:
    """`words`: the kind's own verdict sentences only; `layout`: {columns: [unit field | {field: heading} | token]}."""
    bad = sorted(set(f.get("words") or {}) - WORDS.get(kind, set()))
    if bad:
        raise ConfigError(f"{where(f'words.{bad[0]}')}: not a sentence of kind {kind}; allowed: "
                          f"{', '.join(sorted(WORDS.get(kind, ()))) or 'none'}")
    lay = f.get("layout") or {}
    bad = sorted(set(lay) - {"columns"}) if isinstance(lay, dict) else ["layout"]
    cols = lay.get("columns") or [] if not bad else []
    bad += [c for c in (next(iter(c)) if isinstance(c, dict) else c for c in cols)
            if str(c).startswith("@") and c not in LAYOUT_TOKENS]
    if bad:
        raise ConfigError(f"{where('layout')}: {bad[0]!r} is not one of columns or the tokens "
                          f"{', '.join(sorted(LAYOUT_TOKENS))}")


def _check_tables(f: dict, where) -> None:
    """`tables` and `figures`: names of the study's exported tables and figures; `pattern`: {table, threshold, fails:
    [rows the paper's pattern fails], readings: {name: row it trains}, intro, words: {fails, trains, one, several,
    none}} (findings/shown.py)."""
    for key in ("tables", "figures"):
        names = f.get(key, [] if key == "figures" else None)
        if not isinstance(names, list) or (key == "tables" and not names) or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"{where(key)}: a list of the study's exported {key} by name")
    rule = f.get("pattern")
    if rule is None:
        return
    ok = isinstance(rule, dict) and set(rule) == PATTERN_KEYS and isinstance(rule["threshold"], (int, float)) \
        and isinstance(rule["fails"], list) and isinstance(rule["readings"], dict) and rule["readings"] \
        and isinstance(rule["words"], dict) and set(rule["words"]) == PATTERN_WORDS
    if not ok:
        raise ConfigError(f"{where('pattern')}: {{table, threshold: <number>, fails: [<row>], readings: {{<name>: "
                          f"<row>}}, intro, words: {{{', '.join(sorted(PATTERN_WORDS))}}}}}")


def _check_summary(f: dict, where) -> None:
    """`of`: the groups a summary counts, each {name, where: a filter on the declarations' own keys}; `untestable`:
    the catalog cells no run here can test, {why, catalog, treatment, baselines, cells: [{tables, columns}]}."""
    groups = f.get("of")
    if not isinstance(groups, list) or not groups or not all(
            isinstance(g, dict) and g.get("name") and isinstance(g.get("where"), dict) for g in groups):
        raise ConfigError(f"{where('of')}: a list of groups, each {{name: <shown>, where: {{<declared key>: value}}}}")
    u = f.get("untestable")
    if u is not None:
        keys = {"why", "catalog", "treatment", "baselines", "cells", "name"}
        bad = sorted(set(u) - keys) if isinstance(u, dict) else ["untestable"]
        if bad or not all(u.get(k) for k in keys) or not all(
                isinstance(c, dict) and c.get("tables") and c.get("columns") for c in u["cells"]):
            raise ConfigError(f"{where('untestable')}: {{name, why, catalog, treatment: <row>, baselines: [<row>], "
                              f"cells: [{{tables: [...], columns: [...]}}]}}")


def load_file(path: Path) -> list[Finding]:
    import yaml

    try:
        cfg = yaml.safe_load(Path(path).read_text()) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML{at} ({getattr(exc, 'problem', None) or exc})") from None
    raw = cfg.get("findings") or [] if isinstance(cfg, dict) else []
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: findings: a list of declarations")
    own = set(cfg.get("experiments") or {}) if cfg.get("experiments") else None
    return [check(f, Path(path), own if isinstance(f, dict) and f.get("evidence") == cfg.get("study") else None)
            for f in raw]


def load_all(config_root: Path) -> list[Finding]:
    """Every declaration under `config_root` (each config file in sorted order, then in declaration order); two
    findings with one id are an error."""
    out, seen = [], {}
    for path in sorted(Path(config_root).rglob("*.yaml")):
        if "findings:" not in path.read_text():
            continue
        for f in load_file(path):
            if f.id in seen:
                raise ConfigError(f"{path}: findings.{f.id}: id already declared in {seen[f.id]}")
            seen[f.id] = path
            out.append(f)
    return out


def findings(ctx) -> list[Finding]:
    """Every declaration under the render context's config/, loaded once per render."""
    return ctx.memo("findings", lambda: load_all(ctx.live_config("")))
