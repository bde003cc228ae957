// Softmax along an axis: portable C, AVX2 and AVX-512 side by side. One definition for every variant and every split
// of the lanes across threads, so they all give the same bits:
//   m = the largest value (NaN never counts as larger), e_j = mlk_expf(x_j − m),
//   S = Σ e_j in double as 16 partial sums (e_j into sum j mod 16, each in j order), then the 16 added in order,
//   y_j = e_j / (float)S.
// The double sum keeps a peaked row of 18,385 classes (PP-OCR's) right: in float the small terms vanish against the
// large one (4e-4 off). Sixteen partial sums let a row be summed with vectors along it; up to 16 values the sum is
// simply the j-order one. The sign of a zero maximum cannot change a result (x − (+0) and x − (−0) are equal for
// x ≠ 0 and both exp to 1 at x = ±0), so the maximum may be taken in any order.
#include "CMLToolKernels.h"
#include "isa.h"
#include "vec.h"

#define SOFTMAX_PARTS 16

// ---- portable ----

// One lane: len values `stride` apart. The body is compiled twice: portable, and for AVX2 + FMA levels, whose copy
// has mlk_expf's fused multiply-adds in hardware (the portable one calls libm's fmaf: 23 ns a value).
#define SOFTMAX_LANE_BODY                                                                                       \
    float m = -INFINITY;                                                                                       \
    for (int64_t j = 0; j < len; j++) m = x[j * stride] > m ? x[j * stride] : m;                               \
    double part[SOFTMAX_PARTS] = {0};                                                                          \
    for (int64_t j = 0; j < len; j++) {                                                                        \
        float e = mlk_expf(x[j * stride] - m);                                                                 \
        y[j * stride] = e;                                                                                     \
        part[j % SOFTMAX_PARTS] += (double)e;                                                                  \
    }                                                                                                          \
    double sum = 0;                                                                                            \
    for (int k = 0; k < SOFTMAX_PARTS; k++) sum += part[k];                                                    \
    float total = (float)sum;                                                                                  \
    for (int64_t j = 0; j < len; j++) y[j * stride] /= total;

static void softmax_lane(const float *x, float *y, int64_t len, int64_t stride) { SOFTMAX_LANE_BODY }

// ---- AVX2 + FMA ----
#if MLK_X86
MLK_AVX2 static void softmax_lane_avx2(const float *x, float *y, int64_t len, int64_t stride) { SOFTMAX_LANE_BODY }

MLK_AVX2 static void softmax_row_avx2(const float *x, float *y, int64_t len);
MLK_AVX512 static void softmax_row_avx512(const float *x, float *y, int64_t len);

// A lane of a middle axis with fewer than 8 lanes beside it (a softmax over 4 classes in NHWC): copied into a row,
// where vectors run along it, when it fits on the stack; the same bits as softmax_lane either way.
#define SOFTMAX_LANE_ROOM 4096
MLK_AVX2 static void softmax_strided_lane(const float *x, float *y, int64_t len, int64_t stride) {
    if (len > SOFTMAX_LANE_ROOM || len < SOFTMAX_PARTS) { softmax_lane_avx2(x, y, len, stride); return; }
    float row[SOFTMAX_LANE_ROOM];
    for (int64_t j = 0; j < len; j++) row[j] = x[j * stride];
    if (mlk_cpu_has(MLK_CPU_AVX512)) softmax_row_avx512(row, row, len);
    else softmax_row_avx2(row, row, len);
    for (int64_t j = 0; j < len; j++) y[j * stride] = row[j];
}

// Adds 8 floats to 8 double sums (lanes 0–3 in lo, 4–7 in hi).
MLK_AVX2 static inline void add_wide(__m256d *lo, __m256d *hi, __m256 v) {
    *lo = _mm256_add_pd(*lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    *hi = _mm256_add_pd(*hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

// The same comparison as the scalar `x > m ? x : m` (NaN lanes keep m).
MLK_AVX2 static inline __m256 max8(__m256 m, __m256 v) {
    return _mm256_blendv_ps(m, v, _mm256_cmp_ps(v, m, _CMP_GT_OQ));
}

// 8 lanes side by side (inner ≥ 8). Partial sum k of each lane is taken over j = k, k + 16, … from y, then added to
// the total in k order (a partial sum of no values is +0, which adds nothing: the e_j are never −0).
MLK_AVX2 static void softmax_avx2(const float *x, float *y, int64_t len, int64_t inner, int64_t i0, int64_t i1) {
    int64_t i = i0;
    for (; i + 8 <= i1; i += 8) {
        __m256 m = _mm256_set1_ps(-INFINITY);
        for (int64_t j = 0; j < len; j++) m = max8(m, _mm256_loadu_ps(x + j * inner + i));
        for (int64_t j = 0; j < len; j++)
            _mm256_storeu_ps(y + j * inner + i, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j * inner + i), m)));
        __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
        for (int64_t k = 0; k < SOFTMAX_PARTS && k < len; k++) {
            __m256d plo = _mm256_setzero_pd(), phi = _mm256_setzero_pd();
            for (int64_t j = k; j < len; j += SOFTMAX_PARTS) add_wide(&plo, &phi, _mm256_loadu_ps(y + j * inner + i));
            lo = _mm256_add_pd(lo, plo);
            hi = _mm256_add_pd(hi, phi);
        }
        __m256 sum = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
        for (int64_t j = 0; j < len; j++)
            _mm256_storeu_ps(y + j * inner + i, _mm256_div_ps(_mm256_loadu_ps(y + j * inner + i), sum));
    }
    for (; i < i1; i++) softmax_strided_lane(x + i, y + i, len, inner);
}

// Rows shorter than 16 (a few classes each; the sum is then the j-order one): 8 rows gathered side by side.
MLK_AVX2 static void softmax_short_rows_avx2(const float *x, float *y, int64_t len, int64_t l0, int64_t l1) {
    int64_t l = l0;
    float e[SOFTMAX_PARTS * 8];
    __m256i rows = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)len));
    for (; l + 8 <= l1; l += 8) {
        const float *xl = x + l * len;
        __m256 m = _mm256_set1_ps(-INFINITY);
        for (int64_t j = 0; j < len; j++) m = max8(m, _mm256_i32gather_ps(xl + j, rows, 4));
        __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
        for (int64_t j = 0; j < len; j++) {
            __m256 v = exp8(_mm256_sub_ps(_mm256_i32gather_ps(xl + j, rows, 4), m));
            _mm256_storeu_ps(e + j * 8, v);
            add_wide(&lo, &hi, v);
        }
        __m256 sum = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
        for (int64_t j = 0; j < len; j++) _mm256_storeu_ps(e + j * 8, _mm256_div_ps(_mm256_loadu_ps(e + j * 8), sum));
        float *yl = y + l * len;
        for (int r = 0; r < 8; r++)
            for (int64_t j = 0; j < len; j++) yl[r * len + j] = e[j * 8 + r];
    }
    for (; l < l1; l++) softmax_lane_avx2(x + l * len, y + l * len, len, 1);
}

// The largest of 8 lanes and a scalar tail, with the scalar comparison.
MLK_AVX2 static float row_max8(__m256 m, const float *x, int64_t from, int64_t len) {
    float lanes[8];
    _mm256_storeu_ps(lanes, m);
    float r = -INFINITY;
    for (int k = 0; k < 8; k++) r = lanes[k] > r ? lanes[k] : r;
    for (int64_t j = from; j < len; j++) r = x[j] > r ? x[j] : r;
    return r;
}

// One contiguous row: vectors along it, 16 values (two vectors, four double sums) at a time, the tail scalar.
MLK_AVX2 static void softmax_row_avx2(const float *x, float *y, int64_t len) {
    int64_t full = len / SOFTMAX_PARTS * SOFTMAX_PARTS;
    __m256 vm = _mm256_set1_ps(-INFINITY);
    for (int64_t j = 0; j < full; j += 8) vm = max8(vm, _mm256_loadu_ps(x + j));
    float m = row_max8(vm, x, full, len);
    __m256 mv = _mm256_set1_ps(m);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd(), s2 = _mm256_setzero_pd(), s3 = _mm256_setzero_pd();
    for (int64_t j = 0; j < full; j += SOFTMAX_PARTS) {
        __m256 a = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), mv));
        __m256 b = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j + 8), mv));
        _mm256_storeu_ps(y + j, a);
        _mm256_storeu_ps(y + j + 8, b);
        add_wide(&s0, &s1, a);
        add_wide(&s2, &s3, b);
    }
    double part[SOFTMAX_PARTS];
    _mm256_storeu_pd(part, s0);
    _mm256_storeu_pd(part + 4, s1);
    _mm256_storeu_pd(part + 8, s2);
    _mm256_storeu_pd(part + 12, s3);
    for (int64_t j = full; j < len; j++) {
        float e = mlk_expf(x[j] - m);
        y[j] = e;
        part[j % SOFTMAX_PARTS] += (double)e;
    }
    double sum = 0;
    for (int k = 0; k < SOFTMAX_PARTS; k++) sum += part[k];
    float total = (float)sum;
    __m256 tv = _mm256_set1_ps(total);
    int64_t j = 0;
    for (; j + 8 <= len; j += 8) _mm256_storeu_ps(y + j, _mm256_div_ps(_mm256_loadu_ps(y + j), tv));
    for (; j < len; j++) y[j] /= total;
}

// ---- AVX-512 ----

// One contiguous row, 16 values a time (lanes 0–7 and 8–15 of the partial sums in two vectors of doubles); the
// tail a masked vector whose missing lanes add +0.
MLK_AVX512 static void softmax_row_avx512(const float *x, float *y, int64_t len) {
    int64_t full = len / SOFTMAX_PARTS * SOFTMAX_PARTS;
    __mmask16 tail = (__mmask16)((1u << (len - full)) - 1u);
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 vm = ninf;
    for (int64_t j = 0; j < full; j += 16) {
        __m512 v = _mm512_loadu_ps(x + j);
        vm = _mm512_mask_mov_ps(vm, _mm512_cmp_ps_mask(v, vm, _CMP_GT_OQ), v);
    }
    __m512 v = _mm512_mask_loadu_ps(ninf, tail, x + full);
    vm = _mm512_mask_mov_ps(vm, _mm512_cmp_ps_mask(v, vm, _CMP_GT_OQ), v);
    float lanes[16];
    _mm512_storeu_ps(lanes, vm);
    float m = -INFINITY;
    for (int k = 0; k < 16; k++) m = lanes[k] > m ? lanes[k] : m;
    __m512 mv = _mm512_set1_ps(m);
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    for (int64_t j = 0; j < full; j += 16) {
        __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), mv));
        _mm512_storeu_ps(y + j, e);
        lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    }
    if (tail) {
        __m512 e = _mm512_maskz_mov_ps(tail, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + full), mv)));
        _mm512_mask_storeu_ps(y + full, tail, e);
        lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    }
    double part[SOFTMAX_PARTS];
    _mm512_storeu_pd(part, lo);
    _mm512_storeu_pd(part + 8, hi);
    double sum = 0;
    for (int k = 0; k < SOFTMAX_PARTS; k++) sum += part[k];
    __m512 tv = _mm512_set1_ps((float)sum);
    for (int64_t j = 0; j < full; j += 16) _mm512_storeu_ps(y + j, _mm512_div_ps(_mm512_loadu_ps(y + j), tv));
    if (tail) _mm512_mask_storeu_ps(y + full, tail, _mm512_div_ps(_mm512_maskz_loadu_ps(tail, y + full), tv));
}
#endif

// ---- attention scores: y = x / divisor + addend, then the softmax of y in place ----

static void scale_add_portable(const float *x, float *y, int64_t len, float divisor, const float *addend) {
    for (int64_t j = 0; j < len; j++) y[j] = x[j] / divisor + addend[j];
}

#if MLK_X86
MLK_AVX2 static void scale_add_avx2(const float *x, float *y, int64_t len, float divisor, const float *addend) {
    const __m256 d = _mm256_set1_ps(divisor);
    int64_t j = 0;
    for (; j + 8 <= len; j += 8)
        _mm256_storeu_ps(y + j, _mm256_add_ps(_mm256_div_ps(_mm256_loadu_ps(x + j), d), _mm256_loadu_ps(addend + j)));
    scale_add_portable(x + j, y + j, len - j, divisor, addend + j);
}

MLK_AVX512 static void scale_add_avx512(const float *x, float *y, int64_t len, float divisor, const float *addend) {
    const __m512 d = _mm512_set1_ps(divisor);
    int64_t j = 0;
    for (; j + 16 <= len; j += 16)
        _mm512_storeu_ps(y + j, _mm512_add_ps(_mm512_div_ps(_mm512_loadu_ps(x + j), d), _mm512_loadu_ps(addend + j)));
    scale_add_portable(x + j, y + j, len - j, divisor, addend + j);
}
#endif

void mlk_softmax_row_scaled(const float *x, float *y, int64_t len, float divisor, const float *addend) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX512)) scale_add_avx512(x, y, len, divisor, addend);
    else if (mlk_cpu_has(MLK_CPU_AVX2)) scale_add_avx2(x, y, len, divisor, addend);
    else
#endif
        scale_add_portable(x, y, len, divisor, addend);
    mlk_softmax_rows(y, y, len, 0, 1);
}

// ---- dispatch ----

void mlk_softmax(const float *x, float *y, int64_t len, int64_t inner, int64_t i0, int64_t i1) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { softmax_avx2(x, y, len, inner, i0, i1); return; }
#endif
    for (int64_t i = i0; i < i1; i++) softmax_lane(x + i, y + i, len, inner);
}

void mlk_softmax_rows(const float *x, float *y, int64_t len, int64_t r0, int64_t r1) {
#if MLK_X86
    if (len < SOFTMAX_PARTS && mlk_cpu_has(MLK_CPU_AVX2)) { softmax_short_rows_avx2(x, y, len, r0, r1); return; }
    if (mlk_cpu_has(MLK_CPU_AVX512)) {
        for (int64_t r = r0; r < r1; r++) softmax_row_avx512(x + r * len, y + r * len, len);
        return;
    }
    if (mlk_cpu_has(MLK_CPU_AVX2)) {
        for (int64_t r = r0; r < r1; r++) softmax_row_avx2(x + r * len, y + r * len, len);
        return;
    }
#endif
    for (int64_t r = r0; r < r1; r++) softmax_lane(x + r * len, y + r * len, len, 1);
}
