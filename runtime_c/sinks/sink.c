/*
 * sink.c -- output sinks: pipe (Tigon's '|' lines), csv (header, RFC-4180
 * quoting), jsonl (one object per line), gdat (Tigon's binary GDAT file,
 * gdat_sink.c).  Each sink buffers into a large
 * gsq_buf and writes it to its file descriptor with write(2); write errors
 * (EPIPE, ENOSPC, ...) fail the run (EPIPE: r->output_closed, which the
 * CLI ends quietly with status 141, as a tool killed by SIGPIPE).  Arrow sinks (in-memory record
 * batches for a callback) are arrow_sink.c's; the entry points below pass
 * them on.  Only data tuples are written, and, to an Arrow sink of a run
 * with option arrow_heartbeats, heartbeats (k->heartbeats).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "gdat_sink.h"
#include "gsq_internal.h"

#define SINK_FLUSH_AT (1u << 20)

static const char *sink_name(const gsq_sink *k)
{
    return k->path ? k->path : "standard output";
}

static void csv_text(gsq_buf *b, const char *p, size_t n);

/* Open the output; a csv sink starts with its header line. */
int gsq_sink_open(gsq_run *r, gsq_sink *k)
{
    const gsq_stream_desc *d = &r->qs->streams[k->stream];
    uint32_t i;
    if (k->format == GSQ_FMT_ARROW)
        return gsq_arrow_sink_open(r, k);
    if (!k->path) {
        k->fd = STDOUT_FILENO;
        k->own_fd = 0;
    } else {
        /* several outputs to one file share it as they share standard
         * output: one open (one truncation), one file offset */
        const gsq_sink *same = NULL;
        for (i = 0; i < r->n_sinks && !same; i++) {
            const gsq_sink *o = r->sinks[i];
            if (o != k && o->fd >= 0 && o->path && strcmp(o->path, k->path) == 0)
                same = o;
        }
        k->fd = same ? fcntl(same->fd, F_DUPFD_CLOEXEC, 0)
                     : open(k->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (k->fd < 0) {
            gsq_run_fail(r, "cannot open output %s: %s", k->path, strerror(errno));
            return -1;
        }
        k->own_fd = 1;
    }
    if (k->format == GSQ_FMT_CSV) {
        for (i = 0; i < d->n_cols; i++) {
            if (i)
                gsq_buf_addc(&k->out, ',');
            csv_text(&k->out, d->cols[i].name, strlen(d->cols[i].name));
        }
        gsq_buf_addc(&k->out, '\n');
    } else if (k->format == GSQ_FMT_GDAT) {
        gsq_gdat_header(&k->out, d);
    }
    return 0;
}

int gsq_sink_flush(gsq_run *r, gsq_sink *k)
{
    size_t done = 0;
    if (k->format == GSQ_FMT_ARROW)
        return gsq_arrow_sink_flush(r, k);
    if (k->failed)
        return -1;
    if (k->out.oom) {
        k->failed = 1;
        gsq_run_fail(r, "out of memory writing to %s", sink_name(k));
        return -1;
    }
    while (done < k->out.len) {
        ssize_t n = write(k->fd, k->out.p + done, k->out.len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            k->failed = 1;
            r->output_closed |= errno == EPIPE;
            gsq_run_fail(r, "cannot write to %s: %s", sink_name(k), strerror(errno));
            return -1;
        }
        done += (size_t)n;
    }
    k->bytes += done;
    gsq_buf_reset(&k->out);
    return 0;
}

void gsq_sink_close(gsq_sink *k)
{
    gsq_arrow_sink_close(k);
    if (k->own_fd && k->fd >= 0)
        close(k->fd);
    k->fd = -1;
    k->own_fd = 0;
}

/* RFC-4180: quote when the text holds the separator, a quote or a line
 * break; double the quotes inside. */
static void csv_text(gsq_buf *b, const char *p, size_t n)
{
    size_t i;
    int quote = 0;
    for (i = 0; i < n; i++)
        if (p[i] == ',' || p[i] == '"' || p[i] == '\n' || p[i] == '\r') {
            quote = 1;
            break;
        }
    if (!quote) {
        gsq_buf_add(b, p, n);
        return;
    }
    gsq_buf_addc(b, '"');
    for (i = 0; i < n; i++) {
        if (p[i] == '"')
            gsq_buf_addc(b, '"');
        gsq_buf_addc(b, p[i]);
    }
    gsq_buf_addc(b, '"');
}

/* Tigon's pipe format, the common case: one reservation per row, then the
 * fields are written straight into the buffer.  The reservation's fixed
 * part is worked out once per stream (k->pipe_*); only the strings'
 * lengths are read per row, and only when the stream has strings. */
static int pipe_row(gsq_sink *k, const gsq_stream_desc *d, const void *tup, uint32_t len,
                    int ip_int)
{
    gsq_buf *b = &k->out;
    size_t need;
    uint32_t i;
    gsq_val v;
    char *o;

    if (k->pipe_desc != d) {
        k->pipe_fixed = d->n_cols + 2;
        k->pipe_strings = 0;
        for (i = 0; i < d->n_cols; i++) {
            if (d->cols[i].type == GSQ_T_STRING)
                k->pipe_strings = 1;
            else
                k->pipe_fixed += gsq_fmt_max_width(gsq_fmt_type(d->cols[i].type, ip_int)) + 1;
        }
        k->pipe_desc = d;
    }
    need = k->pipe_fixed;
    for (i = 0; k->pipe_strings && i < d->n_cols; i++) {
        const gsq_column *c = &d->cols[i];
        if (c->type == GSQ_T_STRING) {
            if (gsq_read_col(tup, len, c, &v) != 0)
                return -2;
            need += v.s.len;
        }
    }
    if (gsq_buf_reserve(b, need) != 0)
        return -1;
    o = b->p + b->len;
    for (i = 0; i < d->n_cols; i++) {
        const gsq_column *c = &d->cols[i];
        if (i)
            *o++ = '|';
        if (gsq_read_col(tup, len, c, &v) != 0)
            return -2;
        if (c->type == GSQ_T_STRING) {
            if (v.s.len)
                memcpy(o, v.s.p, v.s.len);
            o += v.s.len;
        } else {
            o += gsq_fmt_text_raw(o, gsq_fmt_type(c->type, ip_int), &v);
        }
    }
    *o++ = '\n';
    b->len = (size_t)(o - b->p);
    b->p[b->len] = '\0';
    return 0;
}

int gsq_sink_write_run(gsq_run *r, gsq_sink *k, const gsq_stream_desc *d, const uint8_t *first,
                       size_t stride, uint32_t len, uint32_t n)
{
    uint32_t j;
    if (k->failed || r->failed)
        return -1;
    if (k->format == GSQ_FMT_ARROW)
        return gsq_arrow_sink_write_run(r, k, d, first, stride, len, n);
    for (j = 0; j < n; j++)
        if (gsq_sink_write(r, k, d, GSQ_DATA, first + (size_t)j * stride, len) != 0)
            return -1;
    return 0;
}

int gsq_sink_write(gsq_run *r, gsq_sink *k, const gsq_stream_desc *d, int kind,
                   const void *tup, uint32_t len)
{
    gsq_buf *b = &k->out;
    uint32_t i;
    gsq_val v;

    if (k->failed || r->failed)
        return -1;
    if (kind != GSQ_DATA && !(kind == GSQ_HEARTBEAT && k->heartbeats))
        return 0; /* text sinks carry data only */
    if (k->format == GSQ_FMT_ARROW)
        return gsq_arrow_sink_write(r, k, d, kind, tup, len);
    if (k->format == GSQ_FMT_PIPE || k->format == GSQ_FMT_GDAT) {
        int rc = k->format == GSQ_FMT_PIPE ? pipe_row(k, d, tup, len, r->ip_int)
                                           : gsq_gdat_row(b, d, tup, len);
        if (rc == -2) {
            gsq_run_fail(r, "internal error: tuple of stream %s (%u bytes) has a broken column",
                         d->name, (unsigned)len);
            return -1;
        }
        k->tuples++;
        if (b->len >= SINK_FLUSH_AT || b->oom)
            return gsq_sink_flush(r, k);
        return 0;
    }
    if (k->format == GSQ_FMT_JSONL)
        gsq_buf_addc(b, '{');
    for (i = 0; i < d->n_cols; i++) {
        const gsq_column *c = &d->cols[i];
        int t = gsq_fmt_type(c->type, r->ip_int);
        if (gsq_read_col(tup, len, c, &v) != 0) {
            gsq_run_fail(r, "internal error: tuple of stream %s (%u bytes) has a broken column %s",
                         d->name, (unsigned)len, c->name);
            return -1;
        }
        switch (k->format) {
        case GSQ_FMT_PIPE:
            if (i)
                gsq_buf_addc(b, '|');
            gsq_fmt_text(b, t, &v);
            break;
        case GSQ_FMT_CSV:
            if (i)
                gsq_buf_addc(b, ',');
            if (c->type == GSQ_T_STRING)
                csv_text(b, v.s.p, v.s.len);
            else
                gsq_fmt_text(b, t, &v);
            break;
        default:
            if (i)
                gsq_buf_addc(b, ',');
            gsq_buf_json_str(b, c->name, strlen(c->name));
            gsq_buf_addc(b, ':');
            gsq_fmt_json(b, t, &v);
            break;
        }
    }
    if (k->format == GSQ_FMT_JSONL)
        gsq_buf_addc(b, '}');
    gsq_buf_addc(b, '\n');
    k->tuples++;
    if (b->len >= SINK_FLUSH_AT || b->oom)
        return gsq_sink_flush(r, k);
    return 0;
}
