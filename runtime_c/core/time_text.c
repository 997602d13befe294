/*
 * time_text.c -- instants written as text in CSV fields (a PROTOCOL field's
 * time_format, gsq_csv_field): ISO-8601 date-times and epoch numbers, read
 * as (seconds since 1970-01-01T00:00:00Z, nanoseconds into that second),
 * and an instant expressed as a count of a time unit.
 *
 * ISO-8601, the forms gsqlc reads (and nothing looser):
 *     YYYY-MM-DD
 *     YYYY-MM-DD(T| )HH[:MM[:SS[.F]]][ZONE]
 * F is 1 to 9 digits of a second; ZONE is Z, or +HH, +HHMM or +HH:MM (or
 * '-'), the offset from UTC of the local time written; without a zone the
 * time is UTC.  Fields are checked (month 1-12, day within its month, leap
 * years included, hour 0-23, minute and second 0-59).  Epoch numbers:
 * [+-]DIGITS[.DIGITS] of seconds, milliseconds, microseconds or
 * nanoseconds; digits below a nanosecond are read and dropped.  Blanks
 * around either are ignored, as around every CSV number (parse.c).
 *
 * Invariants of an instant (sec, nsec): 0 <= nsec < 10^9, and the instant
 * is sec + nsec / 10^9 seconds (sec < 0 before 1970).  A count of a unit is
 * rounded down (towards the past), so that an instant is in the unit's
 * period that holds it, before 1970 too.
 */
#include <string.h>

#include "gsq_runtime.h"

#define NS_PER_S 1000000000u

/* Blanks around: trimmed. */
static void trim_blanks(const char **p, size_t *n)
{
    while (*n && (**p == ' ' || **p == '\t')) {
        (*p)++;
        (*n)--;
    }
    while (*n && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
        (*n)--;
}

/* Exactly `count` decimal digits at p[*i] into *out (and *i past them): 1,
 * or 0 when they are not there. */
static int digits(const char *p, size_t n, size_t *i, int count, uint32_t *out)
{
    uint32_t v = 0;
    int k;
    if (n - *i < (size_t)count)
        return 0;
    for (k = 0; k < count; k++) {
        char c = p[*i + (size_t)k];
        if (c < '0' || c > '9')
            return 0;
        v = v * 10 + (uint32_t)(c - '0');
    }
    *i += (size_t)count;
    *out = v;
    return 1;
}

/* Whether p[*i] is c (and *i past it). */
static int next_is(const char *p, size_t n, size_t *i, char c)
{
    if (*i < n && p[*i] == c) {
        (*i)++;
        return 1;
    }
    return 0;
}

static int leap_year(uint32_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static uint32_t days_in_month(uint32_t y, uint32_t m)
{
    static const uint8_t days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap_year(y) ? 29u : days[m - 1];
}

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar
 * (H. Hinnant's days_from_civil; m 1-12, d 1-31). */
static int64_t days_from_civil(int64_t y, uint32_t m, uint32_t d)
{
    int64_t era, yoe, doy, doe;
    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (int64_t)(m > 2 ? m - 3 : m + 9) + 2) / 5 + (int64_t)d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The fraction of a second after a '.' at p[*i]: 1 to 9 digits into
 * nanoseconds.  1, or 0 when it is not one. */
static int fraction(const char *p, size_t n, size_t *i, uint32_t *nsec)
{
    uint32_t v = 0, scale = NS_PER_S;
    size_t k = *i;
    while (k < n && p[k] >= '0' && p[k] <= '9' && k - *i < 9) {
        scale /= 10;
        v += (uint32_t)(p[k] - '0') * scale;
        k++;
    }
    if (k == *i || (k < n && p[k] >= '0' && p[k] <= '9'))
        return 0; /* no digit, or more than 9 */
    *i = k;
    *nsec = v;
    return 1;
}

/* A zone at p[*i] (Z, +HH, +HHMM, +HH:MM, or '-'): its offset east of UTC
 * in seconds.  1, or 0 when it is not one. */
static int zone(const char *p, size_t n, size_t *i, int32_t *offset)
{
    uint32_t hh, mm = 0;
    int sign;
    if (next_is(p, n, i, 'Z')) {
        *offset = 0;
        return 1;
    }
    if (*i >= n || (p[*i] != '+' && p[*i] != '-'))
        return 0;
    sign = p[(*i)++] == '-' ? -1 : 1;
    if (!digits(p, n, i, 2, &hh) || hh > 23)
        return 0;
    if (*i < n) { /* minutes, after an optional ':' */
        (void)next_is(p, n, i, ':');
        if (!digits(p, n, i, 2, &mm) || mm > 59)
            return 0;
    }
    *offset = sign * (int32_t)(hh * 3600 + mm * 60);
    return 1;
}

/* ISO-8601 text (trimmed) as an instant: 0, or -1 when it is not of the
 * forms above. */
static int parse_iso8601(const char *p, size_t n, int64_t *sec, uint32_t *nsec)
{
    size_t i = 0;
    uint32_t y, mo, d, h = 0, mi = 0, s = 0, ns = 0;
    int32_t off = 0;
    if (!digits(p, n, &i, 4, &y) || !next_is(p, n, &i, '-') || !digits(p, n, &i, 2, &mo) ||
        !next_is(p, n, &i, '-') || !digits(p, n, &i, 2, &d))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
        return -1;
    if (i < n) {
        if (p[i] != 'T' && p[i] != ' ')
            return -1;
        i++;
        if (!digits(p, n, &i, 2, &h) || h > 23)
            return -1;
        if (next_is(p, n, &i, ':')) {
            if (!digits(p, n, &i, 2, &mi) || mi > 59)
                return -1;
            if (next_is(p, n, &i, ':')) {
                if (!digits(p, n, &i, 2, &s) || s > 59)
                    return -1;
                if (next_is(p, n, &i, '.') && !fraction(p, n, &i, &ns))
                    return -1;
            }
        }
        if (i < n && !zone(p, n, &i, &off))
            return -1;
    }
    if (i != n)
        return -1;
    *sec = days_from_civil(y, mo, d) * 86400 + (int64_t)(h * 3600 + mi * 60 + s) - off;
    *nsec = ns;
    return 0;
}

/* An epoch number (trimmed) of units of unit_ns nanoseconds (a power of
 * 1000 from 1 to 10^9) as an instant: 0, or -1 when it is not one or its
 * seconds do not fit 63 bits. */
static int parse_epoch(const char *p, size_t n, uint32_t unit_ns, int64_t *sec, uint32_t *nsec)
{
    const uint64_t per_sec = NS_PER_S / unit_ns;
    uint64_t mag = 0, s;
    uint32_t frac = 0, scale = unit_ns, total;
    size_t i = 0;
    int neg = 0, any = 0;
    if (i < n && (p[i] == '+' || p[i] == '-'))
        neg = p[i++] == '-';
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
        uint64_t dg = (uint64_t)(p[i] - '0');
        if (mag > (UINT64_MAX - dg) / 10)
            return -1;
        mag = mag * 10 + dg;
        any = 1;
    }
    if (!any)
        return -1;
    if (next_is(p, n, &i, '.')) {
        size_t start = i;
        for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
            scale /= 10; /* 0 past a nanosecond: the digit is dropped */
            frac += (uint32_t)(p[i] - '0') * scale;
        }
        if (i == start)
            return -1;
    }
    if (i != n)
        return -1;
    s = mag / per_sec;
    total = (uint32_t)(mag % per_sec) * unit_ns + frac; /* < 10^9 */
    if (s > (uint64_t)INT64_MAX - 1)
        return -1;
    if (neg && total) {
        *sec = -(int64_t)s - 1;
        *nsec = NS_PER_S - total;
    } else {
        *sec = neg ? -(int64_t)s : (int64_t)s;
        *nsec = total;
    }
    return 0;
}

int gsq_parse_instant(const char *p, size_t n, int format, int64_t *sec, uint32_t *nsec)
{
    *sec = 0;
    *nsec = 0;
    trim_blanks(&p, &n);
    switch (format) {
    case GSQ_TF_ISO8601: return parse_iso8601(p, n, sec, nsec);
    case GSQ_TF_EPOCH_S: return parse_epoch(p, n, NS_PER_S, sec, nsec);
    case GSQ_TF_EPOCH_MS: return parse_epoch(p, n, 1000000u, sec, nsec);
    case GSQ_TF_EPOCH_US: return parse_epoch(p, n, 1000u, sec, nsec);
    case GSQ_TF_EPOCH_NS: return parse_epoch(p, n, 1u, sec, nsec);
    default: return -1;
    }
}

int gsq_instant_units(int64_t sec, uint32_t nsec, uint64_t unit_ns, int64_t *out)
{
    int64_t per_sec, whole;
    if (unit_ns == 0 || unit_ns > NS_PER_S || NS_PER_S % unit_ns != 0)
        return -1;
    per_sec = (int64_t)(NS_PER_S / unit_ns);
    if (__builtin_mul_overflow(sec, per_sec, &whole) ||
        __builtin_add_overflow(whole, (int64_t)(nsec / unit_ns), out))
        return -1;
    return 0;
}

const char *gsq_time_format_name(int format)
{
    switch (format) {
    case GSQ_TF_ISO8601: return "iso8601";
    case GSQ_TF_EPOCH_S: return "epoch_s";
    case GSQ_TF_EPOCH_MS: return "epoch_ms";
    case GSQ_TF_EPOCH_US: return "epoch_us";
    case GSQ_TF_EPOCH_NS: return "epoch_ns";
    default: return NULL;
    }
}
