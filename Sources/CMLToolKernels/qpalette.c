// Palettes with int8 tables (`mltool quantize --lut int8`) kept as their 4- or 6-bit indices and decoded into
// mlk_qpack's int8 panels just before an int8 GEMM reads them, so such a model holds its indices, not int8 copies.
// The indices are first rearranged (once, at load) into the panels' element order, split so that a decoder needs no
// bit-straddling: per k group of a panel (64 elements, element e = 4·j + i for column j, row 4g + i), 32 bytes whose
// byte b holds element b's low 4 bits in its low nibble and element b + 32's in its high nibble; 6 bits add 16 bytes
// whose byte b holds the top 2 bits of elements b, b + 16, b + 32, b + 48 at bits 0, 2, 4, 6. Portable C and AVX2
// (also run on AVX-512 machines) side by side; both give exactly the bytes mlk_qpack gives for the decoded values.
#include "CMLToolKernels.h"
#include "bits.h"
#include "isa.h"
#include <string.h>

int64_t mlk_qpalette_panel_bytes(int64_t K, int bits) { return (K + 3) / 4 * 8 * bits; }

// Index v of element e (4·(n mod 16) + k mod 4) into its panel group `o` (8·bits bytes): the low nibble plane, and at
// 6 bits the plane of top bits.
MLK_INLINE void put_index(uint8_t *o, const int bits, int e, uint32_t v) {
    o[e & 31] |= (uint8_t)((v & 15) << (4 * (e >> 5)));
    if (bits == 6) o[32 + (e & 15)] |= (uint8_t)((v >> 4) << (2 * (e >> 4)));
}

// Rows [0, K) of the stream in its own order (row k, then column n): element e = 4·(n mod 16) + k mod 4 of group
// ⌊k/4⌋ of panel ⌊n/16⌋; a row's writes touch one 64-element group per panel, which the next three rows fill further.
// `bits` a constant in each caller, so the index extraction compiles to shifts; at 6 bits, four indices whose stream
// position is a multiple of 4 come from three whole bytes.
MLK_INLINE void pack_rows(const uint8_t *idx, const int bits, int64_t K, int64_t N, int64_t groups, uint8_t *out) {
    const int64_t gb = 8 * bits;
    for (int64_t k = 0; k < K; k++) {
        const int64_t g = k >> 2, i = k & 3, row = k * N;
        int64_t n = 0;
        while (n < N) {
            if (bits == 6 && ((row + n) & 3) == 0 && n + 4 <= N && ((n + 3) >> 4) == (n >> 4)) {
                const uint8_t *b = idx + ((row + n) >> 2) * 3;
                uint32_t w = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16;
                uint8_t *o = out + ((n >> 4) * groups + g) * gb;
                for (int j = 0; j < 4; j++) put_index(o, 6, (int)((((n + j) & 15) << 2) | i), (w >> (6 * j)) & 63);
                n += 4;
            } else {
                put_index(out + ((n >> 4) * groups + g) * gb, bits, (int)(((n & 15) << 2) | i),
                          mlk_palette_index(idx, row + n, bits));
                n++;
            }
        }
    }
}

int mlk_qpalette_pack(const uint8_t *idx, int64_t bytes, int bits, int64_t K, int64_t N, uint8_t *out) {
    if ((bits != 4 && bits != 6) || K <= 0 || N <= 0 || K > INT64_MAX / N || K * N > (INT64_MAX - 7) / bits ||
        bytes < (K * N * bits + 7) / 8)
        return 0;
    int64_t groups = (K + 3) / 4, panels = (N + 15) / 16;
    memset(out, 0, (size_t)(panels * groups * 8 * bits));
    if (bits == 4) pack_rows(idx, 4, K, N, groups, out);
    else pack_rows(idx, 6, K, N, groups, out);
    return 1;
}

// mlk_qpack writes 0 where a panel runs past K or N; the decoded index there (0) may mean anything.
static void zero_padding(int8_t *panel, int64_t groups, int64_t K, int64_t N, int64_t p) {
    int64_t last = K - (groups - 1) * 4;   // rows of the last group, 1…4
    for (int j = 0; j < 16; j++)
        for (int64_t i = last; i < 4; i++) panel[(groups - 1) * 64 + j * 4 + i] = 0;
    int64_t cols = N - p * 16;
    if (cols < 16)
        for (int64_t g = 0; g < groups; g++) memset(panel + g * 64 + cols * 4, 0, (size_t)(64 - cols * 4));
}

// ---- portable ----

static void unpack_portable(const uint8_t *kept, int bits, int64_t groups, const int8_t *tables, int64_t p0,
                            int64_t p1, int8_t *packed) {
    int64_t gb = 8 * bits;
    for (int64_t p = p0; p < p1; p++) {
        const int8_t *t = tables + (p << bits);
        for (int64_t g = 0; g < groups; g++) {
            const uint8_t *s = kept + (p * groups + g) * gb;
            int8_t *d = packed + ((p - p0) * groups + g) * 64;
            for (int e = 0; e < 64; e++) {
                uint32_t v = (uint32_t)(s[e & 31] >> (4 * (e >> 5))) & 15;
                if (bits == 6) v |= ((uint32_t)(s[32 + (e & 15)] >> (2 * (e >> 4))) & 3) << 4;
                d[e] = t[v];
            }
        }
    }
}

#if MLK_X86
// ---- AVX2 ----

// 32 values of a 64-entry table (four 16-entry parts t[0…3]) at indices lo (0…15) + 16 · hi (hi 0…3), by four
// byte shuffles and three blends on hi's two bits moved to each byte's top bit.
MLK_AVX2 MLK_INLINE __m256i lookup64_avx2(const __m256i *t, __m256i lo, __m256i hi) {
    __m256i b0 = _mm256_slli_epi16(hi, 7), b1 = _mm256_slli_epi16(hi, 6);
    __m256i ab = _mm256_blendv_epi8(_mm256_shuffle_epi8(t[0], lo), _mm256_shuffle_epi8(t[1], lo), b0);
    __m256i cd = _mm256_blendv_epi8(_mm256_shuffle_epi8(t[2], lo), _mm256_shuffle_epi8(t[3], lo), b0);
    return _mm256_blendv_epi8(ab, cd, b1);
}

MLK_AVX2 MLK_INLINE void unpack_avx2_bits(const uint8_t *kept, const int bits, int64_t groups, const int8_t *tables,
                                          int64_t p0, int64_t p1, int8_t *packed) {
    const int64_t gb = 8 * bits;
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    // Elements 0…15 take bits 0-1 of the high bytes, 16…31 bits 2-3, 32…47 bits 4-5, 48…63 bits 6-7.
    const __m256i s01 = _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2), s23 = _mm256_setr_epi32(4, 4, 4, 4, 6, 6, 6, 6);
    for (int64_t p = p0; p < p1; p++) {
        const int8_t *tp = tables + (p << bits);
        __m256i t[4];
        for (int s = 0; s < (bits == 6 ? 4 : 1); s++)
            t[s] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(tp + 16 * s)));
        const uint8_t *src = kept + p * groups * gb;
        int8_t *dst = packed + (p - p0) * groups * 64;
        for (int64_t g = 0; g < groups; g++) {
            __m256i l = _mm256_loadu_si256((const __m256i *)(const void *)(src + g * gb));
            __m256i lo0 = _mm256_and_si256(l, m4), lo1 = _mm256_and_si256(_mm256_srli_epi16(l, 4), m4);
            __m256i v0, v1;
            if (bits == 4) {
                v0 = _mm256_shuffle_epi8(t[0], lo0);
                v1 = _mm256_shuffle_epi8(t[0], lo1);
            } else {
                __m256i h = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(src + g * gb + 32)));
                v0 = lookup64_avx2(t, lo0, _mm256_and_si256(_mm256_srlv_epi32(h, s01), m2));
                v1 = lookup64_avx2(t, lo1, _mm256_and_si256(_mm256_srlv_epi32(h, s23), m2));
            }
            _mm256_storeu_si256((__m256i *)(void *)(dst + g * 64), v0);
            _mm256_storeu_si256((__m256i *)(void *)(dst + g * 64 + 32), v1);
        }
    }
}

MLK_AVX2 static void unpack_avx2(const uint8_t *kept, int bits, int64_t groups, const int8_t *tables, int64_t p0,
                                 int64_t p1, int8_t *packed) {
    if (bits == 4) unpack_avx2_bits(kept, 4, groups, tables, p0, p1, packed);
    else unpack_avx2_bits(kept, 6, groups, tables, p0, p1, packed);
}
#endif

// ---- dispatch ----

void mlk_qpalette_unpack(const uint8_t *kept, int bits, int64_t K, int64_t N, const int8_t *tables, int64_t p0,
                         int64_t p1, int8_t *packed) {
    int64_t groups = (K + 3) / 4, panels = (N + 15) / 16;
    if ((bits != 4 && bits != 6) || K <= 0 || N <= 0 || p0 < 0 || p1 > panels || p0 >= p1) return;
#if MLK_X86
    if (mlk_cpu_has(MLK_CPU_AVX2)) unpack_avx2(kept, bits, groups, tables, p0, p1, packed);
    else
#endif
        unpack_portable(kept, bits, groups, tables, p0, p1, packed);
    if (K % 4 != 0 || p1 == panels) {
        for (int64_t p = p0; p < p1; p++) zero_padding(packed + (p - p0) * groups * 64, groups, K, N, p);
    }
}
