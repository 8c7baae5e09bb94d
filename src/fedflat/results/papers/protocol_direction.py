"""FedSynSAM Table I's direction (issue 25), read from the hessian_protocols tables (kinds_protocols.py): which
Hessian protocol, if any, reproduces the paper's ordering (Dir(0.01) sharper than IID) and its magnitude (a Dir(0.01) / IID ratio of 17.04 / 7.56 = 2.25 for λ_max), decided
from the committed evidence of config/papers/tuning/fedsynsam_table1_direction.yaml by a rule fixed in that
config before its results were read:

  ordering   at the final round, the Dir(0.01) seed mean exceeds the IID seed mean by more than their pooled seed
             standard deviation, sqrt((s_dir² + s_iid²) / 2): leaderboard v2's tie band (docs/leaderboard_v2.md);
  magnitude  the ratio of the seed means lies within ±25 % of the paper's ratio (1.69x to 2.81x for λ_max);
  reproduces both. The paper's values are of the final model (its round 300), so the verdict reads that round;
  the earlier rounds are shown to say whether the direction is a late or a lasting one.

Also the λ_max-against-lr block (the table `lr_sharpness` and its figure): the evidence for or against the
withdrawn claim that λ_max·η is the same at every lr."""
from __future__ import annotations

import math

from ...core.recorded import finite_number
from ...core.util.markdown import embed
from .kinds_protocols import PROTOCOLS as _NAMES  # one name per protocol, as the study's tables

STUDY = "fedsynsam_table1_direction"
TABLES = ("table1_direction_lmax", "table1_direction_trace")
MAGNITUDE = 0.25  # relative tolerance on the paper's ratio
NUM, DEN = "Dir(0.01)", "IID"
PENDING = ("Not in the committed evidence yet: `snakemake --cores all --configfile "
           "config/papers/tuning/fedsynsam_table1_direction.yaml` measures it, then "
           "`python -m fedflat.evidence export config/papers/tuning/fedsynsam_table1_direction.yaml` records it.")


def verdicts(long) -> list[dict]:
    """One row per (protocol, statistic) of a hessian_protocols table's long frame (its .csv), at its last round:
    both partitions' mean and std, the ratio, the paper's ratio, and the two verdicts (None where the paper
    publishes no ratio for this metric, e.g. the trace)."""
    last = long["round"].max()
    at = long[long["round"] == last]
    out = []
    for (protocol, stat), g in at.groupby(["protocol", "statistic"], sort=False):
        part = {r["partition"]: r for _, r in g.iterrows()}
        if NUM not in part or DEN not in part:
            continue
        num, den = part[NUM], part[DEN]
        pooled = math.sqrt((float(num["std"]) ** 2 + float(den["std"]) ** 2) / 2)
        ratio = float(num["mean"]) / float(den["mean"]) if float(den["mean"]) else math.nan
        ratio_row = part.get(f"{NUM} / {DEN}")
        paper = finite_number(ratio_row["published"]) if ratio_row is not None else None
        ordering = float(num["mean"]) - float(den["mean"]) > pooled
        magnitude = None if paper is None else abs(ratio / paper - 1) <= MAGNITUDE
        out.append({"protocol": protocol, "statistic": stat, "round": int(last),
                    "iid": (float(den["mean"]), float(den["std"])), "dir": (float(num["mean"]), float(num["std"])),
                    "ratio": ratio, "paper": paper, "ordering": ordering, "magnitude": magnitude,
                    "reproduces": None if paper is None else bool(ordering and magnitude),
                    "ratios": {int(r["round"]): float(r["mean"]) for _, r in
                               long[(long["protocol"] == protocol) & (long["statistic"] == stat)
                                    & (long["partition"] == f"{NUM} / {DEN}")].iterrows()}})
    return out


def _yes(v) -> str:
    return "–" if v is None else ("yes" if v else "no")


def _verdict_table(rows: list[dict], what: str) -> str:
    lines = [f"| protocol ({what}) | IID | Dir(0.01) | ratio by round | ratio at the end | paper | ordering | "
             "magnitude |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        name = _NAMES.get(r["protocol"], r["protocol"]) + ("" if r["statistic"] == "value" else f", {r['statistic']}")
        by_round = ", ".join(f"{v:.2f}x" for _, v in sorted(r["ratios"].items()))
        paper = "–" if r["paper"] is None else f"{r['paper']:.2f}x"
        lines.append(f"| {name} | {r['iid'][0]:.3g} ± {r['iid'][1]:.2g} | {r['dir'][0]:.3g} ± {r['dir'][1]:.2g} | "
                     f"{by_round} | {r['ratio']:.2f}x | {paper} | {_yes(r['ordering'])} | {_yes(r['magnitude'])} |")
    return "\n".join(lines)


def _frame(ctx, table: str):
    import io

    import pandas as pd

    text = ctx.evidence(STUDY).table_text(table, "csv")
    return None if text is None else pd.read_csv(io.StringIO(text))


def block(ctx) -> str:
    """The verdict per protocol (λ_max, then the trace), and the tables as the study rendered them."""
    frames = {t: _frame(ctx, t) for t in TABLES}
    if any(f is None for f in frames.values()):
        return PENDING
    lmax, trace = verdicts(frames[TABLES[0]]), verdicts(frames[TABLES[1]])
    good = [r for r in lmax if r["reproduces"]]
    ordered = [r for r in lmax if r["ordering"]]
    head = (f"λ_max at round {lmax[0]['round']}: {len(ordered)} of {len(lmax)} protocol statistics give the paper's "
            f"ordering (Dir(0.01) sharper than IID beyond the pooled seed std); {len(good)} also "
            f"give{'s' if len(good) == 1 else ''} its magnitude "
            f"(a ratio within ±{MAGNITUDE:.0%} of {lmax[0]['paper']:.2f}x)"
            + (": " + "; ".join(_NAMES[r['protocol']] + ("" if r['statistic'] == 'value' else f", {r['statistic']}")
                                for r in good) if good else "") + ".")
    tables = "\n\n".join(embed(ctx.evidence(STUDY).table_text(t))
                         for t in TABLES)
    return "\n\n".join([head, _verdict_table(lmax, "λ_max"), _verdict_table(trace, "trace"), tables])


LR_METRICS = {"(a)": "file:hessian_r300_train.json:lambda_max", "(b)": "file:hessian_r300_clients.json:lambda_max_mean"}


def lr_products(long, eta: dict[str, float], metric: str = LR_METRICS["(a)"]) -> list[dict]:
    """From the lr_sharpness table's long frame (its .csv): per partition and lr, λ_max over seeds and λ_max·η
    per seed (mean, std, min, max): gradient descent on a quadratic is stable while λ_max·η < 2, so a product
    that sits near 2 at every lr is the edge of stability, and a product that falls with η is not. `eta`: each
    row's lr, read from its runs' records (row_lrs), not from the row's label."""
    import statistics

    out = []
    lam = long[long["metric"].astype(str) == metric]
    for _, r in lam.iterrows():
        eta_r = eta[str(r["row"])]
        seeds = [float(v) for v in str(r["per_seed"]).split(";") if v not in ("", "nan")]
        prod = [v * eta_r for v in seeds]
        out.append({"partition": r["group"], "eta": eta_r, "seeds": len(seeds),
                    "diverged": int(r["diverged"]) if "diverged" in r and r["diverged"] == r["diverged"] else 0,
                    "lambda_max": (statistics.fmean(seeds), statistics.stdev(seeds)) if len(seeds) > 1 else
                    (seeds[0] if seeds else math.nan, math.nan),
                    "product": (statistics.fmean(prod), statistics.stdev(prod)) if len(prod) > 1 else
                    (prod[0] if prod else math.nan, math.nan),
                    "product_range": (min(prod), max(prod)) if prod else (math.nan, math.nan)})
    return out


def row_lrs(ev, table: str) -> dict[str, float]:
    """{row: the lr its runs trained at} of one of the study's tables, from cells.csv and the runs' records."""
    cells = ev.cells()
    lr = dict(zip(ev.runs()["run_id"], ev.runs()["lr"].astype(float)))
    out: dict[str, set] = {}
    for r in cells[cells["table"] == table].itertuples():
        out.setdefault(r.row, set()).add(lr[r.run_id])
    return {row: next(iter(v)) for row, v in out.items() if len(v) == 1}


def lr_block(ctx) -> str:
    """λ_max against the lr: λ_max·η per partition and lr (the claim it tests: the same at every lr), the
    study's table and its figure."""
    import io

    import pandas as pd

    text = ctx.evidence(STUDY).table_text("lr_sharpness")
    csv = ctx.evidence(STUDY).table_text("lr_sharpness", "csv")
    if text is None or csv is None:
        return PENDING
    frame = pd.read_csv(io.StringIO(csv))
    eta = row_lrs(ctx.evidence(STUDY), "lr_sharpness")
    rows = lr_products(frame, eta)
    lines = ["| partition | η | 2/η | λ_max, protocol (a) (mean ± std over seeds) | λ_max·η (mean ± std) | λ_max·η (min to max) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        if not r["seeds"]:
            lines.append(f"| {r['partition']} | {r['eta']:g} | {2 / r['eta']:g} | every seed diverged "
                         f"({r['diverged']}) | – | – |")
            continue
        note = f" ({r['diverged']} diverged)" if r["diverged"] else ""
        lines.append(f"| {r['partition']} | {r['eta']:g} | {2 / r['eta']:g} | {r['lambda_max'][0]:.3g} ± "
                     f"{r['lambda_max'][1]:.2g}{note} | {r['product'][0]:.2f} ± {r['product'][1]:.2f} | "
                     f"{r['product_range'][0]:.2f} to {r['product_range'][1]:.2f} |")
    lines.append("")
    for protocol, metric in LR_METRICS.items():
        found = lr_products(frame, eta, metric)
        if not found:
            continue
        lam = {(r["partition"], r["eta"]): r["lambda_max"][0] for r in found if r["seeds"]}
        ratios = [f"η = {eta:g}: " + (f"{lam[(NUM, eta)] / lam[(DEN, eta)]:.2f}x" if (NUM, eta) in lam and
                                      (DEN, eta) in lam else "– (a partition diverged)")
                  for eta in sorted({r["eta"] for r in found})]
        lines.append(f"- {NUM} / {DEN} ratio of the seed-mean λ_max, protocol {protocol}, per lr: " + "; ".join(ratios)
                     + ".")
    link = ctx.figure_link(STUDY, "lr_sharpness")
    return "\n\n".join(["\n".join(lines), embed(text)] + ([f"![λ_max against 1/η]({link})"] if link else []))
