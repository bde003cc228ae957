// Element-wise kernels: bias + activation in place, add + activation, softmax and layer norm; portable C and AVX2 side
// by side.
#include "CMLToolKernels.h"
#include "isa.h"
#include "vec.h"

// ---- portable ----

static void bias_act_portable(float *y, int64_t rows, int64_t cols, const float *bias, int act, float p0, float p1) {
    for (int64_t r = 0; r < rows; r++) {
        float *row = y + r * cols;
        for (int64_t c = 0; c < cols; c++) row[c] = act_scalar(row[c] + (bias ? bias[c] : 0), act, p0, p1);
    }
}

static void add_act_portable(const float *a, const float *b, float *y, int64_t n, int act, float p0, float p1) {
    for (int64_t i = 0; i < n; i++) y[i] = act_scalar(a[i] + b[i], act, p0, p1);
}

// Softmax of one lane: len values `stride` apart. Sum in j order in double (a float sum of a peaked row of 18,385
// classes, PP-OCR's, drops the small terms against the large one: 4e-4 off), then divide by the sum rounded to
// float; exp = mlk_expf, so every variant gives these bits.
static void softmax_lane(const float *x, float *y, int64_t len, int64_t stride) {
    float m = -INFINITY;
    for (int64_t j = 0; j < len; j++) m = x[j * stride] > m ? x[j * stride] : m;
    double sum = 0;
    for (int64_t j = 0; j < len; j++) { float e = mlk_expf(x[j * stride] - m); y[j * stride] = e; sum += (double)e; }
    float total = (float)sum;
    for (int64_t j = 0; j < len; j++) y[j * stride] /= total;
}

static void softmax_portable(const float *x, float *y, int64_t len, int64_t inner, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) softmax_lane(x + i, y + i, len, inner);
}

// Layer norm of rows [r0, r1) of x (rows, len): the mean and the mean square deviation each summed in 8 lanes
// (element j into lane j mod 8, the lanes then added in order, then the tail), y = (x − mean)·inv·scale + bias with
// inv = 1/√(variance + ε), every product rounded before its add, so the AVX2 form gives these bits.
static float lane_sum(const float acc[8]) {
    float s = acc[0];
    for (int k = 1; k < 8; k++) s += acc[k];
    return s;
}

static void layer_norm_portable(const float *x, float *y, int64_t len, int64_t r0, int64_t r1, const float *scale,
                                const float *bias, float eps) {
    int64_t vectors = len / 8 * 8;
    for (int64_t r = r0; r < r1; r++) {
        const float *row = x + r * len;
        float *out = y + r * len;
        float acc[8] = {0};
        for (int64_t j = 0; j < vectors; j++) acc[j % 8] += row[j];
        float sum = lane_sum(acc);
        for (int64_t j = vectors; j < len; j++) sum += row[j];
        float mean = sum / (float)len;
        float sq[8] = {0};
        for (int64_t j = 0; j < vectors; j++) { float d = row[j] - mean; float dd = d * d; sq[j % 8] += dd; }
        float squares = lane_sum(sq);
        for (int64_t j = vectors; j < len; j++) { float d = row[j] - mean; float dd = d * d; squares += dd; }
        float inv = 1.0f / sqrtf(squares / (float)len + eps);
        for (int64_t j = 0; j < len; j++) {
            float v = (row[j] - mean) * inv;
            if (scale) v *= scale[j];
            if (bias) v += bias[j];
            out[j] = v;
        }
    }
}

// ---- AVX2 + FMA ----
#if MLK_X86

// Adds 8 floats to 8 double sums (lanes 0–3 in lo, 4–7 in hi): softmax_lane's double sum, lane by lane.
MLK_AVX2 static inline void add_wide(__m256d *lo, __m256d *hi, __m256 v) {
    *lo = _mm256_add_pd(*lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    *hi = _mm256_add_pd(*hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

// The 8 double sums rounded to float, in lane order.
MLK_AVX2 static inline __m256 narrow(__m256d lo, __m256d hi) {
    return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
}

// 8 lanes side by side (inner ≥ 8): the same max, mlk_expf, j-order sum and division per lane as softmax_lane.
MLK_AVX2 static void softmax_avx2(const float *x, float *y, int64_t len, int64_t inner, int64_t i0, int64_t i1) {
    int64_t i = i0;
    for (; i + 8 <= i1; i += 8) {
        __m256 m = _mm256_set1_ps(-INFINITY);
        // Same comparison as the scalar `x > m ? x : m` (NaN lanes keep m).
        for (int64_t j = 0; j < len; j++) {
            __m256 v = _mm256_loadu_ps(x + j * inner + i);
            m = _mm256_blendv_ps(m, v, _mm256_cmp_ps(v, m, _CMP_GT_OQ));
        }
        __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
        for (int64_t j = 0; j < len; j++) {
            __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j * inner + i), m));
            _mm256_storeu_ps(y + j * inner + i, e);
            add_wide(&lo, &hi, e);
        }
        __m256 sum = narrow(lo, hi);
        for (int64_t j = 0; j < len; j++)
            _mm256_storeu_ps(y + j * inner + i, _mm256_div_ps(_mm256_loadu_ps(y + j * inner + i), sum));
    }
    for (; i < i1; i++) softmax_lane(x + i, y + i, len, inner);
}

// The last axis: 8 rows of len values gathered side by side, the same per-row operations in the same order as
// softmax_lane. Rows longer than 512 (a classifier's 1,000 classes: one row per image) go one at a time; attention
// scores (a row per query, one value per key: 128 at sequence 128) go 8 at a time.
MLK_AVX2 static void softmax_rows_avx2(const float *x, float *y, int64_t len, int64_t l0, int64_t l1) {
    int64_t l = l0;
    if (len <= 512 && len * 8 <= INT32_MAX) {
        float e[512 * 8];
        __m256i rows = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)len));
        for (; l + 8 <= l1; l += 8) {
            const float *xl = x + l * len;
            __m256 m = _mm256_set1_ps(-INFINITY);
            for (int64_t j = 0; j < len; j++) {
                __m256 v = _mm256_i32gather_ps(xl + j, rows, 4);
                m = _mm256_blendv_ps(m, v, _mm256_cmp_ps(v, m, _CMP_GT_OQ));
            }
            __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
            for (int64_t j = 0; j < len; j++) {
                __m256 v = exp8(_mm256_sub_ps(_mm256_i32gather_ps(xl + j, rows, 4), m));
                _mm256_storeu_ps(e + j * 8, v);
                add_wide(&lo, &hi, v);
            }
            __m256 sum = narrow(lo, hi);
            for (int64_t j = 0; j < len; j++) _mm256_storeu_ps(e + j * 8, _mm256_div_ps(_mm256_loadu_ps(e + j * 8), sum));
            float *yl = y + l * len;
            for (int r = 0; r < 8; r++)
                for (int64_t j = 0; j < len; j++) yl[r * len + j] = e[j * 8 + r];
        }
    }
    for (; l < l1; l++) softmax_lane(x + l * len, y + l * len, len, 1);
}

MLK_AVX2 static void layer_norm_avx2(const float *x, float *y, int64_t len, int64_t r0, int64_t r1, const float *scale,
                                     const float *bias, float eps) {
    int64_t vectors = len / 8 * 8;
    for (int64_t r = r0; r < r1; r++) {
        const float *row = x + r * len;
        float *out = y + r * len;
        __m256 acc = _mm256_setzero_ps();
        for (int64_t j = 0; j < vectors; j += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(row + j));
        float lanes[8];
        _mm256_storeu_ps(lanes, acc);
        float sum = lane_sum(lanes);
        for (int64_t j = vectors; j < len; j++) sum += row[j];
        float mean = sum / (float)len;
        __m256 m = _mm256_set1_ps(mean), sq = _mm256_setzero_ps();
        for (int64_t j = 0; j < vectors; j += 8) {
            __m256 d = _mm256_sub_ps(_mm256_loadu_ps(row + j), m);
            sq = _mm256_add_ps(sq, _mm256_mul_ps(d, d));
        }
        _mm256_storeu_ps(lanes, sq);
        float squares = lane_sum(lanes);
        for (int64_t j = vectors; j < len; j++) { float d = row[j] - mean; float dd = d * d; squares += dd; }
        float inv = 1.0f / sqrtf(squares / (float)len + eps);
        __m256 iv = _mm256_set1_ps(inv);
        int64_t j = 0;
        for (; j < vectors; j += 8) {
            __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(row + j), m), iv);
            if (scale) v = _mm256_mul_ps(v, _mm256_loadu_ps(scale + j));
            if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + j));
            _mm256_storeu_ps(out + j, v);
        }
        for (; j < len; j++) {
            float v = (row[j] - mean) * inv;
            if (scale) v *= scale[j];
            if (bias) v += bias[j];
            out[j] = v;
        }
    }
}

MLK_AVX2 static void bias_act_avx2(float *y, int64_t rows, int64_t cols, const float *bias, int act, float p0, float p1) {
    int vec = MLK_ACT_VECTOR(act);
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    for (int64_t r = 0; r < rows; r++) {
        float *row = y + r * cols;
        int64_t c = 0;
        for (; c + 8 <= cols; c += 8) {
            __m256 v = _mm256_loadu_ps(row + c);
            if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + c));
            if (vec) v = act8(v, act, lo, hi);
            _mm256_storeu_ps(row + c, v);
        }
        for (; c < cols; c++) {
            float v = row[c] + (bias ? bias[c] : 0);
            row[c] = vec ? act_scalar(v, act, p0, p1) : v;
        }
        if (!vec) for (c = 0; c < cols; c++) row[c] = act_scalar(row[c], act, p0, p1);
    }
}

MLK_AVX2 static void add_act_avx2(const float *a, const float *b, float *y, int64_t n, int act, float p0, float p1) {
    int vec = MLK_ACT_VECTOR(act);
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
        if (vec) v = act8(v, act, lo, hi);
        _mm256_storeu_ps(y + i, v);
    }
    for (; i < n; i++) y[i] = vec ? act_scalar(a[i] + b[i], act, p0, p1) : a[i] + b[i];
    if (!vec) for (i = 0; i < n; i++) y[i] = act_scalar(y[i], act, p0, p1);
}
#endif

// ---- dispatch ----

void mlk_bias_act(float *y, int64_t rows, int64_t cols, const float *bias, int act, float p0, float p1) {
    if (!bias && act == MLK_ACT_NONE) return;
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { bias_act_avx2(y, rows, cols, bias, act, p0, p1); return; }
#endif
    bias_act_portable(y, rows, cols, bias, act, p0, p1);
}

void mlk_softmax(const float *x, float *y, int64_t len, int64_t inner, int64_t i0, int64_t i1) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { softmax_avx2(x, y, len, inner, i0, i1); return; }
#endif
    softmax_portable(x, y, len, inner, i0, i1);
}

void mlk_softmax_rows(const float *x, float *y, int64_t len, int64_t r0, int64_t r1) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { softmax_rows_avx2(x, y, len, r0, r1); return; }
#endif
    for (int64_t r = r0; r < r1; r++) softmax_lane(x + r * len, y + r * len, len, 1);
}

void mlk_add_act(const float *a, const float *b, float *y, int64_t n, int act, float p0, float p1) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { add_act_avx2(a, b, y, n, act, p0, p1); return; }
#endif
    add_act_portable(a, b, y, n, act, p0, p1);
}

void mlk_layer_norm_rows(const float *x, float *y, int64_t len, int64_t r0, int64_t r1, const float *scale,
                         const float *bias, float eps) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { layer_norm_avx2(x, y, len, r0, r1, scale, bias, eps); return; }
#endif
    layer_norm_portable(x, y, len, r0, r1, scale, bias, eps);
}
