// A requantizing depthwise conv on 8-bit codes (a QDQ file's depthwise QLinearConv whose input and output the engine
// stores as codes, QuantizedDepthwise): the sum of (x − zp) · w over the taps inside the image (a tap in the padding
// reads the zero point, so adds 0), every product and partial sum an integer below 2^24, so exact in float32 in any
// order, then the bias in int32 and onnxruntime's requantization, as mlk_requantize_channels_codes. Portable C and
// an AVX2 variant, bit-identical.
#include "CMLToolKernels.h"
#include "isa.h"
#include <stdlib.h>
#include <string.h>

// The code byte of one exact sum (as mlk_requantize_channels_codes).
static inline uint8_t qdw_code(float sum, int32_t bias, float mult, float lo, float hi) {
    float v = (float)(int32_t)((uint32_t)(int32_t)sum + (uint32_t)bias) * mult;
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    return (uint8_t)(int32_t)(((v + 12582912.0f) - 12582912.0f) - lo);
}

// Channels [c0, c1) of output pixel (oy, ox).
static void qdw_pixel_portable(const uint8_t *x, int64_t H, int64_t W, int64_t C, int32_t zp, const float *w,
                               int64_t KH, int64_t KW, const int32_t *bias, const float *mult, float lo, float hi,
                               uint8_t *yp, int64_t oy, int64_t ox, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                               int64_t pt, int64_t pl, int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; c++) {
        float sum = 0;
        for (int64_t ky = 0; ky < KH; ky++) {
            int64_t iy = oy * sh - pt + ky * dh;
            if (iy < 0 || iy >= H) continue;
            for (int64_t kx = 0; kx < KW; kx++) {
                int64_t ix = ox * sw - pl + kx * dw;
                if (ix < 0 || ix >= W) continue;
                sum += (float)((int32_t)x[(iy * W + ix) * C + c] - zp) * w[(ky * KW + kx) * C + c];
            }
        }
        yp[c] = qdw_code(sum, bias[c], mult[c], lo, hi);
    }
}

static void qdepthwise_portable(const uint8_t *x, int64_t H, int64_t W, int64_t C, int32_t zp, const float *w,
                                int64_t KH, int64_t KW, const int32_t *bias, const float *mult, float lo, float hi,
                                uint8_t *y, int64_t oy0, int64_t oy1, int64_t OW, int64_t sh, int64_t sw, int64_t dh,
                                int64_t dw, int64_t pt, int64_t pl) {
    for (int64_t oy = oy0; oy < oy1; oy++)
        for (int64_t ox = 0; ox < OW; ox++)
            qdw_pixel_portable(x, H, W, C, zp, w, KH, KW, bias, mult, lo, hi, y + (oy * OW + ox) * C, oy, ox, sh, sw, dh,
                               dw, pt, pl, 0, C);
}

#if MLK_X86
// V vectors of 8 channels from c of one output pixel: the taps' codes widened to int32, less zp, as floats, summed
// with the weights (exact), then requantized and stored as 8 bytes each.
// An interior pixel (every tap inside the image) with the channels' tap sums wsum: Σ x · w, less zp · Σ w once (both
// exact integers, so the same sum).
MLK_INLINE MLK_AVX2 void qdw_block_avx2(int V, const uint8_t *x, int64_t H, int64_t W, int64_t C, __m256 zpf,
                                        const float *w, int64_t KH, int64_t KW, const int32_t *bias, const float *mult,
                                        __m256 lo, __m256 hi, __m128i shift, uint8_t *yp, int64_t oy, int64_t ox,
                                        int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl, int64_t c,
                                        const float *wsum) {
    __m256 acc[4];
    for (int j = 0; j < V; j++) acc[j] = _mm256_setzero_ps();
    if (wsum) {
        const uint8_t *p0 = x + ((oy * sh - pt) * W + (ox * sw - pl)) * C + c;
        for (int64_t ky = 0; ky < KH; ky++)
            for (int64_t kx = 0; kx < KW; kx++) {
                const uint8_t *p = p0 + (ky * dh * W + kx * dw) * C;
                const float *wp = w + (ky * KW + kx) * C + c;
                for (int j = 0; j < V; j++)
                    acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + 8 * j)))),
                                             _mm256_loadu_ps(wp + 8 * j), acc[j]);
            }
        for (int j = 0; j < V; j++) acc[j] = _mm256_fnmadd_ps(zpf, _mm256_loadu_ps(wsum + c + 8 * j), acc[j]);
    } else
    for (int64_t ky = 0; ky < KH; ky++) {
        int64_t iy = oy * sh - pt + ky * dh;
        if (iy < 0 || iy >= H) continue;
        for (int64_t kx = 0; kx < KW; kx++) {
            int64_t ix = ox * sw - pl + kx * dw;
            if (ix < 0 || ix >= W) continue;
            const uint8_t *p = x + (iy * W + ix) * C + c;
            const float *wp = w + (ky * KW + kx) * C + c;
            for (int j = 0; j < V; j++) {
                __m256 v = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + 8 * j)))), zpf);
                acc[j] = _mm256_fmadd_ps(v, _mm256_loadu_ps(wp + 8 * j), acc[j]);
            }
        }
    }
    for (int j = 0; j < V; j++) {
        __m256i s = _mm256_add_epi32(_mm256_cvtps_epi32(acc[j]), _mm256_loadu_si256((const __m256i *)(bias + c + 8 * j)));
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_loadu_ps(mult + c + 8 * j));
        v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
        // vcvtps2dq rounds halves to even, as the 1.5 · 2^23 add; then less lo in 16 bits (exact), to bytes.
        __m256i i = _mm256_cvtps_epi32(v);
        __m128i h = _mm_add_epi16(_mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1)), shift);
        _mm_storel_epi64((__m128i *)(yp + c + 8 * j), _mm_packus_epi16(h, h));
    }
}

// Four interior output pixels (ox … ox + 3) of a stride-1, column-dilation-1 conv, 8 channels from c, with the tap sums
// wsum: each input pixel of a kernel row is widened once and used by the up to KW outputs it reaches (the weights of
// the row in registers), then as qdw_block_avx2's interior path (the same exact sums, in another order).
MLK_INLINE MLK_AVX2 void qdw_run4_avx2(const uint8_t *x, int64_t W, int64_t C, __m256 zpf, const float *w, int64_t KH,
                                   const int KW, const int32_t *bias, const float *mult, __m256 lo, __m256 hi, __m128i shift,
                                   uint8_t *yp, int64_t oy, int64_t ox, int64_t sh, int64_t dh, int64_t pt, int64_t pl,
                                   int64_t c, const float *wsum) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    __m256 wr[5];
    for (int64_t ky = 0; ky < KH; ky++) {
        const uint8_t *p = x + ((oy * sh - pt + ky * dh) * W + (ox - pl)) * C + c;
        for (int k = 0; k < KW; k++) wr[k] = _mm256_loadu_ps(w + (ky * KW + k) * C + c);
        for (int i = 0; i < KW + 3; i++) {
            const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + i * C))));
            for (int q = 0; q < 4; q++) {
                const int k = i - q;
                if (k >= 0 && k < KW) acc[q] = _mm256_fmadd_ps(v, wr[k], acc[q]);
            }
        }
    }
    const __m256 ws = _mm256_loadu_ps(wsum + c), b = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)(bias + c)));
    const __m256 m = _mm256_loadu_ps(mult + c);
    for (int q = 0; q < 4; q++) {
        __m256i t = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_fnmadd_ps(zpf, ws, acc[q])), _mm256_castps_si256(b));
        __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(t), m), lo), hi);
        __m256i i = _mm256_cvtps_epi32(v);
        __m128i h = _mm_add_epi16(_mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1)), shift);
        _mm_storel_epi64((__m128i *)(yp + q * C + c), _mm_packus_epi16(h, h));
    }
}

MLK_AVX2 static void qdepthwise_avx2(const uint8_t *x, int64_t H, int64_t W, int64_t C, int32_t zp, const float *w,
                                     int64_t KH, int64_t KW, const int32_t *bias, const float *mult, float lo, float hi,
                                     uint8_t *y, int64_t oy0, int64_t oy1, int64_t OW, int64_t sh, int64_t sw, int64_t dh,
                                     int64_t dw, int64_t pt, int64_t pl) {
    const __m256 zpf = _mm256_set1_ps((float)zp), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    const __m128i shift = _mm_set1_epi16((int16_t)-(int32_t)lo);
    int64_t C8 = C & ~(int64_t)7;
    // Each channel's tap sum, for the interior pixels (without the memory, every pixel as a border one).
    float *wsum = malloc((size_t)(C8 > 0 ? C8 : 1) * sizeof(float));
    if (wsum)
        for (int64_t c = 0; c < C8; c++) {
            float t = 0;
            for (int64_t k = 0; k < KH * KW; k++) t += w[k * C + c];
            wsum[c] = t;
        }
    // Stride 1 along rows with KW ≤ 5: runs of 4 interior pixels share their input columns (qdw_run4_avx2).
    const int runs = wsum && sw == 1 && dw == 1 && KW <= 5;
    for (int64_t oy = oy0; oy < oy1; oy++)
        for (int64_t ox = 0; ox < OW; ox++) {
            uint8_t *yp = y + (oy * OW + ox) * C;
            const int64_t iy = oy * sh - pt, ix = ox * sw - pl;
            if (runs && ox + 4 <= OW && iy >= 0 && iy + (KH - 1) * dh < H && ix >= 0 && ix + 3 + KW - 1 < W) {
                int64_t c = 0;
                for (; c < C8; c += 8) {
                    if (KW == 3) qdw_run4_avx2(x, W, C, zpf, w, KH, 3, bias, mult, vlo, vhi, shift, yp, oy, ox, sh, dh, pt, pl, c, wsum);
                    else if (KW == 5) qdw_run4_avx2(x, W, C, zpf, w, KH, 5, bias, mult, vlo, vhi, shift, yp, oy, ox, sh, dh, pt, pl, c, wsum);
                    else qdw_run4_avx2(x, W, C, zpf, w, KH, (int)KW, bias, mult, vlo, vhi, shift, yp, oy, ox, sh, dh, pt, pl, c, wsum);
                }
                if (c < C)
                    for (int q = 0; q < 4; q++)
                        qdw_pixel_portable(x, H, W, C, zp, w, KH, KW, bias, mult, lo, hi, yp + q * C, oy, ox + q, sh, sw, dh,
                                           dw, pt, pl, c, C);
                ox += 3;
                continue;
            }
            const float *ws = iy >= 0 && iy + (KH - 1) * dh < H && ix >= 0 && ix + (KW - 1) * dw < W ? wsum : NULL;
            int64_t c = 0;
            for (; c + 32 <= C8; c += 32)
                qdw_block_avx2(4, x, H, W, C, zpf, w, KH, KW, bias, mult, vlo, vhi, shift, yp, oy, ox, sh, sw, dh, dw, pt, pl, c, ws);
            for (; c < C8; c += 8)
                qdw_block_avx2(1, x, H, W, C, zpf, w, KH, KW, bias, mult, vlo, vhi, shift, yp, oy, ox, sh, sw, dh, dw, pt, pl, c, ws);
            if (c < C)
                qdw_pixel_portable(x, H, W, C, zp, w, KH, KW, bias, mult, lo, hi, yp, oy, ox, sh, sw, dh, dw, pt, pl, c, C);
        }
    free(wsum);
}
#endif

void mlk_qdepthwise_codes(const uint8_t *x, int64_t H, int64_t W, int64_t C, int32_t zp, const float *w, int64_t KH,
                          int64_t KW, const int32_t *bias, const float *mult, float lo, float hi, uint8_t *y, int64_t oy0,
                          int64_t oy1, int64_t OW, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) {
        qdepthwise_avx2(x, H, W, C, zp, w, KH, KW, bias, mult, lo, hi, y, oy0, oy1, OW, sh, sw, dh, dw, pt, pl);
        return;
    }
#endif
    qdepthwise_portable(x, H, W, C, zp, w, KH, KW, bias, mult, lo, hi, y, oy0, oy1, OW, sh, sw, dh, dw, pt, pl);
}
