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

// y[r][c] = clamp(round_half_even(float(int(y[r][c]) + bias[c]) · mult[c]), lo, hi) · scale: the requantization of
// exact integer sums (as floats) per channel of the last axis, the bias added in int32 (wrapping, as vector adds do),
// as mlk_qgemm_requant's (the clamped value lies in ±2^22, where adding and subtracting 1.5 · 2^23 rounds it).
#define MLK_REQUANTIZE_BODY                                                                                    \
    const float magic = 12582912.0f;                                                                           \
    for (int64_t r = 0; r < rows; r++) {                                                                       \
        float *yr = y + r * C;                                                                                 \
        for (int64_t c = 0; c < C; c++) {                                                                      \
            float v = (float)(int32_t)((uint32_t)(int32_t)yr[c] + (uint32_t)bias[c]) * mult[c];                \
            v = v < lo ? lo : v;                                                                               \
            v = v > hi ? hi : v;                                                                               \
            yr[c] = ((v + magic) - magic) * scale;                                                             \
        }                                                                                                      \
    }

static void requantize_portable(float *y, int64_t rows, int64_t C, const int32_t *bias, const float *mult, float lo,
                                float hi, float scale) {
    MLK_REQUANTIZE_BODY
}

#if MLK_X86
MLK_AVX2 static void requantize_avx2(float *y, int64_t rows, int64_t C, const int32_t *bias, const float *mult,
                                     float lo, float hi, float scale) {
    MLK_REQUANTIZE_BODY
}
#endif

void mlk_requantize_channels(float *y, int64_t rows, int64_t C, const int32_t *bias, const float *mult, float lo,
                             float hi, float scale) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { requantize_avx2(y, rows, C, bias, mult, lo, hi, scale); return; }
#endif
    requantize_portable(y, rows, C, bias, mult, lo, hi, scale);
}

// mlk_grid_codes: the rounding of MLK_QUANTIZE_BODY on x · inv, without zero point or saturation (but ±2^22).
#define MLK_GRID_CODES_BODY                                                                                    \
    const float magic = 12582912.0f;                                                                           \
    for (int64_t i = 0; i < n; i++) {                                                                          \
        float v = x[i] * inv;                                                                                  \
        v = v == v ? v : 0.0f;                                                                                 \
        v = v < -4194304.0f ? -4194304.0f : v;                                                                 \
        v = v > 4194304.0f ? 4194304.0f : v;                                                                   \
        y[i] = (v + magic) - magic;                                                                            \
    }

static void grid_codes_portable(const float *x, float *y, int64_t n, float inv) {
    MLK_GRID_CODES_BODY
}

#if MLK_X86
MLK_AVX2 static void grid_codes_avx2(const float *x, float *y, int64_t n, float inv) {
    MLK_GRID_CODES_BODY
}
#endif

void mlk_grid_codes(const float *x, float *y, int64_t n, float inv) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { grid_codes_avx2(x, y, n, inv); return; }
#endif
    grid_codes_portable(x, y, n, inv);
}

// ---- tensors stored as 8-bit codes (a requantizing depthwise conv's input and output) ----

// mlk_requantize_channels' value less lo, as a byte (0…255: the code less the range's low end).
#define MLK_REQUANTIZE_CODES_BODY                                                                              \
    const float magic = 12582912.0f;                                                                           \
    for (int64_t r = 0; r < rows; r++) {                                                                       \
        const float *yr = y + r * C;                                                                           \
        uint8_t *o = out + r * C;                                                                              \
        for (int64_t c = 0; c < C; c++) {                                                                      \
            float v = (float)(int32_t)((uint32_t)(int32_t)yr[c] + (uint32_t)bias[c]) * mult[c];                \
            v = v < lo ? lo : v;                                                                               \
            v = v > hi ? hi : v;                                                                               \
            o[c] = (uint8_t)(int32_t)(((v + magic) - magic) - lo);                                             \
        }                                                                                                      \
    }

static void requantize_codes_portable(const float *y, int64_t rows, int64_t C, const int32_t *bias, const float *mult,
                                      float lo, float hi, uint8_t *out) {
    MLK_REQUANTIZE_CODES_BODY
}

#define MLK_CODES_CENTRED_BODY                                                                                 \
    for (int64_t i = 0; i < n; i++) y[i] = (float)((int32_t)q[i] - zp);

static void codes_centred_portable(const uint8_t *q, float *y, int64_t n, int32_t zp) {
    MLK_CODES_CENTRED_BODY
}

#if MLK_X86
// 8 channels at a time: the exact sum to int32 (vcvttps2dq: an integer, so truncation is the value), the bias in int32
// (wrapping), back to float, times mult, clamped, rounded by vcvtps2dq (halves to even, as the 1.5 · 2^23 add), less
// lo in 16 bits (exact), to bytes; the channels past the last 8 as the portable body.
MLK_AVX2 static void requantize_codes_avx2(const float *y, int64_t rows, int64_t C, const int32_t *bias,
                                           const float *mult, float lo, float hi, uint8_t *out) {
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    const __m128i shift = _mm_set1_epi16((int16_t)-(int32_t)lo);
    const float magic = 12582912.0f;
    const int64_t C8 = C & ~(int64_t)7;
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * C;
        uint8_t *o = out + r * C;
        for (int64_t c = 0; c < C8; c += 8) {
            __m256i s = _mm256_add_epi32(_mm256_cvttps_epi32(_mm256_loadu_ps(yr + c)),
                                         _mm256_loadu_si256((const __m256i *)(bias + c)));
            __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_loadu_ps(mult + c));
            v = _mm256_min_ps(_mm256_max_ps(v, vlo), vhi);
            __m256i i = _mm256_cvtps_epi32(v);
            __m128i h = _mm_add_epi16(_mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1)), shift);
            _mm_storel_epi64((__m128i *)(o + c), _mm_packus_epi16(h, h));
        }
        for (int64_t c = C8; c < C; c++) {
            float v = (float)(int32_t)((uint32_t)(int32_t)yr[c] + (uint32_t)bias[c]) * mult[c];
            v = v < lo ? lo : v;
            v = v > hi ? hi : v;
            o[c] = (uint8_t)(int32_t)(((v + magic) - magic) - lo);
        }
    }
}

MLK_AVX2 static void codes_centred_avx2(const uint8_t *q, float *y, int64_t n, int32_t zp) {
    MLK_CODES_CENTRED_BODY
}
#endif

void mlk_requantize_channels_codes(const float *y, int64_t rows, int64_t C, const int32_t *bias, const float *mult,
                                   float lo, float hi, uint8_t *out) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { requantize_codes_avx2(y, rows, C, bias, mult, lo, hi, out); return; }
#endif
    requantize_codes_portable(y, rows, C, bias, mult, lo, hi, out);
}

void mlk_codes_centred(const uint8_t *q, float *y, int64_t n, int32_t zp) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { codes_centred_avx2(q, y, n, zp); return; }
#endif
    codes_centred_portable(q, y, n, zp);
}
