/*
 * tuple_queue.c -- SPSC queue of serialized tuples (see tuple_queue.h).
 */
#include <stdlib.h>
#include <string.h>

#include "tuple_queue.h"

#define HDR 8u
#define PAD8(x) (((size_t)(x) + 7u) & ~(size_t)7u)

void gsq_tq_init(gsq_tuple_queue *q)
{
    memset(q, 0, sizeof *q);
}

void gsq_tq_free(gsq_tuple_queue *q)
{
    free(q->buf);
    memset(q, 0, sizeof *q);
}

void *gsq_tq_reserve(gsq_tuple_queue *q, uint32_t len)
{
    size_t need = HDR + PAD8(len);
    if (q->cap - q->tail < need && q->head > 0) {
        /* compact: move the unread entries to the front */
        memmove(q->buf, q->buf + q->head, q->tail - q->head);
        q->tail -= q->head;
        q->head = 0;
    }
    if (q->cap - q->tail < need) {
        size_t ncap = q->cap ? q->cap : 65536;
        uint8_t *nb;
        while (ncap - q->tail < need)
            ncap *= 2;
        nb = realloc(q->buf, ncap);
        if (!nb)
            return NULL;
        q->buf = nb;
        q->cap = ncap;
    }
    q->reserved = need;
    return q->buf + q->tail + HDR;
}

void gsq_tq_commit(gsq_tuple_queue *q, int kind, uint32_t len)
{
    uint32_t hdr[2];
    size_t bytes;
    hdr[0] = (uint32_t)kind;
    hdr[1] = len;
    memcpy(q->buf + q->tail, hdr, sizeof hdr);
    q->tail += HDR + PAD8(len);
    q->reserved = 0;
    q->n_entries++;
    q->pushed++;
    bytes = q->tail - q->head;
    if (q->n_entries > q->hw_entries)
        q->hw_entries = q->n_entries;
    if (bytes > q->hw_bytes)
        q->hw_bytes = bytes;
}

uint32_t gsq_tq_pop_run(gsq_tuple_queue *q, int kind, uint32_t len, uint32_t max,
                        const uint8_t **first, size_t *stride)
{
    const uint32_t want[2] = {(uint32_t)kind, len};
    size_t step = HDR + PAD8(len), at = q->head;
    uint32_t n = 0;
    while (n < max && at < q->tail && memcmp(q->buf + at, want, sizeof want) == 0) {
        at += step;
        n++;
    }
    if (n == 0)
        return 0;
    *first = q->buf + q->head + HDR;
    *stride = step;
    q->head = at;
    q->n_entries -= n;
    if (q->head >= q->tail)
        q->head = q->tail = 0;
    return n;
}

int gsq_tq_pop(gsq_tuple_queue *q, int *kind, const void **tup, uint32_t *len)
{
    uint32_t hdr[2];
    if (q->head >= q->tail)
        return 0;
    memcpy(hdr, q->buf + q->head, sizeof hdr);
    *kind = (int)hdr[0];
    *len = hdr[1];
    *tup = q->buf + q->head + HDR;
    q->head += HDR + PAD8(hdr[1]);
    q->n_entries--;
    if (q->head >= q->tail)
        q->head = q->tail = 0;
    return 1;
}
