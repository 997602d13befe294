/*
 * csv_layout.c -- the value cache layout of a source whose records are CSV
 * records (a CSV file, or an Arrow source): the distinct (position, type)
 * pairs the LFTAs of the source read, one slot each, and the map from
 * (type, position) to slot that the gsq_csv_get_* accessors use.  The
 * source's time and arrival columns (source_time.c) have slots too, so the
 * reader converts them once per row with the rest.
 */
#include <stdlib.h>

#include "gsq_internal.h"

/* Add (pos, type), read in time format fmt of unit unit_ns, to
 * cs->slot[0..*n) unless it is there (then its first format stays) or
 * invalid. */
static void add_slot(gsq_csv_slots *cs, uint32_t *n, uint32_t pos, int type, int fmt,
                     uint32_t unit_ns, int *used, uint32_t *max_pos)
{
    uint32_t k;
    if (pos == 0 || type < GSQ_T_BOOL || type > GSQ_T_STRING)
        return;
    for (k = 0; k < *n; k++)
        if (cs->slot[k].pos == pos && cs->slot[k].type == type)
            return;
    cs->slot[*n].pos = pos;
    cs->slot[*n].type = type;
    cs->slot[*n].time_format = fmt;
    cs->slot[*n].unit_ns = fmt != GSQ_TF_NONE && !unit_ns ? 1000000000u : unit_ns;
    (*n)++;
    used[type] = 1;
    if (pos > *max_pos)
        *max_pos = pos;
}

int gsq_csv_slots_build(gsq_csv_slots *cs, const gsq_source *s)
{
    uint32_t i, j, k, max_pos = 0, n = 0, cnt = 2; /* + the time and arrival columns */
    int t, used[GSQ_T_STRING + 1] = {0};
    int32_t *m;

    for (i = 0; i < s->n_lftas; i++)
        cnt += s->lftas[i]->lfta->n_csv_fields;
    cs->slot = calloc(cnt, sizeof *cs->slot);
    if (!cs->slot)
        return -1;
    for (i = 0; i < s->n_lftas; i++) {
        const gsq_lfta_def *d = s->lftas[i]->lfta;
        for (j = 0; j < d->n_csv_fields; j++) {
            const gsq_csv_field *f = &d->csv_fields[j];
            add_slot(cs, &n, f->pos, f->type, f->time_format, f->time_unit_ns, used, &max_pos);
        }
    }
    /* the time column is an LFTA's field (above); an arrival column's
     * instants are in the source's unit */
    add_slot(cs, &n, s->time_pos, s->time_type, GSQ_TF_NONE, 0, used, &max_pos);
    add_slot(cs, &n, s->arrival_pos, s->arrival_type, s->arrival_format,
             (uint32_t)s->unit_ns, used, &max_pos);
    /* sort by position: the slots of one cell are adjacent */
    for (i = 1; i < n; i++) {
        gsq_csv_slot x = cs->slot[i];
        for (k = i; k > 0 && (cs->slot[k - 1].pos > x.pos ||
                              (cs->slot[k - 1].pos == x.pos && cs->slot[k - 1].type > x.type));
             k--)
            cs->slot[k] = cs->slot[k - 1];
        cs->slot[k] = x;
    }
    cs->n = n;
    cs->layout.max_pos = max_pos;
    cs->layout.n_slots = n;
    cnt = 0;
    for (t = GSQ_T_BOOL; t <= GSQ_T_STRING; t++)
        cnt += used[t] ? 1 : 0;
    cs->maps = malloc(((size_t)cnt * (max_pos + 1) + 1) * sizeof(int32_t));
    if (!cs->maps)
        return -1;
    m = cs->maps;
    for (t = GSQ_T_BOOL; t <= GSQ_T_STRING; t++) {
        if (!used[t])
            continue;
        for (i = 0; i <= max_pos; i++)
            m[i] = -1;
        for (k = 0; k < n; k++)
            if (cs->slot[k].type == t)
                m[cs->slot[k].pos] = (int32_t)k;
        cs->layout.slot[t] = m;
        m += max_pos + 1;
    }
    return 0;
}

int32_t gsq_csv_slot_of(const gsq_csv_slots *cs, uint32_t pos, int type)
{
    const gsq_csv_layout *l = &cs->layout;
    if (pos == 0 || pos > l->max_pos || type < GSQ_T_BOOL || type > GSQ_T_STRING ||
        !l->slot[type])
        return -1;
    return l->slot[type][pos];
}

void gsq_csv_slots_free(gsq_csv_slots *cs)
{
    free(cs->slot);
    free(cs->maps);
    cs->slot = NULL;
    cs->maps = NULL;
    cs->n = 0;
}
