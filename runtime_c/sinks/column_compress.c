/*
 * column_compress.c -- columns' kept values packed (column_compress.h):
 * an AVX-512 and an AVX2 kernel chosen at run time, and the portable
 * helpers.
 */
#include "column_compress.h"

#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define GSQ_HAVE_X86_KERNELS 1
#include <immintrin.h>
#endif

uint32_t gsq_keep_to_sel(const uint8_t *keep, uint32_t n, uint32_t first, uint32_t *sel)
{
    uint32_t j, m = 0;
    for (j = 0; j < n; j++) {
        sel[m] = first + j;
        m += keep[j];
    }
    return m;
}

#ifdef GSQ_HAVE_X86_KERNELS
/* The output is written with non-temporal stores: it is not read again
 * soon, and a line written whole that way is not first read from memory
 * (a third of the memory traffic of a selection over columns otherwise).
 * A piece of STAGE_ROWS rows is packed into a stack buffer in the L1
 * cache, then streamed out: its aligned whole lines with non-temporal
 * stores, the partial lines at its ends with plain ones. */
enum { STAGE_ROWS = 1024 };

__attribute__((target("avx512f"))) static void stream_out(uint8_t *d, const uint8_t *s,
                                                         size_t len)
{
    size_t head = (64u - ((uintptr_t)d & 63u)) & 63u;
    if (head > len)
        head = len;
    memcpy(d, s, head);
    d += head, s += head, len -= head;
    for (; len >= 64; len -= 64, d += 64, s += 64)
        _mm512_stream_si512((void *)d, _mm512_loadu_si512((const void *)s));
    memcpy(d, s, len);
}

/* One 16-, 8- or 32-lane group of a column: the lanes of mask h selected
 * from the values at s (vpcompress) and stored whole at stage + k (the
 * stage has room past the kept values). */
#define COMPRESS_GROUP(T, MASK_T, COMPRESS)                                               \
    do {                                                                                 \
        MASK_T h_ = (MASK_T)(mk >> q);                                                   \
        _mm512_storeu_si512((void *)((T *)(void *)stage + k),                            \
                            COMPRESS(h_, _mm512_loadu_si512((const void *)((const T *)(const void *)s + q)))); \
        k += (uint32_t)__builtin_popcountll((uint64_t)h_);                               \
    } while (0)

/* The kernel, a column at a time (one output stream written at once
 * measured faster than all of them in step): 64 keep bytes at a time
 * become a bit mask (vptestmb) that selects the column's values. */
#define COMPRESS_KERNEL_BODY(WITH_U16)                                                   \
    _Alignas(64) uint8_t stage[STAGE_ROWS * 8 + 64];                                     \
    uint32_t j, p, m = 0, c, q, k;                                                       \
    for (c = 0; c < ncols; c++) {                                                        \
        uint8_t *o = (uint8_t *)dst[c];                                                  \
        uint32_t sz = size[c];                                                           \
        m = 0;                                                                           \
        for (p = 0; p < n; p += STAGE_ROWS) {                                            \
            uint32_t end = n - p < STAGE_ROWS ? n : p + STAGE_ROWS;                      \
            k = 0;                                                                       \
            for (j = p; j + 64 <= end; j += 64) {                                        \
                uint64_t mk = _mm512_test_epi8_mask(                                     \
                    _mm512_loadu_si512((const void *)(keep + j)), _mm512_set1_epi8(1));  \
                const uint8_t *s = (const uint8_t *)src[c] + (size_t)j * sz;             \
                switch (sz) {                                                            \
                case 4:                                                                  \
                    for (q = 0; q < 64; q += 16)                                         \
                        COMPRESS_GROUP(uint32_t, __mmask16, _mm512_maskz_compress_epi32); \
                    break;                                                               \
                case 8:                                                                  \
                    for (q = 0; q < 64; q += 8)                                          \
                        COMPRESS_GROUP(uint64_t, __mmask8, _mm512_maskz_compress_epi64);  \
                    break;                                                               \
                default:                                                                 \
                    WITH_U16                                                             \
                    break;                                                               \
                }                                                                        \
            }                                                                            \
            for (; j < end; j++) /* a piece's last rows (n % 64) one at a time */        \
                if (keep[j])                                                             \
                    memcpy(stage + (size_t)k++ * sz, (const uint8_t *)src[c] + (size_t)j * sz, sz); \
            stream_out(o + (size_t)m * sz, stage, (size_t)k * sz);                       \
            m += k;                                                                      \
        }                                                                                \
    }                                                                                    \
    _mm_sfence(); /* the streamed lines visible before the batch is handed over */       \
    return m

#define U16_GROUPS                                                                       \
    for (q = 0; q < 64; q += 32)                                                         \
        COMPRESS_GROUP(uint16_t, __mmask32, _mm512_maskz_compress_epi16);

__attribute__((target("avx512f,avx512bw"))) static uint32_t
compress_f(void *const *dst, const void *const *src, const uint32_t *size, uint32_t ncols,
           const uint8_t *keep, uint32_t n)
{
    COMPRESS_KERNEL_BODY();
}

__attribute__((target("avx512f,avx512bw,avx512vbmi2"))) static uint32_t
compress_vbmi2(void *const *dst, const void *const *src, const uint32_t *size, uint32_t ncols,
               const uint8_t *keep, uint32_t n)
{
    COMPRESS_KERNEL_BODY(U16_GROUPS);
}
/* ---- AVX2: no compress instruction, so a group's kept lanes are moved to
 * its front by a permutation looked up by the group's keep bits. */

/* pack8_index[h]: the positions of h's set bits, lowest first, one per
 * byte (the rest 0): the lanes an 8-lane group with keep bits h keeps, in
 * order.  Built by the compiler from the macros below. */
#define KBIT(h, i) (((h) >> (i)) & 1u)
#define KPOP8(x)                                                                          \
    (KBIT(x, 0) + KBIT(x, 1) + KBIT(x, 2) + KBIT(x, 3) + KBIT(x, 4) + KBIT(x, 5) + KBIT(x, 6) \
     + KBIT(x, 7))
/* lane i, when kept, goes after the kept lanes below it */
#define KLANE(h, i)                                                                       \
    ((uint64_t)KBIT(h, i) * ((uint64_t)(i) << (8u * KPOP8((h) & ((1u << (i)) - 1u)))))
#define KPACK(h)                                                                          \
    (KLANE(h, 0) | KLANE(h, 1) | KLANE(h, 2) | KLANE(h, 3) | KLANE(h, 4) | KLANE(h, 5)    \
     | KLANE(h, 6) | KLANE(h, 7))
#define KPACK4(h) KPACK(h), KPACK((h) + 1), KPACK((h) + 2), KPACK((h) + 3)
#define KPACK16(h) KPACK4(h), KPACK4((h) + 4), KPACK4((h) + 8), KPACK4((h) + 12)
#define KPACK64(h) KPACK16(h), KPACK16((h) + 16), KPACK16((h) + 32), KPACK16((h) + 48)
static const uint64_t pack8_index[256] = {KPACK64(0u), KPACK64(64u), KPACK64(128u),
                                          KPACK64(192u)};

/* The kept values of 64 rows (keep bits mk) of a column of sz-byte values
 * at s, appended at stage + k values; returns the new k.  Each group's
 * store is whole (the stage has room past the kept values). */
__attribute__((target("avx2"))) static uint32_t compress64_avx2(uint8_t *stage, uint32_t k,
                                                               const uint8_t *s, uint32_t sz,
                                                               uint64_t mk)
{
    uint32_t q;
    switch (sz) {
    case 4:
        for (q = 0; q < 64; q += 8) {
            unsigned h = (unsigned)(mk >> q) & 255u;
            __m256i idx = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)pack8_index[h]));
            __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(s + (size_t)q * 4));
            _mm256_storeu_si256((__m256i *)(void *)(stage + (size_t)k * 4),
                                _mm256_permutevar8x32_epi32(v, idx));
            k += (uint32_t)__builtin_popcount(h);
        }
        break;
    case 8:
        for (q = 0; q < 64; q += 4) {
            unsigned h = (unsigned)(mk >> q) & 15u;
            /* lane b of 64 bits is the 32-bit lanes 2b and 2b + 1 */
            __m256i b = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128((int)pack8_index[h]));
            __m256i lo = _mm256_slli_epi64(b, 1);
            __m256i idx = _mm256_or_si256(
                lo, _mm256_slli_epi64(_mm256_add_epi64(lo, _mm256_set1_epi64x(1)), 32));
            __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(s + (size_t)q * 8));
            _mm256_storeu_si256((__m256i *)(void *)(stage + (size_t)k * 8),
                                _mm256_permutevar8x32_epi32(v, idx));
            k += (uint32_t)__builtin_popcount(h);
        }
        break;
    default: /* 2: eight values per 128 bits, moved by byte (pshufb) */
        for (q = 0; q < 64; q += 8) {
            unsigned h = (unsigned)(mk >> q) & 255u;
            __m128i b = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)pack8_index[h]));
            __m128i lo = _mm_slli_epi16(b, 1);
            __m128i ctl = _mm_or_si128(lo, _mm_slli_epi16(_mm_add_epi16(lo, _mm_set1_epi16(1)), 8));
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + (size_t)q * 2));
            _mm_storeu_si128((__m128i *)(void *)(stage + (size_t)k * 2), _mm_shuffle_epi8(v, ctl));
            k += (uint32_t)__builtin_popcount(h);
        }
        break;
    }
    return k;
}

/* As the AVX-512 kernel, a column at a time, a piece of STAGE_ROWS rows
 * packed into a stage in L1, but copied out with plain stores: on the AVX2
 * machine measured (AMD Zen 3, a VM) non-temporal ones made Q1 over Arrow
 * slower (one thread 40-49 ms plain against 50-62 ms streamed, three
 * interleaved rounds). */
__attribute__((target("avx2"))) static uint32_t
compress_avx2(void *const *dst, const void *const *src, const uint32_t *size, uint32_t ncols,
              const uint8_t *keep, uint32_t n)
{
    _Alignas(64) uint8_t stage[STAGE_ROWS * 8 + 64];
    uint32_t j, p, m = 0, c, k;
    for (c = 0; c < ncols; c++) {
        uint8_t *o = (uint8_t *)dst[c];
        uint32_t sz = size[c];
        m = 0;
        for (p = 0; p < n; p += STAGE_ROWS) {
            uint32_t end = n - p < STAGE_ROWS ? n : p + STAGE_ROWS;
            k = 0;
            for (j = p; j + 64 <= end; j += 64) {
                /* keep bytes are 0 or 1: shifted to the sign bit, 32 a movemask */
                __m256i k0 = _mm256_loadu_si256((const __m256i *)(const void *)(keep + j));
                __m256i k1 = _mm256_loadu_si256((const __m256i *)(const void *)(keep + j + 32));
                uint64_t mk = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(k0, 7))
                              | (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(k1, 7))
                                    << 32;
                k = compress64_avx2(stage, k, (const uint8_t *)src[c] + (size_t)j * sz, sz, mk);
            }
            for (; j < end; j++) /* a piece's last rows (n % 64) one at a time */
                if (keep[j])
                    memcpy(stage + (size_t)k++ * sz, (const uint8_t *)src[c] + (size_t)j * sz, sz);
            memcpy(o + (size_t)m * sz, stage, (size_t)k * sz);
            m += k;
        }
    }
    return m;
}
#endif

/* A kernel of instruction set isa (one GSQ_COMPRESS_* bit), or -1. */
static int64_t compress_with(int isa, void *const *dst, const void *const *src,
                             const uint32_t *size, uint32_t ncols, const uint8_t *keep, uint32_t n)
{
#ifdef GSQ_HAVE_X86_KERNELS
    uint32_t c;
    int need_u16 = 0;
    if (ncols > GSQ_COMPRESS_MAX_COLS)
        return -1;
    for (c = 0; c < ncols; c++) {
        if (size[c] == 2)
            need_u16 = 1;
        else if (size[c] != 4 && size[c] != 8)
            return -1;
    }
    __builtin_cpu_init();
    if (isa == GSQ_COMPRESS_AVX512) {
        if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw"))
            return -1;
        if (need_u16)
            return __builtin_cpu_supports("avx512vbmi2")
                       ? (int64_t)compress_vbmi2(dst, src, size, ncols, keep, n)
                       : -1;
        return (int64_t)compress_f(dst, src, size, ncols, keep, n);
    }
    if (isa == GSQ_COMPRESS_AVX2 && __builtin_cpu_supports("avx2"))
        return (int64_t)compress_avx2(dst, src, size, ncols, keep, n);
    return -1;
#else
    (void)isa, (void)dst, (void)src, (void)size, (void)ncols, (void)keep, (void)n;
    return -1;
#endif
}

int64_t gsq_compress_columns(int isas, void *const *dst, const void *const *src,
                             const uint32_t *size, uint32_t ncols, const uint8_t *keep, uint32_t n)
{
    int64_t got = -1;
    if (isas & GSQ_COMPRESS_AVX512)
        got = compress_with(GSQ_COMPRESS_AVX512, dst, src, size, ncols, keep, n);
    if (got < 0 && (isas & GSQ_COMPRESS_AVX2))
        got = compress_with(GSQ_COMPRESS_AVX2, dst, src, size, ncols, keep, n);
    return got;
}
