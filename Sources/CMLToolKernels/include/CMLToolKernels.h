// Hot CPU kernels for MLToolEngine, one file per op family: gemm.c, conv.c (im2col, stem), winograd.c (3×3),
// depthwise.c, elementwise.c, qgemm.c (int8), palette.c (palettized weights decoded into GEMM panels), qpalette.c
// (int8-table palettes decoded into int8 panels), quantize.c (ONNX QuantizeLinear / DequantizeLinear). Each op has
// a portable C version and AVX2+FMA (and, for GEMM, depthwise and int8, AVX-512 / VNNI) versions side by side,
// compiled with per-function target attributes (isa.h); every call picks the best variant the current CPU level
// allows (CMLToolCPU: one feature table, MLTOOL_CPU_LEVEL to force a lower level), so the binary runs, slower, on any
// x86-64 (or other) CPU.
#ifndef CMLTOOLKERNELS_H
#define CMLTOOLKERNELS_H
#include <stdint.h>

// Activation codes for the fused epilogues; p0/p1 are the parameters.
enum {
    MLK_ACT_NONE = 0,
    MLK_ACT_RELU = 1,
    MLK_ACT_CLIP = 2,          // min(max(x, p0), p1)
    MLK_ACT_LEAKY = 3,         // x < 0 ? p0·x : x
    MLK_ACT_SIGMOID = 4,
    MLK_ACT_HARDSIGMOID = 5,   // max(0, min(1, p0·x + p1))
    MLK_ACT_HARDSWISH = 6,     // x · relu6(x + 3) / 6
    MLK_ACT_SWISH = 7,         // x · sigmoid(x)
    MLK_ACT_TANH = 8,
    MLK_ACT_GELU = 9           // ½x·(1 + erf(x/√2)), the same bits as mlk_gelu
};

// ---- element-wise (elementwise.c) ----

/// y (rows, cols) row-major: y[r][c] = act(y[r][c] + bias[c]); bias may be NULL.
void mlk_bias_act(float *y, int64_t rows, int64_t cols, const float *bias, int act, float p0, float p1);

/// y[i] = act(a[i] + b[i]) for n elements.
void mlk_add_act(const float *a, const float *b, float *y, int64_t n, int act, float p0, float p1);

/// Layer norm over the last axis of x (rows, len) for rows [r0, r1): y = (x − mean)·(1/√(variance + eps))·scale + bias
/// (scale, bias: len values, or NULL for 1 and 0); sums in 8 lanes, the same bits at every level.
void mlk_layer_norm_rows(const float *x, float *y, int64_t len, int64_t r0, int64_t r1, const float *scale,
                         const float *bias, float eps);

// ---- softmax (softmax.c) ----

/// Softmax over the middle axis of one outer slice x (len, inner): for lanes i in [i0, i1), y[j][i] =
/// e_j / S with e_j = mlk_expf(x[j][i] − max_j) and S = Σ_j e_j in double as 16 partial sums (e_j into sum j mod 16,
/// each in j order) added in order, rounded to float: the same bits in every variant and however lanes are split.
void mlk_softmax(const float *x, float *y, int64_t len, int64_t inner, int64_t i0, int64_t i1);

/// Softmax over the last axis of x (rows, len) for rows [r0, r1): the same definition and bits as mlk_softmax.
void mlk_softmax_rows(const float *x, float *y, int64_t len, int64_t r0, int64_t r1);

/// One row of attention scores: y = softmax(x / divisor + addend) over len values, the quotient and sum each rounded
/// as a division step and an add step would round them, then mlk_softmax_rows's definition. y may be x.
void mlk_softmax_row_scaled(const float *x, float *y, int64_t len, float divisor, const float *addend);

// ---- transpose (transpose.c) ----

/// y[i·ldy + j] = x[j·ldx + i] for i < rows, j < cols: a plane of a transpose whose output's innermost axis is not
/// the input's (the input's innermost axis is i). Overlapping x and y are not allowed.
void mlk_transpose_plane(const float *x, int64_t ldx, float *y, int64_t ldy, int64_t rows, int64_t cols);

// ---- erf and GELU (erf.c) ----

/// y[i] = erf(x[i]) for i < n (absolute error below 4e-7; NaN stays NaN): Abramowitz & Stegun 7.1.26.
void mlk_erf(const float *x, float *y, int64_t n);
/// y[i] = ½x[i]·(1 + erf(x[i]/√2)) for i < n, the exact GELU, erf as mlk_erf's.
void mlk_gelu(const float *x, float *y, int64_t n);

// ---- GEMM on packed weights (gemm.c) ----

/// Floats needed to pack a (K, N) matrix into 16-column panels.
int64_t mlk_packed_count(int64_t K, int64_t N);

/// Packs w (K, N) row-major into panels of 16 columns: panel p holds w[k][16p ..< 16p+16] for every k, zero-padded.
void mlk_pack(const float *w, int64_t K, int64_t N, float *packed);

/// Rows [m0, m1) of y (M, N; row stride ldy) = act(a (M, K; row stride lda) · B + bias), B packed by mlk_pack;
/// bias may be NULL. Callers split rows across threads; each row's result does not depend on the split.
void mlk_gemm_packed(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N, int64_t K,
                     const float *bias, float *y, int64_t ldy, int act, float p0, float p1);

/// mlk_gemm_packed with a residual: y = act(a · B + bias + res), res (y's layout: element (m, n) at res[m·ldy + n];
/// NULL: none) added after the bias, before the activation — the bits of mlk_gemm_packed with no activation followed
/// by mlk_add_act, without writing and reading y between them (a block's projection conv and its skip connection).
void mlk_gemm_packed_res(const float *a, int64_t lda, const float *packed, int64_t m0, int64_t m1, int64_t N, int64_t K,
                         const float *bias, const float *res, float *y, int64_t ldy, int act, float p0, float p1);

// ---- palettized weights (palette.c) ----

/// Panels [p0, p1) of the mlk_pack layout of a (K, N) palettized weight (panel p at packed + (p − p0)·K·16, so
/// `packed` is the layout's panel p0), decoded from its k-bit indices: element
/// (k, n) is index k·N + n of the bit stream `idx` (`bytes` long; element i in stream bits [i·bits, i·bits + bits),
/// stream bit j = bit j mod 8 of byte j / 8, as the native format stores palettes) and its value is
/// (row_scale[k] · col_scale[n]) · lut[row_base[k] + col_base[n] + index]. bits ∈ {1, 2, 4, 6, 8}; row_* have K
/// entries, col_* ceil(N / 16)·16 (the padding columns are written as 0); the caller checks that every base plus
/// 2^bits − 1 is inside lut and that the stream holds K·N indices. Every variant gives the same bits.
void mlk_palette_unpack(const uint8_t *idx, int64_t bytes, int bits, int64_t K, int64_t N, const float *lut,
                        const int32_t *row_base, const float *row_scale, const int32_t *col_base,
                        const float *col_scale, int64_t p0, int64_t p1, float *packed);

/// Up to MLK_PALETTE_GEMV_ROWS input rows a (rows × K, row stride lda) times the palettized weight of
/// mlk_palette_unpack, for the columns of panels [pa, pb): y[m][n] = act(Σ_k a[m][k]·w[k][n] + bias[n] + res[m][n])
/// (y and res row m at y + m·N and res + m·N; bias indexed by column; bias and res may be NULL) with each weight
/// decoded into a register and used there for every row of a tile (up to 4 rows × 4 panels; from 5 rows, 4 bits
/// only, tiles of up to 25 rows × 1 panel read from `work`, MLK_PALETTE_GEMV_WORK floats the rows are copied into
/// (NULL: no tall tiles); `packed` ≠ 0: `work` already holds them, from mlk_palette_tall_pack) — the bits of
/// mlk_gemm_packed_res on the decoded panels. Returns 0 and does nothing where it has no variant (below AVX2; at
/// AVX2 anything but 4 bits on up to 4 rows of an even number of columns; 8 bits, more rows, more than one table over
/// those rows and panels, or 5 rows and more at other widths or without `work`); the caller then decodes and
/// multiplies.
#define MLK_PALETTE_GEMV_ROWS 63
#define MLK_PALETTE_GEMV_WORK(rows, K) (((rows) + 24) * (K))
/// MLK_PALETTE_GEMV_WORK as a function (a macro with arguments does not reach Swift).
int64_t mlk_palette_gemv_work(int64_t rows, int64_t K);
int mlk_palette_gemv(const float *a, int64_t rows, int64_t lda, const uint8_t *idx, int64_t bytes, int bits, int64_t K,
                     int64_t N, const float *lut, const int32_t *row_base, const float *row_scale,
                     const int32_t *col_base, const float *col_scale, int64_t pa, int64_t pb, const float *bias,
                     const float *res, float *y, int act, float p0, float p1, float *work, int packed);

/// The tiles mlk_palette_gemv takes `rows` rows in as tall tiles over every panel of a (K, N) weight with these
/// bases, or 0 where it does not (then mlk_palette_tall_pack is not for it). With tiles, a caller that splits the
/// columns packs the rows once — tiles [t0, t1) at a time, so across threads — with mlk_palette_tall_pack into
/// MLK_PALETTE_GEMV_WORK(rows, K) floats, and passes them to each part's mlk_palette_gemv with `packed` = 1.
int64_t mlk_palette_tall_tiles(int64_t rows, int bits, int64_t K, int64_t N, const int32_t *row_base,
                               const int32_t *col_base);
void mlk_palette_tall_pack(const float *a, int64_t rows, int64_t lda, int64_t K, int64_t t0, int64_t t1, float *work);

// ---- convolution around the GEMM (conv.c) ----

/// im2col of one image for one channel group: x (H, W, C) → cols (OH·OW, KH·KW·cg), reading channels [c0, c0+cg).
/// Padding reads as 0.
void mlk_im2col(const float *x, int64_t H, int64_t W, int64_t C, int64_t c0, int64_t cg,
                int64_t KH, int64_t KW, float *cols, int64_t OH, int64_t OW,
                int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl);

/// im2col of output pixels [p0, p1) (p = oy·OW + ox) of one image, all channels: x (H, W, C) → the p1 − p0 rows of
/// cols (KH·KW·C floats each), pixel p in row p − p0. Padding reads as 0. A thread fills a small block of rows, then
/// multiplies it while it is still in cache, and reuses the block for the next pixels.
void mlk_im2col_rows(const float *x, int64_t H, int64_t W, int64_t C, int64_t KH, int64_t KW, float *cols,
                     int64_t OW, int64_t p0, int64_t p1, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                     int64_t pl);

/// 1 when mlk_conv_rows computes interior pixels in place (a stem: no dilation, N ≤ 32, and KW·C ≤ 64 on AVX-512,
/// ≤ 48 on AVX2).
int mlk_conv_direct_eligible(int64_t C, int64_t KW, int64_t N, int64_t dh, int64_t dw);

/// A groups-1 conv of one image for output pixels [p0, p1): y (OH·OW, N) = act(im2col(x) · packed + bias), packed by
/// mlk_pack from the (KH·KW·C, N) weights. Pixels with every tap inside the image are computed in place when
/// mlk_conv_direct_eligible; the others go through im2col rows in `cols` (room for min(OW, p1 − p0) rows of KH·KW·C
/// floats, private to the caller) and mlk_gemm_packed. Results are identical either way.
void mlk_conv_rows(const float *x, int64_t H, int64_t W, int64_t C, int64_t KH, int64_t KW, const float *packed,
                   int64_t N, int64_t OW, int64_t p0, int64_t p1, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                   int64_t pt, int64_t pl, const float *bias, float *y, float *cols, int act, float a0, float a1);

// ---- Winograd F(2×2, 3×3) (winograd.c) ----

/// Floats of the transformed, packed weights of a 3×3 conv with C inputs and N outputs: 16 mlk_pack matrices (C, N).
int64_t mlk_winograd_packed_count(int64_t C, int64_t N);

/// w (3, 3, C, N) → U[ξ] = (G g Gᵀ)[ξ] for the 16 positions ξ, each (C, N) packed by mlk_pack; tmp holds C·N floats.
void mlk_winograd_pack(const float *w, int64_t C, int64_t N, float *tmp, float *packed);

/// Floats between the 16 planes of V (T tiles × C) or M (T × N): T·C rounded up to whole 4 KB pages, plus a
/// cache line, so the planes a tile touches do not compete for one cache set.
int64_t mlk_winograd_plane(int64_t T, int64_t C);

/// Input transform of tiles [t0, t1) of one image x (H, W, C) (tile t = 2×2 outputs at row 2·(t / TW), column
/// 2·(t % TW); pt, pl the top and left padding; padding reads as 0): V[ξ][t][c] = (Bᵀ d B)[ξ] for ξ < 16, the
/// planes V[ξ] `plane` floats apart (mlk_winograd_plane), each (T, C).
void mlk_winograd_input(const float *x, int64_t H, int64_t W, int64_t C, int64_t pt, int64_t pl, int64_t TW,
                        int64_t t0, int64_t t1, float *V, int64_t plane);

/// Output transform of tiles [t0, t1): y (OH, OW, N) = act(Aᵀ M A + bias) from M[ξ] (T, N) = V[ξ] · U[ξ], planes
/// `plane` floats apart; outputs of a tile past OH or OW are not written. bias may be NULL.
void mlk_winograd_output(const float *M, int64_t plane, int64_t N, int64_t TW, int64_t OH, int64_t OW, int64_t t0,
                         int64_t t1, const float *bias, float *y, int act, float p0, float p1);

// ---- depthwise convolution (depthwise.c) ----

/// Depthwise convolution of one image, channel multiplier 1, output rows [oy0, oy1).
/// x (H, W, C), w (KH, KW, C), bias (C) or NULL, y (OH, OW, C); pads top/left; activation fused.
void mlk_depthwise(const float *x, int64_t H, int64_t W, int64_t C,
                   const float *w, int64_t KH, int64_t KW, const float *bias,
                   float *y, int64_t oy0, int64_t oy1, int64_t OW,
                   int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl,
                   int act, float p0, float p1);

/// `mlk_depthwise` for channels [ch0, ch1) only (ch0 a multiple of 64 for results identical to `mlk_depthwise`'s).
void mlk_depthwise_channels(const float *x, int64_t H, int64_t W, int64_t C,
                            const float *w, int64_t KH, int64_t KW, const float *bias,
                            float *y, int64_t oy0, int64_t oy1, int64_t OW,
                            int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl,
                            int act, float p0, float p1, int64_t ch0, int64_t ch1);


// ---- int8 GEMM (qgemm.c) ----
// y = act(A · W + bias) with W int8 per output column (real w[k][n] = wscale[n] · W[k][n]) and A quantized per row to
// 7 bits (0…127) on the fly (real a[m][k] ≈ ascale[m] · (Q[m][k] − zp[m])). The int32 sums are exact, so every variant
// gives bit-identical results: y[m][n] = act(fma(float(Σ Q·W − zp[m]·colsum[n]), ascale[m]·wscale[n], bias[n])).
// Seven bits keep AVX2's vpmaddubsw exact (two products of at most 127 · 128 summed in int16). A quantized file's
// 8-bit codes (mlk_quantize_rows_fixed, mlk_quantize_rows_divided) are exact with weights in −64…64, at a VNNI level,
// or with `wide` sums (weights in −127…127).

// Variants: portable C, AVX2 (vpmaddubsw + vpmaddwd), AVX-VNNI (256-bit vpdpbusd), AVX-512 VNNI.

/// Bytes of one packed 16-column panel of a (K, N) int8 matrix: K rounded up to 4, times 16.
int64_t mlk_qpanel_bytes(int64_t K);

/// Packs w (K, N) int8 row-major into 16-column panels of 4-deep k groups: panel p, group g holds, for each of its
/// 16 columns j, w[4g ..< 4g+4][16p + j] (64 bytes), zero-padded. colsum (N rounded up to 16) gets Σ_k w[k][n].
/// `packed` holds ceil(N/16) · mlk_qpanel_bytes(K) bytes.
void mlk_qpack(const int8_t *w, int64_t K, int64_t N, int8_t *packed, int32_t *colsum);

/// The column sums of `count` consecutive panels as mlk_qpack lays them out (K rows each), padding included (0 where
/// mlk_qpack zero-pads): colsum[16·p + j] for panel p, column j.
void mlk_qpanel_colsum(const int8_t *panels, int64_t K, int64_t count, int32_t *colsum);

/// Row stride in bytes of quantized activations with K values per row (K rounded up to 4).
int64_t mlk_qrow_bytes(int64_t K);

/// Quantizes rows [m0, m1) of a (row stride lda, K values per row) to 7 bits: each row's range is widened to include
/// 0, scale[m] = (max − min) / 127, zp[m] = round(−min / scale), q = clamp(round(a / scale) + zp, 0, 127) (a is
/// multiplied by the float reciprocal of the scale; rounding is to nearest even). NaN takes no part in the range and
/// quantizes to 0; every level gives the same bytes, scales and zero points, NaN and infinities included. Row m of q
/// starts at q + m·ldq; its bytes past K are zeroed.
void mlk_quantize_rows(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K, uint8_t *q, int64_t ldq,
                       float *scale, int32_t *zp);

/// Rows [m0, m1) of a whose values are already s · (code − z) for 8-bit codes (an ONNX QuantizeLinear →
/// DequantizeLinear pair; z in 0…255, shifted by 128 for int8 codes) as those codes: q = clamp(round(a · (1/s)) + z, 0,
/// 255) (halves to even; NaN gives z; for values on that grid, the codes a / s gives), scale[m] = s, zp[m] = z; bytes
/// past K zeroed. With weights in −127…127 (mlk_qgemm's `wide` where they leave −64…64) its sums are then exact:
/// the integer products the ONNX file states.
void mlk_quantize_rows_fixed(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K, uint8_t *q, int64_t ldq,
                             float *scale, int32_t *zp, float s, int32_t z);

/// mlk_quantize_rows_fixed for any values: q = clamp(round_half_even(a / s) + z, 0, 255), a divided by s in float32
/// as onnxruntime's QuantizeLinear does (NaN gives z); scale[m] = s, zp[m] = z; bytes past K zeroed.
void mlk_quantize_rows_divided(const float *a, int64_t lda, int64_t m0, int64_t m1, int64_t K, uint8_t *q, int64_t ldq,
                               float *scale, int32_t *zp, float s, int32_t z);

/// ONNX DynamicQuantizeLinear's parameters of x (n values) as onnxruntime computes them: the range widened to include
/// 0 (NaN takes no part), scale = (max − min) / 255 (1 when max = min), zp = round_half_even(clamp(−min / scale, 0,
/// 255)), 0 where −min / scale is NaN (a range from −∞). Every level gives the same bits.
void mlk_dynamic_quant_params(const float *x, int64_t n, float *scale, int32_t *zp);

/// Rows [m0, m1) of y (M, N; row stride ldy) from quantized rows q (ldq from mlk_qrow_bytes) and W packed by
/// mlk_qpack with its colsum and wscale (N rounded up to 16 values each); bias may be NULL. With a residual res (y's
/// layout; NULL for none, never y itself), each value is (that sum) + res before the activation, as
/// mlk_gemm_packed_res: the bits of the product without activation followed by mlk_add_act.
/// `wide`: the rows may hold 8-bit codes (above 127) and the weights lie in −127…127 but not all in −64…64 — the
/// AVX2 level (no VNNI) then sums c · w for c = q − 128 as |c| · (w · sign(c)), whose pairs cannot saturate, and
/// adds 128 · colsum back; the sums stay exact and every level gives the same bits. 0 otherwise (7-bit rows, or
/// weights in −64…64), where that costs a sign and an absolute value per product vector for nothing.
void mlk_qgemm(const uint8_t *q, int64_t ldq, const float *ascale, const int32_t *zp, const int8_t *packed,
               const int32_t *colsum, const float *wscale, int64_t m0, int64_t m1, int64_t N, int64_t K,
               const float *bias, const float *res, float *y, int64_t ldy, int act, float p0, float p1, int wide);

/// The requantization of an int8 layer's sums that onnxruntime's QLinearConv / QLinearMatMul / QGemm (with y_scale)
/// do: a layer whose input is 8-bit codes (mlk_quantize_rows_fixed) and whose output an ONNX QuantizeLinear
/// (per tensor) quantizes. bias (int32, the file's bias codes) and mult (x_scale · w_scale[n] / y_scale, in float) hold
/// N rounded up to 16 values, zero-padded; lo and hi are the code range less the output zero point; scale is the
/// output's scale. codes (NULL: none) makes the layer write the output codes as bytes instead of y: row m's
/// codes at codes + m · ldc, each clamp(round_half_even(float(c) · mult[n]), lo, hi) − lo (0…255: the code less the
/// range's low end, which a reader takes with zero point −lo; y, res and the activation are then not used).
typedef struct {
    const int32_t *bias;
    const float *mult;
    float lo, hi, scale;
    uint8_t *codes;
    int64_t ldc;
} mlk_qrequant;

/// Rows [m0, m1) of y as mlk_qgemm, requantized instead of scaled: with c = Σ Q·W − zp[m]·colsum[n] + bias[n] (exact in
/// int32), y[m][n] = act(clamp(round_half_even(float(c) · mult[n]), lo, hi) · scale + res[m][n]) — the output codes (less
/// their zero point) the DequantizeLinear after the QuantizeLinear gives, then a residual (res NULL: none; the bits of
/// mlk_add_act after it) and an activation. Every level gives the same bits.
void mlk_qgemm_requant(const uint8_t *q, int64_t ldq, const int32_t *zp, const int8_t *packed, const int32_t *colsum,
                       int64_t m0, int64_t m1, int64_t N, int64_t K, const mlk_qrequant *rq, const float *res, float *y,
                       int64_t ldy, int act, float p0, float p1, int wide);


// ---- linear quantization of float tensors (quantize.c) ----
// ONNX QuantizeLinear / DequantizeLinear with one scale and zero point over n values; the codes are float values.

/// y[i] = clamp(round_half_even(x[i] / scale) + zp, lo, hi) (NaN gives zp), or with `values` that code dequantized
/// again, (q − zp) · scale. zp, lo and hi are integers, lo ≤ zp ≤ hi, |lo|, |hi| < 2^22; y may be x.
void mlk_quantize_linear(const float *x, float *y, int64_t n, float scale, float zp, float lo, float hi, int values);

/// y[i] = (q[i] − zp) · scale; y may be q.
void mlk_dequantize_linear(const float *q, float *y, int64_t n, float scale, float zp);

/// y[i] = round_half_even(x[i] · inv) clamped to ±2^22 (NaN gives 0): the codes, less their zero point, of values on a
/// grid of step 1/inv (a QDQ pair's output), as floats (QuantizedDepthwise). Every level gives the same bits.
void mlk_grid_codes(const float *x, float *y, int64_t n, float inv);

/// Requantizes rows × C exact integer sums (float32 values in int32's range, channels last) in place:
/// y = clamp(round_half_even(float(y + bias[c]) · mult[c]), lo, hi) · scale, the bias added in int32, as
/// mlk_qgemm_requant does (QuantizedDepthwise). Every level gives the same bits.
void mlk_requantize_channels(float *y, int64_t rows, int64_t C, const int32_t *bias, const float *mult, float lo,
                             float hi, float scale);

/// mlk_requantize_channels writing the codes as bytes: out[r][c] = clamp(round_half_even(float(y + bias[c]) · mult[c]),
/// lo, hi) − lo (0…255, as mlk_qgemm_requant's codes), y unchanged. Every level gives the same bytes.
void mlk_requantize_channels_codes(const float *y, int64_t rows, int64_t C, const int32_t *bias, const float *mult,
                                   float lo, float hi, uint8_t *out);

/// Rows iy0 … iy0 + R − 1 and columns ix0 … ix0 + Wp − 1 of an (H, W, C) image of codes into out (R · Wp · C bytes),
/// every code outside the image set to zp: the input a depthwise conv's padding reads, made explicit, so that
/// mlk_qdepthwise_codes on it (with no padding) reads every pixel in place.
void mlk_qdepthwise_pad(const uint8_t *x, int64_t H, int64_t W, int64_t C, uint8_t zp, int64_t iy0, int64_t R,
                        int64_t ix0, int64_t Wp, uint8_t *out);

/// A depthwise conv (channel multiplier 1) of 8-bit codes x (H, W, C; zero point zp) with integer weights w (KH, KW, C,
/// as floats in ±127), output rows [oy0, oy1) of y (OH, OW, C) as codes: Σ (x − zp) · w over the taps inside the image
/// (padding reads zp: adds 0; exact below 2^24: KH · KW · 255 · 127 < 2^24), then bias and mult as
/// mlk_requantize_channels_codes (lo, hi: the code range less the output zero point; each byte the code less lo).
/// Only channels [c0, c1) (clamped to [0, C)) are computed and written: a small map's work split by channels.
/// Every level gives the same bytes.
void mlk_qdepthwise_codes(const uint8_t *x, int64_t H, int64_t W, int64_t C, int32_t zp, const float *w, int64_t KH,
                          int64_t KW, const int32_t *bias, const float *mult, float lo, float hi, uint8_t *y, int64_t oy0,
                          int64_t oy1, int64_t OW, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl,
                          int64_t c0, int64_t c1);

/// y[i] = float(q[i] − zp): 8-bit codes less their zero point as floats (a requantizing depthwise conv reading a
/// tensor stored as codes). Every level gives the same bits.
void mlk_codes_centred(const uint8_t *q, float *y, int64_t n, int32_t zp);


// ---- int8-table palettes kept as indices (qpalette.c) ----
// A palette whose table entries are integers in −127…127 stands for int8 weights (its channel scales being the int8
// scales). Kept as 4- or 6-bit indices, it is decoded into mlk_qpack's panels just before mlk_qgemm reads them.

/// Bytes of one 16-column panel's rearranged indices at `bits` (4 or 6): K rounded up to 4, times 16 · bits / 8.
int64_t mlk_qpalette_panel_bytes(int64_t K, int bits);

/// Rearranges the indices of a (K, N) palette (element k·N + n at stream bits [(k·N + n)·bits, …), LSB first, as the
/// native format stores them; `bytes` long) into the panel order mlk_qpalette_unpack reads: ceil(N/16) panels of
/// mlk_qpalette_panel_bytes each at `out` (padding holds index 0). Returns 0, writing nothing, for bits other than 4
/// and 6, an empty or overflowing shape, or too few bytes.
int mlk_qpalette_pack(const uint8_t *idx, int64_t bytes, int bits, int64_t K, int64_t N, uint8_t *out);

/// Panels [p0, p1) of indices rearranged by mlk_qpalette_pack, each looked up in its panel's table (`tables`: 2^bits
/// int8 values per panel, panel p's at p · 2^bits), into `packed` (panel p0 first): exactly the bytes mlk_qpack
/// writes for the decoded (K, N) values, padding 0. Nothing is written for bits other than 4 and 6 or a bad range.
void mlk_qpalette_unpack(const uint8_t *kept, int bits, int64_t K, int64_t N, const int8_t *tables, int64_t p0,
                         int64_t p1, int8_t *packed);

#endif
