/*
 * tuple_queue.h -- single-producer / single-consumer queue of serialized
 * tuples between an LFTA and the subscribers of its output stream.
 *
 * Entries are (kind, len, bytes); each entry is an 8-byte header followed by
 * the tuple bytes padded to 8, so every tuple starts 8-byte aligned.  The
 * run is single-threaded: the LFTA pushes while it processes a batch, the
 * run loop drains the queue completely after the batch.  The queue grows
 * instead of dropping; its high-water marks are reported.
 *
 * Invariants: head <= tail <= cap; buf[head..tail) holds whole entries;
 * when the queue becomes empty head = tail = 0.  A pointer returned by
 * gsq_tq_pop stays valid until the next gsq_tq_reserve (which may move
 * the buffer); the run loop never pushes to a queue it is draining.
 */
#ifndef GSQ_TUPLE_QUEUE_H
#define GSQ_TUPLE_QUEUE_H

#include <stddef.h>
#include <stdint.h>

typedef struct gsq_tuple_queue {
    uint8_t *buf;
    size_t cap;
    size_t head;            /* first unread entry */
    size_t tail;            /* end of the last entry */
    size_t reserved;        /* bytes of a pending reservation */
    uint64_t n_entries;     /* entries currently queued */
    uint64_t pushed;        /* entries ever pushed */
    uint64_t hw_entries;    /* high-water mark, entries */
    size_t hw_bytes;        /* high-water mark, bytes */
} gsq_tuple_queue;

void gsq_tq_init(gsq_tuple_queue *q);
void gsq_tq_free(gsq_tuple_queue *q);

/* Space for a tuple of len bytes (8-byte aligned), or NULL on OOM. */
void *gsq_tq_reserve(gsq_tuple_queue *q, uint32_t len);
/* Append the reserved tuple as an entry of this kind and length. */
void gsq_tq_commit(gsq_tuple_queue *q, int kind, uint32_t len);
/* Take the oldest entry: 1 and the entry, or 0 when the queue is empty. */
int gsq_tq_pop(gsq_tuple_queue *q, int *kind, const void **tup, uint32_t *len);
/* Take the longest run (at most max) of the oldest entries that are all of
 * this kind and all `len` bytes long: their count (0: the oldest entry is
 * not one), the first tuple in *first and the distance between tuples in
 * *stride.  Same validity as gsq_tq_pop's pointers. */
uint32_t gsq_tq_pop_run(gsq_tuple_queue *q, int kind, uint32_t len, uint32_t max,
                        const uint8_t **first, size_t *stride);

#endif /* GSQ_TUPLE_QUEUE_H */
