// Element-wise kernels: bias + activation in place, and add + activation; portable C and AVX2 side by side.
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

// ---- AVX2 + FMA ----
#if MLK_X86

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
