"""Reading tests of FedSynSAM's second tuning protocol (issue 25): which of two readings of a setting the paper
leaves open do its numbers support? Every row of Table II at block A's catalog settings runs under both readings on
validation; decided from the committed evidence by the rule config/papers/tuning/fedsynsam_fmnist_v2.yaml fixed
before the runs: a (method, column) cell supports the reading whose score alone lies within 2 points of the paper's
cell (a cell that supports both, or neither, counts for neither; a diverged or missing seed is never within); the
reading supported by more cells wins; a tie keeps the catalog's (literal) reading. The verdict waits until every
cell is recorded.

tkread_A: the Top-k compressor without (literal) or with error feedback on every uplink vector, both Top-k columns.
mlpread_A: Sec. VI-A's "two-layer MLP" as 784-200-200-10 (the catalog's) or 784-200-10, Q4 and Top-k 0.25."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .readings import (SEEDS, STUDY, TOLERANCE, complete, fmt_cell, published_cells, stage_cells,
                       within_paper)

ROWS = ("FedAvg", "DynaFed", "FedSAM", "FedLESAM", "FedSMOO", "FedGAMMA", "FedLESAM-D", "FedLESAM-S", "FedSynSAM")


@dataclass(frozen=True)
class ReadingTest:
    name: str                              # the experiments are <name>_<column key>_<mode>
    columns: dict[str, tuple[str, int]]    # column key -> (label, column index in table2_A_fmnist)
    modes: tuple[str, str]                 # the catalog's (literal) reading first: a tie keeps it
    words: dict[str, str]                  # mode -> how the page names it
    intro: str

    def cells(self, runs) -> dict[tuple[str, str, str], dict]:
        """{(method, column key, mode): cell} of the test's experiments."""
        keys, modes = "|".join(self.columns), "|".join(self.modes)
        return stage_cells(runs, re.compile(rf"^{self.name}_({keys})_({modes})$"), ROWS)

    def supports(self, literal: dict | None, other: dict | None, paper: float) -> str | None:
        """The reading one cell supports: the only one of the two whose score lies within TOLERANCE of the paper."""
        inside = [mode for mode, c in zip(self.modes, (literal, other)) if within_paper(c, paper)]
        return inside[0] if len(inside) == 1 else None

    def decide(self, cells: dict, published: dict[str, list[float]]) -> dict:
        """{count: {mode: cells supporting it}, reading: the winning mode, or None while a cell waits for its runs};
        `published`: {method: [the paper's mean per column, in `columns` order]}."""
        count = dict.fromkeys(self.modes, 0)
        waiting = False
        for method in ROWS:
            for j, key in enumerate(self.columns):
                pair = [cells.get((method, key, mode)) for mode in self.modes]
                waiting |= not complete(*pair)
                if (s := self.supports(*pair, published[method][j])) is not None:
                    count[s] += 1
        first, second = self.modes
        reading = None if waiting else (second if count[second] > count[first] else first)
        return {"count": count, "reading": reading}

    def block(self, ctx) -> str:
        runs = ctx.evidence(STUDY).runs()
        pub = published_cells(ctx, ROWS, [c for _, c in self.columns.values()])
        cells = self.cells(runs)
        w0, w1 = (self.words[m] for m in self.modes)
        lines = [f"Validation accuracy (%, last 10 % of rounds, mean over seeds {SEEDS[0]}-{SEEDS[-1]}; `{STUDY}`) "
                 f"{self.intro}, beside the paper's test accuracy. A cell supports the reading that alone lies within "
                 f"{TOLERANCE:g} points of the paper's cell.", "",
                 f"| method | column | paper | {w0} | {w1} | supports |", "|---|---|---|---|---|---|"]
        for method in ROWS:
            for j, (key, (label, _)) in enumerate(self.columns.items()):
                pair = [cells.get((method, key, mode)) for mode in self.modes]
                if not complete(*pair):
                    said = "waits for its runs"
                else:
                    s = self.supports(*pair, pub[method][j])
                    said = self.words[s] if s else "neither"
                lines.append(f"| {method} | {label} | {pub[method][j]:.2f} | {fmt_cell(pair[0])} | "
                             f"{fmt_cell(pair[1])} | {said} |")
        d = self.decide(cells, pub)
        n = len(ROWS) * len(self.columns)
        tally = f"Cells supporting each reading (of {n}): " + ", ".join(f"{self.words[m]} {d['count'][m]}"
                                                                       for m in self.modes) + "."
        verdict = ("Verdict: waits for its runs." if d["reading"] is None else
                   f"Verdict (the rule of the tuning config's header): {self.words[d['reading']]}.")
        return "\n".join(lines + ["", tally, "", verdict])


TOPK = ReadingTest("tkread_A", {"k10": ("Top-k 0.1", 2), "k25": ("Top-k 0.25", 3)}, ("off", "on"),
                   {"off": "no error feedback (literal)", "on": "error feedback"},
                   "at block A's Top-k catalog settings, without and with error feedback on every uplink vector")
MLP = ReadingTest("mlpread_A", {"q4": ("Q4", 0), "k25": ("Top-k 0.25", 3)}, ("mlp2", "mlp1"),
                  {"mlp2": "784-200-200-10 (catalog)", "mlp1": "784-200-10"},
                  "at block A's catalog settings with each reading of the two-layer MLP")
