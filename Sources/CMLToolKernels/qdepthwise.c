// A requantizing depthwise conv on 8-bit codes (a QDQ file's depthwise QLinearConv whose input and output the engine
// stores as codes, QuantizedDepthwise): the sum of (x − zp) · w over the taps inside the image (a tap in the padding
// reads the zero point, so adds 0), every product and partial sum an integer below 2^24, so exact in float32 in any
// order, then the bias in int32 and onnxruntime's requantization, as mlk_requantize_channels_codes. Portable C, an
// AVX2 variant around the borders of the input as given, and an AVX-512 one on the band of input rows it reads with
// the padding made explicit (so every pixel is interior; in place when the caller padded: mlk_qdepthwise_pad),
// bit-identical. On AVX2 the padded runs lost to the border-aware kernel (the copy and 8-channel runs), on AVX-512
// they win (see QuantizedDepthwise.codesToCodes).
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
                                int64_t dw, int64_t pt, int64_t pl, int64_t c0, int64_t c1) {
    for (int64_t oy = oy0; oy < oy1; oy++)
        for (int64_t ox = 0; ox < OW; ox++)
            qdw_pixel_portable(x, H, W, C, zp, w, KH, KW, bias, mult, lo, hi, y + (oy * OW + ox) * C, oy, ox, sh, sw, dh,
                               dw, pt, pl, c0, c1);
}

void mlk_qdepthwise_pad(const uint8_t *x, int64_t H, int64_t W, int64_t C, uint8_t zp, int64_t iy0, int64_t R,
                        int64_t ix0, int64_t Wp, uint8_t *out) {
    const int64_t rowBytes = Wp * C;
    int64_t jl = ix0 < 0 ? -ix0 : 0, jr = W - ix0;   // columns [jl, jr) of the band are inside the image
    if (jl > Wp) jl = Wp;
    if (jr > Wp) jr = Wp;
    if (jr < jl) jr = jl;
    for (int64_t r = 0; r < R; r++) {
        uint8_t *row = out + r * rowBytes;
        const int64_t iy = iy0 + r;
        if (iy < 0 || iy >= H) {
            memset(row, zp, (size_t)rowBytes);
            continue;
        }
        memset(row, zp, (size_t)(jl * C));
        memcpy(row + jl * C, x + (iy * W + ix0 + jl) * C, (size_t)((jr - jl) * C));
        memset(row + jr * C, zp, (size_t)((Wp - jr) * C));
    }
}

#if MLK_X86
// ---- x86: AVX-512 on a padded band, every pixel interior (AVX2 for a last 8 channels); AVX2 on the input as given ----

// The band of input a depthwise conv's output rows [oy0, oy1) read (mlk_qdepthwise_pad) in memory of its own; NULL
// when the size overflows or memory is short (the caller then takes the portable kernel).
static uint8_t *qdw_padded_band(const uint8_t *x, int64_t H, int64_t W, int64_t C, uint8_t zp, int64_t iy0, int64_t R,
                                int64_t ix0, int64_t Wp) {
    size_t rowBytes, total;
    if (R <= 0 || Wp <= 0 || __builtin_mul_overflow((size_t)Wp, (size_t)C, &rowBytes) ||
        __builtin_mul_overflow(rowBytes, (size_t)R, &total))
        return NULL;
    uint8_t *p = malloc(total);
    if (p) mlk_qdepthwise_pad(x, H, W, C, zp, iy0, R, ix0, Wp, p);
    return p;
}

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

// What every vector variant shares: the padded band (rows of rowBytes), the weights and their per-channel tap sums,
// the requantization, the output rows.
typedef struct {
    const uint8_t *band;
    int64_t rowBytes, C, KH, KW, sh, sw, dh, dw, oy0, OW;
    int64_t c0, c1;   // the channels computed (C: a pixel's stride)
    const float *w, *wsum, *mult;
    const int32_t *bias;
    float zp, lo, hi;
    uint8_t *y;
} qdw_job;

// N (1–4) neighbouring output pixels of a row, 8 channels from c, p at the band's column of the first one's first
// tap: each input column of a kernel row is widened once and used by every output it reaches; Σ x · w less zp · Σ w
// (both exact integers below 2^24, so the definition's sum), then requantized and stored as 8 bytes each.
MLK_INLINE MLK_AVX2 void qdw_run_avx2(const qdw_job *j, const int N, const int KW, const int sw, const uint8_t *p,
                                      uint8_t *yp, int64_t c) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    const int64_t C = j->C, KH = j->KH, step = j->dh * j->rowBytes;
    for (int64_t ky = 0; ky < KH; ky++) {
        const uint8_t *r = p + ky * step + c;
        const float *wr = j->w + ky * KW * C + c;
        for (int i = 0; i < (N - 1) * sw + KW; i++) {
            const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(r + i * C))));
            for (int q = 0; q < N; q++) {
                const int k = i - q * sw;
                if (k >= 0 && k < KW) acc[q] = _mm256_fmadd_ps(v, _mm256_loadu_ps(wr + k * C), acc[q]);
            }
        }
    }
    const __m256 zpf = _mm256_set1_ps(j->zp), ws = _mm256_loadu_ps(j->wsum + c), m = _mm256_loadu_ps(j->mult + c);
    const __m256 lo = _mm256_set1_ps(j->lo), hi = _mm256_set1_ps(j->hi);
    const __m256i b = _mm256_loadu_si256((const __m256i *)(j->bias + c));
    const __m128i shift = _mm_set1_epi16((int16_t)-(int32_t)j->lo);
    for (int q = 0; q < N; q++) {
        const __m256i t = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_fnmadd_ps(zpf, ws, acc[q])), b);
        const __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(t), m), lo), hi);
        // vcvtps2dq rounds halves to even, as the 1.5 · 2^23 add; then less lo in 16 bits (exact), to bytes.
        const __m256i i = _mm256_cvtps_epi32(v);
        const __m128i h = _mm_add_epi16(_mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1)), shift);
        _mm_storel_epi64((__m128i *)(yp + q * j->C + c), _mm_packus_epi16(h, h));
    }
}

// One output pixel of a column-dilated conv (dw > 1), V vectors of 8 channels from c, p at its first tap: qdw_block_avx2's
// interior path on the band (every tap widened for this pixel alone).
MLK_INLINE MLK_AVX2 void qdw_dilated_avx2(const qdw_job *j, int V, const uint8_t *p, uint8_t *yp, int64_t c) {
    qdw_block_avx2(V, p, 0, j->rowBytes / j->C, j->C, _mm256_set1_ps(j->zp), j->w, j->KH, j->KW, j->bias, j->mult,
                   _mm256_set1_ps(j->lo), _mm256_set1_ps(j->hi), _mm_set1_epi16((int16_t)-(int32_t)j->lo), yp, 0, 0, j->sh,
                   j->sw, j->dh, j->dw, 0, 0, c, j->wsum);
}

// N pixels, 8 channels from c: the run specialised for the common kernels (3×3 and 5×5, stride 1 or 2), where the
// compiler unrolls it with the weights in registers.
MLK_INLINE MLK_AVX2 void qdw_pixels_avx2(const qdw_job *j, const int N, const uint8_t *p, uint8_t *yp, int64_t c) {
    if (j->dw != 1) {
        for (int q = 0; q < N; q++) qdw_dilated_avx2(j, 1, p + q * j->sw * j->C, yp + q * j->C, c);
    } else if (j->KW == 3 && j->sw == 1) qdw_run_avx2(j, N, 3, 1, p, yp, c);
    else if (j->KW == 3 && j->sw == 2) qdw_run_avx2(j, N, 3, 2, p, yp, c);
    else if (j->KW == 5 && j->sw == 1) qdw_run_avx2(j, N, 5, 1, p, yp, c);
    else if (j->KW == 5 && j->sw == 2) qdw_run_avx2(j, N, 5, 2, p, yp, c);
    else qdw_run_avx2(j, N, (int)j->KW, (int)j->sw, p, yp, c);
}

// The channels [c0, C) of N pixels from the band, in plain C (the same exact integer sums).
static void qdw_tail(const qdw_job *j, int N, const uint8_t *p, uint8_t *yp, int64_t c0) {
    for (int q = 0; q < N; q++)
        for (int64_t c = c0; c < j->c1; c++) {
            float sum = 0;
            for (int64_t ky = 0; ky < j->KH; ky++)
                for (int64_t kx = 0; kx < j->KW; kx++) {
                    const uint8_t code = p[q * j->sw * j->C + ky * j->dh * j->rowBytes + kx * j->dw * j->C + c];
                    sum += ((float)code - j->zp) * j->w[(ky * j->KW + kx) * j->C + c];
                }
            yp[q * j->C + c] = qdw_code(sum, j->bias[c], j->mult[c], j->lo, j->hi);
        }
}

// As qdw_run_avx2, B (1 or 2) blocks of 16 channels from c: the N · B sums are independent chains, so two blocks
// keep both FMA ports busy where one block's four chains waited on the FMA latency (Intel Xeon, AVX-512, one thread:
// 14×14×672 5×5 0.185 → 0.09 ms, 56×56×144 3×3 0.25 → 0.14).
MLK_INLINE MLK_AVX512 void qdw_run_avx512(const qdw_job *j, const int N, const int B, const int KW, const int sw,
                                          const uint8_t *p, uint8_t *yp, int64_t c) {
    __m512 acc[2][4];
    for (int b = 0; b < B; b++) for (int q = 0; q < N; q++) acc[b][q] = _mm512_setzero_ps();
    for (int64_t ky = 0; ky < j->KH; ky++) {
        const uint8_t *r = p + ky * j->dh * j->rowBytes + c;
        const float *wr = j->w + ky * KW * j->C + c;
        for (int i = 0; i < (N - 1) * sw + KW; i++)
            for (int b = 0; b < B; b++) {
                const __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(r + i * j->C + 16 * b))));
                for (int q = 0; q < N; q++) {
                    const int k = i - q * sw;
                    if (k >= 0 && k < KW) acc[b][q] = _mm512_fmadd_ps(v, _mm512_loadu_ps(wr + k * j->C + 16 * b), acc[b][q]);
                }
            }
    }
    const __m512 zpf = _mm512_set1_ps(j->zp), lo = _mm512_set1_ps(j->lo), hi = _mm512_set1_ps(j->hi);
    const __m512i loi = _mm512_set1_epi32((int32_t)j->lo);
    for (int b = 0; b < B; b++) {
        const int64_t cb = c + 16 * b;
        const __m512 ws = _mm512_loadu_ps(j->wsum + cb), m = _mm512_loadu_ps(j->mult + cb);
        const __m512i bias = _mm512_loadu_si512(j->bias + cb);
        for (int q = 0; q < N; q++) {
            const __m512i t = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_fnmadd_ps(zpf, ws, acc[b][q])), bias);
            const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(t), m), lo), hi);
            // vcvtps2dq rounds halves to even; less lo (exact), the low byte of each.
            _mm_storeu_si128((__m128i *)(yp + q * j->C + cb), _mm512_cvtepi32_epi8(_mm512_sub_epi32(_mm512_cvtps_epi32(v), loi)));
        }
    }
}

// qdw_run_avx512 for the common kernels (3×3 and 5×5, stride 1 or 2), where the compiler unrolls it with the
// weights' addresses fixed.
MLK_INLINE MLK_AVX512 void qdw_kernels_avx512(const qdw_job *j, const int N, const int B, const uint8_t *p, uint8_t *yp,
                                              int64_t c) {
    if (j->KW == 3 && j->sw == 1) qdw_run_avx512(j, N, B, 3, 1, p, yp, c);
    else if (j->KW == 3 && j->sw == 2) qdw_run_avx512(j, N, B, 3, 2, p, yp, c);
    else if (j->KW == 5 && j->sw == 1) qdw_run_avx512(j, N, B, 5, 1, p, yp, c);
    else if (j->KW == 5 && j->sw == 2) qdw_run_avx512(j, N, B, 5, 2, p, yp, c);
    else qdw_run_avx512(j, N, B, (int)j->KW, (int)j->sw, p, yp, c);
}

// N (1–4) pixels, the channels [c0, C16) (a multiple of 16 of them): pairs of 16-channel blocks, then a last single
// one (a column-dilated conv's as vectors of 8).
MLK_INLINE MLK_AVX512 void qdw_pixels_avx512(const qdw_job *j, const int N, const uint8_t *p, uint8_t *yp, int64_t c0,
                                             int64_t C16) {
    if (j->dw != 1) {
        for (int64_t c = c0; c < C16; c += 16)
            for (int q = 0; q < N; q++) qdw_dilated_avx2(j, 2, p + q * j->sw * j->C, yp + q * j->C, c);
        return;
    }
    int64_t c = c0;
    for (; c + 32 <= C16; c += 32) qdw_kernels_avx512(j, N, 2, p, yp, c);
    if (c < C16) qdw_kernels_avx512(j, N, 1, p, yp, c);
}

MLK_AVX512 static void qdw_rows_avx512(const qdw_job *job, int64_t oy1) {
    // A local copy, which the byte stores cannot alias: its fields stay in registers.
    const qdw_job local = *job, *j = &local;
    const int64_t c0 = j->c0, C16 = c0 + ((j->c1 - c0) & ~(int64_t)15), C8 = c0 + ((j->c1 - c0) & ~(int64_t)7);
    for (int64_t oy = j->oy0; oy < oy1; oy++)
        for (int64_t ox = 0; ox < j->OW;) {
            const int N = j->OW - ox >= 4 ? 4 : (int)(j->OW - ox);
            const uint8_t *p = j->band + (oy - j->oy0) * j->sh * j->rowBytes + ox * j->sw * j->C;
            uint8_t *yp = j->y + (oy * j->OW + ox) * j->C;
            switch (N) {
            case 4: qdw_pixels_avx512(j, 4, p, yp, c0, C16); break;
            case 3: qdw_pixels_avx512(j, 3, p, yp, c0, C16); break;
            case 2: qdw_pixels_avx512(j, 2, p, yp, c0, C16); break;
            default: qdw_pixels_avx512(j, 1, p, yp, c0, C16); break;
            }
            if (C16 < C8) {
                if (N == 4) qdw_pixels_avx2(j, 4, p, yp, C16);
                else for (int q = 0; q < N; q++) qdw_pixels_avx2(j, 1, p + q * j->sw * j->C, yp + q * j->C, C16);
            }
            qdw_tail(j, N, p, yp, C8);
            ox += N;
        }
}

// ---- AVX2 on the input as given: border pixels through qdw_block_avx2's bounds checks ----

MLK_AVX2 static void qdepthwise_avx2(const uint8_t *x, int64_t H, int64_t W, int64_t C, int32_t zp, const float *w,
                                     int64_t KH, int64_t KW, const int32_t *bias, const float *mult, float lo, float hi,
                                     uint8_t *y, int64_t oy0, int64_t oy1, int64_t OW, int64_t sh, int64_t sw, int64_t dh,
                                     int64_t dw, int64_t pt, int64_t pl, int64_t c0, int64_t c1) {
    const __m256 zpf = _mm256_set1_ps((float)zp), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    const __m128i shift = _mm_set1_epi16((int16_t)-(int32_t)lo);
    int64_t C8 = c0 + ((c1 - c0) & ~(int64_t)7);
    // Each channel's tap sum, for the interior pixels (without the memory, every pixel as a border one).
    float *wsum = malloc((size_t)(C8 > 0 ? C8 : 1) * sizeof(float));
    if (wsum)
        for (int64_t c = c0; c < C8; c++) {
            float t = 0;
            for (int64_t k = 0; k < KH * KW; k++) t += w[k * C + c];
            wsum[c] = t;
        }
    // Stride 1 along rows with KW ≤ 5: runs of 4 interior pixels share their input columns (qdw_pixels_avx2 on the
    // image itself as the band).
    const int runs = wsum && sw == 1 && dw == 1 && KW <= 5;
    const qdw_job j = {x, W * C, C, KH, KW, sh, sw, dh, dw, 0, OW, c0, c1, w, wsum, mult, bias, (float)zp, lo, hi, y};
    for (int64_t oy = oy0; oy < oy1; oy++)
        for (int64_t ox = 0; ox < OW; ox++) {
            uint8_t *yp = y + (oy * OW + ox) * C;
            const int64_t iy = oy * sh - pt, ix = ox * sw - pl;
            if (runs && ox + 4 <= OW && iy >= 0 && iy + (KH - 1) * dh < H && ix >= 0 && ix + 3 + KW - 1 < W) {
                int64_t c = c0;
                for (; c < C8; c += 8) qdw_pixels_avx2(&j, 4, x + (iy * W + ix) * C, yp, c);
                if (c < c1)
                    for (int q = 0; q < 4; q++)
                        qdw_pixel_portable(x, H, W, C, zp, w, KH, KW, bias, mult, lo, hi, yp + q * C, oy, ox + q, sh, sw, dh,
                                           dw, pt, pl, c, c1);
                ox += 3;
                continue;
            }
            const float *ws = iy >= 0 && iy + (KH - 1) * dh < H && ix >= 0 && ix + (KW - 1) * dw < W ? wsum : NULL;
            int64_t c = c0;
            for (; c + 32 <= C8; c += 32)
                qdw_block_avx2(4, x, H, W, C, zpf, w, KH, KW, bias, mult, vlo, vhi, shift, yp, oy, ox, sh, sw, dh, dw, pt, pl, c, ws);
            for (; c < C8; c += 8)
                qdw_block_avx2(1, x, H, W, C, zpf, w, KH, KW, bias, mult, vlo, vhi, shift, yp, oy, ox, sh, sw, dh, dw, pt, pl, c, ws);
            if (c < c1)
                qdw_pixel_portable(x, H, W, C, zp, w, KH, KW, bias, mult, lo, hi, yp, oy, ox, sh, sw, dh, dw, pt, pl, c, c1);
        }
    free(wsum);
}

// The band padded (qdw_padded_band), the tap sums, then the rows at the best level; 0 when memory is short.
static int qdepthwise_padded(const uint8_t *x, int64_t H, int64_t W, int64_t C, int32_t zp, const float *w, int64_t KH,
                             int64_t KW, const int32_t *bias, const float *mult, float lo, float hi, uint8_t *y,
                             int64_t oy0, int64_t oy1, int64_t OW, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                             int64_t pt, int64_t pl, int64_t c0, int64_t c1) {
    const int64_t R = (oy1 - 1 - oy0) * sh + (KH - 1) * dh + 1, Wp = (OW - 1) * sw + (KW - 1) * dw + 1;
    const int64_t iy0 = oy0 * sh - pt;
    // A band inside the image (an input the caller padded: mlk_qdepthwise_pad) is read in place.
    const int inside = iy0 >= 0 && iy0 + R <= H && pl == 0 && Wp <= W;
    uint8_t *band = inside ? NULL : qdw_padded_band(x, H, W, C, (uint8_t)zp, iy0, R, -pl, Wp);
    float *wsum = malloc((size_t)C * sizeof(float));
    if ((!inside && !band) || !wsum) {
        free(band);
        free(wsum);
        return 0;
    }
    // Tap by tap across the channels (each channel's sum in tap order, exact: integers below 2^24), vectorised.
    for (int64_t c = c0; c < c1; c++) wsum[c] = 0;
    for (int64_t k = 0; k < KH * KW; k++)
        for (int64_t c = c0; c < c1; c++) wsum[c] += w[k * C + c];
    const qdw_job j = {inside ? x + iy0 * W * C : band, (inside ? W : Wp) * C, C, KH, KW, sh, sw, dh, dw, oy0, OW, c0, c1,
                       w, wsum, mult, bias, (float)zp, lo, hi, y};
    qdw_rows_avx512(&j, oy1);
    free(band);
    free(wsum);
    return 1;
}
#endif

void mlk_qdepthwise_codes(const uint8_t *x, int64_t H, int64_t W, int64_t C, int32_t zp, const float *w, int64_t KH,
                          int64_t KW, const int32_t *bias, const float *mult, float lo, float hi, uint8_t *y, int64_t oy0,
                          int64_t oy1, int64_t OW, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl,
                          int64_t c0, int64_t c1) {
    if (c0 < 0) c0 = 0;
    if (c1 > C) c1 = C;
    if (oy1 <= oy0 || OW <= 0 || c1 <= c0) return;
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX512) && zp >= 0 && zp <= 255 &&
        qdepthwise_padded(x, H, W, C, zp, w, KH, KW, bias, mult, lo, hi, y, oy0, oy1, OW, sh, sw, dh, dw, pt, pl, c0, c1))
        return;
    if (mlk_cpu_has(MLK_CPU_AVX2)) {
        qdepthwise_avx2(x, H, W, C, zp, w, KH, KW, bias, mult, lo, hi, y, oy0, oy1, OW, sh, sw, dh, dw, pt, pl, c0, c1);
        return;
    }
#endif
    qdepthwise_portable(x, H, W, C, zp, w, KH, KW, bias, mult, lo, hi, y, oy0, oy1, OW, sh, sw, dh, dw, pt, pl, c0, c1);
}
