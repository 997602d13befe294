/* Unit tests of the LFTA aggregation table (runtime_c/lfta/gsq_agg_table.h):
 * probe hit and miss, collision ejection at every associativity, an epoch
 * change flushing every group, heartbeats, a full table, and random
 * sequences against a brute-force reference model.  Stand-alone (no runtime
 * library); prints one line per failure and "N passed, M failed". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsq_agg_table.h"

static int passed, failed;

#define CHECK(cond)                                                               \
    do {                                                                          \
        if (cond) {                                                               \
            passed++;                                                             \
        } else {                                                                  \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                \
            failed++;                                                             \
        }                                                                         \
    } while (0)

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

static void t_fold(void *vs, const void *vg)
{
    tslot *s = (tslot *)vs;
    const tslot *g = (const tslot *)vg;
    s->cnt += g->cnt;
    s->sum += g->sum;
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

static gsq_agg_shape shape_of(uint32_t n_slots, uint32_t ways)
{
    gsq_agg_shape sh = {sizeof(tslot), n_slots, ways, t_same_group, t_fold,
                        t_epoch_cmp, t_epoch_set, t_out};
    return sh;
}

/* A table with its memory; free with table_free. */
static void table_new(gsq_agg_table *t, const gsq_agg_shape *sh)
{
    void *mem = calloc(gsq_agg_mem_slots(sh), sh->slot_size);
    if (!mem)
        abort();
    gsq_agg_init(t, mem);
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
    gsq_agg_accept(t, sh, &g, h, lg);
}

static void heartbeat(gsq_agg_table *t, const gsq_agg_shape *sh, uint32_t ep, event_log *lg)
{
    tslot hb;
    memset(&hb, 0, sizeof hb);
    hb.ep = ep;
    gsq_agg_heartbeat(t, sh, &hb, lg);
}

/* Used slots, counted; and that a bucket's used slots precede its free ones. */
static uint32_t used_slots(const gsq_agg_table *t, const gsq_agg_shape *sh, int *ordered)
{
    uint32_t n = 0;
    *ordered = 1;
    for (uint32_t b = 0; b < sh->n_slots; b += sh->ways) {
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
        i = first + (uint32_t)((h >> 32) % r->ways);
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
        put(&t, &sh, 1, 999, 5, ((uint64_t)victim << 32) | 3u, &lg);
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
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
