# Client partitions: one artifact per (dataset, scheme, clients, seed), shared by every algorithm.


rule partition:
    output:
        "results/partitions/{pid}.npz",
    params:  # shell-quoted values (common.smk): the command's text is unchanged, so no finished partition reruns
        p=lambda wc: shell_quoted(STUDY.partitions[wc.pid]),
        missing=lambda wc: shlex.quote(STUDY.partitions[wc.pid].get("missing_classes", "error")),
    log:
        "results/logs/partitions/{pid}.log",
    shell:
        "{PY} -m fedflat partition --dataset {params.p[dataset]} --spec {params.p[partition]} "
        "--num-clients {params.p[num_clients]} --seed {params.p[seed]} --variant {params.p[variant]} "
        "--samples-per-client {params.p[samples_per_client]} --data-root {DATA_ROOT} {DOWNLOAD} "
        "--missing-classes {params.missing} --out {output} 2> {log}"
