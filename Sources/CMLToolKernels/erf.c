// erf elementwise, and the exact GELU built on it (½x·(1 + erf(x/√2))): portable C, AVX2 and AVX-512 side by side.
// Abramowitz & Stegun 7.1.26: erf|x| = 1 − t·(a1 + t·(a2 + t·(a3 + t·(a4 + t·a5))))·e^(−x²), t = 1 / (1 + p·|x|),
// absolute error below 1.5e-7 (plus float32 rounding), with mlk_expf's polynomial; the sign of x restored after.
// NaN stays NaN; ±∞ gives ±1. Every form uses the same operations in the same order, so the same bits: the last
// step is an explicit fused multiply-add, which the compiler would otherwise fuse in some forms and not others.
#include "CMLToolKernels.h"
#include "isa.h"
#include "vec.h"

// ---- AVX2 and AVX-512: erf_scalar's operations (vec.h) on 8 or 16 lanes ----

#if MLK_X86
MLK_AVX2 static void erf_avx2(const float *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, erf8(_mm256_loadu_ps(x + i)));
    for (; i < n; i++) y[i] = erf_scalar(x[i]);
}

MLK_AVX512 static void erf_avx512(const float *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, erf16(_mm512_loadu_ps(x + i)));
    for (; i < n; i++) y[i] = erf_scalar(x[i]);
}

// GELU: ½x·(1 + erf(x/√2)), the reference's order (UnaryFunction.gelu).
MLK_AVX2 static void gelu_avx2(const float *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, gelu8(_mm256_loadu_ps(x + i)));
    }
    for (; i < n; i++) y[i] = gelu_scalar(x[i]);
}

MLK_AVX512 static void gelu_avx512(const float *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(y + i, gelu16(_mm512_loadu_ps(x + i)));
    }
    for (; i < n; i++) y[i] = gelu_scalar(x[i]);
}
#endif

// ---- dispatch ----

void mlk_erf(const float *x, float *y, int64_t n) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX512)) { erf_avx512(x, y, n); return; }
    if (mlk_cpu_has(MLK_CPU_AVX2)) { erf_avx2(x, y, n); return; }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = erf_scalar(x[i]);
}

void mlk_gelu(const float *x, float *y, int64_t n) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX512)) { gelu_avx512(x, y, n); return; }
    if (mlk_cpu_has(MLK_CPU_AVX2)) { gelu_avx2(x, y, n); return; }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = gelu_scalar(x[i]);
}
