// Hot CPU kernels for MLToolEngine. Each has a portable C version and AVX2+FMA (and, for GEMM and depthwise,
// AVX-512F) versions compiled with per-function target attributes; the choice is made once at run time from the
// CPU's features (__builtin_cpu_supports), so the binary runs, slower, on any x86-64 (or other) CPU.
#ifndef CMLTOOLKERNELS_H
#define CMLTOOLKERNELS_H
#include <stdint.h>

// Activation codes for the fused epilogues; p0/p1 are the parameters.
enum {
    MLK_ACT_NONE = 0,
    MLK_ACT_RELU = 1,
    MLK_ACT_CLIP = 2,          // min(max(x, p0), p1)
    MLK_ACT_LEAKY = 3,         // x < 0 ? p0·x : x
    MLK_ACT_SIGMOID = 4,
    MLK_ACT_HARDSIGMOID = 5,   // max(0, min(1, p0·x + p1))
    MLK_ACT_HARDSWISH = 6,     // x · relu6(x + 3) / 6
    MLK_ACT_SWISH = 7,         // x · sigmoid(x)
    MLK_ACT_TANH = 8
};

/// 1 when the fast AVX2+FMA kernels are in use.
int mlk_uses_avx2_fma(void);

/// The kernels in use: 0 portable C, 1 AVX2+FMA, 2 AVX-512F.
int mlk_simd_level(void);

/// Uses at most `level` (clamped to what the CPU has; -1 = the best it has) and returns the previous level. For
/// tests, which run every kernel variant the machine can run.
int mlk_set_simd_level(int level);

/// y (rows, cols) row-major: y[r][c] = act(y[r][c] + bias[c]); bias may be NULL.
void mlk_bias_act(float *y, int64_t rows, int64_t cols, const float *bias, int act, float p0, float p1);

/// Depthwise convolution of one image, channel multiplier 1, output rows [oy0, oy1).
/// x (H, W, C), w (KH, KW, C), bias (C) or NULL, y (OH, OW, C); pads top/left; activation fused.
void mlk_depthwise(const float *x, int64_t H, int64_t W, int64_t C,
                   const float *w, int64_t KH, int64_t KW, const float *bias,
                   float *y, int64_t oy0, int64_t oy1, int64_t OW,
                   int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl,
                   int act, float p0, float p1);

/// im2col of one image for one channel group: x (H, W, C) → cols (OH·OW, KH·KW·cg), reading channels [c0, c0+cg).
/// Padding reads as 0.
void mlk_im2col(const float *x, int64_t H, int64_t W, int64_t C, int64_t c0, int64_t cg,
                int64_t KH, int64_t KW, float *cols, int64_t OH, int64_t OW,
                int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl);

/// Floats needed to pack a (K, N) matrix into 16-column panels.
int64_t mlk_packed_count(int64_t K, int64_t N);

/// Packs w (K, N) row-major into panels of 16 columns: panel p holds w[k][16p ..< 16p+16] for every k, zero-padded.
void mlk_pack(const float *w, int64_t K, int64_t N, float *packed);

/// Rows [m0, m1) of y (M, N; row stride ldy) = act(a (M, K; row stride lda) · B + bias), B packed by mlk_pack;
/// bias may be NULL. Callers split rows across threads; each row's result does not depend on the split.
void mlk_gemm_packed(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N, int64_t K,
                     const float *bias, float *y, int64_t ldy, int act, float p0, float p1);

/// y[i] = act(a[i] + b[i]) for n elements.
void mlk_add_act(const float *a, const float *b, float *y, int64_t n, int act, float p0, float p1);

#endif
