/*
 * ring_buffer.h -- the buffer between a source reader and the LFTAs.
 *
 * A ring holds one batch at a time: the reader reserves space for a record's
 * bytes, writes them, commits the record (which takes a descriptor slot),
 * and stops when the batch is full (max_recs descriptors, or not enough
 * bytes).  The run loop hands every descriptor to the LFTAs, then releases
 * the whole batch.  Because the consumer always releases whole batches, the
 * byte area restarts at offset 0 after each release (the "ring" never needs
 * to wrap), which also keeps the hot bytes at the same addresses.
 *
 * Invariants: used <= cap; recs[0..n_recs) describe committed records whose
 * bytes lie in buf[0..used), except those committed by gsq_ring_commit_ref
 * (their bytes are the reader's, valid until the batch is released; their
 * descriptors are not zeroed); every
 * reservation is 8-byte aligned.
 * Ownership: the ring owns buf and recs; records point into buf (or into
 * memory their reader owns).
 */
#ifndef GSQ_RING_BUFFER_H
#define GSQ_RING_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#include "gsq_record.h"

typedef struct gsq_ring {
    uint8_t *buf;
    size_t cap;          /* fixed byte capacity (grows only when empty) */
    size_t used;         /* bytes of the current batch */
    size_t reserved;     /* bytes of the pending reservation, 0 if none */
    size_t high_water;   /* max bytes ever used by one batch */
    gsq_record *recs;
    uint32_t max_recs;   /* records per batch */
    uint32_t n_recs;
} gsq_ring;

int gsq_ring_init(gsq_ring *r, size_t cap, uint32_t max_recs);
void gsq_ring_free(gsq_ring *r);

/* Space for n bytes of the next record, 8-byte aligned, or NULL when the
 * batch is full (no descriptor left, or not n bytes left).  When the ring
 * is empty and n > cap the ring grows (a single record always fits);
 * NULL then means out of memory. */
void *gsq_ring_reserve(gsq_ring *r, size_t n);

/* Commit the record whose bytes were reserved, keeping the first n <=
 * reserved bytes.  Returns its descriptor (zeroed) for the reader to fill. */
gsq_record *gsq_ring_commit(gsq_ring *r, size_t n);

/* Space for a run of up to `want` records of n bytes each, back to back at
 * a stride of n rounded up to 8: *got (>= 1) of them fit.  NULL as for
 * gsq_ring_reserve.  For readers that convert a column at a time. */
void *gsq_ring_reserve_run(gsq_ring *r, size_t n, uint32_t want, uint32_t *got);

/* Commit a reserved run: its first `bytes` bytes stay in use (a rejected
 * row's slot among them is simply never described) and k records take
 * descriptors.  Returns the first of the k descriptors (zeroed). */
gsq_record *gsq_ring_commit_run(gsq_ring *r, size_t bytes, uint32_t k);

static inline int gsq_ring_batch_full(const gsq_ring *r)
{
    return r->n_recs >= r->max_recs;
}

/* A descriptor for a record whose bytes live outside the ring and stay
 * valid while the batch is processed (a zero-copy reader: the memory-
 * mapped capture file), or NULL when the batch is full.  Takes no bytes.
 * Not zeroed (that costs more than the rest of a small record's reading):
 * it holds what the last record in its slot left, zero after
 * gsq_ring_init.  A source's records all come from one reader, so one that
 * sets the same members of every record it commits this way (and commits
 * no other way a member it leaves alone) sees the others stay zero. */
static inline gsq_record *gsq_ring_commit_ref(gsq_ring *r)
{
    if (r->n_recs >= r->max_recs)
        return NULL;
    return &r->recs[r->n_recs++];
}

/* Release the whole batch. */
void gsq_ring_release(gsq_ring *r);

#endif /* GSQ_RING_BUFFER_H */
