# Tables and figures: one generic rule each; the kind comes from the config entry.
from fedflat.results.papers.catalog import report_caption  # captions name the paper table/figure (workflow/report/*.rst)


# the manifest goes through standard input: printf is a shell builtin (no exec), so a manifest over the
# kernel's 128 KiB per-argument limit (the leaderboard's 744-run tuning table) still gets through
rule table:
    input:
        lambda wc: table_inputs(STUDY, wc.name),
    output:
        md=report(f"{STUDY.tables_dir}/{{name}}.md", category="Tables", caption="../report/table.rst"),
        csv=f"{STUDY.tables_dir}/{{name}}.csv",
        tex=f"{STUDY.tables_dir}/{{name}}.tex",
    params:
        manifest=lambda wc: json.dumps(table_manifest(STUDY, wc.name)),
        caption=lambda wc: report_caption(STUDY, "tables", wc.name),
    shell:
        "printf '%s' {params.manifest:q} | {PY} -m fedflat table --manifest @- --out {output.md:q}"


rule figure:
    input:
        lambda wc: figure_inputs(STUDY, wc.name),
    output:
        pdf=report(f"{STUDY.figures_dir}/{{name}}.pdf", category="Figures", caption="../report/figure.rst"),
        png=f"{STUDY.figures_dir}/{{name}}.png",
    params:
        manifest=lambda wc: json.dumps(figure_manifest(STUDY, wc.name)),
        caption=lambda wc: report_caption(STUDY, "figures", wc.name),
    shell:
        "printf '%s' {params.manifest:q} | {PY} -m fedflat figure --manifest @- --out {output.pdf:q} {output.png:q}"


# Wall time and memory per training run (the train rule's `benchmark:` records), one table per study.
from fedflat.pipeline.report.benchmarks import benchmark_manifest, benchmarks_output, manifest_digest

BENCHMARKS_MD = benchmarks_output(STUDY)


rule benchmarks:
    input:
        lambda wc: [e["summary"] for e in benchmark_manifest(STUDY)],
    output:
        md=report(BENCHMARKS_MD, category="Benchmarks", caption="../report/benchmarks.rst"),
        csv=BENCHMARKS_MD[: -len(".md")] + ".csv",
    params:
        digest=lambda wc: manifest_digest(benchmark_manifest(STUDY)),  # labels or run set changed: rebuild
    run:
        from fedflat.pipeline.report.benchmarks import render_benchmarks

        render_benchmarks(benchmark_manifest(STUDY), output.md, title=f"Training runs of study {STUDY.config.get('study', '')}: wall time and memory")
