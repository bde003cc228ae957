// Private to CMLToolKernels: reading the packed k-bit index stream palettes are stored in (docs/FORMAT.md §5:
// element i at stream bits [i·k, i·k + k), stream bit j = bit j mod 8 of byte j / 8, LSB first; an index may
// straddle two bytes at k = 6), shared by palette.c and qpalette.c.
#ifndef MLK_BITS_H
#define MLK_BITS_H
#include "isa.h"
#include <stdint.h>

/// Index i of a stream of `bits`-bit indices (bits ≤ 8); the caller has checked that the stream holds it.
MLK_INLINE uint32_t mlk_palette_index(const uint8_t *idx, int64_t i, int bits) {
    int64_t bit = i * bits;
    int64_t byte = bit >> 3;
    int shift = (int)(bit & 7);
    uint32_t v = (uint32_t)idx[byte] >> shift;
    if (shift + bits > 8) v |= (uint32_t)idx[byte + 1] << (8 - shift);
    return v & ((1u << bits) - 1);
}

#endif
