// Palettized weights decoded into mlk_pack's 16-column panels just before a GEMM reads them, so a 4- or 6-bit model
// keeps only its indices resident (see PaletteWeights.swift). Portable C, AVX2 and AVX-512F side by side; every
// variant computes each value as (row_scale[k] · col_scale[n]) · lut[…], the same bits as the scalar reference.
#include "CMLToolKernels.h"
#include "bits.h"
#include "isa.h"
#include "vec.h"
#include <string.h>

// ---- portable ----

// Row k of panel p, columns [n0, n0 + 16) (those ≥ N are zero), into dst[0, 16).
MLK_INLINE void row_portable(const uint8_t *idx, int bits, int64_t N, const float *lut, const int32_t *row_base,
                             const float *row_scale, const int32_t *col_base, const float *col_scale, int64_t p,
                             int64_t k, float *dst) {
    int64_t n0 = p * 16;
    for (int j = 0; j < 16; j++) {
        int64_t n = n0 + j;
        dst[j] = n < N ? (row_scale[k] * col_scale[n]) * lut[row_base[k] + col_base[n] + (int32_t)mlk_palette_index(idx, k * N + n, bits)]
                       : 0.0f;
    }
}

static void unpack_portable(const uint8_t *idx, int bits, int64_t K, int64_t N, const float *lut,
                            const int32_t *row_base, const float *row_scale, const int32_t *col_base,
                            const float *col_scale, int64_t p0, int64_t p1, float *packed) {
    for (int64_t p = p0; p < p1; p++)
        for (int64_t k = 0; k < K; k++)
            row_portable(idx, bits, N, lut, row_base, row_scale, col_base, col_scale, p, k, packed + ((p - p0) * K + k) * 16);
}

#if MLK_X86
// A panel of 16 full columns whose LUT bases are all equal (one table for the 16 columns of every row).
MLK_INLINE int uniform_panel(const int32_t *col_base, int64_t n0) {
    for (int j = 1; j < 16; j++)
        if (col_base[n0 + j] != col_base[n0]) return 0;
    return 1;
}

// One call of ROWS(bits, permute) per supported width, each with constant arguments so that it compiles to its own
// loop; `bits` and `permute` are the caller's variables.
#define MLK_BY_WIDTH(ROWS)                  \
    switch (bits * 2 + permute) {           \
    case 2: ROWS(1, 0); break;              \
    case 3: ROWS(1, 1); break;              \
    case 4: ROWS(2, 0); break;              \
    case 5: ROWS(2, 1); break;              \
    case 8: ROWS(4, 0); break;              \
    case 9: ROWS(4, 1); break;              \
    case 12: ROWS(6, 0); break;             \
    case 13: ROWS(6, 1); break;             \
    default: ROWS(8, 0); break;             \
    }

// ---- AVX2 ----

// The 8 indices of elements [i, i + 8) (bits ≤ 6) from the 32-bit words around them: element j's bits start at
// r = (i·bits mod 32) + j·bits of the words from word ⌊i·bits / 32⌋; lo/hi are its word and the next one.
MLK_AVX2 static inline __m256i indices8_avx2(const uint8_t *idx, int64_t i, int bits, __m256i jbits, __m256i mask) {
    int64_t bit = i * bits;
    const int32_t *w = (const int32_t *)(const void *)(idx + ((bit >> 5) << 2));
    int r0 = (int)(bit & 31);
    int words = (r0 + 8 * bits + 31) / 32;   // ≤ 2 for bits ≤ 4, ≤ 3 for 6
    __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i d = _mm256_maskload_epi32(w, _mm256_cmpgt_epi32(_mm256_set1_epi32(words), lanes));
    __m256i pos = _mm256_add_epi32(_mm256_set1_epi32(r0), jbits);
    __m256i q = _mm256_srli_epi32(pos, 5), r = _mm256_and_si256(pos, _mm256_set1_epi32(31));
    __m256i lo = _mm256_permutevar8x32_epi32(d, q);
    __m256i hi = _mm256_permutevar8x32_epi32(d, _mm256_add_epi32(q, _mm256_set1_epi32(1)));
    __m256i v = _mm256_or_si256(_mm256_srlv_epi32(lo, r), _mm256_sllv_epi32(hi, _mm256_sub_epi32(_mm256_set1_epi32(32), r)));
    return _mm256_and_si256(v, mask);
}

// The 16 indices of elements [i, i + 16) as two vectors of 8: whole bytes where they allow (bits 4 with i even,
// 6 with i a multiple of 4, 8), else from the words around them.
MLK_AVX2 MLK_INLINE void indices16_avx2(const uint8_t *idx, int64_t i, const int bits, __m256i jbits, __m256i mask,
                                        __m256i *v0, __m256i *v1) {
    if (bits == 8) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(idx + i));
        *v0 = _mm256_cvtepu8_epi32(b);
        *v1 = _mm256_cvtepu8_epi32(_mm_srli_si128(b, 8));
    } else if (bits == 4 && (i & 1) == 0) {
        __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(idx + (i >> 1)));
        __m128i m = _mm_set1_epi8(15);
        __m128i x = _mm_unpacklo_epi8(_mm_and_si128(b, m), _mm_and_si128(_mm_srli_epi16(b, 4), m));
        *v0 = _mm256_cvtepu8_epi32(x);
        *v1 = _mm256_cvtepu8_epi32(_mm_srli_si128(x, 8));
    } else if (bits == 6 && (i & 3) == 0) {
        __m128i b = _mm_maskload_epi32((const int *)(const void *)(idx + (i >> 2) * 3), _mm_setr_epi32(-1, -1, -1, 0));
        __m256i g = _mm256_castsi128_si256(_mm_shuffle_epi8(b, _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1)));
        __m256i sh = _mm256_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18);
        *v0 = _mm256_and_si256(_mm256_srlv_epi32(_mm256_permutevar8x32_epi32(g, _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1)), sh), mask);
        *v1 = _mm256_and_si256(_mm256_srlv_epi32(_mm256_permutevar8x32_epi32(g, _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3)), sh), mask);
    } else {
        *v0 = indices8_avx2(idx, i, bits, jbits, mask);
        *v1 = indices8_avx2(idx, i + 8, bits, jbits, mask);
    }
}

// 8 values from a table of ≤ 16 entries in two registers (t1 unused below 16).
MLK_AVX2 MLK_INLINE __m256 lookup8_avx2(const int entries, __m256i v, __m256 t0, __m256 t1) {
    if (entries <= 8) return _mm256_permutevar8x32_ps(t0, v);
    __m256 hi = _mm256_castsi256_ps(_mm256_cmpgt_epi32(v, _mm256_set1_epi32(7)));
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(t0, v), _mm256_permutevar8x32_ps(t1, v), hi);
}

// A table of 16 or 64 entries as byte planes of 16 entries each, in both lanes, for vpshufb lookups: with P =
// entries / 16 parts, pl[P·j + s] holds byte j of entries [16s, 16s + 16) (16 entries: pl[j], byte j of each).
MLK_AVX2 static inline void planes_avx2(const float *t, const int entries, __m256i *pl) {
    uint32_t u[64];
    uint8_t b[4][64];
    memcpy(u, t, (size_t)entries * sizeof(float));
    for (int i = 0; i < entries; i++)
        for (int j = 0; j < 4; j++) b[j][i] = (uint8_t)(u[i] >> (8 * j));
    const int parts = entries / 16;
    for (int j = 0; j < 4; j++)
        for (int s = 0; s < parts; s++)
            pl[parts * j + s] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(b[j] + 16 * s)));
}

// Floats from their four bytes looked up per plane (b0: lowest), in the lanes' arrangement of
// nibbles32_planes_avx2: two rounds of unpacks within 128-bit lanes.
MLK_AVX2 MLK_INLINE void planes_floats_avx2(__m256i b0, __m256i b1, __m256i b2, __m256i b3, __m256 z[4]) {
    __m256i lo01 = _mm256_unpacklo_epi8(b0, b1), hi01 = _mm256_unpackhi_epi8(b0, b1);
    __m256i lo23 = _mm256_unpacklo_epi8(b2, b3), hi23 = _mm256_unpackhi_epi8(b2, b3);
    z[0] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(lo01, lo23));
    z[1] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(lo01, lo23));
    z[2] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(hi01, hi23));
    z[3] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(hi01, hi23));
}

// Row k of two full panels (32 columns from element i, i even) from a 16-entry table's byte planes: each 4-bit index
// looks up its value's four bytes with vpshufb (16 entries per lane: a lookup per 32 values and plane, where vpermps
// takes one per 8 and a blend), then two rounds of unpacks put the bytes back together as floats. The unpacks work
// within 128-bit lanes, so the indices go in pre-arranged (lane 0 byte t: column 8⌊t/4⌋ + t mod 4, lane 1: the same
// + 4) and come out as columns [0, 8), [8, 16), [16, 24), [24, 32) in z[0…3]. The same floats as the table's.
MLK_AVX2 static inline void nibbles32_planes_avx2(const uint8_t *idx, int64_t i, const __m256i pl[4], __m256 z[4]) {
    const __m256i ctl = _mm256_setr_epi8(0, 0, 1, 1, 4, 4, 5, 5, 8, 8, 9, 9, 12, 12, 13, 13,
                                         2, 2, 3, 3, 6, 6, 7, 7, 10, 10, 11, 11, 14, 14, 15, 15);
    __m256i x = _mm256_shuffle_epi8(
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(idx + (i >> 1)))), ctl);
    // Even bytes take the low nibble, odd bytes the high one (a 16-bit shift brings it down with bit 7 clear).
    __m256i v = _mm256_blendv_epi8(_mm256_and_si256(x, _mm256_set1_epi8(15)), _mm256_srli_epi16(x, 4),
                                   _mm256_set1_epi16((short)0xFF00));
    planes_floats_avx2(_mm256_shuffle_epi8(pl[0], v), _mm256_shuffle_epi8(pl[1], v), _mm256_shuffle_epi8(pl[2], v),
                       _mm256_shuffle_epi8(pl[3], v), z);
}

// Byte j of the 64-entry table's values at the 6-bit indices v (bits 6 and 7 clear): vpshufb reads bits 0–3 of
// each index in the four 16-entry planes, and bits 4 and 5, shifted up to bit 7 where vpblendvb reads them, pick
// among the four (on Zen 3 faster than ORing four lookups of v ^ 16s saturated out of range where not in [0, 16)).
MLK_AVX2 MLK_INLINE __m256i lookup64_plane_avx2(const __m256i *pl, __m256i v, __m256i bit4, __m256i bit5) {
    __m256i a = _mm256_blendv_epi8(_mm256_shuffle_epi8(pl[0], v), _mm256_shuffle_epi8(pl[1], v), bit4);
    __m256i b = _mm256_blendv_epi8(_mm256_shuffle_epi8(pl[2], v), _mm256_shuffle_epi8(pl[3], v), bit4);
    return _mm256_blendv_epi8(a, b, bit5);
}

// As nibbles32_planes_avx2 for 6-bit indices (i a multiple of 4: 24 whole bytes, 4 indices in each 3): the 3 bytes
// of 4 columns go to a 32-bit lane as (b0, b1, b1, b2), where index j of the 4 is bits [6j, 6j + 6) of b0 | b1 << 8 |
// b2 << 16 and shifts of the lane bring each to byte j; a permute then puts the groups of 4 columns in the lanes'
// order the unpacks need. 64 entries take 16 registers of planes (the compiler keeps some in memory).
MLK_AVX2 static inline void sextets32_planes_avx2(const uint8_t *idx, int64_t i, const __m256i pl[16], __m256 z[4]) {
    __m256i d = _mm256_maskload_epi32((const int *)(const void *)(idx + (i >> 2) * 3), _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0));
    d = _mm256_permutevar8x32_epi32(d, _mm256_setr_epi32(0, 1, 2, 2, 3, 4, 5, 5));   // lane 0: bytes 0–11, lane 1: 12–23
    __m256i g = _mm256_shuffle_epi8(d, _mm256_setr_epi8(0, 1, 1, 2, 3, 4, 4, 5, 6, 7, 7, 8, 9, 10, 10, 11,
                                                        0, 1, 1, 2, 3, 4, 4, 5, 6, 7, 7, 8, 9, 10, 10, 11));
    // Index j of a lane's 4 is bits [6j, 6j + 6) of b0 | b1 << 8 | b2 << 16: the low 16 bits hold indices 0 and 1 as
    // they are, the high 16 bits (b1 | b2 << 8) indices 2 and 3 four bits up; each shifted to its byte and masked.
    __m256i v = _mm256_or_si256(
        _mm256_or_si256(_mm256_and_si256(g, _mm256_set1_epi32(0x3F)),
                        _mm256_and_si256(_mm256_slli_epi32(g, 2), _mm256_set1_epi32(0x3F00))),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(g, 4), _mm256_set1_epi32(0x3F0000)),
                        _mm256_and_si256(_mm256_srli_epi32(g, 2), _mm256_set1_epi32(0x3F000000))));
    // Lane t holds columns [4t, 4t + 4); lane 0 must hold the groups 0, 2, 4, 6 and lane 1 the groups 1, 3, 5, 7.
    v = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
    // Bits 4 and 5 of each index up to bit 7 (16-bit shifts: bit 7 of each byte comes from the same byte).
    __m256i bit4 = _mm256_slli_epi16(v, 3), bit5 = _mm256_slli_epi16(v, 2);
    planes_floats_avx2(lookup64_plane_avx2(pl, v, bit4, bit5), lookup64_plane_avx2(pl + 4, v, bit4, bit5),
                       lookup64_plane_avx2(pl + 8, v, bit4, bit5), lookup64_plane_avx2(pl + 12, v, bit4, bit5), z);
}

// As rows_avx512: rows [0, rows) of full panels [pa, pb), row by row; permute for tables of ≤ 16 entries (4 bits:
// two panels at a time from byte planes where the row starts a byte; 47 → 34 µs for a 1152 × 192 weight on Zen 4).
MLK_AVX2 MLK_INLINE void rows_avx2(const int bits, const int permute, const uint8_t *idx, int64_t K, int64_t N,
                                   const float *lut, const int32_t *row_base, const float *row_scale,
                                   const int32_t *col_base, const float *col_scale, int64_t p0, int64_t pa, int64_t pb,
                                   int64_t rows, float *packed) {
    __m256i jbits = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(bits));
    __m256i mask = _mm256_set1_epi32((1 << bits) - 1);
    const int entries = 1 << bits;
    __m256 t0 = _mm256_setzero_ps(), t1 = t0;
    __m256i pl[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
    int32_t loaded = -1, planes = -1;
    for (int64_t k = 0; k < rows; k++) {
        __m256 rs = _mm256_set1_ps(row_scale[k]);
        int64_t p = pa;
        if (bits == 4 && permute && ((k * N) & 1) == 0) {
            for (; p + 2 <= pb; p += 2) {
                if (col_base[p * 16 + 16] != col_base[p * 16]) break;   // the two panels read different tables
                int32_t base = row_base[k] + col_base[p * 16];
                if (base != planes) { planes_avx2(lut + base, 16, pl); planes = base; }
                __m256 z[4];
                nibbles32_planes_avx2(idx, k * N + p * 16, pl, z);
                _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++) {
                    float *dst = packed + ((p + j / 2 - p0) * K + k) * 16 + (j & 1) * 8;
                    _mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_mul_ps(rs, _mm256_loadu_ps(col_scale + p * 16 + j * 8)), z[j]));
                }
            }
        }
        for (; p < pb; p++) {
            int64_t n0 = p * 16;
            __m256i v0, v1;
            indices16_avx2(idx, k * N + n0, bits, jbits, mask, &v0, &v1);
            __m256 w0, w1;
            if (permute && entries <= 16) {
                int32_t base = row_base[k] + col_base[n0];
                if (base != loaded) {
                    const float *t = lut + base;
                    t0 = entries < 8 ? _mm256_maskload_ps(t, _mm256_cmpgt_epi32(_mm256_set1_epi32(entries), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)))
                                     : _mm256_loadu_ps(t);
                    if (entries > 8) t1 = _mm256_loadu_ps(t + 8);
                    loaded = base;
                }
                w0 = lookup8_avx2(entries, v0, t0, t1);
                w1 = lookup8_avx2(entries, v1, t0, t1);
            } else {
                __m256i rb = _mm256_set1_epi32(row_base[k]);
                __m256i cb0 = _mm256_loadu_si256((const __m256i *)(const void *)(col_base + n0));
                __m256i cb1 = _mm256_loadu_si256((const __m256i *)(const void *)(col_base + n0 + 8));
                w0 = _mm256_i32gather_ps(lut, _mm256_add_epi32(_mm256_add_epi32(v0, rb), cb0), 4);
                w1 = _mm256_i32gather_ps(lut, _mm256_add_epi32(_mm256_add_epi32(v1, rb), cb1), 4);
            }
            float *dst = packed + ((p - p0) * K + k) * 16;
            _mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_mul_ps(rs, _mm256_loadu_ps(col_scale + n0)), w0));
            _mm256_storeu_ps(dst + 8, _mm256_mul_ps(_mm256_mul_ps(rs, _mm256_loadu_ps(col_scale + n0 + 8)), w1));
        }
    }
}

// The rows [0, k) whose 16 elements from column n0 the vector index loads read from words inside the stream.
MLK_INLINE int64_t rows_inside(int64_t bytes, int bits, int64_t K, int64_t N, int64_t n0) {
    int64_t k = K;
    while (k > 0) {
        int64_t i = (k - 1) * N + n0;
        int64_t end = bits == 8 ? i + 16 : (((i + 16) * bits + 31) >> 5) << 2;
        if (end <= bytes) break;
        k--;
    }
    return k;
}

// Full panels [p0, pb) and the rows [0, fast) of them that read only words inside the stream; the rest take the
// scalar rows (row_portable).
MLK_INLINE int64_t fast_rows(int64_t bytes, int bits, int64_t K, int64_t N, int64_t p0, int64_t p1, int64_t *pb_out) {
    int64_t pb = p1 < N / 16 ? p1 : (N / 16 > p0 ? N / 16 : p0);
    *pb_out = pb;
    return pb > p0 ? rows_inside(bytes, bits, K, N, (pb - 1) * 16) : 0;
}

MLK_INLINE int uniform_panels(const int32_t *col_base, int64_t p0, int64_t pb) {
    for (int64_t p = p0; p < pb; p++)
        if (!uniform_panel(col_base, p * 16)) return 0;
    return 1;
}

MLK_INLINE void rest_portable(const uint8_t *idx, int bits, int64_t K, int64_t N, const float *lut,
                              const int32_t *row_base, const float *row_scale, const int32_t *col_base,
                              const float *col_scale, int64_t p0, int64_t p1, int64_t pb, int64_t fast, float *packed) {
    for (int64_t p = p0; p < p1; p++)
        for (int64_t k = p < pb ? fast : 0; k < K; k++)
            row_portable(idx, bits, N, lut, row_base, row_scale, col_base, col_scale, p, k, packed + ((p - p0) * K + k) * 16);
}

// Rows [0, rows) of full panels [p0, pb) by `bits` and `permute` (MLK_BY_WIDTH), one function per level.
typedef void (*rows_fn)(int bits, int permute, const uint8_t *idx, int64_t K, int64_t N, const float *lut,
                        const int32_t *row_base, const float *row_scale, const int32_t *col_base,
                        const float *col_scale, int64_t p0, int64_t pb, int64_t rows, float *packed);

#define MLK_ROWS_BY_WIDTH(NAME, ATTR, ROWS)                                                                            \
    ATTR static void NAME(int bits, int permute, const uint8_t *idx, int64_t K, int64_t N, const float *lut,         \
                          const int32_t *row_base, const float *row_scale, const int32_t *col_base,                \
                          const float *col_scale, int64_t p0, int64_t pb, int64_t rows, float *packed) {           \
        MLK_BY_WIDTH(MLK_ROWS_##ROWS)                                                                                \
    }
// 4 bits (N even: every row starts a byte) or 6 bits (N a multiple of 4: every row starts a group of 3 bytes) from a
// table in registers: rows [0, rows) of full panels [pa, pb), a pair of panels at a time down all the rows (the
// pair's 16 or 24 bytes of each row, nibbles32_planes_avx2 or sextets32_planes_avx2), so the floats go out in order
// into the pair's two panels, where row by row over every panel they went to as many places 16·K floats apart (a
// multiple of 4 KB when 64 divides K: the same L1 sets); the pair's column scales stay in registers, and where every
// row scale is 1, (1 · col_scale) is col_scale exactly and one multiply goes. A panel whose pair reads another
// table, or a last odd one, goes to rows_avx2 (for 6 bits a gather). The same bits as rows_avx2.
MLK_AVX2 MLK_INLINE void pairs_avx2(const int bits, const uint8_t *idx, int64_t K, int64_t N, const float *lut,
                                    const int32_t *row_base, const float *row_scale, const int32_t *col_base,
                                    const float *col_scale, int64_t p0, int64_t pa, int64_t pb, int64_t rows,
                                    float *packed) {
    int unit = 1;
    for (int64_t k = 0; k < rows && unit; k++) unit = row_scale[k] == 1.0f;
    for (int64_t p = pa; p < pb;) {
        int64_t n0 = p * 16;
        if (p + 2 > pb || col_base[n0 + 16] != col_base[n0]) {
            rows_avx2(bits, 1, idx, K, N, lut, row_base, row_scale, col_base, col_scale, p0, p, p + 1, rows, packed);
            p++;
            continue;
        }
        __m256 cs[4];
        _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++) cs[j] = _mm256_loadu_ps(col_scale + n0 + j * 8);
        float *d = packed + (p - p0) * K * 16;
        __m256i pl[16];
        int32_t planes = -1;
        for (int64_t k = 0; k < rows; k++) {
            int32_t base = row_base[k] + col_base[n0];
            if (base != planes) {
                planes_avx2(lut + base, 1 << bits, pl);
                planes = base;
            }
            __m256 z[4];
            if (bits == 4) nibbles32_planes_avx2(idx, k * N + n0, pl, z);
            else sextets32_planes_avx2(idx, k * N + n0, pl, z);
            __m256 rs = _mm256_set1_ps(row_scale[k]);
            _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++) {
                __m256 w = _mm256_mul_ps(unit ? cs[j] : _mm256_mul_ps(rs, cs[j]), z[j]);
                _mm256_storeu_ps(d + (j / 2) * K * 16 + k * 16 + (j & 1) * 8, w);
            }
        }
        p += 2;
    }
}

#define MLK_ROWS_rows_avx2(B, P) rows_avx2(B, P, idx, K, N, lut, row_base, row_scale, col_base, col_scale, p0, p0, pb, rows, packed)
MLK_AVX2 static void rows_by_width_avx2(int bits, int permute, const uint8_t *idx, int64_t K, int64_t N,
                                        const float *lut, const int32_t *row_base, const float *row_scale,
                                        const int32_t *col_base, const float *col_scale, int64_t p0, int64_t pb,
                                        int64_t rows, float *packed) {
    if (bits == 4 && permute && (N & 1) == 0) {
        pairs_avx2(4, idx, K, N, lut, row_base, row_scale, col_base, col_scale, p0, p0, pb, rows, packed);
        return;
    }
    if (bits == 6 && permute && (N & 3) == 0) {
        pairs_avx2(6, idx, K, N, lut, row_base, row_scale, col_base, col_scale, p0, p0, pb, rows, packed);
        return;
    }
    MLK_BY_WIDTH(MLK_ROWS_rows_avx2)
}

// Decodes panels [p0, p1) with a level's rows function: the full panels' rows that read only inside the stream
// there, with the table in registers for up to `permute_bits` bits; the rest by row_portable.
MLK_INLINE void unpack_with(rows_fn rows, int permute_bits, const uint8_t *idx, int64_t bytes, int bits, int64_t K,
                            int64_t N, const float *lut, const int32_t *row_base, const float *row_scale,
                            const int32_t *col_base, const float *col_scale, int64_t p0, int64_t p1, float *packed) {
    int64_t pb;
    int64_t fast = fast_rows(bytes, bits, K, N, p0, p1, &pb);
    int permute = bits <= permute_bits && uniform_panels(col_base, p0, pb);
    if (fast > 0) rows(bits, permute, idx, K, N, lut, row_base, row_scale, col_base, col_scale, p0, pb, fast, packed);
    rest_portable(idx, bits, K, N, lut, row_base, row_scale, col_base, col_scale, p0, p1, pb, fast, packed);
}

// ---- AVX-512F ----

// The 16 indices of elements [i, i + 16): 8 whole bytes (bits = 4, i even), 16 bytes (bits = 8), or as
// indices8_avx2 from up to 4 words.
MLK_AVX512 MLK_INLINE __m512i indices16_avx512(const uint8_t *idx, int64_t i, const int bits, __m512i jbits, __m512i mask) {
    if (bits == 8) return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(idx + i)));
    if (bits == 4 && (i & 1) == 0) {
        __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(idx + (i >> 1)));
        __m128i m = _mm_set1_epi8(15);
        return _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(_mm_and_si128(b, m), _mm_and_si128(_mm_srli_epi16(b, 4), m)));
    }
    if (bits == 6 && (i & 3) == 0) {
        // 12 whole bytes, 4 indices in each 3: each 3 bytes widened to a word, spread to 4 lanes, shifted.
        __m128i b = _mm512_castsi512_si128(_mm512_maskz_loadu_epi32(0x7, idx + (i >> 2) * 3));
        __m128i g = _mm_shuffle_epi8(b, _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1));
        __m512i lanes = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                                 _mm512_castsi128_si512(g));
        return _mm512_and_epi32(_mm512_srlv_epi32(lanes, _mm512_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18, 0, 6, 12, 18,
                                                                             0, 6, 12, 18)), mask);
    }
    int64_t bit = i * bits;
    const int32_t *w = (const int32_t *)(const void *)(idx + ((bit >> 5) << 2));
    int r0 = (int)(bit & 31);
    int words = (r0 + 16 * bits + 31) / 32;   // ≤ 4
    __m512i d = _mm512_maskz_loadu_epi32((__mmask16)((1u << words) - 1), w);
    __m512i pos = _mm512_add_epi32(_mm512_set1_epi32(r0), jbits);
    __m512i q = _mm512_srli_epi32(pos, 5), r = _mm512_and_epi32(pos, _mm512_set1_epi32(31));
    __m512i lo = _mm512_permutexvar_epi32(q, d);
    __m512i hi = _mm512_permutexvar_epi32(_mm512_add_epi32(q, _mm512_set1_epi32(1)), d);
    __m512i v = _mm512_or_epi32(_mm512_srlv_epi32(lo, r), _mm512_sllv_epi32(hi, _mm512_sub_epi32(_mm512_set1_epi32(32), r)));
    return _mm512_and_epi32(v, mask);
}

// 16 values from a table of ≤ 64 entries held in t0…t3 (16 each; unused ones ignored).
MLK_AVX512 MLK_INLINE __m512 lookup16_avx512(const int entries, __m512i v, __m512 t0, __m512 t1, __m512 t2, __m512 t3) {
    if (entries <= 16) return _mm512_permutexvar_ps(v, t0);
    if (entries == 32) return _mm512_permutex2var_ps(t0, v, t1);
    __m512 a = _mm512_permutex2var_ps(t0, v, t1), b = _mm512_permutex2var_ps(t2, v, t3);
    return _mm512_mask_blend_ps(_mm512_test_epi32_mask(v, _mm512_set1_epi32(32)), a, b);
}

// The 4-bit indices of elements [i, i + 32) (i even) as two vectors of 16 for a table lookup from one register
// (`_mm512_permutexvar_ps` reads only bits 0–3 of each lane): each of the 16 bytes doubled, so lane j holds the byte
// of element j, and the odd lanes shifted down a nibble. Bits 4–31 of a lane are left as they are: not an index for
// anything but that lookup (a gather needs indices16_avx512's masked ones).
MLK_AVX512 MLK_INLINE void nibbles32_avx512(const uint8_t *idx, int64_t i, __m512i *v0, __m512i *v1) {
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(idx + (i >> 1)));
    __m512i odd = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4);
    *v0 = _mm512_srlv_epi32(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(b, b)), odd);
    *v1 = _mm512_srlv_epi32(_mm512_cvtepu8_epi32(_mm_unpackhi_epi8(b, b)), odd);
}

// Rows [0, rows) of full panels [pa, pb) (panel p at packed + (p − p0)·K·16), row by row so the index stream is
// read in order. `bits` and `permute` are constants at every call, so each combination compiles to its own loop.
// permute: each panel's 16 columns share one table of ≤ 64 entries per row, looked up from registers (reloaded
// only when the table changes); else a gather.
MLK_AVX512 MLK_INLINE void rows_avx512(const int bits, const int permute, const uint8_t *idx, int64_t K, int64_t N,
                                       const float *lut, const int32_t *row_base, const float *row_scale,
                                       const int32_t *col_base, const float *col_scale, int64_t p0, int64_t pa,
                                       int64_t pb, int64_t rows, float *packed) {
    __m512i jbits = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                       _mm512_set1_epi32(bits));
    __m512i mask = _mm512_set1_epi32((1 << bits) - 1);
    const int entries = 1 << bits;
    __m512 t0 = _mm512_setzero_ps(), t1 = t0, t2 = t0, t3 = t0;
    int32_t loaded = -1;
    for (int64_t k = 0; k < rows; k++) {
        __m512 rs = _mm512_set1_ps(row_scale[k]);
        for (int64_t p = pa; p < pb; p++) {
            int64_t n0 = p * 16;
            __m512i v = indices16_avx512(idx, k * N + n0, bits, jbits, mask);
            __m512 w;
            if (permute) {
                int32_t base = row_base[k] + col_base[n0];
                if (base != loaded) {
                    const float *t = lut + base;
                    t0 = entries < 16 ? _mm512_maskz_loadu_ps((__mmask16)((1u << entries) - 1), t) : _mm512_loadu_ps(t);
                    if (entries > 16) t1 = _mm512_loadu_ps(t + 16);
                    if (entries > 32) { t2 = _mm512_loadu_ps(t + 32); t3 = _mm512_loadu_ps(t + 48); }
                    loaded = base;
                }
                w = lookup16_avx512(entries, v, t0, t1, t2, t3);
            } else {
                __m512i cb = _mm512_loadu_si512((const void *)(col_base + n0));
                w = _mm512_i32gather_ps(_mm512_add_epi32(_mm512_add_epi32(v, _mm512_set1_epi32(row_base[k])), cb), lut, 4);
            }
            _mm512_storeu_ps(packed + ((p - p0) * K + k) * 16, _mm512_mul_ps(_mm512_mul_ps(rs, _mm512_loadu_ps(col_scale + n0)), w));
        }
    }
}

#define MLK_ROWS_rows_avx512(B, P) rows_avx512(B, P, idx, K, N, lut, row_base, row_scale, col_base, col_scale, p0, p0, pb, rows, packed)
MLK_ROWS_BY_WIDTH(rows_by_width_avx512, MLK_AVX512, rows_avx512)

// ---- one input row, decoded in registers (a dense layer on one image) ----

// Whether rows [0, K) and panels [pa, pb) all read the same table (one for the tensor, or one group).
MLK_INLINE int one_table(const int32_t *row_base, int64_t K, const int32_t *col_base, int64_t pa, int64_t pb, int64_t N) {
    for (int64_t k = 1; k < K; k++)
        if (row_base[k] != row_base[0]) return 0;
    int64_t end = pb * 16 < N ? pb * 16 : N;
    for (int64_t n = pa * 16 + 1; n < end; n++)
        if (col_base[n] != col_base[pa * 16]) return 0;
    return 1;
}

// Rows of the index stream a GEMV takes per block (about 32 KB of indices, at least 16 rows), the groups of panels
// going over one block before the next; one block with a residual (y may be the residual's memory, and partial sums
// wait in y between blocks).
MLK_INLINE int64_t gemv_block_rows(const float *res, int bits, int64_t K, int64_t N) {
    int64_t kb = res ? K : 32768 * 8 / (N * bits);
    return kb < 16 ? 16 : kb;
}

// The end of the groups of `width` whole panels from pa (panels [pa, end) in groups, none past pb or N).
MLK_INLINE int64_t whole_groups_end(int64_t pa, int64_t pb, int64_t N, int64_t width) {
    int64_t end = pa;
    while (end + width <= pb && (end + width) * 16 <= N) end += width;
    return end;
}

// Rows [0, R) of y (R ≤ 4; row m of a at a + m·lda, of y at y + m·N) = epilogue(Σ_k a[m][k]·w[k][n]) for the columns
// of panels [pa, pb), each weight decoded into a register once and used by every row there: the sums in k order from
// 0 with FMAs, then mlk_store16, as gemm_avx512's tiles do on the decoded panels, so the same bits. Four whole panels
// at a time with the sums in registers (R and `bits` are constants at every call); rows [fast, K), whose words reach
// the end of the stream, are decoded by row_portable into `tmp`; a last group of fewer or partial panels a panel
// at a time.
MLK_AVX512 MLK_INLINE void gemv_avx512(const int bits, const int R, const float *a, int64_t lda, const uint8_t *idx,
                                       int64_t bytes, int64_t K, int64_t N, int64_t fast, const float *lut, const int32_t *row_base,
                                       const float *row_scale, const int32_t *col_base, const float *col_scale,
                                       int64_t pa, int64_t pb, const float *bias, const float *res, float *y, int act,
                                       float p0, float p1) {
    __m512i jbits = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                       _mm512_set1_epi32(bits));
    __m512i mask = _mm512_set1_epi32((1 << bits) - 1);
    const int entries = 1 << bits;
    const float *t = lut + row_base[0] + col_base[pa * 16];
    __m512 t0 = entries < 16 ? _mm512_maskz_loadu_ps((__mmask16)((1u << entries) - 1), t) : _mm512_loadu_ps(t);
    __m512 t1 = entries > 16 ? _mm512_loadu_ps(t + 16) : t0;
    __m512 t2 = entries > 32 ? _mm512_loadu_ps(t + 32) : t0, t3 = entries > 32 ? _mm512_loadu_ps(t + 48) : t0;
    __m512 lo = _mm512_set1_ps(p0), hi = _mm512_set1_ps(p1);
    float tmp[4][16] __attribute__((aligned(64)));
    // Rows of the index stream in blocks of about 32 KB, every group of panels over one block before the next, so
    // the stream is read front to back (a group's 32-byte strip down all K rows touches a new line per row: from
    // memory, a dense layer's indices took three times their warm time). Between blocks a group's sums wait in y:
    // the same chain of FMAs, so the same bits. One block with a residual (y may be the residual's memory).
    int64_t kb = gemv_block_rows(res, bits, K, N);
    int64_t groups_end = whole_groups_end(pa, pb, N, 4);
    for (int64_t k0 = 0; k0 < K; k0 += kb) {
    int64_t k1 = K - k0 < kb ? K : k0 + kb;
    for (int64_t p = pa; p < groups_end; p += 4) {
        int64_t n0 = p * 16;
        __m512 c[4][4], s[4];
        _Pragma("clang loop unroll(full)") for (int m = 0; m < R; m++)
            _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++)
                c[m][j] = k0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(y + m * N + n0 + j * 16);
        _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++) s[j] = _mm512_loadu_ps(col_scale + n0 + j * 16);
        // One line of the next block per row here, front to back: it arrives while this block is multiplied.
        const char *ahead = (const char *)idx + ((k1 * N * bits) >> 3) + ((p - pa) >> 2) * (k1 - k0) * 64;
        const char *stream_end = (const char *)idx + ((K * N * bits) >> 3);
        for (int64_t k = k0; k < (k1 < fast ? k1 : fast); k++) {
            if (ahead < stream_end) _mm_prefetch(ahead, _MM_HINT_T0);
            ahead += 64;
            __m512 rs = _mm512_set1_ps(row_scale[k]);
            int64_t i = k * N + n0;
            __m512i v[4];
            if (bits == 4 && (i & 1) == 0) {
                nibbles32_avx512(idx, i, &v[0], &v[1]);
                nibbles32_avx512(idx, i + 32, &v[2], &v[3]);
            } else {
                _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++)
                    v[j] = indices16_avx512(idx, i + j * 16, bits, jbits, mask);
            }
            __m512 w[4];
            _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++)
                w[j] = _mm512_mul_ps(_mm512_mul_ps(rs, s[j]), lookup16_avx512(entries, v[j], t0, t1, t2, t3));
            _Pragma("clang loop unroll(full)") for (int m = 0; m < R; m++) {
                __m512 av = _mm512_set1_ps(a[m * lda + k]);
                _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++) c[m][j] = _mm512_fmadd_ps(av, w[j], c[m][j]);
            }
        }
        for (int64_t k = k0 > fast ? k0 : fast; k < k1; k++) {
            _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++)
                row_portable(idx, bits, N, lut, row_base, row_scale, col_base, col_scale, p + j, k, tmp[j]);
            _Pragma("clang loop unroll(full)") for (int m = 0; m < R; m++) {
                __m512 av = _mm512_set1_ps(a[m * lda + k]);
                _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++)
                    c[m][j] = _mm512_fmadd_ps(av, _mm512_load_ps(tmp[j]), c[m][j]);
            }
        }
        if (k1 < K) {
            _Pragma("clang loop unroll(full)") for (int m = 0; m < R; m++)
                _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++)
                    _mm512_storeu_ps(y + m * N + n0 + j * 16, c[m][j]);
            continue;
        }
        _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++) {
            __m512 b = bias ? _mm512_loadu_ps(bias + n0 + j * 16) : _mm512_setzero_ps();
            _Pragma("clang loop unroll(full)") for (int m = 0; m < R; m++)
                mlk_store16(y + m * N + n0 + j * 16, res ? res + m * N + n0 + j * 16 : NULL, c[m][j], b, 16, act, p0, p1, lo, hi);
        }
    }
    }
    int64_t p = groups_end;
    // The last panels (fewer than four, or one of fewer than 16 columns): a panel at a time, row by row (a partial
    // panel's lanes past N read the next row's indices, times a column scale of 0, and are not stored); rows whose 16
    // indices would end past the stream are decoded by row_portable.
    for (; p < pb; p++) {
        int64_t n0 = p * 16, nv = N - n0 < 16 ? N - n0 : 16;
        int64_t kv = rows_inside(bytes, bits, K, N, n0);
        __m512 cs = _mm512_loadu_ps(col_scale + n0);
        __m512 b = bias ? _mm512_maskz_loadu_ps((__mmask16)((1u << nv) - 1), bias + n0) : _mm512_setzero_ps();
        for (int m = 0; m < R; m++) {
            __m512 acc = _mm512_setzero_ps();
            for (int64_t k = 0; k < K; k++) {
                __m512 w;
                if (k < kv) {
                    __m512i v = indices16_avx512(idx, k * N + n0, bits, jbits, mask);
                    w = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(row_scale[k]), cs), lookup16_avx512(entries, v, t0, t1, t2, t3));
                } else {
                    row_portable(idx, bits, N, lut, row_base, row_scale, col_base, col_scale, p, k, tmp[0]);
                    w = _mm512_load_ps(tmp[0]);
                }
                acc = _mm512_fmadd_ps(_mm512_set1_ps(a[m * lda + k]), w, acc);
            }
            mlk_store16(y + m * N + n0, res ? res + m * N + n0 : NULL, acc, b, nv, act, p0, p1, lo, hi);
        }
    }
}

// Rows per tile of the tall kernel with `left` rows to go: 25 while more than 16 are left, else the smallest of 8,
// 16 or 25 that holds them (49 rows: 25 + 24; 36: 25 + 11 in 16).
MLK_INLINE int64_t tall_rows(int64_t left) { return left > 16 ? 25 : (left > 8 ? 16 : 8); }

// v[k] = (r[0][k], …, r[15][k]): a 16 × 16 transpose (pairs, then quads within 128-bit lanes, then lanes).
MLK_AVX512 MLK_INLINE void transpose16_avx512(const __m512 r[16], __m512 v[16]) {
    __m512 t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    // u[4g + j]: rows 4g … 4g + 3 at k = j, j + 4, j + 8, j + 12 (one per 128-bit lane).
    for (int i = 0; i < 16; i += 4) {
        u[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int j = 0; j < 4; j++) {
        __m512 w0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88), w1 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);
        __m512 w2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88), w3 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
        v[j] = _mm512_shuffle_f32x4(w0, w2, 0x88);
        v[j + 8] = _mm512_shuffle_f32x4(w0, w2, 0xDD);
        v[j + 4] = _mm512_shuffle_f32x4(w1, w3, 0x88);
        v[j + 12] = _mm512_shuffle_f32x4(w1, w3, 0xDD);
    }
}

// Tiles of the tall kernel for `rows` rows: 25 rows each but the last (tall_rows), so tile t starts at row 25·t
// and at 25·t·K floats of the packed rows.
MLK_INLINE int64_t tall_tiles(int64_t rows) {
    int64_t tiles = 0;
    for (int64_t m = 0; m < rows; tiles++) m += rows - m < tall_rows(rows - m) ? rows - m : tall_rows(rows - m);
    return tiles;
}

// Tiles [t0, t1) of rows [0, rows) of a (row stride lda) as the tall kernel reads them: tile by tile (tall_rows),
// each tile's R rows interleaved by k (element (i, k) at k·R + i), rows past the end repeating the tile's first; then
// one pointer and a displacement reach every row of a tile (25 row pointers do not fit in registers). At most
// (rows + 24)·K floats. 16 rows × 16 k at a time through a register transpose (a scalar copy cost a fifth of the
// FMAs at K = 1152).
MLK_AVX512 MLK_INLINE void tall_pack(const float *a, int64_t rows, int64_t lda, int64_t K, int64_t t0, int64_t t1,
                                     float *at) {
    at += t0 * 25 * K;
    for (int64_t m = t0 * 25; m < rows && m < t1 * 25;) {
        int64_t R = tall_rows(rows - m), left = rows - m;
        for (int64_t i0 = 0; i0 < R; i0 += 16) {
            const float *src[16];
            for (int64_t i = 0; i < 16; i++) src[i] = a + (m + (i0 + i < left && i0 + i < R ? i0 + i : 0)) * lda;
            __mmask16 keep = (__mmask16)(R - i0 >= 16 ? 0xFFFF : (1u << (R - i0)) - 1);
            for (int64_t k0 = 0; k0 < K; k0 += 16) {
                int64_t kn = K - k0 < 16 ? K - k0 : 16;
                __mmask16 km = (__mmask16)(kn == 16 ? 0xFFFF : (1u << kn) - 1);
                __m512 r[16], v[16];
                for (int i = 0; i < 16; i++) r[i] = _mm512_maskz_loadu_ps(km, src[i] + k0);
                transpose16_avx512(r, v);
                for (int64_t j = 0; j < kn; j++) _mm512_mask_storeu_ps(at + (k0 + j) * R + i0, keep, v[j]);
            }
        }
        at += R * K;
        m += left < R ? left : R;
    }
}

// Rows [m, m + R) of y (row i at y + i·N; only the first `rows` stored) for the columns of panel p, full or the last
// partial one, from a tile of tall_pack's: each weight decoded into a register once and used by the R rows (a 7 × 7
// layer's 49 rows in two tiles, so a weight is decoded twice where decoding it into a panel first writes it out and
// reads it back). Rows [fast, K) and a partial panel are decoded by row_portable. `unit`: every row scale is 1, so
// (row_scale · col_scale) is col_scale exactly and one multiply goes. The sums in k order from 0 with FMAs, then
// mlk_store16 with the residual: the bits of gemm_avx512's tiles on the decoded panels.
MLK_AVX512 MLK_INLINE void tall_avx512(const int R, const int unit, const float *at, int64_t m, int64_t rows,
                                       const uint8_t *idx, int64_t K, int64_t N, int64_t fast, const float *lut,
                                       const int32_t *row_base, const float *row_scale, const int32_t *col_base,
                                       const float *col_scale, int64_t p, const float *bias, const float *res, float *y,
                                       int act, float p0, float p1) {
    const int bits = 4;
    __m512 t0 = _mm512_loadu_ps(lut + row_base[0] + col_base[p * 16]);
    int64_t n0 = p * 16, nv = N - n0 < 16 ? N - n0 : 16;
    int64_t kf = nv == 16 ? fast : 0;
    __m512 c[25];
    _Pragma("clang loop unroll(full)") for (int i = 0; i < R; i++) c[i] = _mm512_setzero_ps();
    __m512 cs = _mm512_loadu_ps(col_scale + n0);
    // N is even: every row's first index starts a byte.
    const uint8_t *ip = idx + (n0 >> 1);
    for (int64_t k = 0; k < kf; k++, ip += N >> 1) {
        __m128i b8 = _mm_loadl_epi64((const __m128i *)(const void *)ip);
        __m512i v = _mm512_srlv_epi32(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(b8, b8)),
                                      _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4));
        __m512 s = unit ? cs : _mm512_mul_ps(_mm512_set1_ps(row_scale[k]), cs);
        __m512 w = _mm512_mul_ps(s, _mm512_permutexvar_ps(v, t0));
        const float *ak = at + k * R;
        _Pragma("clang loop unroll(full)") for (int j = 0; j < R; j++)
            c[j] = _mm512_fmadd_ps(_mm512_set1_ps(ak[j]), w, c[j]);
    }
    float tmp[16] __attribute__((aligned(64)));
    for (int64_t k = kf; k < K; k++) {
        row_portable(idx, bits, N, lut, row_base, row_scale, col_base, col_scale, p, k, tmp);
        __m512 w = _mm512_load_ps(tmp);
        const float *ak = at + k * R;
        _Pragma("clang loop unroll(full)") for (int j = 0; j < R; j++)
            c[j] = _mm512_fmadd_ps(_mm512_set1_ps(ak[j]), w, c[j]);
    }
    __m512 lo = _mm512_set1_ps(p0), hi = _mm512_set1_ps(p1);
    __m512 b = bias ? _mm512_maskz_loadu_ps((__mmask16)((1u << nv) - 1), bias + n0) : _mm512_setzero_ps();
    _Pragma("clang loop unroll(full)") for (int j = 0; j < R; j++) {
        if (j >= rows) break;
        mlk_store16(y + (m + j) * N + n0, res ? res + (m + j) * N + n0 : NULL, c[j], b, nv, act, p0, p1, lo, hi);
    }
}

// Rows [0, rows) (5 … MLK_PALETTE_GEMV_ROWS) packed by tall_pack into `at`, by tall tiles, panel by panel.
#define MLK_TALL_TILE(B, R, U) tall_avx512(R, U, t, m, left, idx, K, N, fast, lut, row_base, row_scale, col_base, \
                                           col_scale, p, bias, res, y, act, p0, p1)
#define MLK_TALL_ALL(B, U)                                                                                        \
    MLK_AVX512 static void tall_avx512_##B##_##U(const float *at, int64_t rows, const uint8_t *idx, int64_t K,    \
                                                 int64_t N, int64_t fast, const float *lut,                      \
                                                 const int32_t *row_base, const float *row_scale,                \
                                                 const int32_t *col_base, const float *col_scale, int64_t pa,    \
                                                 int64_t pb, const float *bias, const float *res, float *y,      \
                                                 int act, float p0, float p1) {                                  \
        for (int64_t p = pa; p < pb; p++) {                                                                       \
            const float *t = at;                                                                                  \
            for (int64_t m = 0; m < rows;) {                                                                      \
                int64_t left = rows - m, R = tall_rows(left);                                                     \
                if (R == 25) MLK_TALL_TILE(B, 25, U);                                                             \
                else if (R == 16) MLK_TALL_TILE(B, 16, U);                                                        \
                else MLK_TALL_TILE(B, 8, U);                                                                      \
                t += R * K;                                                                                       \
                m += left < R ? left : R;                                                                         \
            }                                                                                                     \
        }                                                                                                         \
    }
MLK_TALL_ALL(4, 0) MLK_TALL_ALL(4, 1)
#undef MLK_TALL_ALL
#undef MLK_TALL_TILE

MLK_AVX512 static void tall_pack_avx512(const float *a, int64_t rows, int64_t lda, int64_t K, int64_t t0, int64_t t1,
                                        float *at) {
    tall_pack(a, rows, lda, K, t0, t1, at);
}

MLK_AVX512 static int gemv_avx512_bits(const float *a, int64_t rows, int64_t lda, const uint8_t *idx, int64_t bytes,
                                       int bits, int64_t K, int64_t N, const float *lut, const int32_t *row_base,
                                       const float *row_scale, const int32_t *col_base, const float *col_scale,
                                       int64_t pa, int64_t pb, const float *bias, const float *res, float *y, int act,
                                       float p0, float p1, float *work, int packed) {
    int64_t full_end;
    int64_t fast = fast_rows(bytes, bits, K, N, pa, pb, &full_end);
    if (rows > 4) {
        // Tall tiles: 4 bits and even N only (1, 2 and 6 bits measured slower than decoding panels first: their
        // indices cost more to extract and six bits' table takes four registers), and only with room to pack the rows.
        if (bits != 4 || (N & 1) || !work) return 0;
        int unit = 1;
        for (int64_t k = 0; k < K && unit; k++) unit = row_scale[k] == 1.0f;
        if (!packed) tall_pack(a, rows, lda, K, 0, tall_tiles(rows), work);
        if (unit) tall_avx512_4_1(work, rows, idx, K, N, fast, lut, row_base, row_scale, col_base, col_scale, pa, pb,
                                  bias, res, y, act, p0, p1);
        else tall_avx512_4_0(work, rows, idx, K, N, fast, lut, row_base, row_scale, col_base, col_scale, pa, pb,
                             bias, res, y, act, p0, p1);
        return 1;
    }
#define MLK_GEMV(B, R) gemv_avx512(B, R, a, lda, idx, bytes, K, N, fast, lut, row_base, row_scale, col_base, col_scale, pa, pb, bias, res, y, act, p0, p1)
#define MLK_GEMV_ROWS(B)                     \
    switch (rows) {                          \
    case 1: MLK_GEMV(B, 1); break;           \
    case 2: MLK_GEMV(B, 2); break;           \
    case 3: MLK_GEMV(B, 3); break;           \
    default: MLK_GEMV(B, 4); break;          \
    }
    switch (bits) {
    case 1: MLK_GEMV_ROWS(1); break;
    case 2: MLK_GEMV_ROWS(2); break;
    case 4: MLK_GEMV_ROWS(4); break;
    default: MLK_GEMV_ROWS(6); break;
    }
#undef MLK_GEMV_ROWS
#undef MLK_GEMV
    return 1;
}

// AVX2, 4 bits, rows [0, R) (R ≤ 2) of y for panels [pa, pb) of a weight whose rows start a byte (N even): two full
// panels at a time decoded from byte planes (nibbles32_planes_avx2) into registers and used there by every row, the
// sums in k order from 0 with FMAs, then + bias, + residual and the activation as row_avx2 does on the decoded
// panels: the same bits. Rows of the index stream in blocks of about 32 KB with the sums waiting in y between them,
// as gemv_avx512. Rows [fast, K) are decoded by row_portable; a last odd panel and a partial one a panel at a time.
MLK_AVX2 MLK_INLINE void gemv_avx2(const int R, const float *a, int64_t lda, const uint8_t *idx, int64_t bytes,
                                   int64_t K, int64_t N, int64_t fast, const float *lut, const int32_t *row_base, const float *row_scale,
                                   const int32_t *col_base, const float *col_scale, int64_t pa, int64_t pb,
                                   const float *bias, const float *res, float *y, int act, float p0, float p1) {
    const int bits = 4;
    __m256i pl[4];
    planes_avx2(lut + row_base[0] + col_base[pa * 16], 16, pl);
    __m256 lo = _mm256_set1_ps(p0), hi = _mm256_set1_ps(p1);
    int vec = MLK_ACT_VECTOR(act);
    float tmp[16] __attribute__((aligned(32)));
    int64_t kb = gemv_block_rows(res, bits, K, N);
    int64_t pairs_end = whole_groups_end(pa, pb, N, 2);
    for (int64_t k0 = 0; k0 < K; k0 += kb) {
        int64_t k1 = K - k0 < kb ? K : k0 + kb;
        for (int64_t p = pa; p < pairs_end; p += 2) {
            int64_t n0 = p * 16;
            __m256 c[2][4];
            _Pragma("clang loop unroll(full)") for (int m = 0; m < R; m++)
                _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++)
                    c[m][j] = k0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(y + m * N + n0 + j * 8);
            // The next block, 16 bytes per row and pair, front to back: it arrives while this one is multiplied.
            const char *ahead = (const char *)idx + ((k1 * N * bits) >> 3) + ((p - pa) >> 1) * (k1 - k0) * 16;
            const char *stream_end = (const char *)idx + ((K * N * bits) >> 3);
            for (int64_t k = k0; k < (k1 < fast ? k1 : fast); k++) {
                if (ahead < stream_end) _mm_prefetch(ahead, _MM_HINT_T0);
                ahead += 16;
                __m256 rs = _mm256_set1_ps(row_scale[k]);
                __m256 z[4];
                nibbles32_planes_avx2(idx, k * N + n0, pl, z);
                _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++) {
                    __m256 w = _mm256_mul_ps(_mm256_mul_ps(rs, _mm256_loadu_ps(col_scale + n0 + j * 8)), z[j]);
                    _Pragma("clang loop unroll(full)") for (int m = 0; m < R; m++)
                        c[m][j] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + m * lda + k), w, c[m][j]);
                }
            }
            for (int64_t k = k0 > fast ? k0 : fast; k < k1; k++)
                _Pragma("clang loop unroll(full)") for (int h = 0; h < 2; h++) {
                    row_portable(idx, bits, N, lut, row_base, row_scale, col_base, col_scale, p + h, k, tmp);
                    _Pragma("clang loop unroll(full)") for (int m = 0; m < R; m++) {
                        __m256 av = _mm256_broadcast_ss(a + m * lda + k);
                        c[m][2 * h] = _mm256_fmadd_ps(av, _mm256_load_ps(tmp), c[m][2 * h]);
                        c[m][2 * h + 1] = _mm256_fmadd_ps(av, _mm256_load_ps(tmp + 8), c[m][2 * h + 1]);
                    }
                }
            _Pragma("clang loop unroll(full)") for (int m = 0; m < R; m++)
                _Pragma("clang loop unroll(full)") for (int j = 0; j < 4; j++) {
                    float *yr = y + m * N + n0 + j * 8;
                    if (k1 < K) { _mm256_storeu_ps(yr, c[m][j]); continue; }
                    __m256 v = _mm256_add_ps(c[m][j], bias ? _mm256_loadu_ps(bias + n0 + j * 8) : _mm256_setzero_ps());
                    if (res) v = _mm256_add_ps(v, _mm256_loadu_ps(res + m * N + n0 + j * 8));
                    if (vec) v = act8(v, act, lo, hi);
                    _mm256_storeu_ps(yr, v);
                    if (!vec)
                        for (int t = 0; t < 8; t++) yr[t] = act_scalar(yr[t], act, p0, p1);
                }
        }
    }
    // A last odd panel or a partial one: a panel at a time, row by row, the table in two registers (a partial
    // panel's lanes past N read the next row's indices, times a column scale of 0, and are not stored); rows whose
    // 16 indices would end past the stream are decoded by row_portable.
    __m256 t0 = _mm256_loadu_ps(lut + row_base[0] + col_base[pa * 16]), t1 = _mm256_loadu_ps(lut + row_base[0] + col_base[pa * 16] + 8);
    __m256i jbits = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(bits));
    __m256i mask = _mm256_set1_epi32(15);
    for (int64_t p = pairs_end; p < pb; p++) {
        int64_t n0 = p * 16, nv = N - n0 < 16 ? N - n0 : 16;
        int64_t kv = rows_inside(bytes, bits, K, N, n0);
        __m256 cs0 = _mm256_loadu_ps(col_scale + n0), cs1 = _mm256_loadu_ps(col_scale + n0 + 8);
        for (int m = 0; m < R; m++) {
            __m256 c0 = _mm256_setzero_ps(), c1 = c0;
            for (int64_t k = 0; k < K; k++) {
                __m256 w0, w1;
                if (k < kv) {
                    __m256i v0, v1;
                    indices16_avx2(idx, k * N + n0, bits, jbits, mask, &v0, &v1);
                    __m256 rs = _mm256_set1_ps(row_scale[k]);
                    w0 = _mm256_mul_ps(_mm256_mul_ps(rs, cs0), lookup8_avx2(16, v0, t0, t1));
                    w1 = _mm256_mul_ps(_mm256_mul_ps(rs, cs1), lookup8_avx2(16, v1, t0, t1));
                } else {
                    row_portable(idx, bits, N, lut, row_base, row_scale, col_base, col_scale, p, k, tmp);
                    w0 = _mm256_load_ps(tmp);
                    w1 = _mm256_load_ps(tmp + 8);
                }
                __m256 av = _mm256_broadcast_ss(a + m * lda + k);
                c0 = _mm256_fmadd_ps(av, w0, c0);
                c1 = _mm256_fmadd_ps(av, w1, c1);
            }
            // The epilogue of row_avx2 on the half vectors, through tmp for the columns past N.
            __m256 c[2] = {c0, c1};
            for (int h = 0; h < 2 && h * 8 < nv; h++) {
                int64_t nh = nv - h * 8 < 8 ? nv - h * 8 : 8;
                float b[8] = {0}, r[8] = {0};
                for (int64_t t = 0; t < nh; t++) {
                    if (bias) b[t] = bias[n0 + h * 8 + t];
                    if (res) r[t] = res[m * N + n0 + h * 8 + t];
                }
                __m256 v = _mm256_add_ps(c[h], _mm256_loadu_ps(b));
                if (res) v = _mm256_add_ps(v, _mm256_loadu_ps(r));
                if (vec) v = act8(v, act, lo, hi);
                _mm256_store_ps(tmp, v);
                for (int64_t t = 0; t < nh; t++) y[m * N + n0 + h * 8 + t] = vec ? tmp[t] : act_scalar(tmp[t], act, p0, p1);
            }
        }
    }
}

MLK_AVX2 static void gemv_avx2_4(const float *a, int64_t rows, int64_t lda, const uint8_t *idx, int64_t bytes,
                                 int64_t K, int64_t N, int64_t fast, const float *lut, const int32_t *row_base, const float *row_scale,
                                 const int32_t *col_base, const float *col_scale, int64_t pa, int64_t pb,
                                 const float *bias, const float *res, float *y, int act, float p0, float p1) {
    // Two rows at a time (four would take 16 accumulators: all the registers).
    for (int64_t m = 0; m < rows; m += 2) {
        const float *r = res ? res + m * N : NULL;
        if (rows - m >= 2)
            gemv_avx2(2, a + m * lda, lda, idx, bytes, K, N, fast, lut, row_base, row_scale, col_base, col_scale, pa, pb, bias,
                      r, y + m * N, act, p0, p1);
        else
            gemv_avx2(1, a + m * lda, lda, idx, bytes, K, N, fast, lut, row_base, row_scale, col_base, col_scale, pa, pb, bias,
                      r, y + m * N, act, p0, p1);
    }
}
#endif

// ---- dispatch ----

int mlk_palette_gemv(const float *a, int64_t rows, int64_t lda, const uint8_t *idx, int64_t bytes, int bits, int64_t K,
                     int64_t N, const float *lut, const int32_t *row_base, const float *row_scale,
                     const int32_t *col_base, const float *col_scale, int64_t pa, int64_t pb, const float *bias,
                     const float *res, float *y, int act, float p0, float p1, float *work, int packed) {
#if MLK_X86
    if (rows < 1 || rows > MLK_PALETTE_GEMV_ROWS || pa >= pb || !one_table(row_base, K, col_base, pa, pb, N)) return 0;
    if (!mlk_cpu_has(MLK_CPU_AVX512)) {
        if (!mlk_cpu_has(MLK_CPU_AVX2) || bits != 4 || rows > 4 || (N & 1)) return 0;
        int64_t full_end;
        int64_t fast = fast_rows(bytes, bits, K, N, pa, pb, &full_end);
        gemv_avx2_4(a, rows, lda, idx, bytes, K, N, fast, lut, row_base, row_scale, col_base, col_scale, pa, pb, bias, res, y,
                    act, p0, p1);
        return 1;
    }
    if (bits > 6) return 0;
    return gemv_avx512_bits(a, rows, lda, idx, bytes, bits, K, N, lut, row_base, row_scale, col_base, col_scale, pa, pb,
                            bias, res, y, act, p0, p1, work, packed);
#else
    (void)a; (void)rows; (void)lda; (void)idx; (void)bytes; (void)bits; (void)K; (void)N; (void)lut; (void)row_base; (void)row_scale;
    (void)col_base; (void)col_scale; (void)pa; (void)pb; (void)bias; (void)res; (void)y; (void)work; (void)act; (void)p0; (void)p1;
    (void)packed;
    return 0;
#endif
}

int64_t mlk_palette_gemv_work(int64_t rows, int64_t K) { return MLK_PALETTE_GEMV_WORK(rows, K); }

int64_t mlk_palette_tall_tiles(int64_t rows, int bits, int64_t K, int64_t N, const int32_t *row_base,
                               const int32_t *col_base) {
#if MLK_X86
    if (!mlk_cpu_has(MLK_CPU_AVX512) || bits != 4 || (N & 1) || rows < 5 || rows > MLK_PALETTE_GEMV_ROWS || N < 1 ||
        !one_table(row_base, K, col_base, 0, (N + 15) / 16, N))
        return 0;
    return tall_tiles(rows);
#else
    (void)rows; (void)bits; (void)K; (void)N; (void)row_base; (void)col_base;
    return 0;
#endif
}

void mlk_palette_tall_pack(const float *a, int64_t rows, int64_t lda, int64_t K, int64_t t0, int64_t t1, float *work) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX512) && rows <= MLK_PALETTE_GEMV_ROWS && 0 <= t0 && t0 <= t1) tall_pack_avx512(a, rows, lda, K, t0, t1, work);
#else
    (void)a; (void)rows; (void)lda; (void)K; (void)t0; (void)t1; (void)work;
#endif
}

void mlk_palette_unpack(const uint8_t *idx, int64_t bytes, int bits, int64_t K, int64_t N, const float *lut,
                        const int32_t *row_base, const float *row_scale, const int32_t *col_base,
                        const float *col_scale, int64_t p0, int64_t p1, float *packed) {
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX512)) {
        unpack_with(rows_by_width_avx512, 6, idx, bytes, bits, K, N, lut, row_base, row_scale, col_base, col_scale, p0, p1, packed);
        return;
    }
    if (mlk_cpu_has(MLK_CPU_AVX2)) {
        unpack_with(rows_by_width_avx2, 6, idx, bytes, bits, K, N, lut, row_base, row_scale, col_base, col_scale, p0, p1, packed);
        return;
    }
#endif
    (void)bytes;
    unpack_portable(idx, bits, K, N, lut, row_base, row_scale, col_base, col_scale, p0, p1, packed);
}
