/*
 * csv_held.c -- a converted CSV record set aside and delivered later
 * (csv_held.h has the layout and the invariants).
 */
#include <stdlib.h>
#include <string.h>

#include "csv_held.h"

int gsq_csv_hold(gsq_csv_held *h, const gsq_csv_slots *cs, const uint8_t *mem, size_t need,
                 uint32_t nf, uint32_t len)
{
    const gsq_csv_value *vals = (const gsq_csv_value *)(const void *)mem;
    const char *text = (const char *)mem + gsq_csv_text_off(cs, nf);
    uint32_t k;
    if (h->cap < need) {
        uint8_t *nb = realloc(h->mem, need);
        if (!nb)
            return -1;
        h->mem = nb;
        h->cap = need;
    }
    if (h->n_str < cs->n) {
        uint32_t *no = realloc(h->str_off, cs->n * sizeof *no);
        if (!no)
            return -1;
        h->str_off = no;
        h->n_str = cs->n;
    }
    memcpy(h->mem, mem, need);
    for (k = 0; k < cs->n; k++)
        if (cs->slot[k].type == GSQ_T_STRING) /* a field, or the text's start */
            h->str_off[k] = (uint32_t)(vals[k].s.p - text);
    h->need = need;
    h->nf = nf;
    h->len = len;
    h->set = 1;
    return 0;
}

void gsq_csv_unhold(gsq_csv_held *h, const gsq_csv_slots *cs, uint8_t *mem)
{
    gsq_csv_value *vals = (gsq_csv_value *)(void *)mem;
    const char *text = (const char *)mem + gsq_csv_text_off(cs, h->nf);
    uint32_t k;
    memcpy(mem, h->mem, h->need);
    for (k = 0; k < cs->n; k++)
        if (cs->slot[k].type == GSQ_T_STRING)
            vals[k].s.p = text + h->str_off[k];
    h->set = 0;
}

void gsq_csv_held_free(gsq_csv_held *h)
{
    free(h->mem);
    free(h->str_off);
    memset(h, 0, sizeof *h);
}
