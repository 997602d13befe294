/*
 * csv_source.c -- the csv:PATH / csv:- reader.
 *
 * Records are RFC-4180: fields separated by the configured separator, a
 * field that starts with '"' is quoted ("" is a quote; separators and line
 * breaks inside are data), records end with \n or \r\n (or at end of
 * input).  Blank lines are skipped and not counted.
 *
 * Row policy (the product's):
 *  - the first non-blank row fixes the field count N; a row with another
 *    count, a record over GSQ_MAX_LINE bytes, or an unterminated quote at
 *    end of input is malformed: rejected, counted, the first
 *    GSQ_MAX_DESCRIBED described in the report;
 *  - every (position, type) read by an LFTA of this source is converted once
 *    per row into the record's value cache; a value that is empty or not
 *    fully valid still converts (Tigon's C semantics) and is counted as
 *    coerced (once per cell, however many LFTAs or types read it) -- or,
 *    with csv_strict, rejects the row;
 *  - a position beyond N reads as the zero value (one warning);
 *  - a field with a time format (gsq_csv_field.time_format) reads its text
 *    as an instant (core/time_text.c) counted in its unit; text that is no
 *    such instant, or one its type cannot hold, is not valid (as above).
 *
 * Header: with option csv_header:NAME the first record names the columns;
 * each position the LFTAs read is mapped to the column named as its
 * PROTOCOL field (exactly, else ignoring case; blanks around a name
 * ignored), the header fixes N, and a field whose name no column has fails
 * the run before any row is read.  Without it, a
 * first record whose cell at every read position is the name of a field
 * read from the source (at that position or another), and whose every
 * non-string read value is not valid, is a header all the same: it is
 * skipped, not counted, and reported once with the option to use
 * (csv_report, csv_stats).
 *
 * A pipe or terminal (csv:-) is polled before each read: when it has no
 * input the reader returns an empty batch, and the run loop waits on its
 * descriptor (csv_wait_fd) with the other idle sources' until the next
 * heartbeat tick (at most 100 ms), so ticks fire and stalls show without
 * traffic, and a busy source beside it is not held up.
 *
 * Timestamps (source_time.c): when the source has a time or arrival column
 * (s->has_ts), both are cached values converted with the row, and every
 * record is stamped from them.  Time-aligned replay (run/loop.c, a file
 * under the data clock): a row that arrived after s->limit_usec is held --
 * its converted record copied aside, exactly as it was laid out in the
 * ring -- and becomes the first record of a later batch; csv_peek reads
 * the next row ahead the same way.  A held row is never read or converted
 * again, and is counted (records_read, values_coerced) when delivered.
 *
 * Reader state invariants: buf[start..end) holds unconsumed input; the
 * record being scanned starts at `start` (unless skipping an over-long
 * record, whose bytes are discarded as scanned); buf[start..scan) has been
 * scanned, ending in scanner state `st` with `seps` separators and `nls`
 * quoted line breaks seen.  When held.set, the held row is the next
 * record, before the one at `start`.  first_seen once the first record was
 * taken (a header read or ruled out); col_of, when set (header), has
 * cs.layout.max_pos + 1 entries: col_of[pos] is the 1-based column of the
 * record that position pos of the layout reads.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csv_held.h"
#include "format.h"
#include "gsq_source_ops.h"

enum { S_START, S_UNQ, S_QUOTED, S_QEND };

#define CSV_BUF_INIT (256u * 1024u)

typedef struct csv_reader {
    int fd;
    int own_fd;
    int pollable;            /* a pipe or terminal: when it has no input,
                              * an empty batch (the run loop waits) */
    const char *name;        /* for messages: the path or "<stdin>" */
    char *buf;
    size_t cap, start, end, scan;
    int eof;
    int st;
    uint32_t seps, nls;
    int skipping;
    int started;             /* the first input was read (BOM check done) */
    uint64_t line;           /* line number where the current record starts */
    uint32_t expected;       /* fields per row, 0 until the first row */
    gsq_csv_slots cs;        /* the value cache's slots and layout */
    uint32_t n_described;
    gsq_buf described;       /* report lines of the first malformed rows */
    gsq_buf first_coerced;   /* "path:line: field N 'x' is not a valid T" */
    uint64_t size;           /* a regular file's bytes at open (0: not one) */
    gsq_buf warnings;        /* short-row warnings */
    int32_t time_slot;       /* value cache slots of the source's time and */
    int32_t arrival_slot;    /*   arrival columns (-1: none) */
    int peeking;             /* csv_peek: hold the next row, whatever its time */
    gsq_csv_held held;       /* set: the next record (csv_held.h) */
    int header;              /* option csv_header: the first record names columns */
    int first_seen;          /* the first record was taken */
    uint32_t *col_of;        /* header: each layout position's column (above) */
    uint64_t header_skipped; /* without the option: the line of the first
                              * record, skipped as a header (0: none) */
    int header_moved;        /*   and some name in it is not at its field's position */
} csv_reader;

/* ---- setup ------------------------------------------------------------ */

/* A TCP connection to HOST:PORT (Tigon's csvtcp: source; [V6ADDR]:PORT
 * for an IPv6 address): its socket, or -1 with the run failed. */
static int tcp_connect(gsq_run *r, const char *hostport)
{
    char host[256];
    const char *colon = strrchr(hostport, ':'), *h = hostport;
    size_t hn;
    struct addrinfo hints, *res = NULL, *ai;
    int fd = -1, rc, err = 0;
    if (!colon || !colon[1]) {
        gsq_run_fail(r, "csvtcp:%s: expected csvtcp:HOST:PORT", hostport);
        return -1;
    }
    hn = (size_t)(colon - hostport);
    if (hn >= 2 && h[0] == '[' && h[hn - 1] == ']') { /* [::1]:9000 */
        h++;
        hn -= 2;
    }
    if (hn == 0 || hn >= sizeof host) {
        gsq_run_fail(r, "csvtcp:%s: expected csvtcp:HOST:PORT", hostport);
        return -1;
    }
    memcpy(host, h, hn);
    host[hn] = '\0';
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc != 0) {
        gsq_run_fail(r, "csvtcp:%s: %s", hostport, gai_strerror(rc));
        return -1;
    }
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        gsq_run_fail(r, "cannot connect to csvtcp:%s: %s", hostport, strerror(err));
    return fd;
}

/* The unit a field's slot counts an instant in (csv_layout.c: a time
 * format without a declared unit is in seconds). */
static uint32_t field_unit(const gsq_csv_field *f)
{
    return f->time_format != GSQ_TF_NONE && !f->time_unit_ns ? 1000000000u : f->time_unit_ns;
}

/* Fields of the source's LFTAs reading one (position, type) must read it
 * alike (the value cache has one slot for it): 0, or -1 with the run
 * failed naming two that do not. */
static int check_formats(gsq_run *r, const gsq_source *s)
{
    uint32_t i, j, k, l;
    for (i = 0; i < s->n_lftas; i++) {
        const gsq_lfta_def *a = s->lftas[i]->lfta;
        for (j = 0; j < a->n_csv_fields; j++) {
            const gsq_csv_field *f = &a->csv_fields[j];
            for (k = i; k < s->n_lftas; k++) {
                const gsq_lfta_def *b = s->lftas[k]->lfta;
                for (l = k == i ? j + 1 : 0; l < b->n_csv_fields; l++) {
                    const gsq_csv_field *g = &b->csv_fields[l];
                    if (g->pos != f->pos || g->type != f->type ||
                        (g->time_format == f->time_format && field_unit(g) == field_unit(f)))
                        continue;
                    gsq_run_fail(r, "interface '%s': field %s of PROTOCOL %s and field %s of "
                                    "PROTOCOL %s read CSV column %u as %s with different "
                                    "time_format or time_unit properties; declare them alike",
                                 s->iface, f->name ? f->name : "?", a->protocol,
                                 g->name ? g->name : "?", b->protocol, (unsigned)f->pos,
                                 gsq_type_name(f->type));
                    return -1;
                }
            }
        }
    }
    return 0;
}

static int csv_open(gsq_run *r, gsq_source *s)
{
    csv_reader *rd = calloc(1, sizeof *rd);
    if (!rd) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    s->impl = rd;
    rd->fd = -1;
    rd->line = 1;
    rd->st = S_START;
    if (s->ops == &gsq_csvtcp_ops) {
        rd->name = s->uri;
        rd->fd = tcp_connect(r, s->path);
        if (rd->fd < 0)
            return -1;
        rd->own_fd = 1;
    } else if (strcmp(s->path, "-") == 0) {
        rd->fd = STDIN_FILENO;
        rd->name = "<stdin>";
    } else {
        rd->name = s->path;
        rd->fd = open(s->path, O_RDONLY | O_CLOEXEC);
        if (rd->fd < 0) {
            gsq_run_fail(r, "cannot open %s: %s", s->path, strerror(errno));
            return -1;
        }
        rd->own_fd = 1;
    }
    {
        struct stat st;
        int regular = fstat(rd->fd, &st) == 0 && S_ISREG(st.st_mode);
        rd->pollable = !regular;
        rd->size = regular && st.st_size > 0 ? (uint64_t)st.st_size : 0;
    }
    rd->cap = CSV_BUF_INIT;
    rd->buf = malloc(rd->cap);
    if (!rd->buf || gsq_csv_slots_build(&rd->cs, s) != 0) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    rd->time_slot = gsq_csv_slot_of(&rd->cs, s->time_pos, s->time_type);
    rd->arrival_slot = gsq_csv_slot_of(&rd->cs, s->arrival_pos, s->arrival_type);
    {
        const gsq_iface_time *t = gsq_iface_settings(r, s->iface);
        rd->header = t && t->csv_header;
    }
    return check_formats(r, s);
}

static void csv_close(gsq_source *s)
{
    csv_reader *rd = s->impl;
    if (!rd)
        return;
    if (rd->own_fd && rd->fd >= 0)
        close(rd->fd);
    free(rd->buf);
    gsq_csv_slots_free(&rd->cs);
    gsq_buf_free(&rd->described);
    gsq_buf_free(&rd->first_coerced);
    gsq_buf_free(&rd->warnings);
    gsq_csv_held_free(&rd->held);
    free(rd->col_of);
    free(rd);
    s->impl = NULL;
}

/* ---- input ------------------------------------------------------------ */

/* Whether a pipe or terminal has input now (the run loop does the waiting:
 * csv_wait_fd).  0 ready, 2 not yet, 1 stop requested. */
static int input_ready(gsq_run *r, csv_reader *rd)
{
    struct pollfd pfd;
    int rc;
    pfd.fd = rd->fd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    rc = poll(&pfd, 1, 0);
    if (rc < 0 && errno == EINTR)
        return gsq_run_cancelled(r) ? 1 : 2;
    return rc == 0 ? 2 : 0; /* errors surface in read(2) */
}

/* Read more input.  0 ok (maybe eof now), 1 stop requested, 2 nothing yet
 * (a pipe is idle), -1 error. */
static int fill(gsq_run *r, gsq_source *s, csv_reader *rd)
{
    ssize_t n;
    if (rd->pollable) {
        int w = input_ready(r, rd);
        if (w)
            return w;
    }
    if (rd->start > 0) {
        memmove(rd->buf, rd->buf + rd->start, rd->end - rd->start);
        rd->end -= rd->start;
        rd->scan -= rd->start;
        rd->start = 0;
    }
    if (rd->end == rd->cap) {
        char *nb = realloc(rd->buf, rd->cap * 2);
        if (!nb) {
            gsq_run_fail(r, "out of memory reading %s", rd->name);
            return -1;
        }
        rd->buf = nb;
        rd->cap *= 2;
    }
    for (;;) {
        n = read(rd->fd, rd->buf + rd->end, rd->cap - rd->end);
        if (n >= 0)
            break;
        if (errno == EINTR) {
            if (gsq_run_cancelled(r))
                return 1;
            continue;
        }
        gsq_run_fail(r, "cannot read %s: %s", rd->name, strerror(errno));
        return -1;
    }
    if (n == 0)
        rd->eof = 1;
    rd->end += (size_t)n;
    s->bytes_read += (uint64_t)n;
    if (!rd->started && (rd->end >= 3 || rd->eof)) {
        rd->started = 1; /* skip a UTF-8 byte order mark */
        if (rd->end >= 3 && memcmp(rd->buf, "\xef\xbb\xbf", 3) == 0)
            rd->start = rd->scan = 3;
    }
    return 0;
}

/* Scan buf[scan..end) for the end of the record.  1 with *nl = index of
 * its '\n', or 0 when more input is needed. */
static int scan_record(csv_reader *rd, char sep, size_t *nl)
{
    const char *b = rd->buf;
    size_t i = rd->scan, end = rd->end;
    int st = rd->st;
    for (; i < end; i++) {
        char c = b[i];
        if (st == S_QUOTED) {
            if (c == '"')
                st = S_QEND;
            else if (c == '\n')
                rd->nls++;
            continue;
        }
        if (st == S_QEND && c == '"') {
            st = S_QUOTED;
            continue;
        }
        if (c == '\n') {
            rd->scan = i;
            rd->st = st;
            *nl = i;
            return 1;
        }
        if (c == sep) {
            rd->seps++;
            st = S_START;
        } else if (st == S_START && c == '"') {
            st = S_QUOTED;
        } else {
            st = S_UNQ;
        }
    }
    rd->scan = i;
    rd->st = st;
    return 0;
}

/* Unquote a record's content p[0..n) into out; field_end gets nf+1 entries.
 * Returns the number of bytes written. */
static uint32_t unescape(const char *p, size_t n, char sep, char *out, uint32_t *field_end)
{
    size_t i;
    uint32_t k = 0, f = 0;
    int st = S_START;
    field_end[0] = 0;
    for (i = 0; i < n; i++) {
        char c = p[i];
        if (st == S_QUOTED) {
            if (c == '"')
                st = S_QEND;
            else
                out[k++] = c;
            continue;
        }
        if (st == S_QEND && c == '"') {
            out[k++] = '"';
            st = S_QUOTED;
            continue;
        }
        if (c == sep) {
            field_end[++f] = k;
            st = S_START;
        } else if (st == S_START && c == '"') {
            st = S_QUOTED;
        } else {
            out[k++] = c;
            st = S_UNQ;
        }
    }
    field_end[++f] = k;
    return k;
}

/* ---- row handling ----------------------------------------------------- */

static void describe(csv_reader *rd, uint64_t line, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void describe(csv_reader *rd, uint64_t line, const char *fmt, ...)
{
    va_list ap;
    char msg[256];
    if (rd->n_described >= GSQ_MAX_DESCRIBED)
        return;
    rd->n_described++;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gsq_buf_printf(&rd->described, "gsqlc: %s:%llu: %s\n", rd->name, (unsigned long long)line,
                   msg);
}

/* Why a value was not read (convert's nonzero returns). */
enum { CONV_TEXT = 1, CONV_RANGE = 2 };

/* "path:line: field N 'x' is not a valid T" for the value p[0..n) of
 * column `col` read as slot sl, which convert refused with `why`; a number
 * field given an ISO-8601 time is told of time_format. */
static void describe_value(gsq_buf *b, const char *name, uint64_t line, uint32_t col,
                           const char *p, size_t n, const gsq_csv_slot *sl, int why)
{
    int64_t sec;
    uint32_t ns;
    gsq_buf_printf(b, "%s:%llu: field %u '", name, (unsigned long long)line, (unsigned)col);
    gsq_buf_quote_text(b, p, n, 40);
    if (sl->time_format == GSQ_TF_NONE) {
        gsq_buf_printf(b, "' is not a valid %s", gsq_type_name(sl->type));
        if (sl->type != GSQ_T_STRING && gsq_parse_instant(p, n, GSQ_TF_ISO8601, &sec, &ns) == 0)
            gsq_buf_adds(b, " (it is an ISO-8601 time: the field's property time_format "
                            "iso8601 reads it as one)");
    } else if (why == CONV_RANGE) {
        gsq_buf_printf(b, "' is a time beyond the range of type %s (in %s)",
                       gsq_type_name(sl->type), gsq_time_unit_name(sl->unit_ns));
    } else if (sl->time_format == GSQ_TF_ISO8601) {
        gsq_buf_adds(b, "' is not an ISO-8601 time");
    } else {
        gsq_buf_printf(b, "' is not a number of %s since 1970 (%s)",
                       sl->time_format == GSQ_TF_EPOCH_S    ? "seconds"
                       : sl->time_format == GSQ_TF_EPOCH_MS ? "milliseconds"
                       : sl->time_format == GSQ_TF_EPOCH_US ? "microseconds"
                                                            : "nanoseconds",
                       gsq_time_format_name(sl->time_format));
    }
}

/* The instant p[0..n) in slot sl's time format as a value of its type in
 * its unit: 0, CONV_TEXT (no such instant) or CONV_RANGE (the type cannot
 * hold it); *v is 0 unless 0 is returned. */
static int convert_time(const gsq_csv_slot *sl, const char *p, size_t n, gsq_csv_value *v)
{
    int64_t sec, x;
    uint32_t ns;
    if (gsq_parse_instant(p, n, sl->time_format, &sec, &ns) != 0)
        return CONV_TEXT;
    if (sl->type == GSQ_T_FLOAT) {
        v->f = ((double)sec * 1e9 + (double)ns) / (double)sl->unit_ns;
        return 0;
    }
    if (gsq_instant_units(sec, ns, sl->unit_ns, &x) != 0)
        return CONV_RANGE;
    switch (sl->type) {
    case GSQ_T_USHORT: if (x < 0 || x > UINT16_MAX) return CONV_RANGE; v->u = (uint64_t)x; break;
    case GSQ_T_UINT: if (x < 0 || x > UINT32_MAX) return CONV_RANGE; v->u = (uint64_t)x; break;
    case GSQ_T_ULLONG: if (x < 0) return CONV_RANGE; v->u = (uint64_t)x; break;
    case GSQ_T_INT: if (x < INT32_MIN || x > INT32_MAX) return CONV_RANGE; v->i = x; break;
    case GSQ_T_LLONG: v->i = x; break;
    default: return CONV_TEXT; /* the compiler allows integers and float only */
    }
    return 0;
}

/* Slot sl's value of the text p[0..n): 0, or nonzero (CONV_*) when it is
 * not valid (v then holds what Tigon reads: the valid prefix, or 0). */
static int convert(const gsq_csv_slot *sl, const char *p, size_t n, gsq_csv_value *v)
{
    int rc = 0;
    if (sl->time_format != GSQ_TF_NONE) {
        rc = convert_time(sl, p, n, v);
        if (rc)
            memset(v, 0, sizeof *v);
        return rc;
    }
    switch (sl->type) {
    case GSQ_T_BOOL: { uint8_t x; rc = gsq_parse_bool(p, n, &x); v->u = x; break; }
    case GSQ_T_USHORT: { uint16_t x; rc = gsq_parse_ushort(p, n, &x); v->u = x; break; }
    case GSQ_T_UINT: { uint32_t x; rc = gsq_parse_uint(p, n, &x); v->u = x; break; }
    case GSQ_T_INT: { int32_t x; rc = gsq_parse_int(p, n, &x); v->i = x; break; }
    case GSQ_T_ULLONG: rc = gsq_parse_ullong(p, n, &v->u); break;
    case GSQ_T_LLONG: rc = gsq_parse_llong(p, n, &v->i); break;
    case GSQ_T_FLOAT: rc = gsq_parse_float(p, n, &v->f); break;
    case GSQ_T_IP: { uint32_t x; rc = gsq_parse_ip_value(p, n, &x); v->u = x; break; }
    case GSQ_T_IPV6: rc = gsq_parse_ipv6_value(p, n, &v->v6); break;
    case GSQ_T_STRING: v->s.p = p; v->s.len = (uint32_t)n; break;
    }
    return rc ? CONV_TEXT : 0;
}

/* ---- header ----------------------------------------------------------- */

/* p[0..n) less blanks around. */
static void trim_cell(const char **p, size_t *n)
{
    while (*n && (**p == ' ' || **p == '\t'))
        (*p)++, (*n)--;
    while (*n && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
        (*n)--;
}

/* Whether the text p[0..n) (trimmed) is `name`, exactly (exact) or
 * ignoring ASCII case. */
static int cell_is(const char *p, size_t n, const char *name, int exact)
{
    size_t k;
    trim_cell(&p, &n);
    if (strlen(name) != n)
        return 0;
    for (k = 0; k < n; k++) {
        char a = p[k], b = name[k];
        if (!exact && a >= 'A' && a <= 'Z')
            a = (char)(a - 'A' + 'a');
        if (!exact && b >= 'A' && b <= 'Z')
            b = (char)(b - 'A' + 'a');
        if (a != b)
            return 0;
    }
    return 1;
}

/* The name of the field read at position pos (the first LFTA's that names
 * one, or the arrival column's), and in *d the LFTA whose PROTOCOL has it
 * (NULL for the arrival column); NULL when none names it. */
static const char *name_at(const gsq_source *s, uint32_t pos, const gsq_lfta_def **d)
{
    uint32_t i, j;
    for (i = 0; i < s->n_lftas; i++)
        for (j = 0; j < s->lftas[i]->lfta->n_csv_fields; j++)
            if (s->lftas[i]->lfta->csv_fields[j].pos == pos &&
                s->lftas[i]->lfta->csv_fields[j].name) {
                *d = s->lftas[i]->lfta;
                return s->lftas[i]->lfta->csv_fields[j].name;
            }
    *d = NULL;
    return pos == s->arrival_pos ? s->arrival_name : NULL;
}

/* A field read at pos whose name is not `name` (NULL: none), and its
 * PROTOCOL in *proto. */
static const char *other_name_at(const gsq_source *s, uint32_t pos, const char *name,
                                 const char **proto)
{
    uint32_t i, j;
    for (i = 0; i < s->n_lftas; i++)
        for (j = 0; j < s->lftas[i]->lfta->n_csv_fields; j++) {
            const gsq_csv_field *f = &s->lftas[i]->lfta->csv_fields[j];
            if (f->pos == pos && f->name && strcmp(f->name, name) != 0) {
                *proto = s->lftas[i]->lfta->protocol;
                return f->name;
            }
        }
    return NULL;
}

/* The header's columns, "a, b, c", into b. */
static void list_cells(gsq_buf *b, const char *data, const uint32_t *ends, uint32_t nf)
{
    uint32_t c;
    for (c = 1; c <= nf; c++) {
        const char *p = data + ends[c - 1];
        size_t n = ends[c] - ends[c - 1];
        trim_cell(&p, &n);
        if (c > 1)
            gsq_buf_adds(b, ", ");
        gsq_buf_quote_text(b, p, n, 40);
    }
}

/* The column (1-based) of the header data/ends (nf cells) named `name`:
 * exactly, else ignoring case; 0 when none is; -1 when two are exactly. */
static int64_t column_named(const char *data, const uint32_t *ends, uint32_t nf,
                            const char *name)
{
    uint32_t c, found = 0;
    int exact;
    for (exact = 1; exact >= 0 && !found; exact--)
        for (c = 1; c <= nf; c++)
            if (cell_is(data + ends[c - 1], ends[c] - ends[c - 1], name, exact)) {
                if (found)
                    return exact ? -1 : (int64_t)found; /* ignoring case: the first */
                found = c;
            }
    return found;
}

/* Read the header record (nf unquoted cells at data/ends, starting at
 * `line`): map every position of the layout to the column named as its
 * field, and fix the field count.  0, or -1 with the run failed. */
static int read_header(gsq_run *r, gsq_source *s, csv_reader *rd, const char *data,
                       const uint32_t *ends, uint32_t nf, uint64_t line)
{
    uint32_t k, max_pos = rd->cs.layout.max_pos;
    gsq_buf cols = {0};
    rd->col_of = calloc((size_t)max_pos + 1, sizeof *rd->col_of);
    if (!rd->col_of) {
        gsq_run_fail(r, "out of memory reading %s", rd->name);
        return -1;
    }
    for (k = 0; k < rd->cs.n; k++) {
        uint32_t pos = rd->cs.slot[k].pos;
        const gsq_lfta_def *d;
        const char *name = name_at(s, pos, &d), *other, *oproto = "";
        int64_t c;
        if (rd->col_of[pos])
            continue;
        if (!name) {
            gsq_run_fail(r, "%s:%llu: CSV column %u is read by a field without a name, so the "
                            "header cannot say which column it is: rebuild the query set with "
                            "this gsqlc", rd->name, (unsigned long long)line, (unsigned)pos);
            return -1;
        }
        if ((other = other_name_at(s, pos, name, &oproto)) != NULL) { /* then d is set */
            gsq_run_fail(r, "%s: fields %s (PROTOCOL %s) and %s (PROTOCOL %s) both read CSV "
                            "position %u; with a header columns are found by name: give them "
                            "one name, or different positions", rd->name, name,
                         d ? d->protocol : "?", other, oproto, (unsigned)pos);
            return -1;
        }
        c = column_named(data, ends, nf, name);
        if (c <= 0) {
            list_cells(&cols, data, ends, nf);
            if (c == 0)
                gsq_run_fail(r, "%s:%llu: the header has no column '%s' (field %s%s%s); its "
                                "columns: %s", rd->name, (unsigned long long)line, name,
                             name, d ? " of PROTOCOL " : ", the arrival column",
                             d ? d->protocol : "", gsq_buf_str(&cols));
            else
                gsq_run_fail(r, "%s:%llu: the header names column '%s' (field %s) twice; its "
                                "columns: %s", rd->name, (unsigned long long)line, name, name,
                             gsq_buf_str(&cols));
            gsq_buf_free(&cols);
            return -1;
        }
        rd->col_of[pos] = (uint32_t)c;
    }
    rd->expected = nf;
    return 0;
}

/* Whether cell p[0..n) is the name (ignoring case) of a field read from
 * the source: 2 of one read at pos, 1 of one read elsewhere, else 0. */
static int field_name_cell(const gsq_source *s, uint32_t pos, const char *p, size_t n)
{
    uint32_t i, j;
    int found = 0;
    for (i = 0; i < s->n_lftas; i++)
        for (j = 0; j < s->lftas[i]->lfta->n_csv_fields; j++) {
            const gsq_csv_field *f = &s->lftas[i]->lfta->csv_fields[j];
            if (f->name && cell_is(p, n, f->name, 0)) {
                if (f->pos == pos)
                    return 2;
                found = 1;
            }
        }
    if (s->arrival_name && cell_is(p, n, s->arrival_name, 0))
        return s->arrival_pos == pos ? 2 : 1;
    return found;
}

/* Whether the first record (nf unquoted cells at data/ends), read without
 * the header option, is a header all the same: the cell at every position
 * read is the name of a field read from the source, and no value of a
 * type other than string is valid.  *moved: some name is not at its
 * field's position. */
static int looks_like_header(const gsq_source *s, const csv_reader *rd, const char *data,
                             const uint32_t *ends, uint32_t nf, int *moved)
{
    uint32_t k;
    *moved = 0;
    if (rd->cs.n == 0)
        return 0;
    for (k = 0; k < rd->cs.n; k++) {
        const gsq_csv_slot *sl = &rd->cs.slot[k];
        const char *p;
        size_t n;
        int named;
        gsq_csv_value v;
        if (sl->pos > nf)
            return 0;
        p = data + ends[sl->pos - 1];
        n = ends[sl->pos] - ends[sl->pos - 1];
        if (sl->type != GSQ_T_STRING && convert(sl, p, n, &v) == 0)
            return 0;
        if (!(named = field_name_cell(s, sl->pos, p, n)))
            return 0;
        *moved |= named == 1;
    }
    return 1;
}

static void first_row(csv_reader *rd, uint32_t nf)
{
    uint32_t k, j;
    rd->expected = nf;
    for (k = 0; k < rd->cs.n; k++) {
        uint32_t pos = rd->cs.slot[k].pos;
        if (pos <= nf)
            continue;
        for (j = 0; j < k; j++)
            if (rd->cs.slot[j].pos == pos)
                break;
        if (j < k)
            continue; /* already warned for this position */
        gsq_buf_printf(&rd->warnings,
                       "gsqlc: warning: %s: field %u is read but rows have only %u fields; "
                       "it reads as 0 / empty / FALSE\n",
                       rd->name, (unsigned)pos, (unsigned)nf);
    }
}

enum { ROW_DONE, ROW_FULL, ROW_ERR, ROW_HELD };

/* Commit the row converted at mem (the ring's reservation of need bytes:
 * values, nf + 1 field ends, len bytes of text) as the next record. */
static void commit_row(gsq_source *s, csv_reader *rd, uint8_t *mem, size_t need, uint32_t nf,
                       uint32_t len, uint64_t coerced, const gsq_stamp *st)
{
    gsq_record *rec = gsq_ring_commit(&s->ring, need);
    rec->kind = GSQ_SRC_CSV;
    rec->vals = (const gsq_csv_value *)(void *)mem;
    rec->field_end = (const uint32_t *)(void *)(mem + (size_t)rd->cs.n * sizeof(gsq_csv_value));
    rec->data = mem + gsq_csv_text_off(&rd->cs, nf);
    rec->len = len;
    rec->n_fields = nf;
    rec->layout = &rd->cs.layout;
    rec->app_usec = st->app_usec;
    rec->arrival_usec = st->arrival_usec;
    rec->ts_unreadable = st->unreadable;
    s->records_read++;
    s->values_coerced += coerced;
}

/* Deliver the held row as the first record of the (empty) ring's batch.
 * 0, or -1 with the run failed. */
static int release_held(gsq_run *r, gsq_source *s, csv_reader *rd)
{
    gsq_csv_held *h = &rd->held;
    uint8_t *mem = gsq_ring_reserve(&s->ring, h->need);
    if (!mem) {
        gsq_run_fail(r, "out of memory reading %s", rd->name);
        return -1;
    }
    gsq_csv_unhold(h, &rd->cs, mem);
    commit_row(s, rd, mem, h->need, h->nf, h->len, h->coerced, &h->ts);
    return 0;
}

/* The first record, unquoted at data/ends (nf cells, starting at `line`):
 * a header to read (option csv_header) or one to skip.  ROW_DONE when it
 * was one (not a record), ROW_ERR when the run failed, else -1: a row. */
static int first_record(gsq_run *r, gsq_source *s, csv_reader *rd, const char *data,
                        const uint32_t *ends, uint32_t nf, uint64_t line)
{
    rd->first_seen = 1;
    if (rd->header)
        return read_header(r, s, rd, data, ends, nf, line) ? ROW_ERR : ROW_DONE;
    if (!looks_like_header(s, rd, data, ends, nf, &rd->header_moved))
        return -1;
    rd->header_skipped = line;
    return ROW_DONE;
}

/* Turn the record content p[0..n) with nf fields, starting at `line`, into
 * a ring record (or a rejection, or the header). */
static int take_row(gsq_run *r, gsq_source *s, csv_reader *rd, const char *p, size_t n,
                    uint32_t nf, uint64_t line)
{
    size_t vals_sz, ends_sz, need;
    uint8_t *mem;
    gsq_csv_value *vals;
    uint32_t *ends, k, len;
    char *data;
    uint64_t coerced = 0;
    uint32_t last_coerced = 0;
    int time_bad = 0, arrival_bad = 0;
    gsq_stamp st = {0, 0, 0};

    if (rd->expected == 0 && !rd->header)
        first_row(rd, nf);
    if (rd->expected != 0 && nf != rd->expected) {
        s->records_read++;
        s->rows_rejected++;
        describe(rd, line, "expected %u fields, found %u", (unsigned)rd->expected, (unsigned)nf);
        return ROW_DONE;
    }
    vals_sz = (size_t)rd->cs.n * sizeof(gsq_csv_value);
    ends_sz = ((size_t)nf + 1) * sizeof(uint32_t);
    need = vals_sz + ends_sz + n;
    mem = gsq_ring_reserve(&s->ring, need);
    if (!mem) {
        if (s->ring.used == 0) {
            gsq_run_fail(r, "out of memory reading %s", rd->name);
            return ROW_ERR;
        }
        return ROW_FULL;
    }
    vals = (gsq_csv_value *)(void *)mem;
    ends = (uint32_t *)(void *)(mem + vals_sz);
    data = (char *)(mem + vals_sz + ends_sz);
    len = unescape(p, n, r->csv_sep, data, ends);
    if (!rd->first_seen) { /* the reservation is simply not committed */
        int rc = first_record(r, s, rd, data, ends, nf, line);
        if (rc >= 0)
            return rc;
    }

    for (k = 0; k < rd->cs.n; k++) {
        const gsq_csv_slot *sl = &rd->cs.slot[k];
        uint32_t col = rd->col_of ? rd->col_of[sl->pos] : sl->pos;
        const char *fp;
        size_t fn;
        int why;
        memset(&vals[k], 0, sizeof vals[k]);
        if (col > nf) { /* short row: the zero value (warned once) */
            if (sl->type == GSQ_T_STRING)
                vals[k].s.p = data;
            time_bad |= (int32_t)k == rd->time_slot;
            arrival_bad |= (int32_t)k == rd->arrival_slot;
            continue;
        }
        fp = data + ends[col - 1];
        fn = ends[col] - ends[col - 1];
        if ((why = convert(sl, fp, fn, &vals[k])) != 0) {
            time_bad |= (int32_t)k == rd->time_slot;
            arrival_bad |= (int32_t)k == rd->arrival_slot;
            if (r->csv_strict) {
                s->records_read++;
                s->rows_rejected++;
                if (rd->n_described < GSQ_MAX_DESCRIBED) {
                    rd->n_described++;
                    gsq_buf_adds(&rd->described, "gsqlc: ");
                    describe_value(&rd->described, rd->name, line, col, fp, fn, sl, why);
                    gsq_buf_addc(&rd->described, '\n');
                }
                return ROW_DONE; /* the reservation is simply not committed */
            }
            if (s->values_coerced + coerced == 0)
                describe_value(&rd->first_coerced, rd->name, line, col, fp, fn, sl, why);
            if (col != last_coerced) /* a cell counts once, whatever types read it */
                coerced++;
            last_coerced = col;
        }
    }
    if (s->has_ts)
        gsq_source_stamp(s, rd->time_slot >= 0 && !time_bad ? &vals[rd->time_slot] : NULL,
                         rd->arrival_slot >= 0 && !arrival_bad ? &vals[rd->arrival_slot] : NULL,
                         &st);
    if (rd->peeking || (!st.unreadable && st.arrival_usec > s->limit_usec)) {
        if (!rd->peeking) /* the next round's */
            s->held_back++;
        if (gsq_csv_hold(&rd->held, &rd->cs, mem, need, nf, len) != 0) {
            gsq_run_fail(r, "out of memory reading %s", rd->name);
            return ROW_ERR;
        }
        rd->held.coerced = coerced;
        rd->held.ts = st;
        return ROW_HELD;
    }
    commit_row(s, rd, mem, need, nf, len, coerced, &st);
    return ROW_DONE;
}

/* Finish the current record: the next one starts at `next`. */
static void advance(csv_reader *rd, size_t next)
{
    rd->line += 1 + rd->nls;
    rd->start = rd->scan = next;
    rd->st = S_START;
    rd->seps = rd->nls = 0;
}

static int csv_read_batch(gsq_run *r, gsq_source *s)
{
    csv_reader *rd = s->impl;
    const char sep = r->csv_sep;

    if (rd->held.set) {
        if (!rd->held.ts.unreadable && rd->held.ts.arrival_usec > s->limit_usec) {
            s->held_back++; /* still a later round's */
            return 0;
        }
        if (release_held(r, s, rd) != 0)
            return -1;
    }
    while (!gsq_ring_batch_full(&s->ring) && !r->failed) {
        size_t nl = 0, n, next;
        int found = scan_record(rd, sep, &nl);
        int rc;

        if (!found && rd->skipping) {
            rd->start = rd->scan = rd->end; /* discard what was scanned */
        } else if (!found && rd->scan - rd->start > (size_t)GSQ_MAX_LINE + 1) {
            rd->skipping = 1;
            rd->start = rd->scan = rd->end;
        }
        if (!found && !rd->eof) {
            if (s->ring.n_recs > 0)
                return 0; /* deliver what we have before blocking on input */
            rc = fill(r, s, rd);
            if (rc < 0)
                return -1;
            if (rc == 2)
                return 0; /* idle: an empty batch */
            if (rc > 0) {
                s->at_eof = 1;
                return 0;
            }
            continue;
        }
        if (!found) {
            /* end of input: the rest, if any, is the last record */
            if (rd->start == rd->end && !rd->skipping) {
                s->at_eof = 1;
                return 0;
            }
            nl = rd->end;
            next = rd->end;
        } else {
            next = nl + 1;
        }

        if (rd->skipping) {
            s->records_read++;
            s->rows_rejected++;
            describe(rd, rd->line, "record longer than %u MiB", GSQ_MAX_LINE >> 20);
            rd->skipping = 0;
            advance(rd, next);
            continue;
        }
        if (!found && rd->st == S_QUOTED) {
            s->records_read++;
            s->rows_rejected++;
            describe(rd, rd->line, "unterminated quoted field");
            advance(rd, next);
            continue;
        }
        n = nl - rd->start;
        if (n > 0 && rd->buf[rd->start + n - 1] == '\r')
            n--;
        if (n == 0) { /* blank line */
            advance(rd, next);
            continue;
        }
        if (n > GSQ_MAX_LINE) {
            s->records_read++;
            s->rows_rejected++;
            describe(rd, rd->line, "record longer than %u MiB", GSQ_MAX_LINE >> 20);
            advance(rd, next);
            continue;
        }
        rc = take_row(r, s, rd, rd->buf + rd->start, n, rd->seps + 1, rd->line);
        if (rc == ROW_ERR)
            return -1;
        if (rc == ROW_FULL)
            return 0;
        advance(rd, next);
        if (rc == ROW_HELD)
            return 0;
    }
    return r->failed ? -1 : 0;
}

/* The arrival instant of the next row, read ahead and held (the ring is
 * empty: peek comes between batches).  A pipe (a FIFO path) is waited
 * for; a row with an unreadable time gives the last readable one. */
static int csv_peek(gsq_run *r, gsq_source *s, uint64_t *ts_usec)
{
    csv_reader *rd = s->impl;
    while (!rd->held.set) {
        int rc;
        if (s->at_eof)
            return 0;
        if (gsq_run_cancelled(r)) {
            s->at_eof = 1;
            return 0;
        }
        rd->peeking = 1;
        rc = csv_read_batch(r, s);
        rd->peeking = 0;
        if (rc < 0)
            return -1;
    }
    *ts_usec = rd->held.ts.arrival_usec;
    return 1;
}

/* The names of the fields read, in position order: "a, b, c". */
static void list_fields(gsq_buf *b, const gsq_source *s, const csv_reader *rd)
{
    uint32_t k, last = 0;
    for (k = 0; k < rd->cs.n; k++) {
        const gsq_lfta_def *d;
        const char *name;
        if (rd->cs.slot[k].pos == last)
            continue;
        last = rd->cs.slot[k].pos;
        name = name_at(s, last, &d);
        if (b->len)
            gsq_buf_adds(b, ", ");
        gsq_buf_adds(b, name ? name : "?");
    }
}

static void csv_report(const gsq_source *s, gsq_buf *out)
{
    const csv_reader *rd = s->impl;
    if (!rd)
        return;
    if (rd->header_skipped) {
        gsq_buf names = {0};
        list_fields(&names, s, rd);
        gsq_buf_printf(out,
                       "gsqlc: warning: %s:%llu: the first line names the fields (%s) and was "
                       "skipped as a header%s; bind the source as %s?header=1 to read its "
                       "header and find each field's column by its name\n",
                       rd->name, (unsigned long long)rd->header_skipped, gsq_buf_str(&names),
                       rd->header_moved ? ", but some are not at their fields' positions: "
                                          "the rows were read by position"
                                        : "",
                       s->uri);
        gsq_buf_free(&names);
    }
    if (s->rows_rejected) {
        gsq_buf_printf(out, "gsqlc: %s: %llu of %llu rows rejected as malformed%s\n", rd->name,
                       (unsigned long long)s->rows_rejected,
                       (unsigned long long)s->records_read,
                       s->rows_rejected > rd->n_described ? "; the first ones:" : ":");
        gsq_buf_add(out, rd->described.p, rd->described.len);
    }
    if (s->values_coerced) {
        gsq_buf_printf(out,
                       "gsqlc: warning: %s: %llu %s empty or not valid for their type "
                       "and were read as Tigon does (the valid prefix, or 0); first: %s\n",
                       rd->name, (unsigned long long)s->values_coerced,
                       s->values_coerced == 1 ? "value was" : "values were",
                       gsq_buf_str(&rd->first_coerced));
    }
    gsq_buf_add(out, rd->warnings.p, rd->warnings.len);
}

/* "header": "read" (option csv_header), "skipped" (a first line naming
 * the fields, without it) or null. */
static void csv_stats(const gsq_source *s, gsq_buf *out)
{
    const csv_reader *rd = s->impl;
    const char *h = !rd ? NULL : rd->header ? (rd->first_seen ? "read" : NULL)
                                 : rd->header_skipped ? "skipped" : NULL;
    if (h)
        gsq_buf_printf(out, ",\"header\":\"%s\"", h);
    else
        gsq_buf_adds(out, ",\"header\":null");
}


/* Standard input, or any pipe, FIFO or terminal: its rows arrive over time
 * (the sinks are flushed after every round, as for a live interface). */
static int csv_streaming(const gsq_source *s)
{
    const csv_reader *rd = s->impl;
    return strcmp(s->path, "-") == 0 || (rd && rd->pollable);
}

static int csv_wait_fd(const gsq_source *s)
{
    const csv_reader *rd = s->impl;
    return rd && rd->pollable ? rd->fd : -1;
}

/* A file's bytes read of its size at open (standard input, a pipe: of
 * none known). */
static void csv_progress(const gsq_source *s, uint64_t *pos, uint64_t *total)
{
    const csv_reader *rd = s->impl;
    *pos = s->bytes_read;
    *total = rd->size;
}

/* The members csv: and csvtcp: share: one reader, over a file, a pipe or
 * a socket (csv_open tells them apart by their ops). */
#define CSV_READER_OPS                                                                   \
    .records_key = "rows_read", .lfta_kind = GSQ_SRC_CSV, .arrival = 1,                  \
    .check_lfta = gsq_source_check_lfta, .open = csv_open, .streaming = csv_streaming,  \
    .peek = csv_peek, .read_batch = csv_read_batch, .wait_fd = csv_wait_fd,              \
    .close = csv_close, .report = csv_report, .stats = csv_stats, .progress = csv_progress

const gsq_source_ops gsq_csv_ops = {
    .name = "csv",
    .scheme = "csv:",
    CSV_READER_OPS,
};

/* csvtcp:HOST:PORT -- CSV rows read from a TCP connection as they arrive
 * (Tigon's CSV-over-TCP source): the CSV reader over a socket. */
const gsq_source_ops gsq_csvtcp_ops = {
    .name = "csvtcp",
    .scheme = "csvtcp:",
    CSV_READER_OPS,
};
