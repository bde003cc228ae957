// See include/CMLToolTrainKernels.h. The two products of the sparse softmax objective:
// - forward Z = X·W from the rows of X (CSR), gathering rows of W;
// - the gradient's Xᵀ·G from the columns of X (CSC): each output row is gathered from the rows of G (n × k, a few
//   MB, cache-resident) and written once, instead of scattering every non-zero into the d × k gradient (tens of
//   MB, one cache miss each).
#include "CMLToolTrainKernels.h"
#include "CMLToolCPU.h"
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

// Both products have one shape: out[(r - first)·k + j] = Σ values[q] · dense[index[q]·k + j] over the non-zeros q of
// line r (a row of X with dense = W, or a column of X with dense = G), for r in first..<last.
static void product_portable(const int64_t *offsets, const int32_t *index, const float *values, int64_t first,
                             int64_t last, const float *dense, int32_t k, float *out) {
    for (int64_t r = first; r < last; r++) {
        float *dst = out + (r - first) * k;
        for (int32_t j = 0; j < k; j++) dst[j] = 0;
        for (int64_t q = offsets[r]; q < offsets[r + 1]; q++) {
            const float x = values[q], *src = dense + (int64_t)index[q] * k;
            for (int32_t j = 0; j < k; j++) dst[j] += x * src[j];
        }
    }
}

#if defined(__x86_64__)
#define MLT_FMA(s, x, v) _mm256_fmadd_ps(x, v, s)
#define MLT_MUL_ADD(s, x, v) _mm256_add_ps(s, _mm256_mul_ps(x, v))

// The AVX2 product, one body for two kernels: `name` with the target `features` accumulating with ACC. Classes are
// taken in blocks of up to 24 (three registers, the last vector masked), each block in one pass over every line's
// non-zeros, in the line's order.
#define MLT_PRODUCT_AVX2(name, features, ACC)                                                                       \
    __attribute__((target(features), always_inline)) static inline void name##_block(                               \
        const int64_t *offsets, const int32_t *index, const float *values, int64_t first, int64_t last,             \
        const float *dense, int32_t k, float *out, int32_t j0, const int nv, __m256i tail) {                        \
        for (int64_t r = first; r < last; r++) {                                                                    \
            __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps();                    \
            for (int64_t q = offsets[r]; q < offsets[r + 1]; q++) {                                                 \
                const float *src = dense + (int64_t)index[q] * k + j0;                                              \
                const __m256 x = _mm256_broadcast_ss(values + q);                                                   \
                if (nv == 1) {                                                                                      \
                    s0 = ACC(s0, x, _mm256_maskload_ps(src, tail));                                                 \
                } else if (nv == 2) {                                                                               \
                    s0 = ACC(s0, x, _mm256_loadu_ps(src));                                                          \
                    s1 = ACC(s1, x, _mm256_maskload_ps(src + 8, tail));                                             \
                } else {                                                                                            \
                    s0 = ACC(s0, x, _mm256_loadu_ps(src));                                                          \
                    s1 = ACC(s1, x, _mm256_loadu_ps(src + 8));                                                      \
                    s2 = ACC(s2, x, _mm256_maskload_ps(src + 16, tail));                                            \
                }                                                                                                   \
            }                                                                                                       \
            float *dst = out + (r - first) * k + j0;                                                                \
            if (nv == 1) {                                                                                          \
                _mm256_maskstore_ps(dst, tail, s0);                                                                 \
            } else if (nv == 2) {                                                                                   \
                _mm256_storeu_ps(dst, s0);                                                                          \
                _mm256_maskstore_ps(dst + 8, tail, s1);                                                             \
            } else {                                                                                                \
                _mm256_storeu_ps(dst, s0);                                                                          \
                _mm256_storeu_ps(dst + 8, s1);                                                                      \
                _mm256_maskstore_ps(dst + 16, tail, s2);                                                            \
            }                                                                                                       \
        }                                                                                                           \
    }                                                                                                               \
    __attribute__((target(features))) static void name(const int64_t *offsets, const int32_t *index,              \
                                                        const float *values, int64_t first, int64_t last,           \
                                                        const float *dense, int32_t k, float *out) {                \
        for (int32_t j0 = 0; j0 < k; j0 += 24) {                                                                    \
            const int32_t width = k - j0 < 24 ? k - j0 : 24;                                                        \
            const int nv = (width + 7) / 8;                                                                         \
            const __m256i tail = first_lanes(width - 8 * (nv - 1));                                                 \
            if (nv == 1) name##_block(offsets, index, values, first, last, dense, k, out, j0, 1, tail);              \
            else if (nv == 2) name##_block(offsets, index, values, first, last, dense, k, out, j0, 2, tail);        \
            else name##_block(offsets, index, values, first, last, dense, k, out, j0, 3, tail);                     \
        }                                                                                                           \
    }

// Forward: s = fmaf(x, w, s) per lane. (One pass per row, not one per 8 classes: the row's misses on W overlap;
// Debian descriptions, 20 classes: 12 → 5.7 ms. Software prefetch of the rows of W a few non-zeros ahead made it
// slower, 6.0-6.8 ms.)
MLT_PRODUCT_AVX2(forward_avx2, "avx2,fma", MLT_FMA)
// Xᵀ·G: multiply, then add (no FMA: the target has no "fma"), so that every lane rounds like the scatter loop it
// replaces.
MLT_PRODUCT_AVX2(transposed_avx2, "avx2", MLT_MUL_ADD)
#endif

void mlt_sparse_forward(const int64_t *offsets, const int32_t *columns, const float *values, int64_t row0,
                        int64_t row1, const float *w, int32_t k, float *out, int level) {
#if defined(__x86_64__)
    if (mlk_cpu_resolve(level) >= MLK_CPU_AVX2) { forward_avx2(offsets, columns, values, row0, row1, w, k, out); return; }
#endif
    product_portable(offsets, columns, values, row0, row1, w, k, out);
}

void mlt_sparse_transposed(const int64_t *col_offsets, const int32_t *rows, const float *values, int64_t col0,
                           int64_t col1, const float *g, int32_t k, float *out, int level) {
#if defined(__x86_64__)
    if (mlk_cpu_resolve(level) >= MLK_CPU_AVX2) { transposed_avx2(col_offsets, rows, values, col0, col1, g, k, out); return; }
#endif
    product_portable(col_offsets, rows, values, col0, col1, g, k, out);
}
