#!/usr/bin/env bash
# Stop the daemons started by ci/slurm_up.sh, by PID file (never by name).
SLURM_DIR=${SLURM_DIR:-/tmp/fedflat-slurm}
pids=("$SLURM_DIR/slurmd.pid" "$SLURM_DIR/slurmctld.pid")
[ -f "$SLURM_DIR/munged.ours" ] && pids+=(/run/munge/munged.pid)
for f in "${pids[@]}"; do
  [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
done
sleep 1
exit 0
