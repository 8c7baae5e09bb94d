"""Committed evidence: every published number travels with the per-run records it comes from.

records -- one compact row per run (settings that vary, seed, provenance, accuracy, curvature, cost, commit)
export  -- a study's results/ tree -> results/evidence/<study>/{runs.csv, cells.csv, tables/}, figures/evidence/
store   -- reading the committed evidence back (pandas), on a fresh clone without run directories
legacy  -- which records cannot be regenerated (no verdict reads them) and the label of a block that shows them
markers -- the begin/end markers of generated blocks in Markdown files
pages   -- which file holds which generated block; render them, or check them against the evidence (drift)
findings -- the one mechanism behind every declared finding (a config's `findings:`): records, decision, block
blocks_* -- the blocks still written as code: tables and statistics computed from the evidence only
atlas   -- docs/atlas.md: per paper and target, what is published, reproduced, out of reach
trace   -- the runs behind one table cell
"""
