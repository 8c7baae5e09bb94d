# Parse-time validation and the study's expansion. All logic lives in the fedflat package.
import json
import sys

import jsonschema
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

import fedflat.plugins  # noqa: F401  (the composition root: registers every preset, model, data set, hook and kind)
from fedflat.errors import ConfigError
from fedflat.models.registry import job_threads
from fedflat.study import figure_inputs, figure_manifest, load_study, table_inputs, table_manifest

SCHEMA = workflow.source_path("../schemas/config.schema.yaml")


def _die(msg):
    # One line naming the key, before any job runs; nothing already produced is touched.
    print(f"fedflat: config error: {msg}", file=sys.stderr)
    sys.exit(2)


try:
    validate(config, schema=SCHEMA)
except WorkflowError:
    import yaml
    from fedflat.study import schema_error

    _die(schema_error(config, yaml.safe_load(open(SCHEMA))))

try:
    STUDY = load_study(config)
except ConfigError as exc:
    _die(exc)

PY = sys.executable
DATA_ROOT = config.get("data_root", "data")
DEVICE = config.get("device", "cpu")
DOWNLOAD = "--download" if config.get("download", False) else ""
THREADS = int(config.get("threads_per_job", 1))
RES = config.get("resources", {}) or {}
USES_GPU = DEVICE != "cpu"
NUMERICS = STUDY.numerics  # portable | native (validated): the kernel settings of every training and analysis job
CLEAN = "--require-clean" if STUDY.requires_clean else ""  # paper scale: no run from a modified working tree


def _spec(run):
    """The run's spec; a run this study does not hold (a typo, or a leaderboard stage whose checkpoint file is not
    here yet) is one line naming it, not a KeyError while the DAG is built."""
    if run not in STUDY.runs:
        _die(f"results/runs/{run}: no run of study {config.get('study')!r} has this id"
             + (" (a leaderboard final or ablation run is known once its stage's choice file exists: run "
                "`snakemake leaderboard_runs` first)" if STUDY.leaderboard is not None else ""))
    return STUDY.runs[run]
