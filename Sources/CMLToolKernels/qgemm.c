// int8 GEMM: activations quantized per row to 7 bits (0…127), weights int8 per output column; see
// include/CMLToolKernels.h. Products are summed exactly in int32 by every variant, and the float epilogue is the same
// fused multiply-add in each, so the portable, AVX2, AVX-VNNI and AVX-512 VNNI versions give bit-identical outputs.
// Seven bits, not eight, so that AVX2's vpmaddubsw (two u8 × s8 products summed in a saturating int16) is exact:
// 2 · 127 · 128 = 32,512 ≤ 32,767. Every level quantizes the same way, so a model gives the same outputs everywhere.
// Rows of 8-bit codes (a quantized file's) against weights outside −64…64 take the `wide` AVX2 tile, whose products
// |q − 128| · ±w stay within the same bound.
#include "CMLToolKernels.h"
#include "isa.h"
#include "vec.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t mlk_qpanel_bytes(int64_t K) { return (K + 3) / 4 * 64; }

int64_t mlk_qrow_bytes(int64_t K) { return (K + 3) / 4 * 4; }

void mlk_qpanel_colsum(const int8_t *panels, int64_t K, int64_t count, int32_t *colsum) {
    int64_t groups = (K + 3) / 4;
    for (int64_t p = 0; p < count; p++) {
        int32_t sum[16] = {0};
        const int8_t *b = panels + p * groups * 64;
        for (int64_t g = 0; g < groups; g++)
            for (int e = 0; e < 64; e++) sum[e >> 2] += b[g * 64 + e];
        for (int j = 0; j < 16; j++) colsum[p * 16 + j] = sum[j];
    }
}

void mlk_qpack(const int8_t *w, int64_t K, int64_t N, int8_t *packed, int32_t *colsum) {
    int64_t groups = (K + 3) / 4, panels = (N + 15) / 16;
    for (int64_t p = 0; p < panels; p++)
        for (int64_t j = 0; j < 16; j++) {
            int64_t n = p * 16 + j;
            for (int64_t g = 0; g < groups; g++)
                for (int64_t i = 0; i < 4; i++) {
                    int64_t k = g * 4 + i;
                    packed[(p * groups + g) * 64 + j * 4 + i] = n < N && k < K ? w[k * N + n] : 0;
                }
        }
    mlk_qpanel_colsum(packed, K, panels, colsum);
}

// One output value from its exact int32 sum (shared by every variant, so all round the same way).
static inline float qepilogue(int32_t acc, int32_t zp, int32_t colsum, float ascale, float wscale, float bias) {
    return fmaf((float)(acc - zp * colsum), ascale * wscale, bias);
}

// The requantized output of one sum c (its zero-point correction and integer bias included): the code relative to the
// output zero point, clamp(round_half_even(float(c) · mult), lo, hi), dequantized (times rq->scale). The clamped value
// lies in ±2^22, where adding and subtracting 1.5 · 2^23 rounds it to the nearest integer, halves to even, as
// onnxruntime's vcvtps2dq does; every variant does the same float operations in the same order.
static inline float qrequant(int32_t c, float mult, const mlk_qrequant *rq) {
    float v = (float)c * mult;
    v = v < rq->lo ? rq->lo : v;
    v = v > rq->hi ? rq->hi : v;
    return ((v + 12582912.0f) - 12582912.0f) * rq->scale;
}

// qrequant's code as a byte (mlk_qrequant.codes): the clamped, rounded value less rq->lo (0…255).
static inline uint8_t qcode(int32_t c, float mult, const mlk_qrequant *rq) {
    float v = (float)c * mult;
    v = v < rq->lo ? rq->lo : v;
    v = v > rq->hi ? rq->hi : v;
    return (uint8_t)(int32_t)(((v + 12582912.0f) - 12582912.0f) - rq->lo);
}

// The largest quantized activation (see the top of this file).
#define QMAX 127

// Range of a row (widened to include 0) → scale, reciprocal and zero point.
static inline void qparams(float lo, float hi, float *scale, float *inv, int32_t *zp) {
    float s = (hi - lo) / (float)QMAX;
    float r = 1.0f / s;
    if (!(s > 0) || !isfinite(r)) { s = 1; r = 1; }
    float z = nearbyintf(-lo * r);
    *scale = s;
    *inv = r;
    *zp = z < 0 ? 0 : (z > QMAX ? QMAX : (int32_t)z);
}

// |x · inv| ≤ 127 (or so) for x in the row's range; NaN (x itself, or ∞ · 0 where the range is infinite) is 0, as
// the vector conversions make it (their out-of-range integer is INT32_MIN), without C's undefined conversion.
static inline uint8_t qvalue(float x, float inv, int32_t zp) {
    float t = nearbyintf(x * inv);
    if (t != t) return 0;
    int32_t v = (int32_t)t + zp;
    return (uint8_t)(v < 0 ? 0 : (v > QMAX ? QMAX : v));
}

// ---- portable versions ----

static void quantize_rows_portable(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K, uint8_t *q,
                                   int64_t ldq, float *scale, int32_t *zp) {
    for (int64_t m = m0; m < m1; m++) {
        const float *r = a + m * lda;
        float lo = 0, hi = 0, inv;
        for (int64_t k = 0; k < K; k++) { lo = r[k] < lo ? r[k] : lo; hi = r[k] > hi ? r[k] : hi; }
        qparams(lo, hi, &scale[m], &inv, &zp[m]);
        uint8_t *out = q + m * ldq;
        for (int64_t k = 0; k < K; k++) out[k] = qvalue(r[k], inv, zp[m]);
        for (int64_t k = K; k < ldq; k++) out[k] = 0;
    }
}

static void qgemm_portable(const uint8_t *q, int64_t ldq, const float *ascale, const int32_t *zp, const int8_t *packed,
                           const int32_t *colsum, const float *wscale, int64_t m0, int64_t m1, int64_t N, int64_t K,
                           const float *bias, const float *res, float *y, int64_t ldy, int act, float p0, float p1, const mlk_qrequant *rq) {
    int64_t groups = (K + 3) / 4;
    for (int64_t m = m0; m < m1; m++) {
        const uint8_t *r = q + m * ldq;
        for (int64_t n = 0; n < N; n++) {
            const int8_t *bp = packed + (n / 16) * groups * 64 + (n % 16) * 4;
            int32_t acc = 0;
            for (int64_t g = 0; g < groups; g++)
                for (int64_t i = 0; i < 4; i++) acc += (int32_t)r[g * 4 + i] * bp[g * 64 + i];
            // The requantized sum in int32 wrapping as the vector adds do (a clipped bias lies near −2^31).
            if (rq && rq->codes) {
                rq->codes[m * rq->ldc + n] = qcode((int32_t)((uint32_t)acc - (uint32_t)zp[m] * (uint32_t)colsum[n] +
                                                             (uint32_t)rq->bias[n]), rq->mult[n], rq);
                continue;
            }
            float v = rq ? qrequant((int32_t)((uint32_t)acc - (uint32_t)zp[m] * (uint32_t)colsum[n] + (uint32_t)rq->bias[n]),
                                    rq->mult[n], rq)
                         : qepilogue(acc, zp[m], colsum[n], ascale[m], wscale[n], bias ? bias[n] : 0);
            if (res) v += res[m * ldy + n];
            y[m * ldy + n] = act_scalar(v, act, p0, p1);
        }
    }
}

#if MLK_X86

static inline int32_t load32(const uint8_t *p) { int32_t v; memcpy(&v, p, 4); return v; }

// ---- AVX2: min/max and quantization of rows (used by every SIMD level) ----

// The smallest and largest lanes of lo and hi (neither holds a NaN: see quantize_rows_avx2).
MLK_AVX2 static inline void range_avx2(__m256 lo, __m256 hi, float *mn, float *mx) {
    __m128 l = _mm_min_ps(_mm256_castps256_ps128(lo), _mm256_extractf128_ps(lo, 1));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(hi), _mm256_extractf128_ps(hi, 1));
    l = _mm_min_ps(l, _mm_movehl_ps(l, l));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    *mn = _mm_cvtss_f32(_mm_min_ss(l, _mm_shuffle_ps(l, l, 1)));
    *mx = _mm_cvtss_f32(_mm_max_ss(h, _mm_shuffle_ps(h, h, 1)));
}

// 16 quantized values of 16 floats (as qvalue: round to nearest even, add the zero point, clamp to [0, QMAX]).
MLK_AVX2 static inline __m128i qvalues16_avx2(__m256 v0, __m256 v1, __m256 vinv, __m256i vzp) {
    __m256i i0 = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(v0, vinv)), vzp);
    __m256i i1 = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(v1, vinv)), vzp);
    // Saturating packs clamp to [0, 255] (then min to QMAX); they interleave 128-bit lanes, undone by the permute.
    __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(i0, i1), _MM_SHUFFLE(3, 1, 2, 0));
    __m128i b = _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    return _mm_min_epu8(b, _mm_set1_epi8(QMAX));
}

// Every element in vectors: a row's last K mod 16 through masked loads (masked lanes read as 0, inside the range, and
// are not stored). min(v, lo) keeps lo where v is NaN, as the portable comparison does, so the lanes never hold one.
MLK_AVX2 static void quantize_rows_avx2(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K, uint8_t *q,
                                          int64_t ldq, float *scale, int32_t *zp) {
    const int64_t K16 = K & ~(int64_t)15;
    const int rest = (int)(K - K16);   // 0…15
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i t0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(rest), lanes);
    const __m256i t1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(rest - 8), lanes);
    for (int64_t m = m0; m < m1; m++) {
        const float *r = a + m * lda;
        __m256 lo0 = _mm256_setzero_ps(), hi0 = lo0, lo1 = lo0, hi1 = lo0;
        for (int64_t k = 0; k < K16; k += 16) {
            __m256 v0 = _mm256_loadu_ps(r + k), v1 = _mm256_loadu_ps(r + k + 8);
            lo0 = _mm256_min_ps(v0, lo0);
            hi0 = _mm256_max_ps(v0, hi0);
            lo1 = _mm256_min_ps(v1, lo1);
            hi1 = _mm256_max_ps(v1, hi1);
        }
        __m256 r0 = _mm256_setzero_ps(), r1 = r0;
        if (rest) {
            r0 = _mm256_maskload_ps(r + K16, t0);
            r1 = _mm256_maskload_ps(r + K16 + 8, t1);
            lo0 = _mm256_min_ps(r0, lo0);
            hi0 = _mm256_max_ps(r0, hi0);
            lo1 = _mm256_min_ps(r1, lo1);
            hi1 = _mm256_max_ps(r1, hi1);
        }
        float lo, hi, inv;
        range_avx2(_mm256_min_ps(lo0, lo1), _mm256_max_ps(hi0, hi1), &lo, &hi);
        qparams(lo, hi, &scale[m], &inv, &zp[m]);
        uint8_t *out = q + m * ldq;
        __m256 vinv = _mm256_set1_ps(inv);
        __m256i vzp = _mm256_set1_epi32(zp[m]);
        for (int64_t k = 0; k < K16; k += 16)
            _mm_storeu_si128((__m128i *)(out + k), qvalues16_avx2(_mm256_loadu_ps(r + k), _mm256_loadu_ps(r + k + 8), vinv, vzp));
        if (rest) {
            uint8_t t[16];
            _mm_storeu_si128((__m128i *)t, qvalues16_avx2(r0, r1, vinv, vzp));
            memcpy(out + K16, t, (size_t)rest);
        }
        for (int64_t k = K; k < ldq; k++) out[k] = 0;
    }
}

// Epilogue of 8 columns: int32 sums → float, zero-point correction, scales, bias, the residual row rr (NULL: none),
// activation; nv < 8 stores only the first nv (colsum and wscale are padded to 16 values, bias and rr are not: they
// are read under the same mask).
MLK_AVX2 static inline void qstore8(float *yr, __m256i acc, int32_t zp, const int32_t *cs, float as, const float *ws,
                                      const float *bias, const float *rr, int64_t nv, int act, float p0, float p1) {
    __m256i c = _mm256_sub_epi32(acc, _mm256_mullo_epi32(_mm256_set1_epi32(zp), _mm256_loadu_si256((const __m256i *)cs)));
    __m256 s = _mm256_mul_ps(_mm256_set1_ps(as), _mm256_loadu_ps(ws));
    __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)(nv < 8 ? nv : 8)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 b = bias ? (nv >= 8 ? _mm256_loadu_ps(bias) : _mm256_maskload_ps(bias, mask)) : _mm256_setzero_ps();
    __m256 v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c), s, b);
    if (rr) v = _mm256_add_ps(v, nv >= 8 ? _mm256_loadu_ps(rr) : _mm256_maskload_ps(rr, mask));
    if (MLK_ACT_VECTOR(act)) v = act8(v, act, _mm256_set1_ps(p0), _mm256_set1_ps(p1));
    if (nv >= 8) _mm256_storeu_ps(yr, v);
    else _mm256_maskstore_ps(yr, mask, v);
    if (!MLK_ACT_VECTOR(act) && act != MLK_ACT_NONE)
        for (int64_t j = 0, n = nv < 8 ? nv : 8; j < n; j++) yr[j] = act_scalar(yr[j], act, p0, p1);
}

// qstore8 with the panel's constants loaded once for all its rows (qgemm_avx2): cs (column sums), ws (weight scales),
// b (bias, 0 past N), mask (the first nv lanes). The same operations in the same order, so the same bits; loading
// them per row cost a sixth of a 196 × 80 × 480 product (Zen 3: 133 → 115 µs).
MLK_AVX2 static inline void qstore8_panel(float *yr, __m256i acc, int32_t zp, __m256i cs, float as, __m256 ws, __m256 b,
                                          const float *rr, __m256i mask, int64_t nv, int act, float p0, float p1) {
    __m256i c = _mm256_sub_epi32(acc, _mm256_mullo_epi32(_mm256_set1_epi32(zp), cs));
    __m256 v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c), _mm256_mul_ps(_mm256_set1_ps(as), ws), b);
    if (rr) v = _mm256_add_ps(v, nv >= 8 ? _mm256_loadu_ps(rr) : _mm256_maskload_ps(rr, mask));
    if (MLK_ACT_VECTOR(act)) v = act8(v, act, _mm256_set1_ps(p0), _mm256_set1_ps(p1));
    if (nv >= 8) _mm256_storeu_ps(yr, v);
    else _mm256_maskstore_ps(yr, mask, v);
    if (!MLK_ACT_VECTOR(act) && act != MLK_ACT_NONE)
        for (int64_t j = 0, n = nv < 8 ? nv : 8; j < n; j++) yr[j] = act_scalar(yr[j], act, p0, p1);
}

// qrequant of 8 columns: cs, rb and rm are their column sums, integer biases and multipliers.
// Then the residual row rr (NULL: none) and the activation, as qstore8_panel.
// With cr (the row's codes from this column; NULL: floats), the nv ≤ 8 codes as bytes (qcode) instead.
MLK_AVX2 static inline void qrequant8(float *yr, uint8_t *cr, __m256i acc, int32_t zp, __m256i cs, __m256i rb, __m256 rm,
                                      const mlk_qrequant *rq, const float *rr, __m256i mask, int64_t nv, int act,
                                      float p0, float p1) {
    __m256i c = _mm256_add_epi32(_mm256_sub_epi32(acc, _mm256_mullo_epi32(_mm256_set1_epi32(zp), cs)), rb);
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(c), rm);
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(rq->lo)), _mm256_set1_ps(rq->hi));
    const __m256 magic = _mm256_set1_ps(12582912.0f);
    if (cr) {
        const __m256i i = _mm256_cvtps_epi32(_mm256_sub_ps(_mm256_sub_ps(_mm256_add_ps(v, magic), magic),
                                                           _mm256_set1_ps(rq->lo)));
        const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
        const __m128i b = _mm_packus_epi16(w, w);
        if (nv >= 8) { _mm_storel_epi64((__m128i *)cr, b); return; }
        uint8_t t[16];
        _mm_storeu_si128((__m128i *)t, b);
        memcpy(cr, t, (size_t)nv);
        return;
    }
    v = _mm256_mul_ps(_mm256_sub_ps(_mm256_add_ps(v, magic), magic), _mm256_set1_ps(rq->scale));
    if (rr) v = _mm256_add_ps(v, nv >= 8 ? _mm256_loadu_ps(rr) : _mm256_maskload_ps(rr, mask));
    if (MLK_ACT_VECTOR(act)) v = act8(v, act, _mm256_set1_ps(p0), _mm256_set1_ps(p1));
    if (nv >= 8) _mm256_storeu_ps(yr, v);
    else _mm256_maskstore_ps(yr, mask, v);
    if (!MLK_ACT_VECTOR(act) && act != MLK_ACT_NONE)
        for (int64_t j = 0, n = nv < 8 ? nv : 8; j < n; j++) yr[j] = act_scalar(yr[j], act, p0, p1);
}

// qcode of one row of a 16-column panel (nv ≤ 16 columns stored) from its two 8-column sums, off being
// bias − zp · colsum of each half: the clamped product rounded by vcvtps2dq (halves to even, as the 1.5 · 2^23 add),
// less lo in 16-bit integers (exact: the codes lie in lo…hi), packed to bytes in column order.
MLK_AVX2 static inline void qcodes16(uint8_t *cr, const __m256i *acc, __m256i off0, __m256i off1, __m256 rm0,
                                     __m256 rm1, __m256 lo, __m256 hi, __m256i shift, int64_t nv) {
    __m256 v0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(acc[0], off0)), rm0);
    __m256 v1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(acc[1], off1)), rm1);
    v0 = _mm256_min_ps(_mm256_max_ps(v0, lo), hi);
    v1 = _mm256_min_ps(_mm256_max_ps(v1, lo), hi);
    // lanes: v0[0..3], v1[0..3] | v0[4..7], v1[4..7] as 16-bit, then bytes (each 128-bit lane's first 8)
    __m256i w = _mm256_add_epi16(_mm256_packs_epi32(_mm256_cvtps_epi32(v0), _mm256_cvtps_epi32(v1)), shift);
    __m256i b = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(w, w), _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5));
    if (nv >= 16) { _mm_storeu_si128((__m128i *)cr, _mm256_castsi256_si128(b)); return; }
    uint8_t t[16];
    _mm_storeu_si128((__m128i *)t, _mm256_castsi256_si128(b));
    memcpy(cr, t, (size_t)nv);
}

// Epilogue of one row of a 16-column panel held as two 8-column halves (nv ≤ 16 columns stored).
MLK_AVX2 static inline void qstore16_halves(float *yr, uint8_t *cr, const __m256i *acc, int32_t zp, const int32_t *cs, float as,
                                             const float *ws, const float *bias, const float *rr, int64_t nv, int act,
                                             float p0, float p1, const mlk_qrequant *rq, int64_t n0) {
    if (rq) {
        const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        for (int h = 0; h < 2 && 8 * h < nv; h++) {
            __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)(nv - 8 * h < 8 ? nv - 8 * h : 8)), lanes);
            qrequant8(yr + 8 * h, cr ? cr + 8 * h : NULL, acc[h], zp, _mm256_loadu_si256((const __m256i *)(cs + 8 * h)),
                      _mm256_loadu_si256((const __m256i *)(rq->bias + n0 + 8 * h)), _mm256_loadu_ps(rq->mult + n0 + 8 * h),
                      rq, rr ? rr + 8 * h : NULL, mask, nv - 8 * h, act, p0, p1);
        }
        return;
    }
    qstore8(yr, acc[0], zp, cs, as, ws, bias, rr, nv, act, p0, p1);
    if (nv > 8)
        qstore8(yr + 8, acc[1], zp, cs + 8, as, ws + 8, bias ? bias + 8 : NULL, rr ? rr + 8 : NULL, nv - 8, act, p0, p1);
}

// ---- AVX2 without VNNI: vpmaddubsw (exact for 7-bit activations), then vpmaddwd by ones into int32 ----

// R ≤ 4 rows × 8·H columns (H = 2: one panel; H = 1: its first half, for a last panel of ≤ 8 columns). A group's 64
// bytes are two vectors of 8 columns × 4 k values; the row's 4 activations, broadcast, multiply them pairwise into
// 16-bit sums (exact, see the top of this file), which vpmaddwd by ones adds into one int32 per column, in order.
// `wide` (8-bit codes against weights in −127…127): the sums of c · w for c = q − 128 instead, each product formed
// as |c| · (w · sign(c)) — at most 128 · 127, two of them 32,512 — so the pairs stay exact; the caller adds
// 128 · colsum back through the zero point. Its rows are `centre_rows_avx2`'s: per group, c then |c| (8 bytes).
MLK_INLINE MLK_AVX2 void qtile_avx2(int R, int H, int wide, const uint8_t *const *r, const int8_t *bp, int64_t groups,
                                    __m256i *out) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i c[4][2];
    for (int i = 0; i < R; i++) for (int h = 0; h < H; h++) c[i][h] = _mm256_setzero_si256();
    for (int64_t g = 0; g < groups; g++) {
        __m256i w[2];
        for (int h = 0; h < H; h++) w[h] = _mm256_loadu_si256((const __m256i *)(bp + g * 64 + 32 * h));
        for (int i = 0; i < R; i++) {
            if (wide) {
                const __m256i centred = _mm256_set1_epi32(load32(r[i] + g * 8));
                const __m256i magnitude = _mm256_set1_epi32(load32(r[i] + g * 8 + 4));
                for (int h = 0; h < H; h++)
                    c[i][h] = _mm256_add_epi32(c[i][h], _mm256_madd_epi16(
                        _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(w[h], centred)), ones));
            } else {
                __m256i a = _mm256_set1_epi32(load32(r[i] + g * 4));
                for (int h = 0; h < H; h++)
                    c[i][h] = _mm256_add_epi32(c[i][h], _mm256_madd_epi16(_mm256_maddubs_epi16(a, w[h]), ones));
            }
        }
    }
    for (int i = 0; i < R; i++) for (int h = 0; h < H; h++) out[2 * i + h] = c[i][h];
}

// Rows [m0, m1) of 8-bit codes as the wide tile reads them: per group of 4, the codes less 128 (int8) then their
// magnitudes (0…128 as uint8; −128's is 128), 8 bytes, rows groups · 8 bytes apart.
MLK_AVX2 static void centre_rows_avx2(const uint8_t *q, int64_t ldq, int64_t m0, int64_t m1, int64_t groups, uint8_t *out) {
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    for (int64_t m = m0; m < m1; m++) {
        const uint8_t *src = q + m * ldq;
        uint8_t *dst = out + (m - m0) * groups * 8;
        int64_t g = 0;
        for (; g + 8 <= groups; g += 8) {
            const __m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(src + g * 4)), flip);
            const __m256i a = _mm256_abs_epi8(v);
            const __m256i lo = _mm256_unpacklo_epi32(v, a), hi = _mm256_unpackhi_epi32(v, a);
            _mm256_storeu_si256((__m256i *)(dst + g * 8), _mm256_permute2x128_si256(lo, hi, 0x20));
            _mm256_storeu_si256((__m256i *)(dst + g * 8 + 32), _mm256_permute2x128_si256(lo, hi, 0x31));
        }
        for (; g < groups; g++)
            for (int j = 0; j < 4; j++) {
                const int c = (int)src[g * 4 + j] - 128;
                dst[g * 8 + j] = (uint8_t)(int8_t)c;
                dst[g * 8 + 4 + j] = (uint8_t)(c < 0 ? -c : c);
            }
    }
}

#define MLK_QT2(R) case R: \
    if (wide) { \
        if (nv > 8) qtile_avx2(R, 2, 1, r, bp, groups, acc); \
        else qtile_avx2(R, 1, 1, r, bp, groups, acc); \
    } else { \
        if (nv > 8) qtile_avx2(R, 2, 0, r, bp, groups, acc); \
        else qtile_avx2(R, 1, 0, r, bp, groups, acc); \
    } \
    break;

MLK_AVX2 static void qgemm_avx2(const uint8_t *q, int64_t ldq, const float *ascale, const int32_t *zp,
                                  const int8_t *packed, const int32_t *colsum, const float *wscale, int64_t m0,
                                  int64_t m1, int64_t N, int64_t K, const float *bias, const float *res, float *y, int64_t ldy,
                                  int act, float p0, float p1, const mlk_qrequant *rq, int wide) {
    int64_t groups = (K + 3) / 4;
    // The wide tile sums (q − 128) · w: Σ q·w − zp·colsum = that − (zp − 128)·colsum.
    const int32_t shift = wide ? 128 : 0;
    // Rows in chunks whose quantized block stays in L2 while every panel passes over it.
    int64_t mc = (256 * 1024) / (groups * 4);
    mc = mc < 4 ? 4 : (mc > 1024 ? 1024 : mc);
    mc -= mc % 4;
    // The wide tile's rows, centred a chunk at a time (below); without the memory, the portable kernel's exact sums.
    uint8_t *centred = NULL;
    if (wide) {
        centred = malloc((size_t)((mc < m1 - m0 ? mc : m1 - m0) * groups * 8));
        if (!centred) {
            qgemm_portable(q, ldq, ascale, zp, packed, colsum, wscale, m0, m1, N, K, bias, res, y, ldy, act, p0, p1, rq);
            return;
        }
    }
    for (int64_t mb = m0; mb < m1; mb += mc) {
        int64_t me = mb + mc < m1 ? mb + mc : m1;
        if (centred) centre_rows_avx2(q, ldq, mb, me, groups, centred);
        for (int64_t n0 = 0; n0 < N; n0 += 16) {
            const int8_t *bp = packed + (n0 / 16) * groups * 64;
            int64_t nv = N - n0 < 16 ? N - n0 : 16;
            // The panel's column sums, weight scales, bias and store masks, loaded once for all its rows.
            const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            __m256i mask0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)(nv < 8 ? nv : 8)), lanes);
            __m256i mask1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)(nv > 8 ? nv - 8 : 0)), lanes);
            __m256i cs0 = _mm256_loadu_si256((const __m256i *)(colsum + n0));
            __m256i cs1 = _mm256_loadu_si256((const __m256i *)(colsum + n0 + 8));
            // (No weight scales when requantizing: rq's multipliers hold them.)
            __m256 ws0 = rq ? _mm256_setzero_ps() : _mm256_loadu_ps(wscale + n0);
            __m256 ws1 = rq ? _mm256_setzero_ps() : _mm256_loadu_ps(wscale + n0 + 8);
            __m256 b0 = bias ? _mm256_maskload_ps(bias + n0, mask0) : _mm256_setzero_ps();
            __m256 b1 = bias ? _mm256_maskload_ps(bias + n0 + 8, mask1) : _mm256_setzero_ps();
            // Requantization: the panel's integer biases and multipliers (padded to 16, like colsum).
            __m256i rb0 = rq ? _mm256_loadu_si256((const __m256i *)(rq->bias + n0)) : _mm256_setzero_si256();
            __m256i rb1 = rq ? _mm256_loadu_si256((const __m256i *)(rq->bias + n0 + 8)) : _mm256_setzero_si256();
            __m256 rm0 = rq ? _mm256_loadu_ps(rq->mult + n0) : _mm256_setzero_ps();
            __m256 rm1 = rq ? _mm256_loadu_ps(rq->mult + n0 + 8) : _mm256_setzero_ps();
            // Codes (rq->codes): bias − zp · colsum per half, for the zero point codeZp (recomputed when a row's differs).
            __m256i off0 = _mm256_setzero_si256(), off1 = _mm256_setzero_si256();
            int32_t codeZp = INT32_MIN;
            const __m256 rlo = _mm256_set1_ps(rq ? rq->lo : 0), rhi = _mm256_set1_ps(rq ? rq->hi : 0);
            const __m256i rshift = _mm256_set1_epi16((int16_t)(rq ? -(int32_t)rq->lo : 0));
            for (int64_t m = mb; m < me; m += 4) {
                int R = me - m < 4 ? (int)(me - m) : 4;
                const uint8_t *r[4];
                for (int i = 0; i < 4; i++)
                    r[i] = centred ? centred + (m - mb + (i < R ? i : 0)) * groups * 8 : q + (m + (i < R ? i : 0)) * ldq;
                __m256i acc[8];
                switch (R) { MLK_QT2(4) MLK_QT2(3) MLK_QT2(2) MLK_QT2(1) }
                if (rq && rq->codes) {
                    for (int i = 0; i < R; i++) {
                        if (zp[m + i] - shift != codeZp) {
                            codeZp = zp[m + i] - shift;
                            const __m256i z = _mm256_set1_epi32(codeZp);
                            off0 = _mm256_sub_epi32(rb0, _mm256_mullo_epi32(z, cs0));
                            off1 = _mm256_sub_epi32(rb1, _mm256_mullo_epi32(z, cs1));
                        }
                        qcodes16(rq->codes + (m + i) * rq->ldc + n0, acc + 2 * i, off0, off1, rm0, rm1, rlo, rhi, rshift, nv);
                    }
                    continue;
                }
                for (int i = 0; i < R; i++) {
                    float *yr = y + (m + i) * ldy + n0;
                    const float *rr = res ? res + (m + i) * ldy + n0 : NULL;
                    if (rq) {
                        // bias − zp · colsum once per zero point (int32 wrapping: the same sums as qrequant8's order)
                        if (zp[m + i] - shift != codeZp) {
                            codeZp = zp[m + i] - shift;
                            const __m256i z = _mm256_set1_epi32(codeZp);
                            off0 = _mm256_sub_epi32(rb0, _mm256_mullo_epi32(z, cs0));
                            off1 = _mm256_sub_epi32(rb1, _mm256_mullo_epi32(z, cs1));
                        }
                        qrequant8(yr, NULL, acc[2 * i], 0, cs0, off0, rm0, rq, rr, mask0, nv, act, p0, p1);
                        if (nv > 8)
                            qrequant8(yr + 8, NULL, acc[2 * i + 1], 0, cs1, off1, rm1, rq, rr ? rr + 8 : NULL, mask1, nv - 8,
                                      act, p0, p1);
                        continue;
                    }
                    qstore8_panel(yr, acc[2 * i], zp[m + i] - shift, cs0, ascale[m + i], ws0, b0, rr, mask0, nv, act, p0, p1);
                    if (nv > 8)
                        qstore8_panel(yr + 8, acc[2 * i + 1], zp[m + i] - shift, cs1, ascale[m + i], ws1, b1, rr ? rr + 8 : NULL,
                                      mask1, nv - 8, act, p0, p1);
                }
            }
        }
    }
    free(centred);
}
#undef MLK_QT2

// ---- AVX-VNNI (256-bit vpdpbusd): R ≤ 6 rows × 16 columns ----

MLK_INLINE MLK_AVX2_VNNI void qtile_avxvnni(int R, const uint8_t *const *r, const int8_t *bp, int64_t groups,
                                             __m256i *out) {
    __m256i c[6][2];
    for (int i = 0; i < R; i++) { c[i][0] = _mm256_setzero_si256(); c[i][1] = _mm256_setzero_si256(); }
    for (int64_t g = 0; g < groups; g++) {
        __m256i w0 = _mm256_loadu_si256((const __m256i *)(bp + g * 64));
        __m256i w1 = _mm256_loadu_si256((const __m256i *)(bp + g * 64 + 32));
        for (int i = 0; i < R; i++) {
            __m256i a = _mm256_set1_epi32(load32(r[i] + g * 4));
            c[i][0] = _mm256_dpbusd_avx_epi32(c[i][0], a, w0);
            c[i][1] = _mm256_dpbusd_avx_epi32(c[i][1], a, w1);
        }
    }
    for (int i = 0; i < R; i++) { out[2 * i] = c[i][0]; out[2 * i + 1] = c[i][1]; }
}

MLK_AVX2_VNNI static void qgemm_avxvnni(const uint8_t *q, int64_t ldq, const float *ascale, const int32_t *zp,
                                        const int8_t *packed, const int32_t *colsum, const float *wscale, int64_t m0,
                                        int64_t m1, int64_t N, int64_t K, const float *bias, const float *res, float *y,
                                        int64_t ldy, int act, float p0, float p1, const mlk_qrequant *rq) {
    int64_t groups = (K + 3) / 4;
    for (int64_t n0 = 0; n0 < N; n0 += 16) {
        const int8_t *bp = packed + (n0 / 16) * groups * 64;
        int64_t nv = N - n0 < 16 ? N - n0 : 16;
        for (int64_t m = m0; m < m1; m += 6) {
            int R = m1 - m < 6 ? (int)(m1 - m) : 6;
            const uint8_t *r[6];
            for (int i = 0; i < 6; i++) r[i] = q + (m + (i < R ? i : 0)) * ldq;
            __m256i acc[12];
            switch (R) {
            case 6: qtile_avxvnni(6, r, bp, groups, acc); break;
            case 5: qtile_avxvnni(5, r, bp, groups, acc); break;
            case 4: qtile_avxvnni(4, r, bp, groups, acc); break;
            case 3: qtile_avxvnni(3, r, bp, groups, acc); break;
            case 2: qtile_avxvnni(2, r, bp, groups, acc); break;
            default: qtile_avxvnni(1, r, bp, groups, acc); break;
            }
            for (int i = 0; i < R; i++)
                qstore16_halves(y + (m + i) * ldy + n0, rq && rq->codes ? rq->codes + (m + i) * rq->ldc + n0 : NULL, acc + 2 * i, zp[m + i], colsum + n0, rq ? 0 : ascale[m + i],
                                rq ? NULL : wscale + n0, bias ? bias + n0 : NULL, res ? res + (m + i) * ldy + n0 : NULL, nv, act,
                                p0, p1, rq, n0);
        }
    }
}

// ---- AVX-512 VNNI: R ≤ 8 rows × P ≤ 3 panels (48 columns), 24 accumulators ----

// Epilogue of one 16-column panel row; cs, ws and b are the panel's column sums, weight scales and bias.
MLK_AVX512_VNNI static inline void qstore16(float *yr, __m512i acc, int32_t zp, __m512i cs, float as, __m512 ws,
                                          __m512 b, const float *rr, __mmask16 mask, int64_t nv, int act, float p0,
                                          float p1) {
    __m512i c = _mm512_sub_epi32(acc, _mm512_mullo_epi32(_mm512_set1_epi32(zp), cs));
    __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c), _mm512_mul_ps(_mm512_set1_ps(as), ws), b);
    if (rr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, rr));
    if (MLK_ACT_VECTOR(act)) { _mm512_mask_storeu_ps(yr, mask, mlk_act16(v, act, p0, p1)); return; }
    _mm512_mask_storeu_ps(yr, mask, v);
    for (int64_t j = 0; j < nv; j++) yr[j] = act_scalar(yr[j], act, p0, p1);
}

// qrequant of one 16-column panel row; cs, rb and rm are the panel's column sums, integer biases and multipliers.
// With cr (the row's codes from this panel; NULL: floats), the codes as bytes (qcode) instead.
MLK_AVX512_VNNI static inline void qrequant16(float *yr, uint8_t *cr, __m512i acc, int32_t zp, __m512i cs, __m512i rb,
                                            __m512 rm, const mlk_qrequant *rq, const float *rr, __mmask16 mask, int64_t nv,
                                            int act, float p0, float p1) {
    // zp 0: the rows share one zero point, whose correction rb already holds (bias − zp · cs; qgemm_vnni512).
    __m512i c = _mm512_add_epi32(zp ? _mm512_sub_epi32(acc, _mm512_mullo_epi32(_mm512_set1_epi32(zp), cs)) : acc, rb);
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(c), rm);
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(rq->lo)), _mm512_set1_ps(rq->hi));
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    if (cr) {
        // vcvtps2dq rounds the clamped value (within ±2^22) halves to even, as qcode's 1.5 · 2^23 add; less lo (an
        // integer) exactly.
        const __m512i i = _mm512_sub_epi32(_mm512_cvtps_epi32(v), _mm512_set1_epi32((int32_t)rq->lo));
        if (nv == 16) _mm_storeu_si128((__m128i *)cr, _mm512_cvtusepi32_epi8(i));
        else _mm_mask_storeu_epi8(cr, mask, _mm512_cvtusepi32_epi8(i));
        return;
    }
    v = _mm512_mul_ps(_mm512_sub_ps(_mm512_add_ps(v, magic), magic), _mm512_set1_ps(rq->scale));
    if (rr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, rr));
    if (MLK_ACT_VECTOR(act)) { _mm512_mask_storeu_ps(yr, mask, mlk_act16(v, act, p0, p1)); return; }
    _mm512_mask_storeu_ps(yr, mask, v);
    for (int64_t j = 0; j < nv; j++) yr[j] = act_scalar(yr[j], act, p0, p1);
}

// Quantization of rows with AVX-512: full vectors unmasked, one masked tail.
MLK_AVX512_VNNI static void quantize_rows_avx512(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K,
                                               uint8_t *q, int64_t ldq, float *scale, int32_t *zp) {
    int64_t K16 = K & ~(int64_t)15;
    __mmask16 tail = (__mmask16)((1u << (K - K16)) - 1);
    for (int64_t m = m0; m < m1; m++) {
        const float *r = a + m * lda;
        __m512 vlo = _mm512_setzero_ps(), vhi = _mm512_setzero_ps();
        for (int64_t k = 0; k < K16; k += 16) {
            __m512 v = _mm512_loadu_ps(r + k);
            vlo = _mm512_min_ps(v, vlo);   // (v, lo): lo where v is NaN, as quantize_rows_avx2
            vhi = _mm512_max_ps(v, vhi);
        }
        if (tail) {
            __m512 v = _mm512_maskz_loadu_ps(tail, r + K16);   // masked-off lanes read as 0, inside the range
            vlo = _mm512_min_ps(v, vlo);
            vhi = _mm512_max_ps(v, vhi);
        }
        float inv;
        qparams(_mm512_reduce_min_ps(vlo), _mm512_reduce_max_ps(vhi), &scale[m], &inv, &zp[m]);
        uint8_t *out = q + m * ldq;
        __m512 vinv = _mm512_set1_ps(inv);
        __m512i vzp = _mm512_set1_epi32(zp[m]), zero = _mm512_setzero_si512(), qmax = _mm512_set1_epi32(QMAX);
        for (int64_t k = 0; k < K16; k += 16) {
            __m512i i = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(r + k), vinv)), vzp);
            _mm_storeu_si128((__m128i *)(out + k), _mm512_cvtusepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(i, zero), qmax)));
        }
        if (K16 < ldq) {
            // The tail and the padding up to ldq (< K16 + 16 bytes): padding bytes are 0.
            __mmask16 mq = (__mmask16)((1u << (ldq - K16)) - 1);
            __m512i i = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(tail, r + K16), vinv)), vzp);
            i = _mm512_maskz_mov_epi32(tail, _mm512_min_epi32(_mm512_max_epi32(i, zero), qmax));
            _mm_mask_storeu_epi8(out + K16, mq, _mm512_cvtusepi32_epi8(i));
        }
    }
}

// R ≤ 8 rows × P ≤ 3 panels of sums into out (row i, panel j at out[3 · i + j]), each panel's sums started at
// init[j] (NULL: 0).
MLK_INLINE MLK_AVX512_VNNI void qtile_vnni512(int R, int P, const uint8_t *const *r, const int8_t *bp, int64_t pstride,
                                             int64_t groups, const __m512i *init, __m512i *out) {
    __m512i c[8][3];
    for (int i = 0; i < R; i++) for (int j = 0; j < P; j++) c[i][j] = init ? init[j] : _mm512_setzero_si512();
    for (int64_t g = 0; g < groups; g++) {
        __m512i w[3];
        for (int j = 0; j < P; j++) w[j] = _mm512_loadu_si512(bp + j * pstride + g * 64);
        for (int i = 0; i < R; i++) {
            __m512i a = _mm512_set1_epi32(load32(r[i] + g * 4));
            for (int j = 0; j < P; j++) c[i][j] = _mm512_dpbusd_epi32(c[i][j], a, w[j]);
        }
    }
    for (int i = 0; i < R; i++) for (int j = 0; j < P; j++) out[i * 3 + j] = c[i][j];
}

#define MLK_QT(R) case R: \
    if (P == 3) qtile_vnni512(R, 3, r, bp, pstride, groups, NULL, acc); \
    else if (P == 2) qtile_vnni512(R, 2, r, bp, pstride, groups, NULL, acc); \
    else qtile_vnni512(R, 1, r, bp, pstride, groups, NULL, acc); \
    break;

// The constants of a requantizing layer whose rows share one zero point, per panel of the tile: rb (bias − zp ·
// colsum), rm (multipliers), the store masks; lo and hi the code range (floats, and lo as an integer), the scale.
typedef struct {
    __m512i rb[3];
    __m512 rm[3];
    __mmask16 mask[3];
    __m512 lo, hi, scale;
    __m512i ilo;
} qrequant_panels;

// qtile_vnni512 then qrequant16 for rows that share one zero point (the same bits): the sums start at rb (int32
// wrapping: the same sum in another order), and each row is requantized as soon as its sums are done, with every
// constant in registers — the general epilogue's per-output bookkeeping cost more than the products for the short
// rows (K ≤ 64) of a network's pointwise convolutions (12544 × 16 × 96 to codes: 0.51 → 0.21 ms on an Intel Xeon
// with AVX-512 VNNI). codes (NULL: floats to y, then res and a vector activation) as qrequant16's cr.
MLK_INLINE MLK_AVX512_VNNI void qtile_requant_vnni512(int R, int P, const uint8_t *const *r, const int8_t *bp,
                                                     int64_t pstride, int64_t groups, const qrequant_panels *k,
                                                     uint8_t *codes, int64_t ldc, float *y, const float *res,
                                                     int64_t ldy, int act, float p0, float p1) {
    __m512i c[24];
    qtile_vnni512(R, P, r, bp, pstride, groups, k->rb, c);
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < P; j++) {
            __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(c[3 * i + j]), k->rm[j]);
            v = _mm512_min_ps(_mm512_max_ps(v, k->lo), k->hi);
            if (codes) {
                const __m512i q = _mm512_sub_epi32(_mm512_cvtps_epi32(v), k->ilo);
                _mm_mask_storeu_epi8(codes + i * ldc + 16 * j, k->mask[j], _mm512_cvtusepi32_epi8(q));
                continue;
            }
            v = _mm512_mul_ps(_mm512_sub_ps(_mm512_add_ps(v, magic), magic), k->scale);
            if (res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k->mask[j], res + i * ldy + 16 * j));
            if (act != MLK_ACT_NONE) v = mlk_act16(v, act, p0, p1);
            _mm512_mask_storeu_ps(y + i * ldy + 16 * j, k->mask[j], v);
        }
}

// The constants of a scaled (not requantized) layer whose rows share one zero point and one scale (a dynamically
// quantized tensor's), per panel: init (−zp · colsum), s (row scale · weight scales), b (bias), the store masks.
typedef struct {
    __m512i init[3];
    __m512 s[3], b[3];
    __mmask16 mask[3];
} qscale_panels;

// qtile_vnni512 then qstore16 for such rows (the same bits: the sums start at −zp · colsum, int32 wrapping, and s is
// qstore16's product), each row stored from the tile's registers; act a vector one (MLK_ACT_VECTOR).
MLK_INLINE MLK_AVX512_VNNI void qtile_scale_vnni512(int R, int P, const uint8_t *const *r, const int8_t *bp,
                                                   int64_t pstride, int64_t groups, const qscale_panels *k, float *y,
                                                   const float *res, int64_t ldy, int act, float p0, float p1) {
    __m512i c[24];
    qtile_vnni512(R, P, r, bp, pstride, groups, k->init, c);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < P; j++) {
            __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c[3 * i + j]), k->s[j], k->b[j]);
            if (res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k->mask[j], res + i * ldy + 16 * j));
            if (act != MLK_ACT_NONE) v = mlk_act16(v, act, p0, p1);
            _mm512_mask_storeu_ps(y + i * ldy + 16 * j, k->mask[j], v);
        }
}

#define MLK_QS(R) case R: \
    if (P == 3) qtile_scale_vnni512(R, 3, r, bp, pstride, groups, &ks, yr, rr, ldy, act, p0, p1); \
    else if (P == 2) qtile_scale_vnni512(R, 2, r, bp, pstride, groups, &ks, yr, rr, ldy, act, p0, p1); \
    else qtile_scale_vnni512(R, 1, r, bp, pstride, groups, &ks, yr, rr, ldy, act, p0, p1); \
    break;

#define MLK_QC(R) case R: \
    if (P == 3) qtile_requant_vnni512(R, 3, r, bp, pstride, groups, &kc, cr, rq->ldc, yr, rr, ldy, act, p0, p1); \
    else if (P == 2) qtile_requant_vnni512(R, 2, r, bp, pstride, groups, &kc, cr, rq->ldc, yr, rr, ldy, act, p0, p1); \
    else qtile_requant_vnni512(R, 1, r, bp, pstride, groups, &kc, cr, rq->ldc, yr, rr, ldy, act, p0, p1); \
    break;

MLK_AVX512_VNNI static void qgemm_vnni512(const uint8_t *q, int64_t ldq, const float *ascale, const int32_t *zp,
                                        const int8_t *packed, const int32_t *colsum, const float *wscale, int64_t m0,
                                        int64_t m1, int64_t N, int64_t K, const float *bias, const float *res, float *y,
                                        int64_t ldy, int act, float p0, float p1, const mlk_qrequant *rq) {
    int64_t groups = (K + 3) / 4, pstride = groups * 64, panels = (N + 15) / 16;
    // A requantizing layer's rows of stored codes share one zero point: its correction folds into the biases (rb),
    // and the epilogue is given zero points of 0.
    int uniform = rq != NULL;
    for (int64_t m = m0 + 1; uniform && m < m1; m++) uniform = zp[m] == zp[m0];
    // Those rows' tiles requantize in registers (qtile_requant_vnni512) unless a float output takes an activation
    // only the scalar loop has.
    const int fast = uniform && (rq->codes || act == MLK_ACT_NONE || MLK_ACT_VECTOR(act));
    // A scaled layer's rows that share one zero point and one scale are stored from the registers too
    // (qtile_scale_vnni512), with a vector activation.
    int scaled = rq == NULL && MLK_ACT_VECTOR(act);
    for (int64_t m = m0 + 1; scaled && m < m1; m++) scaled = zp[m] == zp[m0] && ascale[m] == ascale[m0];
    // Rows in chunks whose quantized block stays in L2 while every panel passes over it.
    int64_t mc = (256 * 1024) / (groups * 4);
    mc = mc < 8 ? 8 : (mc > 1024 ? 1024 : mc);
    mc -= mc % 8;
    for (int64_t mb = m0; mb < m1; mb += mc) {
        int64_t me = mb + mc < m1 ? mb + mc : m1;
        for (int64_t p = 0; p < panels; p += 3) {
            int P = panels - p < 3 ? (int)(panels - p) : 3;
            const int8_t *bp = packed + p * pstride;
            int64_t n0 = p * 16, nv[3];
            __mmask16 mask[3];
            __m512i cs[3];
            __m512 ws[3], b[3], rm[3];
            __m512i rb[3];
            for (int j = 0; j < P; j++) {
                int64_t n = n0 + 16 * j;
                nv[j] = N - n < 16 ? N - n : 16;
                mask[j] = (__mmask16)((1u << nv[j]) - 1);
                cs[j] = _mm512_loadu_si512(colsum + n);
                ws[j] = rq ? _mm512_setzero_ps() : _mm512_loadu_ps(wscale + n);
                b[j] = bias ? _mm512_maskz_loadu_ps(mask[j], bias + n) : _mm512_setzero_ps();
                rb[j] = rq ? _mm512_loadu_si512(rq->bias + n) : _mm512_setzero_si512();
                if (uniform) rb[j] = _mm512_sub_epi32(rb[j], _mm512_mullo_epi32(_mm512_set1_epi32(zp[m0]), cs[j]));
                rm[j] = rq ? _mm512_loadu_ps(rq->mult + n) : _mm512_setzero_ps();
            }
            if (fast) {
                qrequant_panels kc;
                for (int j = 0; j < P; j++) { kc.rb[j] = rb[j]; kc.rm[j] = rm[j]; kc.mask[j] = mask[j]; }
                kc.lo = _mm512_set1_ps(rq->lo);
                kc.hi = _mm512_set1_ps(rq->hi);
                kc.scale = _mm512_set1_ps(rq->scale);
                kc.ilo = _mm512_set1_epi32((int32_t)rq->lo);
                for (int64_t m = mb; m < me; m += 8) {
                    int R = me - m < 8 ? (int)(me - m) : 8;
                    const uint8_t *r[8];
                    for (int i = 0; i < 8; i++) r[i] = q + (m + (i < R ? i : 0)) * ldq;
                    uint8_t *cr = rq->codes ? rq->codes + m * rq->ldc + n0 : NULL;
                    float *yr = rq->codes ? NULL : y + m * ldy + n0;
                    const float *rr = res ? res + m * ldy + n0 : NULL;
                    switch (R) { MLK_QC(8) MLK_QC(7) MLK_QC(6) MLK_QC(5) MLK_QC(4) MLK_QC(3) MLK_QC(2) MLK_QC(1) }
                }
                continue;
            }
            if (scaled) {
                qscale_panels ks;
                for (int j = 0; j < P; j++) {
                    ks.init[j] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_mullo_epi32(_mm512_set1_epi32(zp[m0]), cs[j]));
                    ks.s[j] = _mm512_mul_ps(_mm512_set1_ps(ascale[m0]), ws[j]);
                    ks.b[j] = b[j];
                    ks.mask[j] = mask[j];
                }
                for (int64_t m = mb; m < me; m += 8) {
                    int R = me - m < 8 ? (int)(me - m) : 8;
                    const uint8_t *r[8];
                    for (int i = 0; i < 8; i++) r[i] = q + (m + (i < R ? i : 0)) * ldq;
                    float *yr = y + m * ldy + n0;
                    const float *rr = res ? res + m * ldy + n0 : NULL;
                    switch (R) { MLK_QS(8) MLK_QS(7) MLK_QS(6) MLK_QS(5) MLK_QS(4) MLK_QS(3) MLK_QS(2) MLK_QS(1) }
                }
                continue;
            }
            for (int64_t m = mb; m < me; m += 8) {
                int R = me - m < 8 ? (int)(me - m) : 8;
                const uint8_t *r[8];
                for (int i = 0; i < 8; i++) r[i] = q + (m + (i < R ? i : 0)) * ldq;
                __m512i acc[24];
                switch (R) { MLK_QT(8) MLK_QT(7) MLK_QT(6) MLK_QT(5) MLK_QT(4) MLK_QT(3) MLK_QT(2) MLK_QT(1) }
                for (int i = 0; i < R; i++)
                    for (int j = 0; j < P; j++)
                        if (rq) qrequant16(y + (m + i) * ldy + n0 + 16 * j,
                                           rq->codes ? rq->codes + (m + i) * rq->ldc + n0 + 16 * j : NULL, acc[i * 3 + j], uniform ? 0 : zp[m + i], cs[j], rb[j], rm[j], rq,
                                           res ? res + (m + i) * ldy + n0 + 16 * j : NULL, mask[j], nv[j], act, p0, p1);
                        else qstore16(y + (m + i) * ldy + n0 + 16 * j, acc[i * 3 + j], zp[m + i], cs[j], ascale[m + i],
                                 ws[j], b[j], res ? res + (m + i) * ldy + n0 + 16 * j : NULL, mask[j], nv[j], act, p0, p1);
            }
        }
    }
}
#undef MLK_QT
#undef MLK_QC
#undef MLK_QS
#endif

// ---- dispatch ----

void mlk_quantize_rows(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K, uint8_t *q, int64_t ldq,
                       float *scale, int32_t *zp) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX512_VNNI)) { quantize_rows_avx512(a, lda, m0, m1, K, q, ldq, scale, zp); return; }
    if (mlk_cpu_has(MLK_CPU_AVX2)) { quantize_rows_avx2(a, lda, m0, m1, K, q, ldq, scale, zp); return; }
#endif
    quantize_rows_portable(a, lda, m0, m1, K, q, ldq, scale, zp);
}

void mlk_qgemm(const uint8_t *q, int64_t ldq, const float *ascale, const int32_t *zp, const int8_t *packed,
               const int32_t *colsum, const float *wscale, int64_t m0, int64_t m1, int64_t N, int64_t K,
               const float *bias, const float *res, float *y, int64_t ldy, int act, float p0, float p1, int wide) {
    if (m1 <= m0 || N <= 0) return;
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX512_VNNI)) { qgemm_vnni512(q, ldq, ascale, zp, packed, colsum, wscale, m0, m1, N, K, bias, res, y, ldy, act, p0, p1, NULL); return; }
    if (mlk_cpu_has(MLK_CPU_AVX2_VNNI)) { qgemm_avxvnni(q, ldq, ascale, zp, packed, colsum, wscale, m0, m1, N, K, bias, res, y, ldy, act, p0, p1, NULL); return; }
    if (mlk_cpu_has(MLK_CPU_AVX2)) { qgemm_avx2(q, ldq, ascale, zp, packed, colsum, wscale, m0, m1, N, K, bias, res, y, ldy, act, p0, p1, NULL, wide); return; }
#endif
    qgemm_portable(q, ldq, ascale, zp, packed, colsum, wscale, m0, m1, N, K, bias, res, y, ldy, act, p0, p1, NULL);
}

void mlk_qgemm_requant(const uint8_t *q, int64_t ldq, const int32_t *zp, const int8_t *packed, const int32_t *colsum,
                       int64_t m0, int64_t m1, int64_t N, int64_t K, const mlk_qrequant *rq, const float *res, float *y,
                       int64_t ldy, int act, float p0, float p1, int wide) {
    if (m1 <= m0 || N <= 0) return;
    // The row scales are not read (the multipliers hold the scales); the weight scales neither.
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX512_VNNI)) { qgemm_vnni512(q, ldq, NULL, zp, packed, colsum, NULL, m0, m1, N, K, NULL, res, y, ldy, act, p0, p1, rq); return; }
    if (mlk_cpu_has(MLK_CPU_AVX2_VNNI)) { qgemm_avxvnni(q, ldq, NULL, zp, packed, colsum, NULL, m0, m1, N, K, NULL, res, y, ldy, act, p0, p1, rq); return; }
    if (mlk_cpu_has(MLK_CPU_AVX2)) { qgemm_avx2(q, ldq, NULL, zp, packed, colsum, NULL, m0, m1, N, K, NULL, res, y, ldy, act, p0, p1, rq, wide); return; }
#endif
    qgemm_portable(q, ldq, NULL, zp, packed, colsum, NULL, m0, m1, N, K, NULL, res, y, ldy, act, p0, p1, rq);
}

// ---- rows of codes with known parameters ----
// q = clamp(round_half_even(SCALED), −z, 255 − z) + z, the float add of 1.5 · 2^23 doing the rounding (exact for
// the clamped values), so both variants give the same bytes; NaN gives z. mlk_quantize_rows_fixed's values lie on the
// grid s · integer (a QDQ pair's output), so the reciprocal's product is within a few ulps of the integer: the
// division's code, at a fraction of its cost. mlk_quantize_rows_divided's are any values: it divides, as
// onnxruntime's QuantizeLinear does.
#define MLK_QROWS_FIXED_BODY(SCALED)                                                                           \
    const float magic = 12582912.0f, below = (float)-z, above = (float)(255 - z), zf = (float)z, inv = 1.0f / s;\
    (void)inv;                                                                                                 \
    for (int64_t m = m0; m < m1; m++) {                                                                        \
        const float *r = a + m * lda;                                                                          \
        uint8_t *out = q + m * ldq;                                                                            \
        scale[m] = s;                                                                                          \
        zp[m] = z;                                                                                             \
        for (int64_t k = 0; k < K; k++) {                                                                      \
            float v = SCALED;                                                                                  \
            v = v == v ? v : 0.0f;                                                                             \
            v = v < below ? below : v;                                                                         \
            v = v > above ? above : v;                                                                         \
            out[k] = (uint8_t)(int32_t)(((v + magic) - magic) + zf);                                           \
        }                                                                                                      \
        for (int64_t k = K; k < ldq; k++) out[k] = 0;                                                          \
    }

static void quantize_rows_fixed_portable(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K, uint8_t *q,
                                         int64_t ldq, float *scale, int32_t *zp, float s, int32_t z) {
    MLK_QROWS_FIXED_BODY(r[k] * inv)
}

static void quantize_rows_divided_portable(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K, uint8_t *q,
                                           int64_t ldq, float *scale, int32_t *zp, float s, int32_t z) {
    MLK_QROWS_FIXED_BODY(r[k] / s)
}

#if MLK_X86
MLK_AVX2 static void quantize_rows_fixed_avx2(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K, uint8_t *q,
                                              int64_t ldq, float *scale, int32_t *zp, float s, int32_t z) {
    MLK_QROWS_FIXED_BODY(r[k] * inv)
}

MLK_AVX512 static void quantize_rows_fixed_avx512(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K,
                                                  uint8_t *q, int64_t ldq, float *scale, int32_t *zp, float s, int32_t z) {
    MLK_QROWS_FIXED_BODY(r[k] * inv)
}
MLK_AVX512 static void quantize_rows_divided_avx512(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K,
                                                    uint8_t *q, int64_t ldq, float *scale, int32_t *zp, float s, int32_t z) {
    MLK_QROWS_FIXED_BODY(r[k] / s)
}
MLK_AVX2 static void quantize_rows_divided_avx2(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K, uint8_t *q,
                                                int64_t ldq, float *scale, int32_t *zp, float s, int32_t z) {
    MLK_QROWS_FIXED_BODY(r[k] / s)
}
#endif

typedef void (*quantize_rows_fn)(const float *, int64_t, int64_t, int64_t, int64_t, uint8_t *, int64_t, float *, int32_t *,
                                 float, int32_t);

// Rows back to back in both a and q (lda = ldq = K, so K is a multiple of 4 and there is no padding) quantized as one
// row of all their values, then each row's scale and zero point set: the same bytes, in full vectors instead of a
// short row's vector and scalar tail (K = 24 or 40: 3136 × 24 twice as fast with AVX-512). 0 when not so laid out.
static int quantize_rows_flat(quantize_rows_fn rows, const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K,
                              uint8_t *q, int64_t ldq, float *scale, int32_t *zp, float s, int32_t z) {
    if (m1 - m0 <= 1 || lda != K || ldq != K) return 0;
    float s0;
    int32_t z0;
    rows(a + m0 * K, (m1 - m0) * K, 0, 1, (m1 - m0) * K, q + m0 * K, (m1 - m0) * K, &s0, &z0, s, z);
    for (int64_t m = m0; m < m1; m++) {
        scale[m] = s;
        zp[m] = z;
    }
    return 1;
}

void mlk_quantize_rows_divided(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K, uint8_t *q, int64_t ldq,
                               float *scale, int32_t *zp, float s, int32_t z) {
    if (quantize_rows_flat(mlk_quantize_rows_divided, a, lda, m0, m1, K, q, ldq, scale, zp, s, z)) return;
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX512)) { quantize_rows_divided_avx512(a, lda, m0, m1, K, q, ldq, scale, zp, s, z); return; }
    if (mlk_cpu_has(MLK_CPU_AVX2)) { quantize_rows_divided_avx2(a, lda, m0, m1, K, q, ldq, scale, zp, s, z); return; }
#endif
    quantize_rows_divided_portable(a, lda, m0, m1, K, q, ldq, scale, zp, s, z);
}

// ---- onnxruntime's DynamicQuantizeLinear parameters ----
// The range of x (NaN skipped: a comparison with NaN is false, and _mm256_min_ps / _mm256_max_ps return their
// second operand, the running value, when either is NaN), so both variants find the same bounds.
static void dynamic_range_portable(const float *x, int64_t n, float *mn, float *mx) {
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    *mn = lo;
    *mx = hi;
}

#if MLK_X86
// Four running bounds per lane (four independent chains), folded at the end: the bounds start at +0 and only move to
// strictly smaller or larger values, so the order they are folded in cannot change them (not even a zero's sign).
MLK_AVX2 static void dynamic_range_avx2(const float *x, int64_t n, float *mn, float *mx) {
    __m256 lo[4], hi[4];
    for (int j = 0; j < 4; j++) lo[j] = hi[j] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 4; j++) {
            const __m256 v = _mm256_loadu_ps(x + i + 8 * j);
            lo[j] = _mm256_min_ps(v, lo[j]);
            hi[j] = _mm256_max_ps(v, hi[j]);
        }
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        lo[0] = _mm256_min_ps(v, lo[0]);
        hi[0] = _mm256_max_ps(v, hi[0]);
    }
    float l[32], h[32];
    for (int j = 0; j < 4; j++) { _mm256_storeu_ps(l + 8 * j, lo[j]); _mm256_storeu_ps(h + 8 * j, hi[j]); }
    float a = 0.0f, b = 0.0f;
    for (int j = 0; j < 32; j++) {
        if (l[j] < a) a = l[j];
        if (h[j] > b) b = h[j];
    }
    for (; i < n; i++) {
        if (x[i] < a) a = x[i];
        if (x[i] > b) b = x[i];
    }
    *mn = a;
    *mx = b;
}

MLK_AVX512 static void dynamic_range_avx512(const float *x, int64_t n, float *mn, float *mx) {
    __m512 lo[4], hi[4];
    for (int j = 0; j < 4; j++) lo[j] = hi[j] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int j = 0; j < 4; j++) {
            const __m512 v = _mm512_loadu_ps(x + i + 16 * j);
            lo[j] = _mm512_min_ps(v, lo[j]);
            hi[j] = _mm512_max_ps(v, hi[j]);
        }
    float l[64], h[64];
    for (int j = 0; j < 4; j++) { _mm512_storeu_ps(l + 16 * j, lo[j]); _mm512_storeu_ps(h + 16 * j, hi[j]); }
    float a = 0.0f, b = 0.0f;
    for (int j = 0; j < 64; j++) {
        if (l[j] < a) a = l[j];
        if (h[j] > b) b = h[j];
    }
    float ta, tb;
    dynamic_range_avx2(x + i, n - i, &ta, &tb);
    *mn = ta < a ? ta : a;
    *mx = tb > b ? tb : b;
}
#endif

void mlk_dynamic_quant_params(const float *x, int64_t n, float *scale, int32_t *zp) {
    float lo, hi;
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX512)) dynamic_range_avx512(x, n, &lo, &hi);
    else if (mlk_cpu_has(MLK_CPU_AVX2)) dynamic_range_avx2(x, n, &lo, &hi);
    else
#endif
        dynamic_range_portable(x, n, &lo, &hi);
    const float s = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    float z = 0.0f - lo / s;
    z = z > 0.0f ? (z > 255.0f ? 255.0f : z) : 0.0f;   // NaN (a range from −∞ to ∞ or to +∞: scale ∞) gives 0
    *scale = s;
    *zp = (int32_t)nearbyintf(z);
}

void mlk_quantize_rows_fixed(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K, uint8_t *q, int64_t ldq,
                             float *scale, int32_t *zp, float s, int32_t z) {
    if (quantize_rows_flat(mlk_quantize_rows_fixed, a, lda, m0, m1, K, q, ldq, scale, zp, s, z)) return;
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX512)) { quantize_rows_fixed_avx512(a, lda, m0, m1, K, q, ldq, scale, zp, s, z); return; }
    if (mlk_cpu_has(MLK_CPU_AVX2)) { quantize_rows_fixed_avx2(a, lda, m0, m1, K, q, ldq, scale, zp, s, z); return; }
#endif
    quantize_rows_fixed_portable(a, lda, m0, m1, K, q, ldq, scale, zp, s, z);
}
