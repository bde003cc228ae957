// Convolution helpers around the GEMM: im2col (one group, or rows of all channels) and the groups-1 conv of output
// rows, whose interior pixels a stem reads in place on AVX-512 and AVX2 (same products, same order, same bits as
// im2col + GEMM).
#include "CMLToolKernels.h"
#include "isa.h"
#include "vec.h"
#include <string.h>

void mlk_im2col(const float *x, int64_t H, int64_t W, int64_t C, int64_t c0, int64_t cg,
                int64_t KH, int64_t KW, float *cols, int64_t OH, int64_t OW,
                int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl) {
    int64_t K = KH * KW * cg;
    for (int64_t oy = 0; oy < OH; oy++)
        for (int64_t ox = 0; ox < OW; ox++) {
            float *row = cols + (oy * OW + ox) * K;
            int64_t ix0 = ox * sw - pl;
            // All channels, no dilation, the whole kernel row inside: the row's taps are one contiguous run.
            int whole = cg == C && dw == 1 && ix0 >= 0 && ix0 + KW <= W;
            for (int64_t ky = 0; ky < KH; ky++) {
                int64_t iy = oy * sh - pt + ky * dh;
                if (whole) {
                    float *dst = row + ky * KW * cg;
                    if (iy < 0 || iy >= H) memset(dst, 0, (size_t)(KW * C) * sizeof(float));
                    else memcpy(dst, x + (iy * W + ix0) * C, (size_t)(KW * C) * sizeof(float));
                    continue;
                }
                for (int64_t kx = 0; kx < KW; kx++) {
                    int64_t ix = ox * sw - pl + kx * dw;
                    float *dst = row + (ky * KW + kx) * cg;
                    if (iy < 0 || iy >= H || ix < 0 || ix >= W) memset(dst, 0, (size_t)cg * sizeof(float));
                    else memcpy(dst, x + (iy * W + ix) * C + c0, (size_t)cg * sizeof(float));
                }
            }
        }
}

void mlk_im2col_rows(const float *x, int64_t H, int64_t W, int64_t C, int64_t KH, int64_t KW, float *cols,
                     int64_t OW, int64_t p0, int64_t p1, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                     int64_t pl) {
    int64_t K = KH * KW * C;
    int64_t oy = p0 / OW, ox = p0 % OW;
    for (int64_t p = p0; p < p1; p++, ox = ox + 1 == OW ? 0 : ox + 1, oy += ox == 0) {
        float *row = cols + (p - p0) * K;
        int64_t ix0 = ox * sw - pl;
        // No dilation and the whole kernel row inside: the row's taps are one contiguous run.
        int whole = dw == 1 && ix0 >= 0 && ix0 + KW <= W;
        for (int64_t ky = 0; ky < KH; ky++) {
            int64_t iy = oy * sh - pt + ky * dh;
            if (whole) {
                float *dst = row + ky * KW * C;
                if (iy < 0 || iy >= H) memset(dst, 0, (size_t)(KW * C) * sizeof(float));
                else memcpy(dst, x + (iy * W + ix0) * C, (size_t)(KW * C) * sizeof(float));
                continue;
            }
            for (int64_t kx = 0; kx < KW; kx++) {
                int64_t ix = ix0 + kx * dw;
                float *dst = row + (ky * KW + kx) * C;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) memset(dst, 0, (size_t)C * sizeof(float));
                else memcpy(dst, x + (iy * W + ix) * C, (size_t)C * sizeof(float));
            }
        }
    }
}

// ---- direct k×k convolution for few input channels (a network's stem), AVX-512 ----
// The GEMM of the im2col path with the im2col row read in place: for an output pixel whose taps all lie inside
// the image, the row is KH runs of KW·C contiguous floats of the input. Same products in the same k order, from
// 0, then + bias, as mlk_gemm_packed on the im2col rows: identical results, without writing and reading the rows.
#if MLK_X86

// R pixels (consecutive ox of one output row, all taps inside) × 2 panels (N ≤ 32). base[i] points at pixel i's
// first tap; a tap row is `run` floats, rows `rowStride` apart.
MLK_INLINE MLK_AVX512 void
ctile(int R, const float *const *base, int64_t KH, int64_t run, int64_t rowStride, const float *packed, int64_t K,
      int P, const __m512 *b, const __mmask16 *mask, const int64_t *nv, float *const *out, int act, float p0, float p1) {
    __m512 c[8][2];
    for (int i = 0; i < R; i++) for (int j = 0; j < P; j++) c[i][j] = _mm512_setzero_ps();
    int64_t k = 0;
    for (int64_t ky = 0; ky < KH; ky++)
        for (int64_t t = 0; t < run; t++, k++) {
            __m512 w0 = _mm512_load_ps(packed + k * 16);
            __m512 w1 = P > 1 ? _mm512_load_ps(packed + (K + k) * 16) : w0;
            for (int i = 0; i < R; i++) {
                __m512 v = _mm512_set1_ps(base[i][ky * rowStride + t]);
                c[i][0] = _mm512_fmadd_ps(v, w0, c[i][0]);
                if (P > 1) c[i][1] = _mm512_fmadd_ps(v, w1, c[i][1]);
            }
        }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < P; j++) {
            __m512 v = _mm512_add_ps(c[i][j], b[j]);
            if (MLK_ACT_VECTOR(act)) { _mm512_mask_storeu_ps(out[i] + 16 * j, mask[j], mlk_act16(v, act, p0, p1)); continue; }
            _mm512_mask_storeu_ps(out[i] + 16 * j, mask[j], v);
            for (int64_t q = 0; q < nv[j]; q++) out[i][16 * j + q] = act_scalar(out[i][16 * j + q], act, p0, p1);
        }
}

// The usual stem (3 input channels, 3 × 3, stride 2): 12 pixels × P panels per tile, every tap at a constant offset
// from one pointer per kernel row (pixel i's taps start 6 floats after pixel i − 1's), so the 12 broadcasts need no
// pointer registers of their own. The same products in the same k order as ctile: the same bits.
MLK_INLINE MLK_AVX512 void
stile(int R, int P, const float *b0, int64_t KH, int64_t rowStride, const float *packed, int64_t K, const __m512 *b,
      const __mmask16 *mask, const int64_t *nv, float *out, int64_t N, int act, float p0, float p1) {
    __m512 c[12][2];
    for (int i = 0; i < R; i++) { c[i][0] = _mm512_setzero_ps(); c[i][1] = _mm512_setzero_ps(); }
    int64_t k = 0;
    for (int64_t ky = 0; ky < KH; ky++) {
        const float *r = b0 + ky * rowStride;
#pragma clang loop unroll(full)
        for (int t = 0; t < 9; t++, k++) {
            __m512 w0 = _mm512_load_ps(packed + k * 16);
            __m512 w1 = P > 1 ? _mm512_load_ps(packed + (K + k) * 16) : w0;
#pragma clang loop unroll(full)
            for (int i = 0; i < R; i++) {
                __m512 v = _mm512_set1_ps(r[i * 6 + t]);
                c[i][0] = _mm512_fmadd_ps(v, w0, c[i][0]);
                if (P > 1) c[i][1] = _mm512_fmadd_ps(v, w1, c[i][1]);
            }
        }
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < P; j++) {
            float *o = out + i * N + 16 * j;
            __m512 v = _mm512_add_ps(c[i][j], b[j]);
            if (MLK_ACT_VECTOR(act)) { _mm512_mask_storeu_ps(o, mask[j], mlk_act16(v, act, p0, p1)); continue; }
            _mm512_mask_storeu_ps(o, mask[j], v);
            for (int64_t q = 0; q < nv[j]; q++) o[q] = act_scalar(o[q], act, p0, p1);
        }
}

// Output pixels [ox0, ox1) of row oy, every tap inside the image (the caller checks).
MLK_AVX512 static void conv_direct_avx512(const float *x, int64_t W, int64_t C, int64_t KH, int64_t KW,
                                        const float *packed, int64_t N, int64_t OW, int64_t oy, int64_t ox0,
                                        int64_t ox1, int64_t sh, int64_t sw, int64_t pt, int64_t pl, const float *bias,
                                        float *y, int act, float p0, float p1) {
    int64_t iy = oy * sh - pt;
    int P = N > 16 ? 2 : 1;
    __m512 b[2];
    __mmask16 mask[2];
    int64_t nv[2];
    for (int j = 0; j < P; j++) {
        nv[j] = N - 16 * j < 16 ? N - 16 * j : 16;
        mask[j] = (__mmask16)((1u << nv[j]) - 1);
        b[j] = bias ? _mm512_maskz_loadu_ps(mask[j], bias + 16 * j) : _mm512_setzero_ps();
    }
    int64_t K = KH * KW * C, run = KW * C, rowStride = W * C;
    int64_t ox = ox0;
    if (C == 3 && KW == 3 && sw == 2) {
        // 12 pixels a tile for one panel, 8 for two (24 accumulators ran slower than 16 here). Measured on Zen 4,
        // the 224 × 224 stem, best of 5: 32 outputs 352 → 270 µs, 16 outputs 201 → 149 µs.
        int R = P == 2 ? 8 : 12;
        for (; ox + R <= ox1; ox += R) {
            const float *b0 = x + (iy * W + ox * 2 - pl) * 3;
            float *out = y + (oy * OW + ox) * N;
            if (P == 2) stile(8, 2, b0, KH, rowStride, packed, K, b, mask, nv, out, N, act, p0, p1);
            else stile(12, 1, b0, KH, rowStride, packed, K, b, mask, nv, out, N, act, p0, p1);
        }
    }
    while (ox < ox1) {
        int R = ox1 - ox < 8 ? (int)(ox1 - ox) : 8;
        const float *base[8];
        float *out[8];
        for (int i = 0; i < R; i++) {
            base[i] = x + (iy * W + (ox + i) * sw - pl) * C;
            out[i] = y + (oy * OW + ox + i) * N;
        }
        switch (R) {
        case 8: ctile(8, base, KH, run, rowStride, packed, K, P, b, mask, nv, out, act, p0, p1); break;
        case 7: ctile(7, base, KH, run, rowStride, packed, K, P, b, mask, nv, out, act, p0, p1); break;
        case 6: ctile(6, base, KH, run, rowStride, packed, K, P, b, mask, nv, out, act, p0, p1); break;
        case 5: ctile(5, base, KH, run, rowStride, packed, K, P, b, mask, nv, out, act, p0, p1); break;
        case 4: ctile(4, base, KH, run, rowStride, packed, K, P, b, mask, nv, out, act, p0, p1); break;
        case 3: ctile(3, base, KH, run, rowStride, packed, K, P, b, mask, nv, out, act, p0, p1); break;
        case 2: ctile(2, base, KH, run, rowStride, packed, K, P, b, mask, nv, out, act, p0, p1); break;
        default: ctile(1, base, KH, run, rowStride, packed, K, P, b, mask, nv, out, act, p0, p1); break;
        }
        ox += R;
    }
}

// ---- the same in-place reading on AVX2 + FMA ----
// gemm_avx2's 6-row × 16-column tile with the im2col row read in place: R pixels (consecutive ox of one output
// row, all taps inside) × one 16-column panel. Each output is Σ_k a·b in k order from 0, then + bias, then the
// activation, exactly as gemm_avx2 computes it from the im2col rows.
MLK_INLINE MLK_AVX2 void
ctile_avx2(int R, const float *const *base, int64_t KH, int64_t run, int64_t rowStride, const float *panel,
           __m256 b0, __m256 b1, const float *bias, int64_t nv, float *const *out, int act, float p0, float p1) {
    // Named accumulators (an array indexed in the loop ends up on the stack); rows past R are never touched.
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    const float *w = panel;
    for (int64_t ky = 0; ky < KH; ky++) {
        int64_t off = ky * rowStride;
        const float *r0 = base[0] + off, *r1 = R > 1 ? base[1] + off : r0, *r2 = R > 2 ? base[2] + off : r0;
        const float *r3 = R > 3 ? base[3] + off : r0, *r4 = R > 4 ? base[4] + off : r0, *r5 = R > 5 ? base[5] + off : r0;
        for (int64_t t = 0; t < run; t++, w += 16) {
            __m256 w0 = _mm256_load_ps(w), w1 = _mm256_load_ps(w + 8), v;
            v = _mm256_broadcast_ss(r0 + t); c00 = _mm256_fmadd_ps(v, w0, c00); c01 = _mm256_fmadd_ps(v, w1, c01);
            if (R > 1) { v = _mm256_broadcast_ss(r1 + t); c10 = _mm256_fmadd_ps(v, w0, c10); c11 = _mm256_fmadd_ps(v, w1, c11); }
            if (R > 2) { v = _mm256_broadcast_ss(r2 + t); c20 = _mm256_fmadd_ps(v, w0, c20); c21 = _mm256_fmadd_ps(v, w1, c21); }
            if (R > 3) { v = _mm256_broadcast_ss(r3 + t); c30 = _mm256_fmadd_ps(v, w0, c30); c31 = _mm256_fmadd_ps(v, w1, c31); }
            if (R > 4) { v = _mm256_broadcast_ss(r4 + t); c40 = _mm256_fmadd_ps(v, w0, c40); c41 = _mm256_fmadd_ps(v, w1, c41); }
            if (R > 5) { v = _mm256_broadcast_ss(r5 + t); c50 = _mm256_fmadd_ps(v, w0, c50); c51 = _mm256_fmadd_ps(v, w1, c51); }
        }
    }
    __m256 acc[12] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
    int vec = MLK_ACT_VECTOR(act);
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    for (int i = 0; i < R; i++) {
        float *yr = out[i];
        __m256 v0 = _mm256_add_ps(acc[2 * i], b0), v1 = _mm256_add_ps(acc[2 * i + 1], b1);
        if (nv == 16) {
            if (vec) { v0 = act8(v0, act, lo, hi); v1 = act8(v1, act, lo, hi); }
            _mm256_storeu_ps(yr, v0);
            _mm256_storeu_ps(yr + 8, v1);
            if (!vec) for (int64_t j = 0; j < 16; j++) yr[j] = act_scalar(yr[j], act, p0, p1);
        } else {
            float t[16];
            _mm256_storeu_ps(t, v0);
            _mm256_storeu_ps(t + 8, v1);
            for (int64_t j = 0; j < nv; j++) yr[j] = act_scalar(t[j] + (bias ? bias[j] : 0), act, p0, p1);
        }
    }
}

// Output pixels [ox0, ox1) of row oy, every tap inside the image (the caller checks): one 16-column panel at a
// time over the row, so the panel stays in L1 while the row's taps pass (faster than all panels per pixel group).
MLK_AVX2 static void conv_direct_avx2(const float *x, int64_t W, int64_t C, int64_t KH, int64_t KW,
                                      const float *packed, int64_t N, int64_t OW, int64_t oy, int64_t ox0, int64_t ox1,
                                      int64_t sh, int64_t sw, int64_t pt, int64_t pl, const float *bias, float *y,
                                      int act, float p0, float p1) {
    int64_t iy = oy * sh - pt;
    int64_t K = KH * KW * C, run = KW * C, rowStride = W * C;
    for (int64_t n0 = 0; n0 < N; n0 += 16) {
        int64_t nv = N - n0 < 16 ? N - n0 : 16;
        __m256 b0 = bias && nv == 16 ? _mm256_loadu_ps(bias + n0) : _mm256_setzero_ps();
        __m256 b1 = bias && nv == 16 ? _mm256_loadu_ps(bias + n0 + 8) : _mm256_setzero_ps();
        const float *panel = packed + (n0 / 16) * K * 16, *pb = bias ? bias + n0 : 0;
        for (int64_t ox = ox0; ox < ox1; ox += 6) {
            int R = ox1 - ox < 6 ? (int)(ox1 - ox) : 6;
            const float *base[6];
            float *out[6];
            for (int i = 0; i < R; i++) {
                base[i] = x + (iy * W + (ox + i) * sw - pl) * C;
                out[i] = y + (oy * OW + ox + i) * N + n0;
            }
            switch (R) {
            case 6: ctile_avx2(6, base, KH, run, rowStride, panel, b0, b1, pb, nv, out, act, p0, p1); break;
            case 5: ctile_avx2(5, base, KH, run, rowStride, panel, b0, b1, pb, nv, out, act, p0, p1); break;
            case 4: ctile_avx2(4, base, KH, run, rowStride, panel, b0, b1, pb, nv, out, act, p0, p1); break;
            case 3: ctile_avx2(3, base, KH, run, rowStride, panel, b0, b1, pb, nv, out, act, p0, p1); break;
            case 2: ctile_avx2(2, base, KH, run, rowStride, panel, b0, b1, pb, nv, out, act, p0, p1); break;
            default: ctile_avx2(1, base, KH, run, rowStride, panel, b0, b1, pb, nv, out, act, p0, p1); break;
            }
        }
    }
}
#endif

int mlk_conv_direct_eligible(int64_t C, int64_t KW, int64_t N, int64_t dh, int64_t dw) {
#if MLK_X86
    if (dh != 1 || dw != 1) return 0;
    if (mlk_cpu_has(MLK_CPU_AVX512)) return N <= 32 && KW * C <= 64;
    // Measured against im2col + GEMM (AMD EPYC, AVX2): 1.3–2× for a stem (KW·C ≤ 48), slower from KW·C = 96 on.
    if (mlk_cpu_has(MLK_CPU_AVX2)) return N <= 32 && KW * C <= 48;
    return 0;
#else
    (void)C; (void)KW; (void)N; (void)dh; (void)dw;
    return 0;
#endif
}

// Output pixels [p, q) (at most one output row) through im2col rows in `cols` and the GEMM.
static void rows_gemm(const float *x, int64_t H, int64_t W, int64_t C, int64_t KH, int64_t KW, const float *packed,
                      int64_t N, int64_t OW, int64_t p, int64_t q, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                      int64_t pt, int64_t pl, const float *bias, float *y, float *cols, int act, float a0, float a1) {
    int64_t K = KH * KW * C;
    mlk_im2col_rows(x, H, W, C, KH, KW, cols, OW, p, q, sh, sw, dh, dw, pt, pl);
    mlk_gemm_packed(cols, K, packed, 0, q - p, N, K, bias, y + p * N, N, act, a0, a1);
}

void mlk_conv_rows(const float *x, int64_t H, int64_t W, int64_t C, int64_t KH, int64_t KW, const float *packed,
                   int64_t N, int64_t OW, int64_t p0, int64_t p1, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                   int64_t pt, int64_t pl, const float *bias, float *y, float *cols, int act, float a0, float a1) {
    int direct = mlk_conv_direct_eligible(C, KW, N, dh, dw);
    // Interior columns: every horizontal tap inside.
    int64_t lo = 0, hi = OW;
    while (lo < OW && lo * sw - pl < 0) lo++;
    while (hi > lo && (hi - 1) * sw - pl + (KW - 1) * dw >= W) hi--;
    for (int64_t p = p0; p < p1;) {
        int64_t oy = p / OW, ox = p % OW;
        int64_t end = oy * OW + OW < p1 ? OW : p1 - oy * OW;   // this row's pixels in range: [ox, end)
        int64_t iy = oy * sh - pt;
        int rowInside = iy >= 0 && iy + (KH - 1) * dh < H;
        int64_t a = ox > lo ? ox : lo, b = end < hi ? end : hi;
        if (direct && rowInside && a < b) {
            // Borders through im2col + GEMM, the interior in place.
            if (ox < a) rows_gemm(x, H, W, C, KH, KW, packed, N, OW, p, oy * OW + a, sh, sw, dh, dw, pt, pl, bias, y,
                                  cols, act, a0, a1);
#if MLK_X86
            if (mlk_cpu_has(MLK_CPU_AVX512))
                conv_direct_avx512(x, W, C, KH, KW, packed, N, OW, oy, a, b, sh, sw, pt, pl, bias, y, act, a0, a1);
            else
                conv_direct_avx2(x, W, C, KH, KW, packed, N, OW, oy, a, b, sh, sw, pt, pl, bias, y, act, a0, a1);
#endif
            if (b < end) rows_gemm(x, H, W, C, KH, KW, packed, N, OW, oy * OW + b, oy * OW + end, sh, sw, dh, dw, pt,
                                   pl, bias, y, cols, act, a0, a1);
        } else {
            rows_gemm(x, H, W, C, KH, KW, packed, N, OW, p, oy * OW + end, sh, sw, dh, dw, pt, pl, bias, y, cols, act,
                      a0, a1);
        }
        p = oy * OW + end;
    }
}
