/*
 * table_mem.c -- memory for the operators' large hash tables.
 *
 * An aggregation table is read at random: one cache miss per record, and
 * with 4 KiB pages a TLB miss as well once the table outgrows what the TLB
 * maps (a few MiB).  Tables of GSQ_TABLE_HUGE_BYTES (2 MiB) or more are
 * therefore allocated on a 2 MiB boundary and marked for transparent huge
 * pages before they are first touched: a table growing to millions of
 * groups then also faults in a page per 2 MiB rather than per 4 KiB (on a
 * 524,288-group aggregation the HFTA's tables took 31,000 faults a run
 * with 4 KiB pages).  Where the kernel declines (THP off) they are
 * ordinary memory.  Smaller ones are aligned on a cache line.  Ownership:
 * the caller owns the block and frees it with gsq_table_free.
 */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gsq_runtime.h"

#define GSQ_CACHE_LINE 64u

/* The bytes of a block of n elements of `size` (at least 1), or 0 when
 * they overflow size_t. */
static size_t table_bytes(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return 0;
    return n * size != 0 ? n * size : 1;
}

void *gsq_table_reserve(size_t n, size_t size)
{
    size_t bytes = table_bytes(n, size);
    void *p = NULL;
    if (!bytes)
        return NULL;
    /* line-aligned at least: slots of a power-of-two size up to a line then
     * never straddle two lines (GSQ_AGG_SLOT_ALIGN) */
    if (posix_memalign(&p, bytes < GSQ_TABLE_HUGE_BYTES ? GSQ_CACHE_LINE : GSQ_TABLE_HUGE_BYTES,
                       bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (bytes >= GSQ_TABLE_HUGE_BYTES)
        (void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint: failure leaves 4 KiB pages */
#endif
    return p;
}

void *gsq_table_alloc(size_t n, size_t size)
{
    void *p = gsq_table_reserve(n, size);
    if (p)
        memset(p, 0, table_bytes(n, size));
    return p;
}

void gsq_table_free(void *p)
{
    free(p);
}
