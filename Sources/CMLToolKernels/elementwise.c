// Element-wise kernels: bias + activation in place, add + activation and layer norm; portable C and AVX2 side by
// side (softmax: softmax.c).
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
