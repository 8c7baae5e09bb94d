# Parse-time validation and the study's expansion. All logic lives in the fedflat package.
import json
import shlex
import sys

import fedflat.plugins  # noqa: F401  (the composition root: registers every preset, model, data set, hook and kind)
from fedflat.training.data.partition import check_existing as check_partitions
from fedflat.core.errors import ConfigError
from fedflat.pipeline.inputs import validate_config
from fedflat.training.models.model_registry import job_threads
from fedflat.pipeline.study import figure_inputs, figure_manifest, table_inputs, table_manifest

SCHEMA = workflow.source_path("../schemas/config.schema.yaml")


def _die(msg):
    # One line naming the key, before any job runs; nothing already produced is touched.
    print(f"fedflat: config error: {msg}", file=sys.stderr)
    sys.exit(2)


# the same checks as `fedflat validate` and `fedflat train` (src/fedflat/pipeline/inputs.py): the schema, then the study;
# then every partition file already made: a corrupted one is refused here, before Snakemake schedules (and removes
# the outputs of) any job that reads it
_AGAIN = "snakemake --cores 1 {path}" + "".join(f" --configfile {shlex.quote(str(f))}"
                                                  for f in workflow.overwrite_configfiles)
try:
    STUDY = validate_config(config, SCHEMA)
    check_partitions((STUDY.partition_path(pid) for pid in STUDY.partitions), command=_AGAIN)
except ConfigError as exc:
    _die(exc)

# Values that reach the rules' shell commands are shell-quoted here, once: a data_root such as 'data$(touch x)' is a
# directory name to the shell, never code. A plain value ('data', 'cpu') quotes to itself, so the commands of
# existing jobs stay what they were (Snakemake reruns a finished job whose command text or params changed).
PY = shlex.quote(sys.executable)
DATA_ROOT = shlex.quote(str(config.get("data_root", "data")))
DEVICE = shlex.quote(str(config.get("device", "cpu")))
DOWNLOAD = "--download" if config.get("download", False) else ""
THREADS = int(config.get("threads_per_job", 1))
RES = config.get("resources", {}) or {}
USES_GPU = config.get("device", "cpu") != "cpu"
NUMERICS = STUDY.numerics  # portable | native (validated): the kernel settings of every training and analysis job
CLEAN = "--require-clean" if STUDY.requires_clean else ""  # paper scale: no run from a modified working tree


def shell_quoted(values: dict) -> dict:
    """A rule's params with every string shell-quoted (identical for plain names: no params-triggered rerun)."""
    return {k: shlex.quote(v) if isinstance(v, str) else v for k, v in values.items()}


def _spec(run):
    """The run's spec; a run this study does not hold (a typo, or a leaderboard stage whose checkpoint file is not
    here yet) is one line naming it, not a KeyError while the DAG is built."""
    if run not in STUDY.runs:
        _die(f"results/runs/{run}: no run of study {config.get('study')!r} has this id"
             + (" (a leaderboard final or ablation run is known once its stage's choice file exists: run "
                "`snakemake leaderboard_runs` first)" if STUDY.leaderboard is not None else ""))
    return STUDY.runs[run]
