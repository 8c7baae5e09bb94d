"""Paper catalogs: every table and figure of the five papers as study-config data.

catalog         -- a catalog's own keys (paper:, pending entries), captions; the `scale` knob is the study's
                   (fedflat.pipeline.scale)
published       -- parsing the published values copied from the papers ("79.63±0.27", "1000+", "-")
cell_stats      -- mean ± std over seeds, rounds to a target accuracy ("T+" when never reached)
kinds_paper     -- table/figure kinds: paper_table, paper_curves, paper_sweep (kinds_*: the catalogs' other kinds)
stated_settings -- what each paper states about its runs, checked against the catalog at paper scale
standins        -- digits-sized stand-in datasets/models (`tiny` scale); small ViTs for the pretrained
                   transformers (`reduced` scale)

`python -m fedflat.papers` (fedflat/papers.py) runs __main__.main here. Every plugin module here (standins, the kinds,
catalog's study preparer) registers when the composition root (fedflat.plugins) imports it.
"""
