# fedflat: one DAG from config to every table and figure.
#   snakemake --cores all                               # the embedded default study
#   snakemake --cores all --configfile config/tiny.yaml  # CI smoke study
#   snakemake figures/convergence.pdf                   # one figure and only what it needs
from pathlib import Path

from snakemake.utils import min_version

min_version("8.0")

# The default study only when no --configfile was given: Snakemake deep-merges config files,
# which would otherwise mix the default experiments into every other study.
if not config:

    configfile: "config/config.yaml"


include: "workflow/rules/common.smk"


# Every other rule file (data, train, report, analysis, ...) is picked up as it is added.
for _smk in sorted(Path(workflow.basedir, "workflow/rules").glob("*.smk")):
    if _smk.name != "common.smk":

        include: str(_smk)


rule all:
    default_target: True
    input:
        STUDY.table_outputs(),
        STUDY.figure_outputs(),
        BENCHMARKS_MD,  # workflow/rules/report.smk: wall time and memory per training run
