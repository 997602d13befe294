/*
 * csv_held.h -- one converted CSV record set aside (csv_held.c): a row that
 * the time-aligned replay holds back for a later round, or that peek read
 * ahead (sources/csv_source.c).  It is kept exactly as the CSV reader lays
 * a row out in its ring -- the cs->n cached values, nf + 1 field ends, then
 * len bytes of unquoted text -- so that it is never read or converted
 * again: delivering it is a copy and re-pointing the string views.
 *
 * Invariants: when `set`, mem[0..need) is that record, str_off[k] is the
 * offset in its text of the view of string slot k, and coerced and ts are
 * what converting it gave (its values coerced, its timestamps).  mem (cap
 * bytes) and str_off are owned.
 */
#ifndef GSQ_CSV_HELD_H
#define GSQ_CSV_HELD_H

#include "gsq_internal.h"

typedef struct gsq_csv_held {
    int set;
    uint8_t *mem;
    size_t cap, need;
    uint32_t *str_off;
    uint32_t n_str;          /* entries of str_off */
    uint32_t nf, len;
    uint64_t coerced;
    gsq_stamp ts;
} gsq_csv_held;

/* Bytes before the text of a row of nf fields over layout cs. */
static inline size_t gsq_csv_text_off(const gsq_csv_slots *cs, uint32_t nf)
{
    return (size_t)cs->n * sizeof(gsq_csv_value) + ((size_t)nf + 1) * sizeof(uint32_t);
}

/* Set aside the row converted at mem (need bytes, nf fields, len bytes of
 * text).  0, or -1 out of memory (nothing set). */
int gsq_csv_hold(gsq_csv_held *h, const gsq_csv_slots *cs, const uint8_t *mem, size_t need,
                 uint32_t nf, uint32_t len);

/* Copy the held row to mem (h->need bytes, e.g. a ring reservation) with
 * its string views pointing into the copy, and clear `set`. */
void gsq_csv_unhold(gsq_csv_held *h, const gsq_csv_slots *cs, uint8_t *mem);

void gsq_csv_held_free(gsq_csv_held *h);

#endif /* GSQ_CSV_HELD_H */
