#!/usr/bin/env bash
# Builds mltool's libFuzzer executable (fuzz/Package.swift) and runs fuzz targets, one after another, each for
# FUZZ_SECONDS (default 60). Usage (from the repository root; `make fuzz FUZZ_SECONDS=N` runs every target):
#
#   fuzz/run.sh [TARGET ...]          every target when none is named (MLTOOL_FUZZ_LIST=1 lists them)
#   FUZZ_SECONDS=3600 fuzz/run.sh onnx
#   FUZZ_BUILD=0 fuzz/run.sh ...      skip the build
#   FUZZ_ARGS="-runs=0" ...           more libFuzzer options
#   FUZZ_RECORD=0 fuzz/run.sh ...     do not append the round to fuzz/rounds.tsv (make test's 5 s smoke run)
#   FUZZ_NOTE="idle machine" ...      the note column of the rows appended
#
# Each target's round is appended to fuzz/rounds.tsv (committed; docs/SECURITY.md's totals are derived from it by
# fuzz/totals.sh): the UTC time it ended, target, commit (with "+dirty" when Sources/ or fuzz/ had uncommitted
# changes), wall and CPU seconds, executions, cov, ft, corpus size, findings and the note.
#
# Working corpora grow in .build/fuzz-corpus/<target> (seeded from Tests/Fixtures/fuzz/<target>/seeds and
# .../regressions, which are read, never written); crashes, leaks, timeouts and out-of-memory inputs are saved in
# .build/fuzz-crashes/<target>/; libFuzzer's output in .build/fuzz-logs/<target>.log. At the end: a table of
# executions, coverage (cov: edges, ft: features), corpus size and findings per target. Exit status 1 if any target
# found something. A finding becomes a regression input: minimize it
#   MLTOOL_FUZZ_TARGET=<target> fuzz/.build/release/mltool-fuzz -minimize_crash=1 -runs=100000 <crash file>
# fix the reader, and commit the minimized input in Tests/Fixtures/fuzz/<target>/regressions/ (FuzzRegressionTests
# replays it in `make test`).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_EACH=${FUZZ_SECONDS:-60}
SWIFT=${SWIFT:-swift}
BUILD_DIR=${FUZZ_BUILD_DIR:-$ROOT/fuzz/.build}
BIN=$BUILD_DIR/release/mltool-fuzz

if [ "${FUZZ_BUILD:-1}" != 0 ]; then
    # -sanitize=fuzzer,address for Swift (libFuzzer's coverage and main, AddressSanitizer); the C targets
    # (protobuf-c's generated descriptors, the HDF5 sandbox, the kernels) get the same instrumentation through -Xcc,
    # plus UndefinedBehaviorSanitizer in trap mode (no runtime to link: undefined behaviour is an illegal
    # instruction, a crash to the fuzzer). swiftc refuses -sanitize=undefined on Linux; in Swift code its own checks
    # (overflow, bounds, unwrapping) trap in every build mltool ships, which is what UBSan would add.
    # SwiftPM keeps the main package's lists of source files from this build's first run (it is a path dependency):
    # a file added to Sources/ since is never compiled, and the link fails on its symbols. A build made from another
    # list of files (or from an unknown one) starts afresh; only a SwiftPM build folder (with its build.db) is removed.
    SOURCES=$(find Sources -type f \( -name '*.swift' -o -name '*.c' -o -name '*.h' \) | LC_ALL=C sort \
        | sha256sum | cut -c1-64)
    if [ -f "$BUILD_DIR/build.db" ] && [ "$(cat "$BUILD_DIR/sources.sha256" 2>/dev/null)" != "$SOURCES" ]; then
        echo "fuzz: Sources/ has other files than the last fuzz build's: building afresh" >&2
        rm -rf "$BUILD_DIR"
    fi
    "$SWIFT" build -c release --package-path fuzz --scratch-path "$BUILD_DIR" \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library \
        -Xcc -fsanitize=fuzzer-no-link,address,undefined -Xcc -fsanitize-trap=undefined \
        || { echo "fuzz: build failed" >&2; exit 2; }
    echo "$SOURCES" > "$BUILD_DIR/sources.sha256"
fi
[ -x "$BIN" ] || { echo "fuzz: $BIN is missing (run without FUZZ_BUILD=0)" >&2; exit 2; }

declare -A DICT
while read -r name dict; do DICT[$name]=$dict; done < <(MLTOOL_FUZZ_LIST=1 "$BIN" 2>/dev/null)
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=($(MLTOOL_FUZZ_LIST=1 "$BIN" 2>/dev/null | cut -d' ' -f1)); fi
[ ${#TARGETS[@]} -gt 0 ] || { echo "fuzz: $BIN lists no targets" >&2; exit 2; }

# Leaks are findings too; a reader may ask for a large buffer only within the limits it checks (at most 2 GiB here).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0:handle_abort=1}
# Leaks of the Swift toolchain's libraries, not mltool's (each one is listed in fuzz/lsan.supp and docs/SECURITY.md).
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/fuzz/lsan.supp:print_suppressions=0}
# The entries write each input that must be a file to $TMPDIR/mltool-fuzz-<pid>/: on a memory file system an
# execution of the file-based targets is 3 to 5 times faster than on a disk's /tmp (measured on onnx and coreml).
if [ -z "${FUZZ_TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then FUZZ_TMPDIR=/dev/shm; fi
export TMPDIR=${FUZZ_TMPDIR:-${TMPDIR:-/tmp}}
mkdir -p .build/fuzz-logs
COMMIT=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
[ -n "$(git status --porcelain -- Sources fuzz 2>/dev/null | grep -v '^?? fuzz/.build')" ] && COMMIT="$COMMIT+dirty"
ROUNDS=$ROOT/fuzz/rounds.tsv
status=0
rows=()
for t in "${TARGETS[@]}"; do
    [ -n "${DICT[$t]:-}" ] || { echo "fuzz: no target '$t' (targets: ${!DICT[*]})" >&2; exit 2; }
    corpus=.build/fuzz-corpus/$t crashes=.build/fuzz-crashes/$t log=.build/fuzz-logs/$t.log
    mkdir -p "$corpus" "$crashes"
    dirs=("$corpus" "Tests/Fixtures/fuzz/$t/seeds")
    [ -d "Tests/Fixtures/fuzz/$t/regressions" ] && dirs+=("Tests/Fixtures/fuzz/$t/regressions")
    echo "fuzz: $t for ${SECONDS_EACH}s (log $log)"
    before=$(ls "$crashes" | wc -l)
    start=$(date +%s)
    # CPU seconds (user + system) of the fuzzer, measured by time(1): wall time says little on a loaded machine.
    # keras-h5 forks the (AddressSanitizer-instrumented) process for every execution: with ASan's quarantine held
    # to 8 MB instead of 256 the process is about 100 MB instead of 370 and the fork cheaper (27 → 35 executions a
    # second, measured); freed memory is then reused sooner, so a use after free is caught over a shorter window.
    # Its sandbox deadline is 0.15 s (a seed imports in about 0.04 s; libhdf5 loops on some mutated files until the
    # deadline): 1.75 times the executions per CPU-second of the 0.5 s the regression tests use, same coverage.
    asan=$ASAN_OPTIONS
    if [ "$t" = keras-h5 ] && [[ "$asan" != *quarantine_size_mb* ]]; then asan="$asan:quarantine_size_mb=8:thread_local_quarantine_size_kb=64"; fi
    export MLTOOL_FUZZ_HDF5_TIMEOUT=${MLTOOL_FUZZ_HDF5_TIMEOUT:-0.15}
    ASAN_OPTIONS=$asan MLTOOL_FUZZ_TARGET=$t /usr/bin/time -f '%U %S' -o "$log.cpu" "$BIN" "${dirs[@]}" -dict="fuzz/dicts/${DICT[$t]}.dict" \
        -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 \
        -artifact_prefix="$crashes/" -print_final_stats=1 ${FUZZ_ARGS:-} >"$log" 2>&1
    rc=$?
    elapsed=$(( $(date +%s) - start ))
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' <<<"$last" | grep -o '[0-9]*')
    ft=$(grep -o 'ft: [0-9]*' <<<"$last" | grep -o '[0-9]*')
    corp=$(grep -o 'corp: [0-9]*' <<<"$last" | grep -o '[0-9]*')
    found=$(( $(ls "$crashes" | wc -l) - before ))
    cpu=$(awk '/^[0-9.]+ [0-9.]+$/ { printf "%d", $1 + $2 }' "$log.cpu" 2>/dev/null)
    if [ "$rc" != 0 ] || [ "$found" -gt 0 ]; then
        status=1
        echo "fuzz: $t found something (exit $rc): $(grep -m1 -E 'ERROR|WARNING|deadly|Fatal error|timeout' "$log")"
    fi
    if [ "${FUZZ_RECORD:-1}" != 0 ]; then
        [ -s "$ROUNDS" ] || printf 'ended_utc\ttarget\tcommit\twall_s\tcpu_s\texecutions\tcov\tft\tcorpus\tfindings\tnote\n' >"$ROUNDS"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$t" "$COMMIT" "$elapsed" \
            "${cpu:-?}" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$found" "${FUZZ_NOTE:-}" >>"$ROUNDS"
    fi
    rows+=("$(printf '%-14s %10s %7s %7s %8s %6s %6s %6s %8s' "$t" "${execs:-?}" "$elapsed" "${cpu:-?}" \
        "$(( ${execs:-0} / (elapsed > 0 ? elapsed : 1) ))" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$found")")
done
echo
printf '%-14s %10s %7s %7s %8s %6s %6s %6s %8s\n' target execs seconds cpu-s exec/s cov ft corpus findings
printf '%s\n' "${rows[@]}"
exit $status
