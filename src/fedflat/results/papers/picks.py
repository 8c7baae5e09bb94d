"""Settings a grid search of the same study picks: `{pick: <grid_search table>}` as an entry's lr or hyperparameter.

A protocol whose later stages run at the settings its earlier stages select (a radius grid at the lr a first grid
picked; final runs at both picks) is one config, every rule written before any run:

  experiments:
    lr_A_q4:   {..., algorithms: [{preset: fedsam, params: {rho: 0.05}, training: {lr: 0.01}}, ...]}   # the grid
    final_A_q4: {..., algorithms: [{preset: fedsam, params: {rho: 0.05}, training: {lr: {pick: lr_A_q4}}}]}
  tables:
    lr_A_q4: {kind: grid_search, experiments: [lr_A_q4], param: lr, metric: last10_acc}

`{pick: T}` is the value table T's rule (papers.kinds_tuning.grid_choice: the best mean validation score; ties: the
earlier row, then the smaller value; a cell with a diverged seed is never picked) chooses for the entry's method (its
preset's label), once every run of T's experiments has an outcome (its summary.json, or a committed record). Where
every cell of the method's grid diverged, nothing is pickable: the entry takes the grid's smallest value and the
study says so (`study.picks`), so the cell's runs record how the method fares there instead of leaving it blank.

Until T's runs are done the entry waits, and with it its whole experiment (an experiment runs all of its entries or
none), every table or figure that reads a waiting experiment, and every pick of a table that reads one. Nothing here
trains: once a stage's runs have finished, the next `snakemake` invocation resolves its picks and the next stage
joins the DAG (`python -m fedflat.papers picks CONFIG` says what is resolved and what waits). The runs of every
stage come from the same config and commit; a pick is never typed by hand.
"""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

from ...core.errors import ConfigError
from ...pipeline.report.grids import grid_choice
from ...pipeline.study import STUDY_PREPARERS, StudyPreparer, load_study
from ...training.algorithms import PRESETS
from .kinds_tuning import GridSearchTable

SECTIONS = ("training", "params")  # where an entry's picked values live
PLAIN_KEYS = ("study", "data_root", "download", "device", "threads_per_job", "training", "algorithm_params", "uplink",
              "model_params", "tables_dir", "figures_dir", "scale", "scales", "analysis", "reuse_evidence", "numerics",
              "allow_dirty")  # numerics: which records count as a grid's outcomes (fedflat.core.recorded)


def _is_pick(v) -> bool:
    return isinstance(v, dict) and "pick" in v


def _entry_picks(entry) -> list[tuple[str, str, str]]:
    """(section, key, table) of every pick of one algorithm entry."""
    if not isinstance(entry, dict):
        return []
    out = []
    for section in SECTIONS:
        values = entry.get(section)
        if not isinstance(values, dict):  # a bad section is the study's to name (study._algo_entry)
            continue
        for k, v in values.items():
            if _is_pick(v):
                bad = sorted(set(v) - {"pick"})
                if bad or not isinstance(v["pick"], str):
                    raise ConfigError(f"{entry.get('preset')}.{section}.{k}: a pick is {{pick: <grid_search table>}}; "
                                      f"got {v!r}")
                out.append((section, k, v["pick"]))
    return out


def has_picks(config: dict) -> bool:
    return any(_entry_picks(a) for exp in (config.get("experiments") or {}).values() if isinstance(exp, dict)
               for a in (exp.get("algorithms") or []))


def _exps(config: dict) -> dict:
    """The experiments that are mappings (a malformed one is the study's to name, study._expand)."""
    return {e: x for e, x in (config.get("experiments") or {}).items() if isinstance(x, dict)}


def _label(entry) -> str:
    return PRESETS.get(entry["preset"], key="picks").label


def _reads(spec) -> set[str]:
    """Every experiment name a table or figure entry names (experiment, experiments, overlay_experiment, at any
    depth); a templated name ('{expA}_q4') is not resolvable here and is skipped."""
    out: set[str] = set()
    if isinstance(spec, dict):
        for k, v in spec.items():
            if k in ("experiment", "overlay_experiment") and isinstance(v, str) and "{" not in v:
                out.add(v)
            elif k == "experiments" and isinstance(v, list):
                out |= {x for x in v if isinstance(x, str)}
            else:
                out |= _reads(v)
    elif isinstance(spec, list):
        for v in spec:
            out |= _reads(v)
    return out


def _check_tables(config: dict) -> dict[str, dict]:
    """The grid_search tables the picks name, every name checked (one line naming the key)."""
    tables = config.get("tables") or {}
    named = {t for exp in _exps(config).values() for a in exp.get("algorithms") or [] for _, _, t in _entry_picks(a)}
    for t in sorted(named):
        if t not in tables:
            raise ConfigError(f"picks: table {t!r} is not a table of this config (a pick names a grid_search table)")
        if tables[t].get("kind") != "grid_search":
            raise ConfigError(f"tables.{t}: a pick reads a grid_search table, not {tables[t].get('kind')!r}")
    return {t: tables[t] for t in named}


def _waiting(config: dict, resolved: dict) -> set[str]:
    """Experiments with a pick not resolved yet."""
    return {e for e, exp in _exps(config).items()
            if any(t not in resolved for a in exp.get("algorithms") or [] for _, _, t in _entry_picks(a))}


def _substitute(config: dict, resolved: dict) -> None:
    """Write every resolved pick into its entry (a method absent from the table's grid is an error)."""
    for ename, exp in _exps(config).items():
        for a in exp.get("algorithms") or []:
            for section, k, t in _entry_picks(a):
                if t not in resolved:
                    continue
                label = _label(a)
                if label not in resolved[t]:
                    raise ConfigError(f"experiments.{ename}.algorithms.{a['preset']}.{section}.{k}: table {t} "
                                      f"has no grid of {label}")
                a[section][k] = resolved[t][label]["value"]


def _done(study, rids) -> bool:
    """Every run has an outcome: a summary.json in its directory, or a committed record."""
    return all(Path(study.run_dir(r), "summary.json").exists() for r in study.unrecorded(list(rids)))


def _choose(study, name: str, provisional: bool = False) -> dict:
    """{method label: {value, score, fallback, provisional}} by the grid_search table's own rule; `provisional`:
    the grid's smallest value for every method, without reading a run (a plan of the stages to come)."""
    m = GridSearchTable.manifest(study, name, study.tables[name])
    values = {}
    for e in m["entries"]:
        values.setdefault(e["method"], set()).add(e["value"])
    if provisional:
        return {label: {"value": min(v), "score": None, "fallback": False, "provisional": True}
                for label, v in values.items()}
    out = {}
    for label, c in grid_choice(m).items():
        out[label] = ({"value": c["value"], "score": c["score"], "fallback": False, "provisional": False}
                      if c is not None else
                      {"value": min(values[label]), "score": None, "fallback": True, "provisional": False})
    return out


def _partial(config: dict, waiting: set[str], tables: dict) -> dict:
    """The plain study of the experiments that do not wait, with the pick tables that read none of the waiting."""
    cfg = {k: copy.deepcopy(v) for k, v in config.items() if k in PLAIN_KEYS}
    cfg["experiments"] = {e: copy.deepcopy(x) for e, x in config["experiments"].items() if e not in waiting}
    cfg["tables"] = {t: copy.deepcopy(s) for t, s in tables.items()}
    return cfg


def resolve(config: dict, provisional: bool = False) -> tuple[dict, dict]:
    """(the config with every resolvable pick written in and every waiting experiment, table and figure left out,
    {resolved: {table: {method: {value, score, fallback, provisional}}}, waiting: {experiment: [tables it waits
    for]}, held: [tables and figures left out]}). `provisional`: a grid whose runs are not done yet takes its smallest
    values instead of waiting, so every stage expands (a plan of the whole protocol; never a run's settings)."""
    config = copy.deepcopy(config)
    tables = _check_tables(config)
    resolved: dict[str, dict] = {}
    while True:
        waiting = _waiting(config, resolved)
        ready = {t: s for t, s in tables.items() if t not in resolved and not (_reads(s) & waiting)}
        if not ready:
            break
        study = load_study(_partial(config, waiting, ready))
        new = {}
        for t in ready:
            done = _done(study, (rid for e in study.tables[t]["experiments"] for rid, _ in study.experiments[e]))
            if done or provisional:
                new[t] = _choose(study, t, provisional=not done)
        if not new:
            break
        resolved.update(new)
        _substitute(config, new)
    waiting = _waiting(config, resolved)
    held = []
    for section in ("tables", "figures", "pending_tables", "pending_figures"):
        for name in list(config.get(section) or {}):
            if _reads(config[section][name]) & waiting:
                held.append(f"{section}.{name}")
                del config[section][name]
    wait_for = {e: sorted({t for a in config["experiments"][e].get("algorithms") or [] for _, _, t in _entry_picks(a)
                           if t not in resolved}) for e in sorted(waiting)}
    for e in waiting:
        del config["experiments"][e]
    if not config["experiments"]:
        raise ConfigError("picks: every experiment waits for a pick; a first stage needs settings of its own")
    return config, {"resolved": resolved, "waiting": wait_for, "held": held}


def _prepare(config: dict) -> tuple[dict, dict]:
    config, state = resolve(config)
    if state["waiting"]:
        print(f"fedflat: note: {len(state['waiting'])} experiments wait for a pick "
              f"({', '.join(sorted({t for ts in state['waiting'].values() for t in ts}))}); they join once those "
              f"grids' runs are done (python -m fedflat.papers picks)", file=sys.stderr)
    fallback = [f"{t}: {m}" for t, ms in state["resolved"].items() for m, c in ms.items() if c["fallback"]]
    if fallback:
        print(f"fedflat: note: every cell diverged, the grid's smallest value is taken: {'; '.join(fallback)}",
              file=sys.stderr)
    return config, state


def _attach(study, state) -> None:
    study.picks = state


def render(state: dict) -> str:
    """What `python -m fedflat.papers picks CONFIG` prints: each resolved pick, then what waits."""
    lines = ["| table | method | pick | validation score |", "|---|---|---|---|"]
    for t, ms in sorted(state["resolved"].items()):
        for m, c in ms.items():
            score = ("provisional (not run yet): the grid's smallest value" if c["provisional"] else
                     "every cell diverged: the grid's smallest value" if c["fallback"] else f"{c['score']:.2f} %")
            lines.append(f"| `{t}` | {m} | {json.dumps(c['value'])} | {score} |")
    lines += ["", f"Waiting experiments: {len(state['waiting'])}"]
    lines += [f"- `{e}` waits for {', '.join(f'`{t}`' for t in ts)}" for e, ts in state["waiting"].items()]
    if state["held"]:
        lines += ["", "Held back until their experiments join: " + ", ".join(f"`{h}`" for h in state["held"])]
    return "\n".join(lines)


# Before the catalog preparer (order 1), after none: a config with picks resolves them first.
STUDY_PREPARERS.add("picks", StudyPreparer(applies=has_picks, prepare=_prepare, attach=_attach, order=0))
