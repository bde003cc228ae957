#!/usr/bin/env bash
# The mltool CPU levels (CMLToolCPU's names) this machine's /proc/cpuinfo flags allow, comma-separated: what
# `make test` passes as MLTOOL_EXPECT_CPU_LEVELS, so that a level the CPU has but the kernels' own detection
# (Sources/CMLToolCPU/cpu.c) or the tests skip fails the tests. The same rules as cpu.c: avx2 needs AVX2 and FMA,
# avx2-vnni AVX-VNNI, avx512 AVX-512F, avx512-vnni AVX-512F, BW, VL and VNNI.
set -euo pipefail
flags=" $(grep -m1 '^flags' "${1:-/proc/cpuinfo}" | cut -d: -f2) "
has() { for f in "$@"; do [[ "$flags" == *" $f "* ]] || return 1; done; }
levels=portable
if has avx2 fma; then
    levels+=,avx2
    has avx_vnni && levels+=,avx2-vnni
    if has avx512f; then
        levels+=,avx512
        has avx512bw avx512vl avx512_vnni && levels+=,avx512-vnni
    fi
fi
echo "$levels"
