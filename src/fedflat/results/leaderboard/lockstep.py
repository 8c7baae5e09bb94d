"""`python -m fedflat.leaderboard --lockstep RUN_A RUN_B [--rounds N] [--backend B]`: train two runs of a study in
one process, round by round, and print ‖θ_a − θ_b‖ after each round.

For the leaderboard's pairs of runs that an exact ρ = 0 reduction (algorithms.reductions.RHO0) says compute the
same thing, e.g. FedLESAM-S at ρ = 0 and SCAFFOLD at the same lr: a distance of 0 in every round shows that the
code running now computes them identically, so a difference between their recorded numbers comes from the runs'
code (the commit, the local-step backend), not from the methods. Both runs need the same partition and data."""
from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path


def lockstep(spec_a, spec_b, data, partition, rounds: int, out_dir, backend: str | None = None) -> list[float]:
    """‖θ_a − θ_b‖₂ (float64) after each of the first `rounds` rounds of the two specs, trained side by side from
    their own initialisations; `backend` overrides training.backend for both (None: each spec's own)."""
    from ...pipeline.analysis.stability import lockstep_distances
    from ...training.fl.engine import Simulation

    sims = []
    for spec, name in ((spec_a, "a"), (spec_b, "b")):
        training = spec.training if backend is None else {**spec.training, "backend": backend}
        sims.append(Simulation(replace(spec, analysis={}, training=training), data, partition, Path(out_dir) / name,
                               progress=False))
    return lockstep_distances(*sims, rounds)


def compare(study, run_a: str, run_b: str, rounds: int | None = None, backend: str | None = None,
            data_root: str = "data") -> list[float]:
    """lockstep() of two runs of `study`, each checked first: a run of the study, one partition file, on disk."""
    from ...training.data.array_dataset import load_dataset
    from ...training.data.partition import Partition
    from ...core.errors import ConfigError

    specs = []
    for rid in (run_a, run_b):
        if rid not in study.runs:
            raise ConfigError(f"{rid}: not a run of this study")
        specs.append(study.runs[rid])
    files = sorted({study.partition_path(s.partition_id()) for s in specs})
    if len(files) != 1:
        raise ConfigError(f"{run_a}, {run_b}: the runs use different partitions ({', '.join(files)})")
    if not Path(files[0]).exists():
        raise ConfigError(f"{files[0]}: no partition file; Snakemake writes it (`snakemake {files[0]}`)")
    data = load_dataset(specs[0].dataset, data_root)
    with tempfile.TemporaryDirectory() as tmp:
        return lockstep(specs[0], specs[1], data, Partition.load(files[0]), rounds or specs[0].rounds, tmp, backend)


def render(distances: list[float]) -> str:
    lines = [f"round {t:4d}  ‖θ_a − θ_b‖ = {x:.3e}" for t, x in enumerate(distances, 1)]
    return "\n".join(lines + [f"identical in {sum(x == 0 for x in distances)} of {len(distances)} rounds; largest "
                              f"distance {max(distances):.3e}"])
