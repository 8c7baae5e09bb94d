# Per-run analysis files: thin rules over `python -m fedflat.analysis` (src/fedflat/pipeline/analysis/analysis_commands.py).
# Parameters come from the config's top-level `analysis: {hessian: ..., landscape: ..., stability: ...}`
# (defaults and domains in src/fedflat/pipeline/analysis/params.py); they are checked here, at parse time.
from fedflat.pipeline.analysis.params import from_config as _analysis_params, job_params as _job_params

try:
    ANALYSIS = {c: _job_params(c, _analysis_params(config, c)) for c in ("hessian", "landscape", "stability")}
except ConfigError as exc:
    _die(exc)


def _run_dir(wc):
    return f"results/runs/{wc.run}"


def _hessian_params(wc):
    """The study's hessian settings; hessian_test.json / hessian_clients.json take their split from the name."""
    if not wc.split:
        return ANALYSIS["hessian"]
    return json.dumps({**json.loads(ANALYSIS["hessian"]), "split": wc.split.lstrip("_")}, sort_keys=True)


rule hessian:
    input:
        model="results/runs/{run}/model.pt",
    output:
        "results/runs/{run}/hessian{split}.json",
    wildcard_constraints:
        split="|_test|_clients",
    params:
        p=_hessian_params,
        run_dir=_run_dir,
    log:
        "results/runs/{run}/hessian{split}.log",
    threads: THREADS
    resources:
        gpu=1 if USES_GPU else 0,
    shell:
        "{PY} -m fedflat.analysis hessian --numerics {NUMERICS} --run-dir {params.run_dir} --out {output} --params {params.p:q} "
        "--data-root {DATA_ROOT} --device {DEVICE} {DOWNLOAD} --threads {threads} 2> {log}"


def _snapshot_params(wc):
    """The study's hessian settings at the round and protocol (train|test|clients|local) of the file name."""
    return json.dumps({**json.loads(ANALYSIS["hessian"]), "round": int(wc.round), "split": wc.split}, sort_keys=True)


# The Hessian of an end-of-round snapshot (training.snapshot_rounds; src/fedflat/training/fl/snapshots.py) under one of
# FedSynSAM Table I's candidate protocols. The snapshots are written by the run's train job, which declares only
# its fixed outputs: model.pt stands for "the run (and so every snapshot) is done"; a round the run does not
# snapshot fails with one line naming training.snapshot_rounds (tables that read these files check it at parse time).
rule hessian_snapshot:
    input:
        model="results/runs/{run}/model.pt",
    output:
        "results/runs/{run}/hessian_r{round}_{split}.json",
    wildcard_constraints:
        round="[1-9][0-9]*",
        split="train|test|clients|local",
    params:
        p=_snapshot_params,
        run_dir=_run_dir,
    log:
        "results/runs/{run}/hessian_r{round}_{split}.log",
    threads: THREADS
    resources:
        gpu=1 if USES_GPU else 0,
    shell:
        "{PY} -m fedflat.analysis hessian --numerics {NUMERICS} --run-dir {params.run_dir} --out {output} --params {params.p:q} "
        "--data-root {DATA_ROOT} --device {DEVICE} {DOWNLOAD} --threads {threads} 2> {log}"


rule landscape:
    input:
        model="results/runs/{run}/model.pt",
    output:
        "results/runs/{run}/landscape_{dims}d.npz",
    wildcard_constraints:
        dims="[12]",
    params:
        p=ANALYSIS["landscape"],
        run_dir=_run_dir,
    log:
        "results/runs/{run}/landscape_{dims}d.log",
    threads: THREADS
    resources:
        gpu=1 if USES_GPU else 0,
    shell:
        "{PY} -m fedflat.analysis landscape --numerics {NUMERICS} --dims {wildcards.dims} --run-dir {params.run_dir} --out {output} "
        "--params {params.p:q} --data-root {DATA_ROOT} --device {DEVICE} {DOWNLOAD} --threads {threads} 2> {log}"


rule stability:
    input:
        model="results/runs/{run}/model.pt",
        partition=lambda wc: ancient(STUDY.partition_path(_spec(wc.run).partition_id())),  # as in train.smk
    output:
        json="results/runs/{run}/stability.json",
        partition="results/runs/{run}/stability_partition.npz",
        models="results/runs/{run}/stability_models.pt",
    params:
        p=ANALYSIS["stability"],
        run_dir=_run_dir,
    log:
        "results/runs/{run}/stability.log",
    threads: THREADS
    resources:
        gpu=1 if USES_GPU else 0,
        runtime=RES.get("train_runtime_min", 120),
    shell:
        "{PY} -m fedflat.analysis stability --numerics {NUMERICS} --run-dir {params.run_dir} --partition {input.partition} "
        "--out {output.json} --params {params.p:q} --data-root {DATA_ROOT} --device {DEVICE} {DOWNLOAD} "
        "--threads {threads} 2> {log}"
