/*
 * run.c -- the exported gsqlc_* API and the run loop.
 *
 *   gsqlc_run: plan the nodes that run (plan.c) -> check bindings -> open
 *   sources -> build subscriber tables -> open the Arrow-fed streams ->
 *   open sinks -> create nodes (LFTA init, HFTA create, queryset order) ->
 *   loop { per source: read a batch into its ring, run every LFTA bound to
 *   it over each record, release the batch, drain the LFTA queues into the
 *   streams' subscribers, fire due heartbeat ticks; per Arrow-fed stream:
 *   dispatch a batch of its rows (or its GSQ_EOF) } until every source and
 *   Arrow-fed stream is at end (or SIGINT/SIGTERM) -> with option
 *   final_heartbeat, one last heartbeat of every LFTA and a drain -> LFTA
 *   finish + GSQ_EOF, drain -> flush sinks and the trace file -> report.
 *
 * The only process-wide state is `stop_flag`, set by the SIGINT/SIGTERM
 * handler that gsqlc_run installs for its own duration (a signal handler
 * cannot reach a run).  SIGPIPE is ignored during the run so that a closed
 * output pipe surfaces as a write error (EPIPE).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow_abi.h"
#include "gsq_internal.h"

#define GSQ_DEFAULT_IFACE "default"

static volatile sig_atomic_t stop_flag;

int gsq_stop_requested(void)
{
    return stop_flag != 0;
}

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/* ---- configuration ---------------------------------------------------- */

static void set_error(gsq_run *r, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void set_error(gsq_run *r, const char *fmt, ...)
{
    va_list ap;
    char msg[1024];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gsq_buf_reset(&r->error);
    gsq_buf_adds(&r->error, msg);
}

GSQ_EXPORT gsq_run *gsqlc_create(void)
{
    gsq_run *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->qs = &gsq_queryset;
    r->csv_sep = ',';
    r->clock_mode = GSQ_CLOCK_WALL;
    r->batch = 512;
    r->hb_interval_usec = 1000000u;
    r->stall_intervals = 3;
    r->trace_fd = -1;
    r->cur_trace = -1;
    return r;
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

static int set_skew(gsq_run *r, const char *iface, const char *value)
{
    uint64_t us;
    uint32_t i;
    gsq_skew *ns;
    int rc = parse_seconds(value, &us);
    if (!*iface) {
        set_error(r, "max_skew needs an interface name: max_skew:NAME");
        return -1;
    }
    if (rc == -2 || rc == -1) {
        set_error(r, "max_skew:%s must be a number of seconds >= 0 (e.g. 2 or 0.5), got '%s'",
                  iface, value);
        return -1;
    }
    if (rc == -3) {
        set_error(r, "max_skew:%s '%s' is too large (at most 1000000000 seconds)", iface, value);
        return -1;
    }
    if (rc == -4)
        us = 0; /* below a microsecond: no skew */
    for (i = 0; i < r->n_skews; i++)
        if (strcmp(r->skews[i].iface, iface) == 0) {
            r->skews[i].usec = us;
            return 0;
        }
    ns = realloc(r->skews, (r->n_skews + 1) * sizeof *ns);
    if (!ns)
        goto oom;
    r->skews = ns;
    ns[r->n_skews].iface = gsq_strdup(iface);
    if (!ns[r->n_skews].iface)
        goto oom;
    ns[r->n_skews].usec = us;
    r->n_skews++;
    return 0;
oom:
    set_error(r, "out of memory");
    return -1;
}

GSQ_EXPORT int gsqlc_set_option(gsq_run *r, const char *key, const char *value)
{
    if (!key || !value) {
        set_error(r, "option name and value must not be NULL");
        return -1;
    }
    if (r->started) {
        set_error(r, "option '%s' set after the run started", key);
        return -1;
    }
    if (strcmp(key, "csv_separator") == 0) {
        char c;
        if (strcmp(value, "\\t") == 0 || strcmp(value, "tab") == 0)
            c = '\t';
        else if (strlen(value) == 1)
            c = value[0];
        else {
            set_error(r, "csv_separator must be one character, got '%s'", value);
            return -1;
        }
        if (c == '"' || c == '\n' || c == '\r') {
            set_error(r, "csv_separator cannot be a quote or a line break");
            return -1;
        }
        r->csv_sep = c;
    } else if (strcmp(key, "csv_strict") == 0) {
        uint8_t b;
        if (gsq_parse_bool(value, strlen(value), &b) != 0) {
            set_error(r, "csv_strict must be 0 or 1, got '%s'", value);
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
            set_error(r, "%s must be 0 or 1, got '%s'", key, value);
            return -1;
        }
        *flag = b;
    } else if (strcmp(key, "clock") == 0) {
        if (strcmp(value, "wall") == 0) {
            r->clock_mode = GSQ_CLOCK_WALL;
        } else if (strcmp(value, "data") == 0) {
            r->clock_mode = GSQ_CLOCK_DATA;
        } else if (strncmp(value, "fixed:", 6) == 0 &&
                   parse_u32(value + 6, &r->clock_fixed) == 0) {
            r->clock_mode = GSQ_CLOCK_FIXED;
        } else {
            set_error(r, "clock must be wall, data or fixed:SECONDS, got '%s'", value);
            return -1;
        }
    } else if (strcmp(key, "batch") == 0) {
        uint32_t b;
        if (parse_u32(value, &b) != 0 || b == 0 || b > (1u << 20)) {
            set_error(r, "batch must be an integer from 1 to 1048576, got '%s'", value);
            return -1;
        }
        r->batch = b;
    } else if (strcmp(key, "heartbeat_interval") == 0) {
        uint64_t us = 0;
        int rc = strcmp(value, "off") == 0 ? 0 : parse_seconds(value, &us);
        if (rc == -1) {
            set_error(r, "heartbeat_interval must be a number of seconds (e.g. 1 or 0.5), or 0 "
                         "or off to disable heartbeats, got '%s'", value);
            return -1;
        }
        if (rc == -2) {
            set_error(r, "heartbeat_interval must not be negative, got '%s' (0 or off disables "
                         "heartbeats)", value);
            return -1;
        }
        if (rc == -3 || rc == -4) {
            set_error(r, "heartbeat_interval '%s' is out of range (from 0.000001 to 1000000000 "
                         "seconds; 0 or off disables heartbeats)", value);
            return -1;
        }
        r->hb_interval_usec = us;
    } else if (strncmp(key, "max_skew:", 9) == 0) {
        return set_skew(r, key + 9, value);
    } else if (strcmp(key, "stall_intervals") == 0) {
        uint32_t n;
        if (parse_u32(value, &n) != 0 || n == 0 || n > 1000000u) {
            set_error(r, "stall_intervals must be an integer from 1 to 1000000, got '%s'", value);
            return -1;
        }
        r->stall_intervals = n;
    } else if (strcmp(key, "trace") == 0) {
        char *p;
        if (!*value) {
            set_error(r, "trace needs a file path");
            return -1;
        }
        p = gsq_strdup(value);
        if (!p) {
            set_error(r, "out of memory");
            return -1;
        }
        free(r->trace_path);
        r->trace_path = p;
    } else {
        set_error(r, "unknown option '%s' (known: csv_separator, csv_strict, clock, batch, "
                     "heartbeat_interval, max_skew:NAME, stall_intervals, trace, "
                     "arrow_heartbeats, final_heartbeat, arrow_flush)", key);
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
        set_error(r, "parameter name and value must not be empty");
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
    set_error(r, "out of memory");
    return -1;
}

static int uri_kind(const char *uri, int *live, const char **path)
{
    *live = 0;
    if (strncmp(uri, "csv:", 4) == 0 && uri[4]) {
        *path = uri + 4;
        return GSQ_SRC_CSV;
    }
    if (strncmp(uri, "pcap:", 5) == 0 && uri[5]) {
        *path = uri + 5;
        return GSQ_SRC_PCAP;
    }
    if (strncmp(uri, "pcap-live:", 10) == 0 && uri[10]) {
        *path = uri + 10;
        *live = 1;
        return GSQ_SRC_PCAP;
    }
    return 0;
}

GSQ_EXPORT int gsqlc_bind_source(gsq_run *r, const char *iface, const char *uri)
{
    int live;
    const char *path;
    gsq_binding *nb;
    if (!iface || !uri) {
        set_error(r, "interface name and URI must not be NULL");
        return -1;
    }
    if (!*iface)
        iface = GSQ_DEFAULT_IFACE;
    if (!uri_kind(uri, &live, &path)) {
        set_error(r, "unsupported source '%s' (expected csv:PATH, csv:-, pcap:PATH or "
                     "pcap-live:IFACE)", uri);
        return -1;
    }
    nb = realloc(r->binds, (r->n_binds + 1) * sizeof *nb);
    if (!nb) {
        set_error(r, "out of memory");
        return -1;
    }
    r->binds = nb;
    nb[r->n_binds].iface = gsq_strdup(iface);
    nb[r->n_binds].uri = gsq_strdup(uri);
    nb[r->n_binds].arrow = NULL;
    if (!nb[r->n_binds].iface || !nb[r->n_binds].uri) {
        free(nb[r->n_binds].iface);
        free(nb[r->n_binds].uri);
        set_error(r, "out of memory");
        return -1;
    }
    r->n_binds++;
    return 0;
}

/* The index of the stream named `name` (a query, or an internal stream
 * such as an LFTA's); -1 with the error set when there is none. */
static int find_stream(gsq_run *r, const char *name)
{
    uint32_t i;
    gsq_buf names = {0};
    for (i = 0; i < r->qs->n_streams; i++)
        if (strcmp(r->qs->streams[i].name, name) == 0)
            return (int)i;
    for (i = 0; i < r->qs->n_streams; i++) {
        if (r->qs->streams[i].name[0] == '_')
            continue; /* internal LFTA streams */
        if (names.len)
            gsq_buf_adds(&names, ", ");
        gsq_buf_adds(&names, r->qs->streams[i].name);
    }
    set_error(r, "no query named '%s' (queries: %s)", name, gsq_buf_str(&names));
    gsq_buf_free(&names);
    return -1;
}

/* Append a new sink of `stream`: the sink, or NULL with the error set. */
static gsq_sink *new_sink(gsq_run *r, const char *name, int stream, int fmt)
{
    gsq_sink *k = calloc(1, sizeof *k), **ns = NULL;
    if (k)
        k->query = gsq_strdup(name);
    if (k && k->query)
        ns = realloc(r->sinks, (r->n_sinks + 1) * sizeof *ns);
    if (!ns) {
        if (k)
            free(k->query);
        free(k);
        set_error(r, "out of memory");
        return NULL;
    }
    r->sinks = ns;
    k->fd = -1;
    k->format = fmt;
    k->stream = stream;
    r->sinks[r->n_sinks++] = k;
    return k;
}

GSQ_EXPORT int gsqlc_add_sink(gsq_run *r, const char *query, const char *format,
                              const char *path)
{
    int fmt, stream;
    char *p = NULL;
    gsq_sink *k;
    if (!query || !format) {
        set_error(r, "sink query and format must not be NULL");
        return -1;
    }
    if (r->started) {
        set_error(r, "sink added after the run started");
        return -1;
    }
    stream = find_stream(r, query);
    if (stream < 0)
        return -1;
    if (strcmp(format, "pipe") == 0)
        fmt = GSQ_FMT_PIPE;
    else if (strcmp(format, "csv") == 0)
        fmt = GSQ_FMT_CSV;
    else if (strcmp(format, "jsonl") == 0)
        fmt = GSQ_FMT_JSONL;
    else {
        set_error(r, "unknown output format '%s' (expected pipe, csv or jsonl)", format);
        return -1;
    }
    if (path && strcmp(path, "-") != 0) {
        p = gsq_strdup(path);
        if (!p) {
            set_error(r, "out of memory");
            return -1;
        }
    }
    k = new_sink(r, query, stream, fmt);
    if (!k) {
        free(p);
        return -1;
    }
    k->path = p;
    return 0;
}

/* ---- Arrow ------------------------------------------------------------ */

/* The run owns the stream's contents from here on, even on failure. */
static int check_arrow_stream(gsq_run *r, struct ArrowArrayStream *stream, const char *what)
{
    if (!stream || !stream->release || !stream->get_schema || !stream->get_next) {
        set_error(r, "%s: the Arrow stream is NULL or was already released", what);
        if (stream && stream->release)
            stream->release(stream);
        return -1;
    }
    if (r->started) {
        set_error(r, "%s: bound after the run started", what);
        stream->release(stream);
        return -1;
    }
    return 0;
}

GSQ_EXPORT int gsqlc_bind_arrow(gsq_run *r, const char *iface, struct ArrowArrayStream *stream)
{
    gsq_binding *nb;
    if (check_arrow_stream(r, stream, "Arrow source") != 0)
        return -1;
    if (!iface || !*iface)
        iface = GSQ_DEFAULT_IFACE;
    nb = realloc(r->binds, (r->n_binds + 1) * sizeof *nb);
    if (!nb)
        goto oom;
    r->binds = nb;
    nb[r->n_binds].iface = gsq_strdup(iface);
    nb[r->n_binds].uri = gsq_strdup("arrow");
    nb[r->n_binds].arrow = stream;
    if (!nb[r->n_binds].iface || !nb[r->n_binds].uri) {
        free(nb[r->n_binds].iface);
        free(nb[r->n_binds].uri);
        goto oom;
    }
    r->n_binds++;
    return 0;
oom:
    stream->release(stream);
    set_error(r, "out of memory");
    return -1;
}

GSQ_EXPORT int gsqlc_bind_stream_arrow(gsq_run *r, const char *stream_name,
                                       struct ArrowArrayStream *stream)
{
    gsq_inject *ni;
    uint32_t i;
    int st;
    if (check_arrow_stream(r, stream, "Arrow-fed stream") != 0)
        return -1;
    st = stream_name ? find_stream(r, stream_name) : -1;
    if (!stream_name)
        set_error(r, "the stream name must not be NULL");
    for (i = 0; st >= 0 && i < r->n_injects; i++)
        if (r->injects[i].stream == st) {
            set_error(r, "stream %s is already fed from an Arrow stream", stream_name);
            st = -1;
        }
    if (st < 0) {
        stream->release(stream);
        return -1;
    }
    ni = realloc(r->injects, (r->n_injects + 1) * sizeof *ni);
    if (!ni)
        goto oom;
    r->injects = ni;
    memset(&ni[r->n_injects], 0, sizeof ni[r->n_injects]);
    ni[r->n_injects].name = gsq_strdup(stream_name);
    if (!ni[r->n_injects].name)
        goto oom;
    ni[r->n_injects].stream = st;
    ni[r->n_injects].arrow = stream;
    r->n_injects++;
    return 0;
oom:
    stream->release(stream);
    set_error(r, "out of memory");
    return -1;
}

GSQ_EXPORT int gsqlc_add_arrow_sink(gsq_run *r, const char *stream_name, gsqlc_arrow_cb cb,
                                    void *ctx, uint32_t batch_rows)
{
    int stream;
    gsq_sink *k;
    if (!stream_name || !cb) {
        set_error(r, "Arrow sink: the stream name and callback must not be NULL");
        return -1;
    }
    if (r->started) {
        set_error(r, "sink added after the run started");
        return -1;
    }
    stream = find_stream(r, stream_name);
    if (stream < 0)
        return -1;
    k = new_sink(r, stream_name, stream, GSQ_FMT_ARROW);
    if (!k)
        return -1;
    k->cb = cb;
    k->cb_ctx = ctx;
    k->batch_rows = batch_rows ? batch_rows : GSQ_ARROW_BATCH_ROWS;
    return 0;
}

GSQ_EXPORT const char *gsqlc_error(gsq_run *r)
{
    return gsq_buf_str(&r->error);
}

/* ---- setup ------------------------------------------------------------ */

static const char *kind_name(int kind)
{
    return kind == GSQ_SRC_CSV ? "CSV" : kind == GSQ_SRC_PCAP ? "pcap" : "?";
}

/* Whether an LFTA of source kind `lfta_kind` can read source s; fails the
 * run with the reason when not. */
static int check_kind(gsq_run *r, const gsq_lfta_def *d, const gsq_source *s)
{
    if (s->kind == GSQ_SRC_ARROW && d->source_kind == GSQ_SRC_CSV)
        return 0;
    if (s->kind == GSQ_SRC_ARROW) {
        gsq_run_fail(r,
                     "LFTA %s: PROTOCOL %s reads packets; an Arrow source feeds CSV-style "
                     "PROTOCOLs (fields get_csv_*), e.g. the one of gsqlc's packet table "
                     "schema, but interface '%s' is bound to an Arrow stream",
                     d->name, d->protocol, d->iface);
        return -1;
    }
    if (s->kind != d->source_kind) {
        gsq_run_fail(r,
                     "LFTA %s reads PROTOCOL %s from %s records, but interface '%s' is "
                     "bound to %s",
                     d->name, d->protocol, kind_name(d->source_kind), d->iface, s->uri);
        return -1;
    }
    return 0;
}

/* Bindings -> sources; every LFTA that runs gets its source. */
static int setup_sources(gsq_run *r)
{
    const gsq_queryset_def *qs = r->qs;
    uint32_t i, j;

    for (i = 0; i < r->n_binds; i++)
        for (j = i + 1; j < r->n_binds; j++)
            if (strcmp(r->binds[i].iface, r->binds[j].iface) == 0) {
                gsq_run_fail(r,
                             "interface '%s' is bound to more than one source (%s, %s): "
                             "interface sets are not supported yet; bind each name once",
                             r->binds[i].iface, r->binds[i].uri, r->binds[j].uri);
                return -1;
            }
    r->sources = calloc(r->n_binds ? r->n_binds : 1, sizeof *r->sources);
    if (!r->sources) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    for (i = 0; i < qs->n_lftas; i++) {
        const gsq_lfta_def *d = qs->lftas[i];
        gsq_node *n = &r->nodes[i];
        gsq_source *s = NULL;
        gsq_binding *b = NULL;
        if (!n->needed)
            continue;
        for (j = 0; j < r->n_binds; j++)
            if (strcmp(r->binds[j].iface, d->iface) == 0)
                b = &r->binds[j];
        if (!b) {
            gsq_run_fail(r,
                         "interface '%s' is not bound (used by LFTA %s reading PROTOCOL %s); "
                         "bind it with --source %s=URI",
                         d->iface, d->name, d->protocol, d->iface);
            return -1;
        }
        for (j = 0; j < r->n_sources; j++)
            if (r->sources[j].iface == b->iface)
                s = &r->sources[j];
        if (!s) {
            gsq_node **l;
            s = &r->sources[r->n_sources++];
            s->iface = b->iface;
            s->uri = b->uri;
            if (b->arrow) {
                s->kind = GSQ_SRC_ARROW;
                s->path = "";
                s->arrow = b->arrow; /* the source owns it from now on */
                b->arrow = NULL;
            } else {
                s->kind = uri_kind(b->uri, &s->live, &s->path);
            }
            l = calloc(qs->n_lftas, sizeof *l);
            if (!l) {
                gsq_run_fail(r, "out of memory");
                return -1;
            }
            s->lftas = l;
        }
        if (check_kind(r, d, s) != 0)
            return -1;
        s->lftas[s->n_lftas++] = n;
        n->source = s;
    }
    return 0;
}

static int open_sources(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_sources; i++) {
        gsq_source *s = &r->sources[i];
        if (gsq_ring_init(&s->ring, GSQ_RING_BYTES, r->batch) != 0) {
            gsq_run_fail(r, "out of memory");
            return -1;
        }
        if (s->kind == GSQ_SRC_CSV ? gsq_csv_open(r, s)
            : s->kind == GSQ_SRC_ARROW ? gsq_arrow_open(r, s) : gsq_pcap_open(r, s))
            return -1;
        if (s->live || (s->kind == GSQ_SRC_CSV && strcmp(s->path, "-") == 0))
            r->streaming = 1;
        s->limit_usec = UINT64_MAX;
        if (s->kind == GSQ_SRC_PCAP) {
            r->ts_sources++;
            if (r->clock_mode == GSQ_CLOCK_DATA && !s->live) {
                s->aligned = 1;
                r->aligned++;
            }
        }
    }
    if (r->aligned < 2) { /* one file alone needs no alignment */
        r->aligned = 0;
        for (i = 0; i < r->n_sources; i++)
            r->sources[i].aligned = 0;
    }
    return 0;
}

static int add_sub(gsq_stream_rt *st, gsq_node *h, int input, gsq_sink *k)
{
    gsq_sub *ns = realloc(st->subs, (st->n_subs + 1) * sizeof *ns);
    if (!ns)
        return -1;
    st->subs = ns;
    ns[st->n_subs].hfta = h;
    ns[st->n_subs].input = input;
    ns[st->n_subs].sink = k;
    st->n_subs++;
    return 0;
}

static int setup_streams(gsq_run *r)
{
    const gsq_queryset_def *qs = r->qs;
    uint32_t i;
    int j;
    r->streams = calloc(qs->n_streams ? qs->n_streams : 1, sizeof *r->streams);
    if (!r->streams)
        goto oom;
    for (i = 0; i < qs->n_hftas; i++) {
        const gsq_hfta_def *d = qs->hftas[i];
        if (!r->nodes[qs->n_lftas + i].needed)
            continue;
        for (j = 0; j < d->n_inputs; j++) {
            int s = d->in_streams[j];
            if (s < 0 || (uint32_t)s >= qs->n_streams) {
                gsq_run_fail(r, "internal error: HFTA %s reads stream %d of %u", d->name, s,
                             (unsigned)qs->n_streams);
                return -1;
            }
            if (add_sub(&r->streams[s], &r->nodes[qs->n_lftas + i], j, NULL) != 0)
                goto oom;
        }
    }
    for (i = 0; i < r->n_sinks; i++)
        if (add_sub(&r->streams[r->sinks[i]->stream], NULL, 0, r->sinks[i]) != 0)
            goto oom;
    return 0;
oom:
    gsq_run_fail(r, "out of memory");
    return -1;
}

/* Check the schemas of the Arrow-fed streams that are read. */
static int open_injects(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_injects; i++)
        if (r->injects[i].active && gsq_inject_open(r, &r->injects[i]) != 0)
            return -1;
    return 0;
}

static int check_queryset(gsq_run *r)
{
    const gsq_queryset_def *qs = r->qs;
    uint32_t i;
    for (i = 0; i < qs->n_lftas; i++)
        if (qs->lftas[i]->out_stream < 0 || (uint32_t)qs->lftas[i]->out_stream >= qs->n_streams)
            goto bad;
    for (i = 0; i < qs->n_hftas; i++)
        if (qs->hftas[i]->out_stream < 0 || (uint32_t)qs->hftas[i]->out_stream >= qs->n_streams)
            goto bad;
    return 0;
bad:
    gsq_run_fail(r, "internal error: the query set names a stream that does not exist");
    return -1;
}

static int create_nodes(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_nodes && !r->failed; i++) {
        gsq_node *n = &r->nodes[i];
        if (!n->needed)
            continue;
        if (n->lfta) {
            n->state = calloc(1, n->lfta->state_size ? n->lfta->state_size : 1);
            if (!n->state) {
                gsq_run_fail(r, "out of memory");
                return -1;
            }
            if (n->lfta->init && n->lfta->init(n->state, n) != 0) {
                if (!r->failed)
                    gsq_node_fail(n, "initialization failed");
                return -1;
            }
            n->live = 1;
        } else {
            n->state = n->hfta->create(n);
            if (!n->state) {
                if (!r->failed)
                    gsq_node_fail(n, "initialization failed");
                return -1;
            }
            n->live = 1;
        }
    }
    return r->failed ? -1 : 0;
}

/* ---- the loop --------------------------------------------------------- */

/* A heartbeat popped from an LFTA queue carries its trace (if tracing)
 * while it is dispatched: every HFTA it reaches, directly or through
 * heartbeats emitted on the way, becomes a hop of that trace. */
void gsq_drain(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->qs->n_lftas && !r->failed; i++) {
        gsq_node *n = &r->nodes[i];
        int kind;
        const void *tup;
        uint32_t len;
        while (!r->failed && gsq_tq_pop(&n->queue, &kind, &tup, &len)) {
            if (kind == GSQ_HEARTBEAT && r->trace_path)
                r->cur_trace = gsq_trace_take(r, n);
            gsq_dispatch(r, n->out_stream, kind, kind == GSQ_EOF ? NULL : tup, len);
            r->cur_trace = -1;
        }
    }
    if (r->trace_path)
        gsq_trace_write_pending(r);
}

/* Records ahead of accept() that an LFTA's prefetch hint is given: enough
 * to cover a memory access at ~10-20 ns of work per record. */
#define GSQ_PREFETCH_AHEAD 8u

static void prefetch_record(gsq_source *s, uint32_t i)
{
    uint32_t j;
    for (j = 0; j < s->n_lftas; j++) {
        gsq_node *n = s->lftas[j];
        if (n->lfta->prefetch)
            n->lfta->prefetch(n->state, n, &s->ring.recs[i]);
    }
}

static void run_batch(gsq_run *r, gsq_source *s)
{
    uint32_t i, j;
    int data_clock = r->clock_mode == GSQ_CLOCK_DATA && s->kind == GSQ_SRC_PCAP;
    for (i = 0; i < GSQ_PREFETCH_AHEAD && i < s->ring.n_recs; i++)
        prefetch_record(s, i);
    for (i = 0; i < s->ring.n_recs && !r->failed; i++) {
        const gsq_record *rec = &s->ring.recs[i];
        if (i + GSQ_PREFETCH_AHEAD < s->ring.n_recs)
            prefetch_record(s, i + GSQ_PREFETCH_AHEAD);
        if (data_clock && (!r->data_seen || rec->pkt.ts_usec > r->data_usec)) {
            if (!r->data_seen)
                r->data_first_usec = rec->pkt.ts_usec;
            r->data_usec = rec->pkt.ts_usec;
            r->data_seen = 1;
        }
        for (j = 0; j < s->n_lftas && !r->failed; j++) {
            gsq_node *n = s->lftas[j];
            n->lfta->accept(n->state, n, rec);
        }
    }
    gsq_ring_release(&s->ring);
}

static void flush_sinks(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_sinks; i++)
        if (r->sinks[i]->fd >= 0 || r->sinks[i]->arrow)
            gsq_sink_flush(r, r->sinks[i]);
}

/* Time-aligned replay: this round reads, from every pcap file, the records
 * stamped up to the earliest next timestamp among them plus a quantum (the
 * heartbeat interval, at most 1 s), so the files advance together on the
 * data clock as live interfaces would, and an idle stretch of one of them
 * shows (stalls, heartbeats from the clock) instead of being read ahead. */
static int align_round(gsq_run *r)
{
    uint64_t min = UINT64_MAX, ts, limit, q;
    uint32_t i;
    q = r->hb_interval_usec && r->hb_interval_usec < 1000000u ? r->hb_interval_usec : 1000000u;
    for (i = 0; i < r->n_sources; i++) {
        gsq_source *s = &r->sources[i];
        int rc;
        if (!s->aligned || s->at_eof)
            continue;
        rc = gsq_pcap_peek(r, s, &ts);
        if (rc < 0)
            return -1;
        if (rc > 0 && ts < min)
            min = ts;
    }
    limit = min > UINT64_MAX - q ? UINT64_MAX : min + q;
    for (i = 0; i < r->n_sources; i++)
        if (r->sources[i].aligned)
            r->sources[i].limit_usec = limit;
    return 0;
}

static void main_loop(gsq_run *r)
{
    uint32_t i;
    gsq_hb_after_batch(r, NULL, 0, 1); /* start the timer if the clock is known */
    for (;;) {
        int active = 0, input_done = 0;
        if (r->aligned && align_round(r) != 0)
            break;
        for (i = 0; i < r->n_sources && !r->failed; i++) {
            gsq_source *s = &r->sources[i];
            uint32_t n;
            int rc;
            if (s->at_eof)
                continue;
            active = 1;
            rc = s->kind == GSQ_SRC_CSV     ? gsq_csv_read_batch(r, s)
                 : s->kind == GSQ_SRC_ARROW ? gsq_arrow_read_batch(r, s)
                                            : gsq_pcap_read_batch(r, s);
            if (rc < 0)
                break;
            n = s->ring.n_recs;
            run_batch(r, s);
            gsq_drain(r);
            gsq_hb_after_batch(r, s, n, !r->aligned);
            input_done |= s->input_done;
            s->input_done = 0;
        }
        for (i = 0; i < r->n_injects && !r->failed; i++) {
            gsq_inject *in = &r->injects[i];
            if (!in->active || in->at_eof)
                continue;
            active = 1;
            if (gsq_inject_step(r, in) < 0)
                break;
            gsq_hb_after_batch(r, NULL, 0, !r->aligned);
        }
        if (r->aligned)
            gsq_hb_after_batch(r, NULL, 0, 1); /* the round is complete */
        if (r->failed || !active)
            break;
        if (stop_flag) {
            r->interrupted = 1;
            for (i = 0; i < r->n_sources; i++)
                r->sources[i].at_eof = 1;
            for (i = 0; i < r->n_injects; i++)
                gsq_inject_eof(r, &r->injects[i]);
        }
        if (r->streaming || input_done)
            flush_sinks(r);
    }
    if (stop_flag)
        r->interrupted = 1;
    if (r->failed)
        return;
    if (r->final_heartbeat)
        gsq_hb_final(r); /* before any EOF: the inputs of the HFTAs are open */
    for (i = 0; i < r->n_injects && !r->failed; i++)
        gsq_inject_eof(r, &r->injects[i]);
    for (i = 0; i < r->qs->n_lftas && !r->failed; i++) {
        gsq_node *n = &r->nodes[i];
        if (!n->live)
            continue;
        if (n->lfta->finish)
            n->lfta->finish(n->state, n);
        gsq_emit(n, GSQ_EOF, NULL, 0, NULL, 0);
    }
    gsq_drain(r);
}

static void teardown(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_nodes; i++) {
        gsq_node *n = &r->nodes[i];
        if (n->lfta) {
            if (n->live && n->lfta->destroy)
                n->lfta->destroy(n->state);
            free(n->state);
        } else if (n->live && n->hfta->destroy) {
            n->hfta->destroy(n->state);
        }
        n->state = NULL;
        n->live = 0;
        gsq_tq_free(&n->queue);
        free(n->pack);
        n->pack = NULL;
        n->pack_cap = 0;
    }
    for (i = 0; i < r->n_sinks; i++)
        gsq_sink_close(r->sinks[i]);
    for (i = 0; i < r->n_sources; i++) {
        gsq_source *s = &r->sources[i];
        if (s->kind == GSQ_SRC_CSV)
            gsq_csv_close(s);
        else if (s->kind == GSQ_SRC_ARROW)
            gsq_arrow_close(s);
        else
            gsq_pcap_close(s);
        gsq_ring_free(&s->ring);
    }
    for (i = 0; i < r->n_injects; i++)
        gsq_inject_close(&r->injects[i]);
}

GSQ_EXPORT int gsqlc_run(gsq_run *r)
{
    const gsq_queryset_def *qs = r->qs;
    struct sigaction sa, old_int, old_term, old_pipe;
    uint32_t i;

    if (r->started) {
        set_error(r, "this run was already executed; create a new one");
        return 1;
    }
    r->started = 1;
    r->n_nodes = qs->n_lftas + qs->n_hftas;
    r->nodes = calloc(r->n_nodes ? r->n_nodes : 1, sizeof *r->nodes);
    if (!r->nodes) {
        set_error(r, "out of memory");
        r->failed = 1;
        return 1;
    }
    for (i = 0; i < r->n_nodes; i++) {
        gsq_node *n = &r->nodes[i];
        n->run = r;
        if (i < qs->n_lftas) {
            uint32_t k;
            n->lfta = qs->lftas[i];
            n->name = n->lfta->name;
            n->out_stream = n->lfta->out_stream;
            gsq_tq_init(&n->queue);
            for (k = 0; k < r->n_skews; k++)
                if (n->lfta->iface && strcmp(r->skews[k].iface, n->lfta->iface) == 0) {
                    n->has_skew = 1;
                    n->skew_usec = r->skews[k].usec;
                }
        } else {
            n->hfta = qs->hftas[i - qs->n_lftas];
            n->name = n->hfta->name;
            n->out_stream = n->hfta->out_stream;
        }
    }

    stop_flag = 0;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = (int)SA_RESETHAND; /* a second signal acts as usual */
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sa.sa_handler = SIG_IGN;
    sa.sa_flags = 0;
    sigaction(SIGPIPE, &sa, &old_pipe);

    if (check_queryset(r) == 0 && gsq_plan(r) == 0 && setup_sources(r) == 0 &&
        open_sources(r) == 0 && setup_streams(r) == 0 && open_injects(r) == 0) {
        for (i = 0; i < r->n_sinks && !r->failed; i++)
            gsq_sink_open(r, r->sinks[i]);
        if (!r->failed && gsq_hb_open(r) == 0 && create_nodes(r) == 0) {
            main_loop(r);
            flush_sinks(r); /* also after a failure: what was produced */
        }
        gsq_hb_close(r);
    }

    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);

    gsq_build_stats(r);
    gsq_build_report(r);
    teardown(r);
    return r->failed ? 1 : 0;
}

GSQ_EXPORT const char *gsqlc_stats_json(gsq_run *r)
{
    if (!r->stats.len)
        gsq_build_stats(r);
    return gsq_buf_str(&r->stats);
}

GSQ_EXPORT const char *gsqlc_report(gsq_run *r)
{
    return gsq_buf_str(&r->report);
}

GSQ_EXPORT void gsqlc_destroy(gsq_run *r)
{
    uint32_t i;
    if (!r)
        return;
    for (i = 0; i < r->n_params; i++) {
        free(r->params[i].name);
        free(r->params[i].value);
    }
    free(r->params);
    for (i = 0; i < r->n_binds; i++) {
        gsq_arrow_stream_release(&r->binds[i].arrow);
        free(r->binds[i].iface);
        free(r->binds[i].uri);
    }
    free(r->binds);
    for (i = 0; i < r->n_injects; i++) {
        gsq_inject_close(&r->injects[i]);
        free(r->injects[i].name);
    }
    free(r->injects);
    for (i = 0; i < r->n_skews; i++)
        free(r->skews[i].iface);
    free(r->skews);
    free(r->trace_path);
    gsq_hb_free(r);
    for (i = 0; i < r->n_sinks; i++) {
        gsq_sink *k = r->sinks[i];
        gsq_sink_close(k);
        gsq_buf_free(&k->out);
        free(k->query);
        free(k->path);
        free(k);
    }
    free(r->sinks);
    for (i = 0; i < r->n_sources; i++)
        free(r->sources[i].lftas);
    free(r->sources);
    if (r->streams)
        for (i = 0; i < r->qs->n_streams; i++)
            free(r->streams[i].subs);
    free(r->streams);
    free(r->nodes);
    gsq_buf_free(&r->error);
    gsq_buf_free(&r->stats);
    gsq_buf_free(&r->report);
    free(r);
}
