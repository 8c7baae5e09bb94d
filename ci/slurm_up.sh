#!/usr/bin/env bash
# Bring up a single-node SLURM cluster on localhost (Debian 12, root, no systemd).
# Recipe and the settings it needs: ../shared/notes/slurm_single_node.md. Safe to re-run.
# Exit status 77: the daemons cannot be started here (not root, no apt, ...): callers skip.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SLURM_DIR=${SLURM_DIR:-/tmp/fedflat-slurm}
skip() { echo "SKIP: $*" >&2; exit 77; }

have() { command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
         && command -v sbatch >/dev/null; }
if ! have; then
  [ "$(id -u)" = 0 ] || skip "slurmctld/slurmd/munge not installed and not root (cannot apt-get install)"
  command -v apt-get >/dev/null || skip "slurm not installed and no apt-get"
  apt-get update -qq >/dev/null 2>&1 || skip "apt-get update failed (no package mirror reachable)"
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null 2>&1 \
    || skip "apt-get install slurmctld slurmd slurm-client munge failed"
fi
[ "$(id -u)" = 0 ] || skip "starting slurmctld/slurmd/munged needs root"
MARK="# written by fedflat ci/slurm_up.sh"
# ours: our marker, or the first line of the recipe's file (ClusterName=ci)
if [ -s /etc/slurm/slurm.conf ] && ! head -n 1 /etc/slurm/slurm.conf | grep -qE "^(# written by fedflat|ClusterName=ci$)"; then
  skip "/etc/slurm/slurm.conf exists and is not ours: this machine has a real SLURM set-up; not touching it"
fi

rm -rf "$SLURM_DIR"; mkdir -p "$SLURM_DIR/state" "$SLURM_DIR/spool"

# munge: key from the package postinst (create one if missing); munged runs as user munge.
[ -s /etc/munge/munge.key ] || mungekey --create --force
chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge
if ! { [ -f /run/munge/munged.pid ] && kill -0 "$(cat /run/munge/munged.pid)" 2>/dev/null; }; then
  su -s /bin/sh munge -c /usr/sbin/munged || skip "munged does not start"
  touch "$SLURM_DIR/munged.ours"   # slurm_down.sh stops munged only if we started it
fi
munge -n | unmunge >/dev/null || skip "munge round trip fails"

# slurm.conf must be at the default path: the slurm-jobstep plugin strips SLURM_* (incl.
# SLURM_CONF) before its inner srun. MinJobAge >= 3 x init-seconds keeps the plugin on squeue.
HOST=$(hostname -s)
MEM=$(( $(free -m | awk '/^Mem:/{print $2}') - 1024 ))
mkdir -p /etc/slurm
cat > /etc/slurm/slurm.conf <<CONF
$MARK
ClusterName=ci
SlurmctldHost=${HOST}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
MinJobAge=600
StateSaveLocation=${SLURM_DIR}/state
SlurmdSpoolDir=${SLURM_DIR}/spool
SlurmctldPidFile=${SLURM_DIR}/slurmctld.pid
SlurmdPidFile=${SLURM_DIR}/slurmd.pid
SlurmctldLogFile=${SLURM_DIR}/slurmctld.log
SlurmdLogFile=${SLURM_DIR}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=${SLURM_DIR}/jobcomp.txt
NodeName=${HOST} NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=${MEM} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF

slurmctld -c || skip "slurmctld does not start"
slurmd || skip "slurmd does not start"
for _ in $(seq 1 60); do
  [ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && break; sleep 0.5
done
if [ "$(sinfo -h -o %T 2>/dev/null)" != idle ]; then
  tail -n 30 "$SLURM_DIR"/*.log >&2 || true
  skip "the SLURM node did not become idle (see logs above)"
fi
timeout 60 srun -t 1 hostname >/dev/null || skip "srun smoke test failed"
echo "slurm up: $(sinfo -h -o '%P %a %D %T %N')"
