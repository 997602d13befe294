/*
 * source_time.c -- the timestamps of a source's records (gsq_record.h:
 * app_usec, arrival_usec, ts_unreadable): which sources have them, which
 * CSV columns give them, and the conversion of a column's value to
 * microseconds.
 *
 * Set-up (gsq_source_time_setup, before the source is opened, once its
 * LFTAs are known): a kind whose records always carry timestamps
 * (ops->timestamps: pcap) has them, and its reader stamps every record.
 * A source of CSV records (a CSV file, an Arrow stream) takes its time
 * column from its first running LFTA, in query-set order, whose
 * gsq_lfta_def declares one (time_pos != 0).  When LFTAs of one interface
 * declare different columns, the first one wins: the others still read
 * their own temporal fields, but the source's clock and replay follow the
 * first one's column.  Option arrival:NAME adds an arrival column (kinds
 * with ops->arrival: CSV files), with its field's time format and name.  Option time_unit:NAME gives the unit of
 * both (seconds by default).  The source has timestamps when it has either
 * column; with one only, the other time equals it.
 *
 * Conversion: an integer value v is v units; a float value is units with a
 * fraction, rounded to the nearest microsecond (nanoseconds are truncated
 * to microseconds).  A negative value, NaN, an infinity, a value beyond
 * 2^64 - 1 microseconds, or a value the reader could not convert cleanly
 * (empty, not a number, null) is unreadable: the record carries the
 * source's last readable timestamps and ts_unreadable, and is counted in
 * s->time_unreadable; it still reaches the LFTAs.
 */
#include <string.h>

#include "gsq_source_ops.h"

#define NS_PER_S 1000000000u

const char *gsq_time_unit_name(uint64_t unit_ns)
{
    switch (unit_ns) {
    case 1: return "ns";
    case 1000: return "us";
    case 1000000: return "ms";
    case NS_PER_S: return "s";
    default: return NULL;
    }
}

/* A type a time column can have. */
static int time_type_ok(int type)
{
    return type >= GSQ_T_USHORT && type <= GSQ_T_IP;
}

int gsq_source_time_setup(gsq_run *r, gsq_source *s)
{
    const gsq_iface_time *t = NULL;
    uint32_t i;
    for (i = 0; i < r->n_times; i++)
        if (strcmp(r->times[i].iface, s->iface) == 0)
            t = &r->times[i];
    s->unit_ns = t && t->unit_ns ? t->unit_ns : NS_PER_S;
    if (t && t->arrival_pos && !s->ops->arrival) {
        gsq_run_fail(r,
                     "interface '%s' (%s) cannot read an arrival column (option arrival:%s): "
                     "arrival columns are read from CSV files only%s",
                     s->iface, s->uri, s->iface,
                     s->ops->timestamps ? "; a packet's arrival is its timestamp"
                                        : "; give the arrival instants as the time column");
        return -1;
    }
    if (s->ops->timestamps) {
        s->has_ts = 1;
        return 0;
    }
    if (s->ops->lfta_kind != GSQ_SRC_CSV)
        return 0;
    for (i = 0; i < s->n_lftas && !s->time_pos; i++) {
        const gsq_lfta_def *d = s->lftas[i]->lfta;
        if (d->time_pos && time_type_ok(d->time_type)) { /* the first one wins */
            s->time_pos = d->time_pos;
            s->time_type = d->time_type;
            s->time_lfta = s->lftas[i];
        }
    }
    if (t && t->arrival_pos) {
        s->arrival_pos = t->arrival_pos;
        s->arrival_type = t->arrival_type ? t->arrival_type
                          : s->time_pos   ? s->time_type
                                          : GSQ_T_FLOAT;
        s->arrival_format = t->arrival_format;
        s->arrival_name = t->arrival_name;
    }
    s->has_ts = s->time_pos || s->arrival_pos;
    return 0;
}

/* u units of unit_ns nanoseconds (a power of 1000 from 1 to 10^9) in
 * microseconds; the caller rules out overflow. */
static inline uint64_t units_to_usec(uint64_t u, uint64_t unit_ns)
{
    return unit_ns >= 1000 ? u * (unit_ns / 1000) : u / (1000 / unit_ns);
}

/* v (of type `type`) in units of unit_ns nanoseconds as microseconds: 0,
 * or -1 when it is unreadable (above). */
static int to_usec(int type, const gsq_csv_value *v, uint64_t unit_ns, uint64_t *out)
{
    uint64_t u;
    switch (type) {
    case GSQ_T_INT:
    case GSQ_T_LLONG:
        if (v->i < 0)
            return -1;
        u = (uint64_t)v->i;
        break;
    case GSQ_T_FLOAT: {
        double us = v->f * ((double)unit_ns / 1000.0);
        if (!(us >= 0.0) || us >= 18446744073709551616.0) /* NaN fails the first */
            return -1;
        *out = (uint64_t)(us + 0.5);
        return 0;
    }
    case GSQ_T_USHORT:
    case GSQ_T_UINT:
    case GSQ_T_ULLONG:
    case GSQ_T_IP:
        u = v->u;
        break;
    default:
        return -1;
    }
    if (unit_ns >= 1000 && u > UINT64_MAX / (unit_ns / 1000))
        return -1;
    *out = units_to_usec(u, unit_ns);
    return 0;
}

/* The loop of gsq_source_stamp_uints for values of type T: below 2^32
 * units, units_to_usec cannot overflow (at most 10^6 microseconds a unit);
 * the compiler takes its test of the unit out of the loop. */
#define STAMP_UINTS(T)                                                          \
    do {                                                                        \
        const T *v_ = (const T *)vals;                                          \
        for (j = 0; j < n; j++)                                                 \
            app[j] = arrival[j] = units_to_usec(v_[j], unit_ns);                \
    } while (0)

void gsq_source_stamp_uints(gsq_source *s, const void *vals, uint32_t width, uint32_t n,
                            uint64_t *app, uint64_t *arrival, uint8_t *unreadable)
{
    const uint64_t unit_ns = s->unit_ns;
    uint32_t j;
    if (!n)
        return;
    if (width == 2)
        STAMP_UINTS(uint16_t);
    else
        STAMP_UINTS(uint32_t);
    memset(unreadable, 0, n);
    s->last_app_usec = app[n - 1];
    s->last_arrival_usec = arrival[n - 1];
}

void gsq_source_stamp(gsq_source *s, const gsq_csv_value *tv, const gsq_csv_value *av,
                      gsq_stamp *out)
{
    uint64_t app = 0, arr = 0;
    int ok = 1;
    if (s->time_pos)
        ok = tv && to_usec(s->time_type, tv, s->unit_ns, &app) == 0;
    if (ok && s->arrival_pos)
        ok = av && to_usec(s->arrival_type, av, s->unit_ns, &arr) == 0;
    if (!ok) {
        out->app_usec = s->last_app_usec;
        out->arrival_usec = s->last_arrival_usec;
        out->unreadable = 1;
        s->time_unreadable++;
        return;
    }
    if (!s->arrival_pos)
        arr = app;
    if (!s->time_pos)
        app = arr;
    s->last_app_usec = out->app_usec = app;
    s->last_arrival_usec = out->arrival_usec = arr;
    out->unreadable = 0;
}
