"""FedSynSAM Table I's ordering (i): does compression make FedAvg's global model sharper, as the paper's λ_max rows
say (IID: none < Q8 < Top-k 0.25 < Q4; Dir(0.01): none < Q8)? From the catalog's table1_hessian (which runs make
each cell, the published values) and the committed evidence, under each Hessian protocol the table reports. The
rule was fixed here before the catalog's Table I runs were complete (a few protocol-(b) values were in the evidence):

  per partition and protocol, each compressed row against the uncompressed row of its partition, by the pages'
  one test (compare.beyond_spread): *appears* where its seed mean λ_max exceeds the uncompressed one by more than
  their pooled seed std, *reversed* where it falls short by more than that, *within the seed spread* otherwise;
  and whether our rows rank in the paper's order (strictly increasing means along it).
A row whose runs are not all in the evidence, or with a diverged seed, gets no verdict."""
from __future__ import annotations

import math

from .compare import beyond_spread, cell_value, seed_values

TABLE = "table1_hessian"
UNCOMPRESSED = "w/o compression"
PENDING = "The catalog's Table I runs are not all in the committed evidence yet."


def _partition(label: str) -> str:
    return label.split(" ", 1)[0]


def rows(study, runs) -> list[dict]:
    """One row per (protocol column, compressed row): the paper's difference to its partition's uncompressed row,
    ours, the pooled std and the verdict (None while not settled)."""
    from ..papers.kinds import table_cells
    from ..papers.published import parse_published

    spec = study.tables[TABLE]
    trows, cols, grid = table_cells(study, TABLE, spec)
    pub = spec.get("published") or {}
    # the paper publishes one λ_max per row (in the stated reading's column): its order is the claim every
    # protocol is tested against
    paper = {r["label"]: next((m for m in (parse_published(v).mean for v in pub.get(r["label"]) or []) if m is not None),
                              None) for r in trows}
    out = []
    for j, c in enumerate(cols):
        cells = {r["label"]: [rid for rid, _ in line[j]] for r, line in zip(trows, grid)}
        settled = {label: cell_value(runs, ids, c["metric"])[2] == len(ids) for label, ids in cells.items()}
        for label, ids in cells.items():
            base = f"{_partition(label)} {UNCOMPRESSED}"
            if label == base or base not in cells:
                continue
            row = {"protocol": c["group"], "row": label, "partition": _partition(label),
                   "paper": None if None in (paper[label], paper[base]) else paper[label] - paper[base],
                   "ours": math.nan, "pooled": math.nan, "verdict": None, "mean": math.nan, "base_mean": math.nan}
            if settled[label] and settled[base]:
                (a, da), (b, db) = seed_values(runs, ids, c["metric"]), seed_values(runs, cells[base], c["metric"])
                if a and b and not (da or db):
                    row["ours"], row["pooled"], row["verdict"] = beyond_spread(a, b)
                    row["mean"], row["base_mean"] = sum(a) / len(a), sum(b) / len(b)
            out.append(row)
    return out


def paper_order_holds(group: list[dict]) -> bool | None:
    """Whether the rows of one (protocol, partition), uncompressed first and then in the paper's order of the
    compressed rows (by the paper's values), have strictly increasing seed means; None while one is unsettled."""
    if any(r["verdict"] is None or r["paper"] is None for r in group):
        return None
    ordered = sorted(group, key=lambda r: r["paper"])
    means = [ordered[0]["base_mean"]] + [r["mean"] for r in ordered]
    return all(x < y for x, y in zip(means, means[1:]))


def _num(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.2f}"


def render(found: list[dict]) -> str:
    if not any(r["verdict"] for r in found):
        return PENDING
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in found:
        groups.setdefault((r["protocol"], r["partition"]), []).append(r)
    heads = []
    for (protocol, part), g in groups.items():
        holds = paper_order_holds(g)
        n = sum(r["verdict"] == "appears" for r in g)
        order = {True: "the paper's order holds", False: "the paper's order does not hold", None: "not settled"}[holds]
        heads.append(f"{protocol}, {part}: compression sharper in {n} of {len(g)} rows; {order}")
    lines = ["λ_max of each compressed row minus its partition's uncompressed row: " + "; ".join(heads) + ".", "",
             "| protocol | row | paper | ours | pooled seed std | verdict |", "|---|---|---|---|---|---|"]
    for r in found:
        pooled = "-" if math.isnan(r["pooled"]) else f"{r['pooled']:.2f}"
        lines.append(f"| {r['protocol']} | {r['row']} | {_num(r['paper'])} | {_num(r['ours'])} | {pooled} | "
                     f"{r['verdict'] or 'not settled'} |")
    return "\n".join(lines)


def block(ctx) -> str:
    return render(rows(ctx.study("fedsynsam"), ctx.evidence("fedsynsam").runs()))
