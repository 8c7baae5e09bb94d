"""Do the five papers' headline comparisons survive one protocol? Each proposed method against the baselines of
its paper's headline table, on every leaderboard partition, by the final runs' test accuracy.

v3 (config/leaderboard.yaml `statistics:`): each pair is a paired t-test of proposed minus baseline over the seeds
both completed, with its 95 % interval; the comparisons of one paper on one partition are one family, corrected by
Holm (leaderboard.ranking.family). "better" / "worse" only where the corrected p is below alpha, "not
distinguishable" otherwise, "not testable" with fewer than two seeds both completed (a method with no pick, or
whose seeds failed: its stability is stated apart, never folded into the verdict)."""
from __future__ import annotations

import pandas as pd

from ...core.errors import ConfigError
from .ranking import family

# proposed preset: (paper catalog under config/papers/, table key) -- the table whose rows are the paper's main
# comparison (its first results table; FedSOL's Dirichlet half, the partition family the leaderboard ranks on).
HEADLINE = {
    "fednsam": ("fednsam", "table2"),             # FedNSAM Table 2: CIFAR-10/100, Dir(0.6)
    "fedsagd": ("fedsagd", "table2"),             # FedSAGD Table 2: CIFAR-10/100, Dir(0.3)
    "fedsol": ("fedsol", "table2_lda"),           # FedSOL Table 2 (LDA)
    "fedsynsam": ("fedsynsam", "table2_A_fmnist"),  # FedSynSAM Table II (A), Fashion-MNIST columns
    "fedtoga": ("fedtoga", "table1_upper"),       # FedTOGA Table 1 (upper): CIFAR-10, 100 clients
}
COLUMNS = ["proposed", "partition", "baseline", "n", "mean", "lo", "hi", "p", "p_holm", "verdict"]


def table_baselines(study, table: str, proposed: str) -> tuple[str, list[str]]:
    """(the table's reference, e.g. 'Table 2'; the presets of its experiment other than `proposed`, in order),
    from the paper's catalog as the study loader reads it (evidence.atlas.paper_study)."""
    spec = study.tables.get(table)
    if spec is None or spec.get("experiment") not in study.experiments:
        raise ConfigError(f"headline_claims.HEADLINE[{proposed!r}]: the catalog has no table {table!r} with an experiment")
    out = []
    for rid, _ in study.experiments[spec["experiment"]]:
        name = study.runs[rid].algorithm
        if name != proposed and name not in out:
            out.append(name)
    return str(spec.get("ref", table)), out


def claims(acc: dict[tuple[str, str], dict[int, float]], headline: dict[str, list[str]], partitions: list[str],
           statistics: dict | None = None, present: set | None = None) -> pd.DataFrame:
    """One row per (proposed method, partition, baseline) where both are ranked by the config (COLUMNS): the
    paired test of proposed - baseline and its verdict, Holm over each (proposed, partition) family. `acc`:
    (partition, preset) -> {seed: accuracy, NaN where failed} (leaderboard.ranking.seed_accuracies); a method
    with no final run there (no pick) has none and its pairs are not testable. `present`: the (partition, preset)
    pairs the ranking holds (default: those in `acc`)."""
    present = set(acc) if present is None else present
    rows = []
    for proposed, bases in headline.items():
        for part in partitions:
            if (part, proposed) not in present:
                continue
            fam = [{"proposed": proposed, "partition": part, "baseline": b, "a": acc.get((part, proposed), {}),
                    "b": acc.get((part, b), {})} for b in bases if (part, b) in present]
            rows += family(fam, statistics)
    return pd.DataFrame(rows, columns=COLUMNS + ["a", "b", "seeds"])[COLUMNS]
