#!/usr/bin/env bash
# slurm_cluster.sh DIR start|stop
# A single-node Slurm cluster of Debian's packages (munged, slurmctld,
# slurmd) living in DIR: its own munge key and socket, a slurm.conf on
# 127.0.0.1 with free ports, state and logs under DIR. Not in a network
# namespace of its own: Slurm resolves the host's name, which an empty
# namespace cannot. `start` prints the
# SLURM_CONF to export.
set -euo pipefail
dir=$1 action=$2
conf=$dir/slurm.conf
if [ "$action" = stop ]; then
  for p in slurmd slurmctld munged; do
    [ -f "$dir/$p.pid" ] && kill "$(cat "$dir/$p.pid")" 2>/dev/null || true
  done
  sleep 1
  exit 0
fi
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
head -c 1024 /dev/urandom > "$dir/munge/munge.key"
chmod 400 "$dir/munge/munge.key"
sock=$dir/munge/munge.sock
munged --force --socket="$sock" --key-file="$dir/munge/munge.key" --log-file="$dir/munged.log" \
  --pid-file="$dir/munged.pid" --seed-file="$dir/munge/seed" < /dev/null > /dev/null 2>&1
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
host=$(hostname -s)
cpus=$(nproc)
cat > "$conf" <<CONF
ClusterName=coroner-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
RequeueExit=75
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$conf
# The daemons must not hold the caller's output open (ctest waits for it).
slurmctld -f "$conf" < /dev/null > /dev/null 2>&1
slurmd -f "$conf" -N "$host" < /dev/null > /dev/null 2>&1
for _ in $(seq 100); do
  if sinfo -h -o '%T' 2>/dev/null | grep -q idle; then
    echo "$conf"
    exit 0
  fi
  sleep 0.2
done
echo "slurm_cluster: the node did not come up; see $dir/*.log" >&2
exit 1
