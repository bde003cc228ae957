// Hot loops of MLToolTrain. Each has a portable C version and an AVX2+FMA version compiled with a per-function
// target attribute; `level` (a CMLToolCPU level) picks one: -1 takes the current level (the best the CPU has, or
// what MLTOOL_CPU_LEVEL asks), so the binary runs, slower, on any x86-64 CPU.
#ifndef CMLTOOLTRAINKERNELS_H
#define CMLTOOLTRAINKERNELS_H
#include <stdint.h>

/// One epoch of SGD on the L2-regularised softmax cross-entropy, over the CSR rows listed in `order`.
///
/// Weights are W = a·V with V `cols × kp` row-major (kp ≥ k, a multiple of 8; the padding columns stay 0) and
/// `bias` (k doubles). Row r's step, with η = eta0·(1 − t/total) and t counting steps:
///   z = a·(x_r·V) + b;  g = scale_r·(softmax(z) − e_y);  a ← a·(1 − ηλ);  V[c] −= (η/a)·x_rc·g;  b −= η·g
/// where scale_r = row_scale[r] (NULL: 1). When a falls below 1e-4, V is multiplied by a and a reset to 1.
/// `a` and `t` are updated in place. Single-threaded; the same inputs give the same bits at the same level.
void mlt_sgd_epoch(const int64_t *offsets, const int32_t *columns, const float *values, const int32_t *labels,
                   const double *row_scale, const int64_t *order, int64_t count, int64_t cols, int32_t k,
                   int32_t kp, float *v, double *bias, double *a, double *t, double eta0, double total, double l2,
                   int level);

/// out[(r − row0)·k + j] = Σ_q values[q] · w[columns[q]·k + j] over the non-zeros q of rows row0..<row1 (w is
/// cols × k row-major). Each output is summed in the row's column order.
void mlt_sparse_forward(const int64_t *offsets, const int32_t *columns, const float *values, int64_t row0,
                        int64_t row1, const float *w, int32_t k, float *out, int level);

/// The transposed product of a CSC matrix (the columns of X: column c holds the non-zeros
/// col_offsets[c]..<col_offsets[c + 1], `rows` increasing) with g (n × k row-major), for columns col0..<col1:
///   out[(c − col0)·k + j] = Σ_q values[q] · g[rows[q]·k + j]
/// summed from 0 in the order of q, each term rounded before it is added (no fused multiply-add): every level gives
/// the bits of the plain loop. Columns are independent, so callers may split them across threads freely.
void mlt_sparse_transposed(const int64_t *col_offsets, const int32_t *rows, const float *values, int64_t col0,
                           int64_t col1, const float *g, int32_t k, float *out, int level);
#endif
