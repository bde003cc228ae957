// Float GEMM on weights packed into 16-column panels: y = act(a · B + bias [+ res]). Portable C, AVX2 + FMA (6 × 16
// tiles) and AVX-512 (8 × 48 tiles, and narrow tiles for 16–96 columns) side by side. Each output is Σ_k a·b in k
// order from 0, then + bias, then + the residual element when there is one, whatever the tile, so a row's result
// does not depend on how rows are split (and equals a GEMM followed by an elementwise add, bit for bit). `res`
// (NULL: none) has y's layout: element (m, n) at res[m·ldy + n].
#include "CMLToolKernels.h"
#include "isa.h"
#include "vec.h"
#include <string.h>

// ---- packing ----

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

// ---- portable ----

static void gemm_portable(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N, int64_t K,
                          const float *bias, const float *res, float *y, int64_t ldy, int act, float p0, float p1) {
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
            for (int64_t j = 0; j < 16 && n0 + j < N; j++) {
                float v = acc[j] + (bias ? bias[n0 + j] : 0);
                if (res) v += res[m * ldy + n0 + j];
                yr[n0 + j] = act_scalar(v, act, p0, p1);
            }
        }
    }
}

#if MLK_X86
// Which of the tiles' specialised epilogues stores a tile of whole panels (`whole`): 1 ReLU6's clip and no
// residual, 2 no activation and no residual, 3 no activation and a residual; 0 the general one.
MLK_INLINE int fast_epilogue(int whole, int act, const float *res) {
    if (!whole) return 0;
    if (act == MLK_ACT_CLIP && !res) return 1;
    return act == MLK_ACT_NONE ? (res ? 3 : 2) : 0;
}

// ---- AVX2 + FMA ----

// One row (`ar`) × V vectors of 8 columns, V accumulators. Vector g of y (columns 8g … 8g+7) is half g % 2 of packed
// panel g / 2, so a run may start at any vector; a last vector of fewer than 8 columns is stored masked; the
// activation is applied in registers when it vectorises. Each output is Σ_k a·b in k order from 0, then + bias, as in
// the 6 × 16 tiles, so a row gives the same bits whichever path computes it.
MLK_INLINE MLK_AVX2 void row_avx2(int V, const float *ar, const float *packed, int64_t K, int64_t g0, int64_t N,
                                  const float *bias, const float *rr, float *yr, int act, float p0, float p1) {
    const float *w[8];
    for (int j = 0; j < V; j++) w[j] = packed + ((g0 + j) >> 1) * K * 16 + ((g0 + j) & 1) * 8;
    __m256 c[8];
    for (int j = 0; j < V; j++) c[j] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        __m256 v = _mm256_broadcast_ss(ar + k);
        for (int j = 0; j < V; j++) c[j] = _mm256_fmadd_ps(v, _mm256_load_ps(w[j] + k * 16), c[j]);
    }
    int64_t n0 = g0 * 8, last = N - (g0 + V - 1) * 8;   // columns of the last vector: 1 … 8
    last = last < 8 ? last : 8;
    __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)last), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    int vec = MLK_ACT_VECTOR(act);
    yr += n0;
    if (rr) rr += n0;
    for (int j = 0; j < V; j++) {
        int whole = j < V - 1 || last == 8;
        __m256 b = !bias ? _mm256_setzero_ps() : (whole ? _mm256_loadu_ps(bias + n0 + 8 * j) : _mm256_maskload_ps(bias + n0 + 8 * j, mask));
        __m256 v = _mm256_add_ps(c[j], b);
        if (rr) v = _mm256_add_ps(v, whole ? _mm256_loadu_ps(rr + 8 * j) : _mm256_maskload_ps(rr + 8 * j, mask));
        if (vec) v = act8(v, act, lo, hi);
        // vmaskmovps is slow on AMD (microcoded): only for a vector that really is partial.
        if (whole) _mm256_storeu_ps(yr + 8 * j, v); else _mm256_maskstore_ps(yr + 8 * j, mask, v);
    }
    if (!vec) for (int64_t t = 0; t < (V - 1) * 8 + last; t++) yr[t] = act_scalar(yr[t], act, p0, p1);
}

#define MLK_ROW(V) MLK_AVX2 static void row_avx2_##V(const float *ar, const float *packed, int64_t K, int64_t g0, int64_t N, \
    const float *bias, const float *rr, float *yr, int act, float p0, float p1) { \
    row_avx2(V, ar, packed, K, g0, N, bias, rr, yr, act, p0, p1); }
MLK_ROW(1) MLK_ROW(2) MLK_ROW(3) MLK_ROW(4) MLK_ROW(5) MLK_ROW(6) MLK_ROW(7) MLK_ROW(8)
#undef MLK_ROW
typedef void (*row_avx2_fn)(const float *, const float *, int64_t, int64_t, int64_t, const float *, const float *, float *,
                            int, float, float);
static const row_avx2_fn rows_avx2[9] = {0, row_avx2_1, row_avx2_2, row_avx2_3, row_avx2_4, row_avx2_5, row_avx2_6,
                                         row_avx2_7, row_avx2_8};

// One row × all N columns, 64 at a time: a dense layer on one image, or the row a 6-row tile would leave alone.
MLK_AVX2 static void lone_row(const float *a, int64_t lda, const float *packed, int64_t m, int64_t N, int64_t K,
                              const float *bias, const float *res, float *y, int64_t ldy, int act, float p0, float p1) {
    int64_t vectors = (N + 7) / 8;
    for (int64_t g = 0; g < vectors; g += 8) {
        int64_t V = vectors - g < 8 ? vectors - g : 8;
        rows_avx2[V](a + m * lda, packed, K, g, N, bias, res ? res + m * ldy : NULL, y + m * ldy, act, p0, p1);
    }
}

// Rows [m0, m1) × a last panel of nv ≤ 8 columns (panel at bp, columns n0 …): 12 rows × 8 columns per micro-tile,
// the epilogue as the 6 × 16 tiles' partial panels (+ bias, + residual, activation per element): the same bits.
MLK_AVX2 static void gemm_avx2_half(const float *a, int64_t lda, const float *bp, int64_t m0, int64_t m1, int64_t n0,
                                    int64_t nv, int64_t K, const float *bias, const float *res, float *y, int64_t ldy,
                                    int act, float p0, float p1) {
    for (int64_t m = m0; m < m1; m += 12) {
        int64_t rows = m1 - m < 12 ? m1 - m : 12;
        const float *r[12];
        for (int i = 0; i < 12; i++) r[i] = a + (m + (i < rows ? i : 0)) * lda;
        __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
        __m256 c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;
        const float *b = bp;
        for (int64_t k = 0; k < K; k++, b += 16) {
            __m256 w = _mm256_load_ps(b);
            c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(r[0] + k), w, c0);
            c1 = _mm256_fmadd_ps(_mm256_broadcast_ss(r[1] + k), w, c1);
            c2 = _mm256_fmadd_ps(_mm256_broadcast_ss(r[2] + k), w, c2);
            c3 = _mm256_fmadd_ps(_mm256_broadcast_ss(r[3] + k), w, c3);
            c4 = _mm256_fmadd_ps(_mm256_broadcast_ss(r[4] + k), w, c4);
            c5 = _mm256_fmadd_ps(_mm256_broadcast_ss(r[5] + k), w, c5);
            c6 = _mm256_fmadd_ps(_mm256_broadcast_ss(r[6] + k), w, c6);
            c7 = _mm256_fmadd_ps(_mm256_broadcast_ss(r[7] + k), w, c7);
            c8 = _mm256_fmadd_ps(_mm256_broadcast_ss(r[8] + k), w, c8);
            c9 = _mm256_fmadd_ps(_mm256_broadcast_ss(r[9] + k), w, c9);
            c10 = _mm256_fmadd_ps(_mm256_broadcast_ss(r[10] + k), w, c10);
            c11 = _mm256_fmadd_ps(_mm256_broadcast_ss(r[11] + k), w, c11);
        }
        __m256 acc[12] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
        for (int64_t i = 0; i < rows; i++) {
            float t[8], *yr = y + (m + i) * ldy + n0;
            const float *rr = res ? res + (m + i) * ldy + n0 : NULL;
            _mm256_storeu_ps(t, acc[i]);
            for (int64_t j = 0; j < nv; j++) {
                float v = t[j] + (bias ? bias[n0 + j] : 0);
                if (rr) v += rr[j];
                yr[j] = act_scalar(v, act, p0, p1);
            }
        }
    }
}

// 6 rows × 16 columns of y per micro-tile: 12 accumulators, 2 B vectors, 1 broadcast.
__attribute__((noinline)) MLK_AVX2 static void gemm_avx2_tiles(const float *a, int64_t lda, const float *packed, int64_t m0,
                               int64_t m1, int64_t N, int64_t K, const float *bias, const float *res, float *y, int64_t ldy,
                               int act, float p0, float p1) {
    int vec = MLK_ACT_VECTOR(act);
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
            int whole = fast_epilogue(nv == 16, act, res);
            if (nv <= 8) {
                // A last panel of at most 8 columns: its first half only (no multiply-adds on zero columns).
                gemm_avx2_half(a, lda, bp, mb, me, n0, nv, K, bias, res, y, ldy, act, p0, p1);
                continue;
            }
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
                if (rows == 6 && whole) {
                    // The usual epilogue with the activation a constant and nothing tested per store (a rolled
                    // loop over the rows keeps the accumulators on the stack): the operations of the loop below.
#define MLK_S6(r, ACT, RES) { float *yr = y + (m + r) * ldy + n0; \
    __m256 v0 = _mm256_add_ps(c##r##0, b0), v1 = _mm256_add_ps(c##r##1, b1); \
    if (RES) { const float *rr = res + (m + r) * ldy + n0; \
               v0 = _mm256_add_ps(v0, _mm256_loadu_ps(rr)); v1 = _mm256_add_ps(v1, _mm256_loadu_ps(rr + 8)); } \
    _mm256_storeu_ps(yr, act8(v0, ACT, lo, hi)); _mm256_storeu_ps(yr + 8, act8(v1, ACT, lo, hi)); }
#define MLK_S6_ALL(ACT, RES) { MLK_S6(0, ACT, RES) MLK_S6(1, ACT, RES) MLK_S6(2, ACT, RES) MLK_S6(3, ACT, RES) \
    MLK_S6(4, ACT, RES) MLK_S6(5, ACT, RES) }
                    if (whole == 1) MLK_S6_ALL(MLK_ACT_CLIP, 0)
                    else if (whole == 2) MLK_S6_ALL(MLK_ACT_NONE, 0)
                    else MLK_S6_ALL(MLK_ACT_NONE, 1)
#undef MLK_S6_ALL
#undef MLK_S6
                    continue;
                }
                __m256 acc[12] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
                for (int64_t r = 0; r < rows; r++) {
                    float *yr = y + (m + r) * ldy + n0;
                    const float *rr = res ? res + (m + r) * ldy + n0 : NULL;
                    __m256 v0 = _mm256_add_ps(acc[2 * r], b0), v1 = _mm256_add_ps(acc[2 * r + 1], b1);
                    if (rr && nv == 16) { v0 = _mm256_add_ps(v0, _mm256_loadu_ps(rr)); v1 = _mm256_add_ps(v1, _mm256_loadu_ps(rr + 8)); }
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
                            if (rr) v += rr[j];
                            yr[j] = vec ? act_scalar(v, act, p0, p1) : v;
                        }
                    }
                    if (!vec) for (int64_t j = 0; j < nv; j++) yr[j] = act_scalar(yr[j], act, p0, p1);
                }
            }
        }
    }
}

// A last row left alone by the 6-row tiles (49 rows: a 7 × 7 map; 1 row: a dense layer on one image) goes to
// lone_row instead of a 6-row tile computing it six times.
MLK_AVX2 static void gemm_avx2(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N, int64_t K,
                               const float *bias, const float *res, float *y, int64_t ldy, int act, float p0, float p1) {
    if (m1 > m0 && (m1 - m0) % 6 == 1) {
        lone_row(a, lda, packed, m1 - 1, N, K, bias, res, y, ldy, act, p0, p1);
        m1--;
    }
    if (m1 > m0) gemm_avx2_tiles(a, lda, packed, m0, m1, N, K, bias, res, y, ldy, act, p0, p1);
}

// ---- AVX-512 ----

// 8 rows × 48 columns (three 16-column panels) per micro-tile, 24 accumulators; 8 × 32 or 8 × 16 for the last
// panels. A is read in place through 8 row pointers (packing it costs as much as the FMAs when N is small); rows
// past the end repeat row 0, are computed and never stored.
#define MLK_R(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = _mm512_setzero_ps(), c##i##2 = _mm512_setzero_ps();
#define MLK_F3(i) { __m512 v = _mm512_set1_ps(r##i[k]); c##i##0 = _mm512_fmadd_ps(v, w0, c##i##0); \
                    c##i##1 = _mm512_fmadd_ps(v, w1, c##i##1); c##i##2 = _mm512_fmadd_ps(v, w2, c##i##2); }
#define MLK_F2(i) { __m512 v = _mm512_set1_ps(r##i[k]); c##i##0 = _mm512_fmadd_ps(v, w0, c##i##0); c##i##1 = _mm512_fmadd_ps(v, w1, c##i##1); }
#define MLK_F1(i) { c##i##0 = _mm512_fmadd_ps(_mm512_set1_ps(r##i[k]), w0, c##i##0); }
#define MLK_S(i) if (i < rows) { float *yr = y + (m + i) * ldy + n0; \
                                 const float *rr = res ? res + (m + i) * ldy + n0 : NULL; \
                                 mlk_store16(yr, rr, c##i##0, b0, nv[0], act, p0, p1, lo, hi); \
                                 if (np > 1) mlk_store16(yr + 16, rr ? rr + 16 : NULL, c##i##1, b1, nv[1], act, p0, p1, lo, hi); \
                                 if (np > 2) mlk_store16(yr + 32, rr ? rr + 32 : NULL, c##i##2, b2, nv[2], act, p0, p1, lo, hi); }
// The usual epilogue (three whole panels; ReLU6's clip or nothing; the residual or none) with the activation a
// constant, so that the 24 stores test nothing: the same operations as mlk_store16.
#define MLK_SW(i, ACT, RES) if (i < rows) { float *yr = y + (m + i) * ldy + n0; \
    const float *rr = RES ? res + (m + i) * ldy + n0 : NULL; \
    __m512 v0 = _mm512_add_ps(c##i##0, b0), v1 = _mm512_add_ps(c##i##1, b1), v2 = _mm512_add_ps(c##i##2, b2); \
    if (RES) { v0 = _mm512_add_ps(v0, _mm512_loadu_ps(rr)); v1 = _mm512_add_ps(v1, _mm512_loadu_ps(rr + 16)); \
               v2 = _mm512_add_ps(v2, _mm512_loadu_ps(rr + 32)); } \
    _mm512_storeu_ps(yr, act16(v0, ACT, lo, hi)); _mm512_storeu_ps(yr + 16, act16(v1, ACT, lo, hi)); \
    _mm512_storeu_ps(yr + 32, act16(v2, ACT, lo, hi)); }
#define MLK_SW_CLIP(i) MLK_SW(i, MLK_ACT_CLIP, 0)
#define MLK_SW_NONE(i) MLK_SW(i, MLK_ACT_NONE, 0)
#define MLK_SW_RES(i) MLK_SW(i, MLK_ACT_NONE, 1)
#define MLK_P(i) const float *r##i = a + (m + (i < rows ? i : 0)) * lda;
#define MLK_ALL(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

MLK_AVX512 static void gemm_avx512(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N,
                                   int64_t K, const float *bias, const float *res, float *y, int64_t ldy, int act,
                                   float p0, float p1) {
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
            int whole = fast_epilogue(np == 3 && nv[2] == 16, act, res);   // three whole panels
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
                    const float *rr = res ? res + m * ldy + n0 : NULL;
                    mlk_store16(yr, rr, c00, b0, nv[0], act, p0, p1, lo, hi);
                    if (np > 1) mlk_store16(yr + 16, rr ? rr + 16 : NULL, c01, b1, nv[1], act, p0, p1, lo, hi);
                    if (np > 2) mlk_store16(yr + 32, rr ? rr + 32 : NULL, c02, b2, nv[2], act, p0, p1, lo, hi);
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
                if (whole == 1) { MLK_ALL(MLK_SW_CLIP) }
                else if (whole == 2) { MLK_ALL(MLK_SW_NONE) }
                else if (whole == 3) { MLK_ALL(MLK_SW_RES) }
                else { MLK_ALL(MLK_S) }
            }
        }
    }
}

// Narrow tiles.
// gemm_avx512's 8-row × 48-column tile fits wide layers; a layer with 16–96 output channels and many pixels (the
// 112×112 and 56×56 stages of a MobileNet-style network) wastes it: 16 columns leave 8 accumulators (FMA latency
// shows), 96 columns make two passes over every input row and write each output row in two halves. Here the
// tile is R rows × P panels with R·P ≤ 24 chosen from N, so a row's outputs are written in one pass. Every output
// is still Σ_k a·b in k order from 0, then + bias: the same value whatever the tile, as in gemm_avx512.
// R rows × P panels; rows past `rows` repeat row 0 (computed, never stored).
MLK_INLINE MLK_AVX512 void gtile(int R, int P, const float *a, int64_t lda, int64_t m, int rows, const float *bp,
                                 int64_t K, const __m512 *b, const __mmask16 *mask, const int64_t *nv, const float *res,
                                 float *y, int64_t ldy, int act, float p0, float p1) {
    const float *r[16];
    for (int i = 0; i < R; i++) r[i] = a + (m + (i < rows ? i : 0)) * lda;
    __m512 c[16][6];
    for (int i = 0; i < R; i++) for (int j = 0; j < P; j++) c[i][j] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        __m512 w[6];
        for (int j = 0; j < P; j++) w[j] = _mm512_load_ps(bp + (j * K + k) * 16);
        for (int i = 0; i < R; i++) {
            __m512 v = _mm512_set1_ps(r[i][k]);
            for (int j = 0; j < P; j++) c[i][j] = _mm512_fmadd_ps(v, w[j], c[i][j]);
        }
    }
    if (MLK_ACT_VECTOR(act)) {
        // Unrolled, so that the accumulators stay in registers (a rolled loop indexes them: stored to the stack).
        _Pragma("clang loop unroll(full)")
        for (int i = 0; i < R; i++) {
            if (i >= rows) break;
            float *yr = y + (m + i) * ldy;
            const float *rr = res ? res + (m + i) * ldy : NULL;
            _Pragma("clang loop unroll(full)")
            for (int j = 0; j < P; j++) {
                __m512 v = _mm512_add_ps(c[i][j], b[j]);
                if (rr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask[j], rr + 16 * j));
                _mm512_mask_storeu_ps(yr + 16 * j, mask[j], mlk_act16(v, act, p0, p1));
            }
        }
        return;
    }
    for (int i = 0; i < R && i < rows; i++) {
        float *yr = y + (m + i) * ldy;
        const float *rr = res ? res + (m + i) * ldy : NULL;
        for (int j = 0; j < P; j++) {
            __m512 v = _mm512_add_ps(c[i][j], b[j]);
            if (rr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask[j], rr + 16 * j));
            _mm512_mask_storeu_ps(yr + 16 * j, mask[j], v);
            for (int64_t t = 0; t < nv[j]; t++) yr[16 * j + t] = act_scalar(yr[16 * j + t], act, p0, p1);
        }
    }
}

#define MLK_GT(R, P) MLK_AVX512 static void gemm_narrow_##R##x##P(const float *a, int64_t lda, const float *bp, int64_t m0, \
    int64_t m1, int64_t K, const __m512 *b, const __mmask16 *mask, const int64_t *nv, const float *res, float *y, \
    int64_t ldy, int act, float p0, float p1) { \
    int64_t m = m0; \
    for (; m + R <= m1; m += R) gtile(R, P, a, lda, m, R, bp, K, b, mask, nv, res, y, ldy, act, p0, p1); \
    for (; m < m1; m++) gtile(1, P, a, lda, m, 1, bp, K, b, mask, nv, res, y, ldy, act, p0, p1); \
}
MLK_GT(16, 1)
MLK_GT(4, 5)
MLK_GT(4, 6)
#undef MLK_GT

// Narrow tiles whose last panel has at most 8 columns (N = 16·P + 1 … 16·P + 8: 24, 40, 56 …): that panel in
// 8-lane registers, so no multiply-add is spent on its zero columns (half the work of a 16-lane one on Zen 4, which
// splits it in two; a lighter port load elsewhere). R rows × (P 16-column panels + the half); each lane still
// computes Σ_k a·b in k order from 0, then + bias: the same bits as the 16-lane tiles.
MLK_INLINE MLK_AVX512 void htile(int R, int P, const float *a, int64_t lda, int64_t m, int rows, const float *bp,
                                 int64_t K, const __m512 *b, const __mmask16 *mask, int64_t nh, const float *res,
                                 float *y, int64_t ldy, int act, float p0, float p1) {
    const float *r[16];
    for (int i = 0; i < R; i++) r[i] = a + (m + (i < rows ? i : 0)) * lda;
    __m512 c[16][5];
    __m256 h[16];
    for (int i = 0; i < R; i++) {
        h[i] = _mm256_setzero_ps();
        for (int j = 0; j < P; j++) c[i][j] = _mm512_setzero_ps();
    }
    const float *bh = bp + P * K * 16;
    for (int64_t k = 0; k < K; k++) {
        __m512 w[5];
        for (int j = 0; j < P; j++) w[j] = _mm512_load_ps(bp + (j * K + k) * 16);
        __m256 wh = _mm256_load_ps(bh + k * 16);
        for (int i = 0; i < R; i++) {
            __m512 v = _mm512_set1_ps(r[i][k]);
            for (int j = 0; j < P; j++) c[i][j] = _mm512_fmadd_ps(v, w[j], c[i][j]);
            h[i] = _mm256_fmadd_ps(_mm512_castps512_ps256(v), wh, h[i]);
        }
    }
    int vec = MLK_ACT_VECTOR(act);
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    for (int i = 0; i < R && i < rows; i++) {
        float *yr = y + (m + i) * ldy;
        const float *rr = res ? res + (m + i) * ldy : NULL;
        for (int j = 0; j < P; j++) {
            __m512 v = _mm512_add_ps(c[i][j], b[j]);
            if (rr) v = _mm512_add_ps(v, _mm512_loadu_ps(rr + 16 * j));
            if (vec) { _mm512_storeu_ps(yr + 16 * j, mlk_act16(v, act, p0, p1)); continue; }
            _mm512_storeu_ps(yr + 16 * j, v);
            for (int t = 0; t < 16; t++) yr[16 * j + t] = act_scalar(yr[16 * j + t], act, p0, p1);
        }
        __m256 v = _mm256_add_ps(h[i], _mm512_castps512_ps256(b[P]));
        if (rr) v = _mm256_add_ps(v, _mm512_castps512_ps256(_mm512_maskz_loadu_ps(mask[P], rr + 16 * P)));
        if (vec) v = act8(v, act, lo, hi);
        float *yh = yr + 16 * P;
        if (nh == 8) _mm256_storeu_ps(yh, v); else _mm512_mask_storeu_ps(yh, mask[P], _mm512_castps256_ps512(v));
        if (!vec) for (int64_t t = 0; t < nh; t++) yh[t] = act_scalar(yh[t], act, p0, p1);
    }
}

#define MLK_HT(R, P) MLK_AVX512 static void gemm_half_##R##x##P(const float *a, int64_t lda, const float *bp, int64_t m0, \
    int64_t m1, int64_t K, const __m512 *b, const __mmask16 *mask, int64_t nh, const float *res, float *y, \
    int64_t ldy, int act, float p0, float p1) { \
    int64_t m = m0; \
    for (; m + R <= m1; m += R) htile(R, P, a, lda, m, R, bp, K, b, mask, nh, res, y, ldy, act, p0, p1); \
    for (; m < m1; m++) htile(1, P, a, lda, m, 1, bp, K, b, mask, nh, res, y, ldy, act, p0, p1); \
}
MLK_HT(16, 0)
MLK_HT(10, 1)
MLK_HT(8, 2)
MLK_HT(6, 3)
MLK_HT(4, 4)
MLK_HT(4, 5)
#undef MLK_HT
typedef void (*gemm_half_fn)(const float *, int64_t, const float *, int64_t, int64_t, int64_t, const __m512 *,
                             const __mmask16 *, int64_t, const float *, float *, int64_t, int, float, float);
static const gemm_half_fn gemm_half[6] = {gemm_half_16x0, gemm_half_10x1, gemm_half_8x2, gemm_half_6x3, gemm_half_4x4,
                                          gemm_half_4x5};

MLK_AVX512 static int gemm_narrow_avx512(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N,
                           int64_t K, const float *bias, const float *res, float *y, int64_t ldy, int act, float p0,
                           float p1) {
    int64_t panels = (N + 15) / 16;
    int half = panels >= 1 && N - 16 * (panels - 1) <= 8;
    // 2–4 whole panels: the 8 × 48 tile does as well (measured: a 12 × 2 tile here ran at a third of its speed).
    if (panels > 6 || (!half && panels > 1 && panels < 5)) return 0;
    __m512 b[6];
    __mmask16 mask[6];
    int64_t nv[6];
    for (int j = 0; j < panels; j++) {
        int64_t left = N - 16 * j;
        nv[j] = left < 16 ? left : 16;
        mask[j] = (__mmask16)((1u << nv[j]) - 1);
        b[j] = bias ? _mm512_maskz_loadu_ps(mask[j], bias + 16 * j) : _mm512_setzero_ps();
    }
    if (half) {
        gemm_half[panels - 1](a, lda, packed, m0, m1, K, b, mask, nv[panels - 1], res, y, ldy, act, p0, p1);
        return 1;
    }
    switch (panels) {
    case 1: gemm_narrow_16x1(a, lda, packed, m0, m1, K, b, mask, nv, res, y, ldy, act, p0, p1); break;
    case 5: gemm_narrow_4x5(a, lda, packed, m0, m1, K, b, mask, nv, res, y, ldy, act, p0, p1); break;
    default: gemm_narrow_4x6(a, lda, packed, m0, m1, K, b, mask, nv, res, y, ldy, act, p0, p1); break;
    }
    return 1;
}
#endif

// ---- dispatch ----

void mlk_gemm_packed_res(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N, int64_t K,
                         const float *bias, const float *res, float *y, int64_t ldy, int act, float p0, float p1) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX512)) {
        if (gemm_narrow_avx512(a, lda, packed, m0, m1, N, K, bias, res, y, ldy, act, p0, p1)) return;
        gemm_avx512(a, lda, packed, m0, m1, N, K, bias, res, y, ldy, act, p0, p1);
        return;
    }
    if (mlk_cpu_has(MLK_CPU_AVX2)) { gemm_avx2(a, lda, packed, m0, m1, N, K, bias, res, y, ldy, act, p0, p1); return; }
#endif
    gemm_portable(a, lda, packed, m0, m1, N, K, bias, res, y, ldy, act, p0, p1);
}

void mlk_gemm_packed(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N, int64_t K,
                     const float *bias, float *y, int64_t ldy, int act, float p0, float p1) {
    mlk_gemm_packed_res(a, lda, packed, m0, m1, N, K, bias, NULL, y, ldy, act, p0, p1);
}
