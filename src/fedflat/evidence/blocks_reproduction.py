"""Generated blocks of docs/reproduction.md and the README's reproduction summary: FedSynSAM's Fashion-MNIST
targets, from the committed evidence and the catalog (published values)."""
from __future__ import annotations

from .atlas import anchor
from .store import embed

TARGETS = ("table2_A_fmnist", "table2_B_fmnist", "table2_C_fmnist", "table1_hessian")
FIGURES = ("fig1_landscape",)
PENDING = ("Not in the committed evidence yet. (The runs of 25 Nov 2026 behind the earlier text were lost with "
           "their machine before per-run evidence was kept; they are regenerated under the protocol of issue 25.)")


def _row(ctx, target: str) -> dict:
    return next(r for r in ctx.atlas("fedsynsam") if r["target"] == target)


def summary_linking(page: str):
    """The summary table, its links relative to the page it stands on (`page`: the path to reproduction.md from
    there, "" on that page itself)."""
    def summary(ctx) -> str:
        lines = ["| target | paper table | published cells | re-run at paper scale | within 2 points |",
                 "|---|---|---|---|---|"]
        for t in TARGETS:
            r = _row(ctx, t)
            share = f"{r['within']} of {r['compared']}" if r["compared"] else "-"
            lines.append(f"| [`{t}`]({page}#{anchor('fedsynsam', t)}) | {r['ref']} | {r['published']} | "
                         f"{r['reproduced']} | {share} |")
        return "\n".join(lines)
    return summary


def target(name: str):
    def block(ctx) -> str:
        r = _row(ctx, name)
        text = ctx.evidence("fedsynsam").table_text(name)
        if text is None or not r["reproduced"]:
            return PENDING
        share = f"{r['within']} of {r['compared']}" if r["compared"] else "none"
        head = (f"Re-run at paper scale: {r['reproduced']} of {r['published']} published cells; within 2 points: {share} "
                f"(`python -m fedflat.evidence trace fedsynsam {name} ROW COLUMN` lists the runs behind a cell).")
        return head + "\n\n" + embed(text)
    return block


def figure(name: str):
    def block(ctx) -> str:
        link = ctx.figure_link("fedsynsam", name)
        return f"![FedSynSAM {name}]({link})" if link else PENDING
    return block


def study_table(study: str, name: str):
    """A tuning study's table as its own rule rendered it (exported under results/evidence/<study>/tables/): a
    diagnostic that selects nothing is shown, not re-derived."""
    def block(ctx) -> str:
        text = ctx.evidence(study).table_text(name)
        if text is None:
            return "Not in the committed evidence yet: the table is exported once every run behind it has finished."
        return embed(text)
    return block
