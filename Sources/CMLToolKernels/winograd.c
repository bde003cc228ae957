// Winograd F(2×2, 3×3) for stride-1, undilated 3×3 convolutions (groups 1), after Lavin & Gray, "Fast Algorithms
// for Convolutional Neural Networks" (2015): each 2×2 block of outputs ("tile") comes from a 4×4 input patch d as
// Y = Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A, so the 16 element-wise products become 16 GEMMs (tiles × C) · (C × N) with 16/36 of
// the direct method's multiply-adds. The transforms are additions only; the weights' transform is done once, in
// double precision, when the model is loaded. Results differ from im2col + GEMM by rounding (a few ulps), not by
// how work is split: every tile and output is computed by one fixed sequence of operations.
#include "CMLToolKernels.h"
#include "isa.h"
#include "vec.h"
#include <string.h>

int64_t mlk_winograd_packed_count(int64_t C, int64_t N) { return 16 * mlk_packed_count(C, N); }

void mlk_winograd_pack(const float *w, int64_t C, int64_t N, float *tmp, float *packed) {
    static const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
    int64_t pc = mlk_packed_count(C, N);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            for (int64_t e = 0; e < C * N; e++) {
                double u = 0;
                for (int a = 0; a < 3; a++)
                    for (int b = 0; b < 3; b++) u += G[i][a] * G[j][b] * (double)w[(a * 3 + b) * C * N + e];
                tmp[e] = (float)u;
            }
            mlk_pack(tmp, C, N, packed + (i * 4 + j) * pc);
        }
}

// ---- input transform: V[ξ][t][c] = (Bᵀ d B)[ξ] for tiles [t0, t1) ----

// Bᵀ d B of one 4×4 patch (rows, then columns): additions only, the same order in every variant.
#define MLK_BT_B(d, v, ADD, SUB)                                                                                       \
    {                                                                                                                \
        __typeof__(d[0]) e[16];                                                                                      \
        for (int j = 0; j < 4; j++) {                                                                                \
            e[j] = SUB(d[j], d[8 + j]);                                                                              \
            e[4 + j] = ADD(d[4 + j], d[8 + j]);                                                                      \
            e[8 + j] = SUB(d[8 + j], d[4 + j]);                                                                      \
            e[12 + j] = SUB(d[4 + j], d[12 + j]);                                                                    \
        }                                                                                                            \
        for (int i = 0; i < 4; i++) {                                                                                \
            v[i * 4] = SUB(e[i * 4], e[i * 4 + 2]);                                                                  \
            v[i * 4 + 1] = ADD(e[i * 4 + 1], e[i * 4 + 2]);                                                          \
            v[i * 4 + 2] = SUB(e[i * 4 + 2], e[i * 4 + 1]);                                                          \
            v[i * 4 + 3] = SUB(e[i * 4 + 1], e[i * 4 + 3]);                                                          \
        }                                                                                                            \
    }
#define MLK_FADD(a, b) ((a) + (b))
#define MLK_FSUB(a, b) ((a) - (b))

// The tile's 16 input pixels (NULL where padding); returns whether all are inside.
static inline int tile_inputs(const float *x, int64_t H, int64_t W, int64_t C, int64_t pt, int64_t pl, int64_t TW,
                              int64_t t, const float **p) {
    int64_t iy0 = (t / TW) * 2 - pt, ix0 = (t % TW) * 2 - pl;
    int inside = 1;
    for (int k = 0; k < 16; k++) {
        int64_t iy = iy0 + k / 4, ix = ix0 + k % 4;
        p[k] = iy >= 0 && iy < H && ix >= 0 && ix < W ? x + (iy * W + ix) * C : NULL;
        inside &= p[k] != NULL;
    }
    return inside;
}

// Channels [c0, C) of one tile.
static inline void input_scalar(const float *const *p, int64_t c0, int64_t C, float *v, int64_t plane) {
    for (int64_t c = c0; c < C; c++) {
        float d[16], r[16];
        for (int k = 0; k < 16; k++) d[k] = p[k] ? p[k][c] : 0.0f;
        MLK_BT_B(d, r, MLK_FADD, MLK_FSUB)
        for (int k = 0; k < 16; k++) v[k * plane + c] = r[k];
    }
}

static void input_portable(const float *x, int64_t H, int64_t W, int64_t C, int64_t pt, int64_t pl, int64_t TW,
                           int64_t t0, int64_t t1, float *V, int64_t plane) {
    for (int64_t t = t0; t < t1; t++) {
        const float *p[16];
        tile_inputs(x, H, W, C, pt, pl, TW, t, p);
        input_scalar(p, 0, C, V + t * C, plane);
    }
}

#if MLK_X86
// Interior tiles 8 channels at a time; border tiles and the last channels as input_scalar.
MLK_AVX2 static void input_avx2(const float *x, int64_t H, int64_t W, int64_t C, int64_t pt, int64_t pl, int64_t TW,
                                int64_t t0, int64_t t1, float *V, int64_t plane) {
    for (int64_t t = t0; t < t1; t++) {
        const float *p[16];
        float *v = V + t * C;
        int64_t c = 0;
        if (tile_inputs(x, H, W, C, pt, pl, TW, t, p))
            for (; c + 8 <= C; c += 8) {
                __m256 d[16], r[16];
                for (int k = 0; k < 16; k++) d[k] = _mm256_loadu_ps(p[k] + c);
                MLK_BT_B(d, r, _mm256_add_ps, _mm256_sub_ps)
                for (int k = 0; k < 16; k++) _mm256_storeu_ps(v + k * plane + c, r[k]);
            }
        input_scalar(p, c, C, v, plane);
    }
}
#endif

int64_t mlk_winograd_plane(int64_t T, int64_t C) {
    // Whole 4 KB pages plus one cache line: the 16 planes a tile touches fall in 16 different L1 sets (with a
    // multiple of 4 KB they would all compete for one: the input transform of a 40×40×64 layer ran 20× slower).
    return (T * C + 1023) / 1024 * 1024 + 16;
}

void mlk_winograd_input(const float *x, int64_t H, int64_t W, int64_t C, int64_t pt, int64_t pl, int64_t TW,
                        int64_t t0, int64_t t1, float *V, int64_t plane) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { input_avx2(x, H, W, C, pt, pl, TW, t0, t1, V, plane); return; }
#endif
    input_portable(x, H, W, C, pt, pl, TW, t0, t1, V, plane);
}

// ---- output transform: y = act(Aᵀ m A + bias) for tiles [t0, t1), m[ξ] = M[ξ][t][n] ----

// The 2×2 outputs of one tile's 16 values (the same additions in the same order in every variant).
#define MLK_AT_A(m, y, ADD, SUB)                                                                                       \
    {                                                                                                                \
        __typeof__(m[0]) r0[4], r1[4];                                                                               \
        for (int j = 0; j < 4; j++) {                                                                                \
            r0[j] = ADD(ADD(m[j], m[4 + j]), m[8 + j]);                                                              \
            r1[j] = SUB(SUB(m[4 + j], m[8 + j]), m[12 + j]);                                                         \
        }                                                                                                            \
        y[0] = ADD(ADD(r0[0], r0[1]), r0[2]);                                                                        \
        y[1] = SUB(SUB(r0[1], r0[2]), r0[3]);                                                                        \
        y[2] = ADD(ADD(r1[0], r1[1]), r1[2]);                                                                        \
        y[3] = SUB(SUB(r1[1], r1[2]), r1[3]);                                                                        \
    }
// Output n of one tile: the tile's pixels inside the output get bias + activation.
static inline void tile_scalar(const float *M, int64_t plane, int64_t n, float *const *out, const int *inside,
                               const float *bias, int act, float p0, float p1) {
    float m[16], y[4];
    for (int k = 0; k < 16; k++) m[k] = M[k * plane + n];
    MLK_AT_A(m, y, MLK_FADD, MLK_FSUB)
    for (int k = 0; k < 4; k++)
        if (inside[k]) out[k][n] = act_scalar(y[k] + (bias ? bias[n] : 0), act, p0, p1);
}

// The tile's four output pixels (NULL outside the output) and which are inside.
static inline void tile_outputs(int64_t t, int64_t TW, int64_t OH, int64_t OW, int64_t N, float *y, float **out,
                                int *inside) {
    int64_t oy = (t / TW) * 2, ox = (t % TW) * 2;
    for (int k = 0; k < 4; k++) {
        int64_t py = oy + k / 2, px = ox + k % 2;
        inside[k] = py < OH && px < OW;
        out[k] = inside[k] ? y + (py * OW + px) * N : y;
    }
}

static void output_portable(const float *M, int64_t plane, int64_t N, int64_t TW, int64_t OH, int64_t OW, int64_t t0,
                            int64_t t1, const float *bias, float *y, int act, float p0, float p1) {
    for (int64_t t = t0; t < t1; t++) {
        float *out[4];
        int inside[4];
        tile_outputs(t, TW, OH, OW, N, y, out, inside);
        for (int64_t n = 0; n < N; n++) tile_scalar(M + t * N, plane, n, out, inside, bias, act, p0, p1);
    }
}

#if MLK_X86
MLK_AVX2 static void output_avx2(const float *M, int64_t plane, int64_t N, int64_t TW, int64_t OH, int64_t OW, int64_t t0,
                                 int64_t t1, const float *bias, float *y, int act, float p0, float p1) {
    int vec = MLK_ACT_VECTOR(act);
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    for (int64_t t = t0; t < t1; t++) {
        float *out[4];
        int inside[4];
        tile_outputs(t, TW, OH, OW, N, y, out, inside);
        const float *Mt = M + t * N;
        int64_t n = 0;
        for (; vec && n + 8 <= N; n += 8) {
            __m256 m[16], r[4];
            for (int k = 0; k < 16; k++) m[k] = _mm256_loadu_ps(Mt + k * plane + n);
            MLK_AT_A(m, r, _mm256_add_ps, _mm256_sub_ps)
            __m256 b = bias ? _mm256_loadu_ps(bias + n) : _mm256_setzero_ps();
            for (int k = 0; k < 4; k++)
                if (inside[k]) _mm256_storeu_ps(out[k] + n, act8(_mm256_add_ps(r[k], b), act, lo, hi));
        }
        for (; n < N; n++) tile_scalar(Mt, plane, n, out, inside, bias, act, p0, p1);
    }
}
#endif

void mlk_winograd_output(const float *M, int64_t plane, int64_t N, int64_t TW, int64_t OH, int64_t OW, int64_t t0,
                         int64_t t1, const float *bias, float *y, int act, float p0, float p1) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) { output_avx2(M, plane, N, TW, OH, OW, t0, t1, bias, y, act, p0, p1); return; }
#endif
    output_portable(M, plane, N, TW, OH, OW, t0, t1, bias, y, act, p0, p1);
}
