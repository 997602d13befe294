/*
 * table_mem.c -- memory for the operators' large hash tables.
 *
 * An aggregation table is read at random: one cache miss per record, and
 * with 4 KiB pages a TLB miss as well once the table outgrows what the TLB
 * maps (a few MiB).  Tables of GSQ_TABLE_HUGE_BYTES (2 MiB) or more are
 * therefore allocated on a 2 MiB boundary, and marked for transparent huge
 * pages before they are first touched when the environment's
 * GSQLC_TABLE_HUGE_PAGES is 1.  That is not the default: on a virtual
 * machine whose host backs guest memory lazily (and takes freed 2 MiB
 * blocks back), every huge page a run first touches is slow to fault in.
 * Measured on a 2-core KVM guest, Q2 over 524,288 groups (20 M rows) through
 * the Python API: a process's first run 2.14-2.33 s with huge pages,
 * 0.86-0.88 s without; later runs of the process (the block cache below
 * holds their memory) 0.64-0.68 s with, 0.73-0.78 s without; `gsqlc run`
 * over the capture 1.64-3.00 s with, 1.85-1.93 s without (bench/README.md).
 * A new large block is anonymous memory mapped for it:
 * the kernel hands its pages out zeroed as they are first touched, so
 * gsq_table_alloc does not zero it again, and a table no record reaches
 * (a selective query's, among many over one stream) costs no page at all.
 * Smaller ones are aligned on a cache line.  Ownership: the caller owns the
 * block and frees it with gsq_table_free.
 *
 * The block cache.  A large block freed is kept for the next large table
 * of this library (the query set's own copy of the runtime) instead of
 * going back to the kernel: a growing table frees the block it outgrew
 * while the others of the run grow through the same sizes, and the next
 * run asks for the same sizes again.  A fresh block costs a page fault and
 * a page the kernel zeroes per 2 MiB (per 4 KiB without huge pages), and
 * on a virtual machine whose memory the host backs lazily much more: Q2
 * over 524,288 groups spent 16 % of its time in the kernel's clear_page
 * on a 2-core KVM guest, and its median run fell from 1.48-1.51 s to
 * 1.12-1.19 s with the cache (bench/README.md).  A block taken from the
 * cache holds old bytes: gsq_table_alloc zeroes it as it zeroes a new one,
 * gsq_table_reserve's caller initialises it anyway.
 *
 * Invariants (all under cache.lock, as tables are made and freed on every
 * run's threads): live[0..n_live) lists every large block handed out and
 * not yet freed, with its size (a large block is mapped, and unmapped with
 * that size: one the list could not take is unmapped at once, and the
 * request fails as out of memory); held[0..n_held) lists freed
 * blocks kept, held_bytes is the sum of their sizes and never exceeds
 * max_bytes; a block is in at most one list.  A request for n bytes takes
 * the smallest held block of n to 2n bytes.  max_bytes is
 * GSQ_TABLE_CACHE_BYTES unless the environment's GSQLC_TABLE_CACHE_MB says
 * otherwise (0: no cache), read at the first large block; under
 * AddressSanitizer it is 0, so that a use after free is still caught.
 */
#define _DEFAULT_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gsq_runtime.h"

#define GSQ_CACHE_LINE 64u
/* The most bytes of freed blocks the cache keeps by default. */
#define GSQ_TABLE_CACHE_BYTES ((uint64_t)512 << 20)
/* The most freed blocks it keeps (each request looks at all of them). */
#define GSQ_TABLE_CACHE_BLOCKS 64u

#if defined(__SANITIZE_ADDRESS__)
#define GSQ_TABLE_CACHE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GSQ_TABLE_CACHE_SANITIZED 1
#endif
#endif

typedef struct table_block {
    void *p;
    size_t bytes;
} table_block;

static struct {
    pthread_mutex_t lock;
    int configured;           /* max_bytes, huge_pages read from the environment */
    int huge_pages;           /* GSQLC_TABLE_HUGE_PAGES=1: MADV_HUGEPAGE new blocks */
    uint64_t max_bytes;
    table_block *live;        /* handed out, not freed: n_live of cap_live */
    size_t n_live, cap_live;
    table_block held[GSQ_TABLE_CACHE_BLOCKS]; /* freed, kept */
    size_t n_held;
    uint64_t held_bytes;
    uint64_t reused, fresh;   /* large requests served from held / new */
} cache = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, NULL, 0, 0, {{NULL, 0}}, 0, 0, 0, 0};

/* The mapping of a large block of `bytes`: whole huge pages. */
static size_t large_len(size_t bytes)
{
    return (bytes + GSQ_TABLE_HUGE_BYTES - 1) & ~(GSQ_TABLE_HUGE_BYTES - 1);
}

/* A new large block, on a GSQ_TABLE_HUGE_BYTES boundary (more is mapped
 * and the ends cut off), its pages zeroed on first touch, marked for huge
 * pages when `huge`; NULL: none. */
static void *large_map(size_t bytes, int huge)
{
    size_t len = large_len(bytes), lead;
    uint8_t *m;
    if (len < bytes || len + GSQ_TABLE_HUGE_BYTES < len)
        return NULL;
    m = mmap(NULL, len + GSQ_TABLE_HUGE_BYTES, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    lead = (GSQ_TABLE_HUGE_BYTES - (uintptr_t)m % GSQ_TABLE_HUGE_BYTES) % GSQ_TABLE_HUGE_BYTES;
    if (lead)
        munmap(m, lead);
    munmap(m + lead + len, GSQ_TABLE_HUGE_BYTES - lead);
#ifdef MADV_HUGEPAGE
    if (huge)
        (void)madvise(m + lead, len, MADV_HUGEPAGE); /* a hint: failure leaves 4 KiB pages */
#else
    (void)huge;
#endif
    return m + lead;
}

static void large_unmap(void *p, size_t bytes)
{
    munmap(p, large_len(bytes));
}

/* cache.lock held. */
static void cache_configure(void)
{
    const char *mb;
    if (cache.configured)
        return;
    cache.configured = 1;
    cache.max_bytes = GSQ_TABLE_CACHE_BYTES;
    cache.huge_pages = (mb = getenv("GSQLC_TABLE_HUGE_PAGES")) != NULL && strcmp(mb, "1") == 0;
    mb = getenv("GSQLC_TABLE_CACHE_MB");
    if (mb && *mb) {
        char *end = NULL;
        unsigned long long v = strtoull(mb, &end, 10);
        if (end && *end == '\0' && v <= UINT64_MAX >> 20)
            cache.max_bytes = (uint64_t)v << 20;
    }
#ifdef GSQ_TABLE_CACHE_SANITIZED
    cache.max_bytes = 0;
#endif
}

/* List block p of `bytes` as handed out (cache.lock held); 0 when the list
 * could not grow (p is then an ordinary block). */
static int cache_track(void *p, size_t bytes)
{
    if (cache.n_live == cache.cap_live) {
        size_t cap = cache.cap_live ? cache.cap_live * 2u : 64u;
        table_block *l = realloc(cache.live, cap * sizeof *l);
        if (!l)
            return 0;
        cache.live = l;
        cache.cap_live = cap;
    }
    cache.live[cache.n_live].p = p;
    cache.live[cache.n_live].bytes = bytes;
    cache.n_live++;
    return 1;
}

/* A held block of bytes..2*bytes bytes, listed as handed out; NULL: none. */
static void *cache_take(size_t bytes)
{
    void *p = NULL;
    size_t best = 0;
    pthread_mutex_lock(&cache.lock);
    cache_configure();
    for (size_t i = 0; i < cache.n_held; i++) {
        size_t b = cache.held[i].bytes;
        if (b >= bytes && b / 2u <= bytes && (!p || b < cache.held[best].bytes)) {
            p = cache.held[i].p;
            best = i;
        }
    }
    if (p) {
        table_block blk = cache.held[best];
        if (cache_track(blk.p, blk.bytes)) {
            cache.held[best] = cache.held[--cache.n_held];
            cache.held_bytes -= blk.bytes;
            cache.reused++;
        } else {
            p = NULL;
        }
    }
    if (!p)
        cache.fresh++;
    pthread_mutex_unlock(&cache.lock);
    return p;
}

/* Whether p was a listed block, now kept or freed. */
static int cache_give(void *p)
{
    int listed = 0;
    pthread_mutex_lock(&cache.lock);
    for (size_t i = 0; i < cache.n_live; i++) {
        if (cache.live[i].p != p)
            continue;
        table_block blk = cache.live[i];
        cache.live[i] = cache.live[--cache.n_live];
        listed = 1;
        /* make room: the oldest held blocks go first */
        while (cache.n_held &&
               (cache.n_held == GSQ_TABLE_CACHE_BLOCKS || cache.held_bytes + blk.bytes > cache.max_bytes)) {
            cache.held_bytes -= cache.held[0].bytes;
            large_unmap(cache.held[0].p, cache.held[0].bytes);
            memmove(cache.held, cache.held + 1, --cache.n_held * sizeof cache.held[0]);
        }
        if (blk.bytes <= cache.max_bytes) {
            cache.held[cache.n_held++] = blk;
            cache.held_bytes += blk.bytes;
        } else {
            large_unmap(blk.p, blk.bytes);
        }
        break;
    }
    pthread_mutex_unlock(&cache.lock);
    return listed;
}

/* The bytes of a block of n elements of `size` (at least 1), or 0 when
 * they overflow size_t. */
static size_t table_bytes(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return 0;
    return n * size != 0 ? n * size : 1;
}

/* gsq_table_reserve; *zeroed set when the block is known to be zeroes
 * (a new large one). */
static void *table_get(size_t n, size_t size, int *zeroed)
{
    size_t bytes = table_bytes(n, size);
    void *p = NULL;
    int listed;
    *zeroed = 0;
    if (!bytes)
        return NULL;
    if (bytes < GSQ_TABLE_HUGE_BYTES) {
        /* line-aligned at least: slots of a power-of-two size up to a line
         * then never straddle two lines (GSQ_AGG_SLOT_ALIGN) */
        return posix_memalign(&p, GSQ_CACHE_LINE, bytes) == 0 ? p : NULL;
    }
    if ((p = cache_take(bytes)) != NULL)
        return p;
    if ((p = large_map(bytes, cache.huge_pages)) == NULL) /* configured by cache_take */
        return NULL;
    pthread_mutex_lock(&cache.lock);
    listed = cache_track(p, bytes);
    pthread_mutex_unlock(&cache.lock);
    if (!listed) { /* its size would be lost: no way to unmap it later */
        large_unmap(p, bytes);
        return NULL;
    }
    *zeroed = 1;
    return p;
}

void *gsq_table_reserve(size_t n, size_t size)
{
    int zeroed;
    return table_get(n, size, &zeroed);
}

void *gsq_table_alloc(size_t n, size_t size)
{
    int zeroed;
    void *p = table_get(n, size, &zeroed);
    if (p && !zeroed)
        memset(p, 0, table_bytes(n, size));
    return p;
}

void gsq_table_free(void *p)
{
    if (p && !cache_give(p))
        free(p);
}

GSQ_EXPORT void gsqlc_table_cache_counts(uint64_t out[4])
{
    pthread_mutex_lock(&cache.lock);
    out[0] = cache.held_bytes;
    out[1] = cache.n_held;
    out[2] = cache.reused;
    out[3] = cache.fresh;
    pthread_mutex_unlock(&cache.lock);
}

GSQ_EXPORT void gsqlc_table_cache_trim(void)
{
    pthread_mutex_lock(&cache.lock);
    for (size_t i = 0; i < cache.n_held; i++)
        large_unmap(cache.held[i].p, cache.held[i].bytes);
    cache.n_held = 0;
    cache.held_bytes = 0;
    pthread_mutex_unlock(&cache.lock);
}
