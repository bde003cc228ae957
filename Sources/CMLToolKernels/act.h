// Private to CMLToolKernels: the scalar activation every kernel file shares.
#ifndef MLK_ACT_H
#define MLK_ACT_H
#include "CMLToolKernels.h"
#include <math.h>

static inline float act_scalar(float v, int act, float p0, float p1) {
    switch (act) {
    case MLK_ACT_RELU: return v > 0 ? v : 0;
    case MLK_ACT_CLIP: return v < p0 ? p0 : (v > p1 ? p1 : v);
    case MLK_ACT_LEAKY: return v < 0 ? p0 * v : v;
    case MLK_ACT_SIGMOID: return 1.0f / (1.0f + expf(-v));
    case MLK_ACT_HARDSIGMOID: { float t = p0 * v + p1; return t < 0 ? 0 : (t > 1 ? 1 : t); }
    case MLK_ACT_HARDSWISH: { float t = v + 3; t = t < 0 ? 0 : (t > 6 ? 6 : t); return v * t / 6; }
    case MLK_ACT_SWISH: return v / (1.0f + expf(-v));
    case MLK_ACT_TANH: return tanhf(v);
    default: return v;
    }
}

#endif
