/*
 * gsq_agg_table.h -- the LFTA aggregation table (sub-aggregation), C11,
 * header-only.
 *
 * A generated aggregation LFTA keeps the groups of its open epochs (values
 * of the temporal group-by keys) in a fixed-size table of n_slots slots,
 * split into buckets of `ways` slots (1: direct-mapped).  The generated code
 * supplies the query's shape -- the slot struct (the group's keys and
 * accumulators), the hash of a group's keys and the functions and constants
 * of gsq_agg_shape -- and this header the algorithm.
 *
 * A record enters as a one-record group `g`: a slot filled with its keys and
 * with accumulators holding the record's contribution (what a new group
 * starts from; folding g into a slot counts the record).
 *
 * Out-of-order processing (Li et al. 2008, sections 5.2 and 6): up to max_epochs
 * (N, Tigon's max_lfta_disorder) epochs are open at once, so a record of a
 * slightly older epoch is still counted, and the groups of an epoch that
 * closes leave the table as `flush` says: IMMEDIATE (all at once), SLOW
 * (spread over the following records) or LAZY (when a new group needs their
 * slot, at the latest when the next epoch closes).  N = 1 with IMMEDIATE is
 * the in-order table: one current epoch, flushed at once when a later one
 * starts.  Otherwise partials of different epochs interleave in the output;
 * the heartbeats sent bound them (no partial older than one sent before).
 *
 * Memory: gsq_agg_mem_slots() = n_slots + N + 2 slots of slot_size bytes,
 * zeroed, owned by the caller.  Slot i < n_slots is a group slot.  Then come
 * N + 1 epoch slots, the one of tag k (1..N+1) at n_slots + k - 1, and the
 * `promised` slot: an epoch slot holds only temporal keys (written by
 * epoch_set into an otherwise zero slot).
 *
 * Epochs:
 *  - Each open epoch and the closed epoch (below) has a tag 1..N+1; the tag
 *    of an open epoch names its epoch slot.  order[] holds the open epochs'
 *    tags sorted oldest..newest (n_open <= N); `newest` is the newest one's
 *    slot, which a record is compared with first.
 *  - `closed` (closed_tag, 0 while none) is the newest epoch ever closed;
 *    every open epoch is newer.  Only the closed epoch can still have groups
 *    in the table (n_pending of them): an epoch closes only after the
 *    groups of the previous closed epoch have all been ejected.
 *  - `promised` is the highest heartbeat sent since the first record; every
 *    open epoch is at least as new.
 *  - Epochs compare with epoch_cmp; a result with both bits (some key later,
 *    some older) counts as older for a record, as later for a heartbeat.
 *  - A record of epoch e (compared newest first):
 *      e open: it is counted in e;
 *      e newer than every open epoch, or between two open ones: e opens --
 *        if N were open, the oldest closes first;
 *      e older than every open epoch: e opens if fewer than N are open, e is
 *        newer than `closed` and not older than `promised`;
 *      else e is late: g is passed on alone (GSQ_AGG_EJECT_LATE) and the
 *        HFTA, with its wider bound, decides.
 *    Epochs open only by records and heartbeats and close only when an
 *    (N+1)-th would open, so once N have opened N stay open.
 *  - Closing the oldest open epoch: first the groups still in the table of
 *    the previous closed epoch are ejected at once (an unfinished slow flush
 *    completes); then by `flush`: IMMEDIATE ejects the epoch's groups now
 *    (GSQ_AGG_EJECT_FLUSH, one scan in slot order); SLOW and LAZY leave them
 *    pending.  SLOW: every counted record first moves a cursor over up to
 *    GSQ_AGG_SLOW_SLOTS slots (a free slot counts for the rest of its
 *    bucket), stopping after the first pending group it ejects; no pending
 *    group lies before the cursor.  SLOW and LAZY: a record whose group is
 *    not in its bucket takes the slot of the bucket's first pending group,
 *    which is ejected (GSQ_AGG_EJECT_FLUSH), before a free slot or a victim.
 *    So a closed epoch's groups are out before the next epoch closes.
 *  - A heartbeat (gsq_agg_heartbeat) is progress: an epoch hb newer than
 *    every open one opens (with no groups), closing the oldest if N were
 *    open.  A promise (`promise`: every later record is at or after hb,
 *    e.g. generated heartbeats, Srivastava & Widom 2004) also closes every open epoch
 *    older than hb's and ejects its groups and the closed epoch's pending
 *    ones at once (they are complete), and is sent on as hb itself.
 *    Before any record it is sent on unchanged and changes nothing.
 *    Sent on (GSQ_AGG_EJECT_HEARTBEAT): while the table holds groups, the
 *    oldest epoch that may still produce output (the closed epoch while
 *    groups of it are pending, else the oldest open epoch), never lower than
 *    `promised`; with no group in the table, hb itself (the inference
 *    stands, possibly lower than before), but no newer than the oldest open
 *    epoch.  Records older than `promised` are late from then on.
 *
 * Slots:
 *  - n_slots (the table's, starting at the shape's) and n_slots / ways are
 *    powers of two, ways is 1..16 and a power of two; the bucket of hash h
 *    starts at slot (h & (n_slots / ways - 1)) * ways.
 *  - Growth (a shape with `hash`, grow on): each group a collision ejects
 *    goes into a HyperLogLog sketch (`ejected`, cleared when the table
 *    grows).  Once collisions have ejected n_slots / 4 groups since growth
 *    was last weighed, the table doubles if more than one record in
 *    GSQ_AGG_GROW_RATE of those offered meanwhile (n_offered, which the
 *    generated code counts) ejected a group and the collisions since it
 *    last grew number at least GSQ_AGG_GROW_RETURNS / 10 times the groups
 *    the sketch counts (GSQ_AGG_GROW_RETURNS_LARGE / 10 to grow past
 *    GSQ_AGG_GROW_LARGE_BYTES) -- groups leave and come back, so a larger
 *    table would keep them -- up to max_slots (the slots GSQ_AGG_GROW_BYTES
 *    holds; never fewer than the shape's).  A closed epoch's pending
 *    groups are ejected first (as a flush); every other group moves from
 *    bucket b to bucket b or b + n_slots / ways of the doubled table (the
 *    next bit of its hash), in its order, so no bucket overflows and
 *    nothing else changes: a bigger table only ejects fewer partials.
 *    Memory that cannot be had leaves the table as it was, at its size for
 *    good.
 *  - A slot's first byte is 0 when it is free, else the tag of its group's
 *    epoch (open, or the closed one).  n_used counts the used slots,
 *    count[tag] the groups of each open epoch, n_pending those of the
 *    closed epoch: n_used = n_pending + the sum of count[] over open tags.
 *  - A bucket's used slots precede its free ones, so a probe stops at the
 *    first free slot.  A slot freed alone (slow flush) takes the bucket's
 *    last used slot; a scan closes its bucket's gaps keeping order.
 *  - A group is in at most one slot.  A record whose group is not in its
 *    full bucket (and finds no pending group there) ejects the bucket's
 *    slot (h >> 28) & (ways - 1), a group of some open epoch, as a partial
 *    (GSQ_AGG_EJECT_COLLISION); the HFTA super-aggregate completes it.
 *  - gsq_agg_flush (end of input) ejects every group: the closed epoch's,
 *    then each open epoch's, oldest first.  The epochs stay as they are.
 *
 * Speed: every function is static inline and takes the shape by pointer to
 * the generated file's `static const` gsq_agg_shape, so the compiler folds
 * the slot size, way count, epoch count and flush mode to constants and
 * inlines the callbacks.  A record of the newest open epoch costs one
 * epoch_cmp, the probe and (SLOW, while a flush is pending) a cursor step.
 */
#ifndef GSQ_AGG_TABLE_H
#define GSQ_AGG_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gsq_ops.h"     /* gsq_hash_mix */
#include "gsq_runtime.h" /* gsq_table_alloc, gsq_table_free */

#if defined(__GNUC__)
#define GSQ_AGG_HOT static inline __attribute__((always_inline))
#else
#define GSQ_AGG_HOT static inline
#endif

/* Bits of what epoch_cmp says of a group's epoch against an epoch slot's. */
#define GSQ_AGG_LATER 1u   /* some temporal key is later */
#define GSQ_AGG_OLDER 2u   /* some temporal key is older */

/* The most open epochs a shape may ask for (max_epochs). */
#define GSQ_AGG_MAX_EPOCHS 32u
/* Slots a slow-flush step looks at per counted record. */
#define GSQ_AGG_SLOW_SLOTS 4u

/* Why a group leaves the table (the `out` callback's argument). */
enum gsq_agg_why {
    GSQ_AGG_EJECT_COLLISION, /* its slot was taken by a new group */
    GSQ_AGG_EJECT_FLUSH,     /* its epoch ended (or the input did) */
    GSQ_AGG_EJECT_LATE,      /* a one-record group of an epoch no longer open */
    GSQ_AGG_EJECT_HEARTBEAT  /* not a group: the temporal update */
};

/* What a probe found (gsq_agg_probe). */
enum gsq_agg_probe_result {
    GSQ_AGG_HIT,  /* *slot holds the group */
    GSQ_AGG_FREE, /* *slot is the bucket's first free slot */
    GSQ_AGG_FULL  /* the bucket is full of other groups: *slot is the victim */
};

/* How the groups of a closed epoch leave the table. */
enum gsq_agg_flush {
    GSQ_AGG_FLUSH_IMMEDIATE, /* all at once, when the epoch closes */
    GSQ_AGG_FLUSH_SLOW,      /* a few slots per following record */
    GSQ_AGG_FLUSH_LAZY       /* when their slot is needed, or the next close */
};

/* The query's shape; one static const object per generated LFTA. */
typedef struct gsq_agg_shape {
    size_t slot_size;   /* bytes per slot; byte 0 is the used flag (tag) */
    uint32_t n_slots;   /* power of two, >= ways */
    uint32_t ways;      /* slots per bucket: 1, 2, 4, 8 or 16 */
    /* nonzero when slot and g have equal group keys */
    int (*same_group)(const void *slot, const void *g);
    /* fold g's accumulators into slot's; nonzero: the group must leave now
     * (a user aggregate's FLUSHME said so: gsq_agg_eject_slot) */
    int (*fold)(void *slot, const void *g);
    /* GSQ_AGG_LATER / GSQ_AGG_OLDER bits: g's temporal keys against epoch's */
    unsigned (*epoch_cmp)(const void *epoch, const void *g);
    /* copy g's temporal keys (and nothing else) into epoch */
    void (*epoch_set)(void *epoch, const void *g);
    /* send group (a partial, or the heartbeat) on */
    void (*out)(void *ctx, const void *group, enum gsq_agg_why why);
    uint32_t max_epochs;      /* N: open epochs, 1..GSQ_AGG_MAX_EPOCHS */
    enum gsq_agg_flush flush; /* how a closed epoch's groups leave */
    /* the hash of a slot's group keys (the h its records come with); NULL,
     * or grow 0: the table keeps n_slots slots */
    uint64_t (*hash)(const void *slot);
    int grow;
    /* a slot just filled from a one-record group g: keep in it what g only
     * borrowed from its record (a user aggregate's string argument); NULL:
     * a slot is whole as copied */
    void (*placed)(void *slot);
} gsq_agg_shape;

/* The alignment (and so the size) a generated slot of n bytes takes: the
 * power of two up to a cache line that holds it, so that no slot straddles
 * two lines of the table's line-aligned memory; a larger slot keeps its
 * own alignment (8 is at most what its members ask). */
#define GSQ_AGG_SLOT_ALIGN(n) \
    ((n) <= 8u ? 8 : (n) <= 16u ? 16 : (n) <= 32u ? 32 : (n) <= 64u ? 64 : 8)

/* A table grows while more than one record in GSQ_AGG_GROW_RATE ejects a
 * group (below that its partials cost the HFTA less than a larger table's
 * cache misses cost every record) and its collisions eject each group they
 * eject GSQ_AGG_GROW_RETURNS / 10 times or more, on average: its groups
 * come back after leaving (a larger table would keep them).  Groups that
 * leave once each (most seen once or twice an epoch, however many of them)
 * are not worth a larger table. */
#define GSQ_AGG_GROW_RATE 10u
#define GSQ_AGG_GROW_RETURNS 12u
/* ... and 14 (1.4 times) to grow past this many bytes, where every record
 * of a larger table costs more (uniform pairs seen ~4 times an epoch:
 * 0.52 s at 32 MiB, 0.56-0.59 s at 64 MiB; pairs seen ~10 times: 1.07-1.13
 * -> 1.00-1.02 s) */
#define GSQ_AGG_GROW_RETURNS_LARGE 14u
#define GSQ_AGG_GROW_LARGE_BYTES ((size_t)32 << 20)

/* Registers of the sketch of ejected groups (a power of two): a relative
 * error of about 1.04 / sqrt(GSQ_AGG_HLL_REGS), 2 % here. */
#define GSQ_AGG_HLL_BITS 11u
#define GSQ_AGG_HLL_REGS (1u << GSQ_AGG_HLL_BITS)

/* The most bytes a growing table's slots take. */
#define GSQ_AGG_GROW_BYTES ((size_t)64 << 20)

typedef struct gsq_agg_table {
    unsigned char *mem;     /* n_slots + N + 2 slots (gsq_table_alloc); owned
                               by the caller, but growth replaces it */
    uint32_t n_slots;       /* group slots now (the shape's, or grown) */
    uint32_t max_slots;     /* what it may grow to (n_slots: it does not) */
    uint64_t grow_at;       /* n_collisions at which growth is next weighed */
    uint64_t grown_at;      /* n_collisions when the table last grew (or 0) */
    size_t large_bytes;     /* GSQ_AGG_GROW_LARGE_BYTES, shared (gsq_agg_share) */
    uint64_t n_offered;     /* records offered (the generated code counts them) */
    uint64_t window_offered; /* n_offered when growth was last weighed (or
                                the table last grew): n_slots / 4 collisions
                                ago when it is weighed next, at grow_at */
    /* growing: a HyperLogLog sketch of the groups collisions ejected since
     * the table last grew (how many distinct ones) */
    uint8_t ejected[GSQ_AGG_HLL_REGS];
    unsigned char *newest;  /* the newest open epoch's slot; NULL before any */
    uint32_t n_used;        /* used slots: groups not yet ejected */
    uint32_t n_pending;     /* used slots holding groups of the closed epoch */
    uint32_t n_open;        /* open epochs */
    uint32_t cursor;        /* slow flush: no pending group before this slot */
    uint8_t newest_tag;     /* tag of the newest open epoch */
    uint8_t closed_tag;     /* tag of the closed epoch; 0: none closed yet */
    uint8_t have_promised;  /* a heartbeat was sent since the first record */
    uint8_t order[GSQ_AGG_MAX_EPOCHS]; /* open epochs' tags, oldest first */
    uint64_t tags_used;     /* bit k: tag k is open or closed */
    uint32_t count[GSQ_AGG_MAX_EPOCHS + 2]; /* groups per open epoch's tag */
    /* counters (never reset) */
    uint64_t n_flushed;     /* groups ejected as GSQ_AGG_EJECT_FLUSH ... */
    uint64_t n_slow;        /* ... of which by the slow-flush cursor */
    uint64_t n_met;         /* ... of which by a new group taking their slot */
    uint64_t n_collisions;  /* groups ejected as GSQ_AGG_EJECT_COLLISION */
    uint64_t n_late;        /* records passed on as GSQ_AGG_EJECT_LATE */
    uint64_t n_closed;      /* epochs closed */
    uint32_t n_grown;       /* times the table doubled */
    uint32_t max_open;      /* most epochs open at once */
    uint32_t max_pending;   /* most groups a closed epoch left in the table */
} gsq_agg_table;

/* Slots of memory a table of this shape needs at first: groups, epochs,
 * promised. */
static inline size_t gsq_agg_mem_slots(const gsq_agg_shape *sh)
{
    return (size_t)sh->n_slots + sh->max_epochs + 2u;
}

/* Bytes of the table's memory now (it only grows). */
static inline size_t gsq_agg_bytes(const gsq_agg_table *t, const gsq_agg_shape *sh)
{
    return ((size_t)t->n_slots + sh->max_epochs + 2u) * sh->slot_size;
}

/* mem: gsq_agg_mem_slots(sh) zeroed slots (gsq_table_alloc: growth frees
 * it with gsq_table_free). */
static inline void gsq_agg_init(gsq_agg_table *t, const gsq_agg_shape *sh, void *mem)
{
    memset(t, 0, sizeof *t);
    t->mem = (unsigned char *)mem;
    t->n_slots = t->max_slots = sh->n_slots;
    if (sh->grow && sh->hash)
        while (t->max_slots <= UINT32_MAX / 4u &&
               (size_t)t->max_slots * 2u * sh->slot_size <= GSQ_AGG_GROW_BYTES)
            t->max_slots *= 2u;
    t->grow_at = t->max_slots > t->n_slots ? t->n_slots / 4u : UINT64_MAX;
    t->large_bytes = GSQ_AGG_GROW_LARGE_BYTES;
}

/* n runs share the machine's cache and memory (hash partitions, option
 * partition): the table grows to 1/n of the bytes one run's may take, and
 * asks more of its growth past 1/n of GSQ_AGG_GROW_LARGE_BYTES.  Each of
 * them holds 1/n of the groups, and growing as one run's would (to 32 and
 * 64 MiB on two cores) cost every record: ~512,800 groups an epoch on two
 * threads took 0.38-0.51 s, with the tables shared 0.34-0.35 s. */
static inline void gsq_agg_share(gsq_agg_table *t, const gsq_agg_shape *sh, uint32_t n)
{
    if (n < 2u)
        return;
    t->large_bytes /= n;
    while (t->max_slots / 2u >= t->n_slots &&
           (size_t)t->max_slots * sh->slot_size > GSQ_AGG_GROW_BYTES / n)
        t->max_slots /= 2u;
    if (t->max_slots <= t->n_slots)
        t->grow_at = UINT64_MAX;
}

GSQ_AGG_HOT unsigned char *gsq_agg_slot(const gsq_agg_table *t, const gsq_agg_shape *sh,
                                        uint32_t i)
{
    return t->mem + (size_t)i * sh->slot_size;
}

/* The epoch slot of tag (1..max_epochs + 1). */
static inline unsigned char *gsq_agg_epoch_of(const gsq_agg_table *t, const gsq_agg_shape *sh,
                                              unsigned tag)
{
    return gsq_agg_slot(t, sh, t->n_slots + tag - 1u);
}

/* The highest heartbeat sent (valid when have_promised). */
static inline unsigned char *gsq_agg_promised(const gsq_agg_table *t, const gsq_agg_shape *sh)
{
    return gsq_agg_slot(t, sh, t->n_slots + sh->max_epochs + 1u);
}

/* The first slot of the bucket of hash h. */
GSQ_AGG_HOT unsigned char *gsq_agg_bucket(const gsq_agg_table *t, const gsq_agg_shape *sh,
                                          uint64_t h)
{
    uint32_t buckets = t->n_slots / sh->ways;
    return gsq_agg_slot(t, sh, (uint32_t)(h & (buckets - 1u)) * sh->ways);
}

/* Rows ahead of the one being folded that an aggregation over a columnar
 * chunk starts loading the bucket of (enough to cover a memory access). */
#define GSQ_COL_PREFETCH 16u
/* Rows whose group hashes an aggregation over raw columns computes in one
 * vectorized loop before folding them (their hashes: 32 KiB of stack). */
#define GSQ_AGG_HASH_BLOCK 4096u

/* Start loading the bucket of hash h (reads nothing): called some records
 * ahead, so the cache misses of a large table overlap. */
GSQ_AGG_HOT void gsq_agg_prefetch(const gsq_agg_table *t, const gsq_agg_shape *sh, uint64_t h)
{
    const unsigned char *b = gsq_agg_bucket(t, sh, h);
    const unsigned char *end = b + (size_t)sh->ways * sh->slot_size - 1u;
    __builtin_prefetch(b, 1);
    if (((uintptr_t)b ^ (uintptr_t)end) >= 64u) /* the bucket spans two lines */
        __builtin_prefetch(end, 1);
    /* GCC counts a prefetch as no effect: a caller that only prefetches
     * would be taken as pure and its calls dropped.  This keeps them. */
    __asm__ __volatile__("" : : "r"(b));
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
    *slot = b + (size_t)((h >> 28) & (sh->ways - 1u)) * sh->slot_size;
    return GSQ_AGG_FULL;
}

/* Eject (GSQ_AGG_EJECT_FLUSH) the n groups tagged `tag`, in slot order from
 * the bucket of slot `from` on, closing each bucket's gaps in order. */
static inline void gsq_agg_purge(gsq_agg_table *t, const gsq_agg_shape *sh, unsigned tag,
                                 uint32_t n, uint32_t from, void *ctx)
{
    for (uint32_t b = from & ~(sh->ways - 1u); n && b < t->n_slots; b += sh->ways) {
        uint32_t w, k = 0;
        for (w = 0; w < sh->ways; w++) {
            unsigned char *s = gsq_agg_slot(t, sh, b + w);
            if (!s[0])
                break;
            if (s[0] == tag) {
                sh->out(ctx, s, GSQ_AGG_EJECT_FLUSH);
                n--;
                t->n_used--;
                t->n_flushed++;
            } else {
                if (k != w)
                    memcpy(gsq_agg_slot(t, sh, b + k), s, sh->slot_size);
                k++;
            }
        }
        for (; k < w; k++)
            gsq_agg_slot(t, sh, b + k)[0] = 0;
    }
}

/* Eject the closed epoch's groups still in the table (a slow flush has
 * ejected those before its cursor's bucket already). */
static inline void gsq_agg_finish_pending(gsq_agg_table *t, const gsq_agg_shape *sh, void *ctx)
{
    if (t->n_pending) {
        gsq_agg_purge(t, sh, t->closed_tag, t->n_pending,
                      sh->flush == GSQ_AGG_FLUSH_SLOW ? t->cursor : 0u, ctx);
        t->n_pending = 0;
    }
}

/* Eject every group (GSQ_AGG_EJECT_FLUSH) and free every slot: the closed
 * epoch's groups, then the open epochs', oldest first.  The open epochs,
 * `closed` and `promised` stay (a record after it is judged as before). */
static inline void gsq_agg_flush(gsq_agg_table *t, const gsq_agg_shape *sh, void *ctx)
{
    gsq_agg_finish_pending(t, sh, ctx);
    for (uint32_t i = 0; i < t->n_open; i++) {
        unsigned tag = t->order[i];
        if (t->count[tag])
            gsq_agg_purge(t, sh, tag, t->count[tag], 0u, ctx);
        t->count[tag] = 0;
    }
}

/* Close the oldest open epoch (see the invariants). */
static inline void gsq_agg_close_oldest(gsq_agg_table *t, const gsq_agg_shape *sh, void *ctx)
{
    unsigned tag = t->order[0];
    gsq_agg_finish_pending(t, sh, ctx); /* the previous closed epoch's flush completes */
    t->tags_used &= ~((uint64_t)1 << t->closed_tag);
    t->n_open--;
    memmove(t->order, t->order + 1, t->n_open);
    t->closed_tag = (uint8_t)tag;
    t->n_closed++;
    t->n_pending = t->count[tag];
    t->count[tag] = 0;
    t->cursor = 0;
    if (t->n_pending > t->max_pending)
        t->max_pending = t->n_pending;
    if (sh->flush == GSQ_AGG_FLUSH_IMMEDIATE && t->n_pending) {
        gsq_agg_purge(t, sh, tag, t->n_pending, 0u, ctx);
        t->n_pending = 0;
    }
}

/* Open the epoch of g at position pos of order[] (closing the oldest first
 * when N are open, so pos > 0 then); returns its tag. */
static inline unsigned gsq_agg_open(gsq_agg_table *t, const gsq_agg_shape *sh, const void *g,
                                    uint32_t pos, void *ctx)
{
    unsigned tag;
    unsigned char *e;
    if (t->n_open == sh->max_epochs) {
        gsq_agg_close_oldest(t, sh, ctx);
        pos--;
    }
    tag = (unsigned)__builtin_ctzll(~t->tags_used & ~(uint64_t)1);
    t->tags_used |= (uint64_t)1 << tag;
    memmove(t->order + pos + 1, t->order + pos, t->n_open - pos);
    t->order[pos] = (uint8_t)tag;
    t->n_open++;
    t->count[tag] = 0;
    e = gsq_agg_epoch_of(t, sh, tag);
    sh->epoch_set(e, g);
    if (pos + 1 == t->n_open) {
        t->newest = e;
        t->newest_tag = (uint8_t)tag;
    }
    if (t->n_open > t->max_open)
        t->max_open = t->n_open;
    return tag;
}

/* Admit the epoch of g (see the invariants): its tag when g is to be
 * counted, 0 when g was passed on alone as late. */
static inline unsigned gsq_agg_admit(gsq_agg_table *t, const gsq_agg_shape *sh, const void *g,
                                     void *ctx)
{
    uint32_t i = t->n_open;
    while (i-- > 0) {
        unsigned tag = t->order[i];
        unsigned rel = sh->epoch_cmp(gsq_agg_epoch_of(t, sh, tag), g);
        if (rel == 0)
            return tag;
        if (rel == GSQ_AGG_LATER)
            return gsq_agg_open(t, sh, g, i + 1u, ctx);
    }
    /* older than every open epoch (or none is open yet) */
    if (t->n_open < sh->max_epochs &&
        (!t->closed_tag ||
         sh->epoch_cmp(gsq_agg_epoch_of(t, sh, t->closed_tag), g) == GSQ_AGG_LATER) &&
        (!t->have_promised || !(sh->epoch_cmp(gsq_agg_promised(t, sh), g) & GSQ_AGG_OLDER)))
        return gsq_agg_open(t, sh, g, 0u, ctx);
    sh->out(ctx, g, GSQ_AGG_EJECT_LATE);
    t->n_late++;
    return 0;
}

/* Free slot i alone: the last used slot of its bucket moves into it. */
static inline void gsq_agg_unlink(gsq_agg_table *t, const gsq_agg_shape *sh, uint32_t i)
{
    uint32_t last = i, end = (i | (sh->ways - 1u)) + 1u;
    while (last + 1u < end && gsq_agg_slot(t, sh, last + 1u)[0])
        last++;
    if (last != i)
        memcpy(gsq_agg_slot(t, sh, i), gsq_agg_slot(t, sh, last), sh->slot_size);
    gsq_agg_slot(t, sh, last)[0] = 0;
}

/* The group in slot s (of an open epoch) leaves now, out of turn: sent on as
 * a flushed partial and its slot freed.  A user aggregate asks for it when
 * its scratchpad is full (FLUSHME); the group's later records start anew. */
static inline void gsq_agg_eject_slot(gsq_agg_table *t, const gsq_agg_shape *sh,
                                      unsigned char *s, void *ctx)
{
    uint32_t i = (uint32_t)((size_t)(s - t->mem) / sh->slot_size);
    sh->out(ctx, s, GSQ_AGG_EJECT_FLUSH);
    t->count[s[0]]--;
    t->n_used--;
    t->n_flushed++;
    gsq_agg_unlink(t, sh, i);
}

/* One slow-flush step: up to GSQ_AGG_SLOW_SLOTS slots from the cursor, until
 * a pending group is ejected (its slot then holds another: looked at next). */
static inline void gsq_agg_slow_step(gsq_agg_table *t, const gsq_agg_shape *sh, void *ctx)
{
    uint32_t i = t->cursor;
    for (uint32_t k = 0; k < GSQ_AGG_SLOW_SLOTS && i < t->n_slots; k++) {
        unsigned char *s = gsq_agg_slot(t, sh, i);
        if (!s[0]) {
            i = (i | (sh->ways - 1u)) + 1u; /* the rest of the bucket is free */
        } else if (s[0] == t->closed_tag) {
            sh->out(ctx, s, GSQ_AGG_EJECT_FLUSH);
            t->n_flushed++;
            t->n_slow++;
            t->n_used--;
            t->n_pending--;
            gsq_agg_unlink(t, sh, i);
            break;
        } else {
            i++;
        }
    }
    t->cursor = i;
}

/* The first slot of the bucket of hash h holding a pending group, or NULL. */
static inline unsigned char *gsq_agg_pending_in(const gsq_agg_table *t, const gsq_agg_shape *sh,
                                                uint64_t h)
{
    unsigned char *b = gsq_agg_bucket(t, sh, h);
    for (uint32_t w = 0; w < sh->ways; w++) {
        unsigned char *s = b + (size_t)w * sh->slot_size;
        if (!s[0])
            break;
        if (s[0] == t->closed_tag)
            return s;
    }
    return NULL;
}

/* Double the table (see Growth).  Without the memory for it the table
 * stays as it is and stops growing. */
static inline void gsq_agg_grow(gsq_agg_table *t, const gsq_agg_shape *sh, void *ctx)
{
    uint32_t old_n = t->n_slots, n = old_n * 2u, old_buckets = old_n / sh->ways;
    size_t extra = (size_t)sh->max_epochs + 2u, sz = sh->slot_size;
    unsigned char *mem;
    gsq_agg_finish_pending(t, sh, ctx); /* no pending group, no cursor to keep */
    mem = (unsigned char *)gsq_table_alloc((size_t)n + extra, sz);
    if (!mem) {
        t->max_slots = t->n_slots;
        t->grow_at = UINT64_MAX;
        return;
    }
    for (uint32_t b = 0; b < old_buckets; b++) {
        uint32_t fill[2] = {0, 0};
        for (uint32_t w = 0; w < sh->ways; w++) {
            const unsigned char *s = t->mem + ((size_t)b * sh->ways + w) * sz;
            uint32_t hi;
            if (!s[0])
                break;
            hi = (sh->hash(s) & old_buckets) != 0; /* the hash's next bit */
            memcpy(mem + ((size_t)(b + hi * old_buckets) * sh->ways + fill[hi]++) * sz, s, sz);
        }
    }
    memcpy(mem + (size_t)n * sz, t->mem + (size_t)old_n * sz, extra * sz); /* epochs, promised */
    gsq_table_free(t->mem);
    t->mem = mem;
    t->n_slots = n;
    t->n_grown++;
    t->cursor = 0;
    if (t->newest)
        t->newest = gsq_agg_epoch_of(t, sh, t->newest_tag);
    t->grow_at = n < t->max_slots ? t->n_collisions + n / 4u : UINT64_MAX;
    t->grown_at = t->n_collisions;
    t->window_offered = t->n_offered;
    memset(t->ejected, 0, sizeof t->ejected);
}

/* ln x for x >= 1 (2 atanh((y - 1) / (y + 1)) of its mantissa y in [1, 2),
 * within 1e-9): the sketch's estimate needs no libm. */
static inline double gsq_agg_ln(double x)
{
    double k = 0.0, y, y2, p, sum = 0.0;
    while (x >= 2.0) {
        x *= 0.5;
        k += 1.0;
    }
    y = (x - 1.0) / (x + 1.0);
    y2 = y * y;
    p = y;
    for (int i = 1; i < 24; i += 2) {
        sum += p / i;
        p *= y2;
    }
    return 2.0 * sum + k * 0.69314718055994531;
}

/* The groups the sketch has seen: HyperLogLog's estimate, by linear
 * counting while it is small. */
static inline uint64_t gsq_agg_ejected_groups(const gsq_agg_table *t)
{
    const double m = GSQ_AGG_HLL_REGS;
    double inv = 0.0, est; /* inv: sum of 2^-register */
    uint32_t zeros = 0;
    for (uint32_t i = 0; i < GSQ_AGG_HLL_REGS; i++) {
        /* 2^-r built from its exponent bits (no division: 2048 a weighing) */
        union { uint64_t u; double d; } p2 = {(uint64_t)(1023u - t->ejected[i]) << 52};
        inv += p2.d;
        zeros += t->ejected[i] == 0;
    }
    est = 0.7213 / (1.0 + 1.079 / m) * m * m / inv; /* alpha_m m^2 / sum */
    if (est <= 2.5 * m && zeros)
        est = m * gsq_agg_ln(m / zeros);
    return (uint64_t)est;
}

/* An ejected group (its hash h) into the sketch. */
static inline void gsq_agg_sketch_ejected(gsq_agg_table *t, uint64_t h)
{
    uint64_t x = gsq_hash_mix(h);
    uint32_t i = (uint32_t)(x >> (64u - GSQ_AGG_HLL_BITS));
    uint8_t rank = (uint8_t)(__builtin_clzll(x << GSQ_AGG_HLL_BITS | 1u) + 1u);
    if (rank > t->ejected[i])
        t->ejected[i] = rank;
}

/* Collisions have ejected n_slots / 4 groups since growth was last weighed
 * (n_collisions reached grow_at): the table doubles when they came from
 * more than one record in GSQ_AGG_GROW_RATE offered meanwhile and the
 * collisions since it last grew number GSQ_AGG_GROW_RETURNS / 10 times the
 * groups they ejected (the sketch), else it waits as many again. */
static inline void gsq_agg_weigh_growth(gsq_agg_table *t, const gsq_agg_shape *sh, void *ctx)
{
    uint64_t returns = (size_t)t->n_slots * 2u * sh->slot_size > t->large_bytes
                           ? GSQ_AGG_GROW_RETURNS_LARGE
                           : GSQ_AGG_GROW_RETURNS;
    if ((uint64_t)(t->n_slots / 4u) * GSQ_AGG_GROW_RATE < t->n_offered - t->window_offered ||
        (t->n_collisions - t->grown_at) * 10u < gsq_agg_ejected_groups(t) * returns) {
        t->grow_at = t->n_collisions + t->n_slots / 4u;
        t->window_offered = t->n_offered;
        return;
    }
    gsq_agg_grow(t, sh, ctx);
}

/* Count the one-record group g whose keys hash to h. */
GSQ_AGG_HOT void gsq_agg_accept(gsq_agg_table *t, const gsq_agg_shape *sh, const void *g,
                                uint64_t h, void *ctx)
{
    unsigned char *s, *p;
    unsigned tag;
    enum gsq_agg_probe_result found;
    if (t->newest && sh->epoch_cmp(t->newest, g) == 0)
        tag = t->newest_tag;
    else if (!(tag = gsq_agg_admit(t, sh, g, ctx)))
        return;
    if (sh->flush == GSQ_AGG_FLUSH_SLOW && t->n_pending)
        gsq_agg_slow_step(t, sh, ctx);
    found = gsq_agg_probe(t, sh, g, h, &s);
    if (found == GSQ_AGG_HIT) {
        if (sh->fold(s, g))
            gsq_agg_eject_slot(t, sh, s, ctx);
        return;
    }
    if (sh->flush != GSQ_AGG_FLUSH_IMMEDIATE && t->n_pending &&
        (p = gsq_agg_pending_in(t, sh, h)) != NULL) {
        s = p; /* a closed epoch's group gives up its slot */
        sh->out(ctx, s, GSQ_AGG_EJECT_FLUSH);
        t->n_flushed++;
        t->n_met++;
        t->n_pending--;
    } else if (found == GSQ_AGG_FULL) {
        if (t->grow_at != UINT64_MAX)
            gsq_agg_sketch_ejected(t, sh->hash(s));
        sh->out(ctx, s, GSQ_AGG_EJECT_COLLISION);
        t->n_collisions++;
        t->count[s[0]]--;
        memcpy(s, g, sh->slot_size);
        s[0] = (unsigned char)tag;
        t->count[tag]++;
        if (sh->placed)
            sh->placed(s);
        if (t->n_collisions >= t->grow_at)
            gsq_agg_weigh_growth(t, sh, ctx);
        return;
    } else {
        t->n_used++;
    }
    memcpy(s, g, sh->slot_size);
    s[0] = (unsigned char)tag;
    t->count[tag]++;
    if (sh->placed)
        sh->placed(s);
}

/* A temporal update: hb is a zeroed slot holding the temporal keys inferred
 * from the input's progress.  An epoch later than every open one opens (see
 * the invariants); hb's temporal keys are then set to the bound it may
 * promise, and hb is sent on (GSQ_AGG_EJECT_HEARTBEAT). */
static inline void gsq_agg_heartbeat(gsq_agg_table *t, const gsq_agg_shape *sh, void *hb,
                                     int promise, void *ctx)
{
    if (t->newest) {
        const unsigned char *bound = NULL; /* NULL: hb as inferred */
        const unsigned char *oldest = gsq_agg_epoch_of(t, sh, t->order[0]);
        unsigned char *promised = gsq_agg_promised(t, sh);
        if (sh->epoch_cmp(t->newest, hb) & GSQ_AGG_LATER) {
            gsq_agg_open(t, sh, hb, t->n_open, ctx);
            oldest = gsq_agg_epoch_of(t, sh, t->order[0]);
        }
        if (promise) {
            /* no record older than hb will be counted: every open epoch
             * before hb's is complete -- closed, and its groups (and a
             * closed epoch's still pending) out now.  What is sent is hb
             * itself: a record at or after it may still be passed on as a
             * late partial of hb's epoch when that one is not open. */
            while (t->n_open > 1 && sh->epoch_cmp(oldest, hb) == GSQ_AGG_LATER) {
                gsq_agg_close_oldest(t, sh, ctx);
                oldest = gsq_agg_epoch_of(t, sh, t->order[0]);
            }
            gsq_agg_finish_pending(t, sh, ctx);
            if (!t->have_promised || sh->epoch_cmp(promised, hb) == GSQ_AGG_LATER) {
                sh->epoch_set(promised, hb);
                t->have_promised = 1;
            }
            sh->out(ctx, hb, GSQ_AGG_EJECT_HEARTBEAT);
            return;
        }
        if (t->n_used) {
            bound = t->n_pending ? gsq_agg_epoch_of(t, sh, t->closed_tag) : oldest;
            if (t->have_promised && (sh->epoch_cmp(promised, bound) & GSQ_AGG_OLDER))
                bound = promised; /* never lower than before */
        } else if (sh->epoch_cmp(oldest, hb) & GSQ_AGG_LATER) {
            bound = oldest;
        }
        if (bound) {
            memset(hb, 0, sh->slot_size);
            sh->epoch_set(hb, bound);
        }
        if (!t->have_promised || sh->epoch_cmp(promised, hb) == GSQ_AGG_LATER) {
            sh->epoch_set(promised, hb);
            t->have_promised = 1;
        }
    }
    sh->out(ctx, hb, GSQ_AGG_EJECT_HEARTBEAT);
}

#endif /* GSQ_AGG_TABLE_H */
