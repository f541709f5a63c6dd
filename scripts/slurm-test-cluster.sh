#!/bin/bash
# A real one-host Slurm for the suite's tests of rendered batch scripts (tests/test_slurm.py).
#
#   scripts/slurm-test-cluster.sh up     install slurm-wlm and munge with apt when missing
#                                        (root only), start munged, slurmctld and two slurmd
#                                        "nodes" (n1, n2) on this host, wait until both are idle
#   scripts/slurm-test-cluster.sh down   cancel the cluster's jobs, stop what `up` started (PIDs)
#   scripts/slurm-test-cluster.sh status  exit 0 when the test cluster answers
#
# The cluster is named gcntrain-test (the tests submit only to a cluster of that name), its
# default MPI plugin is none (Slurm's own default, MPI_DEFAULT=pmi2|pmix changes it), each
# node has CPUS (default 4) CPUs, more than the host's cores (config_overrides, task/none:
# no binding), and state lives under STATE (default /var/tmp/gcntrain-slurm). Debian 12's
# slurm-wlm 22.05 and munge; no systemd is needed.
set -euo pipefail
CLUSTER=gcntrain-test
CPUS=${CPUS:-4}
MPI_DEFAULT=${MPI_DEFAULT:-none}
STATE=${STATE:-/var/tmp/gcntrain-slurm}
CONF=/etc/slurm/slurm.conf

die() { echo "slurm-test-cluster: $*" >&2; exit 1; }

answers() {
  local conf
  conf=$(timeout 10 scontrol show config 2>/dev/null) || return 1
  grep -Eq "^ClusterName += +$CLUSTER\$" <<<"$conf"
}

install_packages() {
  command -v slurmctld >/dev/null && command -v munged >/dev/null && return
  [ "$(id -u)" = 0 ] || die "slurm-wlm and munge are not installed and this is not root"
  command -v apt-get >/dev/null || die "slurm-wlm and munge are not installed and there is no apt-get"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge
}

write_conf() {
  local host
  host=$(hostname)
  mkdir -p /etc/slurm
  cat > "$CONF" <<CONF
# written by gcntrain's scripts/slurm-test-cluster.sh: a test cluster on one host
ClusterName=$CLUSTER
SlurmctldHost=$host
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
# a requeued job may start again after the credential lifetime: 120 s by default, 10 here
AuthInfo=cred_expire=10
MpiDefault=$MPI_DEFAULT
# seconds between SIGTERM and SIGKILL when a job step ends: 30 by default, 5 here (the
# killed-rank test waits for it)
KillWait=5
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d-%n
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd-%n.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd-%n.log
SchedulerType=sched/backfill
# jobs that become eligible later (a requeued one) start within 2 s, not a 30-60 s cycle
SchedulerParameters=bf_interval=2,sched_interval=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=600
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=17101 CPUs=$CPUS Sockets=1 CoresPerSocket=$CPUS ThreadsPerCore=1 RealMemory=8000 State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=17102 CPUs=$CPUS Sockets=1 CoresPerSocket=$CPUS ThreadsPerCore=1 RealMemory=8000 State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
CONF
}

up() {
  if answers; then echo "slurm-test-cluster: $CLUSTER is already up"; sinfo -N; return; fi
  [ "$(id -u)" = 0 ] || die "bringing the test cluster up needs root"
  install_packages
  if [ -f "$CONF" ] && ! grep -q "^ClusterName=$CLUSTER\$" "$CONF"; then
    die "$CONF belongs to another cluster; not replacing it"
  fi
  mkdir -p "$STATE/ctld" "$STATE/d-n1" "$STATE/d-n2"
  chown slurm:slurm "$STATE/ctld"
  write_conf
  if [ ! -s /etc/munge/munge.key ]; then
    mungekey -c -f
    chown munge:munge /etc/munge/munge.key
  fi
  install -d -o munge -g munge -m 755 /run/munge
  if ! runuser -u munge -- munge -n >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged
  fi
  /usr/sbin/slurmctld
  /usr/sbin/slurmd -N n1
  /usr/sbin/slurmd -N n2
  for _ in $(seq 1 60); do
    if [ "$(sinfo -h -o %T 2>/dev/null | sort -u)" = idle ]; then sinfo -N; return; fi
    sleep 0.5
  done
  sinfo -N || true
  die "the nodes did not become idle in 30 s (logs in $STATE)"
}

down() {
  if answers; then
    scancel --full $(squeue -h -o %i) 2>/dev/null || true
  fi
  for f in "$STATE/slurmd-n1.pid" "$STATE/slurmd-n2.pid" "$STATE/slurmctld.pid"; do
    if [ -f "$f" ]; then kill "$(cat "$f")" 2>/dev/null || true; rm -f "$f"; fi
  done
  echo "slurm-test-cluster: stopped"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) answers ;;
  *) die "usage: $0 up|down|status" ;;
esac
