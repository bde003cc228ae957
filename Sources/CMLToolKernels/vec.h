// Private to CMLToolKernels: the vector primitives the kernels' epilogues share (as ggml's vec.h): the scalar
// activation every variant falls back to, and its 8-lane (AVX2) and 16-lane (AVX-512) forms for the activations
// that vectorise (MLK_ACT_VECTOR: none, ReLU, clip, leaky ReLU, sigmoid, swish, GELU); callers run act_scalar for the
// others. Every form gives the same bits for every input, NaN (which each activation keeps, as ONNX's do) and
// signed zeros included: vector min/max return their second operand where either is NaN, so the input goes second.
// Sigmoid and swish use mlk_expf, Cephes' expf (range reduction by ln 2 in two parts, a degree-5 polynomial; relative
// error below 2e-7 on [-87.3, 88.3], 0 below and +inf above) evaluated with the same fused multiply-adds in every
// form, so a lane and a scalar tail give the same bits.
#ifndef MLK_VEC_H
#define MLK_VEC_H
#include "CMLToolKernels.h"
#include "isa.h"
#include <math.h>

#define MLK_ACT_VECTOR(act) ((act) <= MLK_ACT_LEAKY || (act) == MLK_ACT_SIGMOID || (act) == MLK_ACT_SWISH || \
                             (act) == MLK_ACT_GELU)

#define MLK_EXP_LO (-87.3f)
#define MLK_EXP_HI 88.3f
#define MLK_LOG2E 1.44269504088896341f
#define MLK_LN2_HI 0.693359375f
#define MLK_LN2_LO (-2.12194440e-4f)
#define MLK_EXP_P0 1.9875691500e-4f
#define MLK_EXP_P1 1.3981999507e-3f
#define MLK_EXP_P2 8.3334519073e-3f
#define MLK_EXP_P3 4.1665795894e-2f
#define MLK_EXP_P4 1.6666665459e-1f
#define MLK_EXP_P5 5.0000001201e-1f

static inline float mlk_expf(float x) {
    if (x != x) return x;
    if (x > MLK_EXP_HI) return INFINITY;
    if (x < MLK_EXP_LO) return 0.0f;
    // Round to nearest even by adding and subtracting 1.5·2²³ (|x·log2 e| < 128 here): nearbyintf's result without
    // its library call (baseline x86-64 has no rounding instruction). The product is its own statement, so it is
    // rounded before the add (never contracted into a fused multiply-add), as the vector forms round it.
    float t = x * MLK_LOG2E;
    float n = (t + 12582912.0f) - 12582912.0f;
    float r = fmaf(n, -MLK_LN2_HI, x);
    r = fmaf(n, -MLK_LN2_LO, r);
    float p = MLK_EXP_P0;
    p = fmaf(p, r, MLK_EXP_P1);
    p = fmaf(p, r, MLK_EXP_P2);
    p = fmaf(p, r, MLK_EXP_P3);
    p = fmaf(p, r, MLK_EXP_P4);
    p = fmaf(p, r, MLK_EXP_P5);
    p = fmaf(p, r * r, r) + 1.0f;
    union { int32_t i; float f; } scale = { .i = ((int32_t)n + 127) << 23 };
    return p * scale.f;
}

// erf (Abramowitz & Stegun 7.1.26, see erf.c) and the exact GELU on it: mlk_erf, mlk_gelu and MLK_ACT_GELU.
#define ERF_P 0.3275911f
#define ERF_A1 0.254829592f
#define ERF_A2 (-0.284496736f)
#define ERF_A3 1.421413741f
#define ERF_A4 (-1.453152027f)
#define ERF_A5 1.061405429f
#define GELU_INV_SQRT2 0.70710678118654752f

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

// GELU: ½x·(1 + erf(x/√2)), the reference's order (UnaryFunction.gelu).
static inline float gelu_scalar(float x) { return 0.5f * x * (1.0f + erf_scalar(x * GELU_INV_SQRT2)); }

static inline float act_scalar(float v, int act, float p0, float p1) {
    switch (act) {
    case MLK_ACT_RELU: return v < 0 ? 0 : v;
    case MLK_ACT_CLIP: return v < p0 ? p0 : (v > p1 ? p1 : v);
    case MLK_ACT_LEAKY: return v < 0 ? p0 * v : v;
    case MLK_ACT_SIGMOID: return v != v ? v : 1.0f / (1.0f + mlk_expf(-v));
    case MLK_ACT_HARDSIGMOID: { float t = p0 * v + p1; return t < 0 ? 0 : (t > 1 ? 1 : t); }
    case MLK_ACT_HARDSWISH: { float t = v + 3; t = t < 0 ? 0 : (t > 6 ? 6 : t); return v * t / 6; }
    case MLK_ACT_SWISH: return v != v ? v : v / (1.0f + mlk_expf(-v));
    case MLK_ACT_TANH: return tanhf(v);
    case MLK_ACT_GELU: return gelu_scalar(v);
    default: return v;
    }
}

#if MLK_X86
// mlk_expf on 8 lanes. The input goes second to min and max, so a NaN flows through to a NaN result, as mlk_expf's.
MLK_AVX2 static inline __m256 exp8(__m256 in) {
    __m256 x = _mm256_min_ps(_mm256_set1_ps(MLK_EXP_HI), _mm256_max_ps(_mm256_set1_ps(MLK_EXP_LO), in));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(MLK_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-MLK_LN2_HI), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(-MLK_LN2_LO), r);
    __m256 p = _mm256_set1_ps(MLK_EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(MLK_EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(MLK_EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(MLK_EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(MLK_EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(MLK_EXP_P5));
    p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(in, _mm256_set1_ps(MLK_EXP_HI), _CMP_GT_OQ));
    return _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(in, _mm256_set1_ps(MLK_EXP_LO), _CMP_LT_OQ));
}

// sigmoid (gate 1) or swish (gate v) on 8 lanes; NaN lanes stay NaN.
MLK_AVX2 static inline __m256 gate8(__m256 v, int swish) {
    __m256 d = _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(_mm256_sub_ps(_mm256_setzero_ps(), v)));
    __m256 y = _mm256_div_ps(swish ? v : _mm256_set1_ps(1.0f), d);
    return _mm256_blendv_ps(y, v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

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

MLK_AVX2 static inline __m256 gelu8(__m256 x) {
    __m256 r = erf8(_mm256_mul_ps(x, _mm256_set1_ps(GELU_INV_SQRT2)));
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), r));
}

// Applies a vectorisable activation (MLK_ACT_VECTOR) to 8 lanes; others are done by a scalar pass after.
MLK_AVX2 static inline __m256 act8(__m256 v, int act, __m256 lo, __m256 hi) {
    switch (act) {
    case MLK_ACT_SIGMOID: return gate8(v, 0);
    case MLK_ACT_SWISH: return gate8(v, 1);
    case MLK_ACT_GELU: return gelu8(v);
    case MLK_ACT_RELU: return _mm256_max_ps(_mm256_setzero_ps(), v);   // (0, v): v where v is NaN, as act_scalar
    case MLK_ACT_CLIP: return _mm256_min_ps(hi, _mm256_max_ps(lo, v));
    case MLK_ACT_LEAKY: {
        __m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
        return _mm256_blendv_ps(v, _mm256_mul_ps(v, lo), neg);
    }
    default: return v;
    }
}

// mlk_expf on 16 lanes (NaN kept, as exp8).
MLK_AVX512 static inline __m512 exp16(__m512 in) {
    __m512 x = _mm512_min_ps(_mm512_set1_ps(MLK_EXP_HI), _mm512_max_ps(_mm512_set1_ps(MLK_EXP_LO), in));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(MLK_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-MLK_LN2_HI), x);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(-MLK_LN2_LO), r);
    __m512 p = _mm512_set1_ps(MLK_EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(MLK_EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(MLK_EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(MLK_EXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(MLK_EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(MLK_EXP_P5));
    p = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    __m512 y = _mm512_mul_ps(p, _mm512_castsi512_ps(e));
    y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(in, _mm512_set1_ps(MLK_EXP_HI), _CMP_GT_OQ), y, _mm512_set1_ps(INFINITY));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(in, _mm512_set1_ps(MLK_EXP_LO), _CMP_LT_OQ), y, _mm512_setzero_ps());
}

MLK_AVX512 static inline __m512 gate16(__m512 v, int swish) {
    __m512 d = _mm512_add_ps(_mm512_set1_ps(1.0f), exp16(_mm512_sub_ps(_mm512_setzero_ps(), v)));
    __m512 y = _mm512_div_ps(swish ? v : _mm512_set1_ps(1.0f), d);
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), y, v);
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

MLK_AVX512 static inline __m512 gelu16(__m512 x) {
    __m512 r = erf16(_mm512_mul_ps(x, _mm512_set1_ps(GELU_INV_SQRT2)));
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), _mm512_add_ps(_mm512_set1_ps(1.0f), r));
}

MLK_AVX512 static inline __m512 act16(__m512 v, int act, __m512 lo, __m512 hi) {
    switch (act) {
    case MLK_ACT_SIGMOID: return gate16(v, 0);
    case MLK_ACT_SWISH: return gate16(v, 1);
    case MLK_ACT_GELU: return gelu16(v);
    case MLK_ACT_RELU: return _mm512_max_ps(_mm512_setzero_ps(), v);
    case MLK_ACT_CLIP: return _mm512_min_ps(hi, _mm512_max_ps(lo, v));
    case MLK_ACT_LEAKY: return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, lo);
    default: return v;
    }
}

// act16 with the parameters as scalars.
MLK_AVX512 static inline __m512 mlk_act16(__m512 v, int act, float p0, float p1) {
    return act16(v, act, _mm512_set1_ps(p0), _mm512_set1_ps(p1));
}

// The GEMM epilogue of one 16-column panel of a row (nv of its columns stored): + bias, + the residual row `rr`
// when there is one (NULL: none), then the activation — vectorised where it can be, else the masked store and the
// scalar activation.
MLK_AVX512 static inline void mlk_store16(float *yr, const float *rr, __m512 v, __m512 b, int64_t nv, int act,
                                          float p0, float p1, __m512 lo, __m512 hi) {
    __mmask16 m = nv >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nv) - 1);
    v = _mm512_add_ps(v, b);
    if (rr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, rr));
    if (MLK_ACT_VECTOR(act)) { _mm512_mask_storeu_ps(yr, m, act16(v, act, lo, hi)); return; }
    _mm512_mask_storeu_ps(yr, m, v);
    for (int64_t j = 0; j < nv; j++) yr[j] = act_scalar(yr[j], act, p0, p1);
}
#endif

#endif
