#!/usr/bin/env bash
# Submits a bounce sweep to Slurm: an array of SHARDS tasks, one shard each
# (sweep.sbatch), and a merge job (merge.sbatch) that starts once every task
# has succeeded (`--dependency=afterok`).
#
#   deploy/slurm/submit.sh SCENARIO RESULTS SHARDS [TASKS]
#
# RESULTS must be a folder every node sees; it gets shard-0 ... shard-N-1,
# merged/ (the results) and logs/. TASKS (default 0-SHARDS-1) resubmits only
# some shards, with the IDs `bounce merge` names (`3,5`); their runs replace
# what the failed tasks left, and a new merge job waits for them. The
# partition, account and time limit go in the variables sbatch reads:
# SBATCH_PARTITION=short SBATCH_ACCOUNT=lab SBATCH_TIMELIMIT=30 submit.sh ...
# Prints the two job IDs, shards first.
set -euo pipefail

if [ $# -lt 3 ] || [ $# -gt 4 ]; then
  echo "usage: $0 SCENARIO RESULTS SHARDS [TASKS]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
scenario=$1
results=$2
shards=$3
tasks=${4:-0-$((shards - 1))}
if ! [[ "$shards" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: SHARDS must be a positive number, not \`$shards\`" >&2
  exit 2
fi

# Check the scenario here, not in every task: a bad file fails now, once.
"${BOUNCE:-bounce}" check "$scenario" > /dev/null
mkdir -p "$results/logs"
array_job=$(sbatch --parsable --array="$tasks" \
  --output="$results/logs/shard-%a.%A.out" \
  "$here/sweep.sbatch" "$scenario" "$results" "$shards")
array_job=${array_job%%;*}
merge_job=$(sbatch --parsable --dependency="afterok:$array_job" \
  --output="$results/logs/merge.%j.out" \
  "$here/merge.sbatch" "$results" "$shards")
merge_job=${merge_job%%;*}
echo "$array_job $merge_job"
