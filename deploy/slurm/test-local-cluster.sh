#!/usr/bin/env bash
# The Slurm recipe end to end, on a real Slurm: a single-node cluster started
# on this machine, a shipped sweep submitted through submit.sh as an array
# of shards plus the merge, one shard made to fail, the merge's report of it,
# its resubmission, and the merged files compared byte for byte with an
# unsharded run.
#
#   bash deploy/slurm/test-local-cluster.sh [BOUNCE]
#
# BOUNCE is the binary to test (default target/debug/bounce, which
# `cargo test --workspace` builds; .ci/run passes it). Installs slurmctld,
# slurmd, the Slurm client and munge from the distribution's packages when
# they are absent (as root, with apt-get). Everything else lives in a
# temporary folder: the munge key, slurm.conf, state, logs and results. The
# daemons run in the foreground as this script's children and are stopped
# by PID when it exits, whatever happens. Every wait is bounded
# (SLURM_TEST_TIMEOUT seconds each, 180 by default). KEEP=1 keeps the
# folder for a look afterwards.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
bounce=$(realpath "${1:-$repo/target/debug/bounce}")
scenario=$repo/scenarios/shipped/contended-counter-sweep.toml
shards=8
# The shard made to fail on the first submission.
failing_shard=5
timeout_seconds=${SLURM_TEST_TIMEOUT:-180}
test_start=$(date +%s)

say() { echo "slurm-test: $*"; }
fail() {
  echo "slurm-test: FAILED: $*" >&2
  exit 1
}
[ -x "$bounce" ] || fail "no bounce binary at \`$bounce\` (build it, or pass its path)"

# --- packages --------------------------------------------------------------
missing=()
for tool in slurmctld slurmd munged sbatch scontrol squeue sinfo scancel; do
  command -v "$tool" > /dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "not installed: ${missing[*]}; installing slurmctld slurmd slurm-client munge"
  [ "$(id -u)" -eq 0 ] || fail "installing Slurm needs root (apt-get); run as root or install slurmctld slurmd slurm-client munge"
  # The packages' scripts would start system-wide daemons; this test starts
  # its own. policy-rc.d (exit 101) denies the starts during the install, and
  # is removed afterwards unless it was there before.
  added_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    added_policy=1
  fi
  # Twice, a minute apart, should the package mirror fail once.
  install_status=1
  for attempt in 1 2; do
    [ "$attempt" -eq 1 ] || sleep 60
    install_status=0
    {
      apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
          slurmctld slurmd slurm-client munge
    } > /tmp/bounce-slurm-apt.log 2>&1 || install_status=$?
    [ "$install_status" -ne 0 ] || break
  done
  [ "$added_policy" -eq 0 ] || rm -f /usr/sbin/policy-rc.d
  if [ "$install_status" -ne 0 ]; then
    tail -20 /tmp/bounce-slurm-apt.log >&2
    fail "apt-get install failed (log: /tmp/bounce-slurm-apt.log)"
  fi
  say "installed in $(($(date +%s) - test_start)) s"
fi

# --- the cluster's folder, and stopping everything on exit ------------------
work=$(mktemp -d /tmp/bounce-slurm-test.XXXXXX)
# munged refuses a socket in a folder others cannot search.
chmod 755 "$work"
daemon_pids=()
# The PIDs of the processes listening on sockets in this cluster's spool
# folder (the job steps' slurmstepd), read from /proc.
step_pids() {
  local inodes inode fd
  inodes=$(awk -v dir="$work/spool/" 'index($8, dir) == 1 { print $7 }' /proc/net/unix 2> /dev/null)
  [ -n "$inodes" ] || return 0
  for inode in $inodes; do
    for fd in /proc/[0-9]*/fd/*; do
      if [ "$(readlink "$fd" 2> /dev/null)" = "socket:[$inode]" ]; then
        fd=${fd#/proc/}
        echo "${fd%%/*}"
      fi
    done
  done | sort -u
}
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  # Jobs first, while the controller can still cancel them.
  if [ -n "${SLURM_CONF:-}" ] && [ ${#daemon_pids[@]} -ge 2 ]; then
    scancel --quiet --user="$(id -un)" 2> /dev/null || true
  fi
  # slurmd runs each job step in a slurmstepd of its own, which detaches
  # and can outlive slurmd by a moment; while it lives it listens on a
  # socket in the spool folder. Up to 10 s for them to end, then the ones
  # left are stopped by their PIDs too.
  for _ in $(seq 1 100); do
    [ -n "$(step_pids)" ] || break
    sleep 0.1
  done
  local pid
  for pid in $(step_pids); do
    kill -TERM "$pid" 2> /dev/null || true
  done
  for pid in "${daemon_pids[@]}"; do
    kill -TERM "$pid" 2> /dev/null || true
  done
  for pid in "${daemon_pids[@]}"; do
    # Up to 10 s to stop, then killed.
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2> /dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
  done
  if [ "$status" -ne 0 ]; then
    for log in "$work"/*.log "$work"/results/logs/*; do
      [ -f "$log" ] || continue
      echo "--- $log (last 30 lines)" >&2
      tail -30 "$log" >&2
    done
  fi
  if [ "${KEEP:-0}" = 1 ]; then
    say "kept $work"
  else
    rm -rf "$work"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Waits until COMMAND succeeds, polling, for at most timeout_seconds.
wait_for() {
  local what=$1
  shift
  local deadline=$(($(date +%s) + timeout_seconds))
  until "$@" > /dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "timed out after ${timeout_seconds} s waiting for $what"
    sleep 0.5
  done
}

# A TCP port nothing listens on (bash connects through /dev/tcp).
free_port() {
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 20000))
    if ! (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then
      echo "$port"
      return
    fi
  done
  fail "found no free TCP port"
}

# --- munge -----------------------------------------------------------------
dd if=/dev/urandom of="$work/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge.key"
munged --foreground --force \
  --key-file="$work/munge.key" --socket="$work/munge.socket" \
  --pid-file="$work/munged.pid" --seed-file="$work/munged.seed" \
  > "$work/munged.log" 2>&1 &
daemon_pids+=($!)
wait_for "munged's socket" test -S "$work/munge.socket"

# --- slurm.conf: one node (this machine, all its CPUs), one partition --------
host=$(hostname -s)
controller_port=$(free_port)
node_port=$(free_port)
[ "$controller_port" != "$node_port" ] || node_port=$((controller_port + 1))
mkdir -p "$work/state" "$work/spool"
cat > "$work/slurm.conf" << EOF
ClusterName=bouncetest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$controller_port
SlurmdPort=$node_port
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge.socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=bounce Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$work/slurm.conf
slurmctld -D -f "$SLURM_CONF" > "$work/slurmctld.log" 2>&1 &
daemon_pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" > "$work/slurmd.log" 2>&1 &
daemon_pids+=($!)
node_idle() { [ "$(sinfo -h -N -o %t 2> /dev/null)" = idle ]; }
wait_for "the node to come up idle" node_idle
cluster_up=$(date +%s)
say "cluster up (slurmctld on port $controller_port, slurmd on $node_port, $(nproc) CPUs) in $((cluster_up - test_start)) s"

# --- the reference: the same sweep, unsharded ------------------------------
"$bounce" run "$scenario" --out "$work/full" --quiet > /dev/null
runs=$(($(wc -l < "$work/full/results.csv") - 1))

# --- first submission: shard 5 cannot write its folder ---------------------
results=$work/results
mkdir -p "$results"
# A file where the shard's folder goes: `bounce run` cannot create it, exits
# non-zero and writes nothing, as a task on a broken node would.
echo "not a folder" > "$results/shard-$failing_shard"
export BOUNCE=$bounce
read -r array_job merge_job < <("$repo/deploy/slurm/submit.sh" "$scenario" "$results" "$shards")
say "submitted: array job $array_job (tasks 0-$((shards - 1))), merge job $merge_job (afterok)"

job_gone() { [ -z "$(squeue -h -j "$1" 2> /dev/null)" ]; }
job_field() { scontrol -o show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }
merge_never_starts() {
  [ "$(job_field "$merge_job" Reason)" = DependencyNeverSatisfied ]
}
wait_for "array job $array_job to finish" job_gone "$array_job"
wait_for "merge job $merge_job to be held by its failed dependency" merge_never_starts
failed_tasks=$(scontrol -o show job "$array_job" | grep -c 'JobState=FAILED' || true)
[ "$failed_tasks" = 1 ] || fail "expected 1 failed array task, got $failed_tasks"
scancel "$merge_job"

# What a user does next: run the merge, which names the task to resubmit.
set +e
"$bounce" merge "$results/merged" $(for ((i = 0; i < shards; i++)); do echo "$results/shard-$i"; done) \
  > "$work/merge-report.out" 2> "$work/merge-report.err"
merge_status=$?
set -e
[ "$merge_status" = 2 ] || fail "merge with a failed shard exited $merge_status, not 2"
grep -q "1 of $shards shard(s) missing: $failing_shard/$shards; run them again (as Slurm array task IDs: --array=$failing_shard)" \
  "$work/merge-report.err" || fail "merge did not name the failed shard: $(cat "$work/merge-report.err")"
[ ! -e "$results/merged" ] || fail "merge wrote results although a shard is missing"
resubmit=$(sed -n 's/.*--array=\([0-9,-]*\)).*/\1/p' "$work/merge-report.err")
say "merge named array task(s) $resubmit to resubmit"

# --- resubmission: the task the merge named, and a new merge ----------------
rm "$results/shard-$failing_shard"
read -r array_job merge_job < <("$repo/deploy/slurm/submit.sh" "$scenario" "$results" "$shards" "$resubmit")
say "resubmitted: array job $array_job (task $resubmit), merge job $merge_job (afterok)"
wait_for "merge job $merge_job to finish" job_gone "$merge_job"
[ "$(job_field "$merge_job" JobState)" = COMPLETED ] ||
  fail "merge job $merge_job ended $(job_field "$merge_job" JobState), exit $(job_field "$merge_job" ExitCode)"

# --- the merged files against the unsharded run, byte for byte --------------
diff -r "$work/full" "$results/merged" > "$work/diff.out" ||
  fail "the merge differs from the unsharded run: $(head -5 "$work/diff.out")"
compared=$(cd "$work/full" && find . -type f | wc -l)
say "ok: $shards shards of $runs run(s) (one failed, resubmitted), merged on Slurm byte-identical to the unsharded run ($compared files); $(($(date +%s) - cluster_up)) s after the cluster came up, $(($(date +%s) - test_start)) s in all"
