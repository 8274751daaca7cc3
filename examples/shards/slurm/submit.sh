#!/bin/bash
# Queue the sharded evaluation and its merge:
#   DATASET=data/lexam.jsonl LEGALEVAL_ARGS="--model openai/gpt-4.1-mini" ./submit.sh 4
# prints the array job's id and the merged run directory.
set -euo pipefail
shards="${1:-4}"
here="$(cd "$(dirname "$0")" && pwd)"
array=$(sbatch --parsable --array="0-$((shards - 1))" "$here/array.sbatch")
array="${array%%;*}"   # "id;cluster" on a federation
merge=$(sbatch --parsable --dependency="afterok:$array" --export="ALL,ARRAY_JOB_ID=$array" \
    "$here/merge.sbatch")
echo "array job $array ($shards shards), merge job ${merge%%;*}"
echo "merged run: ${RUN_DIR:-legaleval-runs}/slurm-$array"
