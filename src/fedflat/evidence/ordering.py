"""FedSynSAM Table I's ordering (i): does compression make FedAvg's global model sharper, as the paper's λ_max rows
say (IID: none < Q8 < Top-k 0.25 < Q4; Dir(0.01): none < Q8)? From the catalog's table1_hessian (which runs make
each cell, the published values) and the committed evidence, under each Hessian protocol the table reports. The
rule was fixed here before the catalog's Table I runs were complete (a few protocol-(b) values were in the evidence):

  per partition and protocol, each compressed row against the uncompressed row of its partition, by the pages'
  one test (compare.beyond_spread): *appears* where its seed mean λ_max exceeds the uncompressed one by more than
  their pooled seed std, *reversed* where it falls short by more than that, *within the seed spread* otherwise;
  and whether our rows rank in the paper's order (strictly increasing means along it).
A row whose runs are not all in the evidence, or with a diverged seed, gets no verdict.

Below the edge of stability: the catalog's lr (0.1) sits where λ_max·η no longer grows with η (the direction
study's lr_sharpness), so the lr may pin λ_max and hide compression's effect. The direction study's table
compression_low_lr runs IID with and without Q4 at η = 0.01, where λ_max·η is well below that plateau; the same
test, Q4 minus w/o compression per protocol. Compression's effect is hidden by the lr where Q4 is sharper beyond
the seed spread at η = 0.01 while the catalog's Q4 row at η = 0.1 is not."""
from __future__ import annotations

import math

from .compare import beyond_spread, compare_cells, signed
from .store import embed

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
        for label, ids in cells.items():
            base = f"{_partition(label)} {UNCOMPRESSED}"
            if label == base or base not in cells:
                continue
            out.append({"protocol": c["group"], "row": label, "partition": _partition(label),
                        "paper": None if None in (paper[label], paper[base]) else paper[label] - paper[base],
                        **compare_cells(runs, ids, cells[base], c["metric"])})
    return out


def paper_order_holds(group: list[dict]) -> bool | None:
    """Whether the rows of one (protocol, partition), uncompressed first and then in the paper's order of the
    compressed rows (by the paper's values), have strictly increasing seed means; None while one is unsettled."""
    if any(r["verdict"] is None or r["paper"] is None for r in group):
        return None
    ordered = sorted(group, key=lambda r: r["paper"])
    means = [ordered[0]["base_mean"]] + [r["mean"] for r in ordered]
    return all(x < y for x, y in zip(means, means[1:]))


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
        lines.append(f"| {r['protocol']} | {r['row']} | {signed(r['paper'])} | {signed(r['ours'])} | {pooled} | "
                     f"{r['verdict'] or 'not settled'} |")
    return "\n".join(lines)


def block(ctx) -> str:
    return render(rows(ctx.study("fedsynsam"), ctx.evidence("fedsynsam").runs()))


LOW_LR_STUDY = "fedsynsam_table1_direction"
LOW_LR_TABLE = "compression_low_lr"
LOW_LR_ROWS = ("η = 0.01, Q4", "η = 0.01, w/o compression")  # (compressed, baseline)
PROTOCOL_NAMES = {"file:hessian_r300_clients.json:lambda_max_mean": "(b) clients' data, mean",
                  "file:hessian_r300_train.json:lambda_max": "(a) union of the training data"}


def low_lr_rows(frame) -> list[dict]:
    """From compression_low_lr's long frame (its .csv, per-seed values in `per_seed`): per protocol, Q4 minus w/o
    compression at η = 0.01 by beyond_spread (None where a row is missing or lost a seed)."""
    out = []
    for metric, name in PROTOCOL_NAMES.items():
        sub = frame[frame["metric"] == metric].set_index("row")
        vals = []
        for r in LOW_LR_ROWS:
            seeds = str(sub["per_seed"].get(r, "")) if r in sub.index else ""
            v = [float(x) for x in seeds.split(";") if x not in ("", "nan", "None")]
            ok = r in sub.index and v and int(sub.loc[r, "diverged"]) == 0 and len(v) == int(sub.loc[r, "n_seeds"])
            vals.append(v if ok else None)
        out.append({"protocol": name, "result": None if None in vals else beyond_spread(*vals)})
    return out


def low_lr_block(ctx) -> str:
    import io

    import pandas as pd

    text = ctx.evidence(LOW_LR_STUDY).table_text(LOW_LR_TABLE, "csv")
    if text is None:
        return "Not in the committed evidence yet."
    found = low_lr_rows(pd.read_csv(io.StringIO(text)))
    catalog = {(r["protocol"], r["row"]): r["verdict"] for r in rows(ctx.study("fedsynsam"), ctx.evidence("fedsynsam").runs())}
    lines = ["| protocol | Q4 minus w/o compression at η = 0.01 (pooled seed std) | verdict at η = 0.01 | "
             "catalog's IID Q4 at η = 0.1 | compression's effect hidden by the lr |", "|---|---|---|---|---|"]
    for r in found:
        at_low = r["result"]
        at_cat = catalog.get((r["protocol"], "IID Q4"))
        hidden = "-" if at_low is None or at_cat is None else (
            "yes" if at_low[2] == "appears" and at_cat != "appears" else "no")
        cell = "not settled" if at_low is None else f"{at_low[0]:+.2f} ({at_low[1]:.2f})"
        lines.append(f"| {r['protocol']} | {cell} | {'-' if at_low is None else at_low[2]} | "
                     f"{at_cat or 'not settled'} | {hidden} |")
    body = embed(ctx.evidence(LOW_LR_STUDY).table_text(LOW_LR_TABLE))
    return "\n".join(lines) + "\n\n" + body
