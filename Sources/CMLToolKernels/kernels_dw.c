// Depthwise convolution, horizontal stride 1 or 2, no dilation, 3×3 or 5×5, AVX-512: eight adjacent interior output
// pixels at a time. Each input vector of a kernel row is loaded once and used for every output it touches, so a row
// of taps costs 7·stride + KW input loads instead of 8 · KW. Sums run from the bias over ky, then kx, in
// order, exactly as the other depthwise kernels in kernels.c, so results are identical to theirs.
#include "CMLToolKernels.h"
#include "act.h"
#if defined(__x86_64__)
#include <immintrin.h>
#define MLK_DW512 __attribute__((target("avx512f,avx2,fma")))

static inline __attribute__((always_inline)) MLK_DW512 void
dw8(int KW, int SW, const float *base, int64_t W, int64_t C, int64_t CN, const float *w, int64_t ky0, int64_t ky1, int64_t dh,
    const float *bias, float *out, int act, float p0, float p1) {
    for (int64_t c = 0; c < CN; c += 16) {
        __m512 b = bias ? _mm512_loadu_ps(bias + c) : _mm512_setzero_ps();
        __m512 acc[8];
        for (int o = 0; o < 8; o++) acc[o] = b;
        for (int64_t ky = ky0; ky < ky1; ky++) {
            const float *in = base + ky * dh * W * C + c;
            __m512 wv[5];
            for (int kx = 0; kx < KW; kx++) wv[kx] = _mm512_loadu_ps(w + (ky * KW + kx) * C + c);
#pragma clang loop unroll(full)
            for (int j = 0; j < 7 * SW + KW; j++) {
                __m512 v = _mm512_loadu_ps(in + j * C);
                // Input column j feeds output o = (j − kx) / SW; kx descending gives each output its taps in
                // ascending kx.
#pragma clang loop unroll(full)
                for (int kx = KW - 1; kx >= 0; kx--) {
                    int o = (j - kx) / SW;
                    if (j >= kx && (j - kx) % SW == 0 && o < 8) acc[o] = _mm512_fmadd_ps(v, wv[kx], acc[o]);
                }
            }
        }
        if (act <= MLK_ACT_LEAKY) {
            for (int o = 0; o < 8; o++) _mm512_storeu_ps(out + o * C + c, mlk_act16(acc[o], act, p0, p1));
        } else {
            for (int o = 0; o < 8; o++) _mm512_storeu_ps(out + o * C + c, acc[o]);
        }
    }
    if (act > MLK_ACT_LEAKY)
        for (int o = 0; o < 8; o++) for (int64_t i = 0; i < CN; i++) out[o * C + i] = act_scalar(out[o * C + i], act, p0, p1);
}

MLK_DW512 int mlk_depthwise8_avx512(const float *base, int64_t W, int64_t C, int64_t CN, const float *w, int64_t KW,
                                    int64_t sw, int64_t ky0, int64_t ky1, int64_t dh, const float *bias, float *out,
                                    int act, float p0, float p1) {
    if (CN % 16 != 0) return 0;
    if (KW == 3 && sw == 1) { dw8(3, 1, base, W, C, CN, w, ky0, ky1, dh, bias, out, act, p0, p1); return 1; }
    if (KW == 5 && sw == 1) { dw8(5, 1, base, W, C, CN, w, ky0, ky1, dh, bias, out, act, p0, p1); return 1; }
    if (KW == 3 && sw == 2) { dw8(3, 2, base, W, C, CN, w, ky0, ky1, dh, bias, out, act, p0, p1); return 1; }
    if (KW == 5 && sw == 2) { dw8(5, 2, base, W, C, CN, w, ky0, ky1, dh, bias, out, act, p0, p1); return 1; }
    return 0;
}
#endif
