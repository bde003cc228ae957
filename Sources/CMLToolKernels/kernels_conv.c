// Convolution helpers beside the GEMM: see include/CMLToolKernels.h.
#include "CMLToolKernels.h"
#include <string.h>

void mlk_im2col_rows(const float *x, int64_t H, int64_t W, int64_t C, int64_t KH, int64_t KW, float *cols,
                     int64_t OW, int64_t p0, int64_t p1, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                     int64_t pl) {
    int64_t K = KH * KW * C;
    int64_t oy = p0 / OW, ox = p0 % OW;
    for (int64_t p = p0; p < p1; p++, ox = ox + 1 == OW ? 0 : ox + 1, oy += ox == 0) {
        float *row = cols + p * K;
        int64_t ix0 = ox * sw - pl;
        // No dilation and the whole kernel row inside: the row's taps are one contiguous run.
        int whole = dw == 1 && ix0 >= 0 && ix0 + KW <= W;
        for (int64_t ky = 0; ky < KH; ky++) {
            int64_t iy = oy * sh - pt + ky * dh;
            if (whole) {
                float *dst = row + ky * KW * C;
                if (iy < 0 || iy >= H) memset(dst, 0, (size_t)(KW * C) * sizeof(float));
                else memcpy(dst, x + (iy * W + ix0) * C, (size_t)(KW * C) * sizeof(float));
                continue;
            }
            for (int64_t kx = 0; kx < KW; kx++) {
                int64_t ix = ix0 + kx * dw;
                float *dst = row + (ky * KW + kx) * C;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) memset(dst, 0, (size_t)C * sizeof(float));
                else memcpy(dst, x + (iy * W + ix) * C, (size_t)C * sizeof(float));
            }
        }
    }
}
