/*
 * column_compress.c -- columns' kept values packed (column_compress.h):
 * an AVX-512 kernel chosen at run time, and the portable helpers.
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
#endif

int64_t gsq_compress_columns(void *const *dst, const void *const *src, const uint32_t *size,
                             uint32_t ncols, const uint8_t *keep, uint32_t n)
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
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw"))
        return -1;
    if (need_u16)
        return __builtin_cpu_supports("avx512vbmi2")
                   ? (int64_t)compress_vbmi2(dst, src, size, ncols, keep, n)
                   : -1;
    return (int64_t)compress_f(dst, src, size, ncols, keep, n);
#else
    (void)dst, (void)src, (void)size, (void)ncols, (void)keep, (void)n;
    return -1;
#endif
}
