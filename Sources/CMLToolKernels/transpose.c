// A plane transposed: the step of a transpose that moves the input's innermost axis away from the output's (a key
// matrix for Q·Kᵀ, an NHWC ↔ NCHW move). Portable C in 8 × 8 tiles (each x row read and y row written in cache-line
// pieces), and AVX2 transposing each tile in registers. A copy: every level gives the same values.
#include "CMLToolKernels.h"
#include "isa.h"

#define TILE 8

static void tile_portable(const float *x, int64_t ldx, float *y, int64_t ldy, int64_t rows, int64_t cols) {
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows; i++) y[i * ldy + j] = x[j * ldx + i];
}

static void transpose_portable(const float *x, int64_t ldx, float *y, int64_t ldy, int64_t rows, int64_t cols) {
    for (int64_t i0 = 0; i0 < rows; i0 += TILE)
        for (int64_t j0 = 0; j0 < cols; j0 += TILE)
            tile_portable(x + j0 * ldx + i0, ldx, y + i0 * ldy + j0, ldy, rows - i0 < TILE ? rows - i0 : TILE,
                          cols - j0 < TILE ? cols - j0 : TILE);
}

#if MLK_X86
// One full 8 × 8 tile: 8 rows of x in, 8 rows of y out.
MLK_AVX2 static inline void tile8_avx2(const float *x, int64_t ldx, float *y, int64_t ldy) {
    __m256 r0 = _mm256_loadu_ps(x), r1 = _mm256_loadu_ps(x + ldx), r2 = _mm256_loadu_ps(x + 2 * ldx);
    __m256 r3 = _mm256_loadu_ps(x + 3 * ldx), r4 = _mm256_loadu_ps(x + 4 * ldx), r5 = _mm256_loadu_ps(x + 5 * ldx);
    __m256 r6 = _mm256_loadu_ps(x + 6 * ldx), r7 = _mm256_loadu_ps(x + 7 * ldx);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3);
    __m256 t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(y, _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_storeu_ps(y + ldy, _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_storeu_ps(y + 2 * ldy, _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_storeu_ps(y + 3 * ldy, _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_storeu_ps(y + 4 * ldy, _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_storeu_ps(y + 5 * ldy, _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_storeu_ps(y + 6 * ldy, _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_storeu_ps(y + 7 * ldy, _mm256_permute2f128_ps(s3, s7, 0x31));
}

MLK_AVX2 static void transpose_avx2(const float *x, int64_t ldx, float *y, int64_t ldy, int64_t rows, int64_t cols) {
    for (int64_t i0 = 0; i0 < rows; i0 += TILE)
        for (int64_t j0 = 0; j0 < cols; j0 += TILE) {
            const float *xt = x + j0 * ldx + i0;
            float *yt = y + i0 * ldy + j0;
            if (rows - i0 >= TILE && cols - j0 >= TILE) tile8_avx2(xt, ldx, yt, ldy);
            else tile_portable(xt, ldx, yt, ldy, rows - i0 < TILE ? rows - i0 : TILE, cols - j0 < TILE ? cols - j0 : TILE);
        }
}
#endif

void mlk_transpose_plane(const float *x, int64_t ldx, float *y, int64_t ldy, int64_t rows, int64_t cols) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { transpose_avx2(x, ldx, y, ldy, rows, cols); return; }
#endif
    transpose_portable(x, ldx, y, ldy, rows, cols);
}
