"""The Markdown of a declared finding, and the page blocks derived from every declaration.

A block is [intro] then the table, joined by a blank line; every finding declaring one page block renders into it, in
declaration order (paired findings sharing a block: one table of claims). `layout.columns` lists the table's columns:
unit fields (a name, or {name: heading}) and the tokens @paper, @candidates (a column each), @verdict, and (paired)
@ours, @interval, @p, @detectable. Text tokens: {seeds} ('0-1'), {evidence},
{tolerance}, {recorded} and {expected} (runs)."""
from __future__ import annotations

import math

from ..compare import signed
from .decide import STATE_NAMES, evaluate, fill, is_paired
from .declared import findings, fmt
from .match import cell_text
from . import shown
from .summary import summary

HEADS = {"@paper": "paper", "@verdict": "verdict", "@ours": "ours", "@interval": "95 % interval", "@p": "p (Holm)",
         "@detectable": "detectable at 80 % power"}
RESERVED = {"where", "paper", "candidates", "baseline", "treatment", "table"}


def _num(x, spec: str = ".2f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _columns(f, r: dict) -> list[tuple[str, str]]:
    """(key, heading) of each table column: declared, or the unit's fields then the kind's own."""
    declared = (f.get("layout") or {}).get("columns")
    if declared is None:
        fields = [k for k in r["unit"] if k not in RESERVED]
        own = ["@paper", "@ours", "@interval", "@p", "@detectable", "@verdict"] if is_paired(f) else \
            ["@paper", "@candidates", "@verdict"]
        declared = fields + own
    out = []
    for c in declared:
        key, head = next(iter(c.items())) if isinstance(c, dict) else (c, None)
        out.append((key, head if head is not None else HEADS.get(key, key)))
    return out


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _wide(f, res: dict) -> list[str]:
    units = res["units"]
    cols = _columns(f, units[0])
    heads = []
    for key, head in cols:
        heads += [c["head"] for c in units[0]["candidates"]] if key == "@candidates" else [head]
    lines = [_line(heads), "|" + "---|" * len(heads)]
    for r in units:
        lines.append(_line([x for key, _ in cols for x in _cell(f, r, key)]))
    return lines


def _cell(f, r: dict, key: str) -> list[str]:
    if key == "@paper":
        return [signed(r["paper"]) if is_paired(f) else _num(r["paper"])]
    if key == "@candidates":
        return [cell_text(r["cells"][x["value"]]) for x in r["candidates"]]
    if key == "@verdict":
        return [r["verdict"]]
    if key == "@ours":
        return [signed(r["ours"])]
    if key == "@interval":
        return [f"[{_num(r.get('lo'))}, {_num(r.get('hi'))}]"]
    if key == "@p":
        return [_num(r.get("p_holm"), ".3g")]
    if key == "@detectable":
        return [_num(r.get("detectable"))]
    return [str(r["unit"].get(key, ""))]


def render(ctx, f) -> str:
    """One finding's part of its page block."""
    res = evaluate(ctx, f)
    runs = [c for r in res["units"] for c in (r["cells"].values() if isinstance(r["cells"], dict) else r["cells"])]
    seeds = f.seeds
    tokens = {"seeds": f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else fmt(seeds[0]), "evidence": f.get("evidence"),
              "tolerance": fmt(f.tolerance), "recorded": sum(c["seeds"] for c in runs),
              "expected": sum(c["need"] for c in runs)}
    parts = [fill(f.get("intro") or "", **tokens), "\n".join(_wide(f, res))]
    return "\n\n".join(p for p in parts if p)


def page_blocks(ctx) -> dict[str, dict]:
    """{page: {block: renderer(ctx)}} of every declaration (several findings may share a block; a finding may
    render into several pages)."""
    out: dict[str, dict] = {}
    for f in findings(ctx):
        for path, block in f.pages:
            out.setdefault(path, {}).setdefault(block, []).append(f.id)
    return {path: {block: _joined(ids, path) for block, ids in blocks.items()} for path, blocks in out.items()}


def _joined(ids: list[str], page: str):
    def block(ctx) -> str:
        by_id = {f.id: f for f in findings(ctx)}
        fs = [by_id[i] for i in ids]
        if all(is_paired(f) for f in fs):
            return claims(ctx, fs)
        return "\n\n".join(summary(ctx, f, page) if f.kind == "summary" else
                             shown.render(ctx, f) if f.kind == "tables" else render(ctx, f) for f in fs)
    return block


CLAIM_COLUMNS = ("claim", "paper", "ours (95 % interval)", "p (Holm)", "verdict", "detectable at 80 % power")


def claims(ctx, fs: list) -> str:
    """Paired claims sharing a block: one line per claim (its question, and its unit's fields where it has several):
    the paper's effect, ours (the mean paired difference with its 95 % interval), the Holm-adjusted p, the verdict
    (while a claim waits, what it waits for: its runs recorded of those expected, the legacy records set aside) and
    the difference the design detects; then the count of each verdict."""
    lines = [_line(list(CLAIM_COLUMNS)), "|" + "---|" * len(CLAIM_COLUMNS)]
    count = dict.fromkeys(STATE_NAMES, 0)
    for f in fs:
        units = evaluate(ctx, f)["units"]
        for r in units:
            extra = ", ".join(str(v) for k, v in r["unit"].items() if k not in RESERVED and k != "column"
                              and len(units) > 1)
            ours = "-" if r["state"] == "waits" else f"{signed(r['ours'])} [{_num(r.get('lo'))}, {_num(r.get('hi'))}]"
            lines.append(_line([f.get("question") + (f" ({extra})" if extra else ""), signed(r["paper"]), ours,
                                _num(r.get("p_holm"), ".3g"), r["verdict"], _num(r.get("detectable"))]))
            count[r["state"]] += 1
    return "\n".join(lines) + "\n\n" + "; ".join(f"{STATE_NAMES[s]}: {n}" for s, n in count.items()) + "."
