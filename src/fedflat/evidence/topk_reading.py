"""Reading test tkread_A of FedSynSAM's second tuning protocol (issue 25): does error feedback belong to the Top-k
compressor of Table II? Every method at block A's Top-k catalog settings, both Top-k columns, without (`off`, the
catalog's literal reading) and with (`on`) error feedback on every uplink vector, on validation. Decided from the
committed evidence by the rule config/papers/tuning/fedsynsam_fmnist_v2.yaml fixed before the runs: a (method,
column) cell supports the reading whose score lies within 2 points of the paper's cell (a cell that supports both,
or neither, counts for neither; a diverged or missing seed is never within); the reading supported by more cells
wins; a tie keeps the literal reading. The verdict waits until every cell is recorded."""
from __future__ import annotations

import re

from .readings import SEEDS, STUDY, TOLERANCE, cell_mean, complete, fmt_cell, published_cells, stage_cells

ROWS = ("FedAvg", "DynaFed", "FedSAM", "FedLESAM", "FedSMOO", "FedGAMMA", "FedLESAM-D", "FedLESAM-S", "FedSynSAM")
COLUMNS = {"k10": ("Top-k 0.1", 2), "k25": ("Top-k 0.25", 3)}  # key -> (label, column index in table2_A_fmnist)
MODES = ("off", "on")  # the literal reading first: a tie keeps it
WORDS = {"off": "no error feedback (literal)", "on": "error feedback"}
_EXPERIMENT = re.compile(r"^tkread_A_(k10|k25)_(off|on)$")


def tkread_cells(runs) -> dict[tuple[str, str, str], dict]:
    """{(method, column key, off|on): cell} of the tkread_A_* experiments."""
    return stage_cells(runs, _EXPERIMENT, ROWS)


def supports(off: dict | None, on: dict | None, paper: float) -> str | None:
    """The reading one cell supports: the only one of the two whose score lies within TOLERANCE of the paper."""
    inside = [mode for mode, c in zip(MODES, (off, on))
              if (m := cell_mean(c)) is not None and abs(m - paper) <= TOLERANCE]
    return inside[0] if len(inside) == 1 else None


def decide(cells: dict, published: dict[str, list[float]]) -> dict:
    """{count: {off|on: cells supporting it}, reading: off|on, or None while a cell waits for its runs};
    `published`: {method: [the paper's Top-k 0.1 and Top-k 0.25 means]}."""
    count = dict.fromkeys(MODES, 0)
    waiting = False
    for method in ROWS:
        for j, key in enumerate(COLUMNS):
            off, on = cells.get((method, key, "off")), cells.get((method, key, "on"))
            waiting |= not complete(off, on)
            if (s := supports(off, on, published[method][j])) is not None:
                count[s] += 1
    reading = None if waiting else ("on" if count["on"] > count["off"] else "off")
    return {"count": count, "reading": reading}


def block(ctx) -> str:
    runs = ctx.evidence(STUDY).runs()
    pub = published_cells(ctx, ROWS, [c for _, c in COLUMNS.values()])
    cells = tkread_cells(runs)
    lines = [f"Validation accuracy (%, last 10 % of rounds, mean over seeds {SEEDS[0]}-{SEEDS[-1]}; `{STUDY}`) at "
             "block A's Top-k catalog settings, without and with error feedback on every uplink vector, beside the "
             f"paper's test accuracy. A cell supports the reading that alone lies within {TOLERANCE:g} points of "
             "the paper's cell.", "",
             "| method | column | paper | without | with error feedback | supports |", "|---|---|---|---|---|---|"]
    for method in ROWS:
        for j, (key, (label, _)) in enumerate(COLUMNS.items()):
            off, on = cells.get((method, key, "off")), cells.get((method, key, "on"))
            s = supports(off, on, pub[method][j]) if complete(off, on) else None
            lines.append(f"| {method} | {label} | {pub[method][j]:.2f} | {fmt_cell(off)} | {fmt_cell(on)} | "
                         f"{WORDS[s] if s else ('waits for its runs' if not complete(off, on) else 'neither')} |")
    d = decide(cells, pub)
    n = len(ROWS) * len(COLUMNS)
    tally = f"Cells supporting each reading (of {n}): " + ", ".join(f"{WORDS[m]} {d['count'][m]}" for m in MODES) + "."
    if d["reading"] is None:
        verdict = "Verdict: waits for its runs."
    else:
        verdict = f"Verdict (the rule of the tuning config's header): {WORDS[d['reading']]}."
    return "\n".join(lines + ["", tally, "", verdict])
