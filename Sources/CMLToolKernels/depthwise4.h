// The four-pixel depthwise kernel, written once for both vector widths: depthwise.c includes this file once per
// width after defining DW4_NAME, DW4_ATTR (the target attribute), DW4_V (the vector type), DW4_N (its lanes) and the
// operations DW4_LOAD, DW4_STORE, DW4_FMA, DW4_ZERO, DW4_SET1 and DW4_ACT (that width's act8 / act16); the end of
// this file undefines them. No include guard: it is meant to be included more than once.
//
// Four horizontally adjacent interior output pixels (every kx tap inside the row), C a multiple of DW4_N. Eight (or
// four) independent accumulators hide the FMA latency that a single pixel's 9–25 chained taps would expose.
DW4_ATTR static void DW4_NAME(const float *base, int64_t W, int64_t C, int64_t CN, const float *w, int64_t KW,
                            int64_t ky0, int64_t ky1, int64_t sw, int64_t dh, int64_t dw, const float *bias,
                            float *out, int act, float p0, float p1) {
    int vec = MLK_ACT_VECTOR(act);
    DW4_V lo = DW4_SET1(p0), hi = DW4_SET1(p1);
    int64_t ps = sw * C;
    int64_t c = 0;
    for (; c + 2 * DW4_N <= CN; c += 2 * DW4_N) {
        DW4_V b0 = bias ? DW4_LOAD(bias + c) : DW4_ZERO();
        DW4_V b1 = bias ? DW4_LOAD(bias + c + DW4_N) : DW4_ZERO();
        DW4_V a00 = b0, a01 = b1, a10 = b0, a11 = b1, a20 = b0, a21 = b1, a30 = b0, a31 = b1;
        for (int64_t ky = ky0; ky < ky1; ky++) {
            const float *in = base + ky * dh * W * C + c;
            const float *k = w + ky * KW * C + c;
            for (int64_t kx = 0; kx < KW; kx++) {
                const float *ip = in + kx * dw * C, *kp = k + kx * C;
                DW4_V w0 = DW4_LOAD(kp), w1 = DW4_LOAD(kp + DW4_N);
                a00 = DW4_FMA(DW4_LOAD(ip), w0, a00);
                a01 = DW4_FMA(DW4_LOAD(ip + DW4_N), w1, a01);
                a10 = DW4_FMA(DW4_LOAD(ip + ps), w0, a10);
                a11 = DW4_FMA(DW4_LOAD(ip + ps + DW4_N), w1, a11);
                a20 = DW4_FMA(DW4_LOAD(ip + 2 * ps), w0, a20);
                a21 = DW4_FMA(DW4_LOAD(ip + 2 * ps + DW4_N), w1, a21);
                a30 = DW4_FMA(DW4_LOAD(ip + 3 * ps), w0, a30);
                a31 = DW4_FMA(DW4_LOAD(ip + 3 * ps + DW4_N), w1, a31);
            }
        }
        if (vec) {
            a00 = DW4_ACT(a00, act, lo, hi); a01 = DW4_ACT(a01, act, lo, hi); a10 = DW4_ACT(a10, act, lo, hi);
            a11 = DW4_ACT(a11, act, lo, hi); a20 = DW4_ACT(a20, act, lo, hi); a21 = DW4_ACT(a21, act, lo, hi);
            a30 = DW4_ACT(a30, act, lo, hi); a31 = DW4_ACT(a31, act, lo, hi);
        }
        DW4_STORE(out + c, a00); DW4_STORE(out + c + DW4_N, a01);
        DW4_STORE(out + C + c, a10); DW4_STORE(out + C + c + DW4_N, a11);
        DW4_STORE(out + 2 * C + c, a20); DW4_STORE(out + 2 * C + c + DW4_N, a21);
        DW4_STORE(out + 3 * C + c, a30); DW4_STORE(out + 3 * C + c + DW4_N, a31);
    }
    for (; c < CN; c += DW4_N) {
        DW4_V b0 = bias ? DW4_LOAD(bias + c) : DW4_ZERO();
        DW4_V a0 = b0, a1 = b0, a2 = b0, a3 = b0;
        for (int64_t ky = ky0; ky < ky1; ky++) {
            const float *in = base + ky * dh * W * C + c;
            const float *k = w + ky * KW * C + c;
            for (int64_t kx = 0; kx < KW; kx++) {
                const float *ip = in + kx * dw * C;
                DW4_V w0 = DW4_LOAD(k + kx * C);
                a0 = DW4_FMA(DW4_LOAD(ip), w0, a0);
                a1 = DW4_FMA(DW4_LOAD(ip + ps), w0, a1);
                a2 = DW4_FMA(DW4_LOAD(ip + 2 * ps), w0, a2);
                a3 = DW4_FMA(DW4_LOAD(ip + 3 * ps), w0, a3);
            }
        }
        if (vec) { a0 = DW4_ACT(a0, act, lo, hi); a1 = DW4_ACT(a1, act, lo, hi); a2 = DW4_ACT(a2, act, lo, hi); a3 = DW4_ACT(a3, act, lo, hi); }
        DW4_STORE(out + c, a0); DW4_STORE(out + C + c, a1);
        DW4_STORE(out + 2 * C + c, a2); DW4_STORE(out + 3 * C + c, a3);
    }
    if (!vec) for (int64_t j = 0; j < 4; j++) for (int64_t i = 0; i < CN; i++) out[j * C + i] = act_scalar(out[j * C + i], act, p0, p1);
}

#undef DW4_NAME
#undef DW4_ATTR
#undef DW4_V
#undef DW4_N
#undef DW4_LOAD
#undef DW4_STORE
#undef DW4_FMA
#undef DW4_ZERO
#undef DW4_SET1
#undef DW4_ACT
