// erf elementwise, and the exact GELU built on it (½x·(1 + erf(x/√2))): portable C, AVX2 and AVX-512 side by side.
// Abramowitz & Stegun 7.1.26: erf|x| = 1 − t·(a1 + t·(a2 + t·(a3 + t·(a4 + t·a5))))·e^(−x²), t = 1 / (1 + p·|x|),
// absolute error below 1.5e-7 (plus float32 rounding), with mlk_expf's polynomial; the sign of x restored after.
// NaN stays NaN; ±∞ gives ±1. Every form uses the same operations in the same order, so the same bits: the last
// step is an explicit fused multiply-add, which the compiler would otherwise fuse in some forms and not others.
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
    float y = fmaf(-(t * p), mlk_expf(m), 1.0f);
    return copysignf(y, x);
}

// ---- AVX2 and AVX-512: erf_scalar's operations on 8 or 16 lanes ----

#if MLK_X86
MLK_AVX2 static inline __m256 erf8(__m256 v) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 a = _mm256_andnot_ps(sign, v);
    __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(_mm256_set1_ps(ERF_P), a, _mm256_set1_ps(1.0f)));
    __m256 p = _mm256_fmadd_ps(t, _mm256_set1_ps(ERF_A5), _mm256_set1_ps(ERF_A4));
    p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(ERF_A3));
    p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(ERF_A2));
    p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(ERF_A1));
    __m256 m = _mm256_xor_ps(_mm256_mul_ps(a, a), sign);
    __m256 r = _mm256_fnmadd_ps(_mm256_mul_ps(t, p), exp8(m), _mm256_set1_ps(1.0f));
    r = _mm256_or_ps(r, _mm256_and_ps(v, sign));
    return _mm256_blendv_ps(r, v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

MLK_AVX512 static inline __m512 erf16(__m512 v) {
    const __m512i sign = _mm512_set1_epi32((int32_t)0x80000000u);
    const __m512i vi = _mm512_castps_si512(v);
    __m512 a = _mm512_castsi512_ps(_mm512_andnot_si512(sign, vi));
    __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(_mm512_set1_ps(ERF_P), a, _mm512_set1_ps(1.0f)));
    __m512 p = _mm512_fmadd_ps(t, _mm512_set1_ps(ERF_A5), _mm512_set1_ps(ERF_A4));
    p = _mm512_fmadd_ps(t, p, _mm512_set1_ps(ERF_A3));
    p = _mm512_fmadd_ps(t, p, _mm512_set1_ps(ERF_A2));
    p = _mm512_fmadd_ps(t, p, _mm512_set1_ps(ERF_A1));
    __m512 m = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(_mm512_mul_ps(a, a)), sign));
    __m512 r = _mm512_fnmadd_ps(_mm512_mul_ps(t, p), exp16(m), _mm512_set1_ps(1.0f));
    r = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r), _mm512_and_si512(vi, sign)));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), r, v);
}

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
        __m256 xv = _mm256_loadu_ps(x + i);
        __m256 r = erf8(_mm256_mul_ps(xv, _mm256_set1_ps(GELU_INV_SQRT2)));
        __m256 h = _mm256_mul_ps(_mm256_set1_ps(0.5f), xv);
        _mm256_storeu_ps(y + i, _mm256_mul_ps(h, _mm256_add_ps(_mm256_set1_ps(1.0f), r)));
    }
    for (; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erf_scalar(x[i] * GELU_INV_SQRT2));
}

MLK_AVX512 static void gelu_avx512(const float *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 xv = _mm512_loadu_ps(x + i);
        __m512 r = erf16(_mm512_mul_ps(xv, _mm512_set1_ps(GELU_INV_SQRT2)));
        __m512 h = _mm512_mul_ps(_mm512_set1_ps(0.5f), xv);
        _mm512_storeu_ps(y + i, _mm512_mul_ps(h, _mm512_add_ps(_mm512_set1_ps(1.0f), r)));
    }
    for (; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erf_scalar(x[i] * GELU_INV_SQRT2));
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
    for (int64_t i = 0; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erf_scalar(x[i] * GELU_INV_SQRT2));
}
