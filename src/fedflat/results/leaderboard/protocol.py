"""The leaderboard protocol: one data set, model, budget and tuning rule for every global-model method.

config/leaderboard.yaml is a study config whose `leaderboard:` section stands in for `experiments:`:

  leaderboard:
    dataset: fmnist             # a GPU box: --config leaderboard='{dataset: cifar10, model: resnet18}'
    model: mlp2
    partitions: [iid, dir0.3, dir0.1]
    seeds: [0, 1, 2, 3, 4]      # paired: a seed fixes the data, sampling and initialisation for every method
    tuning:
      partitions: [dir0.3]      # where the grid runs; a partition not listed takes the first one's choice
      seeds: [0]
      rounds: 50                # the shorter horizon
      holdout: 0.1              # validation split carved from every client's training samples (never test)
      metric: last10_acc        # selection criterion on the validation split
      lr: [0.03, 0.1, 0.3, 1.0]  # the local-lr grid, the same for every method
      budget: 4                 # at most this many points in a method's own grid (the product of its lists)
    methods:                    # every preset that trains one global model, with its key hyperparameters' grid
      fedavg: {}
      fedsam: {rho: [0.01, 0.05, 0.1, 0.5]}
    excluded: {preset: reason}  # every other registered preset, with the reason it is not ranked

`prepare` turns it, at parse time, into one tuning experiment per (tuning partition, method) -- the lr grid
times the method's grid, with `training.holdout` and `tuning.rounds` -- and into the targets: tables
`tuning` (grid_search) and `leaderboard`, figures pareto_communication, pareto_compute, flatness_vs_accuracy,
rank_stability, critical_difference. Given the tuning's choice (fedflat.results.leaderboard.flow), it adds the final experiments
`final_<partition>`: every method at its chosen lr and hyperparameters, all seeds, the full budget. A final
seed that diverges or collapses has no accuracy and counts in the method's stability rate (v3: never in its rank;
`statistics:`, fedflat.results.leaderboard.ranking): v1's post-hoc re-run at a lower lr (`on_divergence: lower_lr`) was
removed in v2, and the key is refused unless it says `none`.
"""
from __future__ import annotations

import copy
import itertools
from typing import Any

from ...core.errors import ConfigError, choice_error

KEYS = ("dataset", "model", "partitions", "seeds", "tuning", "methods", "excluded", "statistics")
# the statistics the pages apply, fixed in the config before the runs they judge (v3): each key and its allowed values
STATISTICS = {"interval": (0.95,), "test": ("paired_t",), "correction": ("holm",), "alpha": (0.05,),
              "band": ("not_below_best",), "ties": ("mean_desc_then_preset",), "failed_seed": ("stability_column",),
              "critical_difference": ("friedman_nemenyi",), "power": (0.8,)}
TUNING_KEYS = ("partitions", "seeds", "rounds", "holdout", "metric", "trials", "lr", "lr_only", "on_divergence",
               "continuation")  # on_divergence: only `none` (v1's lower_lr was removed in v2)
CONTINUATION_KEYS = ("cells", "seeds")
FIGURES = {"pareto_communication": "Communication", "pareto_compute": "Computation",
           "flatness_vs_accuracy": "Flatness vs accuracy", "rank_stability": "Rank stability",
           "critical_difference": "Critical difference"}
TUNING_TABLE, TABLE, CHOICE_FILE = "tuning", "leaderboard", "tuning_choice.json"
SCREEN_FILE = "screen_choice.json"


def is_leaderboard(config: dict) -> bool:
    return "leaderboard" in config


def exp_name(stage: str, partition: str, method: str | None = None) -> str:
    """tune_dir0p3_fedsam / final_dir0p3: experiment names free of dots."""
    p = partition.replace(".", "p").replace("-", "_")
    return f"{stage}_{p}" + (f"_{method}" if method else "")


def _list(v, key: str, item=None) -> list:
    if not isinstance(v, list) or not v:
        raise ConfigError(f"{key}: must be a non-empty list")
    if item is not None:
        for x in v:
            item(key, x)
    return v


def _pos_number(key, x):
    if isinstance(x, bool) or not isinstance(x, (int, float)) or x <= 0:
        raise ConfigError(f"{key}: values must be numbers > 0, got {x!r}")


def _seed(key, x):
    if isinstance(x, bool) or not isinstance(x, int) or x < 0:
        raise ConfigError(f"{key}: seeds must be integers >= 0, got {x!r}")


def _check_method(name: str, grid, trials: int | None, lr: list, lr_only: list) -> dict:
    from ...training.algorithms import PRESETS
    from ...training.algorithms.oracle import DIAGNOSTIC_PRESETS
    from ...training.algorithms.presets_personal import PERSONAL_PRESETS

    key = f"leaderboard.methods.{name}"
    preset = PRESETS.get(name, key="leaderboard.methods")
    if name in PERSONAL_PRESETS:
        raise ConfigError(f"{key}: {preset.label} is a personalised-FL preset (its accuracy is that of per-client "
                          f"models, not of one global model); list it under leaderboard.excluded")
    if name in DIAGNOSTIC_PRESETS:
        raise ConfigError(f"{key}: {preset.label} is a diagnostic that reads every client's data, not a federated "
                          f"method; list it under leaderboard.excluded")
    grid = {} if grid is None else grid
    if not isinstance(grid, dict):
        raise ConfigError(f"{key}: must be a mapping of hyperparameter to a list of values ({{}}: none tuned)")
    if "lr" in grid:
        raise ConfigError(f"{key}.lr: the local lr grid is leaderboard.tuning.lr, the same for every method")
    specs = preset.param_specs()
    for k, values in grid.items():
        if k not in specs:
            raise ConfigError(f"{key}: unknown hyperparameter {k!r}; allowed: {', '.join(sorted(specs))}")
        for v in _list(values, f"{key}.{k}"):
            preset.resolve({k: v}, key="leaderboard.methods")
    points = 1
    for values in grid.values():
        points *= len(values)
    n = len(lr_only) if not grid else points * len(lr)
    if trials is not None and n != trials:
        how = (f"leaderboard.tuning.lr_only has {len(lr_only)} values" if not grid else
               f"{points} grid points x {len(lr)} lr values (leaderboard.tuning.lr)")
        raise ConfigError(f"{key}: {how} = {n} trials, not leaderboard.tuning.trials = {trials}: every method gets "
                          f"the same number of trials")
    return {k: list(v) for k, v in grid.items()}


def check(lb: Any, exhaustive: bool = True) -> dict:
    """The `leaderboard:` section, every key checked; one ConfigError naming the key. `exhaustive`: every registered
    preset must be ranked or excluded (off for a committed snapshot made before a preset existed)."""
    from ...training.algorithms import PRESETS
    from ...pipeline.report.grids import METRICS

    if not isinstance(lb, dict):
        raise ConfigError("leaderboard: must be a mapping")
    bad = sorted(set(lb) - set(KEYS))
    if bad:
        raise ConfigError(f"leaderboard: unknown key {bad[0]!r}; allowed: {', '.join(KEYS)}")
    for k in ("dataset", "model"):
        if not isinstance(lb.get(k), str):
            raise ConfigError(f"leaderboard.{k}: a {k} name is required")
    parts = _list(lb.get("partitions"), "leaderboard.partitions")
    if len(parts) != len(set(parts)):
        raise ConfigError("leaderboard.partitions: each partition once")
    seeds = _list(lb.get("seeds"), "leaderboard.seeds", _seed)
    tu = lb.get("tuning")
    if not isinstance(tu, dict):
        raise ConfigError("leaderboard.tuning: a mapping with " + ", ".join(TUNING_KEYS))
    bad = sorted(set(tu) - set(TUNING_KEYS))
    if bad:
        raise ConfigError(f"leaderboard.tuning: unknown key {bad[0]!r}; allowed: {', '.join(TUNING_KEYS)}")
    tparts = _list(tu.get("partitions"), "leaderboard.tuning.partitions")
    for p in tparts:
        if p not in parts:
            raise choice_error("leaderboard.tuning.partitions", p, parts)
    h = tu.get("holdout")
    if isinstance(h, bool) or not isinstance(h, (int, float)) or not 0 < h < 0.5:
        raise ConfigError(f"leaderboard.tuning.holdout: a fraction in (0, 0.5) is required (tuning never reads the "
                          f"test split), got {h!r}")
    metric = tu.get("metric", "last10_acc")
    if metric not in METRICS:
        raise choice_error("leaderboard.tuning.metric", metric, METRICS)
    for k in ("rounds", "trials"):
        v = tu.get(k, 1 if k == "trials" else None)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"leaderboard.tuning.{k}: must be an integer >= 1, got {v!r}")
    trials = tu.get("trials")  # None: grids of any size (small test studies); set: every method exactly this many
    lr = _list(tu.get("lr"), "leaderboard.tuning.lr", _pos_number)
    lr_only = _list(tu.get("lr_only", lr), "leaderboard.tuning.lr_only", _pos_number)
    if tu.get("on_divergence", "none") != "none":
        raise ConfigError(f"leaderboard.tuning.on_divergence: removed in v2 (lower_lr, the post-hoc lr re-choice after "
                          f"a diverged final seed); a diverged seed counts as diverged in the rank: remove the key "
                          f"(or set none), got {tu['on_divergence']!r}")
    cont = _check_continuation(tu.get("continuation"))
    methods = lb.get("methods")
    if not isinstance(methods, dict) or not methods:
        raise ConfigError("leaderboard.methods: a non-empty mapping of preset to its grid")
    grids = {name: _check_method(name, g, trials, lr, lr_only) for name, g in methods.items()}
    excluded = lb.get("excluded") or {}
    if not isinstance(excluded, dict):
        raise ConfigError("leaderboard.excluded: a mapping of preset to the reason it is not ranked")
    for name, why in excluded.items():
        PRESETS.get(name, key="leaderboard.excluded")
        if name in grids:
            raise ConfigError(f"leaderboard.excluded.{name}: also listed under leaderboard.methods")
        if not isinstance(why, str) or not why.strip():
            raise ConfigError(f"leaderboard.excluded.{name}: give the reason it is not ranked")
    labels: dict[str, str] = {}
    for name in grids:  # tables and the tuning choice name methods by label
        other = labels.setdefault(PRESETS.get(name).label, name)
        if other != name:
            raise ConfigError(f"leaderboard.methods.{name}: shares its label {PRESETS.get(name).label!r} with {other}")
    missing = [n for n in PRESETS.names() if n not in grids and n not in excluded]
    if missing and exhaustive:
        raise ConfigError(f"leaderboard.methods: preset {missing[0]!r} is neither ranked (leaderboard.methods) "
                          f"nor excluded with a reason (leaderboard.excluded)")
    stats = lb.get("statistics") or {}
    if not isinstance(stats, dict):
        raise ConfigError("leaderboard.statistics: a mapping of " + ", ".join(STATISTICS))
    for k, v in stats.items():
        if k not in STATISTICS:
            raise choice_error("leaderboard.statistics", k, STATISTICS)
        if v not in STATISTICS[k]:
            raise choice_error(f"leaderboard.statistics.{k}", v, STATISTICS[k])
    return {"dataset": lb["dataset"], "model": lb["model"], "partitions": list(parts), "seeds": list(seeds),
            "statistics": dict(stats),
            "tuning": {"partitions": list(tparts), "seeds": list(_list(tu.get("seeds"), "leaderboard.tuning.seeds", _seed)),
                       "rounds": tu["rounds"], "holdout": float(h), "metric": metric, "trials": trials,
                       "lr": list(lr), "lr_only": list(lr_only), "continuation": cont},
            "methods": grids, "excluded": dict(excluded)}


def _check_continuation(c) -> dict | None:
    """`tuning.continuation: {cells: K, seeds: [...]}`: each method's best K screen cells run the full horizon on the
    validation split of every ranked partition, and each partition picks its own cell from them."""
    if c is None:
        return None
    if not isinstance(c, dict):
        raise ConfigError("leaderboard.tuning.continuation: a mapping with " + ", ".join(CONTINUATION_KEYS))
    bad = sorted(set(c) - set(CONTINUATION_KEYS))
    if bad:
        raise ConfigError(f"leaderboard.tuning.continuation: unknown key {bad[0]!r}; allowed: {', '.join(CONTINUATION_KEYS)}")
    k = c.get("cells")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"leaderboard.tuning.continuation.cells: an integer >= 1, got {k!r}")
    return {"cells": k, "seeds": list(_list(c.get("seeds", [0]), "leaderboard.tuning.continuation.seeds", _seed))}


def grid_points(grid: dict) -> list[dict]:
    """The method's grid as a list of settings, in the order of its lists ({} : one empty setting)."""
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def lr_grid(p: dict, method: str) -> list:
    """The method's lr values: the shared grid, or the denser lr_only grid for a method with no own key."""
    return p["tuning"]["lr"] if p["methods"][method] else p["tuning"]["lr_only"]


def _tuning_experiments(p: dict) -> dict:
    from ...training.algorithms import PRESETS
    from ...pipeline.report.grids import setting_text

    tu, out = p["tuning"], {}
    for part in tu["partitions"]:
        for name, grid in p["methods"].items():
            label = PRESETS.get(name).label
            out[exp_name("tune", part, name)] = {
                "description": f"tuning {label} on {part}: lr {lr_grid(p, name)} x {setting_text(grid) or 'no own hyperparameter'}",
                "datasets": [p["dataset"]], "models": [p["model"]], "partitions": [part], "seeds": tu["seeds"],
                "training": {"rounds": tu["rounds"], "holdout": tu["holdout"]},
                "algorithms": [{"preset": name, "label": " ".join(x for x in (label, setting_text({"lr": lr, **pt})) if x),
                                "params": pt, "training": {"lr": lr}}
                               for lr in lr_grid(p, name) for pt in grid_points(grid)]}
    return out


def _entry(name: str, lr: float, params: dict, holdout: float | None = None) -> dict:
    from ...training.algorithms import PRESETS
    from ...pipeline.report.grids import setting_text

    label = PRESETS.get(name).label
    training = {"lr": lr, **({"holdout": holdout} if holdout else {})}
    return {"preset": name, "label": " ".join(x for x in (label, setting_text({"lr": lr, **params})) if x),
            "params": params, "training": training}


def _continuation_experiments(p: dict, screen: dict) -> dict:
    """`cont_<partition>`: each method's best screen cells (screen_choice.json) for the full horizon, on the
    validation split of every ranked partition, with the continuation seeds."""
    c = p["tuning"]["continuation"]
    out = {}
    for part in p["partitions"]:
        algos = [_entry(name, cell["lr"], cell["params"], p["tuning"]["holdout"])
                 for name, cells in screen["methods"].items() if name in p["methods"] for cell in cells]
        if algos:
            out[exp_name("cont", part)] = {
                "description": f"leaderboard continuation on {part}: the best {c['cells']} screen cells of every "
                               f"method, full horizon, validation split",
                "datasets": [p["dataset"]], "models": [p["model"]], "partitions": [part], "seeds": c["seeds"],
                "training": {"holdout": p["tuning"]["holdout"]}, "algorithms": algos}
    return out


def ablation_cell(p: dict, name: str, pick: dict | None) -> dict | None:
    """The rho = 0 twin of a SAM-type method's pick (same lr and other keys), or None (no radius, or rho is 0)."""
    if pick is None or "rho" not in p["methods"].get(name, {}) or pick["params"].get("rho") == 0.0:
        return None
    return {"lr": pick["lr"], "params": {**pick["params"], "rho": 0.0}}


def _ablation_experiments(p: dict, picks: dict) -> dict:
    """`ablation_<partition>`: the rho = 0 twin of every SAM-type method's pick on that partition, as the final runs
    are made (full horizon, test split, the final seeds), so the ascent's effect is a paired difference over the
    same seeds as the pick's own final runs (v3; v2 ran the twins on the validation split with one seed, and a third
    of them were the continued cell that had lost to the pick: a selection-biased comparison)."""
    out = {}
    for part in p["partitions"]:
        algos = [_entry(name, a["lr"], a["params"])
                 for name, pick in picks.get(part, {}).items() if (a := ablation_cell(p, name, pick))]
        if algos:
            out[exp_name("ablation", part)] = {
                "description": f"leaderboard ablation on {part}: rho = 0 at each SAM-type method's pick, final seeds, "
                               f"test split",
                "datasets": [p["dataset"]], "models": [p["model"]], "partitions": [part], "seeds": p["seeds"],
                "algorithms": algos}
    return out


def choice_for(chosen: dict, protocol: dict, partition: str) -> dict:
    """The tuning's choice that applies to `partition`: its own where it was tuned, else the first tuned one's."""
    tuned = chosen["partitions"]
    return tuned.get(partition) or tuned[protocol["tuning"]["partitions"][0]]


def _final_experiments(p: dict, picks: dict) -> dict:
    """`final_<partition>` per partition with picks ({partition: {preset: {lr, params} or None}}): every method at
    its chosen setting, all seeds, the full budget."""
    out = {}
    for part in p["partitions"]:
        algos = [{"preset": name, "params": c["params"], "training": {"lr": c["lr"]}}
                 for name, c in picks.get(part, {}).items() if c is not None and name in p["methods"]]
        if algos:
            out[exp_name("final", part)] = {
                "description": f"leaderboard on {part}: every method at its chosen setting",
                "datasets": [p["dataset"]], "models": [p["model"]], "partitions": [part], "seeds": p["seeds"],
                "algorithms": algos}
    return out


def prepare(config: dict, chosen: dict | None = None, screen: dict | None = None,
            exhaustive: bool = True) -> tuple[dict, dict]:
    """(a plain study config: tuning (screen) experiments; the continuation given `screen`; final ones, and with
    the continuation the rho = 0 ablations, given `chosen`; the protocol)."""
    if config.get("experiments"):
        raise ConfigError("experiments: a leaderboard config generates its experiments from leaderboard:; remove them")
    protocol = check(config["leaderboard"], exhaustive)
    rounds = (config.get("training") or {}).get("rounds")
    if isinstance(rounds, int) and protocol["tuning"]["rounds"] > rounds:
        raise ConfigError(f"leaderboard.tuning.rounds: {protocol['tuning']['rounds']} exceeds training.rounds "
                          f"{rounds}; the tuning horizon is the shorter one")
    protocol["config"] = copy.deepcopy(config)  # the final experiments expand from it, at the same scale
    cfg = copy.deepcopy(config)
    cfg.pop("leaderboard")
    cfg["experiments"] = _tuning_experiments(protocol)
    if screen is not None and protocol["tuning"]["continuation"]:
        cfg["experiments"].update(_continuation_experiments(protocol, screen))
    if chosen is not None:
        picks = {part: choice_for(chosen, protocol, part) for part in protocol["partitions"]}
        cfg["experiments"].update(_final_experiments(protocol, picks))
        if protocol["tuning"]["continuation"]:
            cfg["experiments"].update(_ablation_experiments(protocol, picks))
    tune_exps = list(_tuning_experiments(protocol))
    cfg["tables"] = {**(cfg.get("tables") or {}),
                     TUNING_TABLE: {"kind": "grid_search", "experiments": tune_exps, "param": "lr",
                                    "metric": protocol["tuning"]["metric"],
                                    "title": "Leaderboard tuning: validation accuracy per method, lr and setting",
                                    "note": _tuning_note(protocol),
                                    **({"chosen_label": "screen best"} if protocol["tuning"]["continuation"] else {})},
                     TABLE: {"kind": "leaderboard", "title": "Leaderboard: every global-model method under one protocol"}}
    cfg["figures"] = {**(cfg.get("figures") or {}), **{f: {"kind": f, "title": t} for f, t in FIGURES.items()}}
    return cfg, protocol


def _tuning_note(p: dict) -> str:
    tu = p["tuning"]
    where = ", ".join(tu["partitions"])
    c = tu["continuation"]
    after = (f"screened on {where}. The screen's best is not the choice: each method's best {c['cells']} screen "
             f"cells (a diverged one never) continue to the full horizon of the final runs on the validation "
             f"split of every ranked partition (seeds {c['seeds']}), and each partition picks its own cell from that "
             f"score (tuning_choice.json; the picks are in the leaderboard table)" if c else
             f"tuned on {where} (partitions not tuned take that choice)")
    return (f"Grid: {tu['trials']} trials per method: lr in {tu['lr']} times 4 points of the method's own key "
            f"hyperparameters, or lr in {tu['lr_only']} for a method without one; the shorter horizon "
            f"leaderboard.tuning.rounds ({tu['rounds']} at paper scale, scaled like the rounds at a smaller one), "
            f"seeds {tu['seeds']}, {after}; {100 * tu['holdout']:g} % of every client's training samples held out "
            f"as the validation split.")
