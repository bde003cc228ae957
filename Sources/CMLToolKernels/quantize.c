// Linear quantization of float tensors (ONNX QuantizeLinear / DequantizeLinear on computed tensors): portable C and
// an AVX2 variant of the same loop, bit-identical (the rounding is the float add of 1.5 · 2^23, exact for the
// clamped values, and no step is contracted or reassociated).
#include "CMLToolKernels.h"
#include "isa.h"

// q = clamp(round_half_even(x / scale), lo − zp, hi − zp) + zp: clamping before rounding gives the same codes (the
// bounds are integers) and keeps |v| < 2^22, where (v + 1.5·2^23) − 1.5·2^23 rounds v to the nearest integer, halves
// to even. NaN gives 0 before the zero point is added.
#define MLK_QUANTIZE_BODY                                                                                      \
    const float magic = 12582912.0f, below = lo - zp, above = hi - zp;                                         \
    for (int64_t i = 0; i < n; i++) {                                                                          \
        float v = x[i] / scale;                                                                                \
        v = v == v ? v : 0.0f;                                                                                 \
        v = v < below ? below : v;                                                                             \
        v = v > above ? above : v;                                                                             \
        float r = (v + magic) - magic;                                                                         \
        y[i] = values ? r * scale : r + zp;                                                                      \
    }

static void quantize_portable(const float *x, float *y, int64_t n, float scale, float zp, float lo, float hi,
                              int values) {
    MLK_QUANTIZE_BODY
}

#if MLK_X86
MLK_AVX2 static void quantize_avx2(const float *x, float *y, int64_t n, float scale, float zp, float lo, float hi,
                                   int values) {
    MLK_QUANTIZE_BODY
}
#endif

void mlk_quantize_linear(const float *x, float *y, int64_t n, float scale, float zp, float lo, float hi, int values) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { quantize_avx2(x, y, n, scale, zp, lo, hi, values); return; }
#endif
    quantize_portable(x, y, n, scale, zp, lo, hi, values);
}

void mlk_dequantize_linear(const float *q, float *y, int64_t n, float scale, float zp) {
    for (int64_t i = 0; i < n; i++) y[i] = (q[i] - zp) * scale;
}
