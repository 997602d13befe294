/*
 * ring_buffer.c -- batch buffer between a source reader and the LFTAs.
 */
#include <stdlib.h>
#include <string.h>

#include "ring_buffer.h"

#define ALIGN8(x) (((x) + 7u) & ~(size_t)7u)

int gsq_ring_init(gsq_ring *r, size_t cap, uint32_t max_recs)
{
    memset(r, 0, sizeof *r);
    if (max_recs == 0)
        max_recs = 1;
    cap = ALIGN8(cap ? cap : 4096);
    r->buf = malloc(cap);
    r->recs = calloc(max_recs, sizeof *r->recs);
    if (!r->buf || !r->recs) {
        gsq_ring_free(r);
        return -1;
    }
    r->cap = cap;
    r->max_recs = max_recs;
    return 0;
}

void gsq_ring_free(gsq_ring *r)
{
    free(r->buf);
    free(r->recs);
    memset(r, 0, sizeof *r);
}

void *gsq_ring_reserve(gsq_ring *r, size_t n)
{
    size_t need = ALIGN8(n ? n : 1);
    if (r->n_recs >= r->max_recs)
        return NULL;
    if (r->used == 0 && need > r->cap) {
        uint8_t *nb = realloc(r->buf, need);
        if (!nb)
            return NULL;
        r->buf = nb;
        r->cap = need;
    }
    if (need > r->cap - r->used)
        return NULL;
    r->reserved = need;
    return r->buf + r->used;
}

void *gsq_ring_reserve_run(gsq_ring *r, size_t n, uint32_t want, uint32_t *got)
{
    size_t stride = ALIGN8(n ? n : 1), fit;
    uint32_t k = want ? want : 1;
    if (!gsq_ring_reserve(r, stride)) /* room for one, growing an empty ring */
        return NULL;
    fit = (r->cap - r->used) / stride;
    if (k > r->max_recs - r->n_recs)
        k = r->max_recs - r->n_recs;
    if (k > fit)
        k = (uint32_t)fit;
    r->reserved = (size_t)k * stride;
    *got = k;
    return r->buf + r->used;
}

gsq_record *gsq_ring_commit_run(gsq_ring *r, size_t bytes, uint32_t k)
{
    gsq_record *first = &r->recs[r->n_recs];
    if (bytes > r->reserved)
        bytes = r->reserved;
    r->used += bytes;
    r->reserved = 0;
    if (r->used > r->high_water)
        r->high_water = r->used;
    memset(first, 0, (size_t)k * sizeof *first);
    r->n_recs += k;
    return first;
}

gsq_record *gsq_ring_commit(gsq_ring *r, size_t n)
{
    return gsq_ring_commit_run(r, ALIGN8(n ? n : 1), 1);
}

void gsq_ring_release(gsq_ring *r)
{
    r->used = 0;
    r->reserved = 0;
    r->n_recs = 0;
}
