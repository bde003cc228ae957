// erf elementwise, and the exact GELU built on it (½x·(1 + erf(x/√2))): portable C and AVX2 side by side.
// Abramowitz & Stegun 7.1.26: erf|x| = 1 − t·(a1 + t·(a2 + t·(a3 + t·(a4 + t·a5))))·e^(−x²), t = 1 / (1 + p·|x|),
// absolute error below 1.5e-7 (plus float32 rounding), with mlk_expf's polynomial; the sign of x restored after.
// NaN stays NaN; ±∞ gives ±1. Both forms use the same operations in the same order.
#include "CMLToolKernels.h"
#include "isa.h"
#include "vec.h"

#define ERF_P 0.3275911f
#define ERF_A1 0.254829592f
#define ERF_A2 (-0.284496736f)
#define ERF_A3 1.421413741f
#define ERF_A4 (-1.453152027f)
#define ERF_A5 1.061405429f
#define GELU_INV_SQRT2 0.70710678118654752f

// ---- portable ----

static inline float erf_scalar(float x) {
    if (x != x) return x;
    float a = fabsf(x);
    float t = 1.0f / fmaf(ERF_P, a, 1.0f);
    float p = fmaf(t, ERF_A5, ERF_A4);
    p = fmaf(t, p, ERF_A3);
    p = fmaf(t, p, ERF_A2);
    p = fmaf(t, p, ERF_A1);
    float m = -(a * a);
    float y = 1.0f - t * p * mlk_expf(m);
    return copysignf(y, x);
}

// ---- AVX2 ----

#if MLK_X86
MLK_AVX2 static void erf_avx2(const float *x, float *y, int64_t n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 a = _mm256_andnot_ps(sign, v);
        __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(_mm256_set1_ps(ERF_P), a, _mm256_set1_ps(1.0f)));
        __m256 p = _mm256_fmadd_ps(t, _mm256_set1_ps(ERF_A5), _mm256_set1_ps(ERF_A4));
        p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(ERF_A3));
        p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(ERF_A2));
        p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(ERF_A1));
        __m256 m = _mm256_xor_ps(_mm256_mul_ps(a, a), sign);
        __m256 r = _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_mul_ps(_mm256_mul_ps(t, p), exp8(m)));
        r = _mm256_or_ps(r, _mm256_and_ps(v, sign));
        _mm256_storeu_ps(y + i, _mm256_blendv_ps(r, v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    }
    for (; i < n; i++) y[i] = erf_scalar(x[i]);
}
#endif

#if MLK_X86
// GELU: ½x·(1 + erf(x/√2)), the reference's order (UnaryFunction.gelu), erf as erf_avx2.
MLK_AVX2 static void gelu_avx2(const float *x, float *y, int64_t n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 xv = _mm256_loadu_ps(x + i);
        __m256 v = _mm256_mul_ps(xv, _mm256_set1_ps(GELU_INV_SQRT2));
        __m256 a = _mm256_andnot_ps(sign, v);
        __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(_mm256_set1_ps(ERF_P), a, _mm256_set1_ps(1.0f)));
        __m256 p = _mm256_fmadd_ps(t, _mm256_set1_ps(ERF_A5), _mm256_set1_ps(ERF_A4));
        p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(ERF_A3));
        p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(ERF_A2));
        p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(ERF_A1));
        __m256 m = _mm256_xor_ps(_mm256_mul_ps(a, a), sign);
        __m256 r = _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_mul_ps(_mm256_mul_ps(t, p), exp8(m)));
        r = _mm256_or_ps(r, _mm256_and_ps(v, sign));
        r = _mm256_blendv_ps(r, v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        __m256 h = _mm256_mul_ps(_mm256_set1_ps(0.5f), xv);
        _mm256_storeu_ps(y + i, _mm256_mul_ps(h, _mm256_add_ps(_mm256_set1_ps(1.0f), r)));
    }
    for (; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erf_scalar(x[i] * GELU_INV_SQRT2));
}
#endif

// ---- dispatch ----

void mlk_erf(const float *x, float *y, int64_t n) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { erf_avx2(x, y, n); return; }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = erf_scalar(x[i]);
}

void mlk_gelu(const float *x, float *y, int64_t n) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { gelu_avx2(x, y, n); return; }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erf_scalar(x[i] * GELU_INV_SQRT2));
}
