/*
 * bind.c -- what a run reads and writes, given before it starts: sources
 * bound by URI or to Arrow streams, streams fed from Arrow, file and Arrow
 * sinks.  Each call checks its arguments and takes its copies (and, for an
 * Arrow stream, the stream's contents, whatever the result).
 */
#include <stdlib.h>
#include <string.h>

#include "arrow_abi.h"
#include "buffer_pool.h"
#include "gsq_run_steps.h"
#include "gsq_source_ops.h"

GSQ_EXPORT int gsqlc_bind_source(gsq_run *r, const char *iface, const char *uri)
{
    const char *path;
    gsq_binding *nb;
    if (!iface || !uri) {
        gsq_set_error(r, "interface name and URI must not be NULL");
        return -1;
    }
    if (!*iface)
        iface = GSQ_DEFAULT_IFACE;
    if (!gsq_source_ops_for_uri(uri, &path)) {
        gsq_set_error(r, "unsupported source '%s' (expected csv:PATH, csv:-, csvtcp:HOST:PORT, "
                     "gdat:PATH, pcap:PATH or pcap-live:IFACE)", uri);
        return -1;
    }
    nb = realloc(r->binds, (r->n_binds + 1) * sizeof *nb);
    if (!nb) {
        gsq_set_error(r, "out of memory");
        return -1;
    }
    r->binds = nb;
    nb[r->n_binds].iface = gsq_strdup(iface);
    nb[r->n_binds].uri = gsq_strdup(uri);
    nb[r->n_binds].arrow = NULL;
    if (!nb[r->n_binds].iface || !nb[r->n_binds].uri) {
        free(nb[r->n_binds].iface);
        free(nb[r->n_binds].uri);
        gsq_set_error(r, "out of memory");
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
    gsq_set_error(r, "no query named '%s' (queries: %s)", name, gsq_buf_str(&names));
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
        gsq_set_error(r, "out of memory");
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
        gsq_set_error(r, "sink query and format must not be NULL");
        return -1;
    }
    if (r->started) {
        gsq_set_error(r, "sink added after the run started");
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
    else if (strcmp(format, "gdat") == 0)
        fmt = GSQ_FMT_GDAT;
    else {
        gsq_set_error(r, "unknown output format '%s' (expected pipe, csv, jsonl or gdat)",
                      format);
        return -1;
    }
    if (path && strcmp(path, "-") != 0) {
        p = gsq_strdup(path);
        if (!p) {
            gsq_set_error(r, "out of memory");
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
        gsq_set_error(r, "%s: the Arrow stream is NULL or was already released", what);
        if (stream && stream->release)
            stream->release(stream);
        return -1;
    }
    if (r->started) {
        gsq_set_error(r, "%s: bound after the run started", what);
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
    gsq_set_error(r, "out of memory");
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
        gsq_set_error(r, "the stream name must not be NULL");
    for (i = 0; st >= 0 && i < r->n_injects; i++)
        if (r->injects[i].stream == st) {
            gsq_set_error(r, "stream %s is already fed from an Arrow stream", stream_name);
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
    gsq_set_error(r, "out of memory");
    return -1;
}

GSQ_EXPORT int gsqlc_add_arrow_sink(gsq_run *r, const char *stream_name, gsqlc_arrow_cb cb,
                                    void *ctx, uint32_t batch_rows)
{
    int stream;
    gsq_sink *k;
    if (!stream_name || !cb) {
        gsq_set_error(r, "Arrow sink: the stream name and callback must not be NULL");
        return -1;
    }
    if (r->started) {
        gsq_set_error(r, "sink added after the run started");
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

GSQ_EXPORT int gsqlc_set_buffer_pool(gsq_run *r, gsqlc_buffer_pool *pool)
{
    if (r->started) {
        gsq_set_error(r, "buffer pool set after the run started");
        return -1;
    }
    gsqlc_buffer_pool_release(r->buffer_pool);
    r->buffer_pool = gsq_pool_retain(pool);
    return 0;
}
