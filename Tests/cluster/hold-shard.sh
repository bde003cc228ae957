#!/usr/bin/env bash
# hold-shard.sh COMMAND ARGS...: runs COMMAND ARGS, except for the shard the test kills. When ARGS hold
# `--shard $HOLD_SHARD/N` and the file $HOLD_UNLESS does not exist, COMMAND starts in the background; once the
# feature cache ($MLTOOL_CACHE) has gained a file (or COMMAND ended, or 60 s passed) this creates $HOLD_SIGNAL and
# sleeps, so that the test's `scancel` finds the shard part-way. Slurm's proctrack kills COMMAND with it.
set -euo pipefail

index=
prev=
for a in "$@"; do
    if [ "$prev" = --shard ]; then index=${a%%/*}; fi
    prev=$a
done
if [ -z "${HOLD_SHARD:-}" ] || [ "$index" != "$HOLD_SHARD" ] || [ -e "${HOLD_UNLESS:-/nonexistent}" ]; then
    exec "$@"
fi

count() { find "${MLTOOL_CACHE:?hold-shard.sh needs MLTOOL_CACHE}" -type f 2>/dev/null | wc -l; }
before=$(count)
"$@" &
child=$!
for _ in $(seq 600); do
    [ "$(count)" -gt "$before" ] && break
    kill -0 "$child" 2>/dev/null || break
    sleep 0.1
done
echo "hold-shard.sh: shard $index holds ($(( $(count) - before )) new cache files)" >&2
[ -z "${HOLD_SIGNAL:-}" ] || : >"$HOLD_SIGNAL"
sleep 600
