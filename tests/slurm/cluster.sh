#!/usr/bin/env bash
# A single-node Slurm cluster on loopback, for tests: Debian's slurmctld, slurmd and munged with
# their configuration, state, logs and sockets in one directory, started and stopped by pid.
#
#   tests/slurm/cluster.sh start DIR   # prints SLURM_CONF=DIR/slurm.conf once the node is idle
#   SLURM_CONF=DIR/slurm.conf sbatch ...; squeue; scancel ...
#   tests/slurm/cluster.sh stop DIR
#
# The node offers this machine's CPUs (nproc) and its memory; GPUs only where nvidia-smi lists
# some. The daemons run as the calling user, which must be root (slurmd starts jobs as their
# owner). Slurm and munge are installed from Debian's packages when missing and apt-get can.
# Exit status: 0 started (or stopped), 77 Slurm cannot start here (the reason on stderr, for a
# test to skip with), 1 a failure that deserves a test failure (the daemons' logs on stderr).
set -uo pipefail

say() { printf 'cluster.sh: %s\n' "$*" >&2; }
cannot() {
  say "cannot start Slurm here: $*"
  exit 77
}

usage() {
  say "usage: $0 start|stop DIR"
  exit 2
}

[ $# -eq 2 ] || usage
command=$1
dir=$2

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

stop_pid_file() {
  local file=$1 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file" 2>/dev/null)
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null
}

stop() {
  # Jobs first, killed outright, while slurmctld and slurmd can still end them.
  if [ -f "$dir/slurm.conf" ] && [ -f "$dir/slurmctld.pid" ]; then
    local conf=$dir/slurm.conf
    SLURM_CONF=$conf scancel --quiet --full --signal=KILL --user="$(id -un)" 2>/dev/null
    SLURM_CONF=$conf scancel --quiet --user="$(id -un)" 2>/dev/null
    for _ in $(seq 1 100); do
      [ -z "$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  stop_pid_file "$dir/slurmd.pid"
  stop_pid_file "$dir/slurmctld.pid"
  stop_pid_file "$dir/munge/munged.pid"
  # Whatever a job left behind: processes that carry this cluster's SLURM_CONF.
  local environ pid
  for environ in /proc/[0-9]*/environ; do
    pid=${environ#/proc/}
    pid=${pid%/environ}
    [ "$pid" != $$ ] || continue
    if { tr '\0' '\n' <"$environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$dir/slurm.conf"; then
      kill -KILL "$pid" 2>/dev/null
    fi
  done
  return 0
}

install_if_missing() {
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
    && command -v sbatch >/dev/null && return 0
  [ "$(id -u)" -eq 0 ] || cannot "Slurm is not installed and installing it needs root"
  command -v apt-get >/dev/null || cannot "Slurm is not installed and there is no apt-get"
  say "installing Debian's slurm-wlm and munge"
  # Once more after refreshing the package lists, which a fresh machine may lack or have stale.
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >"$dir/apt.log" 2>&1 \
    && ! { apt-get update -q >>"$dir/apt.log" 2>&1 \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >>"$dir/apt.log" 2>&1; }; then
    tail -5 "$dir/apt.log" >&2
    cannot "apt-get install slurm-wlm munge failed"
  fi
}

show_logs() {
  for log in "$dir"/munge/munged.log "$dir"/slurmctld.log "$dir"/slurmd.log; do
    [ -f "$log" ] || continue
    say "--- last lines of $log"
    tail -20 "$log" >&2
  done
}

fail() {
  say "$*"
  show_logs
  stop
  exit 1
}

start() {
  [ "$(id -u)" -eq 0 ] || cannot "slurmd must run as root to start jobs (running as uid $(id -u))"
  mkdir -p "$dir" || fail "cannot create $dir"
  dir=$(cd "$dir" && pwd)
  # Unix socket paths (munge's, slurmstepd's in the spool directory) have at most 107 bytes.
  if [ "${#dir}" -gt 60 ]; then
    say "$dir is ${#dir} characters long: the sockets under it would not fit in 107 bytes;" \
      "use a directory of at most 60"
    exit 1
  fi
  install_if_missing
  if ! mkdir -p "$dir/munge" "$dir/state" "$dir/spool" || ! chmod 0700 "$dir/munge"; then
    fail "cannot create the cluster's directories in $dir"
  fi

  # munge: a fresh key, its socket in the cluster's directory.
  head -c 1024 /dev/urandom >"$dir/munge/munge.key" && chmod 0400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" 2>"$dir/munge/start.err" \
    || { cat "$dir/munge/start.err" >&2; cannot "munged does not start"; }

  local host cpus mem_mb gres="" gres_types=""
  host=$(hostname -s)
  cpus=$(nproc)
  mem_mb=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2))
  if command -v nvidia-smi >/dev/null; then
    local gpus
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    if [ "$gpus" -gt 0 ]; then
      gres="Gres=gpu:$gpus"
      gres_types="GresTypes=gpu"
      : >"$dir/gres.conf"
      for i in $(seq 0 $((gpus - 1))); do
        echo "NodeName=onset-node Name=gpu File=/dev/nvidia$i" >>"$dir/gres.conf"
      done
    fi
  fi

  cat >"$dir/slurm.conf" <<CONF
ClusterName=onset-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.log
SchedulerType=sched/backfill
# Schedule pending jobs every second or two rather than every minute, and start a requeued job
# 10 s after it ended (the credential lifetime above) rather than 120 s: tests wait on both.
SchedulerParameters=sched_interval=2,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
KillWait=30
MinJobAge=600
$gres_types
NodeName=onset-node NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb $gres State=UNKNOWN
PartitionName=debug Nodes=onset-node Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF" 2>"$dir/slurmctld.err" || fail "slurmctld does not start: $(cat "$dir/slurmctld.err")"
  slurmd -f "$SLURM_CONF" -N onset-node 2>"$dir/slurmd.err" || fail "slurmd does not start: $(cat "$dir/slurmd.err")"
  for _ in $(seq 1 300); do
    state=$(sinfo -h -N -n onset-node -o %T 2>/dev/null)
    if [ "$state" = idle ]; then
      echo "SLURM_CONF=$SLURM_CONF"
      return 0
    fi
    sleep 0.1
  done
  fail "the node did not become idle within 30 s (sinfo says '${state:-nothing}')"
}

case $command in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
