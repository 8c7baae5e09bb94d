"""Table kind `grid_search`: a hyperparameter search on a validation split, and the value it picks.

    tables:
      rho_fmnist_A:
        kind: grid_search
        experiments: [rho_A]        # runs of the grid (training.holdout > 0: accuracies are on validation)
        param: rho                  # an algorithm hyperparameter, or a training key such as lr
        metric: last10_acc          # the selection criterion (summary.json key): final_acc | last10_acc
        title: ...

Rows are methods (preset labels), columns the values of `param`, cells the criterion in % (mean over
seeds); `chosen` is the value with the highest mean (ties: the smaller value). Runs must evaluate on
a validation split carved from the training clients: the kind refuses runs that evaluated on test.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import ConfigError, choice_error
from ..report.kinds import TABLE_KINDS
from ..util.io import write_text

METRICS = ("final_acc", "last10_acc")


def _value(spec, param: str):
    return spec.hparams[param] if param in spec.hparams else spec.training[param]


@TABLE_KINDS.register("grid_search")
class GridSearchTable:
    @staticmethod
    def check(study, name, spec):
        key = f"tables.{name}"
        exps = spec.get("experiments")
        if not isinstance(exps, list) or not exps:
            raise ConfigError(f"{key}.experiments: a non-empty list of experiment names")
        for e in exps:
            if e not in study.experiments:
                raise choice_error(f"{key}.experiments", e, study.experiments)
        if spec.get("metric", "last10_acc") not in METRICS:
            raise choice_error(f"{key}.metric", spec.get("metric"), METRICS)
        param = spec.get("param")
        for e in exps:
            for rid, _ in study.experiments[e]:
                run = study.runs[rid]
                if param not in run.hparams and param not in run.training:
                    raise ConfigError(f"{key}.param: {param!r} is neither a hyperparameter of {run.algorithm} "
                                      f"nor a training key")
                if not run.training.get("holdout"):
                    raise ConfigError(f"{key}: experiment {e} evaluates on the test split; a search needs "
                                      f"training.holdout > 0 (a validation split carved from the training clients)")

    @staticmethod
    def inputs(study, name, spec):
        return [f"{study.run_dir(rid)}/summary.json" for e in spec["experiments"] for rid, _ in study.experiments[e]]

    @staticmethod
    def manifest(study, name, spec):
        from ..algorithms import PRESETS

        entries = []
        for e in spec["experiments"]:
            for rid, lab in study.experiments[e]:
                run = study.runs[rid]
                entries.append({"method": PRESETS.get(run.algorithm).label, "value": _value(run, spec["param"]),
                                "seed": lab["seed"], "dir": study.run_dir(rid)})
        return {"title": spec.get("title", name), "param": spec["param"], "metric": spec.get("metric", "last10_acc"),
                "note": spec.get("note", ""), "entries": entries}

    @staticmethod
    def render(m, out_base):
        render_grid(m, Path(out_base))


def render_grid(m: dict, out_base: Path):
    import pandas as pd

    rows = []
    for e in m["entries"]:
        s = json.loads((Path(e["dir"]) / "summary.json").read_text())
        if s.get("eval_split") != "validation":
            raise ConfigError(f"{e['dir']}: evaluated on {s.get('eval_split', 'test')!r}, not on a validation split")
        acc = s.get(m["metric"])
        rows.append({"method": e["method"], "value": e["value"], "seed": e["seed"],
                     "acc": float("nan") if acc is None else 100 * acc, "status": s["status"]})
    df = pd.DataFrame(rows)
    mean = df.groupby(["method", "value"], sort=False)["acc"].mean().unstack("value")
    mean = mean[sorted(mean.columns)]
    chosen = {meth: (r.idxmax() if r.notna().any() else None) for meth, r in mean.iterrows()}
    table = mean.map(lambda v: "diverged" if v != v else f"{v:.2f}")
    for meth, best in chosen.items():
        if best is not None:
            table.loc[meth, best] = f"**{table.loc[meth, best]}**"
    table[f"chosen {m['param']}"] = [("—" if chosen[i] is None else f"{chosen[i]:g}") for i in table.index]
    table.index.name = "Method"
    seeds = sorted(df["seed"].unique().tolist())
    caption = (f"Validation accuracy (%, {m['metric']}, mean over seeds {seeds}) on samples held out of the training "
               f"clients; the test split is never used. Bold: the chosen {m['param']} (highest mean).")
    if m.get("note"):
        caption += " " + m["note"]
    write_text(out_base.with_suffix(".md"), f"# {m['title']}\n\n{table.to_markdown(disable_numparse=True)}\n\n{caption}\n")
    write_text(out_base.with_suffix(".csv"), df.to_csv(index=False))
    write_text(out_base.with_suffix(".tex"), table.to_latex(escape=True, caption=caption, label=f"tab:{out_base.name}"))
    return chosen
