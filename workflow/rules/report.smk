# Tables and figures: one generic rule each; the kind comes from the config entry.
from fedflat.papers.catalog import report_caption  # captions name the paper table/figure (workflow/report/*.rst)


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
        "{PY} -m fedflat table --manifest {params.manifest:q} --out {output.md}"


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
        "{PY} -m fedflat figure --manifest {params.manifest:q} --out {output.pdf} {output.png}"
