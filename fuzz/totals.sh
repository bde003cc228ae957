#!/usr/bin/env bash
# docs/SECURITY.md's fuzzing totals, derived from fuzz/rounds.tsv (which fuzz/run.sh appends to): per target the
# rounds, executions and CPU seconds summed over the recorded rounds, and the commit and time of its last round, as
# the Markdown table SECURITY.md holds between its "fuzz-totals" markers (FuzzRoundsTests checks that it does).
set -euo pipefail
cd "$(dirname "$0")/.."
awk -F'\t' '
NR == 1 { next }
{
    if (!($2 in rounds)) order[++n] = $2
    rounds[$2]++; execs[$2] += $6; cpu[$2] += $5; commit[$2] = $3; ended[$2] = $1
}
END {
    print "| target | rounds | executions | CPU seconds | last fuzzed at | last round ended |"
    print "|---|--:|--:|--:|---|---|"
    for (i = 1; i <= n; i++) { t = order[i]; printf "| `%s` | %d | %d | %d | %s | %s |\n", t, rounds[t], execs[t], cpu[t], commit[t], ended[t] }
}' fuzz/rounds.tsv
