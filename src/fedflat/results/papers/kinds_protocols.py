"""Table kind `hessian_protocols`: a sharpness measure of snapshots under several measurement protocols, with the
ratio between two partitions beside the paper's (FedSynSAM Table I's direction: which protocol makes Dir(0.01)
sharper than IID, as the paper's λ_max does).

    tables:
      table1_direction_lmax:
        kind: hessian_protocols
        ref: Table I
        metric: lambda_max              # lambda_max | trace
        protocols: [train, clients, test, local]   # the split of hessian_r<t>_<split>.json (pipeline/analysis/paths.py)
        experiments: [dir_iid, dir_dir001]  # row groups (one partition each), their runs the seeds
        labels: {dir_iid: IID, dir_dir001: Dir(0.01)}   # the groups' names (default: the experiment's)
        ratio: [Dir(0.01), IID]         # numerator and denominator labels
        published: {IID: 7.56, Dir(0.01): 17.04}   # the paper's values of the final model (optional)

Columns are the runs' snapshot rounds (training.snapshot_rounds, the same for every run of the table); rows are
protocol x statistic (the value; over clients: mean and max) x partition, each cell the mean ± std over seeds,
then the ratio of the partitions' seed means with the paper's ratio beside it.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from ...pipeline.analysis.paths import SNAPSHOT_SPLITS, hessian_at
from ...core.errors import ConfigError, choice_error
from ...core.kind_registry import TABLE_KINDS
from ...core.util.io import write_text
from ...core.util.markdown import md_table

METRICS = ("lambda_max", "trace")
PROTOCOLS = {"train": "(a) global model, training data", "clients": "(b) global model, each client's data",
             "test": "(c) global model, test split", "local": "(d) sampled clients' models, own data"}
_OVER_CLIENTS = ("clients", "local")  # per-client values: their mean and maximum are the table's statistics


def _statistics(protocol: str) -> list[str]:
    return ["mean", "max"] if protocol in _OVER_CLIENTS else [""]


def _partitions(study, name: str, spec: dict) -> list[dict]:
    key = f"tables.{name}"
    exps, labels = spec.get("experiments"), spec.get("labels") or {}
    if not isinstance(exps, list) or not exps:
        raise ConfigError(f"{key}.experiments: a non-empty list of experiment names")
    if not isinstance(labels, dict):
        raise ConfigError(f"{key}.labels: a mapping of experiment name to label")
    for e in [*exps, *labels]:
        if e not in study.experiments or e not in exps:
            raise choice_error(f"{key}.{'experiments' if e in exps else 'labels'}", e,
                               study.experiments if e in exps else exps)
    out = [{"label": str(labels.get(e, e)), "experiment": e} for e in exps]
    if len({p["label"] for p in out}) != len(out):
        raise ConfigError(f"{key}.labels: two experiments share a label")
    return out


def _rounds(study, name: str, parts: list[dict]) -> list[int]:
    rounds = {json.dumps(study.runs[rid].training.get("snapshot_rounds") or [])
              for p in parts for rid, _ in study.experiments[p["experiment"]]}
    if len(rounds) != 1 or rounds == {"[]"}:
        raise ConfigError(f"tables.{name}: every run must set the same non-empty training.snapshot_rounds, "
                          f"got {sorted(rounds)}")
    return json.loads(rounds.pop())


@TABLE_KINDS.register("hessian_protocols")
class HessianProtocolsTable:
    @staticmethod
    def check(study, name, spec):
        key = f"tables.{name}"
        parts = _partitions(study, name, spec)
        _rounds(study, name, parts)
        if spec.get("metric", "lambda_max") not in METRICS:
            raise choice_error(f"{key}.metric", spec.get("metric"), METRICS)
        protocols = spec.get("protocols", list(SNAPSHOT_SPLITS))
        if not isinstance(protocols, list) or not protocols:
            raise ConfigError(f"{key}.protocols: a non-empty list of {', '.join(SNAPSHOT_SPLITS)}")
        for p in protocols:
            if p not in SNAPSHOT_SPLITS:
                raise choice_error(f"{key}.protocols", p, SNAPSHOT_SPLITS)
        labels = [p["label"] for p in parts]
        ratio = spec.get("ratio")
        if ratio is not None and not (isinstance(ratio, list) and len(ratio) == 2 and set(ratio) <= set(labels)):
            raise ConfigError(f"{key}.ratio: [numerator, denominator], two of the partition labels {labels}")
        pub = spec.get("published") or {}
        if not isinstance(pub, dict):
            raise ConfigError(f"{key}.published: a mapping of partition label to the paper's value")
        for label, v in pub.items():
            if label not in labels:
                raise choice_error(f"{key}.published", label, labels)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ConfigError(f"{key}.published.{label}: a number, got {v!r}")
        if spec.get("metric", "lambda_max") == "trace":
            from ...pipeline.analysis.params import from_config

            if not from_config(study.config, "hessian")["trace_samples"]:
                raise ConfigError(f"{key}.metric: trace needs analysis.hessian.trace_samples >= 1")

    @staticmethod
    def cells(study, name, spec):
        parts = _partitions(study, name, spec)
        for t in _rounds(study, name, parts):
            for p in parts:
                for rid, _ in study.experiments[p["experiment"]]:
                    yield p["label"], f"round {t}", rid

    @staticmethod
    def inputs(study, name, spec):
        parts = _partitions(study, name, spec)
        protocols = spec.get("protocols", list(SNAPSHOT_SPLITS))
        return [f"{study.run_dir(rid)}/{hessian_at(t, s)}" for p in parts for rid, _ in study.experiments[p["experiment"]]
                for t in _rounds(study, name, parts) for s in protocols]

    @staticmethod
    def manifest(study, name, spec):
        parts = _partitions(study, name, spec)
        return {"title": spec.get("title", name), "ref": spec.get("ref", name), "note": spec.get("note", ""),
                "metric": spec.get("metric", "lambda_max"), "protocols": spec.get("protocols", list(SNAPSHOT_SPLITS)),
                "rounds": _rounds(study, name, parts), "ratio": spec.get("ratio"),
                "published": spec.get("published") or {}, "scale": spec.get("scale_info") or {},
                "partitions": [{**p, "runs": [{"dir": study.run_dir(rid), "seed": lab["seed"]}
                                              for rid, lab in study.experiments[p["experiment"]]]} for p in parts]}

    @staticmethod
    def render(m, out_base):
        render_protocols(m, Path(out_base))


def _value(run_dir: str, t: int, protocol: str, metric: str, stat: str) -> float:
    out = json.loads((Path(run_dir) / hessian_at(t, protocol)).read_text())
    v = out.get(f"{metric}_{stat}" if stat else metric)
    return float("nan") if v is None else float(v)


def _stats(values: list[float]) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    return mean, (math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else float("nan"))


def frames(m: dict):
    """(long: one row per protocol, statistic, partition or ratio, round; wide: the table as shown)."""
    import pandas as pd

    rows, wide = [], []
    labels = {p["label"]: p for p in m["partitions"]}
    pub = m["published"]
    num, den = m["ratio"] or (None, None)
    pub_ratio = pub[num] / pub[den] if num in pub and den in pub and pub[den] else None
    for protocol in m["protocols"]:
        for stat in _statistics(protocol):
            head = PROTOCOLS[protocol] + (f", {stat} over clients" if stat else "")
            means = {}
            for label, p in labels.items():
                line = {"protocol": head, "partition": label}
                for t in m["rounds"]:
                    vals = [_value(r["dir"], t, protocol, m["metric"], stat) for r in p["runs"]]
                    mean, std = _stats(vals)
                    means[(label, t)] = mean
                    rows.append({"protocol": protocol, "statistic": stat or "value", "partition": label, "round": t,
                                 "mean": mean, "std": std, "seeds": len(vals), "published": pub.get(label),
                                 "scale": m["scale"].get("name", "paper")})
                    line[f"round {t}"] = f"{mean:.3g} ± {std:.2g}" if std == std else f"{mean:.3g}"
                line["paper"] = f"{pub[label]:g}" if label in pub else "–"
                wide.append(line)
            if num is not None:
                line = {"protocol": head, "partition": f"{num} / {den}"}
                for t in m["rounds"]:
                    ratio = means[(num, t)] / means[(den, t)] if means[(den, t)] else float("nan")
                    rows.append({"protocol": protocol, "statistic": stat or "value", "partition": f"{num} / {den}",
                                 "round": t, "mean": ratio, "std": float("nan"), "seeds": None,
                                 "published": pub_ratio, "scale": m["scale"].get("name", "paper")})
                    line[f"round {t}"] = f"{ratio:.2f}x"
                line["paper"] = f"{pub_ratio:.2f}x" if pub_ratio is not None else "–"
                wide.append(line)
    return pd.DataFrame(rows), pd.DataFrame(wide)


def render_protocols(m: dict, out_base: Path) -> None:
    long, wide = frames(m)
    seeds = sorted({r["seed"] for p in m["partitions"] for r in p["runs"]})
    what = "top Hessian eigenvalue λ_max" if m["metric"] == "lambda_max" else "Hessian trace (Hutchinson)"
    caption = (f"{m['ref']}: {what} of end-of-round snapshots, mean ± std over seeds {seeds}; ratio rows divide the "
               f"seed means. \"paper\": the published value of the final model (its protocol unstated). "
               f"Scale: {m['scale'].get('name', 'paper')} ({m['scale'].get('note', 'the paper settings')}).")
    if m.get("note"):
        caption += " " + m["note"]
    body = md_table(wide, index=False, disable_numparse=True)
    write_text(out_base.with_suffix(".md"), f"# {m['title']}\n\n{body}\n\n{caption}\n")
    write_text(out_base.with_suffix(".csv"), long.to_csv(index=False))
    write_text(out_base.with_suffix(".tex"), wide.to_latex(index=False, escape=True, caption=caption, label=f"tab:{out_base.name}"))
