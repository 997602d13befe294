/*
 * options.c -- gsqlc_set_option and gsqlc_set_param: the run's settings,
 * checked and stored in the run before it starts.
 *
 * gsqlc_set_option finds the key's entry in the options table (the
 * GSQ_OPTION lines of option_table.h: name, kind, range or words, the
 * gsq_run member it sets, setter, what a value must be, a description)
 * and calls the entry's setter.  A setter either stores the value and
 * returns 0, or sets the error and returns -1 leaving the run unchanged.
 * The generic setters (set_bool, set_words, set_uint, set_seconds,
 * set_real) serve any option of their kind through its FIELD; an option
 * with a form of its own keeps a small setter of its own.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "gsq_run_steps.h"

enum gsq_option_kind {
    GSQ_OPT_BOOL, GSQ_OPT_WORDS, GSQ_OPT_UINT, GSQ_OPT_SECONDS, GSQ_OPT_REAL, GSQ_OPT_CHAR,
    GSQ_OPT_TEXT, GSQ_OPT_FORM
};

typedef struct gsq_option gsq_option;
/* Parses and stores `value` of option o; arg: the key past a per-interface
 * option's prefix ("" for a plain key).  0, or -1 with the error set. */
typedef int gsq_option_setter(gsq_run *r, const gsq_option *o, const char *arg,
                              const char *value);

/* One run option: a GSQ_OPTION line of option_table.h (which says what each
 * column holds).  size is 0 when the option names no gsq_run member, else
 * 1, 4 or 8 (a char; an int or uint32_t; a uint64_t, or a double that only
 * set_real writes); words is NULL or NULL-terminated, with values[i] what
 * word i stores. */
struct gsq_option {
    const char *name;
    enum gsq_option_kind kind;
    size_t offset, size;
    uint64_t low, high;
    const char *const *words;
    const uint64_t *values;
    gsq_option_setter *set;
    const char *expects, *doc;
};

/* The length of o's key prefix: up to and including a per-interface
 * option's first ':', else the whole name. */
static size_t prefix_len(const gsq_option *o)
{
    const char *colon = strchr(o->name, ':');
    return colon ? (size_t)(colon - o->name) + 1 : strlen(o->name);
}

/* The refusal every kind shares: "KEY must be EXPECTS, got 'VALUE'". */
static int refuse(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    gsq_set_error(r, "%.*s%s must be %s, got '%s'", (int)prefix_len(o), o->name, arg,
                  o->expects, value);
    return -1;
}

/* v into o's gsq_run member (a narrower one takes its low bytes' worth). */
static void store(gsq_run *r, const gsq_option *o, uint64_t v)
{
    char *field = (char *)r + o->offset;
    uint32_t v32 = (uint32_t)v;
    uint8_t v8 = (uint8_t)v;
    if (o->size == sizeof v)
        memcpy(field, &v, sizeof v);
    else if (o->size == sizeof v32)
        memcpy(field, &v32, sizeof v32);
    else if (o->size == sizeof v8)
        memcpy(field, &v8, sizeof v8);
}

/* The value stored for `value`, one of o's words; -1 if it is none. */
static int word_value(const gsq_option *o, const char *value, uint64_t *out)
{
    size_t i;
    for (i = 0; o->words[i]; i++)
        if (strcmp(o->words[i], value) == 0) {
            *out = o->values[i];
            return 0;
        }
    return -1;
}

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

/* max_skew:NAME, out_of_order:NAME and latency:NAME (option o): seconds
 * >= 0 per interface, kept in *arr. */
static int set_iface_seconds(gsq_run *r, const gsq_option *o, gsq_skew **arr, uint32_t *n,
                             const char *iface, const char *value)
{
    uint64_t us;
    uint32_t i;
    gsq_skew *ns;
    int rc = parse_seconds(value, &us);
    if (rc == -2 || rc == -1)
        return refuse(r, o, iface, value);
    if (rc == -3) {
        gsq_set_error(r, "%.*s%s '%s' is too large (at most 1000000000 seconds)",
                      (int)prefix_len(o), o->name, iface, value);
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
 * (a bound set, the time-management paper's section 3.1); replaces an earlier
 * setting. */
static int set_skew_decl(gsq_run *r, const gsq_option *o, const char *names, const char *value)
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
    return refuse(r, o, names, value);
oom:
    free(set.p);
    gsq_set_error(r, "out of memory");
    return -1;
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

/* partition = K/N: the LFTA aggregations' groups of hash partition K of N
 * (gsq_partition). */
static int set_partition(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    const char *slash = strchr(value, '/');
    uint64_t k, n;
    if (!slash || slash == value || gsq_parse_ullong(value, (size_t)(slash - value), &k) != 0 ||
        gsq_parse_ullong(slash + 1, strlen(slash + 1), &n) != 0 || n < 1 || n > 4096 || k >= n)
        return refuse(r, o, arg, value);
    r->part_k = (uint32_t)k;
    r->part_n = (uint32_t)n;
    return 0;
}

/* pcap_range:NAME = START:END, byte offsets of record boundaries of a
 * classic pcap file (gsqlc_pcap_cuts gives them; checked at open) */
static int set_pcap_range(gsq_run *r, const gsq_option *o, const char *iface, const char *value)
{
    const char *colon = strchr(value, ':');
    uint64_t a, b;
    gsq_iface_time *t;
    if (!colon || colon == value || gsq_parse_ullong(value, (size_t)(colon - value), &a) != 0 ||
        gsq_parse_ullong(colon + 1, strlen(colon + 1), &b) != 0 || a > b)
        return refuse(r, o, iface, value);
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
static int set_recording(gsq_run *r, const gsq_option *o, const char *iface, const char *value)
{
    gsq_iface_time *t;
    uint8_t b;
    if (gsq_parse_bool(value, strlen(value), &b) != 0)
        return refuse(r, o, iface, value);
    if (!(t = iface_time(r, iface)))
        return -1;
    t->recording = b;
    return 0;
}

/* time_unit:NAME = s | ms | us | ns (the words' values: nanoseconds) */
static int set_time_unit(gsq_run *r, const gsq_option *o, const char *iface, const char *value)
{
    uint64_t ns;
    gsq_iface_time *t;
    if (word_value(o, value, &ns) != 0)
        return refuse(r, o, iface, value);
    t = iface_time(r, iface);
    if (!t)
        return -1;
    t->unit_ns = ns;
    return 0;
}

/* A numeric GSQL type's code from its name n[0..len) (0: none). */
static int numeric_type(const char *n, size_t len)
{
    static const int numeric[] = {GSQ_T_USHORT, GSQ_T_UINT, GSQ_T_INT, GSQ_T_ULLONG,
                                  GSQ_T_LLONG, GSQ_T_FLOAT};
    size_t i;
    for (i = 0; i < sizeof numeric / sizeof numeric[0]; i++) {
        const char *t = gsq_type_name(numeric[i]);
        if (strlen(t) == len && strncmp(n, t, len) == 0)
            return numeric[i];
    }
    return 0;
}

/* A time format's code from its name n[0..len): "none" or a
 * gsq_time_format_name (-1: neither). */
static int time_format_code(const char *n, size_t len)
{
    int f;
    if (len == 4 && strncmp(n, "none", 4) == 0)
        return GSQ_TF_NONE;
    for (f = GSQ_TF_ISO8601; f <= GSQ_TF_EPOCH_NS; f++)
        if (strlen(gsq_time_format_name(f)) == len && strncmp(n, gsq_time_format_name(f), len) == 0)
            return f;
    return -1;
}

/* arrival:NAME = POS, POS:TYPE (TYPE a numeric GSQL type name), or
 * POS:TYPE:FORMAT:FIELD (FORMAT none or a time format, FIELD the name of
 * the PROTOCOL field: a CSV header's column) */
static int set_arrival(gsq_run *r, const gsq_option *o, const char *iface, const char *value)
{
    const char *part[4] = {value, NULL, NULL, NULL};
    size_t len[4];
    uint32_t pos, k, nparts = 1;
    int type = 0, format = GSQ_TF_NONE;
    char *name = NULL;
    gsq_iface_time *t;
    while (nparts < 4 && (part[nparts] = strchr(part[nparts - 1], ':')) != NULL)
        part[nparts]++, nparts++;
    for (k = 0; k < nparts; k++)
        len[k] = k + 1 < nparts ? (size_t)(part[k + 1] - 1 - part[k]) : strlen(part[k]);
    if (nparts == 3 || len[0] == 0 || gsq_parse_uint(value, len[0], &pos) != 0 || pos == 0 ||
        pos > (1u << 30))
        goto bad;
    if (nparts >= 2 && !(type = numeric_type(part[1], len[1])))
        goto bad;
    if (nparts == 4) {
        if ((format = time_format_code(part[2], len[2])) < 0 || len[3] == 0 ||
            strchr(part[3], ':'))
            goto bad;
        if (!(name = gsq_strdup(part[3])))
            return gsq_set_error(r, "out of memory"), -1;
    }
    t = iface_time(r, iface);
    if (!t) {
        free(name);
        return -1;
    }
    t->arrival_pos = pos;
    t->arrival_type = type;
    t->arrival_format = format;
    free(t->arrival_name);
    t->arrival_name = name;
    return 0;
bad:
    return refuse(r, o, iface, value);
}

/* csv_header:NAME = 0 | 1: whether the first record of the CSV input bound
 * to NAME names its columns (the reader then finds each field's column by
 * its name: csv_source.c). */
static int set_csv_header(gsq_run *r, const gsq_option *o, const char *iface, const char *value)
{
    gsq_iface_time *t;
    uint8_t b;
    if (gsq_parse_bool(value, strlen(value), &b) != 0)
        return refuse(r, o, iface, value);
    if (!(t = iface_time(r, iface)))
        return -1;
    t->csv_header = b;
    return 0;
}

/* live_snaplen:NAME, live_blocks:NAME, live_block_timeout:NAME and
 * live_block_size:NAME (which pow2 requires to be a power of two): an
 * integer in o's range, into the interface's settings at *member's offset
 * (pcap_source.c reads them). */
static int set_live_uint(gsq_run *r, const gsq_option *o, const char *iface, const char *value,
                         size_t member, int pow2)
{
    uint64_t v;
    gsq_iface_time *t;
    if (!*value || gsq_parse_ullong(value, strlen(value), &v) != 0 || v < o->low ||
        v > o->high || (pow2 && (v & (v - 1)) != 0))
        return refuse(r, o, iface, value);
    if (!(t = iface_time(r, iface)))
        return -1;
    *(uint32_t *)((char *)t + member) = (uint32_t)v;
    return 0;
}

static int set_live_snaplen(gsq_run *r, const gsq_option *o, const char *iface, const char *value)
{
    return set_live_uint(r, o, iface, value, offsetof(gsq_iface_time, live_snaplen), 0);
}

static int set_live_block_size(gsq_run *r, const gsq_option *o, const char *iface,
                               const char *value)
{
    return set_live_uint(r, o, iface, value, offsetof(gsq_iface_time, live_block_size), 1);
}

static int set_live_blocks(gsq_run *r, const gsq_option *o, const char *iface, const char *value)
{
    return set_live_uint(r, o, iface, value, offsetof(gsq_iface_time, live_blocks), 0);
}

static int set_live_block_timeout(gsq_run *r, const gsq_option *o, const char *iface,
                                  const char *value)
{
    return set_live_uint(r, o, iface, value, offsetof(gsq_iface_time, live_block_timeout), 0);
}

static int set_live_fanout(gsq_run *r, const gsq_option *o, const char *iface, const char *value)
{
    return set_live_uint(r, o, iface, value, offsetof(gsq_iface_time, live_fanout), 0);
}

/* A 0 | 1 option into int member of the interface's settings (`invert`:
 * the member holds its negation). */
static int set_live_flag(gsq_run *r, const gsq_option *o, const char *iface, const char *value,
                         size_t member, int invert)
{
    gsq_iface_time *t;
    uint8_t b;
    if (gsq_parse_bool(value, strlen(value), &b) != 0)
        return refuse(r, o, iface, value);
    if (!(t = iface_time(r, iface)))
        return -1;
    *(int *)((char *)t + member) = invert ? !b : b;
    return 0;
}

/* live_promisc:NAME = 0 | 1 */
static int set_live_promisc(gsq_run *r, const gsq_option *o, const char *iface, const char *value)
{
    return set_live_flag(r, o, iface, value, offsetof(gsq_iface_time, live_promisc), 0);
}

/* live_kernel_filter:NAME = 0 | 1 */
static int set_live_kernel_filter(gsq_run *r, const gsq_option *o, const char *iface,
                                  const char *value)
{
    return set_live_flag(r, o, iface, value, offsetof(gsq_iface_time, live_kernel_filter_off), 1);
}

/* live_xdp:NAME = off | auto | native | generic (enum gsq_live_xdp) */
static int set_live_xdp(gsq_run *r, const gsq_option *o, const char *iface, const char *value)
{
    uint64_t v;
    gsq_iface_time *t;
    if (word_value(o, value, &v) != 0)
        return refuse(r, o, iface, value);
    if (!(t = iface_time(r, iface)))
        return -1;
    t->live_xdp = (int)v;
    return 0;
}

/* live_xdp_drop:NAME = 0 | 1 */
static int set_live_xdp_drop(gsq_run *r, const gsq_option *o, const char *iface,
                             const char *value)
{
    return set_live_flag(r, o, iface, value, offsetof(gsq_iface_time, live_xdp_drop), 0);
}

/* ---- the generic setters: any option of their kind, through its FIELD */

static int set_bool(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    uint8_t b;
    if (gsq_parse_bool(value, strlen(value), &b) != 0)
        return refuse(r, o, arg, value);
    store(r, o, b);
    return 0;
}

static int set_words(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    uint64_t v;
    if (word_value(o, value, &v) != 0)
        return refuse(r, o, arg, value);
    store(r, o, v);
    return 0;
}

/* An integer from o->low to o->high (decimal or 0x hexadecimal). */
static int set_uint(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    uint64_t v;
    if (!*value || gsq_parse_ullong(value, strlen(value), &v) != 0 || v < o->low || v > o->high)
        return refuse(r, o, arg, value);
    store(r, o, v);
    return 0;
}

/* Seconds, stored as microseconds from o->low to o->high (a positive value
 * below half a microsecond is 0). */
static int set_seconds(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    uint64_t us = 0;
    int rc = parse_seconds(value, &us);
    if (rc == -1 || rc == -2 || rc == -3)
        return refuse(r, o, arg, value);
    if (rc == -4)
        us = 0;
    if (us < o->low || us > o->high)
        return refuse(r, o, arg, value);
    store(r, o, us);
    return 0;
}

/* A number from o->low to o->high, to six decimals, into a double member. */
static int set_real(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    uint64_t us;
    double v;
    int rc = parse_seconds(value, &us); /* microseconds of "seconds": 6 decimals */
    if (rc == -1 || rc == -2 || rc == -3)
        return refuse(r, o, arg, value);
    v = rc == -4 ? 0.0 : (double)us / 1e6;
    if (v < (double)o->low || v > (double)o->high)
        return refuse(r, o, arg, value);
    memcpy((char *)r + o->offset, &v, sizeof v);
    return 0;
}

/* ---- the options with a form of their own */

static int set_csv_separator(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    char c;
    if (strcmp(value, "\\t") == 0 || strcmp(value, "tab") == 0)
        c = '\t';
    else if (strlen(value) == 1)
        c = value[0];
    else
        return refuse(r, o, arg, value);
    if (c == '"' || c == '\n' || c == '\r') {
        gsq_set_error(r, "csv_separator cannot be a quote or a line break");
        return -1;
    }
    store(r, o, (unsigned char)c);
    return 0;
}

/* One of the words, or fixed:SECONDS (whole seconds, 32 bits). */
static int set_clock(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    if (strncmp(value, "fixed:", 6) != 0)
        return set_words(r, o, arg, value);
    if (parse_u32(value + 6, &r->clock_fixed) != 0)
        return refuse(r, o, arg, value);
    store(r, o, GSQ_CLOCK_FIXED);
    return 0;
}

/* Also noted as given: Arrow chunks then take it too. */
static int set_batch(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    if (set_uint(r, o, arg, value) != 0)
        return -1;
    r->batch_given = 1;
    return 0;
}

/* Seconds, or 0 / off: no heartbeat ticks.  Each way of being wrong has
 * its own message. */
static int set_heartbeat_interval(gsq_run *r, const gsq_option *o, const char *arg,
                                  const char *value)
{
    uint64_t us = 0;
    int rc = strcmp(value, "off") == 0 ? 0 : parse_seconds(value, &us);
    (void)arg;
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
    store(r, o, us);
    return 0;
}

static int set_max_skew(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    return set_iface_seconds(r, o, &r->skews, &r->n_skews, arg, value);
}

static int set_out_of_order(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    return set_iface_seconds(r, o, &r->ooos, &r->n_ooos, arg, value);
}

static int set_latency(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    return set_iface_seconds(r, o, &r->latencies, &r->n_latencies, arg, value);
}

static int set_trace(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    char *p;
    (void)o; /* FIELD(trace_path): owned, replaced */
    (void)arg;
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
    return 0;
}

/* prop:IFACE:KEY -- an interface property (@KEY in the LFTAs that read
 * IFACE), kept as the parameter "@IFACE:KEY" (node.c) */
static int set_prop(gsq_run *r, const gsq_option *o, const char *arg, const char *value)
{
    const char *colon = strrchr(arg, ':');
    char *name;
    int rc;
    (void)o;
    if (!colon || colon == arg || !colon[1]) {
        gsq_set_error(r, "option 'prop:%s': expected prop:INTERFACE:PROPERTY", arg);
        return -1;
    }
    name = malloc(strlen(arg) + 2);
    if (!name) {
        gsq_set_error(r, "out of memory");
        return -1;
    }
    name[0] = '@';
    strcpy(name + 1, arg);
    rc = gsqlc_set_param(r, name, value);
    free(name);
    return rc;
}

/* ---- the table and its dispatch */

#define FIELD(member) offsetof(gsq_run, member), sizeof(((gsq_run *)0)->member)
#define NO_FIELD 0, 0
#define RANGE(low, high) (low), (high)
#define NO_RANGE 0, 0
#define WORDS(...) (const char *const[]){__VA_ARGS__, NULL}
#define NO_WORDS NULL
#define VALUES(...) (const uint64_t[]){__VA_ARGS__}
#define NO_VALUES NULL
#define GSQ_OPTION(name, kind, field, range, words, values, setter, expects, doc) \
    {name, GSQ_OPT_##kind, field, range, words, values, setter, expects, doc},

static const gsq_option options[] = {
#include "option_table.h"
};

#undef GSQ_OPTION
#undef NO_VALUES
#undef VALUES
#undef NO_WORDS
#undef WORDS
#undef NO_RANGE
#undef RANGE
#undef NO_FIELD
#undef FIELD

#define N_OPTIONS (sizeof options / sizeof options[0])

/* The entry whose name is key, or whose per-interface prefix starts it
 * (*arg: the rest); NULL if none. */
static const gsq_option *find_option(const char *key, const char **arg)
{
    size_t i;
    for (i = 0; i < N_OPTIONS; i++) {
        const gsq_option *o = &options[i];
        size_t n = prefix_len(o);
        if (o->name[n] ? strncmp(key, o->name, n) == 0 : strcmp(key, o->name) == 0) {
            *arg = key + n;
            return o;
        }
    }
    return NULL;
}

static void refuse_unknown(gsq_run *r, const char *key)
{
    char known[1024];
    size_t i, n = 0;
    known[0] = 0;
    for (i = 0; i < N_OPTIONS && n < sizeof known; i++) {
        int w = snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "", options[i].name);
        if (w < 0)
            break;
        n += (size_t)w;
    }
    gsq_set_error(r, "unknown option '%s' (known: %s)", key, known);
}

GSQ_EXPORT int gsqlc_set_option(gsq_run *r, const char *key, const char *value)
{
    const gsq_option *o;
    const char *arg = "";
    size_t n;
    if (!key || !value) {
        gsq_set_error(r, "option name and value must not be NULL");
        return -1;
    }
    if (r->started) {
        gsq_set_error(r, "option '%s' set after the run started", key);
        return -1;
    }
    o = find_option(key, &arg);
    if (!o) {
        refuse_unknown(r, key);
        return -1;
    }
    n = prefix_len(o);
    if (!*arg && strcmp(o->name + n, "NAME") == 0) {
        gsq_set_error(r, "%.*s needs an interface name: %s", (int)n - 1, o->name, o->name);
        return -1;
    }
    return o->set(r, o, arg, value);
}

GSQ_EXPORT int gsqlc_set_param(gsq_run *r, const char *name, const char *value)
{
    if (r && r->started) {
        gsq_set_error(r, "parameter %s set after the run started: change it with "
                         "gsqlc_change_param", name ? name : "");
        return -1;
    }
    return gsq_param_put(r, name, value);
}

int gsq_param_put(gsq_run *r, const char *name, const char *value)
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
