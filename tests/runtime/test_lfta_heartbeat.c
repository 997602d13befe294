/* Unit tests of an LFTA's time-unit conversions (runtime_c/lfta/
 * gsq_time_unit.h) and heartbeat state (runtime_c/lfta/gsq_lfta_heartbeat.h):
 * every unit (s, ms, us, ns) each way, rounding at unit boundaries, zero,
 * negative and float values, the limits of each type, then admission,
 * the largest value seen with out-of-order records, the clock's bound,
 * generated promises, inference with and without an out-of-order bound,
 * and the branch-free block forms against the branching ones on random
 * rows.  Stand-alone (no runtime library); prints one line per failure and
 * "N passed, M failed". */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gsq_lfta_heartbeat.h"
#include "unit_check.h"

static const uint64_t UNITS[4] = {GSQ_UNIT_NSEC_S, GSQ_UNIT_NSEC_MS, GSQ_UNIT_NSEC_US,
                                  GSQ_UNIT_NSEC_NS};

/* ------------------------------------------------------------ units */

static void test_usec_to_units(void)
{
    /* seconds: rounded down at and around the boundary */
    CHECK(gsq_usec_to_units(0, GSQ_UNIT_NSEC_S) == 0);
    CHECK(gsq_usec_to_units(999999, GSQ_UNIT_NSEC_S) == 0);
    CHECK(gsq_usec_to_units(1000000, GSQ_UNIT_NSEC_S) == 1);
    CHECK(gsq_usec_to_units(1999999, GSQ_UNIT_NSEC_S) == 1);
    CHECK(gsq_usec_to_units(UINT64_C(1700000000123456), GSQ_UNIT_NSEC_S) == 1700000000u);
    /* milliseconds, microseconds (exact), nanoseconds (multiplied) */
    CHECK(gsq_usec_to_units(999, GSQ_UNIT_NSEC_MS) == 0);
    CHECK(gsq_usec_to_units(1000, GSQ_UNIT_NSEC_MS) == 1);
    CHECK(gsq_usec_to_units(123456789, GSQ_UNIT_NSEC_MS) == 123456);
    CHECK(gsq_usec_to_units(123456789, GSQ_UNIT_NSEC_US) == 123456789);
    CHECK(gsq_usec_to_units(1, GSQ_UNIT_NSEC_NS) == 1000);
    CHECK(gsq_usec_to_units(123456789, GSQ_UNIT_NSEC_NS) == UINT64_C(123456789000));
    /* the largest value each unit takes without wrapping */
    CHECK(gsq_usec_to_units(UINT64_MAX, GSQ_UNIT_NSEC_S) == UINT64_MAX / 1000000u);
    CHECK(gsq_usec_to_units(UINT64_MAX, GSQ_UNIT_NSEC_US) == UINT64_MAX);
    CHECK(gsq_usec_to_units(UINT64_MAX / 1000u, GSQ_UNIT_NSEC_NS) == UINT64_MAX / 1000u * 1000u);
}

static void test_usec_to_units_up(void)
{
    CHECK(gsq_usec_to_units_up(0, GSQ_UNIT_NSEC_S) == 0);
    CHECK(gsq_usec_to_units_up(1, GSQ_UNIT_NSEC_S) == 1);
    CHECK(gsq_usec_to_units_up(1000000, GSQ_UNIT_NSEC_S) == 1);
    CHECK(gsq_usec_to_units_up(1000001, GSQ_UNIT_NSEC_S) == 2);
    CHECK(gsq_usec_to_units_up(1, GSQ_UNIT_NSEC_MS) == 1);
    CHECK(gsq_usec_to_units_up(1000, GSQ_UNIT_NSEC_MS) == 1);
    CHECK(gsq_usec_to_units_up(1001, GSQ_UNIT_NSEC_MS) == 2);
    CHECK(gsq_usec_to_units_up(77, GSQ_UNIT_NSEC_US) == 77);
    CHECK(gsq_usec_to_units_up(77, GSQ_UNIT_NSEC_NS) == 77000);
    /* rounded up never below rounded down, and by at most one unit */
    for (int u = 0; u < 4; u++)
        for (uint64_t x = 0; x < 3000000u; x += 999) {
            uint64_t dn = gsq_usec_to_units(x, UNITS[u]), up = gsq_usec_to_units_up(x, UNITS[u]);
            if (!(up >= dn && up - dn <= 1 && (up == dn) == (gsq_units_to_usec(dn, UNITS[u]) == x)))
                CHECK(0);
        }
    check_passed++;
}

static void test_units_to_usec(void)
{
    CHECK(gsq_units_to_usec(0, GSQ_UNIT_NSEC_S) == 0);
    CHECK(gsq_units_to_usec(3, GSQ_UNIT_NSEC_S) == 3000000);
    CHECK(gsq_units_to_usec(3, GSQ_UNIT_NSEC_MS) == 3000);
    CHECK(gsq_units_to_usec(3, GSQ_UNIT_NSEC_US) == 3);
    CHECK(gsq_units_to_usec(999, GSQ_UNIT_NSEC_NS) == 0);   /* below a microsecond */
    CHECK(gsq_units_to_usec(1999, GSQ_UNIT_NSEC_NS) == 1);
    CHECK(gsq_units_to_usec(UINT64_MAX, GSQ_UNIT_NSEC_NS) == UINT64_MAX / 1000u);
    CHECK(gsq_units_to_usec(UINT64_MAX / 1000000u, GSQ_UNIT_NSEC_S) ==
          UINT64_MAX / 1000000u * 1000000u);
    /* units -> usec -> units is exact for every unit */
    for (int u = 0; u < 4; u++)
        for (uint64_t x = 0; x < 100000u; x += 7) {
            if (gsq_usec_to_units(gsq_units_to_usec(x, UNITS[u]), UNITS[u]) != x &&
                UNITS[u] >= GSQ_UNIT_NSEC_US)
                CHECK(0);
            /* usec -> units -> usec never runs ahead */
            if (gsq_units_to_usec(gsq_usec_to_units(x, UNITS[u]), UNITS[u]) > x)
                CHECK(0);
        }
    check_passed++;
}

static void test_float_units(void)
{
    CHECK(gsq_usec_to_units_f64(0, GSQ_UNIT_NSEC_S) == 0.0);
    CHECK(gsq_usec_to_units_f64(1500000, GSQ_UNIT_NSEC_S) == 1.5);
    CHECK(gsq_usec_to_units_f64(1500, GSQ_UNIT_NSEC_MS) == 1.5);
    CHECK(gsq_usec_to_units_f64(3, GSQ_UNIT_NSEC_US) == 3.0);
    CHECK(gsq_usec_to_units_f64(3, GSQ_UNIT_NSEC_NS) == 3000.0);
    CHECK(gsq_units_f64_to_usec(1.5, GSQ_UNIT_NSEC_S) == 1500000);
    CHECK(gsq_units_f64_to_usec(1.9999999, GSQ_UNIT_NSEC_US) == 1);   /* truncated */
    CHECK(gsq_units_f64_to_usec(2500.0, GSQ_UNIT_NSEC_NS) == 2);
    CHECK(gsq_units_f64_to_usec(0.0, GSQ_UNIT_NSEC_S) == 0);
    CHECK(gsq_units_f64_to_usec(-5.0, GSQ_UNIT_NSEC_S) == 0);         /* at or below 0: 0 */
    CHECK(gsq_units_f64_to_usec(-DBL_MAX, GSQ_UNIT_NSEC_MS) == 0);
}

static void test_units_less(void)
{
    /* unsigned: lowered, at least 0 */
    CHECK(gsq_units_less_u32(10, 3) == 7);
    CHECK(gsq_units_less_u32(10, 10) == 0);
    CHECK(gsq_units_less_u32(10, 11) == 0);
    CHECK(gsq_units_less_u32(0, 0) == 0);
    CHECK(gsq_units_less_u32(UINT32_MAX, 0) == UINT32_MAX);
    /* a bound past the type's range: 0, not the wrapped bound's difference */
    CHECK(gsq_units_less_u16(60000, 86400) == 0);
    CHECK(gsq_units_less_u16(UINT16_MAX, 1) == UINT16_MAX - 1);
    CHECK(gsq_units_less_u8(200, 100) == 100);
    CHECK(gsq_units_less_u8(1, UINT64_MAX) == 0);
    CHECK(gsq_units_less_u64(UINT64_MAX, 1) == UINT64_MAX - 1);
    CHECK(gsq_units_less_u64(UINT64_MAX, UINT64_MAX) == 0);
    /* signed: a time at or below 0 becomes 0 */
    CHECK(gsq_units_less_i32(-5, 0) == 0);
    CHECK(gsq_units_less_i32(-5, 3) == 0);
    CHECK(gsq_units_less_i32(0, 0) == 0);
    CHECK(gsq_units_less_i32(5, 3) == 2);
    CHECK(gsq_units_less_i32(INT32_MAX, 0) == INT32_MAX);
    CHECK(gsq_units_less_i32(INT32_MAX, (uint64_t)INT32_MAX + 5u) == 0);
    CHECK(gsq_units_less_i32(INT32_MIN, 1) == 0);
    CHECK(gsq_units_less_i64(INT64_MAX, 1) == INT64_MAX - 1);
    CHECK(gsq_units_less_i64(INT64_MIN, 0) == 0);
    CHECK(gsq_units_less_i64(7, UINT64_MAX) == 0);
    /* float: by a fraction, at least 0 */
    CHECK(gsq_units_less_f64(10.5, 0.25) == 10.25);
    CHECK(gsq_units_less_f64(0.25, 0.25) == 0.0);
    CHECK(gsq_units_less_f64(-3.0, 1.0) == 0.0);
    CHECK(gsq_units_less_f64(3.0, 0.0) == 3.0);
}

/* ------------------------------------------------------------ heartbeat */

static void test_admit_and_see(void)
{
    gsq_hb_u32 h;
    memset(&h, 0, sizeof h);
    /* nothing promised: everything admitted */
    CHECK(gsq_hb_u32_admits(&h, 0));
    CHECK(gsq_hb_u32_admits(&h, UINT32_MAX));
    /* the largest seen, out-of-order values do not lower it */
    gsq_hb_u32_see(&h, 50);
    CHECK(h.seen && h.last == 50);
    gsq_hb_u32_see(&h, 40);
    CHECK(h.last == 50);
    gsq_hb_u32_see(&h, 51);
    CHECK(h.last == 51);
    /* a first value of 0 is seen (seen, not last, says so) */
    gsq_hb_i32 s;
    memset(&s, 0, sizeof s);
    gsq_hb_i32_see(&s, -7);
    CHECK(s.seen && s.last == -7);
    gsq_hb_i32_see(&s, -9);
    CHECK(s.last == -7);
    /* a promise: values below it are not admitted, at it they are */
    gsq_hb_u32_clock(&h, 45);
    CHECK(h.promised && h.bound == 45);
    CHECK(!gsq_hb_u32_admits(&h, 44));
    CHECK(gsq_hb_u32_admits(&h, 45));
    CHECK(gsq_hb_u32_admits(&h, 46));
}

static void test_clock(void)
{
    gsq_hb_u64 h;
    memset(&h, 0, sizeof h);
    gsq_hb_u64_clock(&h, 0);   /* a first promise, even of 0 */
    CHECK(h.promised && h.bound == 0);
    gsq_hb_u64_clock(&h, 100);
    CHECK(h.bound == 100);
    gsq_hb_u64_clock(&h, 90);   /* never lowered */
    CHECK(h.bound == 100);
    gsq_hb_u64_clock(&h, UINT64_MAX);
    CHECK(h.bound == UINT64_MAX);
}

static void test_promise(void)
{
    gsq_hb_u32 h;
    memset(&h, 0, sizeof h);
    CHECK(gsq_hb_u32_promise(&h, 10) == 10);
    CHECK(h.promised && h.bound == 10);
    CHECK(gsq_hb_u32_promise(&h, 8) == 10);   /* not below an earlier promise */
    CHECK(h.bound == 10);
    CHECK(gsq_hb_u32_promise(&h, 12) == 12);
    CHECK(!gsq_hb_u32_admits(&h, 11));
    /* a generated promise in a unit: microseconds rounded down to seconds,
     * reported back exactly */
    gsq_hb_u32 t;
    memset(&t, 0, sizeof t);
    uint32_t v = gsq_hb_u32_promise(&t, (uint32_t)gsq_usec_to_units(UINT64_C(1700000000999999),
                                                                    GSQ_UNIT_NSEC_S));
    CHECK(v == 1700000000u);
    CHECK(gsq_units_to_usec(v, GSQ_UNIT_NSEC_S) == UINT64_C(1700000000000000));
    gsq_hb_f64 f;
    memset(&f, 0, sizeof f);
    CHECK(gsq_hb_f64_promise(&f, gsq_usec_to_units_f64(2500, GSQ_UNIT_NSEC_MS)) == 2.5);
    CHECK(gsq_units_f64_to_usec(f.bound, GSQ_UNIT_NSEC_MS) == 2500);
}

static void test_infer(void)
{
    gsq_hb_u32 h;
    uint32_t v = 12345;
    memset(&h, 0, sizeof h);
    /* nothing known: no heartbeat, *out untouched */
    CHECK(!gsq_hb_u32_infer(&h, 0, 0, &v) && v == 12345);
    CHECK(!gsq_hb_u32_infer(&h, 1, 5, &v) && v == 12345 && !h.promised);
    /* the largest seen, no out-of-order bound: not promised */
    gsq_hb_u32_see(&h, 100);
    CHECK(gsq_hb_u32_infer(&h, 0, 0, &v) && v == 100 && !h.promised);
    /* lowered by the out-of-order bound and promised */
    CHECK(gsq_hb_u32_infer(&h, 1, 30, &v) && v == 70 && h.promised && h.bound == 70);
    CHECK(!gsq_hb_u32_admits(&h, 69));
    /* a later inference never goes below the promise */
    CHECK(gsq_hb_u32_infer(&h, 1, 50, &v) && v == 70 && h.bound == 70);
    /* a bound larger than the value: 0, then raised to the promise */
    CHECK(gsq_hb_u32_infer(&h, 1, 1000, &v) && v == 70);
    gsq_hb_u32 z;
    memset(&z, 0, sizeof z);
    gsq_hb_u32_see(&z, 3);
    CHECK(gsq_hb_u32_infer(&z, 1, 1000, &v) && v == 0 && z.promised && z.bound == 0);
    /* only the clock's bound known (an idle source) */
    gsq_hb_u32 c;
    memset(&c, 0, sizeof c);
    gsq_hb_u32_clock(&c, 500);
    CHECK(gsq_hb_u32_infer(&c, 0, 0, &v) && v == 500);
    /* the clock ahead of the data: the clock's bound wins */
    gsq_hb_u32_see(&c, 400);
    CHECK(gsq_hb_u32_infer(&c, 0, 0, &v) && v == 500);
    /* the data ahead of the clock's bound: the data, lowered */
    gsq_hb_u32_see(&c, 900);
    CHECK(gsq_hb_u32_infer(&c, 1, 100, &v) && v == 800 && c.bound == 800);
    /* signed: a negative time lowered to 0, then raised to a promise */
    gsq_hb_i64 s;
    memset(&s, 0, sizeof s);
    int64_t sv = 1;
    gsq_hb_i64_see(&s, -50);
    CHECK(gsq_hb_i64_infer(&s, 0, 0, &sv) && sv == -50);
    CHECK(gsq_hb_i64_infer(&s, 1, 10, &sv) && sv == 0 && s.bound == 0);
    /* float: lowered by a fraction of a unit */
    gsq_hb_f64 f;
    double fv = 0;
    memset(&f, 0, sizeof f);
    gsq_hb_f64_see(&f, 10.75);
    CHECK(gsq_hb_f64_infer(&f, 1, gsq_usec_to_units_f64(500000, GSQ_UNIT_NSEC_S), &fv) &&
          fv == 10.25);
    /* u16 with a bound past its range: 0, not a wrapped difference */
    gsq_hb_u16 w;
    uint16_t wv = 9;
    memset(&w, 0, sizeof w);
    gsq_hb_u16_see(&w, 60000);
    CHECK(gsq_hb_u16_infer(&w, 1, gsq_usec_to_units_up(UINT64_C(86400000000), GSQ_UNIT_NSEC_S),
                           &wv) && wv == 0);
    /* u8 (a bool field) at its limit */
    gsq_hb_u8 b;
    uint8_t bv = 0;
    memset(&b, 0, sizeof b);
    gsq_hb_u8_see(&b, UINT8_MAX);
    CHECK(gsq_hb_u8_infer(&b, 1, 0, &bv) && bv == UINT8_MAX);
}

/* A heartbeat's value over a unit: the out-of-order bound rounded up, so
 * the inferred bound is never above (largest seen - bound) in microseconds. */
static void test_infer_each_unit(void)
{
    for (int u = 0; u < 4; u++) {
        uint64_t seen_usec = UINT64_C(5000000), ooo_usec = 1500001;
        gsq_hb_u64 h;
        uint64_t v = 0;
        memset(&h, 0, sizeof h);
        gsq_hb_u64_see(&h, gsq_usec_to_units(seen_usec, UNITS[u]));
        CHECK(gsq_hb_u64_infer(&h, 1, gsq_usec_to_units_up(ooo_usec, UNITS[u]), &v));
        CHECK(gsq_units_to_usec(v, UNITS[u]) <= seen_usec - ooo_usec);
        /* and short of it by less than a unit (a unit below a microsecond
         * converts back rounded down: compared in units) */
        CHECK(v + gsq_usec_to_units_up(ooo_usec, UNITS[u]) == gsq_usec_to_units(seen_usec, UNITS[u]));
        if (UNITS[u] >= GSQ_UNIT_NSEC_US)
            CHECK(gsq_units_to_usec(v + 1, UNITS[u]) > seen_usec - ooo_usec);
    }
}

/* The block forms against the branching ones on random rows. */
static void test_mask_forms(void)
{
    uint64_t rng = 88172645463325252ull;
    for (int round = 0; round < 2000; round++) {
        gsq_hb_u32 a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        if (round % 3) {
            a.promised = b.promised = 1;
            a.bound = b.bound = (uint32_t)(round * 7 % 1000);
        }
        if (round % 5 == 0) {
            a.seen = b.seen = 1;
            a.last = b.last = (uint32_t)(round % 700);
        }
        uint32_t drops = 0, any = 0, mx = 0, ref_drops = 0, n = 1 + (uint32_t)(round % 64);
        const uint8_t prom = b.promised;
        const uint32_t bound = b.bound;
        int same_live = 1;
        for (uint32_t i = 0; i < n; i++) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            uint32_t v = (uint32_t)(rng % 1200), live = 1;
            if (round % 11 == 0)
                v = UINT32_MAX - (uint32_t)(rng % 3);
            /* the branching form */
            int admitted = gsq_hb_u32_admits(&a, v);
            if (admitted)
                gsq_hb_u32_see(&a, v);
            else
                ref_drops++;
            /* the block form */
            gsq_hb_u32_mask_admit(&live, &drops, prom, bound, v);
            gsq_hb_u32_mask_see(&mx, &any, live, v);
            same_live &= (int)live == admitted;
        }
        if (any)
            gsq_hb_u32_see(&b, mx);
        if (!(same_live && drops == ref_drops && a.seen == b.seen &&
              (!a.seen || a.last == b.last)))
            CHECK(0);
    }
    check_passed++;
    /* a dead row's value is not the block's maximum */
    uint16_t mx = 0;
    uint32_t any = 0;
    gsq_hb_u16_mask_see(&mx, &any, 0, 60000);
    CHECK(mx == 0 && any == 0);
    gsq_hb_u16_mask_see(&mx, &any, 1, UINT16_MAX);
    CHECK(mx == UINT16_MAX && any == 1);
    uint64_t mx64 = 0;
    uint32_t live = 1, drops = 0;
    gsq_hb_u64_mask_admit(&live, &drops, 1, UINT64_MAX, UINT64_MAX - 1);
    CHECK(live == 0 && drops == 1);
    gsq_hb_u64_mask_admit(&live, &drops, 1, UINT64_MAX, 0);   /* dead stays dead, counted once */
    CHECK(live == 0 && drops == 1);
    gsq_hb_u64_mask_see(&mx64, &any, live, UINT64_MAX);
    CHECK(mx64 == 0);
}

int main(void)
{
    test_usec_to_units();
    test_usec_to_units_up();
    test_units_to_usec();
    test_float_units();
    test_units_less();
    test_admit_and_see();
    test_clock();
    test_promise();
    test_infer();
    test_infer_each_unit();
    test_mask_forms();
    return check_report();
}
