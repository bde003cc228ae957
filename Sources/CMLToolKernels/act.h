// Private to CMLToolKernels: the scalar activation every kernel file shares.
#ifndef MLK_ACT_H
#define MLK_ACT_H
#include "CMLToolKernels.h"
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

#if defined(__x86_64__)
#include <immintrin.h>
/* The activations AVX-512 epilogues fuse (ReLU, clip, leaky ReLU); callers run act_scalar for the others. */
__attribute__((target("avx512f,avx2,fma"))) static inline __m512 mlk_act16(__m512 v, int act, float p0, float p1) {
    switch (act) {
    case MLK_ACT_RELU: return _mm512_max_ps(v, _mm512_setzero_ps());
    case MLK_ACT_CLIP: return _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(p0)), _mm512_set1_ps(p1));
    case MLK_ACT_LEAKY:
        return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, _mm512_set1_ps(p0));
    default: return v;
    }
}
#endif

#endif
