// Float GEMM micro-kernels for narrow outputs (AVX-512): see mlk_gemm_packed in include/CMLToolKernels.h.
// kernels.c's 8-row × 48-column tile fits wide layers; a layer with 16–96 output channels and many pixels (the
// 112×112 and 56×56 stages of a MobileNet-style network) wastes it: 16 columns leave 8 accumulators (FMA latency
// shows), 96 columns make two passes over every input row and write each output row in two halves. Here the
// tile is R rows × P panels with R·P ≤ 24 chosen from N, so a row's outputs are written in one pass. Every output
// is still Σ_k a·b in k order from 0, then + bias: the same value whatever the tile, as in kernels.c.
#include "CMLToolKernels.h"
#include "act.h"
#include <stdint.h>
#if defined(__x86_64__)
#include <immintrin.h>
#define MLK_G512 __attribute__((target("avx512f,avx2,fma")))
#define MLK_GINLINE static inline __attribute__((always_inline))

// R rows × P panels; rows past `rows` repeat row 0 (computed, never stored).
MLK_GINLINE MLK_G512 void gtile(int R, int P, const float *a, int64_t lda, int64_t m, int rows, const float *bp,
                                 int64_t K, const __m512 *b, const __mmask16 *mask, const int64_t *nv, float *y,
                                 int64_t ldy, int act, float p0, float p1) {
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
    for (int i = 0; i < R && i < rows; i++) {
        float *yr = y + (m + i) * ldy;
        for (int j = 0; j < P; j++) {
            __m512 v = _mm512_add_ps(c[i][j], b[j]);
            if (act <= MLK_ACT_LEAKY) { _mm512_mask_storeu_ps(yr + 16 * j, mask[j], mlk_act16(v, act, p0, p1)); continue; }
            _mm512_mask_storeu_ps(yr + 16 * j, mask[j], v);
            for (int64_t t = 0; t < nv[j]; t++) yr[16 * j + t] = act_scalar(yr[16 * j + t], act, p0, p1);
        }
    }
}

#define MLK_GT(R, P) MLK_G512 static void gemm_narrow_##R##x##P(const float *a, int64_t lda, const float *bp, int64_t m0, \
    int64_t m1, int64_t K, const __m512 *b, const __mmask16 *mask, const int64_t *nv, float *y, int64_t ldy, int act, \
    float p0, float p1) { \
    int64_t m = m0; \
    for (; m + R <= m1; m += R) gtile(R, P, a, lda, m, R, bp, K, b, mask, nv, y, ldy, act, p0, p1); \
    for (; m < m1; m++) gtile(1, P, a, lda, m, 1, bp, K, b, mask, nv, y, ldy, act, p0, p1); \
}
MLK_GT(16, 1)
MLK_GT(4, 5)
MLK_GT(4, 6)
#undef MLK_GT

MLK_G512 int mlk_gemm_narrow_avx512(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N,
                           int64_t K, const float *bias, float *y, int64_t ldy, int act, float p0, float p1) {
    int64_t panels = (N + 15) / 16;
    // 2–4 panels: kernels.c's 8 × 48 tile does as well (measured: a 12 × 2 tile here ran at a third of its speed).
    if (panels > 6 || (panels > 1 && panels < 5)) return 0;
    __m512 b[6];
    __mmask16 mask[6];
    int64_t nv[6];
    for (int j = 0; j < panels; j++) {
        int64_t left = N - 16 * j;
        nv[j] = left < 16 ? left : 16;
        mask[j] = (__mmask16)((1u << nv[j]) - 1);
        b[j] = bias ? _mm512_maskz_loadu_ps(mask[j], bias + 16 * j) : _mm512_setzero_ps();
    }
    switch (panels) {
    case 1: gemm_narrow_16x1(a, lda, packed, m0, m1, K, b, mask, nv, y, ldy, act, p0, p1); break;
    case 5: gemm_narrow_4x5(a, lda, packed, m0, m1, K, b, mask, nv, y, ldy, act, p0, p1); break;
    default: gemm_narrow_4x6(a, lda, packed, m0, m1, K, b, mask, nv, y, ldy, act, p0, p1); break;
    }
    return 1;
}
#else
int mlk_gemm_narrow_avx512(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N,
                           int64_t K, const float *bias, float *y, int64_t ldy, int act, float p0, float p1) {
    (void)a; (void)lda; (void)packed; (void)m0; (void)m1; (void)N; (void)K; (void)bias; (void)y; (void)ldy;
    (void)act; (void)p0; (void)p1;
    return 0;
}
#endif
