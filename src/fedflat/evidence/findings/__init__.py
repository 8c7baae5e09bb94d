"""Findings as data: a claim's verdict, a diagnostic or a reading test is a declaration under the top-level
`findings:` list of a study, catalog or tuning config (the form: docs/findings.md); this package is the one
mechanism that reads them.

declared -- the declarations, checked (one-line ConfigError naming the finding and the key) and expanded
match    -- which committed records a finding reads (filters on record fields), its cells, the paper's values
decide   -- the decision kinds: closes_shortfall, ordering and paired_claim (the paired test, Holm within a family)
layout   -- the Markdown of a declared block; the page blocks derived from every declaration
summary  -- kind summary: the count of each verdict over groups of paired findings, the design's power, what no run
            here can test, the records the verdicts rest on (a legacy record feeds none: evidence/legacy.py)
shown    -- kind tables: a study's exported tables and figures as its rules rendered them, opened by a `pattern`
"""
