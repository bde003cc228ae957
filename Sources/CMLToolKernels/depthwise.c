// Depthwise convolution (channel multiplier 1), NHWC: portable C, AVX2 + FMA and AVX-512 side by side. Every variant
// sums from the bias over ky, then kx, in order.
#include "CMLToolKernels.h"
#include "isa.h"
#include "vec.h"

// ---- portable ----

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

#if MLK_X86
// ---- AVX2 + FMA ----

// Four horizontally adjacent interior output pixels, C a multiple of 8 (depthwise4.h).
#define DW4_NAME depthwise4_avx2
#define DW4_ATTR MLK_AVX2
#define DW4_V __m256
#define DW4_N 8
#define DW4_LOAD _mm256_loadu_ps
#define DW4_STORE _mm256_storeu_ps
#define DW4_FMA _mm256_fmadd_ps
#define DW4_ZERO _mm256_setzero_ps
#define DW4_SET1 _mm256_set1_ps
#define DW4_ACT act8
#include "depthwise4.h"

// Six horizontally adjacent interior output pixels at stride 1 (no dilation), C a multiple of 8, KW = 3 or 5 known
// at compile time: each kernel row's 5 + KW input pixels are loaded once and each serves up to KW taps of
// neighbouring outputs (depthwise4_avx2 loads every tap's input again: 10 loads per 8 FMAs there, 15 per 30 here),
// six independent FMA chains per 8 channels. Same sums in the same order as the other variants.
MLK_INLINE MLK_AVX2 void dw6s1_avx2(int KW, const float *base, int64_t W, int64_t C, int64_t CN, const float *w,
                                     int64_t ky0, int64_t ky1, int64_t dh, const float *bias, float *out, int act,
                                     float p0, float p1) {
    int vec = MLK_ACT_VECTOR(act);
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    for (int64_t c = 0; c < CN; c += 8) {
        __m256 b = bias ? _mm256_loadu_ps(bias + c) : _mm256_setzero_ps();
        __m256 a[6] = {b, b, b, b, b, b};
        for (int64_t ky = ky0; ky < ky1; ky++) {
            const float *in = base + ky * dh * W * C + c, *k = w + ky * KW * C + c;
            __m256 x[10];
            for (int i = 0; i < 5 + KW; i++) x[i] = _mm256_loadu_ps(in + i * C);
            for (int kx = 0; kx < KW; kx++) {
                __m256 wk = _mm256_loadu_ps(k + kx * C);
                for (int j = 0; j < 6; j++) a[j] = _mm256_fmadd_ps(x[j + kx], wk, a[j]);
            }
        }
        for (int j = 0; j < 6; j++) _mm256_storeu_ps(out + j * C + c, vec ? act8(a[j], act, lo, hi) : a[j]);
    }
    if (!vec) for (int64_t j = 0; j < 6; j++) for (int64_t i = 0; i < CN; i++) out[j * C + i] = act_scalar(out[j * C + i], act, p0, p1);
}

MLK_AVX2 static void depthwise6s1k3_avx2(const float *base, int64_t W, int64_t C, int64_t CN, const float *w, int64_t ky0,
                                         int64_t ky1, int64_t dh, const float *bias, float *out, int act, float p0, float p1) {
    dw6s1_avx2(3, base, W, C, CN, w, ky0, ky1, dh, bias, out, act, p0, p1);
}

MLK_AVX2 static void depthwise6s1k5_avx2(const float *base, int64_t W, int64_t C, int64_t CN, const float *w, int64_t ky0,
                                         int64_t ky1, int64_t dh, const float *bias, float *out, int act, float p0, float p1) {
    dw6s1_avx2(5, base, W, C, CN, w, ky0, ky1, dh, bias, out, act, p0, p1);
}

// ---- AVX-512 ----

// One output pixel with a clipped tap range (image borders), C a multiple of 16: four channel blocks at a time give
// four independent FMA chains.
MLK_AVX512 static void depthwise1_avx512(const float *base, int64_t W, int64_t C, int64_t CN, const float *w, int64_t KW,
                                         int64_t ky0, int64_t ky1, int64_t kx0, int64_t kx1, int64_t dh, int64_t dw,
                                         const float *bias, float *out, int act, float p0, float p1) {
    int vec = MLK_ACT_VECTOR(act);
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

// Four interior output pixels, C a multiple of 16 (depthwise4.h, as depthwise4_avx2).
#define DW4_NAME depthwise4_avx512
#define DW4_ATTR MLK_AVX512
#define DW4_V __m512
#define DW4_N 16
#define DW4_LOAD _mm512_loadu_ps
#define DW4_STORE _mm512_storeu_ps
#define DW4_FMA _mm512_fmadd_ps
#define DW4_ZERO _mm512_setzero_ps
#define DW4_SET1 _mm512_set1_ps
#define DW4_ACT act16
#include "depthwise4.h"

// Eight adjacent interior output pixels, horizontal stride 1 or 2, no dilation, 3×3 or 5×5: each input vector of a
// kernel row is loaded once and used for every output it touches, so a row of taps costs 7·stride + KW input loads
// instead of 8 · KW. Returns 0 (and does nothing) unless C is a multiple of 16 and the shape is one of those.
// Not FULL (image borders): only the first R outputs, and only input columns [jlo, jhi) of the 7·SW + KW exist (the
// rest lie outside the image and are never read): each output sums the taps inside, in ascending ky then kx, as
// the definition does — a 7 × 7 map under a 5 × 5 kernel, all border, runs a row at a time instead of pixel by pixel.
MLK_INLINE MLK_AVX512 void
dw8(int KW, int SW, int FULL, int R, int jlo, int jhi, const float *base, int64_t W, int64_t C, int64_t CN, const float *w,
    int64_t ky0, int64_t ky1, int64_t dh, const float *bias, float *out, int act, float p0, float p1) {
    if (FULL) { R = 8; jlo = 0; jhi = 7 * SW + KW; }
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
                if (!FULL && (j < jlo || j >= jhi)) continue;
                __m512 v = _mm512_loadu_ps(in + j * C);
                // Input column j feeds output o = (j − kx) / SW; kx descending gives each output its taps in
                // ascending kx.
#pragma clang loop unroll(full)
                for (int kx = KW - 1; kx >= 0; kx--) {
                    int o = (j - kx) / SW;
                    if (j >= kx && (j - kx) % SW == 0 && o < 8 && (FULL || o < R)) acc[o] = _mm512_fmadd_ps(v, wv[kx], acc[o]);
                }
            }
        }
        // Unrolled with the bound inside, so acc stays in registers.
#pragma clang loop unroll(full)
        for (int o = 0; o < 8; o++) {
            if (!FULL && o >= R) continue;
            _mm512_storeu_ps(out + o * C + c, MLK_ACT_VECTOR(act) ? mlk_act16(acc[o], act, p0, p1) : acc[o]);
        }
    }
    if (!MLK_ACT_VECTOR(act))
        for (int o = 0; o < R; o++) for (int64_t i = 0; i < CN; i++) out[o * C + i] = act_scalar(out[o * C + i], act, p0, p1);
}

MLK_AVX512 static int depthwise8_avx512(const float *base, int64_t W, int64_t C, int64_t CN, const float *w, int64_t KW,
                                    int64_t sw, int64_t ky0, int64_t ky1, int64_t dh, const float *bias, float *out,
                                    int act, float p0, float p1) {
    if (CN % 16 != 0) return 0;
    if (KW == 3 && sw == 1) { dw8(3, 1, 1, 8, 0, 0, base, W, C, CN, w, ky0, ky1, dh, bias, out, act, p0, p1); return 1; }
    if (KW == 5 && sw == 1) { dw8(5, 1, 1, 8, 0, 0, base, W, C, CN, w, ky0, ky1, dh, bias, out, act, p0, p1); return 1; }
    if (KW == 3 && sw == 2) { dw8(3, 2, 1, 8, 0, 0, base, W, C, CN, w, ky0, ky1, dh, bias, out, act, p0, p1); return 1; }
    if (KW == 5 && sw == 2) { dw8(5, 2, 1, 8, 0, 0, base, W, C, CN, w, ky0, ky1, dh, bias, out, act, p0, p1); return 1; }
    return 0;
}

// Up to eight adjacent output pixels at an image border, stride 1 (see dw8): R outputs, input columns [jlo, jhi) of
// the run starting at `base` inside the image. `base` itself may lie before the row (never read there).
MLK_AVX512 static int depthwise8_border_avx512(const float *base, int64_t W, int64_t C, int64_t CN, const float *w,
                                               int64_t KW, int64_t sw, int R, int jlo, int jhi, int64_t ky0, int64_t ky1,
                                               int64_t dh, const float *bias, float *out, int act, float p0, float p1) {
    if (CN % 16 != 0 || sw != 1 || (KW != 3 && KW != 5) || R < 1 || R > 8) return 0;
    // R as a constant in each case: the kernel's "output o < R" tests then vanish at compile time instead of
    // branching around every multiply-add (measured in EfficientNet-Lite0: the branchy form spent more time on
    // compares than on FMAs).
#define MLK_DWB(RR) case RR: \
        if (KW == 3) dw8(3, 1, 0, RR, jlo, jhi, base, W, C, CN, w, ky0, ky1, dh, bias, out, act, p0, p1); \
        else dw8(5, 1, 0, RR, jlo, jhi, base, W, C, CN, w, ky0, ky1, dh, bias, out, act, p0, p1); \
        return 1;
    switch (R) { MLK_DWB(1) MLK_DWB(2) MLK_DWB(3) MLK_DWB(4) MLK_DWB(5) MLK_DWB(6) MLK_DWB(7) MLK_DWB(8) }
#undef MLK_DWB
    return 0;
}

// dw8's border runs on AVX2 (stride 1, 8-lane channel blocks, C a multiple of 8): up to R ≤ 8 adjacent outputs,
// input columns [jlo, jhi) of the 7 + KW the run spans; each output sums the taps inside from the bias, in ascending
// ky then kx (the definition's bits). 8 accumulators, KW weights and the input vector fit AVX2's 16 registers.
MLK_INLINE MLK_AVX2 void dw8b_avx2(int KW, int R, int jlo, int jhi, const float *base, int64_t W, int64_t C, int64_t CN,
                                   const float *w, int64_t ky0, int64_t ky1, int64_t dh, const float *bias, float *out,
                                   int act, float p0, float p1) {
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    for (int64_t c = 0; c < CN; c += 8) {
        __m256 b = bias ? _mm256_loadu_ps(bias + c) : _mm256_setzero_ps();
        __m256 acc[8];
        for (int o = 0; o < 8; o++) acc[o] = b;
        for (int64_t ky = ky0; ky < ky1; ky++) {
            const float *in = base + ky * dh * W * C + c;
            __m256 wv[5];
            for (int kx = 0; kx < KW; kx++) wv[kx] = _mm256_loadu_ps(w + (ky * KW + kx) * C + c);
#pragma clang loop unroll(full)
            for (int j = 0; j < 7 + KW; j++) {
                if (j < jlo || j >= jhi) continue;
                __m256 v = _mm256_loadu_ps(in + j * C);
#pragma clang loop unroll(full)
                for (int kx = KW - 1; kx >= 0; kx--) {
                    int o = j - kx;
                    if (o >= 0 && o < 8 && o < R) acc[o] = _mm256_fmadd_ps(v, wv[kx], acc[o]);
                }
            }
        }
#pragma clang loop unroll(full)
        for (int o = 0; o < 8; o++) {
            if (o >= R) continue;
            _mm256_storeu_ps(out + o * C + c, MLK_ACT_VECTOR(act) ? act8(acc[o], act, lo, hi) : acc[o]);
        }
    }
    if (!MLK_ACT_VECTOR(act))
        for (int o = 0; o < R; o++) for (int64_t i = 0; i < CN; i++) out[o * C + i] = act_scalar(out[o * C + i], act, p0, p1);
}

MLK_AVX2 static void depthwise8_border_avx2(const float *base, int64_t W, int64_t C, int64_t CN, const float *w, int64_t KW,
                                            int R, int jlo, int jhi, int64_t ky0, int64_t ky1, int64_t dh,
                                            const float *bias, float *out, int act, float p0, float p1) {
    // R a constant per case, as in depthwise8_border_avx512.
#define MLK_DWB(RR) case RR: \
        if (KW == 3) dw8b_avx2(3, RR, jlo, jhi, base, W, C, CN, w, ky0, ky1, dh, bias, out, act, p0, p1); \
        else dw8b_avx2(5, RR, jlo, jhi, base, W, C, CN, w, ky0, ky1, dh, bias, out, act, p0, p1); \
        return;
    switch (R) { MLK_DWB(1) MLK_DWB(2) MLK_DWB(3) MLK_DWB(4) MLK_DWB(5) MLK_DWB(6) MLK_DWB(7) MLK_DWB(8) }
#undef MLK_DWB
}

// One output pixel with a clipped tap range (image borders), B 8-lane channel blocks from channel c: B independent
// FMA chains.
MLK_INLINE MLK_AVX2 void dw1_avx2(int B, const float *base, int64_t W, int64_t C, const float *w, int64_t KW, int64_t ky0,
                                   int64_t ky1, int64_t kx0, int64_t kx1, int64_t dh, int64_t dw, const float *bias,
                                   float *out, int64_t c, int act, __m256 lo, __m256 hi) {
    __m256 a[4];
    for (int j = 0; j < B; j++) a[j] = bias ? _mm256_loadu_ps(bias + c + 8 * j) : _mm256_setzero_ps();
    for (int64_t ky = ky0; ky < ky1; ky++) {
        const float *in = base + (ky * dh * W) * C + c, *k = w + ky * KW * C + c;
        for (int64_t kx = kx0; kx < kx1; kx++) {
            const float *ip = in + kx * dw * C, *kp = k + kx * C;
            for (int j = 0; j < B; j++) a[j] = _mm256_fmadd_ps(_mm256_loadu_ps(ip + 8 * j), _mm256_loadu_ps(kp + 8 * j), a[j]);
        }
    }
    for (int j = 0; j < B; j++) _mm256_storeu_ps(out + c + 8 * j, MLK_ACT_VECTOR(act) ? act8(a[j], act, lo, hi) : a[j]);
}

// ---- the AVX2 driver: per output pixel, the widest kernel that fits (8 or 4 pixels, AVX-512 when allowed) ----

MLK_AVX2 static void depthwise_avx2(const float *x, int64_t H, int64_t W, int64_t C, int64_t CN, const float *w, int64_t KH, int64_t KW,
                                    const float *bias, float *y, int64_t oy0, int64_t oy1, int64_t OW, int64_t sh, int64_t sw,
                                    int64_t dh, int64_t dw, int64_t pt, int64_t pl, int act, float p0, float p1) {
    int vec = MLK_ACT_VECTOR(act);
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    int64_t C8 = CN & ~(int64_t)7;
    int use512 = mlk_cpu_has(MLK_CPU_AVX512);
    for (int64_t oy = oy0; oy < oy1; oy++) {
        // Valid kernel rows for this output row: iy = oy·sh − pt + ky·dh in [0, H).
        int64_t ky0 = 0, ky1 = KH;
        while (ky0 < KH && oy * sh - pt + ky0 * dh < 0) ky0++;
        while (ky1 > ky0 && oy * sh - pt + (ky1 - 1) * dh >= H) ky1--;
        for (int64_t ox = 0; ox < OW; ox++) {
            if (use512 && sw <= 2 && dw == 1 && ox + 8 <= OW && ox * sw - pl >= 0 && (ox + 7) * sw - pl + KW - 1 < W &&
                depthwise8_avx512(x + ((oy * sh - pt) * W + (ox * sw - pl)) * C, W, C, CN, w, KW, sw, ky0, ky1, dh,
                                      bias, y + (oy * OW + ox) * C, act, p0, p1)) {
                ox += 7;
                continue;
            }
            if (sw == 1 && dw == 1 && (KW == 3 || KW == 5) &&
                (use512 ? CN % 16 == 0 : C8 == CN && (OW <= 8 || (KW == 5 && OW <= 16)))) {
                // A border run (some taps outside the image): up to 8 pixels from here, instead of pixel by pixel.
                // Measured on Zen 4 (microbenchmarks, best of 5): AVX-512, 5 × 5 on 7 × 7 × 1152 2×, on 14 × 14 to
                // 56 × 56 10–20% faster, 3 × 3 on 14 × 14 to 112 × 112 10–15%; stride 2 (5 × 5, 14 × 14 → 7 × 7)
                // slower, so not taken. AVX2 (forced) gains only on maps up to 8 wide (3 × 3: 27 → 18 µs on
                // 7 × 7 × 1152) and for 5 × 5 up to 16 (14 × 14: 111 → 86 µs); wider, its six-pixel interior runs
                // are faster.
                int64_t R = OW - ox < 8 ? OW - ox : 8;
                int64_t ix = ox * sw - pl;   // input column of the run's first tap (may be < 0)
                int64_t span = 7 * sw + KW, jlo = ix < 0 ? -ix : 0, jhi = W - ix < span ? W - ix : span;
                const float *run = x + ((oy * sh - pt) * W + ix) * C;
                float *out = y + (oy * OW + ox) * C;
                if (jlo < jhi && !use512) {
                    depthwise8_border_avx2(run, W, C, CN, w, KW, (int)R, (int)jlo, (int)jhi, ky0, ky1, dh, bias, out, act,
                                           p0, p1);
                    ox += R - 1;
                    continue;
                }
                if (jlo < jhi && depthwise8_border_avx512(run, W, C, CN, w, KW, sw, (int)R, (int)jlo, (int)jhi, ky0, ky1,
                                                          dh, bias, out, act, p0, p1)) {
                    ox += R - 1;
                    continue;
                }
            }
            if (!use512 && C8 == CN && sw == 1 && dw == 1 && (KW == 3 || KW == 5) && ox + 6 <= OW && ox - pl >= 0 &&
                ox + 5 - pl + KW - 1 < W) {
                (KW == 3 ? depthwise6s1k3_avx2 : depthwise6s1k5_avx2)(x + ((oy * sh - pt) * W + (ox - pl)) * C, W, C, CN, w,
                                                                      ky0, ky1, dh, bias, y + (oy * OW + ox) * C, act, p0, p1);
                ox += 5;
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
            // Four 8-lane blocks at a time keep four FMA chains in flight (a 7 × 7 map under a 5 × 5 kernel has
            // no interior run of 4 pixels: every pixel comes here); then two, then one.
            for (; c + 32 <= C8; c += 32) dw1_avx2(4, base, W, C, w, KW, ky0, ky1, kx0, kx1, dh, dw, bias, out, c, act, lo, hi);
            for (; c + 16 <= C8; c += 16) dw1_avx2(2, base, W, C, w, KW, ky0, ky1, kx0, kx1, dh, dw, bias, out, c, act, lo, hi);
            for (; c < C8; c += 8) dw1_avx2(1, base, W, C, w, KW, ky0, ky1, kx0, kx1, dh, dw, bias, out, c, act, lo, hi);
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
#endif

// ---- dispatch ----

void mlk_depthwise(const float *x, int64_t H, int64_t W, int64_t C, const float *w, int64_t KH, int64_t KW,
                   const float *bias, float *y, int64_t oy0, int64_t oy1, int64_t OW, int64_t sh, int64_t sw,
                   int64_t dh, int64_t dw, int64_t pt, int64_t pl, int act, float p0, float p1) {
    mlk_depthwise_channels(x, H, W, C, w, KH, KW, bias, y, oy0, oy1, OW, sh, sw, dh, dw, pt, pl, act, p0, p1, 0, C);
}

void mlk_depthwise_channels(const float *x, int64_t H, int64_t W, int64_t C, const float *w, int64_t KH, int64_t KW,
                            const float *bias, float *y, int64_t oy0, int64_t oy1, int64_t OW, int64_t sh, int64_t sw,
                            int64_t dh, int64_t dw, int64_t pt, int64_t pl, int act, float p0, float p1,
                            int64_t ch0, int64_t ch1) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) {
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
