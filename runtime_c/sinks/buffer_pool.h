/*
 * buffer_pool.h -- freed Arrow output buffers kept for the next batches.
 *
 * Why: a batch's column buffers are released by its consumer (pyarrow),
 * often after the run that made them has ended, and the next run's sink
 * asks for buffers of the same sizes again.  Handed back to the C
 * allocator they are often given back to the kernel (a thread's arena is
 * unmapped once empty), and the next run pays a zeroed page and a page
 * fault for each 4 KiB it writes -- as much time as the gathering itself
 * for a selection that keeps a third of 20 M rows on two threads.
 *
 * A pool holds buffers of capacity GSQ_POOL_ALIGN << k (the only
 * capacities the Arrow sink asks for), a LIFO list per k threaded through
 * the buffers' first bytes.  Invariants: held_bytes is the sum of the
 * capacities listed and never exceeds max_bytes (a buffer that would pass
 * it is freed instead); refs counts the pool's owners -- whoever created
 * it, every run it was set on (gsqlc_set_buffer_pool), every exported
 * Arrow column whose buffers came from it -- and the last one out frees
 * the pool and every buffer it holds.  Every field is read and written
 * under lock: buffers are taken on a run's thread and given back on
 * whichever thread releases the batch.
 */
#ifndef GSQ_BUFFER_POOL_H
#define GSQ_BUFFER_POOL_H

#include <stddef.h>

#include "gsq_runtime.h"

#define GSQ_POOL_ALIGN 64u

/* A buffer of cap bytes (GSQ_POOL_ALIGN aligned): a held one when pool
 * holds one of that capacity, else a new allocation.  NULL: out of memory. */
void *gsq_pool_take(gsqlc_buffer_pool *pool, size_t cap);
/* Give back buffer p of cap bytes (from gsq_pool_take, or NULL): held for
 * reuse when the pool has room, else freed.  pool may be NULL (freed). */
void gsq_pool_give(gsqlc_buffer_pool *pool, void *p, size_t cap);
/* One more owner of pool (NULL: nothing); returns pool. */
gsqlc_buffer_pool *gsq_pool_retain(gsqlc_buffer_pool *pool);

#endif
