/*
 * gsq_agg_table.h -- the LFTA aggregation table (sub-aggregation), C11,
 * header-only.
 *
 * A generated aggregation LFTA keeps the groups of the current epoch in a
 * fixed-size table of n_slots slots, split into buckets of `ways` slots
 * (1: direct-mapped).  The generated code supplies the query's shape -- the
 * slot struct (the group's keys and accumulators), the hash of a group's keys
 * and the functions of gsq_agg_shape -- and this header the algorithm.
 *
 * A record enters as a one-record group `g`: a slot filled with its keys and
 * with accumulators holding the record's contribution (what a new group
 * starts from; folding g into a slot counts the record).
 *
 * Memory: n_slots + 1 slots of slot_size bytes, zeroed, owned by the caller
 * (gsq_agg_mem_slots()).  Slot i < n_slots is a group slot; the last one
 * holds the current epoch: the temporal group-by keys written by epoch_set
 * into an otherwise zero slot.
 *
 * Invariants:
 *  - n_slots and n_slots / ways are powers of two, ways is 1..16 and a
 *    power of two; the bucket of hash h starts at slot
 *    (h & (n_slots / ways - 1)) * ways.
 *  - A slot's first byte is its used flag.  A used slot holds one group of
 *    the current epoch; n_used counts the used slots.
 *  - A bucket's used slots precede its free ones (slots are freed only all at
 *    once, by gsq_agg_flush), so a probe stops at the first free slot.
 *  - A group is in at most one slot.  A record whose group is not in its full
 *    bucket ejects the bucket's slot (h >> 32) & (ways - 1) as a partial
 *    (GSQ_AGG_EJECT_COLLISION); the HFTA super-aggregate completes it.
 *  - When a record's epoch is later than the current one, every group is
 *    ejected (GSQ_AGG_EJECT_FLUSH) before the record is counted, so partials
 *    of one epoch precede those of the next.  A record of an older epoch is
 *    passed on alone (GSQ_AGG_EJECT_LATE): the HFTA drops and counts it.
 *  - A heartbeat (gsq_agg_heartbeat) whose inferred epoch is later than the
 *    current one flushes the table, as a record would: no record of the
 *    current epoch can still come.  Otherwise, while groups are unflushed, it
 *    promises no more than the current epoch (seed 000 4.4).
 *
 * Speed: every function is static inline and takes the shape by pointer to
 * the generated file's `static const` gsq_agg_shape, so the compiler folds
 * the slot size and way count to constants and inlines the callbacks.
 */
#ifndef GSQ_AGG_TABLE_H
#define GSQ_AGG_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__)
#define GSQ_AGG_HOT static inline __attribute__((always_inline))
#else
#define GSQ_AGG_HOT static inline
#endif

/* Bits of what epoch_cmp says of a group's epoch against the current one. */
#define GSQ_AGG_LATER 1u   /* some temporal key is later */
#define GSQ_AGG_OLDER 2u   /* some temporal key is older */

/* Why a group leaves the table (the `out` callback's argument). */
enum gsq_agg_why {
    GSQ_AGG_EJECT_COLLISION, /* its slot was taken by a new group */
    GSQ_AGG_EJECT_FLUSH,     /* its epoch ended (or the input did) */
    GSQ_AGG_EJECT_LATE,      /* a one-record group of an older epoch */
    GSQ_AGG_EJECT_HEARTBEAT  /* not a group: the temporal update */
};

/* What a probe found (gsq_agg_probe). */
enum gsq_agg_probe_result {
    GSQ_AGG_HIT,  /* *slot holds the group */
    GSQ_AGG_FREE, /* *slot is the bucket's first free slot */
    GSQ_AGG_FULL  /* the bucket is full of other groups: *slot is the victim */
};

/* The query's shape; one static const object per generated LFTA. */
typedef struct gsq_agg_shape {
    size_t slot_size;   /* bytes per slot; byte 0 is the used flag */
    uint32_t n_slots;   /* power of two, >= ways */
    uint32_t ways;      /* slots per bucket: 1, 2, 4, 8 or 16 */
    /* nonzero when slot and g have equal group keys */
    int (*same_group)(const void *slot, const void *g);
    /* fold g's accumulators into slot's */
    void (*fold)(void *slot, const void *g);
    /* GSQ_AGG_LATER / GSQ_AGG_OLDER bits: g's temporal keys against epoch's */
    unsigned (*epoch_cmp)(const void *epoch, const void *g);
    /* copy g's temporal keys (and nothing else) into epoch */
    void (*epoch_set)(void *epoch, const void *g);
    /* send group (a partial, or the heartbeat) on */
    void (*out)(void *ctx, const void *group, enum gsq_agg_why why);
} gsq_agg_shape;

typedef struct gsq_agg_table {
    unsigned char *mem; /* gsq_agg_mem_slots() slots, not owned */
    uint32_t n_used;    /* used slots: groups not yet ejected */
    uint8_t have_epoch; /* a record has set the epoch slot */
} gsq_agg_table;

/* Slots of memory a table of this shape needs: its groups and the epoch. */
static inline size_t gsq_agg_mem_slots(const gsq_agg_shape *sh)
{
    return (size_t)sh->n_slots + 1u;
}

/* mem: gsq_agg_mem_slots(sh) zeroed slots. */
static inline void gsq_agg_init(gsq_agg_table *t, void *mem)
{
    t->mem = (unsigned char *)mem;
    t->n_used = 0;
    t->have_epoch = 0;
}

GSQ_AGG_HOT unsigned char *gsq_agg_slot(const gsq_agg_table *t, const gsq_agg_shape *sh,
                                        uint32_t i)
{
    return t->mem + (size_t)i * sh->slot_size;
}

static inline unsigned char *gsq_agg_epoch(const gsq_agg_table *t, const gsq_agg_shape *sh)
{
    return gsq_agg_slot(t, sh, sh->n_slots);
}

/* The first slot of the bucket of hash h. */
GSQ_AGG_HOT unsigned char *gsq_agg_bucket(const gsq_agg_table *t, const gsq_agg_shape *sh,
                                          uint64_t h)
{
    uint32_t buckets = sh->n_slots / sh->ways;
    return gsq_agg_slot(t, sh, (uint32_t)(h & (buckets - 1u)) * sh->ways);
}

/* Start loading the bucket of hash h (reads nothing): called some records
 * ahead, so the cache misses of a large table overlap. */
GSQ_AGG_HOT void gsq_agg_prefetch(const gsq_agg_table *t, const gsq_agg_shape *sh, uint64_t h)
{
    const unsigned char *b = gsq_agg_bucket(t, sh, h);
    __builtin_prefetch(b, 1);
    __builtin_prefetch(b + (size_t)sh->ways * sh->slot_size - 1u, 1);
}

/* Find g's group in the bucket of hash h.  Changes nothing. */
GSQ_AGG_HOT enum gsq_agg_probe_result gsq_agg_probe(const gsq_agg_table *t,
                                                    const gsq_agg_shape *sh, const void *g,
                                                    uint64_t h, unsigned char **slot)
{
    unsigned char *b = gsq_agg_bucket(t, sh, h);
    for (uint32_t w = 0; w < sh->ways; w++) {
        unsigned char *s = b + (size_t)w * sh->slot_size;
        if (!s[0]) {
            *slot = s; /* used slots come first: the group is not here */
            return GSQ_AGG_FREE;
        }
        if (sh->same_group(s, g)) {
            *slot = s;
            return GSQ_AGG_HIT;
        }
    }
    *slot = b + (size_t)((h >> 32) & (sh->ways - 1u)) * sh->slot_size;
    return GSQ_AGG_FULL;
}

/* Eject every group (GSQ_AGG_EJECT_FLUSH) and free every slot. */
static inline void gsq_agg_flush(gsq_agg_table *t, const gsq_agg_shape *sh, void *ctx)
{
    for (uint32_t i = 0; t->n_used && i < sh->n_slots; i++) {
        unsigned char *s = gsq_agg_slot(t, sh, i);
        if (s[0]) {
            sh->out(ctx, s, GSQ_AGG_EJECT_FLUSH);
            s[0] = 0;
            t->n_used--;
        }
    }
}

/* Admit the epoch of g: 0 when g is to be counted (after a flush if its
 * epoch is later), 1 when it is of an older epoch and was passed on alone. */
GSQ_AGG_HOT int gsq_agg_admit(gsq_agg_table *t, const gsq_agg_shape *sh, const void *g,
                              void *ctx)
{
    unsigned char *epoch = gsq_agg_epoch(t, sh);
    unsigned rel;
    if (!t->have_epoch) {
        t->have_epoch = 1;
        sh->epoch_set(epoch, g);
        return 0;
    }
    rel = sh->epoch_cmp(epoch, g);
    if (rel & GSQ_AGG_OLDER) {
        sh->out(ctx, g, GSQ_AGG_EJECT_LATE);
        return 1;
    }
    if (rel & GSQ_AGG_LATER) {
        gsq_agg_flush(t, sh, ctx);
        sh->epoch_set(epoch, g);
    }
    return 0;
}

/* Count the one-record group g whose keys hash to h. */
GSQ_AGG_HOT void gsq_agg_accept(gsq_agg_table *t, const gsq_agg_shape *sh, const void *g,
                                uint64_t h, void *ctx)
{
    unsigned char *s;
    if (gsq_agg_admit(t, sh, g, ctx))
        return;
    switch (gsq_agg_probe(t, sh, g, h, &s)) {
    case GSQ_AGG_HIT:
        sh->fold(s, g);
        return;
    case GSQ_AGG_FULL:
        sh->out(ctx, s, GSQ_AGG_EJECT_COLLISION);
        break;
    case GSQ_AGG_FREE:
        t->n_used++;
        break;
    }
    memcpy(s, g, sh->slot_size);
    s[0] = 1;
}

/* A temporal update: hb is a zeroed slot holding the temporal keys inferred
 * from the input's progress.  A later epoch flushes the table and becomes
 * the current one; otherwise, while groups are unflushed, hb's temporal
 * keys are lowered to the current epoch's.  Then hb is sent on
 * (GSQ_AGG_EJECT_HEARTBEAT). */
static inline void gsq_agg_heartbeat(gsq_agg_table *t, const gsq_agg_shape *sh, void *hb,
                                     void *ctx)
{
    unsigned char *epoch = gsq_agg_epoch(t, sh);
    if (t->have_epoch) {
        if (sh->epoch_cmp(epoch, hb) & GSQ_AGG_LATER) {
            gsq_agg_flush(t, sh, ctx);
            sh->epoch_set(epoch, hb);
        } else if (t->n_used) {
            memset(hb, 0, sh->slot_size);
            sh->epoch_set(hb, epoch);
        }
    }
    sh->out(ctx, hb, GSQ_AGG_EJECT_HEARTBEAT);
}

#endif /* GSQ_AGG_TABLE_H */
