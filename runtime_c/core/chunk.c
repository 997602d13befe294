/*
 * chunk.c -- columnar chunks of CSV records (gsq_chunk, gsq_internal.h):
 * their buffers, and the transpose of a ring of records into one.
 *
 * A chunk has one column per slot of its source's value cache (the
 * gsq_csv_layout its records use): slot k's values at vals + k * cap, its
 * validities at valid + k * cap, described by slot_cols[k].  An Arrow
 * source fills a chunk straight from its record batch (arrow_source.c);
 * any other source of CSV records reads records into its ring as ever,
 * and the run loop transposes them (gsq_chunk_from_ring), so that every
 * LFTA of a CSV-kind PROTOCOL runs the same way, whatever its source.
 */
#include <stdlib.h>
#include <string.h>

#include "gsq_internal.h"

static int32_t slot_of(const gsq_csv_layout *l, uint32_t pos, int type)
{
    if (type < 0 || type > GSQ_T_STRING || !l->slot[type] || pos > l->max_pos)
        return -1;
    return l->slot[type][pos];
}

int gsq_chunk_init(gsq_chunk *ch, const gsq_source *s, uint32_t cap, const gsq_csv_layout *layout)
{
    uint32_t n = layout->n_slots, k, j, f;
    memset(ch, 0, sizeof *ch);
    ch->cap = cap;
    ch->n_slots = n;
    ch->n_lftas = s->n_lftas;
    ch->row_ok = malloc(cap);
    ch->vals = calloc((size_t)(n ? n : 1) * cap, sizeof *ch->vals);
    ch->valid = malloc((size_t)(n ? n : 1) * cap);
    ch->slot_cols = calloc(n ? n : 1, sizeof *ch->slot_cols);
    ch->lfta_cols = calloc(s->n_lftas ? s->n_lftas : 1, sizeof *ch->lfta_cols);
    ch->app_usec = malloc(cap * sizeof *ch->app_usec);
    ch->arrival_usec = malloc(cap * sizeof *ch->arrival_usec);
    ch->ts_unreadable = malloc(cap);
    ch->clock_usec = malloc(cap * sizeof *ch->clock_usec);
    if (!ch->row_ok || !ch->vals || !ch->valid || !ch->slot_cols || !ch->lfta_cols ||
        !ch->app_usec || !ch->arrival_usec || !ch->ts_unreadable || !ch->clock_usec)
        return -1;
    for (k = 0; k < n; k++)
        ch->slot_cols[k].vals = ch->vals + (size_t)k * cap;
    for (j = 0; j < s->n_lftas; j++) {
        const gsq_lfta_def *d = s->lftas[j]->lfta;
        const gsq_col **list = calloc(d->n_csv_fields ? d->n_csv_fields : 1, sizeof *list);
        if (!list)
            return -1;
        for (f = 0; f < d->n_csv_fields; f++) {
            int32_t slot = slot_of(layout, d->csv_fields[f].pos, d->csv_fields[f].type);
            /* every declared field has its slot (csv_layout.c) */
            list[f] = slot >= 0 ? &ch->slot_cols[slot] : NULL;
        }
        ch->lfta_cols[j] = list;
    }
    return 0;
}

void gsq_chunk_free(gsq_chunk *ch)
{
    uint32_t j;
    if (ch->lfta_cols)
        for (j = 0; j < ch->n_lftas; j++)
            free((void *)ch->lfta_cols[j]);
    free((void *)ch->lfta_cols);
    free(ch->slot_cols);
    free(ch->vals);
    free(ch->valid);
    free(ch->row_ok);
    free(ch->app_usec);
    free(ch->arrival_usec);
    free(ch->ts_unreadable);
    free(ch->clock_usec);
    memset(ch, 0, sizeof *ch);
}

void gsq_chunk_from_ring(gsq_chunk *ch, const gsq_ring *ring)
{
    uint32_t i, k, n = ring->n_recs < ch->cap ? ring->n_recs : ch->cap;
    size_t cap = ch->cap;
    uint8_t nulls = 0;
    for (i = 0; i < n; i++) {
        const gsq_record *rec = &ring->recs[i];
        for (k = 0; k < ch->n_slots; k++) {
            ch->vals[k * cap + i] = rec->vals[k];
            ch->valid[k * cap + i] = rec->valid ? rec->valid[k] : 1;
        }
        nulls |= rec->valid != NULL;
        ch->row_ok[i] = 1;
        ch->app_usec[i] = rec->app_usec;
        ch->arrival_usec[i] = rec->arrival_usec;
        ch->ts_unreadable[i] = rec->ts_unreadable;
    }
    for (k = 0; k < ch->n_slots; k++) {
        ch->slot_cols[k].raw = NULL;
        ch->slot_cols[k].valid =
            nulls && memchr(ch->valid + k * cap, 0, n) ? ch->valid + k * cap : NULL;
    }
    ch->n = n;
    ch->any_skipped = 0;
    ch->clock_row = -1;
}
