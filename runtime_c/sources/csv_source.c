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
 *  - a position beyond N reads as the zero value (one warning).
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
 * record, before the one at `start`.
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
    return 0;
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

static void describe_value(gsq_buf *b, const char *name, uint64_t line, uint32_t pos,
                           const char *p, size_t n, int type)
{
    gsq_buf_printf(b, "%s:%llu: field %u '", name, (unsigned long long)line, (unsigned)pos);
    gsq_buf_quote_text(b, p, n, 40);
    gsq_buf_printf(b, "' is not a valid %s", gsq_type_name(type));
}

static int convert(int type, const char *p, size_t n, gsq_csv_value *v)
{
    int rc = 0;
    switch (type) {
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
    return rc;
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

/* Turn the record content p[0..n) with nf fields, starting at `line`, into
 * a ring record (or a rejection). */
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

    if (rd->expected == 0)
        first_row(rd, nf);
    if (nf != rd->expected) {
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

    for (k = 0; k < rd->cs.n; k++) {
        uint32_t pos = rd->cs.slot[k].pos;
        int type = rd->cs.slot[k].type;
        const char *fp;
        size_t fn;
        memset(&vals[k], 0, sizeof vals[k]);
        if (pos > nf) { /* short row: the zero value (warned once) */
            if (type == GSQ_T_STRING)
                vals[k].s.p = data;
            time_bad |= (int32_t)k == rd->time_slot;
            arrival_bad |= (int32_t)k == rd->arrival_slot;
            continue;
        }
        fp = data + ends[pos - 1];
        fn = ends[pos] - ends[pos - 1];
        if (convert(type, fp, fn, &vals[k]) != 0) {
            time_bad |= (int32_t)k == rd->time_slot;
            arrival_bad |= (int32_t)k == rd->arrival_slot;
            if (r->csv_strict) {
                s->records_read++;
                s->rows_rejected++;
                if (rd->n_described < GSQ_MAX_DESCRIBED) {
                    rd->n_described++;
                    gsq_buf_adds(&rd->described, "gsqlc: ");
                    describe_value(&rd->described, rd->name, line, pos, fp, fn, type);
                    gsq_buf_addc(&rd->described, '\n');
                }
                return ROW_DONE; /* the reservation is simply not committed */
            }
            if (s->values_coerced + coerced == 0)
                describe_value(&rd->first_coerced, rd->name, line, pos, fp, fn, type);
            if (pos != last_coerced) /* a cell counts once, whatever types read it */
                coerced++;
            last_coerced = pos;
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

static void csv_report(const gsq_source *s, gsq_buf *out)
{
    const csv_reader *rd = s->impl;
    if (!rd)
        return;
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

/* stdin is read as it arrives */
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
    .close = csv_close, .report = csv_report, .progress = csv_progress

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
