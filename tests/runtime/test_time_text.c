/*
 * test_time_text.c -- instants written as text (core/time_text.c): the
 * ISO-8601 forms and epoch numbers a CSV field's time_format reads, what is
 * refused, and an instant as a count of a unit.  Expected values worked
 * out by hand (date -u -d ... +%s).
 */
#include <stdint.h>
#include <string.h>

#include "gsq_runtime.h"
#include "unit_check.h"

/* the runtime's objects are linked whole: its one query set (none) */
const gsq_queryset_def gsq_queryset = {0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, NULL};

/* p in `format` reads as (sec, nsec) */
static int reads(int format, const char *p, int64_t sec, uint32_t nsec)
{
    int64_t s = 12345;
    uint32_t ns = 12345;
    int rc = gsq_parse_instant(p, strlen(p), format, &s, &ns);
    if (rc != 0 || s != sec || ns != nsec)
        printf("  '%s': rc %d, %lld s %u ns, expected %lld s %u ns\n", p, rc, (long long)s,
               (unsigned)ns, (long long)sec, (unsigned)nsec);
    return rc == 0 && s == sec && ns == nsec;
}

/* p is no instant in `format` (and both results are 0) */
static int refused(int format, const char *p)
{
    int64_t s = 12345;
    uint32_t ns = 12345;
    int rc = gsq_parse_instant(p, strlen(p), format, &s, &ns);
    if (rc != -1)
        printf("  '%s': read as %lld s %u ns\n", p, (long long)s, (unsigned)ns);
    return rc == -1 && s == 0 && ns == 0;
}

static int units(int64_t sec, uint32_t nsec, uint64_t unit_ns, int64_t want)
{
    int64_t got = 0;
    return gsq_instant_units(sec, nsec, unit_ns, &got) == 0 && got == want;
}

static void test_iso8601(void)
{
    const int F = GSQ_TF_ISO8601;
    /* 2026-03-01T12:00:05Z is 1772366405 */
    CHECK(reads(F, "2026-03-01T12:00:05Z", 1772366405, 0));
    CHECK(reads(F, "2026-03-01 12:00:05.250", 1772366405, 250000000));
    CHECK(reads(F, "2026-03-01T12:00:05.123456789", 1772366405, 123456789));
    CHECK(reads(F, "2026-03-01T12:00:05+01:00", 1772366405 - 3600, 0));
    CHECK(reads(F, "2026-03-01T12:00:05+01", 1772366405 - 3600, 0));
    CHECK(reads(F, "2026-03-01T12:00:05-0130", 1772366405 + 5400, 0));
    CHECK(reads(F, "2026-03-01T12:00:05.5Z", 1772366405, 500000000));
    CHECK(reads(F, "2026-03-01T12:30", 1772368200, 0));
    CHECK(reads(F, "2026-03-01T12", 1772366400, 0));
    CHECK(reads(F, "2026-03-01T12Z", 1772366400, 0));
    CHECK(reads(F, "2026-03-01", 1772323200, 0));
    CHECK(reads(F, " 2026-03-01T12:00:05Z\t", 1772366405, 0));
    CHECK(reads(F, "2024-02-29T00:00:00", 1709164800, 0));        /* a leap day */
    CHECK(reads(F, "2000-02-29", 951782400, 0));                  /* divisible by 400 */
    CHECK(reads(F, "1970-01-01T00:00:00.000000001Z", 0, 1));
    CHECK(reads(F, "1969-12-31T23:59:59.5", -1, 500000000));      /* before 1970 */
    CHECK(reads(F, "0001-01-01", -62135596800LL, 0));
    CHECK(reads(F, "9999-12-31T23:59:59", 253402300799LL, 0));
    CHECK(reads(F, "2026-01-01T00:30:00+01:00", 1767227400 - 3600, 0)); /* 2025-12-31 UTC */
    /* not of the forms, or not a day or time */
    CHECK(refused(F, "2026-02-29"));
    CHECK(refused(F, "1900-02-29"));
    CHECK(refused(F, "2026-13-01"));
    CHECK(refused(F, "2026-00-10"));
    CHECK(refused(F, "2026-04-31"));
    CHECK(refused(F, "2026-03-01T24:00"));
    CHECK(refused(F, "2026-03-01T12:60"));
    CHECK(refused(F, "2026-03-01T12:00:60"));
    CHECK(refused(F, "2026-03-01T12:00:05."));
    CHECK(refused(F, "2026-03-01T12:00:05.1234567891"));
    CHECK(refused(F, "2026-03-01T12:00:05,5"));
    CHECK(refused(F, "2026-03-01T12:00.5"));
    CHECK(refused(F, "2026-03-01Z"));
    CHECK(refused(F, "2026-3-1"));
    CHECK(refused(F, "2026-03-01t12:00"));
    CHECK(refused(F, "2026-03-01T12:00:05+1:00"));
    CHECK(refused(F, "2026-03-01T12:00:05+24:00"));
    CHECK(refused(F, "2026-03-01T12:00:05+01:60"));
    CHECK(refused(F, "2026-03-01T12:00:05 Z"));
    CHECK(refused(F, "2026-03-01T12:00:05Zx"));
    CHECK(refused(F, "2026-03-01T"));
    CHECK(refused(F, "20260301T120005"));
    CHECK(refused(F, "2026"));
    CHECK(refused(F, ""));
    CHECK(refused(F, "ts"));
    CHECK(refused(F, "1772366405"));
}

static void test_epoch(void)
{
    CHECK(reads(GSQ_TF_EPOCH_S, "1772366405", 1772366405, 0));
    CHECK(reads(GSQ_TF_EPOCH_S, "+5", 5, 0));
    CHECK(reads(GSQ_TF_EPOCH_S, "1772366405.25", 1772366405, 250000000));
    CHECK(reads(GSQ_TF_EPOCH_S, " 7 ", 7, 0));
    CHECK(reads(GSQ_TF_EPOCH_MS, "1772366405250", 1772366405, 250000000));
    CHECK(reads(GSQ_TF_EPOCH_MS, "-1500", -2, 500000000));
    CHECK(reads(GSQ_TF_EPOCH_MS, "0.5", 0, 500000));
    CHECK(reads(GSQ_TF_EPOCH_US, "1772366405250001", 1772366405, 250001000));
    CHECK(reads(GSQ_TF_EPOCH_NS, "-1", -1, 999999999));
    CHECK(reads(GSQ_TF_EPOCH_NS, "1.9", 0, 1));  /* below a nanosecond: dropped */
    CHECK(reads(GSQ_TF_EPOCH_NS, "18446744073709551615", 18446744073LL, 709551615));
    CHECK(refused(GSQ_TF_EPOCH_NS, "18446744073709551616")); /* beyond 64 bits */
    CHECK(refused(GSQ_TF_EPOCH_S, "9223372036854775807"));   /* beyond the seconds' range */
    CHECK(refused(GSQ_TF_EPOCH_MS, ""));
    CHECK(refused(GSQ_TF_EPOCH_MS, "-"));
    CHECK(refused(GSQ_TF_EPOCH_MS, "1."));
    CHECK(refused(GSQ_TF_EPOCH_MS, ".5"));
    CHECK(refused(GSQ_TF_EPOCH_MS, "1e3"));
    CHECK(refused(GSQ_TF_EPOCH_MS, "12a"));
    CHECK(refused(GSQ_TF_EPOCH_MS, "0x10"));
    CHECK(refused(GSQ_TF_EPOCH_MS, "2026-03-01"));
    CHECK(refused(GSQ_TF_NONE, "1"));
    CHECK(refused(99, "1"));
}

static void test_units(void)
{
    CHECK(units(1772366405, 250000000, 1000000000u, 1772366405));
    CHECK(units(1772366405, 250000000, 1000000u, 1772366405250LL));
    CHECK(units(1772366405, 250000001, 1000u, 1772366405250000LL));
    CHECK(units(1772366405, 250000001, 1u, 1772366405250000001LL));
    CHECK(units(-1, 500000000, 1000000000u, -1));       /* rounded down, before 1970 too */
    CHECK(units(-1, 500000000, 1000000u, -500));
    {
        int64_t out;
        CHECK(gsq_instant_units(INT64_MAX / 10, 0, 1u, &out) == -1);  /* beyond 2262 in ns */
        CHECK(gsq_instant_units(INT64_MIN / 10, 0, 1000u, &out) == -1);
        CHECK(gsq_instant_units(1, 0, 7u, &out) == -1);               /* not a unit */
        CHECK(gsq_instant_units(1, 0, 0u, &out) == -1);
    }
    CHECK(strcmp(gsq_time_format_name(GSQ_TF_ISO8601), "iso8601") == 0);
    CHECK(strcmp(gsq_time_format_name(GSQ_TF_EPOCH_US), "epoch_us") == 0);
    CHECK(gsq_time_format_name(GSQ_TF_NONE) == NULL);
}

int main(void)
{
    test_iso8601();
    test_epoch();
    test_units();
    return check_report();
}
