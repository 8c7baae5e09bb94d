# Committed evidence (src/fedflat/evidence): `snakemake evidence --configfile <study>` exports what this
# results/ tree holds for the study (per-run records, cells, rendered tables, figures) into results/evidence/
# and figures/evidence/; `snakemake pages` re-renders the result pages (README, docs/leaderboard.md,
# docs/reproduction.md, docs/atlas.md, ...) from the committed evidence alone: no training is ever scheduled.
# Neither has an output file, so each runs whenever it is asked for, and never as part of `all`.


rule evidence:
    localrule: True
    run:
        from fedflat.evidence.export import export_study

        n = export_study(STUDY, config_path=workflow.configfiles[-1] if workflow.configfiles else None)
        print(f"evidence of {config.get('study')}: {n}")


rule pages:
    localrule: True
    input:
        sorted(str(p) for p in Path("results/evidence").rglob("*") if p.is_file()),
    run:
        from fedflat.evidence.pages import write

        print("re-rendered: " + (", ".join(write()) or "nothing changed"))
