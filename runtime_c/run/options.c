/*
 * options.c -- gsqlc_set_option and gsqlc_set_param: the run's settings,
 * checked and stored in the run before it starts.
 */
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "gsq_run_steps.h"

static int parse_u32(const char *s, uint32_t *out)
{
    uint32_t v;
    return (s && *s && gsq_parse_uint(s, strlen(s), &v) == 0) ? (*out = v, 0) : -1;
}

#define GSQ_MAX_SECONDS_USEC 1000000000000000ull /* 10^9 seconds */

/* A number of seconds ("2", "0.5", "1e-3", "+1.0") to microseconds, rounded
 * to the nearest.  0 on success; -1 not a number, -2 negative, -3 more
 * than 10^9 seconds, -4 positive but below half a microsecond.  Written out
 * rather than strtod so that the locale's decimal point cannot matter. */
static int parse_seconds(const char *s, uint64_t *usec)
{
    const char *p = s;
    uint64_t m = 0;
    int e = 0, digits = 0, sig = 0, neg = 0;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (sig < 18) {
            m = m * 10 + (uint64_t)(*p - '0');
            sig += m != 0;
        } else {
            e++;
        }
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (sig < 18) {
                m = m * 10 + (uint64_t)(*p - '0');
                sig += m != 0;
                e--;
            }
    }
    if (!digits)
        return -1;
    if (*p == 'e' || *p == 'E') {
        int es = 1, ev = 0, ed = 0;
        p++;
        if (*p == '+' || *p == '-')
            es = *p++ == '-' ? -1 : 1;
        for (; *p >= '0' && *p <= '9'; p++, ed++)
            if (ev < 10000)
                ev = ev * 10 + (*p - '0');
        if (!ed)
            return -1;
        e += es * ev;
    }
    if (*p)
        return -1;
    if (m == 0) {
        *usec = 0;
        return 0;
    }
    if (neg)
        return -2;
    e += 6; /* seconds -> microseconds */
    for (; e > 0; e--) {
        if (m > GSQ_MAX_SECONDS_USEC)
            return -3;
        m *= 10;
    }
    for (; e < -1 && m; e++)
        m /= 10;
    if (e == -1)
        m = (m + 5) / 10;
    if (m > GSQ_MAX_SECONDS_USEC)
        return -3;
    if (m == 0)
        return -4;
    *usec = m;
    return 0;
}

/* max_skew:NAME and out_of_order:NAME: seconds >= 0 per interface, kept in
 * *arr (the option `what` names it in errors). */
static int set_iface_seconds(gsq_run *r, const char *what, gsq_skew **arr, uint32_t *n,
                             const char *iface, const char *value)
{
    uint64_t us;
    uint32_t i;
    gsq_skew *ns;
    int rc = parse_seconds(value, &us);
    if (!*iface) {
        gsq_set_error(r, "%s needs an interface name: %s:NAME", what, what);
        return -1;
    }
    if (rc == -2 || rc == -1) {
        gsq_set_error(r, "%s:%s must be a number of seconds >= 0 (e.g. 2 or 0.5), got '%s'",
                      what, iface, value);
        return -1;
    }
    if (rc == -3) {
        gsq_set_error(r, "%s:%s '%s' is too large (at most 1000000000 seconds)", what, iface,
                      value);
        return -1;
    }
    if (rc == -4)
        us = 0; /* below a microsecond: none */
    for (i = 0; i < *n; i++)
        if (strcmp((*arr)[i].iface, iface) == 0) {
            (*arr)[i].usec = us;
            return 0;
        }
    ns = realloc(*arr, (*n + 1) * sizeof *ns);
    if (!ns)
        goto oom;
    *arr = ns;
    ns[*n].iface = gsq_strdup(iface);
    if (!ns[*n].iface)
        goto oom;
    ns[*n].usec = us;
    (*n)++;
    return 0;
oom:
    gsq_set_error(r, "out of memory");
    return -1;
}

/* skew:FROM:TO -- "AFTER,BOUND" pairs of seconds, several separated by ';'
 * (a bound set, seed 002 section 3.1); replaces an earlier setting. */
static int set_skew_decl(gsq_run *r, const char *names, const char *value)
{
    const char *colon = strchr(names, ':'), *p = value;
    gsq_bound_set set = {NULL, 0, 0};
    gsq_skew_decl *nd;
    uint32_t i;
    char buf[128];
    if (!colon || colon == names || !colon[1] || strchr(colon + 1, ':')) {
        gsq_set_error(r, "skew needs two interface names: skew:FROM:TO, got 'skew:%s'", names);
        return -1;
    }
    if ((size_t)(colon - names) == strlen(colon + 1) &&
        strncmp(names, colon + 1, (size_t)(colon - names)) == 0) {
        gsq_set_error(r, "skew:%s names one interface twice (its own disorder is out_of_order)",
                      names);
        return -1;
    }
    for (;;) {
        const char *end = strchr(p, ';'), *comma;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        uint64_t t, d;
        int rt, rd;
        if (len >= sizeof buf)
            goto bad;
        memcpy(buf, p, len);
        buf[len] = 0;
        comma = strchr(buf, ',');
        if (!comma)
            goto bad;
        buf[comma - buf] = 0;
        rt = parse_seconds(buf, &t);
        rd = parse_seconds(comma + 1, &d);
        if (rt == -1 || rt == -2 || rt == -3 || rd == -1 || rd == -2 || rd == -3)
            goto bad;
        if (gsq_bound_set_add(&set, rt == -4 ? 0 : t, rd == -4 ? 0 : d) != 0)
            goto oom;
        if (!end)
            break;
        p = end + 1;
    }
    for (i = 0; i < r->n_skew_decls; i++)
        if (strlen(r->skew_decls[i].from) == (size_t)(colon - names) &&
            strncmp(r->skew_decls[i].from, names, (size_t)(colon - names)) == 0 &&
            strcmp(r->skew_decls[i].to, colon + 1) == 0) {
            free(r->skew_decls[i].set.p);
            r->skew_decls[i].set = set;
            return 0;
        }
    nd = realloc(r->skew_decls, (r->n_skew_decls + 1) * sizeof *nd);
    if (!nd)
        goto oom;
    r->skew_decls = nd;
    nd += r->n_skew_decls;
    nd->from = malloc((size_t)(colon - names) + 1);
    if (nd->from) {
        memcpy(nd->from, names, (size_t)(colon - names));
        nd->from[colon - names] = 0;
    }
    nd->to = gsq_strdup(colon + 1);
    nd->set = set;
    if (!nd->from || !nd->to) {
        free(nd->from);
        free(nd->to);
        return gsq_set_error(r, "out of memory"), -1;
    }
    r->n_skew_decls++;
    return 0;
bad:
    free(set.p);
    gsq_set_error(r, "skew:%s must be AFTER,BOUND seconds >= 0 (wall-clock delay, "
                  "application-time bound), several separated by ';', got '%s'", names, value);
    return -1;
oom:
    free(set.p);
    gsq_set_error(r, "out of memory");
    return -1;
}

/* A plain number >= 0 (hb_alpha, in [0, 1]); 0 or -1. */
static int parse_unit_real(const char *s, double *out)
{
    uint64_t us;
    int rc = parse_seconds(s, &us); /* microseconds of "seconds": 6 decimals */
    if (rc == -1 || rc == -2 || rc == -3)
        return -1;
    *out = rc == -4 ? 0.0 : (double)us / 1e6;
    return *out <= 1.0 ? 0 : -1;
}

/* The entry of interface iface in r->times, added if need be (NULL: out
 * of memory, error set). */
static gsq_iface_time *iface_time(gsq_run *r, const char *iface)
{
    uint32_t i;
    gsq_iface_time *nt;
    for (i = 0; i < r->n_times; i++)
        if (strcmp(r->times[i].iface, iface) == 0)
            return &r->times[i];
    nt = realloc(r->times, (r->n_times + 1) * sizeof *nt);
    if (!nt)
        goto oom;
    r->times = nt;
    nt = &r->times[r->n_times];
    memset(nt, 0, sizeof *nt);
    nt->iface = gsq_strdup(iface);
    if (!nt->iface)
        goto oom;
    r->n_times++;
    return nt;
oom:
    gsq_set_error(r, "out of memory");
    return NULL;
}

const gsq_iface_time *gsq_iface_settings(const gsq_run *r, const char *iface)
{
    uint32_t i;
    for (i = 0; iface && i < r->n_times; i++)
        if (strcmp(r->times[i].iface, iface) == 0)
            return &r->times[i];
    return NULL;
}

/* pcap_range:NAME = START:END, byte offsets of record boundaries of a
 * classic pcap file (gsqlc_pcap_cuts gives them; checked at open) */
static int set_pcap_range(gsq_run *r, const char *iface, const char *value)
{
    const char *colon = strchr(value, ':');
    uint64_t a, b;
    gsq_iface_time *t;
    if (!*iface) {
        gsq_set_error(r, "pcap_range needs an interface name: pcap_range:NAME");
        return -1;
    }
    if (!colon || colon == value || gsq_parse_ullong(value, (size_t)(colon - value), &a) != 0 ||
        gsq_parse_ullong(colon + 1, strlen(colon + 1), &b) != 0 || a > b) {
        gsq_set_error(r, "pcap_range:%s must be START:END (byte offsets, START <= END), got '%s'",
                      iface, value);
        return -1;
    }
    t = iface_time(r, iface);
    if (!t)
        return -1;
    t->has_range = 1;
    t->range_start = a;
    t->range_end = b;
    return 0;
}

/* recording:NAME = 0 | 1: whether the Arrow stream bound to NAME is
 * recorded data (a table: replayed in time beside other recordings) or a
 * feed read as it comes (the default for Arrow streams). */
static int set_recording(gsq_run *r, const char *iface, const char *value)
{
    gsq_iface_time *t;
    uint8_t b;
    if (!*iface) {
        gsq_set_error(r, "recording needs an interface name: recording:NAME");
        return -1;
    }
    if (gsq_parse_bool(value, strlen(value), &b) != 0) {
        gsq_set_error(r, "recording:%s must be 0 or 1, got '%s'", iface, value);
        return -1;
    }
    if (!(t = iface_time(r, iface)))
        return -1;
    t->recording = b;
    return 0;
}

/* time_unit:NAME = s | ms | us | ns */
static int set_time_unit(gsq_run *r, const char *iface, const char *value)
{
    static const char *const names[] = {"ns", "us", "ms", "s"};
    uint64_t ns = 1;
    gsq_iface_time *t;
    int i;
    if (!*iface) {
        gsq_set_error(r, "time_unit needs an interface name: time_unit:NAME");
        return -1;
    }
    for (i = 0; i < 4 && strcmp(names[i], value) != 0; i++)
        ns *= 1000;
    if (i == 4) {
        gsq_set_error(r, "time_unit:%s must be s, ms, us or ns, got '%s'", iface, value);
        return -1;
    }
    t = iface_time(r, iface);
    if (!t)
        return -1;
    t->unit_ns = ns;
    return 0;
}

/* arrival:NAME = POS or POS:TYPE (TYPE a numeric GSQL type name) */
static int set_arrival(gsq_run *r, const char *iface, const char *value)
{
    static const int numeric[] = {GSQ_T_USHORT, GSQ_T_UINT, GSQ_T_INT, GSQ_T_ULLONG,
                                  GSQ_T_LLONG, GSQ_T_FLOAT};
    const char *colon = strchr(value, ':');
    size_t n = colon ? (size_t)(colon - value) : strlen(value);
    uint32_t pos;
    int type = 0;
    gsq_iface_time *t;
    if (!*iface) {
        gsq_set_error(r, "arrival needs an interface name: arrival:NAME");
        return -1;
    }
    if (n == 0 || gsq_parse_uint(value, n, &pos) != 0 || pos == 0 || pos > (1u << 30))
        goto bad;
    if (colon) {
        size_t i;
        for (i = 0; i < sizeof numeric / sizeof numeric[0]; i++)
            if (strcmp(colon + 1, gsq_type_name(numeric[i])) == 0)
                type = numeric[i];
        if (!type)
            goto bad;
    }
    t = iface_time(r, iface);
    if (!t)
        return -1;
    t->arrival_pos = pos;
    t->arrival_type = type;
    return 0;
bad:
    gsq_set_error(r, "arrival:%s must be a CSV position, optionally with a numeric type "
                     "(e.g. 3 or 3:ullong), got '%s'", iface, value);
    return -1;
}

GSQ_EXPORT int gsqlc_set_option(gsq_run *r, const char *key, const char *value)
{
    if (!key || !value) {
        gsq_set_error(r, "option name and value must not be NULL");
        return -1;
    }
    if (r->started) {
        gsq_set_error(r, "option '%s' set after the run started", key);
        return -1;
    }
    if (strcmp(key, "csv_separator") == 0) {
        char c;
        if (strcmp(value, "\\t") == 0 || strcmp(value, "tab") == 0)
            c = '\t';
        else if (strlen(value) == 1)
            c = value[0];
        else {
            gsq_set_error(r, "csv_separator must be one character, got '%s'", value);
            return -1;
        }
        if (c == '"' || c == '\n' || c == '\r') {
            gsq_set_error(r, "csv_separator cannot be a quote or a line break");
            return -1;
        }
        r->csv_sep = c;
    } else if (strcmp(key, "csv_strict") == 0) {
        uint8_t b;
        if (gsq_parse_bool(value, strlen(value), &b) != 0) {
            gsq_set_error(r, "csv_strict must be 0 or 1, got '%s'", value);
            return -1;
        }
        r->csv_strict = b;
    } else if (strcmp(key, "arrow_heartbeats") == 0 || strcmp(key, "final_heartbeat") == 0 ||
               strcmp(key, "arrow_flush") == 0) {
        int *flag = strcmp(key, "arrow_heartbeats") == 0 ? &r->arrow_heartbeats
                    : strcmp(key, "final_heartbeat") == 0 ? &r->final_heartbeat
                                                          : &r->arrow_flush;
        uint8_t b;
        if (gsq_parse_bool(value, strlen(value), &b) != 0) {
            gsq_set_error(r, "%s must be 0 or 1, got '%s'", key, value);
            return -1;
        }
        *flag = b;
    } else if (strcmp(key, "clock") == 0) {
        if (strcmp(value, "auto") == 0) {
            r->clock_mode = GSQ_CLOCK_AUTO;
        } else if (strcmp(value, "wall") == 0) {
            r->clock_mode = GSQ_CLOCK_WALL;
        } else if (strcmp(value, "data") == 0) {
            r->clock_mode = GSQ_CLOCK_DATA;
        } else if (strncmp(value, "fixed:", 6) == 0 &&
                   parse_u32(value + 6, &r->clock_fixed) == 0) {
            r->clock_mode = GSQ_CLOCK_FIXED;
        } else {
            gsq_set_error(r, "clock must be auto, wall, data or fixed:SECONDS, got '%s'", value);
            return -1;
        }
    } else if (strcmp(key, "columnar") == 0) {
        if (strcmp(value, "auto") == 0) {
            r->columnar = 1;
        } else if (strcmp(value, "off") == 0) {
            r->columnar = 0;
        } else {
            gsq_set_error(r, "columnar must be auto or off, got '%s'", value);
            return -1;
        }
    } else if (strcmp(key, "batch") == 0) {
        uint32_t b;
        if (parse_u32(value, &b) != 0 || b == 0 || b > (1u << 20)) {
            gsq_set_error(r, "batch must be an integer from 1 to 1048576, got '%s'", value);
            return -1;
        }
        r->batch = b;
        r->batch_given = 1;
    } else if (strcmp(key, "heartbeat_interval") == 0) {
        uint64_t us = 0;
        int rc = strcmp(value, "off") == 0 ? 0 : parse_seconds(value, &us);
        if (rc == -1) {
            gsq_set_error(r, "heartbeat_interval must be a number of seconds (e.g. 1 or 0.5), or 0 "
                         "or off to disable heartbeats, got '%s'", value);
            return -1;
        }
        if (rc == -2) {
            gsq_set_error(r, "heartbeat_interval must not be negative, got '%s' (0 or off disables "
                         "heartbeats)", value);
            return -1;
        }
        if (rc == -3 || rc == -4) {
            gsq_set_error(r, "heartbeat_interval '%s' is out of range (from 0.000001 to 1000000000 "
                         "seconds; 0 or off disables heartbeats)", value);
            return -1;
        }
        r->hb_interval_usec = us;
    } else if (strncmp(key, "recording:", 10) == 0) {
        return set_recording(r, key + 10, value);
    } else if (strncmp(key, "max_skew:", 9) == 0) {
        return set_iface_seconds(r, "max_skew", &r->skews, &r->n_skews, key + 9, value);
    } else if (strncmp(key, "out_of_order:", 13) == 0) {
        return set_iface_seconds(r, "out_of_order", &r->ooos, &r->n_ooos, key + 13, value);
    } else if (strncmp(key, "latency:", 8) == 0) {
        return set_iface_seconds(r, "latency", &r->latencies, &r->n_latencies, key + 8, value);
    } else if (strncmp(key, "skew:", 5) == 0) {
        return set_skew_decl(r, key + 5, value);
    } else if (strcmp(key, "hb_estimate") == 0) {
        if (strcmp(value, "given") == 0)
            r->hb_estimate = GSQ_EST_GIVEN;
        else if (strcmp(value, "max") == 0)
            r->hb_estimate = GSQ_EST_MAX;
        else if (strcmp(value, "adaptive") == 0)
            r->hb_estimate = GSQ_EST_ADAPTIVE;
        else {
            gsq_set_error(r, "hb_estimate must be given, max or adaptive, got '%s'", value);
            return -1;
        }
    } else if (strcmp(key, "hb_level") == 0) {
        if (strcmp(value, "operator") == 0)
            r->hb_level = GSQ_LEVEL_OPERATOR;
        else if (strcmp(value, "query") == 0)
            r->hb_level = GSQ_LEVEL_QUERY;
        else {
            gsq_set_error(r, "hb_level must be operator or query, got '%s'", value);
            return -1;
        }
    } else if (strcmp(key, "hb_horizon") == 0 || strcmp(key, "hb_timeout") == 0) {
        uint64_t us = 0;
        int rc = parse_seconds(value, &us);
        int horizon = key[3] == 'h';
        if (rc == -1 || rc == -2 || rc == -3 || (horizon && (rc == -4 || us == 0))) {
            gsq_set_error(r, "%s must be a number of seconds %s (at most 1000000000), got '%s'",
                          key, horizon ? "> 0" : ">= 0 (0: none)", value);
            return -1;
        }
        *(horizon ? &r->hb_horizon_usec : &r->hb_timeout_usec) = rc == -4 ? 0 : us;
    } else if (strcmp(key, "hb_window") == 0) {
        uint32_t n;
        if (parse_u32(value, &n) != 0 || n == 0) {
            gsq_set_error(r, "hb_window must be an integer >= 1 (records), got '%s'", value);
            return -1;
        }
        r->hb_window = n;
    } else if (strcmp(key, "hb_alpha") == 0) {
        if (parse_unit_real(value, &r->hb_alpha) != 0) {
            gsq_set_error(r, "hb_alpha must be a number from 0 to 1, got '%s'", value);
            return -1;
        }
    } else if (strncmp(key, "time_unit:", 10) == 0) {
        return set_time_unit(r, key + 10, value);
    } else if (strncmp(key, "arrival:", 8) == 0) {
        return set_arrival(r, key + 8, value);
    } else if (strncmp(key, "prop:", 5) == 0) {
        /* prop:IFACE:KEY -- an interface property (@KEY in the LFTAs that
         * read IFACE), kept as the parameter "@IFACE:KEY" (node.c) */
        const char *rest = key + 5, *colon = strrchr(rest, ':');
        char *name;
        int rc;
        if (!colon || colon == rest || !colon[1]) {
            gsq_set_error(r, "option '%s': expected prop:INTERFACE:PROPERTY", key);
            return -1;
        }
        name = malloc(strlen(rest) + 2);
        if (!name) {
            gsq_set_error(r, "out of memory");
            return -1;
        }
        name[0] = '@';
        strcpy(name + 1, rest);
        rc = gsqlc_set_param(r, name, value);
        free(name);
        return rc;
    } else if (strncmp(key, "pcap_range:", 11) == 0) {
        return set_pcap_range(r, key + 11, value);
    } else if (strcmp(key, "pcap_reader") == 0) {
        if (strcmp(value, "mmap") == 0) {
            r->pcap_reader = GSQ_PCAP_READER_MMAP;
        } else if (strcmp(value, "libpcap") == 0) {
            r->pcap_reader = GSQ_PCAP_READER_LIBPCAP;
        } else {
            gsq_set_error(r, "pcap_reader must be mmap or libpcap, got '%s'", value);
            return -1;
        }
    } else if (strcmp(key, "stall_intervals") == 0) {
        uint32_t n;
        if (parse_u32(value, &n) != 0 || n == 0 || n > 1000000u) {
            gsq_set_error(r, "stall_intervals must be an integer from 1 to 1000000, got '%s'", value);
            return -1;
        }
        r->stall_intervals = n;
    } else if (strcmp(key, "max_groups") == 0) {
        uint64_t n;
        if (!*value || gsq_parse_ullong(value, strlen(value), &n) != 0 || n == 0) {
            gsq_set_error(r, "max_groups must be a positive integer, got '%s'", value);
            return -1;
        }
        r->max_groups = n;
    } else if (strcmp(key, "ip_format") == 0) {
        if (strcmp(value, "text") != 0 && strcmp(value, "int") != 0) {
            gsq_set_error(r, "ip_format must be text or int, got '%s'", value);
            return -1;
        }
        r->ip_int = strcmp(value, "int") == 0;
    } else if (strcmp(key, "trace") == 0) {
        char *p;
        if (!*value) {
            gsq_set_error(r, "trace needs a file path");
            return -1;
        }
        p = gsq_strdup(value);
        if (!p) {
            gsq_set_error(r, "out of memory");
            return -1;
        }
        free(r->trace_path);
        r->trace_path = p;
    } else {
        gsq_set_error(r, "unknown option '%s' (known: csv_separator, csv_strict, clock, batch, "
                     "columnar, heartbeat_interval, max_skew:NAME, out_of_order:NAME, "
                     "latency:NAME, skew:FROM:TO, hb_estimate, hb_level, hb_horizon, hb_window, "
                     "hb_alpha, "
                     "hb_timeout, time_unit:NAME, arrival:NAME, stall_intervals, max_groups, "
                     "ip_format, trace, arrow_heartbeats, final_heartbeat, arrow_flush, pcap_reader, pcap_range:NAME, "
                     "prop:NAME:PROPERTY, recording:NAME)", key);
        return -1;
    }
    return 0;
}

GSQ_EXPORT int gsqlc_set_param(gsq_run *r, const char *name, const char *value)
{
    uint32_t i;
    char *v;
    gsq_param_kv *np;
    if (!name || !value || !*name) {
        gsq_set_error(r, "parameter name and value must not be empty");
        return -1;
    }
    if (name[0] == '$')
        name++;
    v = gsq_strdup(value);
    if (!v)
        goto oom;
    for (i = 0; i < r->n_params; i++)
        if (strcmp(r->params[i].name, name) == 0) {
            free(r->params[i].value);
            r->params[i].value = v;
            return 0;
        }
    np = realloc(r->params, (r->n_params + 1) * sizeof *np);
    if (!np) {
        free(v);
        goto oom;
    }
    r->params = np;
    np[r->n_params].value = v;
    np[r->n_params].name = gsq_strdup(name);
    if (!np[r->n_params].name) {
        free(v);
        goto oom;
    }
    r->n_params++;
    return 0;
oom:
    gsq_set_error(r, "out of memory");
    return -1;
}
