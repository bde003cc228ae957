// See include/CMLToolKernels.h. Shapes are NHWC; every index is computed in int64_t.
#include "CMLToolKernels.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "act.h"

// kernels_dw.c: eight interior pixels of a 3×3 or 5×5 depthwise conv with horizontal stride 1 or 2 (C a multiple of
// 16); returns 0 (and does nothing) otherwise.
int mlk_depthwise8_avx512(const float *base, int64_t W, int64_t C, int64_t CN, const float *w, int64_t KW, int64_t sw,
                          int64_t ky0, int64_t ky1, int64_t dh, const float *bias, float *out, int act, float p0,
                          float p1);

// kernels_gemm.c: tiles for 1 or 5–6 panels; returns 0 (and does nothing) for other widths.
int mlk_gemm_narrow_avx512(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N,
                           int64_t K, const float *bias, float *y, int64_t ldy, int act, float p0, float p1);
#if defined(__x86_64__)
#include <immintrin.h>
#define MLK_AVX2 __attribute__((target("avx2,fma")))
#endif

static inline int fast(void);

// ---- portable versions ----

static void bias_act_portable(float *y, int64_t rows, int64_t cols, const float *bias, int act, float p0, float p1) {
    for (int64_t r = 0; r < rows; r++) {
        float *row = y + r * cols;
        for (int64_t c = 0; c < cols; c++) row[c] = act_scalar(row[c] + (bias ? bias[c] : 0), act, p0, p1);
    }
}

static void depthwise_portable(const float *x, int64_t H, int64_t W, int64_t C, int64_t CN, const float *w, int64_t KH,
                               int64_t KW, const float *bias, float *y, int64_t oy0, int64_t oy1, int64_t OW, int64_t sh, int64_t sw,
                               int64_t dh, int64_t dw, int64_t pt, int64_t pl, int act, float p0, float p1) {
    for (int64_t oy = oy0; oy < oy1; oy++)
        for (int64_t ox = 0; ox < OW; ox++) {
            float *out = y + (oy * OW + ox) * C;
            for (int64_t c = 0; c < CN; c++) out[c] = bias ? bias[c] : 0;
            for (int64_t ky = 0; ky < KH; ky++) {
                int64_t iy = oy * sh - pt + ky * dh;
                if (iy < 0 || iy >= H) continue;
                for (int64_t kx = 0; kx < KW; kx++) {
                    int64_t ix = ox * sw - pl + kx * dw;
                    if (ix < 0 || ix >= W) continue;
                    const float *in = x + (iy * W + ix) * C, *k = w + (ky * KW + kx) * C;
                    for (int64_t c = 0; c < CN; c++) out[c] += in[c] * k[c];
                }
            }
            if (act != MLK_ACT_NONE)
                for (int64_t c = 0; c < CN; c++) out[c] = act_scalar(out[c], act, p0, p1);
        }
}

static void add_act_portable(const float *a, const float *b, float *y, int64_t n, int act, float p0, float p1) {
    for (int64_t i = 0; i < n; i++) y[i] = act_scalar(a[i] + b[i], act, p0, p1);
}


static void gemm_portable(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N, int64_t K,
                          const float *bias, float *y, int64_t ldy, int act, float p0, float p1) {
    for (int64_t m = m0; m < m1; m++) {
        const float *ar = a + m * lda;
        float *yr = y + m * ldy;
        for (int64_t n0 = 0; n0 < N; n0 += 16) {
            const float *bp = packed + (n0 / 16) * K * 16;
            float acc[16] = {0};
            for (int64_t k = 0; k < K; k++) {
                float av = ar[k];
                for (int j = 0; j < 16; j++) acc[j] += av * bp[k * 16 + j];
            }
            for (int64_t j = 0; j < 16 && n0 + j < N; j++)
                yr[n0 + j] = act_scalar(acc[j] + (bias ? bias[n0 + j] : 0), act, p0, p1);
        }
    }
}

// ---- AVX2 + FMA versions ----
#if defined(__x86_64__)

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

MLK_AVX2 static void bias_act_avx2(float *y, int64_t rows, int64_t cols, const float *bias, int act, float p0, float p1) {
    int vec = act <= MLK_ACT_LEAKY;
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    for (int64_t r = 0; r < rows; r++) {
        float *row = y + r * cols;
        int64_t c = 0;
        for (; c + 8 <= cols; c += 8) {
            __m256 v = _mm256_loadu_ps(row + c);
            if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + c));
            if (vec) v = act8(v, act, lo, hi);
            _mm256_storeu_ps(row + c, v);
        }
        for (; c < cols; c++) {
            float v = row[c] + (bias ? bias[c] : 0);
            row[c] = vec ? act_scalar(v, act, p0, p1) : v;
        }
        if (!vec) for (c = 0; c < cols; c++) row[c] = act_scalar(row[c], act, p0, p1);
    }
}

// Four horizontally adjacent interior output pixels (every kx tap inside the row), C a multiple of 8. Eight (or
// four) independent accumulators hide the FMA latency that a single pixel's 9–25 chained taps would expose.
MLK_AVX2 static void depthwise4_avx2(const float *base, int64_t W, int64_t C, int64_t CN, const float *w, int64_t KW,
                                     int64_t ky0, int64_t ky1, int64_t sw, int64_t dh, int64_t dw, const float *bias,
                                     float *out, int act, float p0, float p1) {
    int vec = act <= MLK_ACT_LEAKY;
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    int64_t ps = sw * C;
    int64_t c = 0;
    for (; c + 16 <= CN; c += 16) {
        __m256 b0 = bias ? _mm256_loadu_ps(bias + c) : _mm256_setzero_ps();
        __m256 b1 = bias ? _mm256_loadu_ps(bias + c + 8) : _mm256_setzero_ps();
        __m256 a00 = b0, a01 = b1, a10 = b0, a11 = b1, a20 = b0, a21 = b1, a30 = b0, a31 = b1;
        for (int64_t ky = ky0; ky < ky1; ky++) {
            const float *in = base + ky * dh * W * C + c;
            const float *k = w + ky * KW * C + c;
            for (int64_t kx = 0; kx < KW; kx++) {
                const float *ip = in + kx * dw * C, *kp = k + kx * C;
                __m256 w0 = _mm256_loadu_ps(kp), w1 = _mm256_loadu_ps(kp + 8);
                a00 = _mm256_fmadd_ps(_mm256_loadu_ps(ip), w0, a00);
                a01 = _mm256_fmadd_ps(_mm256_loadu_ps(ip + 8), w1, a01);
                a10 = _mm256_fmadd_ps(_mm256_loadu_ps(ip + ps), w0, a10);
                a11 = _mm256_fmadd_ps(_mm256_loadu_ps(ip + ps + 8), w1, a11);
                a20 = _mm256_fmadd_ps(_mm256_loadu_ps(ip + 2 * ps), w0, a20);
                a21 = _mm256_fmadd_ps(_mm256_loadu_ps(ip + 2 * ps + 8), w1, a21);
                a30 = _mm256_fmadd_ps(_mm256_loadu_ps(ip + 3 * ps), w0, a30);
                a31 = _mm256_fmadd_ps(_mm256_loadu_ps(ip + 3 * ps + 8), w1, a31);
            }
        }
        if (vec) {
            a00 = act8(a00, act, lo, hi); a01 = act8(a01, act, lo, hi); a10 = act8(a10, act, lo, hi);
            a11 = act8(a11, act, lo, hi); a20 = act8(a20, act, lo, hi); a21 = act8(a21, act, lo, hi);
            a30 = act8(a30, act, lo, hi); a31 = act8(a31, act, lo, hi);
        }
        _mm256_storeu_ps(out + c, a00); _mm256_storeu_ps(out + c + 8, a01);
        _mm256_storeu_ps(out + C + c, a10); _mm256_storeu_ps(out + C + c + 8, a11);
        _mm256_storeu_ps(out + 2 * C + c, a20); _mm256_storeu_ps(out + 2 * C + c + 8, a21);
        _mm256_storeu_ps(out + 3 * C + c, a30); _mm256_storeu_ps(out + 3 * C + c + 8, a31);
    }
    for (; c < CN; c += 8) {
        __m256 b0 = bias ? _mm256_loadu_ps(bias + c) : _mm256_setzero_ps();
        __m256 a0 = b0, a1 = b0, a2 = b0, a3 = b0;
        for (int64_t ky = ky0; ky < ky1; ky++) {
            const float *in = base + ky * dh * W * C + c;
            const float *k = w + ky * KW * C + c;
            for (int64_t kx = 0; kx < KW; kx++) {
                const float *ip = in + kx * dw * C;
                __m256 w0 = _mm256_loadu_ps(k + kx * C);
                a0 = _mm256_fmadd_ps(_mm256_loadu_ps(ip), w0, a0);
                a1 = _mm256_fmadd_ps(_mm256_loadu_ps(ip + ps), w0, a1);
                a2 = _mm256_fmadd_ps(_mm256_loadu_ps(ip + 2 * ps), w0, a2);
                a3 = _mm256_fmadd_ps(_mm256_loadu_ps(ip + 3 * ps), w0, a3);
            }
        }
        if (vec) { a0 = act8(a0, act, lo, hi); a1 = act8(a1, act, lo, hi); a2 = act8(a2, act, lo, hi); a3 = act8(a3, act, lo, hi); }
        _mm256_storeu_ps(out + c, a0); _mm256_storeu_ps(out + C + c, a1);
        _mm256_storeu_ps(out + 2 * C + c, a2); _mm256_storeu_ps(out + 3 * C + c, a3);
    }
    if (!vec) for (int64_t j = 0; j < 4; j++) for (int64_t i = 0; i < CN; i++) out[j * C + i] = act_scalar(out[j * C + i], act, p0, p1);
}

__attribute__((target("avx512f,avx2,fma")))
static void depthwise4_avx512(const float *base, int64_t W, int64_t C, int64_t CN, const float *w, int64_t KW, int64_t ky0,
                              int64_t ky1, int64_t sw, int64_t dh, int64_t dw, const float *bias, float *out, int act,
                              float p0, float p1);

__attribute__((target("avx512f,avx2,fma")))
static void depthwise1_avx512(const float *base, int64_t W, int64_t C, int64_t CN, const float *w, int64_t KW, int64_t ky0,
                              int64_t ky1, int64_t kx0, int64_t kx1, int64_t dh, int64_t dw, const float *bias,
                              float *out, int act, float p0, float p1);

MLK_AVX2 static void depthwise_avx2(const float *x, int64_t H, int64_t W, int64_t C, int64_t CN, const float *w, int64_t KH, int64_t KW,
                                    const float *bias, float *y, int64_t oy0, int64_t oy1, int64_t OW, int64_t sh, int64_t sw,
                                    int64_t dh, int64_t dw, int64_t pt, int64_t pl, int act, float p0, float p1) {
    int vec = act <= MLK_ACT_LEAKY;
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    int64_t C8 = CN & ~(int64_t)7;
    int use512 = fast() == 2;
    for (int64_t oy = oy0; oy < oy1; oy++) {
        // Valid kernel rows for this output row: iy = oy·sh − pt + ky·dh in [0, H).
        int64_t ky0 = 0, ky1 = KH;
        while (ky0 < KH && oy * sh - pt + ky0 * dh < 0) ky0++;
        while (ky1 > ky0 && oy * sh - pt + (ky1 - 1) * dh >= H) ky1--;
        for (int64_t ox = 0; ox < OW; ox++) {
            if (use512 && sw <= 2 && dw == 1 && ox + 8 <= OW && ox * sw - pl >= 0 && (ox + 7) * sw - pl + KW - 1 < W &&
                mlk_depthwise8_avx512(x + ((oy * sh - pt) * W + (ox * sw - pl)) * C, W, C, CN, w, KW, sw, ky0, ky1, dh,
                                      bias, y + (oy * OW + ox) * C, act, p0, p1)) {
                ox += 7;
                continue;
            }
            if (C8 == CN && ox + 4 <= OW && ox * sw - pl >= 0 && (ox + 3) * sw - pl + (KW - 1) * dw < W) {
                (use512 && CN % 16 == 0 ? depthwise4_avx512 : depthwise4_avx2)(x + ((oy * sh - pt) * W + (ox * sw - pl)) * C, W, C, CN, w, KW, ky0, ky1, sw, dh, dw, bias,
                                y + (oy * OW + ox) * C, act, p0, p1);
                ox += 3;
                continue;
            }
            int64_t kx0 = 0, kx1 = KW;
            while (kx0 < KW && ox * sw - pl + kx0 * dw < 0) kx0++;
            while (kx1 > kx0 && ox * sw - pl + (kx1 - 1) * dw >= W) kx1--;
            float *out = y + (oy * OW + ox) * C;
            const float *base = x + ((oy * sh - pt) * W + (ox * sw - pl)) * C;
            if (use512 && CN % 16 == 0) {
                depthwise1_avx512(base, W, C, CN, w, KW, ky0, ky1, kx0, kx1, dh, dw, bias, out, act, p0, p1);
                continue;
            }
            int64_t c = 0;
            // Two 8-lane blocks at a time keep two FMA chains in flight.
            for (; c + 16 <= C8; c += 16) {
                __m256 a0 = bias ? _mm256_loadu_ps(bias + c) : _mm256_setzero_ps();
                __m256 a1 = bias ? _mm256_loadu_ps(bias + c + 8) : _mm256_setzero_ps();
                for (int64_t ky = ky0; ky < ky1; ky++) {
                    const float *in = base + (ky * dh * W) * C + c;
                    const float *k = w + ky * KW * C + c;
                    for (int64_t kx = kx0; kx < kx1; kx++) {
                        const float *ip = in + kx * dw * C, *kp = k + kx * C;
                        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(ip), _mm256_loadu_ps(kp), a0);
                        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(ip + 8), _mm256_loadu_ps(kp + 8), a1);
                    }
                }
                if (vec) { a0 = act8(a0, act, lo, hi); a1 = act8(a1, act, lo, hi); }
                _mm256_storeu_ps(out + c, a0);
                _mm256_storeu_ps(out + c + 8, a1);
            }
            for (; c < C8; c += 8) {
                __m256 a0 = bias ? _mm256_loadu_ps(bias + c) : _mm256_setzero_ps();
                for (int64_t ky = ky0; ky < ky1; ky++)
                    for (int64_t kx = kx0; kx < kx1; kx++)
                        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(base + (ky * dh * W + kx * dw) * C + c),
                                             _mm256_loadu_ps(w + (ky * KW + kx) * C + c), a0);
                if (vec) a0 = act8(a0, act, lo, hi);
                _mm256_storeu_ps(out + c, a0);
            }
            for (; c < CN; c++) {
                float a = bias ? bias[c] : 0;
                for (int64_t ky = ky0; ky < ky1; ky++)
                    for (int64_t kx = kx0; kx < kx1; kx++)
                        a += base[(ky * dh * W + kx * dw) * C + c] * w[(ky * KW + kx) * C + c];
                out[c] = vec ? act_scalar(a, act, p0, p1) : a;
            }
            if (!vec) for (c = 0; c < CN; c++) out[c] = act_scalar(out[c], act, p0, p1);
        }
    }
}

MLK_AVX2 static void add_act_avx2(const float *a, const float *b, float *y, int64_t n, int act, float p0, float p1) {
    int vec = act <= MLK_ACT_LEAKY;
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
        if (vec) v = act8(v, act, lo, hi);
        _mm256_storeu_ps(y + i, v);
    }
    for (; i < n; i++) y[i] = vec ? act_scalar(a[i] + b[i], act, p0, p1) : a[i] + b[i];
    if (!vec) for (i = 0; i < n; i++) y[i] = act_scalar(y[i], act, p0, p1);
}

// 6 rows × 16 columns of y per micro-tile: 12 accumulators, 2 B vectors, 1 broadcast.
MLK_AVX2 static void gemm_avx2(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N, int64_t K,
                               const float *bias, float *y, int64_t ldy, int act, float p0, float p1) {
    int vec = act <= MLK_ACT_LEAKY;
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    int64_t panels = (N + 15) / 16;
    // Rows in chunks whose A block stays in L2 while every B panel passes over it.
    int64_t mc = K > 0 ? (384 * 1024 / 4) / K : 256;
    mc = mc < 6 ? 6 : (mc > 512 ? 512 : mc);
    mc -= mc % 6;
    for (int64_t mb = m0; mb < m1; mb += mc) {
        int64_t me = mb + mc < m1 ? mb + mc : m1;
        for (int64_t p = 0; p < panels; p++) {
            const float *bp = packed + p * K * 16;
            int64_t n0 = p * 16, nv = N - n0 < 16 ? N - n0 : 16;
            __m256 b0 = bias && nv == 16 ? _mm256_loadu_ps(bias + n0) : _mm256_setzero_ps();
            __m256 b1 = bias && nv == 16 ? _mm256_loadu_ps(bias + n0 + 8) : _mm256_setzero_ps();
            for (int64_t m = mb; m < me; m += 6) {
                int64_t rows = me - m < 6 ? me - m : 6;
                // Rows past the end repeat the last row: computed, never stored.
                const float *r0 = a + m * lda;
                const float *r1 = a + (m + (rows > 1 ? 1 : 0)) * lda;
                const float *r2 = a + (m + (rows > 2 ? 2 : 0)) * lda;
                const float *r3 = a + (m + (rows > 3 ? 3 : 0)) * lda;
                const float *r4 = a + (m + (rows > 4 ? 4 : 0)) * lda;
                const float *r5 = a + (m + (rows > 5 ? 5 : 0)) * lda;
                __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
                __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps(), c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
                __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps(), c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
                const float *b = bp;
                for (int64_t k = 0; k < K; k++, b += 16) {
                    __m256 w0 = _mm256_load_ps(b), w1 = _mm256_load_ps(b + 8);
                    __m256 v;
                    v = _mm256_broadcast_ss(r0 + k); c00 = _mm256_fmadd_ps(v, w0, c00); c01 = _mm256_fmadd_ps(v, w1, c01);
                    v = _mm256_broadcast_ss(r1 + k); c10 = _mm256_fmadd_ps(v, w0, c10); c11 = _mm256_fmadd_ps(v, w1, c11);
                    v = _mm256_broadcast_ss(r2 + k); c20 = _mm256_fmadd_ps(v, w0, c20); c21 = _mm256_fmadd_ps(v, w1, c21);
                    v = _mm256_broadcast_ss(r3 + k); c30 = _mm256_fmadd_ps(v, w0, c30); c31 = _mm256_fmadd_ps(v, w1, c31);
                    v = _mm256_broadcast_ss(r4 + k); c40 = _mm256_fmadd_ps(v, w0, c40); c41 = _mm256_fmadd_ps(v, w1, c41);
                    v = _mm256_broadcast_ss(r5 + k); c50 = _mm256_fmadd_ps(v, w0, c50); c51 = _mm256_fmadd_ps(v, w1, c51);
                }
                __m256 acc[12] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
                for (int64_t r = 0; r < rows; r++) {
                    float *yr = y + (m + r) * ldy + n0;
                    __m256 v0 = _mm256_add_ps(acc[2 * r], b0), v1 = _mm256_add_ps(acc[2 * r + 1], b1);
                    if (vec && nv == 16) { v0 = act8(v0, act, lo, hi); v1 = act8(v1, act, lo, hi); }
                    if (nv == 16) {
                        _mm256_storeu_ps(yr, v0);
                        _mm256_storeu_ps(yr + 8, v1);
                    } else {
                        float t[16];
                        _mm256_storeu_ps(t, v0);
                        _mm256_storeu_ps(t + 8, v1);
                        for (int64_t j = 0; j < nv; j++) {
                            float v = t[j] + (bias ? bias[n0 + j] : 0);
                            yr[j] = vec ? act_scalar(v, act, p0, p1) : v;
                        }
                    }
                    if (!vec) for (int64_t j = 0; j < nv; j++) yr[j] = act_scalar(yr[j], act, p0, p1);
                }
            }
        }
    }
}

// ---- AVX-512 versions (used when the CPU has AVX-512F; same results up to float rounding order) ----
#define MLK_AVX512 __attribute__((target("avx512f,avx2,fma")))

MLK_AVX512 static inline __m512 act16(__m512 v, int act, __m512 lo, __m512 hi) {
    switch (act) {
    case MLK_ACT_RELU: return _mm512_max_ps(v, _mm512_setzero_ps());
    case MLK_ACT_CLIP: return _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    case MLK_ACT_LEAKY: return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, lo);
    default: return v;
    }
}

// Stores rows of one 16-column panel: bias, vectorisable activation, masked tail, scalar activation for the rest.
MLK_AVX512 static inline void store16(float *yr, __m512 v, __m512 b, int64_t nv, int act, float p0, float p1,
                                      __m512 lo, __m512 hi) {
    __mmask16 m = nv >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nv) - 1);
    v = _mm512_add_ps(v, b);
    if (act <= MLK_ACT_LEAKY) { _mm512_mask_storeu_ps(yr, m, act16(v, act, lo, hi)); return; }
    _mm512_mask_storeu_ps(yr, m, v);
    for (int64_t j = 0; j < nv; j++) yr[j] = act_scalar(yr[j], act, p0, p1);
}

// 8 rows × 48 columns (three 16-column panels) per micro-tile, 24 accumulators; 8 × 32 or 8 × 16 for the last
// panels. A is read in place through 8 row pointers (packing it costs as much as the FMAs when N is small); rows
// past the end repeat row 0, are computed and never stored.
#define MLK_R(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = _mm512_setzero_ps(), c##i##2 = _mm512_setzero_ps();
#define MLK_F3(i) { __m512 v = _mm512_set1_ps(r##i[k]); c##i##0 = _mm512_fmadd_ps(v, w0, c##i##0); \
                    c##i##1 = _mm512_fmadd_ps(v, w1, c##i##1); c##i##2 = _mm512_fmadd_ps(v, w2, c##i##2); }
#define MLK_F2(i) { __m512 v = _mm512_set1_ps(r##i[k]); c##i##0 = _mm512_fmadd_ps(v, w0, c##i##0); c##i##1 = _mm512_fmadd_ps(v, w1, c##i##1); }
#define MLK_F1(i) { c##i##0 = _mm512_fmadd_ps(_mm512_set1_ps(r##i[k]), w0, c##i##0); }
#define MLK_S(i) if (i < rows) { float *yr = y + (m + i) * ldy + n0; store16(yr, c##i##0, b0, nv[0], act, p0, p1, lo, hi); \
                                 if (np > 1) store16(yr + 16, c##i##1, b1, nv[1], act, p0, p1, lo, hi); \
                                 if (np > 2) store16(yr + 32, c##i##2, b2, nv[2], act, p0, p1, lo, hi); }
#define MLK_P(i) const float *r##i = a + (m + (i < rows ? i : 0)) * lda;
#define MLK_ALL(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

MLK_AVX512 static void gemm_avx512(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N,
                                   int64_t K, const float *bias, float *y, int64_t ldy, int act, float p0, float p1) {
    __m512 lo = _mm512_set1_ps(p0), hi = _mm512_set1_ps(p1);
    int64_t panels = (N + 15) / 16;
    // Rows in chunks whose A block stays in L2 while every B panel passes over it.
    int64_t mc = K > 0 ? (256 * 1024 / 4) / K : 256;
    mc = mc < 8 ? 8 : (mc > 512 ? 512 : mc);
    mc -= mc % 8;
    for (int64_t mb = m0; mb < m1; mb += mc) {
        int64_t me = mb + mc < m1 ? mb + mc : m1;
        for (int64_t p = 0; p < panels; p += 3) {
            int np = panels - p < 3 ? (int)(panels - p) : 3;
            const float *bp0 = packed + p * K * 16, *bp1 = bp0 + K * 16, *bp2 = bp1 + K * 16;
            int64_t n0 = p * 16, nv[3];
            __m512 bb[3];
            for (int j = 0; j < 3; j++) {
                int64_t left = N - n0 - 16 * j;
                nv[j] = j < np ? (left < 16 ? left : 16) : 0;
                bb[j] = bias && j < np ? _mm512_maskz_loadu_ps((__mmask16)((1u << nv[j]) - 1), bias + n0 + 16 * j)
                                       : _mm512_setzero_ps();
            }
            __m512 b0 = bb[0], b1 = bb[1], b2 = bb[2];
            for (int64_t m = mb; m < me; m += 8) {
                int64_t rows = me - m < 8 ? me - m : 8;
                if (rows == 1) {
                    // A lone row (a dense layer on one image): one accumulator per panel, no wasted rows.
                    const float *r0 = a + m * lda;
                    __m512 c00 = _mm512_setzero_ps(), c01 = _mm512_setzero_ps(), c02 = _mm512_setzero_ps();
                    for (int64_t k = 0; k < K; k++) {
                        __m512 v = _mm512_set1_ps(r0[k]);
                        c00 = _mm512_fmadd_ps(v, _mm512_load_ps(bp0 + k * 16), c00);
                        if (np > 1) c01 = _mm512_fmadd_ps(v, _mm512_load_ps(bp1 + k * 16), c01);
                        if (np > 2) c02 = _mm512_fmadd_ps(v, _mm512_load_ps(bp2 + k * 16), c02);
                    }
                    float *yr = y + m * ldy + n0;
                    store16(yr, c00, b0, nv[0], act, p0, p1, lo, hi);
                    if (np > 1) store16(yr + 16, c01, b1, nv[1], act, p0, p1, lo, hi);
                    if (np > 2) store16(yr + 32, c02, b2, nv[2], act, p0, p1, lo, hi);
                    continue;
                }
                MLK_ALL(MLK_P)
                MLK_ALL(MLK_R)
                if (np == 3) {
                    for (int64_t k = 0; k < K; k++) {
                        __m512 w0 = _mm512_load_ps(bp0 + k * 16), w1 = _mm512_load_ps(bp1 + k * 16), w2 = _mm512_load_ps(bp2 + k * 16);
                        MLK_ALL(MLK_F3)
                    }
                } else if (np == 2) {
                    for (int64_t k = 0; k < K; k++) {
                        __m512 w0 = _mm512_load_ps(bp0 + k * 16), w1 = _mm512_load_ps(bp1 + k * 16);
                        MLK_ALL(MLK_F2)
                    }
                } else {
                    for (int64_t k = 0; k < K; k++) {
                        __m512 w0 = _mm512_load_ps(bp0 + k * 16);
                        MLK_ALL(MLK_F1)
                    }
                }
                MLK_ALL(MLK_S)
            }
        }
    }
}

// One output pixel with a clipped tap range (image borders), C a multiple of 16: four channel blocks at a time give
// four independent FMA chains.
MLK_AVX512 static void depthwise1_avx512(const float *base, int64_t W, int64_t C, int64_t CN, const float *w, int64_t KW,
                                         int64_t ky0, int64_t ky1, int64_t kx0, int64_t kx1, int64_t dh, int64_t dw,
                                         const float *bias, float *out, int act, float p0, float p1) {
    int vec = act <= MLK_ACT_LEAKY;
    __m512 lo = _mm512_set1_ps(p0), hi = _mm512_set1_ps(p1);
    int64_t c = 0;
    for (; c + 64 <= CN; c += 64) {
        __m512 a0 = bias ? _mm512_loadu_ps(bias + c) : _mm512_setzero_ps();
        __m512 a1 = bias ? _mm512_loadu_ps(bias + c + 16) : _mm512_setzero_ps();
        __m512 a2 = bias ? _mm512_loadu_ps(bias + c + 32) : _mm512_setzero_ps();
        __m512 a3 = bias ? _mm512_loadu_ps(bias + c + 48) : _mm512_setzero_ps();
        for (int64_t ky = ky0; ky < ky1; ky++)
            for (int64_t kx = kx0; kx < kx1; kx++) {
                const float *ip = base + (ky * dh * W + kx * dw) * C + c, *kp = w + (ky * KW + kx) * C + c;
                a0 = _mm512_fmadd_ps(_mm512_loadu_ps(ip), _mm512_loadu_ps(kp), a0);
                a1 = _mm512_fmadd_ps(_mm512_loadu_ps(ip + 16), _mm512_loadu_ps(kp + 16), a1);
                a2 = _mm512_fmadd_ps(_mm512_loadu_ps(ip + 32), _mm512_loadu_ps(kp + 32), a2);
                a3 = _mm512_fmadd_ps(_mm512_loadu_ps(ip + 48), _mm512_loadu_ps(kp + 48), a3);
            }
        if (vec) { a0 = act16(a0, act, lo, hi); a1 = act16(a1, act, lo, hi); a2 = act16(a2, act, lo, hi); a3 = act16(a3, act, lo, hi); }
        _mm512_storeu_ps(out + c, a0); _mm512_storeu_ps(out + c + 16, a1);
        _mm512_storeu_ps(out + c + 32, a2); _mm512_storeu_ps(out + c + 48, a3);
    }
    for (; c < CN; c += 16) {
        __m512 a0 = bias ? _mm512_loadu_ps(bias + c) : _mm512_setzero_ps();
        for (int64_t ky = ky0; ky < ky1; ky++)
            for (int64_t kx = kx0; kx < kx1; kx++)
                a0 = _mm512_fmadd_ps(_mm512_loadu_ps(base + (ky * dh * W + kx * dw) * C + c),
                                     _mm512_loadu_ps(w + (ky * KW + kx) * C + c), a0);
        if (vec) a0 = act16(a0, act, lo, hi);
        _mm512_storeu_ps(out + c, a0);
    }
    if (!vec) for (int64_t i = 0; i < CN; i++) out[i] = act_scalar(out[i], act, p0, p1);
}

// Four interior output pixels, C a multiple of 16 (see depthwise4_avx2).
MLK_AVX512 static void depthwise4_avx512(const float *base, int64_t W, int64_t C, int64_t CN, const float *w, int64_t KW,
                                         int64_t ky0, int64_t ky1, int64_t sw, int64_t dh, int64_t dw, const float *bias,
                                         float *out, int act, float p0, float p1) {
    int vec = act <= MLK_ACT_LEAKY;
    __m512 lo = _mm512_set1_ps(p0), hi = _mm512_set1_ps(p1);
    int64_t ps = sw * C;
    int64_t c = 0;
    for (; c + 32 <= CN; c += 32) {
        __m512 b0 = bias ? _mm512_loadu_ps(bias + c) : _mm512_setzero_ps();
        __m512 b1 = bias ? _mm512_loadu_ps(bias + c + 16) : _mm512_setzero_ps();
        __m512 a00 = b0, a01 = b1, a10 = b0, a11 = b1, a20 = b0, a21 = b1, a30 = b0, a31 = b1;
        for (int64_t ky = ky0; ky < ky1; ky++) {
            const float *in = base + ky * dh * W * C + c;
            const float *k = w + ky * KW * C + c;
            for (int64_t kx = 0; kx < KW; kx++) {
                const float *ip = in + kx * dw * C, *kp = k + kx * C;
                __m512 w0 = _mm512_loadu_ps(kp), w1 = _mm512_loadu_ps(kp + 16);
                a00 = _mm512_fmadd_ps(_mm512_loadu_ps(ip), w0, a00);
                a01 = _mm512_fmadd_ps(_mm512_loadu_ps(ip + 16), w1, a01);
                a10 = _mm512_fmadd_ps(_mm512_loadu_ps(ip + ps), w0, a10);
                a11 = _mm512_fmadd_ps(_mm512_loadu_ps(ip + ps + 16), w1, a11);
                a20 = _mm512_fmadd_ps(_mm512_loadu_ps(ip + 2 * ps), w0, a20);
                a21 = _mm512_fmadd_ps(_mm512_loadu_ps(ip + 2 * ps + 16), w1, a21);
                a30 = _mm512_fmadd_ps(_mm512_loadu_ps(ip + 3 * ps), w0, a30);
                a31 = _mm512_fmadd_ps(_mm512_loadu_ps(ip + 3 * ps + 16), w1, a31);
            }
        }
        if (vec) {
            a00 = act16(a00, act, lo, hi); a01 = act16(a01, act, lo, hi); a10 = act16(a10, act, lo, hi);
            a11 = act16(a11, act, lo, hi); a20 = act16(a20, act, lo, hi); a21 = act16(a21, act, lo, hi);
            a30 = act16(a30, act, lo, hi); a31 = act16(a31, act, lo, hi);
        }
        _mm512_storeu_ps(out + c, a00); _mm512_storeu_ps(out + c + 16, a01);
        _mm512_storeu_ps(out + C + c, a10); _mm512_storeu_ps(out + C + c + 16, a11);
        _mm512_storeu_ps(out + 2 * C + c, a20); _mm512_storeu_ps(out + 2 * C + c + 16, a21);
        _mm512_storeu_ps(out + 3 * C + c, a30); _mm512_storeu_ps(out + 3 * C + c + 16, a31);
    }
    for (; c < CN; c += 16) {
        __m512 b0 = bias ? _mm512_loadu_ps(bias + c) : _mm512_setzero_ps();
        __m512 a0 = b0, a1 = b0, a2 = b0, a3 = b0;
        for (int64_t ky = ky0; ky < ky1; ky++) {
            const float *in = base + ky * dh * W * C + c;
            const float *k = w + ky * KW * C + c;
            for (int64_t kx = 0; kx < KW; kx++) {
                const float *ip = in + kx * dw * C;
                __m512 w0 = _mm512_loadu_ps(k + kx * C);
                a0 = _mm512_fmadd_ps(_mm512_loadu_ps(ip), w0, a0);
                a1 = _mm512_fmadd_ps(_mm512_loadu_ps(ip + ps), w0, a1);
                a2 = _mm512_fmadd_ps(_mm512_loadu_ps(ip + 2 * ps), w0, a2);
                a3 = _mm512_fmadd_ps(_mm512_loadu_ps(ip + 3 * ps), w0, a3);
            }
        }
        if (vec) { a0 = act16(a0, act, lo, hi); a1 = act16(a1, act, lo, hi); a2 = act16(a2, act, lo, hi); a3 = act16(a3, act, lo, hi); }
        _mm512_storeu_ps(out + c, a0); _mm512_storeu_ps(out + C + c, a1);
        _mm512_storeu_ps(out + 2 * C + c, a2); _mm512_storeu_ps(out + 3 * C + c, a3);
    }
    if (!vec) for (int64_t j = 0; j < 4; j++) for (int64_t i = 0; i < CN; i++) out[j * C + i] = act_scalar(out[j * C + i], act, p0, p1);
}
#endif

// ---- dispatch ----

// 0: portable C, 1: AVX2+FMA, 2: AVX-512F as well.
static int detect(void) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return 0;
    return __builtin_cpu_supports("avx512f") ? 2 : 1;
#else
    return 0;
#endif
}

// Computed once; racing first calls compute the same value, so a plain int is enough.
static int fast_state = -1;
static inline int fast(void) {
    int s = __atomic_load_n(&fast_state, __ATOMIC_RELAXED);
    if (s < 0) { s = detect(); __atomic_store_n(&fast_state, s, __ATOMIC_RELAXED); }
    return s;
}

int mlk_uses_avx2_fma(void) { return fast() > 0; }

int mlk_simd_level(void) { return fast(); }

int mlk_set_simd_level(int level) {
    int detected = detect(), old = fast();
    int l = level < 0 || level > detected ? detected : level;
    __atomic_store_n(&fast_state, l, __ATOMIC_RELAXED);
    return old;
}

void mlk_bias_act(float *y, int64_t rows, int64_t cols, const float *bias, int act, float p0, float p1) {
    if (!bias && act == MLK_ACT_NONE) return;
#if defined(__x86_64__)
    if (fast()) { bias_act_avx2(y, rows, cols, bias, act, p0, p1); return; }
#endif
    bias_act_portable(y, rows, cols, bias, act, p0, p1);
}

void mlk_depthwise(const float *x, int64_t H, int64_t W, int64_t C, const float *w, int64_t KH, int64_t KW,
                   const float *bias, float *y, int64_t oy0, int64_t oy1, int64_t OW, int64_t sh, int64_t sw,
                   int64_t dh, int64_t dw, int64_t pt, int64_t pl, int act, float p0, float p1) {
    mlk_depthwise_channels(x, H, W, C, w, KH, KW, bias, y, oy0, oy1, OW, sh, sw, dh, dw, pt, pl, act, p0, p1, 0, C);
}

void mlk_depthwise_channels(const float *x, int64_t H, int64_t W, int64_t C, const float *w, int64_t KH, int64_t KW,
                            const float *bias, float *y, int64_t oy0, int64_t oy1, int64_t OW, int64_t sh, int64_t sw,
                            int64_t dh, int64_t dw, int64_t pt, int64_t pl, int act, float p0, float p1,
                            int64_t ch0, int64_t ch1) {
#if defined(__x86_64__)
    if (fast()) {
        // Channel slices of 64 (from channel 0, whatever ch0): the slice's weights (KH·KW·64 floats) stay in L1
        // while every pixel uses them.
        for (int64_t c0 = ch0; c0 < ch1; c0 += 64) {
            int64_t cn = ch1 - c0 < 64 ? ch1 - c0 : 64;
            depthwise_avx2(x + c0, H, W, C, cn, w + c0, KH, KW, bias ? bias + c0 : NULL, y + c0, oy0, oy1, OW, sh, sw,
                           dh, dw, pt, pl, act, p0, p1);
        }
        return;
    }
#endif
    depthwise_portable(x + ch0, H, W, C, ch1 - ch0, w + ch0, KH, KW, bias ? bias + ch0 : NULL, y + ch0, oy0, oy1, OW,
                       sh, sw, dh, dw, pt, pl, act, p0, p1);
}

void mlk_add_act(const float *a, const float *b, float *y, int64_t n, int act, float p0, float p1) {
#if defined(__x86_64__)
    if (fast()) { add_act_avx2(a, b, y, n, act, p0, p1); return; }
#endif
    add_act_portable(a, b, y, n, act, p0, p1);
}

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

int64_t mlk_packed_count(int64_t K, int64_t N) { return ((N + 15) / 16) * 16 * K; }

void mlk_pack(const float *w, int64_t K, int64_t N, float *packed) {
    // Row by row, so w (often a memory-mapped file) is read in order; each row's 16-column pieces are copied whole.
    for (int64_t k = 0; k < K; k++)
        for (int64_t p = 0; p < (N + 15) / 16; p++) {
            int64_t cols = N - p * 16 < 16 ? N - p * 16 : 16;
            float *dst = packed + (p * K + k) * 16;
            memcpy(dst, w + k * N + p * 16, (size_t)cols * sizeof(float));
            for (int64_t j = cols; j < 16; j++) dst[j] = 0;
        }
}

void mlk_gemm_packed(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N, int64_t K,
                     const float *bias, float *y, int64_t ldy, int act, float p0, float p1) {
#if defined(__x86_64__)
    if (fast() == 2) {
        if (mlk_gemm_narrow_avx512(a, lda, packed, m0, m1, N, K, bias, y, ldy, act, p0, p1)) return;
        gemm_avx512(a, lda, packed, m0, m1, N, K, bias, y, ldy, act, p0, p1);
        return;
    }
    if (fast()) { gemm_avx2(a, lda, packed, m0, m1, N, K, bias, y, ldy, act, p0, p1); return; }
#endif
    gemm_portable(a, lda, packed, m0, m1, N, K, bias, y, ldy, act, p0, p1);
}
