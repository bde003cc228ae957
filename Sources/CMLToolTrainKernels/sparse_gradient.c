// See include/CMLToolTrainKernels.h. The gradient's product Xᵀ·G of the sparse softmax objective, from the
// columns of X (CSC): each output row is gathered from the rows of G (n × k, a few MB, cache-resident) and written
// once, instead of scattering every non-zero into the d × k gradient (tens of MB, one cache miss each).
#include "CMLToolTrainKernels.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif

// Every level computes s = s + x·g in float, rounded twice, like the Swift reference: no fused multiply-add, so
// all levels give the same bits.
#pragma STDC FP_CONTRACT OFF

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
// Classes j0..<j0+8·nv of columns col0..<col1, nv ≤ 3 accumulators; the last vector is masked by `tail`.
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
        const int nv = (width + 7) / 8, last = width - 8 * (nv - 1);
        const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(last), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
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
