/* Unit tests of the LFTA aggregation table (runtime_c/lfta/gsq_agg_table.h):
 * probe hit and miss, collision ejection at every associativity, an epoch
 * change flushing every group, heartbeats, a full table, and random
 * sequences against a brute-force reference model of the in-order table
 * (one epoch, immediate flush); then out-of-order processing: several open
 * epochs, late records, heartbeats opening and closing epochs and the bound
 * they send, slow and lazy flush, single-slot frees, the end-of-input order,
 * and random disordered sequences checked against the invariants and the
 * input's per-group totals.  Stand-alone (no runtime library); prints one
 * line per failure and "N passed, M failed". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsq_agg_table.h"

#include "unit_check.h"

/* ---- a query's shape: GROUP BY ep (increasing), key; count(*), sum(v) ---- */

typedef struct tslot {
    uint8_t used;
    uint32_t ep;
    uint32_t key;
    uint64_t cnt;
    uint64_t sum;
} tslot;

/* One group leaving the table, as the `out` callback saw it. */
typedef struct event {
    enum gsq_agg_why why;
    uint32_t ep, key;
    uint64_t cnt, sum;
} event;

typedef struct event_log {
    event *ev;
    size_t n, cap;
} event_log;

static void log_add(event_log *lg, enum gsq_agg_why why, uint32_t ep, uint32_t key,
                    uint64_t cnt, uint64_t sum)
{
    if (lg->n == lg->cap) {
        lg->cap = lg->cap ? 2 * lg->cap : 64;
        lg->ev = (event *)realloc(lg->ev, lg->cap * sizeof *lg->ev);
        if (!lg->ev)
            abort();
    }
    lg->ev[lg->n++] = (event){why, ep, key, cnt, sum};
}

static int t_same_group(const void *va, const void *vb)
{
    const tslot *a = (const tslot *)va, *b = (const tslot *)vb;
    return a->ep == b->ep && a->key == b->key;
}

static int t_fold(void *vs, const void *vg)
{
    tslot *s = (tslot *)vs;
    const tslot *g = (const tslot *)vg;
    s->cnt += g->cnt;
    s->sum += g->sum;
    return 0;
}

static unsigned t_epoch_cmp(const void *ve, const void *vg)
{
    const tslot *e = (const tslot *)ve, *g = (const tslot *)vg;
    if (g->ep == e->ep)
        return 0;
    return g->ep > e->ep ? GSQ_AGG_LATER : GSQ_AGG_OLDER;
}

static void t_epoch_set(void *ve, const void *vg)
{
    ((tslot *)ve)->ep = ((const tslot *)vg)->ep;
}

static void t_out(void *ctx, const void *vs, enum gsq_agg_why why)
{
    const tslot *s = (const tslot *)vs;
    log_add((event_log *)ctx, why, s->ep, s->key, s->cnt, s->sum);
}

/* max_epochs open epochs, closed epochs leaving as flush says. */
static gsq_agg_shape shape_oop(uint32_t n_slots, uint32_t ways, uint32_t max_epochs,
                               enum gsq_agg_flush flush)
{
    gsq_agg_shape sh = {sizeof(tslot), n_slots, ways, t_same_group, t_fold, t_epoch_cmp,
                        t_epoch_set, t_out, max_epochs, flush, NULL, 0, NULL};
    return sh;
}

/* The in-order table: one epoch, flushed at once. */
static gsq_agg_shape shape_of(uint32_t n_slots, uint32_t ways)
{
    return shape_oop(n_slots, ways, 1, GSQ_AGG_FLUSH_IMMEDIATE);
}

/* A table with its memory; free with table_free. */
static void table_new(gsq_agg_table *t, const gsq_agg_shape *sh)
{
    void *mem = calloc(gsq_agg_mem_slots(sh), sh->slot_size);
    if (!mem)
        abort();
    gsq_agg_init(t, sh, mem);
}

static void table_free(gsq_agg_table *t)
{
    free(t->mem);
    t->mem = NULL;
}

static tslot rec(uint32_t ep, uint32_t key, uint64_t v)
{
    tslot g;
    memset(&g, 0, sizeof g);
    g.used = 1;
    g.ep = ep;
    g.key = key;
    g.cnt = 1;
    g.sum = v;
    return g;
}

static void put(gsq_agg_table *t, const gsq_agg_shape *sh, uint32_t ep, uint32_t key,
                   uint64_t v, uint64_t h, event_log *lg)
{
    tslot g = rec(ep, key, v);
    t->n_offered++; /* as the generated code counts each record */
    gsq_agg_accept(t, sh, &g, h, lg);
}

static void heartbeat_as(gsq_agg_table *t, const gsq_agg_shape *sh, uint32_t ep, int promise,
                         event_log *lg)
{
    tslot hb;
    memset(&hb, 0, sizeof hb);
    hb.ep = ep;
    gsq_agg_heartbeat(t, sh, &hb, promise, lg);
}

static void heartbeat(gsq_agg_table *t, const gsq_agg_shape *sh, uint32_t ep, event_log *lg)
{
    heartbeat_as(t, sh, ep, 0, lg);
}

/* Used slots, counted; and that a bucket's used slots precede its free ones. */
static uint32_t used_slots(const gsq_agg_table *t, const gsq_agg_shape *sh, int *ordered)
{
    uint32_t n = 0;
    *ordered = 1;
    for (uint32_t b = 0; b < t->n_slots; b += sh->ways) {
        int seen_free = 0;
        for (uint32_t w = 0; w < sh->ways; w++) {
            const unsigned char *s = gsq_agg_slot(t, sh, b + w);
            if (s[0]) {
                n++;
                if (seen_free)
                    *ordered = 0;
            } else {
                seen_free = 1;
            }
        }
    }
    return n;
}

static const uint32_t WAYS[] = {1, 2, 4, 8, 16};
#define N_WAYS (sizeof WAYS / sizeof WAYS[0])

/* ---- the reference: the same rules, written out plainly ---------------- */

typedef struct ref {
    uint32_t n_slots, ways;
    tslot *slot;
    int have_epoch;
    uint32_t epoch;
} ref;

static void ref_flush(ref *r, event_log *lg)
{
    for (uint32_t i = 0; i < r->n_slots; i++) {
        tslot *s = &r->slot[i];
        if (s->used)
            log_add(lg, GSQ_AGG_EJECT_FLUSH, s->ep, s->key, s->cnt, s->sum);
        s->used = 0;
    }
}

static uint32_t ref_used(const ref *r)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->n_slots; i++)
        n += r->slot[i].used;
    return n;
}

static void ref_accept(ref *r, uint32_t ep, uint32_t key, uint64_t v, uint64_t h, event_log *lg)
{
    uint32_t first, i;
    if (!r->have_epoch) {
        r->have_epoch = 1;
        r->epoch = ep;
    } else if (ep < r->epoch) {
        log_add(lg, GSQ_AGG_EJECT_LATE, ep, key, 1, v);
        return;
    } else if (ep > r->epoch) {
        ref_flush(r, lg);
        r->epoch = ep;
    }
    first = (uint32_t)(h % (r->n_slots / r->ways)) * r->ways;
    for (i = first; i < first + r->ways; i++) {
        tslot *s = &r->slot[i];
        if (s->used && s->ep == ep && s->key == key) {
            s->cnt++;
            s->sum += v;
            return;
        }
        if (!s->used)
            break;
    }
    if (i == first + r->ways) {
        i = first + (uint32_t)((h >> 28) % r->ways);
        log_add(lg, GSQ_AGG_EJECT_COLLISION, r->slot[i].ep, r->slot[i].key, r->slot[i].cnt,
                r->slot[i].sum);
    }
    r->slot[i] = rec(ep, key, v);
}

static void ref_heartbeat(ref *r, uint32_t ep, event_log *lg)
{
    if (r->have_epoch) {
        if (ep > r->epoch) {
            ref_flush(r, lg);
            r->epoch = ep;
        } else if (ref_used(r)) {
            ep = r->epoch;
        }
    }
    log_add(lg, GSQ_AGG_EJECT_HEARTBEAT, ep, 0, 0, 0);
}

static int logs_equal(const event_log *a, const event_log *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const event *x = &a->ev[i], *y = &b->ev[i];
        if (x->why != y->why || x->ep != y->ep || x->key != y->key || x->cnt != y->cnt ||
            x->sum != y->sum)
            return 0;
    }
    return 1;
}

/* ---- tests ------------------------------------------------------------- */

static void test_probe(void)
{
    gsq_agg_shape sh = shape_of(16, 1);
    gsq_agg_table t;
    event_log lg = {0};
    unsigned char *s, *s2;
    tslot a = rec(7, 1, 10), b = rec(7, 2, 20);

    table_new(&t, &sh);
    CHECK(gsq_agg_probe(&t, &sh, &a, 5, &s) == GSQ_AGG_FREE && s == gsq_agg_slot(&t, &sh, 5));
    gsq_agg_accept(&t, &sh, &a, 5, &lg);
    CHECK(t.n_used == 1 && lg.n == 0);
    CHECK(gsq_agg_probe(&t, &sh, &a, 5, &s2) == GSQ_AGG_HIT && s2 == s);
    CHECK(gsq_agg_probe(&t, &sh, &b, 6, &s2) == GSQ_AGG_FREE && s2 == gsq_agg_slot(&t, &sh, 6));
    /* the bucket is the hash's low bits: 5 + 16 is bucket 5, held by another group */
    CHECK(gsq_agg_probe(&t, &sh, &b, 21, &s2) == GSQ_AGG_FULL && s2 == s);
    gsq_agg_accept(&t, &sh, &a, 5, &lg);
    CHECK(((tslot *)s)->cnt == 2 && ((tslot *)s)->sum == 20 && t.n_used == 1);
    table_free(&t);
    free(lg.ev);
}

/* ways + 1 groups of one bucket: the last ejects the victim its hash names. */
static void test_collision(uint32_t ways)
{
    gsq_agg_shape sh = shape_of(64, ways);
    uint32_t buckets = 64 / ways;
    for (uint32_t victim = 0; victim < ways; victim++) {
        gsq_agg_table t;
        event_log lg = {0};
        int ordered;
        table_new(&t, &sh);
        for (uint32_t w = 0; w < ways; w++) {
            /* the same bucket (3), victim choices that differ */
            put(&t, &sh, 1, 100 + w, w, 3 + (uint64_t)w * buckets, &lg);
            put(&t, &sh, 1, 100 + w, w, 3 + (uint64_t)w * buckets, &lg);
        }
        CHECK(lg.n == 0 && t.n_used == ways);
        put(&t, &sh, 1, 999, 5, ((uint64_t)victim << 28) | 3u, &lg);
        CHECK(lg.n == 1 && lg.ev[0].why == GSQ_AGG_EJECT_COLLISION);
        CHECK(lg.n == 1 && lg.ev[0].key == 100 + victim && lg.ev[0].cnt == 2 &&
              lg.ev[0].sum == 2 * victim);
        CHECK(t.n_used == ways && used_slots(&t, &sh, &ordered) == ways && ordered);
        CHECK(((tslot *)gsq_agg_slot(&t, &sh, 3 * ways + victim))->key == 999);
        table_free(&t);
        free(lg.ev);
    }
}

/* A later epoch ejects every group (with its whole count) before counting. */
static void test_epoch_flush(uint32_t ways)
{
    gsq_agg_shape sh = shape_of(64, ways);
    gsq_agg_table t;
    event_log lg = {0};
    uint64_t seen[40] = {0};
    int ordered;

    table_new(&t, &sh);
    for (uint32_t k = 0; k < 40; k++)
        for (uint32_t r = 0; r <= k % 3; r++)
            put(&t, &sh, 10, k, k, k, &lg);
    CHECK(lg.n == 0 && t.n_used == 40);
    put(&t, &sh, 11, 0, 1, 0, &lg);
    CHECK(lg.n == 40);
    for (size_t i = 0; i < lg.n; i++) {
        const event *e = &lg.ev[i];
        CHECK(e->why == GSQ_AGG_EJECT_FLUSH && e->ep == 10 && e->key < 40);
        if (e->key < 40) {
            seen[e->key]++;
            CHECK(e->cnt == e->key % 3 + 1 && e->sum == e->cnt * e->key);
        }
    }
    for (uint32_t k = 0; k < 40; k++)
        CHECK(seen[k] == 1);
    CHECK(t.n_used == 1 && used_slots(&t, &sh, &ordered) == 1 && ordered);
    /* a record of the closed epoch is passed on alone */
    put(&t, &sh, 10, 5, 7, 5, &lg);
    CHECK(lg.n == 41 && lg.ev[40].why == GSQ_AGG_EJECT_LATE && lg.ev[40].ep == 10 &&
          lg.ev[40].cnt == 1 && lg.ev[40].sum == 7 && t.n_used == 1);
    gsq_agg_flush(&t, &sh, &lg);
    CHECK(lg.n == 42 && lg.ev[41].ep == 11 && t.n_used == 0);
    table_free(&t);
    free(lg.ev);
}

static void test_heartbeat(void)
{
    gsq_agg_shape sh = shape_of(16, 2);
    gsq_agg_table t;
    event_log lg = {0};

    table_new(&t, &sh);
    heartbeat(&t, &sh, 3, &lg); /* no epoch yet: sent as inferred */
    CHECK(lg.n == 1 && lg.ev[0].why == GSQ_AGG_EJECT_HEARTBEAT && lg.ev[0].ep == 3);
    put(&t, &sh, 5, 1, 1, 1, &lg);
    put(&t, &sh, 5, 2, 1, 2, &lg);
    heartbeat(&t, &sh, 5, &lg); /* the epoch itself: nothing ejected */
    CHECK(lg.n == 2 && lg.ev[1].why == GSQ_AGG_EJECT_HEARTBEAT && lg.ev[1].ep == 5);
    heartbeat(&t, &sh, 4, &lg); /* behind, groups unflushed: the epoch */
    CHECK(lg.n == 3 && lg.ev[2].ep == 5 && t.n_used == 2);
    heartbeat(&t, &sh, 7, &lg); /* past the epoch: both groups, then the bound */
    CHECK(lg.n == 6 && lg.ev[3].why == GSQ_AGG_EJECT_FLUSH && lg.ev[4].why == GSQ_AGG_EJECT_FLUSH);
    CHECK(lg.n == 6 && lg.ev[5].why == GSQ_AGG_EJECT_HEARTBEAT && lg.ev[5].ep == 7);
    CHECK(lg.n == 6 && lg.ev[5].key == 0 && lg.ev[5].cnt == 0 && t.n_used == 0);
    heartbeat(&t, &sh, 6, &lg); /* empty table: the inference stands */
    CHECK(lg.n == 7 && lg.ev[6].ep == 6);
    put(&t, &sh, 5, 1, 1, 1, &lg); /* the heartbeat closed epoch 5 */
    CHECK(lg.n == 8 && lg.ev[7].why == GSQ_AGG_EJECT_LATE && t.n_used == 0);
    put(&t, &sh, 7, 1, 1, 1, &lg);
    CHECK(lg.n == 8 && t.n_used == 1);
    table_free(&t);
    free(lg.ev);
}

/* Every slot used without an ejection; then a new group ejects one. */
static void test_full(uint32_t ways)
{
    gsq_agg_shape sh = shape_of(32, ways);
    uint32_t buckets = 32 / ways;
    gsq_agg_table t;
    event_log lg = {0};
    int ordered;

    table_new(&t, &sh);
    for (uint32_t i = 0; i < 32; i++)
        put(&t, &sh, 1, i, 1, i % buckets, &lg);
    CHECK(lg.n == 0 && t.n_used == 32 && used_slots(&t, &sh, &ordered) == 32 && ordered);
    for (uint32_t i = 0; i < 32; i++)
        put(&t, &sh, 1, i, 1, i % buckets, &lg);
    CHECK(lg.n == 0 && t.n_used == 32);
    put(&t, &sh, 1, 1000, 1, 0, &lg);
    CHECK(lg.n == 1 && lg.ev[0].why == GSQ_AGG_EJECT_COLLISION && lg.ev[0].cnt == 2);
    CHECK(lg.n == 1 && lg.ev[0].key % buckets == 0 && t.n_used == 32);
    gsq_agg_flush(&t, &sh, &lg);
    CHECK(lg.n == 33 && t.n_used == 0 && used_slots(&t, &sh, &ordered) == 0);
    table_free(&t);
    free(lg.ev);
}

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The hash test_random_oop gives a record of epoch e and key `key`: a few
 * buckets crowded (keys divisible by 5 share their low bits). */
static uint64_t oop_hash(uint32_t e, uint32_t key)
{
    uint64_t hk = key ^ ((uint64_t)e << 20), h = splitmix(&hk);
    if (key % 5 == 0)
        h = (h & ~(uint64_t)0xffffffff) | (key & 3u);
    return h;
}

static uint64_t t_hash(const void *vs)
{
    const tslot *s = (const tslot *)vs;
    return oop_hash(s->ep, s->key);
}

/* Random records, epochs, late records, heartbeats and flushes: the table's
 * output equals the reference's, event for event, and no record is lost. */
static void test_random(uint32_t n_slots, uint32_t ways, uint64_t seed)
{
    gsq_agg_shape sh = shape_of(n_slots, ways);
    gsq_agg_table t;
    ref r = {n_slots, ways, (tslot *)calloc(n_slots, sizeof(tslot)), 0, 0};
    event_log got = {0}, want = {0};
    uint64_t x = seed, records = 0, counted = 0;
    uint32_t ep = 100, keys = 1 + (uint32_t)(splitmix(&x) % (3 * n_slots));
    int ordered, same = 1, state_ok = 1;

    if (!r.slot)
        abort();
    table_new(&t, &sh);
    for (int op = 0; op < 4000; op++) {
        uint64_t dice = splitmix(&x) % 1000;
        if (dice < 900) {
            uint32_t e = ep, key = (uint32_t)(splitmix(&x) % keys);
            uint64_t v = splitmix(&x) % 1000, hk = key, h = splitmix(&hk);
            if (dice < 20 && ep > 0)
                e = ep - 1 - (uint32_t)(dice % 2); /* late */
            if (dice >= 20 && dice < 60)
                h = (h & ~(uint64_t)0xffffffff) | (key & 3u); /* crowd a few buckets */
            put(&t, &sh, e, key, v, h, &got);
            ref_accept(&r, e, key, v, h, &want);
            records++;
        } else if (dice < 930) {
            ep += 1 + (uint32_t)(dice % 2);
        } else if (dice < 990) {
            heartbeat(&t, &sh, ep - 2 + (uint32_t)(dice % 5), &got);
            ref_heartbeat(&r, ep - 2 + (uint32_t)(dice % 5), &want);
            if (dice % 5 > 2)
                ep = ep - 2 + (uint32_t)(dice % 5); /* the source follows its bound */
        } else {
            gsq_agg_flush(&t, &sh, &got);
            ref_flush(&r, &want);
        }
        if (t.n_used != ref_used(&r) || used_slots(&t, &sh, &ordered) != t.n_used || !ordered)
            state_ok = 0;
    }
    gsq_agg_flush(&t, &sh, &got);
    ref_flush(&r, &want);
    same = logs_equal(&got, &want);
    if (!same)
        printf("random n_slots=%u ways=%u seed=%llu: %zu events, reference %zu\n", n_slots,
               ways, (unsigned long long)seed, got.n, want.n);
    CHECK(same);
    CHECK(state_ok);
    for (size_t i = 0; i < got.n; i++)
        if (got.ev[i].why != GSQ_AGG_EJECT_HEARTBEAT)
            counted += got.ev[i].cnt;
    CHECK(counted == records && t.n_used == 0);
    table_free(&t);
    free(r.slot);
    free(got.ev);
    free(want.ev);
}

/* ---- out-of-order: several open epochs, slow and lazy flush ------------- */

/* The epoch value of an epoch slot (tag 1..N+1). */
static uint32_t tag_ep(const gsq_agg_table *t, const gsq_agg_shape *sh, unsigned tag)
{
    return ((const tslot *)gsq_agg_epoch_of(t, sh, tag))->ep;
}

/* The open epochs' values, oldest first, into ep[] (at most 8); their number. */
static uint32_t open_eps(const gsq_agg_table *t, const gsq_agg_shape *sh, uint32_t *ep)
{
    for (uint32_t i = 0; i < t->n_open && i < 8; i++)
        ep[i] = tag_ep(t, sh, t->order[i]);
    return t->n_open;
}

/* Everything the invariants say of the table's state. */
static int state_ok(const gsq_agg_table *t, const gsq_agg_shape *sh)
{
    uint32_t per_tag[GSQ_AGG_MAX_EPOCHS + 2] = {0}, used = 0, sum = 0;
    int ordered, ok = 1;
    if (used_slots(t, sh, &ordered) != t->n_used || !ordered || t->n_open > sh->max_epochs)
        return 0;
    for (uint32_t i = 1; i < t->n_open; i++)
        if (tag_ep(t, sh, t->order[i - 1]) >= tag_ep(t, sh, t->order[i]))
            ok = 0; /* sorted oldest..newest */
    if (t->n_open && (t->newest != gsq_agg_epoch_of(t, sh, t->order[t->n_open - 1]) ||
                      t->newest_tag != t->order[t->n_open - 1]))
        ok = 0;
    if (t->closed_tag && t->n_open && tag_ep(t, sh, t->closed_tag) >= tag_ep(t, sh, t->order[0]))
        ok = 0; /* every open epoch is newer than the closed one */
    if (sh->flush == GSQ_AGG_FLUSH_IMMEDIATE && t->n_pending)
        ok = 0;
    for (uint32_t i = 0; i < t->n_slots; i++) {
        const tslot *s = (const tslot *)gsq_agg_slot(t, sh, i);
        int known = s->used == t->closed_tag && s->used;
        if (!s->used)
            continue;
        used++;
        for (uint32_t k = 0; k < t->n_open; k++)
            known |= s->used == t->order[k];
        if (!known || s->ep != tag_ep(t, sh, s->used))
            ok = 0; /* a group of an open epoch, or of the closed one */
        per_tag[s->used]++;
        if (sh->flush == GSQ_AGG_FLUSH_SLOW && s->used == t->closed_tag && i < t->cursor)
            ok = 0; /* no pending group before the slow-flush cursor */
        for (uint32_t j = i + 1; j < t->n_slots; j++) {
            const tslot *o = (const tslot *)gsq_agg_slot(t, sh, j);
            if (o->used && o->ep == s->ep && o->key == s->key)
                ok = 0; /* a group in two slots */
        }
    }
    for (uint32_t k = 0; k < t->n_open; k++) {
        if (per_tag[t->order[k]] != t->count[t->order[k]])
            ok = 0;
        sum += t->count[t->order[k]];
    }
    if (per_tag[t->closed_tag] != (t->closed_tag ? t->n_pending : 0) ||
        used != sum + t->n_pending)
        ok = 0;
    return ok;
}

static int ev_is(const event_log *lg, size_t i, enum gsq_agg_why why, uint32_t ep, uint32_t key,
                 uint64_t cnt, uint64_t sum)
{
    const event *e = &lg->ev[i];
    return i < lg->n && e->why == why && e->ep == ep && e->key == key && e->cnt == cnt &&
           e->sum == sum;
}

#define FL GSQ_AGG_EJECT_FLUSH
#define LATE GSQ_AGG_EJECT_LATE
#define HB GSQ_AGG_EJECT_HEARTBEAT

/* Records of interleaved epochs 0,1,2,0: N=3 counts them all; N=2 closes 0
 * when 2 opens and passes the last 0 on as late. */
static void test_interleave(uint32_t ways)
{
    for (uint32_t n = 2; n <= 3; n++) {
        gsq_agg_shape sh = shape_oop(64, ways, n, GSQ_AGG_FLUSH_IMMEDIATE);
        gsq_agg_table t;
        event_log lg = {0};
        uint32_t ep[8];
        table_new(&t, &sh);
        /* hash: 8 * epoch + key, distinct buckets when direct-mapped */
        put(&t, &sh, 0, 1, 1, 1, &lg);
        put(&t, &sh, 0, 2, 10, 2, &lg);
        put(&t, &sh, 1, 1, 2, 9, &lg);
        put(&t, &sh, 2, 1, 3, 17, &lg);
        put(&t, &sh, 0, 1, 4, 1, &lg);
        if (n == 3) {
            CHECK(lg.n == 0 && t.n_used == 4 && t.n_open == 3 && t.max_open == 3);
            CHECK(open_eps(&t, &sh, ep) == 3 && ep[0] == 0 && ep[1] == 1 && ep[2] == 2);
            put(&t, &sh, 3, 1, 6, 25, &lg); /* epoch 0 closes */
            CHECK(lg.n == 2 && ev_is(&lg, 0, FL, 0, 1, 2, 5) && ev_is(&lg, 1, FL, 0, 2, 1, 10));
            gsq_agg_flush(&t, &sh, &lg);
            CHECK(lg.n == 5 && ev_is(&lg, 2, FL, 1, 1, 1, 2) && ev_is(&lg, 3, FL, 2, 1, 1, 3) &&
                  ev_is(&lg, 4, FL, 3, 1, 1, 6));
        } else {
            CHECK(lg.n == 3 && ev_is(&lg, 0, FL, 0, 1, 1, 1) && ev_is(&lg, 1, FL, 0, 2, 1, 10));
            CHECK(lg.n == 3 && ev_is(&lg, 2, LATE, 0, 1, 1, 4) && t.n_late == 1);
            CHECK(t.n_used == 2 && t.n_open == 2 && t.n_closed == 1);
            gsq_agg_flush(&t, &sh, &lg);
            CHECK(lg.n == 5 && ev_is(&lg, 3, FL, 1, 1, 1, 2) && ev_is(&lg, 4, FL, 2, 1, 1, 3));
        }
        CHECK(t.n_used == 0 && state_ok(&t, &sh) && t.n_flushed == (n == 3 ? 5u : 4u));
        table_free(&t);
        free(lg.ev);
    }
}

/* An epoch between open ones, or older than all while fewer than N are
 * open, opens; older than all with N open, or not newer than `closed`: late. */
static void test_open_rules(void)
{
    gsq_agg_shape sh = shape_oop(64, 4, 3, GSQ_AGG_FLUSH_IMMEDIATE);
    gsq_agg_table t;
    event_log lg = {0};
    uint32_t ep[8];
    table_new(&t, &sh);
    put(&t, &sh, 5, 1, 1, 1, &lg);
    put(&t, &sh, 3, 1, 1, 1, &lg); /* older, fewer than N open */
    put(&t, &sh, 4, 1, 1, 1, &lg); /* between */
    CHECK(lg.n == 0 && open_eps(&t, &sh, ep) == 3 && ep[0] == 3 && ep[1] == 4 && ep[2] == 5);
    put(&t, &sh, 2, 1, 7, 1, &lg); /* older than all, N open */
    CHECK(lg.n == 1 && ev_is(&lg, 0, LATE, 2, 1, 1, 7));
    put(&t, &sh, 7, 1, 1, 1, &lg); /* 3 closes */
    CHECK(lg.n == 2 && ev_is(&lg, 1, FL, 3, 1, 1, 1) && tag_ep(&t, &sh, t.closed_tag) == 3);
    CHECK(open_eps(&t, &sh, ep) == 3 && ep[0] == 4 && ep[1] == 5 && ep[2] == 7);
    put(&t, &sh, 6, 1, 1, 1, &lg); /* between 5 and 7 with N open: 4 closes */
    CHECK(lg.n == 3 && ev_is(&lg, 2, FL, 4, 1, 1, 1));
    CHECK(open_eps(&t, &sh, ep) == 3 && ep[0] == 5 && ep[1] == 6 && ep[2] == 7);
    put(&t, &sh, 4, 1, 1, 1, &lg);
    put(&t, &sh, 3, 1, 1, 1, &lg);
    CHECK(lg.n == 5 && lg.ev[3].why == LATE && lg.ev[4].why == LATE && t.n_late == 3);
    put(&t, &sh, 5, 1, 1, 1, &lg);
    put(&t, &sh, 6, 1, 1, 1, &lg);
    CHECK(lg.n == 5 && t.n_used == 3 && state_ok(&t, &sh));
    table_free(&t);
    free(lg.ev);

    /* a heartbeat's promise: an older epoch can no longer open */
    sh = shape_oop(64, 4, 3, GSQ_AGG_FLUSH_IMMEDIATE);
    table_new(&t, &sh);
    lg.n = 0;
    lg.ev = NULL;
    lg.cap = 0;
    put(&t, &sh, 5, 1, 1, 1, &lg);
    heartbeat(&t, &sh, 5, &lg);
    CHECK(lg.n == 1 && ev_is(&lg, 0, HB, 5, 0, 0, 0));
    put(&t, &sh, 4, 1, 1, 1, &lg);
    CHECK(lg.n == 2 && ev_is(&lg, 1, LATE, 4, 1, 1, 1) && t.n_open == 1);
    put(&t, &sh, 6, 1, 1, 1, &lg);
    CHECK(lg.n == 2 && t.n_open == 2 && state_ok(&t, &sh));
    table_free(&t);
    free(lg.ev);
}

/* Heartbeats open empty epochs and close old ones; the bound sent is the
 * oldest epoch that may still produce output, never lower while groups are
 * in the table, the inference (capped by the oldest open epoch) when none. */
static void test_heartbeat_oop(void)
{
    gsq_agg_shape sh = shape_oop(16, 2, 2, GSQ_AGG_FLUSH_IMMEDIATE);
    gsq_agg_table t;
    event_log lg = {0};
    uint32_t ep[8];
    table_new(&t, &sh);
    heartbeat(&t, &sh, 3, &lg); /* before any record: as inferred, nothing opens */
    CHECK(lg.n == 1 && ev_is(&lg, 0, HB, 3, 0, 0, 0) && t.n_open == 0);
    put(&t, &sh, 5, 1, 1, 1, &lg);
    heartbeat(&t, &sh, 7, &lg); /* opens 7, empty; 5 has a group */
    CHECK(lg.n == 2 && ev_is(&lg, 1, HB, 5, 0, 0, 0));
    CHECK(open_eps(&t, &sh, ep) == 2 && ep[0] == 5 && ep[1] == 7 && t.count[t.order[1]] == 0);
    put(&t, &sh, 7, 1, 1, 1, &lg);
    put(&t, &sh, 6, 2, 1, 2, &lg); /* between 5 and 7: 5 closes */
    CHECK(lg.n == 3 && ev_is(&lg, 2, FL, 5, 1, 1, 1));
    heartbeat(&t, &sh, 8, &lg); /* 6 closes; 7 has a group */
    CHECK(lg.n == 5 && ev_is(&lg, 3, FL, 6, 2, 1, 1) && ev_is(&lg, 4, HB, 7, 0, 0, 0));
    heartbeat(&t, &sh, 6, &lg); /* behind: never lower */
    CHECK(lg.n == 6 && ev_is(&lg, 5, HB, 7, 0, 0, 0));
    put(&t, &sh, 8, 3, 1, 3, &lg);
    heartbeat(&t, &sh, 10, &lg); /* 7 closes, 8 open with a group */
    CHECK(lg.n == 8 && ev_is(&lg, 6, FL, 7, 1, 1, 1) && ev_is(&lg, 7, HB, 8, 0, 0, 0));
    gsq_agg_flush(&t, &sh, &lg);
    CHECK(lg.n == 9 && ev_is(&lg, 8, FL, 8, 3, 1, 1) && t.n_used == 0);
    CHECK(open_eps(&t, &sh, ep) == 2 && ep[0] == 8 && ep[1] == 10);
    heartbeat(&t, &sh, 9, &lg); /* empty table: the inference, capped by 8 */
    CHECK(lg.n == 10 && ev_is(&lg, 9, HB, 8, 0, 0, 0));
    heartbeat(&t, &sh, 7, &lg); /* empty table: the inference stands */
    CHECK(lg.n == 11 && ev_is(&lg, 10, HB, 7, 0, 0, 0));
    put(&t, &sh, 7, 1, 1, 1, &lg); /* 7 closed */
    CHECK(lg.n == 12 && lg.ev[11].why == LATE && state_ok(&t, &sh));
    table_free(&t);
    free(lg.ev);
}

/* A promise (the LFTA drops every later record older than it: generated
 * heartbeats, seed 002) closes every open epoch before its own and ejects
 * their groups at once, whatever the flush; a plain heartbeat keeps N open. */
static void test_heartbeat_promise(void)
{
    for (int fl = GSQ_AGG_FLUSH_IMMEDIATE; fl <= GSQ_AGG_FLUSH_LAZY; fl++) {
        gsq_agg_shape sh = shape_oop(64, 4, 3, (enum gsq_agg_flush)fl);
        gsq_agg_table t;
        event_log lg = {0};
        uint32_t ep[8];
        table_new(&t, &sh);
        put(&t, &sh, 5, 1, 1, 1, &lg);
        put(&t, &sh, 6, 2, 1, 2, &lg);
        put(&t, &sh, 6, 3, 1, 3, &lg);
        heartbeat_as(&t, &sh, 6, 0, &lg); /* not a promise: 5 stays open */
        CHECK(lg.n == 1 && ev_is(&lg, 0, HB, 5, 0, 0, 0) && t.n_open == 2);
        heartbeat_as(&t, &sh, 6, 1, &lg); /* 5 is complete: out now */
        CHECK(lg.n == 3 && ev_is(&lg, 1, FL, 5, 1, 1, 1) && ev_is(&lg, 2, HB, 6, 0, 0, 0));
        CHECK(open_eps(&t, &sh, ep) == 1 && ep[0] == 6 && t.n_pending == 0);
        heartbeat_as(&t, &sh, 9, 1, &lg); /* 9 opens; 6 closes, both groups out */
        CHECK(lg.n == 6 && lg.ev[3].why == FL && lg.ev[4].why == FL &&
              ev_is(&lg, 5, HB, 9, 0, 0, 0));
        CHECK(open_eps(&t, &sh, ep) == 1 && ep[0] == 9 && t.n_used == 0 && state_ok(&t, &sh));
        put(&t, &sh, 8, 4, 1, 4, &lg); /* behind the promise: late */
        CHECK(lg.n == 7 && lg.ev[6].why == LATE);
        table_free(&t);
        free(lg.ev);
    }
}

/* Epoch 0's groups 0..9 in slots 0..9 (direct-mapped), one group of epoch 1
 * in slot 10; then a record of epoch 2 (key 11, slot 11) closes epoch 0. */
static void fill_three(gsq_agg_table *t, const gsq_agg_shape *sh, event_log *lg)
{
    for (uint32_t k = 0; k < 10; k++)
        put(t, sh, 0, k, k, k, lg);
    put(t, sh, 1, 10, 10, 10, lg);
    put(t, sh, 2, 11, 11, 11, lg);
}

static void test_slow_flush(void)
{
    gsq_agg_shape sh = shape_oop(16, 1, 2, GSQ_AGG_FLUSH_SLOW);
    gsq_agg_table t;
    event_log lg = {0};
    int ok = 1;
    table_new(&t, &sh);
    fill_three(&t, &sh, &lg);
    /* the record that closed epoch 0 ejected its first group */
    CHECK(lg.n == 1 && ev_is(&lg, 0, FL, 0, 0, 1, 0) && t.n_pending == 9 && t.max_pending == 10);
    for (uint32_t k = 1; k <= 3; k++) {
        put(&t, &sh, 2, 11, 1, 11, &lg); /* one pending group per record */
        ok &= lg.n == k + 1 && ev_is(&lg, k, FL, 0, k, 1, k) && state_ok(&t, &sh);
    }
    CHECK(ok && t.n_pending == 6 && t.n_slow == 4 && t.n_used == 8);
    heartbeat(&t, &sh, 2, &lg); /* epoch 0 still has output to come */
    CHECK(lg.n == 5 && ev_is(&lg, 4, HB, 0, 0, 0, 0));
    /* a new group meets a pending one in its slot (7), after the step (4) */
    put(&t, &sh, 2, 12, 5, 7, &lg);
    CHECK(lg.n == 7 && ev_is(&lg, 5, FL, 0, 4, 1, 4) && ev_is(&lg, 6, FL, 0, 7, 1, 7));
    CHECK(t.n_met == 1 && t.n_pending == 4 && t.n_used == 7 && state_ok(&t, &sh));
    /* epoch 3 closes epoch 1: epoch 0's flush completes at once first */
    put(&t, &sh, 3, 13, 1, 13, &lg);
    CHECK(lg.n == 11 && ev_is(&lg, 7, FL, 0, 5, 1, 5) && ev_is(&lg, 8, FL, 0, 6, 1, 6) &&
          ev_is(&lg, 9, FL, 0, 8, 1, 8) && ev_is(&lg, 10, FL, 0, 9, 1, 9));
    CHECK(t.n_pending == 1 && t.cursor == 4 && state_ok(&t, &sh)); /* slots 0..3 seen */
    put(&t, &sh, 3, 13, 1, 13, &lg); /* slots 4..7 */
    CHECK(lg.n == 11 && t.cursor == 8);
    put(&t, &sh, 3, 13, 1, 13, &lg); /* slots 8, 9, 10: epoch 1's group */
    CHECK(lg.n == 12 && ev_is(&lg, 11, FL, 1, 10, 1, 10) && t.n_pending == 0);
    heartbeat(&t, &sh, 3, &lg);
    CHECK(lg.n == 13 && ev_is(&lg, 12, HB, 2, 0, 0, 0));
    gsq_agg_flush(&t, &sh, &lg);
    CHECK(lg.n == 16 && ev_is(&lg, 13, FL, 2, 12, 1, 5) && ev_is(&lg, 14, FL, 2, 11, 4, 14) &&
          ev_is(&lg, 15, FL, 3, 13, 3, 3));
    CHECK(t.n_used == 0 && t.n_flushed == 14 && state_ok(&t, &sh));
    table_free(&t);
    free(lg.ev);
}

static void test_lazy_flush(void)
{
    gsq_agg_shape sh = shape_oop(16, 1, 2, GSQ_AGG_FLUSH_LAZY);
    gsq_agg_table t;
    event_log lg = {0};
    table_new(&t, &sh);
    fill_three(&t, &sh, &lg);
    for (int i = 0; i < 20; i++)
        put(&t, &sh, 2, 11, 1, 11, &lg);
    CHECK(lg.n == 0 && t.n_pending == 10 && t.n_used == 12 && state_ok(&t, &sh));
    put(&t, &sh, 2, 12, 5, 7, &lg); /* meets epoch 0's group 7 */
    CHECK(lg.n == 1 && ev_is(&lg, 0, FL, 0, 7, 1, 7) && t.n_met == 1 && t.n_pending == 9);
    put(&t, &sh, 1, 14, 2, 3, &lg); /* an open epoch meets epoch 0's group 3 */
    CHECK(lg.n == 2 && ev_is(&lg, 1, FL, 0, 3, 1, 3) && t.n_pending == 8);
    heartbeat(&t, &sh, 2, &lg);
    CHECK(lg.n == 3 && ev_is(&lg, 2, HB, 0, 0, 0, 0));
    put(&t, &sh, 3, 13, 1, 13, &lg); /* epoch 1 closes: epoch 0's rest at once */
    CHECK(lg.n == 11 && ev_is(&lg, 3, FL, 0, 0, 1, 0) && ev_is(&lg, 10, FL, 0, 9, 1, 9));
    CHECK(t.n_pending == 2 && t.n_used == 5 && state_ok(&t, &sh));
    heartbeat(&t, &sh, 3, &lg);
    CHECK(lg.n == 12 && ev_is(&lg, 11, HB, 1, 0, 0, 0));
    /* finish: the closed epoch's groups, then the open epochs oldest first */
    gsq_agg_flush(&t, &sh, &lg);
    CHECK(lg.n == 17 && ev_is(&lg, 12, FL, 1, 14, 1, 2) && ev_is(&lg, 13, FL, 1, 10, 1, 10) &&
          ev_is(&lg, 14, FL, 2, 12, 1, 5) && ev_is(&lg, 15, FL, 2, 11, 21, 31) &&
          ev_is(&lg, 16, FL, 3, 13, 1, 1));
    CHECK(t.n_used == 0 && t.n_pending == 0 && state_ok(&t, &sh));
    table_free(&t);
    free(lg.ev);
}

/* A slot freed alone takes its bucket's last used slot. */
static void test_unlink(void)
{
    gsq_agg_shape sh = shape_oop(16, 4, 2, GSQ_AGG_FLUSH_SLOW);
    gsq_agg_table t;
    event_log lg = {0};
    const tslot *b;
    table_new(&t, &sh);
    put(&t, &sh, 0, 1, 1, 0, &lg);
    put(&t, &sh, 1, 2, 1, 4, &lg);
    put(&t, &sh, 0, 3, 1, 8, &lg);
    put(&t, &sh, 1, 4, 1, 12, &lg); /* bucket 0: 0/1 1/2 0/3 1/4 */
    put(&t, &sh, 2, 5, 1, 1, &lg); /* 0 closes; 0/1 leaves, 1/4 moves in */
    b = (const tslot *)gsq_agg_slot(&t, &sh, 0);
    CHECK(lg.n == 1 && ev_is(&lg, 0, FL, 0, 1, 1, 1) && b[0].key == 4 && b[1].key == 2 &&
          b[2].key == 3 && !b[3].used && state_ok(&t, &sh));
    put(&t, &sh, 2, 5, 1, 1, &lg); /* 0/3 leaves: the last used slot itself */
    CHECK(lg.n == 2 && ev_is(&lg, 1, FL, 0, 3, 1, 1) && b[0].key == 4 && b[1].key == 2 &&
          !b[2].used && !b[3].used && state_ok(&t, &sh) && t.n_pending == 0);
    table_free(&t);
    free(lg.ev);
}

/* Random records of disordered epochs, heartbeats and flushes, for every
 * associativity, N and flush: the state keeps its invariants; every record
 * is counted once (per (epoch, key), what left the table plus what is in it
 * equals the input); no group partial is older than a heartbeat sent before
 * it; heartbeats sent while groups are in the table never go down. */
#define R_EPS 512u
#define R_KEYS 200u
/* Growth is weighed each n_slots / 4 collisions: a table whose collisions
 * eject each group once (4,000 keys seen once each) keeps its size, however
 * many collisions add up; one whose ejected groups come back (two keys
 * sharing a slot, each ejected over and over) doubles. */
static void test_growth_weighs_returning_groups(void)
{
    for (int back = 0; back <= 1; back++) {
        gsq_agg_shape sh = shape_of(64, 1);
        gsq_agg_table t;
        event_log lg = {0};
        sh.hash = t_hash;
        sh.grow = 1;
        table_new(&t, &sh);
        for (uint32_t r = 0; r < 4000; r++) {
            /* back: keys 1 and 2, hashes 0 and 1 << 40 (slot 0 of every
             * size), switching each record; else key r, hash splitmix(r) */
            uint64_t x = r;
            uint32_t key = back ? 1u + r % 2u : r;
            uint64_t h = back ? (key == 2u ? (uint64_t)1 << 40 : 0u) : splitmix(&x);
            put(&t, &sh, 0, key, 1, h, &lg);
        }
        CHECK(t.n_collisions >= 64u); /* weighed several times over */
        if (back)
            CHECK(t.n_grown > 0 && t.n_slots > 64u);
        else
            CHECK(t.n_grown == 0 && t.n_slots == 64u);
        gsq_agg_flush(&t, &sh, &lg);
        table_free(&t);
        free(lg.ev);
    }
}

/* Tables that grew in test_random_oop's runs with growth on. */
static uint32_t grown_runs;

static void test_random_oop(uint32_t n_slots, uint32_t ways, uint32_t n, enum gsq_agg_flush fl,
                            uint64_t seed, int grow)
{
    static uint64_t in_cnt[R_EPS][R_KEYS], in_sum[R_EPS][R_KEYS];
    static uint64_t out_cnt[R_EPS][R_KEYS], out_sum[R_EPS][R_KEYS];
    gsq_agg_shape sh = shape_oop(n_slots, ways, n, fl);
    gsq_agg_table t;
    event_log lg = {0};
    uint64_t x = seed;
    sh.hash = t_hash;
    sh.grow = grow;
    uint32_t front = 10, keys = 1 + (uint32_t)(splitmix(&x) % (n_slots < 64 ? 3 * n_slots : R_KEYS));
    uint32_t bound = 0, hb_groups = 0;
    int ok_state = 1, ok_promise = 1, ok_hb = 1, ok_totals = 1, ok_counters = 1, have_bound = 0;
    int hb_known = 0;
    size_t seen = 0;
    uint64_t n_fl = 0, n_col = 0, n_late = 0;

    memset(in_cnt, 0, sizeof in_cnt);
    memset(in_sum, 0, sizeof in_sum);
    memset(out_cnt, 0, sizeof out_cnt);
    memset(out_sum, 0, sizeof out_sum);
    table_new(&t, &sh);
    /* with growth on, long epochs: a group's records come back after a
     * collision ejected it, and the table grows */
    const uint64_t rec_below = grow ? 985u : 900u;
    for (int op = 0; op < 3000 && front < R_EPS - 8; op++) {
        uint64_t dice = splitmix(&x) % 1000;
        if (dice < rec_below) {
            /* mostly the front epoch, some up to n + 1 behind */
            uint32_t back = dice < 700 ? 0 : (uint32_t)(splitmix(&x) % (n + 2));
            uint32_t e = front >= back ? front - back : 0;
            uint32_t key = (uint32_t)(splitmix(&x) % keys);
            uint64_t v = splitmix(&x) % 1000;
            put(&t, &sh, e, key, v, oop_hash(e, key), &lg);
            in_cnt[e][key]++;
            in_sum[e][key] += v;
        } else if (dice < rec_below + (grow ? 5u : 60u)) {
            front += 1 + (uint32_t)(dice % 2);
        } else if (dice < (grow ? 998u : 995u)) {
            uint32_t hbv = front - 2 + (uint32_t)(dice % 5);
            hb_known = t.newest != NULL; /* else: before any record */
            heartbeat(&t, &sh, hbv, &lg);
            if (hb_known && t.n_used) {
                uint32_t sent = lg.ev[lg.n - 1].ep;
                if (sent < hb_groups)
                    ok_hb = 0;
                hb_groups = sent;
            }
            if (dice % 5 > 2)
                front = hbv; /* the source follows its bound */
        } else {
            gsq_agg_flush(&t, &sh, &lg);
        }
        for (; seen < lg.n; seen++) {
            const event *e = &lg.ev[seen];
            if (e->why == HB) {
                if (hb_known && (!have_bound || e->ep > bound))
                    bound = e->ep, have_bound = 1;
                continue;
            }
            if (e->why != LATE && have_bound && e->ep < bound)
                ok_promise = 0;
            n_fl += e->why == FL;
            n_col += e->why == GSQ_AGG_EJECT_COLLISION;
            n_late += e->why == LATE;
            out_cnt[e->ep][e->key] += e->cnt;
            out_sum[e->ep][e->key] += e->sum;
        }
        if (!state_ok(&t, &sh))
            ok_state = 0;
    }
    /* what is still in the table, then what the end of input ejects */
    for (uint32_t i = 0; i < t.n_slots; i++) {
        const tslot *s = (const tslot *)gsq_agg_slot(&t, &sh, i);
        if (s->used) {
            out_cnt[s->ep][s->key] += s->cnt;
            out_sum[s->ep][s->key] += s->sum;
        }
    }
    for (uint32_t e = 0; e < R_EPS; e++)
        for (uint32_t k = 0; k < R_KEYS; k++)
            if (in_cnt[e][k] != out_cnt[e][k] || in_sum[e][k] != out_sum[e][k])
                ok_totals = 0;
    gsq_agg_flush(&t, &sh, &lg);
    for (; seen < lg.n; seen++)
        n_fl += lg.ev[seen].why == FL;
    if (t.n_flushed != n_fl || t.n_collisions != n_col || t.n_late != n_late || t.n_used ||
        !state_ok(&t, &sh))
        ok_counters = 0;
    /* a table grows only with growth on, doubling each time, after n_slots / 4
     * collisions at each size */
    if (t.n_slots != n_slots << t.n_grown || (!grow && t.n_grown) ||
        (t.n_grown && t.n_collisions < (uint64_t)n_slots * ((1u << t.n_grown) - 1u) / 4u))
        ok_counters = 0;
    grown_runs += t.n_grown > 0;
    if (!(ok_state && ok_promise && ok_hb && ok_totals && ok_counters))
        printf("random_oop n_slots=%u ways=%u N=%u flush=%d seed=%llu grow=%d: state %d "
               "promise %d heartbeats %d totals %d counters %d\n",
               n_slots, ways, n, (int)fl, (unsigned long long)seed, grow, ok_state, ok_promise,
               ok_hb, ok_totals, ok_counters);
    CHECK(ok_state);
    CHECK(ok_promise);
    CHECK(ok_hb);
    CHECK(ok_totals);
    CHECK(ok_counters);
    table_free(&t);
    free(lg.ev);
}

int main(void)
{
    test_probe();
    test_heartbeat();
    for (size_t i = 0; i < N_WAYS; i++) {
        test_collision(WAYS[i]);
        test_epoch_flush(WAYS[i]);
        test_full(WAYS[i]);
        for (uint64_t seed = 1; seed <= 20; seed++) {
            test_random(16, WAYS[i], seed);
            test_random(64, WAYS[i], seed * 7919);
        }
    }
    test_open_rules();
    test_heartbeat_oop();
    test_heartbeat_promise();
    test_slow_flush();
    test_lazy_flush();
    test_unlink();
    test_growth_weighs_returning_groups();
    for (size_t i = 0; i < N_WAYS; i++) {
        test_interleave(WAYS[i]);
        for (uint32_t n = 1; n <= 4; n++)
            for (int fl = GSQ_AGG_FLUSH_IMMEDIATE; fl <= GSQ_AGG_FLUSH_LAZY; fl++)
                for (uint64_t seed = 1; seed <= 3; seed++)
                    for (int grow = 0; grow <= 1; grow++) {
                        test_random_oop(16, WAYS[i], n, (enum gsq_agg_flush)fl, seed, grow);
                        test_random_oop(64, WAYS[i], n, (enum gsq_agg_flush)fl, seed * 7919,
                                        grow);
                    }
        for (int fl = GSQ_AGG_FLUSH_IMMEDIATE; fl <= GSQ_AGG_FLUSH_LAZY; fl++)
            for (int grow = 0; grow <= 1; grow++)
                test_random_oop(64, WAYS[i], GSQ_AGG_MAX_EPOCHS, (enum gsq_agg_flush)fl, 4242,
                                grow);
    }
    CHECK(grown_runs > 100); /* growth happened, and was checked, in most runs with it on */
    return check_report();
}
