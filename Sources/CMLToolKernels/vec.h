// Private to CMLToolKernels: the vector primitives the kernels' epilogues share (as ggml's vec.h): the scalar
// activation every variant falls back to, and its 8-lane (AVX2) and 16-lane (AVX-512) forms for the activations
// that vectorise (none, ReLU, clip, leaky ReLU); callers run act_scalar for the others.
#ifndef MLK_VEC_H
#define MLK_VEC_H
#include "CMLToolKernels.h"
#include "isa.h"
#include <math.h>

static inline float act_scalar(float v, int act, float p0, float p1) {
    switch (act) {
    case MLK_ACT_RELU: return v > 0 ? v : 0;
    case MLK_ACT_CLIP: return v < p0 ? p0 : (v > p1 ? p1 : v);
    case MLK_ACT_LEAKY: return v < 0 ? p0 * v : v;
    case MLK_ACT_SIGMOID: return 1.0f / (1.0f + expf(-v));
    case MLK_ACT_HARDSIGMOID: { float t = p0 * v + p1; return t < 0 ? 0 : (t > 1 ? 1 : t); }
    case MLK_ACT_HARDSWISH: { float t = v + 3; t = t < 0 ? 0 : (t > 6 ? 6 : t); return v * t / 6; }
    case MLK_ACT_SWISH: return v / (1.0f + expf(-v));
    case MLK_ACT_TANH: return tanhf(v);
    default: return v;
    }
}

#if MLK_X86
// Applies a vectorisable activation (none/relu/clip/leaky) to 8 lanes; others are done by a scalar pass after.
MLK_AVX2 static inline __m256 act8(__m256 v, int act, __m256 lo, __m256 hi) {
    switch (act) {
    case MLK_ACT_RELU: return _mm256_max_ps(v, _mm256_setzero_ps());
    case MLK_ACT_CLIP: return _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    case MLK_ACT_LEAKY: {
        __m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
        return _mm256_blendv_ps(v, _mm256_mul_ps(v, lo), neg);
    }
    default: return v;
    }
}

MLK_AVX512 static inline __m512 act16(__m512 v, int act, __m512 lo, __m512 hi) {
    switch (act) {
    case MLK_ACT_RELU: return _mm512_max_ps(v, _mm512_setzero_ps());
    case MLK_ACT_CLIP: return _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    case MLK_ACT_LEAKY: return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, lo);
    default: return v;
    }
}

// act16 with the parameters as scalars.
MLK_AVX512 static inline __m512 mlk_act16(__m512 v, int act, float p0, float p1) {
    return act16(v, act, _mm512_set1_ps(p0), _mm512_set1_ps(p1));
}
#endif
#endif
