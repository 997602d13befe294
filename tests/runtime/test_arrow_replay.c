/* Unit tests of the Arrow source's replay in time
 * (runtime_c/sources/arrow_source.c, included for its static functions):
 * where a run of rows is cut at a time limit.  The cut found by value on
 * an integer time column (int_time_cut: two bisections, then a compare a
 * row) must equal the cut found by stamping every row (stamp_time_cut,
 * gsq_source_stamp's rules), over random columns of every integer width
 * and sign, every integer time type, every time unit, array and batch
 * offsets, and values around the limit, negative, outside the type's
 * range or past what microseconds hold; looking ahead leaves the
 * source's stamping state and counters as they were; a column with
 * nulls is left to stamp_time_cut.  Linked with the runtime objects but
 * arrow_source.c's; prints one line per failure and "N passed, M
 * failed". */
#include <stdio.h>

#include "arrow_source.c"

const gsq_queryset_def gsq_queryset = {0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, NULL};

#include "unit_check.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static uint64_t below(uint64_t n)
{
    return n ? rnd() % n : 0;
}

#define MAX_ROWS 300u
#define MAX_OFF 4u

/* A batch of one integer column, the time column of a source with
 * timestamps, read from row `row` on. */
typedef struct fixture {
    gsq_source s;
    arrow_reader rd;
    struct ArrowArray batch, child;
    struct ArrowArray *children[1];
    const void *struct_bufs[1], *child_bufs[2];
    uint8_t bitmap[(MAX_ROWS + 2 * MAX_OFF) / 8 + 1];
    uint64_t data[MAX_ROWS + 2 * MAX_OFF];
    gsq_arrow_col col;
    gsq_csv_slot slot;
    int64_t slot_col;
    int width, is_signed;
} fixture;

static const int TIME_TYPES[] = {GSQ_T_USHORT, GSQ_T_UINT, GSQ_T_INT, GSQ_T_ULLONG,
                                 GSQ_T_LLONG, GSQ_T_IP};
static const uint64_t UNITS[] = {1, 1000, 1000000, 1000000000};

static void setup(fixture *f, int type, uint64_t unit_ns, int width, int is_signed, uint32_t n)
{
    memset(f, 0, sizeof *f);
    f->width = width;
    f->is_signed = is_signed;
    f->col.cat = is_signed ? GSQ_AC_INT : GSQ_AC_UINT;
    f->col.width = width;
    f->col.format = "";
    f->slot.pos = 1;
    f->slot.type = type;
    f->slot_col = 0;
    f->child.length = n + (int64_t)below(MAX_OFF);
    f->child.offset = (int64_t)below(MAX_OFF);
    f->child.n_buffers = 2;
    f->child_bufs[0] = NULL;
    f->child_bufs[1] = f->data;
    f->child.buffers = f->child_bufs;
    f->batch.length = n;
    f->batch.offset = (int64_t)below(MAX_OFF);
    f->batch.n_buffers = 1;
    f->batch.buffers = f->struct_bufs;
    f->batch.n_children = 1;
    f->children[0] = &f->child;
    f->batch.children = f->children;
    f->batch.release = NULL;
    f->rd.cs.slot = &f->slot;
    f->rd.cs.n = 1;
    f->rd.slot_col = &f->slot_col;
    f->rd.cols = &f->col;
    f->rd.time_slot = 0;
    f->rd.batch = f->batch; /* the reader's copy: children point into f */
    f->s.has_ts = 1;
    f->s.time_pos = 1;
    f->s.time_type = type;
    f->s.unit_ns = unit_ns;
    f->s.last_app_usec = rnd() >> 20;
    f->s.last_arrival_usec = f->s.last_app_usec;
    f->s.time_unreadable = below(5);
}

/* Store x (cut to the column's width) as the value of batch row i. */
static void put(fixture *f, uint32_t i, uint64_t x)
{
    size_t at = (size_t)(f->child.offset + f->rd.batch.offset + i) * (size_t)f->width;
    uint8_t *p = (uint8_t *)f->data + at;
    switch (f->width) {
    case 1: { uint8_t v = (uint8_t)x; memcpy(p, &v, 1); break; }
    case 2: { uint16_t v = (uint16_t)x; memcpy(p, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)x; memcpy(p, &v, 4); break; }
    default: memcpy(p, &x, 8); break;
    }
}

/* A value near something worth testing: 0, the limit's value in units,
 * the ends of 16, 32 and 64 bits either sign, what microseconds hold. */
static uint64_t near(uint64_t center)
{
    uint64_t d = below(8) == 0 ? rnd() >> below(64) : below(5);
    return below(2) ? center + d : center - d;
}

static uint64_t a_center(const fixture *f)
{
    static const uint64_t ends[] = {0,          UINT16_MAX,     INT32_MAX,
                                    UINT32_MAX, INT64_MAX,      UINT64_MAX,
                                    UINT64_MAX / 1000, UINT64_MAX / 1000000};
    if (below(3) == 0)
        return rnd();
    if (below(2))
        return ends[below(sizeof ends / sizeof ends[0])];
    /* the limit's instant in the column's units */
    return f->s.limit_usec * 1000 / f->s.unit_ns + below(3) - 1;
}

/* Whether looking ahead left the stamping state alone. */
static int state_kept(const fixture *f, uint64_t app, uint64_t arrival, uint64_t unreadable)
{
    return f->s.last_app_usec == app && f->s.last_arrival_usec == arrival &&
           f->s.time_unreadable == unreadable;
}

static void test_cut_by_value_equals_cut_by_stamps(void)
{
    uint32_t t;
    for (t = 0; t < 20000; t++) {
        static fixture f;
        int type = TIME_TYPES[below(sizeof TIME_TYPES / sizeof TIME_TYPES[0])];
        uint64_t unit = UNITS[below(4)];
        int width = 1 << below(4);
        int is_signed = (int)below(2);
        uint32_t n = 1 + (uint32_t)below(MAX_ROWS), i, round;
        uint64_t app, arrival, unreadable;
        setup(&f, type, unit, width, is_signed, n);
        /* several rounds over one reader: the cached bounds (cut_b, and
         * cut_h for the last limit) carry over from one to the next */
        for (round = 0; round < 4; round++) {
            uint64_t center;
            uint32_t m, by_value = 0, by_stamps;
            int took;
            f.s.limit_usec = below(4) == 0 ? rnd() >> below(64) : rnd() >> (20 + below(40));
            if (f.s.limit_usec == UINT64_MAX)
                f.s.limit_usec--;
            center = a_center(&f);
            for (i = 0; i < n; i++)
                put(&f, i, below(16) == 0 ? rnd() : near(center));
            f.rd.row = (int64_t)below(n);
            m = n - (uint32_t)f.rd.row;
            app = f.s.last_app_usec;
            arrival = f.s.last_arrival_usec;
            unreadable = f.s.time_unreadable;
            took = int_time_cut(&f.s, &f.rd, m, &by_value);
            by_stamps = stamp_time_cut(&f.s, &f.rd, m);
            CHECK(took);
            if (by_value != by_stamps)
                printf("  type %d unit %llu width %d signed %d limit %llu: cut %u by value, "
                       "%u by stamps\n",
                       type, (unsigned long long)unit, width, is_signed,
                       (unsigned long long)f.s.limit_usec, by_value, by_stamps);
            CHECK(by_value == by_stamps);
            CHECK(by_stamps <= m);
            CHECK(state_kept(&f, app, arrival, unreadable));
            CHECK(time_cut(&f.s, &f.rd, m) == by_stamps);
        }
    }
}

/* A time column with nulls is cut by stamps: a null is unreadable, never
 * held back. */
static void test_nulls_are_left_to_stamps(void)
{
    static fixture f;
    uint32_t i, n = 40, cut = 0;
    setup(&f, GSQ_T_UINT, 1000000000u, 4, 0, n);
    f.child.null_count = 1;
    f.child_bufs[0] = f.bitmap;
    memset(f.bitmap, 0xff, sizeof f.bitmap);
    for (i = 0; i < n; i++)
        put(&f, i, 100 + i);
    f.s.limit_usec = 110u * 1000000u; /* rows 0..10 are by it */
    CHECK(time_cut(&f.s, &f.rd, n) == 11);
    CHECK(!int_time_cut(&f.s, &f.rd, n, &cut));
    /* row 11 null: the cut moves on to row 12, which is past */
    {
        int64_t bit = f.child.offset + f.rd.batch.offset + 11;
        f.bitmap[bit / 8] &= (uint8_t)~(1u << (bit % 8));
    }
    CHECK(time_cut(&f.s, &f.rd, n) == 12);
    f.s.limit_usec = UINT64_MAX; /* no limit: no scan */
    CHECK(time_cut(&f.s, &f.rd, n) == n);
}

/* stamp_ahead gives gsq_source_stamp's stamp, and no more. */
static void test_stamp_ahead_keeps_the_state(void)
{
    static fixture f;
    gsq_csv_value v;
    gsq_stamp a, b;
    setup(&f, GSQ_T_LLONG, 1000u, 8, 1, 1);
    f.s.last_app_usec = f.s.last_arrival_usec = 77;
    f.s.time_unreadable = 3;
    v.i = -5; /* unreadable: the last readable instant */
    stamp_ahead(&f.s, &v, &a);
    CHECK(a.unreadable && a.arrival_usec == 77 && a.app_usec == 77);
    CHECK(state_kept(&f, 77, 77, 3));
    v.i = 123456;
    stamp_ahead(&f.s, &v, &a);
    CHECK(!a.unreadable && a.arrival_usec == 123456 && state_kept(&f, 77, 77, 3));
    gsq_source_stamp(&f.s, &v, NULL, &b);
    CHECK(b.arrival_usec == a.arrival_usec && b.app_usec == a.app_usec);
    CHECK(state_kept(&f, 123456, 123456, 3));
}

int main(void)
{
    test_cut_by_value_equals_cut_by_stamps();
    test_nulls_are_left_to_stamps();
    test_stamp_ahead_keeps_the_state();
    return check_report();
}
