// See include/CMLToolTrainKernels.h. The two products of the sparse softmax objective:
// - forward Z = X·W from the rows of X (CSR), gathering rows of W;
// - the gradient's Xᵀ·G from the columns of X (CSC): each output row is gathered from the rows of G (n × k, a few
//   MB, cache-resident) and written once, instead of scattering every non-zero into the d × k gradient (tens of
//   MB, one cache miss each).
#include "CMLToolTrainKernels.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif

// The portable loops round x·w before adding it, like the Swift references, on every target.
#pragma STDC FP_CONTRACT OFF

// A mask of the first `n` (1...8) lanes.
#if defined(__x86_64__)
__attribute__((target("avx2"))) static inline __m256i first_lanes(int32_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif

static void forward_portable(const int64_t *offsets, const int32_t *columns, const float *values, int64_t row0,
                             int64_t row1, const float *w, int32_t k, float *out) {
    for (int64_t r = row0; r < row1; r++) {
        float *dst = out + (r - row0) * k;
        for (int32_t j = 0; j < k; j++) dst[j] = 0;
        for (int64_t q = offsets[r]; q < offsets[r + 1]; q++) {
            const float x = values[q], *src = w + (int64_t)columns[q] * k;
            for (int32_t j = 0; j < k; j++) dst[j] += x * src[j];
        }
    }
}

#if defined(__x86_64__)
// Classes j0..<j0+8·nv of rows row0..<row1 in one pass over each row's non-zeros, nv ≤ 3 accumulators, the last
// vector masked by `tail`. Each lane computes s = fmaf(x, w, s) in the row's order. (One pass, not one per 8
// classes: the row's misses on W overlap; Debian descriptions, 20 classes: 12 → 5.7 ms. Software prefetch of the
// rows of W a few non-zeros ahead made it slower, 6.0-6.8 ms.)
__attribute__((target("avx2,fma"), always_inline))
static inline void forward_block(const int64_t *offsets, const int32_t *columns, const float *values, int64_t row0,
                                 int64_t row1, const float *w, int32_t k, float *out, int32_t j0, const int nv,
                                 __m256i tail) {
    for (int64_t r = row0; r < row1; r++) {
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps();
        const int64_t lo = offsets[r], hi = offsets[r + 1];
        for (int64_t q = lo; q < hi; q++) {
            const float *src = w + (int64_t)columns[q] * k + j0;
            const __m256 x = _mm256_broadcast_ss(values + q);
            if (nv == 1) {
                s0 = _mm256_fmadd_ps(x, _mm256_maskload_ps(src, tail), s0);
            } else if (nv == 2) {
                s0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(src), s0);
                s1 = _mm256_fmadd_ps(x, _mm256_maskload_ps(src + 8, tail), s1);
            } else {
                s0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(src), s0);
                s1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(src + 8), s1);
                s2 = _mm256_fmadd_ps(x, _mm256_maskload_ps(src + 16, tail), s2);
            }
        }
        float *dst = out + (r - row0) * k + j0;
        if (nv == 1) {
            _mm256_maskstore_ps(dst, tail, s0);
        } else if (nv == 2) {
            _mm256_storeu_ps(dst, s0);
            _mm256_maskstore_ps(dst + 8, tail, s1);
        } else {
            _mm256_storeu_ps(dst, s0);
            _mm256_storeu_ps(dst + 8, s1);
            _mm256_maskstore_ps(dst + 16, tail, s2);
        }
    }
}

__attribute__((target("avx2,fma")))
static void forward_avx2(const int64_t *offsets, const int32_t *columns, const float *values, int64_t row0,
                         int64_t row1, const float *w, int32_t k, float *out) {
    // Blocks of up to 24 classes (three registers); each block is one pass over the rows' non-zeros.
    for (int32_t j0 = 0; j0 < k; j0 += 24) {
        const int32_t width = k - j0 < 24 ? k - j0 : 24;
        const int nv = (width + 7) / 8;
        const __m256i tail = first_lanes(width - 8 * (nv - 1));
        if (nv == 1) forward_block(offsets, columns, values, row0, row1, w, k, out, j0, 1, tail);
        else if (nv == 2) forward_block(offsets, columns, values, row0, row1, w, k, out, j0, 2, tail);
        else forward_block(offsets, columns, values, row0, row1, w, k, out, j0, 3, tail);
    }
}
#endif

void mlt_sparse_forward(const int64_t *offsets, const int32_t *columns, const float *values, int64_t row0,
                        int64_t row1, const float *w, int32_t k, float *out, int level) {
#if defined(__x86_64__)
    if (mlt_simd_level(level) == 1) { forward_avx2(offsets, columns, values, row0, row1, w, k, out); return; }
#endif
    forward_portable(offsets, columns, values, row0, row1, w, k, out);
}

static void transposed_portable(const int64_t *col_offsets, const int32_t *rows, const float *values, int64_t col0,
                                int64_t col1, const float *g, int32_t k, float *out) {
    for (int64_t c = col0; c < col1; c++) {
        float *dst = out + (c - col0) * k;
        for (int32_t j = 0; j < k; j++) dst[j] = 0;
        for (int64_t q = col_offsets[c]; q < col_offsets[c + 1]; q++) {
            const float x = values[q], *src = g + (int64_t)rows[q] * k;
            for (int32_t j = 0; j < k; j++) dst[j] += x * src[j];
        }
    }
}

#if defined(__x86_64__)
// Classes j0..<j0+8·nv of columns col0..<col1, nv ≤ 3 accumulators; the last vector is masked by `tail`. Multiply,
// then add (no FMA: AVX2 without "fma"), so that every lane rounds like the scatter loop it replaces.
__attribute__((target("avx2"), always_inline))
static inline void transposed_block(const int64_t *col_offsets, const int32_t *rows, const float *values,
                                    int64_t col0, int64_t col1, const float *g, int32_t k, float *out, int32_t j0,
                                    const int nv, __m256i tail) {
    for (int64_t c = col0; c < col1; c++) {
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps();
        const int64_t lo = col_offsets[c], hi = col_offsets[c + 1];
        for (int64_t q = lo; q < hi; q++) {
            const float *src = g + (int64_t)rows[q] * k + j0;
            const __m256 x = _mm256_broadcast_ss(values + q);
            if (nv == 1) {
                s0 = _mm256_add_ps(s0, _mm256_mul_ps(x, _mm256_maskload_ps(src, tail)));
            } else if (nv == 2) {
                s0 = _mm256_add_ps(s0, _mm256_mul_ps(x, _mm256_loadu_ps(src)));
                s1 = _mm256_add_ps(s1, _mm256_mul_ps(x, _mm256_maskload_ps(src + 8, tail)));
            } else {
                s0 = _mm256_add_ps(s0, _mm256_mul_ps(x, _mm256_loadu_ps(src)));
                s1 = _mm256_add_ps(s1, _mm256_mul_ps(x, _mm256_loadu_ps(src + 8)));
                s2 = _mm256_add_ps(s2, _mm256_mul_ps(x, _mm256_maskload_ps(src + 16, tail)));
            }
        }
        float *dst = out + (c - col0) * k + j0;
        if (nv == 1) {
            _mm256_maskstore_ps(dst, tail, s0);
        } else if (nv == 2) {
            _mm256_storeu_ps(dst, s0);
            _mm256_maskstore_ps(dst + 8, tail, s1);
        } else {
            _mm256_storeu_ps(dst, s0);
            _mm256_storeu_ps(dst + 8, s1);
            _mm256_maskstore_ps(dst + 16, tail, s2);
        }
    }
}

__attribute__((target("avx2")))
static void transposed_avx2(const int64_t *col_offsets, const int32_t *rows, const float *values, int64_t col0,
                            int64_t col1, const float *g, int32_t k, float *out) {
    // Blocks of up to 24 classes (three registers); each block is one pass over the columns' non-zeros.
    for (int32_t j0 = 0; j0 < k; j0 += 24) {
        const int32_t width = k - j0 < 24 ? k - j0 : 24;
        const int nv = (width + 7) / 8;
        const __m256i tail = first_lanes(width - 8 * (nv - 1));
        if (nv == 1) transposed_block(col_offsets, rows, values, col0, col1, g, k, out, j0, 1, tail);
        else if (nv == 2) transposed_block(col_offsets, rows, values, col0, col1, g, k, out, j0, 2, tail);
        else transposed_block(col_offsets, rows, values, col0, col1, g, k, out, j0, 3, tail);
    }
}
#endif

void mlt_sparse_transposed(const int64_t *col_offsets, const int32_t *rows, const float *values, int64_t col0,
                           int64_t col1, const float *g, int32_t k, float *out, int level) {
#if defined(__x86_64__)
    if (mlt_simd_level(level) == 1) { transposed_avx2(col_offsets, rows, values, col0, col1, g, k, out); return; }
#endif
    transposed_portable(col_offsets, rows, values, col0, col1, g, k, out);
}
