# One federated training run per job. The run id is a function of all its settings.


rule train:
    input:
        # ancient: a partition is fixed by its id (seeded); rewriting the file (regenerating a corrupted one) never
        # redoes, and so never deletes, a run already trained on it (the parse-time check in common.smk refuses a
        # corrupted partition before anything is scheduled)
        partition=lambda wc: ancient(STUDY.partition_path(_spec(wc.run).partition_id())),
    output:
        metrics="results/runs/{run}/metrics.csv",
        summary="results/runs/{run}/summary.json",
        model="results/runs/{run}/model.pt",
    params:
        spec=lambda wc: _spec(wc.run).job_params(),  # canonical: new defaulted keys rerun nothing
        out_dir=lambda wc: f"results/runs/{wc.run}",
    log:
        "results/runs/{run}/train.log",
    benchmark:
        "results/runs/{run}/benchmark.tsv"  # wall s, max RSS MB, CPU s: rendered by rule benchmarks (report.smk)
    threads: lambda wc: job_threads(_spec(wc.run).model, THREADS)  # MLPs: 1 (training/models/model_registry.py)
    resources:
        gpu=1 if USES_GPU else 0,
        mem_mb=RES.get("train_mem_mb", 4000),
        runtime=RES.get("train_runtime_min", 120),
    shell:
        "{PY} -m fedflat train --spec {params.spec:q} --partition {input.partition} "
        "--out-dir {params.out_dir} --data-root {DATA_ROOT} --device {DEVICE} {DOWNLOAD} "
        "--threads {threads} --numerics {NUMERICS} {CLEAN} 2>&1 | tee {log}"


# Paper scale (evidence runs): no training from a modified working tree, refused in one line before any job starts
# (a dry run, or a run with nothing to train, is never refused); `--config allow_dirty=true` lets an experiment
# through, and its records then cannot be exported without --keep-legacy (fedflat.evidence.export).
onstart:
    if CLEAN and any(j.rule.name == "train" for j in workflow.dag.needrun_jobs()):
        from fedflat.cli import require_clean_commit

        try:
            require_clean_commit()
        except ConfigError as exc:
            _die(exc)
