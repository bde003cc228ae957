// Private to CMLToolKernels: the instruction-set macros of every kernel file (as ggml's simd-mappings.h). Variants
// are compiled with per-function target attributes, never global -m flags, so one binary runs on any x86-64 CPU;
// each public function dispatches with mlk_cpu_has (CMLToolCPU: the one CPU-feature table).
#ifndef MLK_ISA_H
#define MLK_ISA_H
#include "CMLToolCPU.h"
#if defined(__x86_64__)
#define MLK_X86 1
#include <immintrin.h>
#define MLK_AVX2 __attribute__((target("avx2,fma")))
#define MLK_AVX2_VNNI __attribute__((target("avx2,fma,avxvnni")))
#define MLK_AVX512 __attribute__((target("avx512f,avx2,fma")))
#define MLK_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")))
#else
#define MLK_X86 0
#endif
#define MLK_INLINE static inline __attribute__((always_inline))
#endif
