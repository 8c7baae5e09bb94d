#!/usr/bin/env bash
# Real SLURM test: bring up a one-node SLURM on localhost, run the CI study through
#   snakemake --profile workflow/profiles/slurm --configfile config/tiny.yaml
# in a scratch copy of the workflow, check that every output of a local run exists and that the
# metrics and tables are identical to the local run's, then stop the daemons.
# Exit 0: passed; 77: skipped (the daemons cannot start here; the reason is printed); else failed.
#   bash ci/slurm_test.sh              (needs root and apt, or slurm + munge already installed)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$REPO/.venv}
PY=$VENV/bin/python
CONFIG=${CONFIG:-config/tiny.yaml}
LIMIT=${SLURM_TEST_TIMEOUT:-1500}   # a hang guard, not a speed gate (a loaded 2-core box is slow)
export SLURM_DIR=${SLURM_DIR:-/tmp/fedflat-slurm}

"$PY" -c "import snakemake_executor_plugin_slurm" 2>/dev/null \
  || { echo "SKIP: snakemake-executor-plugin-slurm is not installed in $VENV" >&2; exit 77; }

rc=0; bash "$REPO/ci/slurm_up.sh" || rc=$?
[ "$rc" = 0 ] || exit "$rc"     # 77 = skip, with the reason already printed
WORK=$(mktemp -d /tmp/fedflat-slurm-test.XXXXXX)
local_pid=
cleanup() {
  [ -n "$local_pid" ] && kill -INT "$local_pid" 2>/dev/null && wait "$local_pid" 2>/dev/null
  bash "$REPO/ci/slurm_down.sh"; [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

for d in local slurm; do
  mkdir -p "$WORK/$d"; cp -r "$REPO/Snakefile" "$REPO/workflow" "$REPO/config" "$WORK/$d/"
done
t0=$(date +%s)
# The local reference run overlaps the SLURM run: SLURM jobs spend most of their time waiting.
"$VENV/bin/snakemake" -s "$WORK/local/Snakefile" --directory "$WORK/local" --cores 1 \
  --configfile "$WORK/local/$CONFIG" --quiet all >"$WORK/local/local.log" 2>&1 &
local_pid=$!
# squeue: no slurmdbd here, so sacct cannot report job states (the executor would hang forever).
# SIGINT, not SIGTERM, stops a waiting Snakemake.
( cd "$WORK/slurm" && timeout -s INT -k 30 "$LIMIT" "$VENV/bin/snakemake" --profile workflow/profiles/slurm \
    --configfile "$CONFIG" --jobs 4 --slurm-status-command squeue \
    --slurm-init-seconds-before-status-checks 2 --seconds-between-status-checks 2 \
    >slurm.log 2>&1 ) \
  || { tail -n 60 "$WORK/slurm/slurm.log"; echo "FAIL: snakemake on SLURM failed"; exit 1; }
t1=$(date +%s)
wait "$local_pid" || { tail -n 40 "$WORK/local/local.log"; echo "FAIL: local reference run failed"; exit 1; }
t2=$(date +%s)
njobs=$(grep -c "JobState=COMPLETED" "$SLURM_DIR/jobcomp.txt" || true)
nfail=$(grep -c -v "JobState=COMPLETED" "$SLURM_DIR/jobcomp.txt" || true)
"$PY" "$REPO/tests/faults/compare.py" "$WORK/local" "$WORK/slurm" || { echo "FAIL: SLURM outputs differ from the local run"; exit 1; }
[ "$njobs" -gt 0 ] || { echo "FAIL: no job went through SLURM"; exit 1; }
echo "PASS: $njobs SLURM jobs completed ($nfail other), outputs identical to the local run; slurm run $((t1 - t0)) s, whole test $((t2 - t0)) s (plus set-up)"
