#!/usr/bin/env bash
# A stand-in for `mltool train` with the sharding flags of issue 21 item 1, for testing the Slurm and Kubernetes
# plumbing (Tests/cluster/run_cluster_test.sh) without the extractor: it does what the real command is specified to
# do, on file names instead of images, and records what the scheduler gave it.
#
#   fake-mltool.sh train DATA --features-only --shard I/N|auto [other flags, ignored]
#       every file below DATA whose relative path hashes (cksum) to I mod N gets a cache entry
#       $MLTOOL_CACHE/fake-features/<hash> (written to a temporary name, then renamed); entries already there are
#       kept. Appends a manifest line to $MLTOOL_CACHE/fake-manifests/shard-I-of-N.txt: the shard, the items
#       extracted and found, and the scheduler's variables.
#   fake-mltool.sh train DATA [-o MODEL] [other flags]
#       extracts what the cache lacks (and says how many), then writes MODEL (default ./model.bin): every item's
#       relative path, label and entry, sorted.
#
# `--shard auto` resolves as specified: SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT, else
# JOB_COMPLETION_INDEX of MLTOOL_SHARD_COUNT, else RANK of WORLD_SIZE.
# HOLD_SHARD=I makes shard I write half of its entries, create the file $HOLD_SIGNAL and sleep (to be killed),
# unless the file $HOLD_UNLESS exists (the variables of Tests/cluster/hold-shard.sh, which does this to any command).
set -euo pipefail

die() { echo "fake-mltool: $*" >&2; exit 64; }

[ "${1:-}" = train ] || die "only 'train' is faked"
shift
data=${1:?fake-mltool: train DATA}
shift
features_only=0 shard= out=model.bin cache=${MLTOOL_CACHE:-}
while [ $# -gt 0 ]; do
    case "$1" in
        --features-only) features_only=1 ;;
        --shard) shard=${2:?--shard needs I/N or auto}; shift ;;
        -o|--out) out=${2:?-o needs a path}; shift ;;
        --cache) cache=${2:?--cache needs a folder}; shift ;;
        --*) case "${2:-}" in --*|'') ;; *) shift ;; esac ;;  # an option of the real tool, with its value
        *) die "unexpected argument $1" ;;
    esac
    shift
done
[ -n "$cache" ] || die "no cache: set MLTOOL_CACHE or --cache"
[ -d "$data" ] || die "$data is not a folder"
mkdir -p "$cache/fake-features" "$cache/fake-manifests"

key() { printf '%s' "$1" | cksum | cut -d' ' -f1; }

# Writes the entry of item $1 (a relative path) unless it is there; prints 1 when it wrote it.
extract() {
    local rel=$1 k entry
    k=$(key "$rel")
    entry="$cache/fake-features/$k"
    [ -e "$entry" ] && { echo 0; return; }
    printf 'features of %s\n' "$rel" >"$entry.tmp.$$"
    mv -f "$entry.tmp.$$" "$entry"
    echo 1
}

mapfile -t items < <(cd "$data" && find . -type f | sed 's|^\./||' | LC_ALL=C sort)
[ "${#items[@]}" -gt 0 ] || die "$data holds no files"

if [ "$features_only" = 1 ]; then
    [ -n "$shard" ] || die "--features-only needs --shard"
    if [ "$shard" = auto ]; then
        if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
            i=$((SLURM_ARRAY_TASK_ID - ${SLURM_ARRAY_TASK_MIN:-0})); n=${SLURM_ARRAY_TASK_COUNT:?}
        elif [ -n "${JOB_COMPLETION_INDEX:-}" ]; then
            i=$JOB_COMPLETION_INDEX; n=${MLTOOL_SHARD_COUNT:?JOB_COMPLETION_INDEX needs MLTOOL_SHARD_COUNT}
        elif [ -n "${RANK:-}" ]; then
            i=$RANK; n=${WORLD_SIZE:?RANK needs WORLD_SIZE}
        else die "--shard auto: no scheduler variables"; fi
    else
        i=${shard%/*}; n=${shard#*/}
    fi
    case "$i/$n" in *[!0-9/]*|/*|*/) die "bad shard $shard" ;; esac
    [ "$n" -gt 0 ] && [ "$i" -lt "$n" ] || die "bad shard $i/$n"
    mine=() extracted=0 found=0
    for rel in "${items[@]}"; do
        [ $(( $(key "$rel") % n )) -eq "$i" ] && mine+=("$rel")
    done
    half=$(( (${#mine[@]} + 1) / 2 )) done_count=0
    for rel in "${mine[@]}"; do
        if [ "${HOLD_SHARD:-}" = "$i" ] && [ "$done_count" -eq "$half" ] && [ ! -e "${HOLD_UNLESS:-/nonexistent}" ]; then
            echo "fake-mltool: shard $i/$n holds after $done_count of ${#mine[@]} items" >&2
            [ -z "${HOLD_SIGNAL:-}" ] || : >"$HOLD_SIGNAL"
            sleep 600
        fi
        if [ "$(extract "$rel")" = 1 ]; then extracted=$((extracted + 1)); else found=$((found + 1)); fi
        done_count=$((done_count + 1))
    done
    printf 'shard=%s/%s items=%s extracted=%s found=%s SLURM_ARRAY_TASK_ID=%s SLURM_ARRAY_TASK_COUNT=%s SLURM_ARRAY_TASK_MIN=%s JOB_COMPLETION_INDEX=%s MLTOOL_SHARD_COUNT=%s\n' \
        "$i" "$n" "${#mine[@]}" "$extracted" "$found" "${SLURM_ARRAY_TASK_ID:-}" "${SLURM_ARRAY_TASK_COUNT:-}" \
        "${SLURM_ARRAY_TASK_MIN:-}" "${JOB_COMPLETION_INDEX:-}" "${MLTOOL_SHARD_COUNT:-}" \
        >>"$cache/fake-manifests/shard-$i-of-$n.txt"
    echo "features: shard $i/$n: $extracted extracted, $found from cache"
    exit 0
fi

extracted=0 cached=0
tmp="$out.tmp.$$"
: >"$tmp"
for rel in "${items[@]}"; do
    if [ "$(extract "$rel")" = 1 ]; then extracted=$((extracted + 1)); else cached=$((cached + 1)); fi
    label=${rel%%/*}
    printf '%s\t%s\t%s' "$rel" "$label" "$(cat "$cache/fake-features/$(key "$rel")")" >>"$tmp"
    echo >>"$tmp"
done
mv -f "$tmp" "$out"
echo "features: $extracted extracted, $cached from cache"
