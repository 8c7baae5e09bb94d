"""Which committed records a finding reads, by their fields and never by their labels.

A filter such as {experiment: dyna_A_q4, preset: dynafed, lr: 0.1, hparams: {dyna_lr: 0.001},
uplink: {error_feedback: null}} holds for a record whose every named field has that value: a list is any of its
values, null is absent; `experiment` holds for a record of that experiment (records list theirs in `experiments`);
`hparams` and `uplink` name keys of the record's JSON settings. A cell is the records of one filter: the metric of
each seed that completed, how many seeds did not, and the records themselves."""
from __future__ import annotations

import json
import math

import numpy as np

from ...core.errors import ConfigError

JSON_FIELDS = ("hparams", "uplink")


def _parsed(runs, name: str) -> list:
    """The experiments (as sets) or a JSON settings column (as dicts) of every record: the columns `prepared`
    added, or parsed here."""
    if f"_{name}" in runs.columns:
        return list(runs[f"_{name}"])
    if name == "experiments":
        return [set(str(e).split(";")) for e in runs["experiments"]]
    return [json.loads(v) if isinstance(v, str) and v else {} for v in runs[name]]


def prepared(runs):
    """The records with their experiments and JSON settings parsed once, as columns (a slice keeps them)."""
    return runs.assign(**{f"_{n}": _parsed(runs, n) for n in ("experiments", *JSON_FIELDS)})


def _same(x, want) -> bool:
    if isinstance(want, list):
        return any(_same(x, w) for w in want)
    if want is None:
        return x is None or (isinstance(x, float) and math.isnan(x))
    if isinstance(want, bool) or isinstance(x, bool):
        return x is want
    if isinstance(want, (int, float)):
        try:
            return float(x) == float(want)
        except (TypeError, ValueError):
            return False
    return str(x) == str(want)


def mask(runs, where: dict, key: str = "where") -> np.ndarray:
    """The records `where` holds for (a boolean per row)."""
    ok = np.ones(len(runs), dtype=bool)
    for name, want in (where or {}).items():
        if name == "experiment":
            wanted = set(want if isinstance(want, list) else [want])
            ok &= np.array([bool(wanted & e) for e in _parsed(runs, "experiments")], dtype=bool)
        elif name in JSON_FIELDS:
            if not isinstance(want, dict):
                raise ConfigError(f"{key}.{name}: a mapping of its keys, e.g. {{rho: 0.05}}")
            ok &= np.array([all(_same(d.get(k), v) for k, v in want.items()) for d in _parsed(runs, name)], dtype=bool)
        elif name in runs.columns:
            ok &= np.array([_same(x, want) for x in runs[name]], dtype=bool)
        else:
            raise ConfigError(f"{key}.{name}: no such record field (results/evidence/<study>/runs.csv columns)")
    return ok


def cell(runs, where: dict | list, metric: str, seeds, key: str = "where") -> dict:
    """{acc: [metric of each completed seed], diverged: seeds that did not complete, seeds: seeds recorded,
    rows: the records} of the records every filter of `where` (one, or a list: a unit's and its candidate's) holds
    for among `seeds`; two records of one seed are an error (the filters do not name one setting)."""
    ok = runs["seed"].isin(list(seeds)).to_numpy().copy()
    for w in where if isinstance(where, list) else [where]:
        ok &= mask(runs, w, key)
    sub = runs[ok]
    if sub["seed"].duplicated().any():
        raise ConfigError(f"{key}: {int(sub['seed'].duplicated().sum())} records share a seed; name the setting "
                          f"that tells them apart (e.g. the experiment)")
    vals = sub[metric].astype(float) if metric in sub.columns else sub["seed"] * math.nan
    completed = (sub["status"] == "completed").to_numpy()
    done = completed & np.isfinite(vals).to_numpy()
    # a completed run whose metric is not measured yet (its Hessian job still to run) is neither a value nor a
    # failure: the cell is not complete until it is (complete())
    return {"acc": [float(v) for v in vals[done]], "diverged": int((~completed).sum()), "seeds": len(sub),
            "rows": sub, "need": len(seeds), "unmeasured": int((completed & ~done).sum()),
            "per_seed": {int(s): float(v) for s, v in zip(sub["seed"][done], vals[done])}}


def mean(c: dict | None) -> float | None:
    """The mean over seeds of a cell whose every seed completed; None otherwise (never within, never closes)."""
    if c is None or c["diverged"] or c["unmeasured"] or c["seeds"] < c["need"]:
        return None
    return sum(c["acc"]) / len(c["acc"])


def complete(*cells) -> bool:
    """Every cell recorded for every seed (a diverged seed counts as recorded) and every completed seed measured."""
    return all(c is not None and c["seeds"] >= c["need"] and not c["unmeasured"] for c in cells)


def cell_text(c: dict | None) -> str:
    if c is None or (not c["seeds"] and not c["acc"]):
        return "not run yet"
    m = mean(c)
    if m is not None:
        return f"{m:.2f}"
    done = ", ".join(f"{a:.2f}" for a in c["acc"])
    if not c["diverged"]:
        return f"{c['seeds']} of {c['need']} seeds: {done}"
    return f"{c['diverged']}/{c['seeds']} seeds diverged" + (f" (completed: {done})" if done else "")


def published(ctx, f, paper: dict) -> float | None:
    """The paper's mean of one cell of a catalog table: paper = {table, row, column} (column: a column group), from
    config/papers/<catalog>.yaml."""
    from ...results.papers.published import parse_published

    catalog = paper.get("catalog") or f.get("catalog")
    key = f.where("paper")
    if not catalog or not all(paper.get(k) for k in ("table", "row", "column")):
        raise ConfigError(f"{key}: {{table, row, column}} of the catalog named by `catalog`; got {paper}")
    tables = ctx.memo(("catalog", catalog), lambda: catalog_tables(ctx, catalog, key))
    spec = tables.get(paper["table"])
    if spec is None:
        raise ConfigError(f"{key}.table: {paper['table']!r} is not a table of config/papers/{catalog}.yaml")
    row = (spec.get("published") or {}).get(paper["row"])
    groups = [c.get("group") for c in spec.get("columns") or []]
    if row is None:
        raise ConfigError(f"{key}.row: {paper['row']!r} has no published values in {paper['table']}")
    if paper["column"] not in groups:
        raise ConfigError(f"{key}.column: {paper['column']!r} is none of {paper['table']}'s columns: {groups}")
    return parse_published(row[groups.index(paper["column"])]).mean


def catalog_tables(ctx, catalog: str, key: str) -> dict:
    import yaml

    path = ctx.config(f"papers/{catalog}.yaml")
    if not path.exists():
        raise ConfigError(f"{key}: no catalog {path}")
    cfg = yaml.safe_load(path.read_text()) or {}
    return {**(cfg.get("pending_tables") or {}), **(cfg.get("tables") or {})}  # a pending table is promoted
