#!/usr/bin/env bash
# shard-shim.sh MLTOOL train DATA --features-only --shard I/N|auto [flags]: `--features-only --shard` for an mltool
# that lacks them (until issue 21 item 1 lands), built from what it has: the images of shard I (a stable hash of
# their path below DATA, mod N) are linked into a scratch copy of DATA's class folders and trained on with the given
# flags (the head is thrown away); their features land in the shared cache ($MLTOOL_CACHE), which is keyed by
# content, extractor and preprocessing, so a later `mltool train DATA` with the same flags finds them all.
# Any other command line runs MLTOOL as it is. Used by Tests/cluster/run_cluster_test.py (SlurmClusterTests).
set -euo pipefail

mltool=${1:?usage: shard-shim.sh MLTOOL train DATA ...}
shift
if [ "${1:-}" != train ] || ! printf '%s\n' "$@" | grep -qx -- --features-only; then exec "$mltool" "$@"; fi
shift
data=${1:?}
shift
shard= flags=()
while [ $# -gt 0 ]; do
    case "$1" in
        --features-only) ;;
        --shard) shard=${2:?}; shift ;;
        *) flags+=("$1") ;;
    esac
    shift
done
if [ "$shard" = auto ]; then  # the rules of issue 21 item 1, as Tests/cluster/fake-mltool.sh has them
    if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
        i=$((SLURM_ARRAY_TASK_ID - ${SLURM_ARRAY_TASK_MIN:-0})); n=${SLURM_ARRAY_TASK_COUNT:?}
    elif [ -n "${JOB_COMPLETION_INDEX:-}" ]; then
        i=$JOB_COMPLETION_INDEX; n=${MLTOOL_SHARD_COUNT:?JOB_COMPLETION_INDEX needs MLTOOL_SHARD_COUNT}
    elif [ -n "${RANK:-}" ]; then
        i=$RANK; n=${WORLD_SIZE:?RANK needs WORLD_SIZE}
    else echo "shard-shim.sh: --shard auto: no scheduler variables" >&2; exit 64; fi
else
    i=${shard%/*} n=${shard#*/}
fi
case "$i/$n" in *[!0-9/]*|/*|*/) echo "shard-shim.sh: --shard $shard is not I/N" >&2; exit 64 ;; esac

scratch=$(mktemp -d "${TMPDIR:-/tmp}/mltool-shard-$i-of-$n.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
data=$(cd "$data" && pwd)
count=0
while IFS= read -r rel; do
    [ $(( $(printf '%s' "$rel" | cksum | cut -d' ' -f1) % n )) -eq "$i" ] || continue
    mkdir -p "$scratch/data/$(dirname "$rel")"
    ln -s "$data/$rel" "$scratch/data/$rel"
    count=$((count + 1))
done < <(cd "$data" && find . \( -type f -o -type l \) | sed 's|^\./||' | LC_ALL=C sort)
echo "shard-shim.sh: shard $i/$n: $count images" >&2
# One L-BFGS iteration: the head is thrown away, only the extraction matters.
"$mltool" train "$scratch/data" "${flags[@]}" --max-iterations 1 --l2 1 -o "$scratch/model.bin"
