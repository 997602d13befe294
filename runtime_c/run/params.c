/*
 * params.c -- parameters changed while a run goes on (gsqlc_change_param).
 *
 * A change is checked when it is asked for, from whatever thread asks, as a
 * node's init checks a value at the start (the query set's table of
 * parameters gives each one's type), then queued under param_mu.  The run
 * thread takes the queue at the next round boundary (loop.c): every record
 * read before it has been processed and every LFTA queue drained, so the
 * boundary is one instant for every operator.  There gsq_params_apply
 * replaces the values gsq_param gives, records the instant, and tells every
 * node that reads parameters: LFTAs first, each aggregation given the mark
 * of its query's epoch (the newest epoch its instances have read, the
 * largest over the members of an interface set), then the HFTAs in
 * topological order, each given the marks of the LFTAs producing its
 * inputs.  What a node does with it is gsq_lfta_def.params_changed's and
 * gsq_hfta_def.params_changed's contract (gsq_runtime.h).
 *
 * Invariants: param_pending is nonzero exactly while param_queue is not
 * empty (both changed under param_mu); param_events[0..n_param_events) are
 * the changes applied, in order, each owning its strings; a replaced value
 * lives on in its event until the run is destroyed (a node may hold a
 * string parameter's bytes).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format.h"
#include "gsq_run_steps.h"

/* Whether text is a value of `type` as the generated inits parse it. */
static int value_ok(int type, const char *v)
{
    size_t n = strlen(v);
    union {
        uint8_t b;
        uint16_t us;
        uint32_t u;
        int32_t i;
        uint64_t ull;
        int64_t ll;
        double f;
        gsq_ipv6 ip6;
    } out;
    switch (type) {
    case GSQ_T_BOOL: return gsq_parse_bool(v, n, &out.b) == 0;
    case GSQ_T_USHORT: return gsq_parse_ushort(v, n, &out.us) == 0;
    case GSQ_T_UINT: return gsq_parse_uint(v, n, &out.u) == 0;
    case GSQ_T_INT: return gsq_parse_int(v, n, &out.i) == 0;
    case GSQ_T_ULLONG: return gsq_parse_ullong(v, n, &out.ull) == 0;
    case GSQ_T_LLONG: return gsq_parse_llong(v, n, &out.ll) == 0;
    case GSQ_T_FLOAT: return gsq_parse_float(v, n, &out.f) == 0;
    case GSQ_T_IP: return gsq_parse_ip(v, n, &out.u) == 0;
    case GSQ_T_IPV6: return gsq_parse_ipv6(v, n, &out.ip6) == 0;
    default: return 1;
    }
}

/* 0 when value is one of every type name is declared with, else -1 with
 * the reason in err (the words of a node's init for a bad value). */
static int check_value(const gsq_run *r, const char *name, const char *value, char *err,
                       size_t errlen)
{
    uint32_t i;
    int known = 0;
    for (i = 0; i < r->qs->n_params; i++) {
        const gsq_param_decl *d = &r->qs->params[i];
        if (strcmp(d->name, name) != 0)
            continue;
        known = 1;
        if (d->fixed) {
            if (err && errlen)
                snprintf(err, errlen, "parameter $%s cannot change while the run goes on: %s",
                         name, d->fixed);
            return -1;
        }
        if (!value_ok(d->type, value)) {
            if (err && errlen)
                snprintf(err, errlen, "parameter $%s: '%s' is not a valid %s", name, value,
                         gsq_type_name(d->type));
            return -1;
        }
    }
    if (!known) {
        if (err && errlen)
            snprintf(err, errlen, "parameter $%s is not read by any query of this set", name);
        return -1;
    }
    return 0;
}

GSQ_EXPORT int gsqlc_change_param(gsq_run *r, const char *name, const char *value, char *err,
                                  size_t errlen)
{
    gsq_param_change *c, **tail;
    if (err && errlen)
        err[0] = '\0';
    if (!r || !name || !value || !*name) {
        if (err && errlen)
            snprintf(err, errlen, "parameter name and value must not be empty");
        return -1;
    }
    if (name[0] == '$')
        name++;
    if (check_value(r, name, value, err, errlen) != 0)
        return -1;
    c = calloc(1, sizeof *c);
    if (c) {
        c->name = gsq_strdup(name);
        c->value = gsq_strdup(value);
    }
    if (!c || !c->name || !c->value) {
        if (c) {
            free(c->name);
            free(c->value);
        }
        free(c);
        if (err && errlen)
            snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_lock(&r->param_mu);
    if (!r->started) { /* not running yet: the value it starts with */
        int rc = gsq_param_put(r, name, value);
        pthread_mutex_unlock(&r->param_mu);
        if (rc != 0 && err && errlen)
            snprintf(err, errlen, "%s", gsqlc_error(r));
        free(c->name);
        free(c->value);
        free(c);
        return rc;
    }
    for (tail = &r->param_queue; *tail; tail = &(*tail)->next)
        ;
    *tail = c;
    atomic_store(&r->param_pending, 1);
    pthread_mutex_unlock(&r->param_mu);
    return 0;
}

static uint64_t wall_usec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The value $name has now (the kv the nodes read), NULL when unset. */
static gsq_param_kv *param_kv(gsq_run *r, const char *name)
{
    uint32_t i;
    for (i = 0; i < r->n_params; i++)
        if (strcmp(r->params[i].name, name) == 0)
            return &r->params[i];
    return NULL;
}

/* Record the change of c (its strings move into the event) at this
 * instant; 0, or -1 out of memory. */
static int record(gsq_run *r, gsq_param_change *c, char *old_value)
{
    gsq_param_event *ev;
    uint64_t records = 0;
    uint32_t i;
    ev = realloc(r->param_events, (r->n_param_events + 1) * sizeof *ev);
    if (!ev)
        return -1;
    r->param_events = ev;
    ev = &ev[r->n_param_events++];
    memset(ev, 0, sizeof *ev);
    for (i = 0; i < r->n_sources; i++) {
        const gsq_source *s = &r->sources[i];
        records += s->records_read;
        if (s->wm_seen && (!ev->data_seen || s->wm_usec > ev->data_usec)) {
            ev->data_usec = s->wm_usec;
            ev->data_seen = 1;
        }
    }
    ev->name = c->name;
    ev->value = c->value;
    ev->old_value = old_value;
    ev->round = r->rounds;
    ev->records = records;
    ev->wall_usec = wall_usec();
    c->name = c->value = NULL;
    return 0;
}

/* The run's value of c's parameter becomes c's value, the one it had in
 * *old_value (NULL: none); 0, or -1 out of memory. */
static int set_value(gsq_run *r, gsq_param_change *c, char **old_value)
{
    gsq_param_kv *kv = param_kv(r, c->name);
    char *copy = gsq_strdup(c->value);
    if (!copy)
        return -1;
    if (kv) {
        *old_value = kv->value;
        kv->value = copy;
        return 0;
    }
    *old_value = NULL;
    free(copy);
    return gsq_param_put(r, c->name, c->value) == 0 ? 0 : -1;
}

/* The mark of LFTA definition d's epoch: the newest over its running
 * instances (out, stream-sized); 1, or 0 when none has read a record. */
static int lfta_mark(gsq_run *r, uint32_t def_index, void *out, void *scratch, size_t size)
{
    uint32_t i;
    int have = 0;
    for (i = 0; i < r->n_lfta_nodes; i++) {
        gsq_node *n = &r->nodes[i];
        const gsq_lfta_def *d = n->lfta;
        if (!n->live || !d || n->def_index != def_index || !d->epoch_mark)
            continue;
        memset(scratch, 0, size);
        if (!d->epoch_mark(n->state, n, scratch))
            continue;
        if (!have || d->mark_cmp(scratch, out) > 0)
            memcpy(out, scratch, size);
        have = 1;
    }
    return have;
}

/* Tell every node reading parameters: LFTAs with their query's mark, then
 * HFTAs with their inputs' marks.  0, or -1 out of memory. */
static int tell_nodes(gsq_run *r)
{
    const gsq_queryset_def *qs = r->qs;
    uint8_t **marks = calloc(qs->n_streams ? qs->n_streams : 1, sizeof *marks);
    uint8_t *scratch = NULL;
    size_t max = 0;
    uint32_t i;
    int rc = 0;
    if (!marks)
        return -1;
    for (i = 0; i < qs->n_streams; i++)
        if (qs->streams[i].fixed_size > max)
            max = qs->streams[i].fixed_size;
    scratch = malloc(max ? max : 1);
    if (!scratch) {
        free(marks);
        return -1;
    }
    for (i = 0; i < qs->n_lftas && rc == 0; i++) {
        const gsq_lfta_def *d = qs->lftas[i];
        size_t size = qs->streams[d->out_stream].fixed_size;
        uint8_t *m;
        if (!d->epoch_mark)
            continue;
        m = calloc(1, size ? size : 1);
        if (!m) {
            rc = -1;
            break;
        }
        if (lfta_mark(r, i, m, scratch, size))
            marks[d->out_stream] = m;
        else
            free(m);
    }
    for (i = 0; i < r->n_lfta_nodes && rc == 0; i++) {
        gsq_node *n = &r->nodes[i];
        if (n->live && n->lfta && n->lfta->params_changed)
            n->lfta->params_changed(n->state, n, marks[n->lfta->out_stream]);
    }
    for (i = r->hfta_base; i < r->n_nodes && rc == 0 && !r->failed; i++) {
        gsq_node *n = &r->nodes[i];
        const void *in[64];
        int k;
        if (!n->live || !n->hfta || !n->hfta->params_changed || n->n_inputs > 64)
            continue;
        for (k = 0; k < n->n_inputs; k++)
            in[k] = marks[n->hfta->in_streams[k]];
        n->hfta->params_changed(n->state, n, in);
    }
    for (i = 0; i < qs->n_streams; i++)
        free(marks[i]);
    free(marks);
    free(scratch);
    return rc;
}

/* A change as the stats and the trace file show it (JSON), its name under
 * `key` ("name" in the stats, "param" marking a trace line). */
static void json_event(gsq_buf *b, const gsq_param_event *ev, const char *key)
{
    gsq_buf_printf(b, "{\"%s\":", key);
    gsq_buf_json_str(b, ev->name, strlen(ev->name));
    gsq_buf_adds(b, ",\"value\":");
    gsq_buf_json_str(b, ev->value, strlen(ev->value));
    gsq_buf_adds(b, ",\"old_value\":");
    if (ev->old_value)
        gsq_buf_json_str(b, ev->old_value, strlen(ev->old_value));
    else
        gsq_buf_adds(b, "null");
    gsq_buf_printf(b, ",\"round\":%llu,\"records\":%llu,\"data_usec\":",
                   (unsigned long long)ev->round, (unsigned long long)ev->records);
    if (ev->data_seen)
        gsq_buf_printf(b, "%llu", (unsigned long long)ev->data_usec);
    else
        gsq_buf_adds(b, "null");
    gsq_buf_printf(b, ",\"wall_usec\":%llu}", (unsigned long long)ev->wall_usec);
}

void gsq_params_apply(gsq_run *r)
{
    gsq_param_change *q, *c;
    uint32_t first = r->n_param_events, i;
    pthread_mutex_lock(&r->param_mu);
    q = r->param_queue;
    r->param_queue = NULL;
    atomic_store(&r->param_pending, 0);
    pthread_mutex_unlock(&r->param_mu);
    for (c = q; c && !r->failed; c = c->next) {
        char *old = NULL;
        if (set_value(r, c, &old) != 0 || record(r, c, old) != 0) {
            free(old);
            gsq_run_fail(r, "out of memory changing parameter $%s", c->name ? c->name : "?");
        }
    }
    while (q) {
        c = q->next;
        free(q->name);
        free(q->value);
        free(q);
        q = c;
    }
    if (r->failed || first == r->n_param_events)
        return;
    if (tell_nodes(r) != 0) {
        gsq_run_fail(r, "out of memory changing parameters");
        return;
    }
    for (i = first; i < r->n_param_events && r->trace_fd >= 0; i++) {
        json_event(&r->trace_out, &r->param_events[i], "param");
        gsq_buf_addc(&r->trace_out, '\n');
    }
}

void gsq_params_stats(const gsq_run *r, gsq_buf *b)
{
    uint32_t i;
    gsq_buf_adds(b, "\"param_changes\":[");
    for (i = 0; i < r->n_param_events; i++) {
        if (i)
            gsq_buf_addc(b, ',');
        json_event(b, &r->param_events[i], "name");
    }
    gsq_buf_addc(b, ']');
}

void gsq_params_report(gsq_run *r, gsq_buf *b)
{
    const gsq_param_change *c;
    uint32_t i;
    for (i = 0; i < r->n_param_events; i++) {
        const gsq_param_event *ev = &r->param_events[i];
        gsq_buf_printf(b, "gsqlc: parameter $%s changed from '%s' to '%s' after %llu records",
                       ev->name,
                       ev->old_value ? ev->old_value : "", ev->value,
                       (unsigned long long)ev->records);
        if (ev->data_seen)
            gsq_buf_printf(b, " (data time %llu.%06llu s)",
                           (unsigned long long)(ev->data_usec / 1000000u),
                           (unsigned long long)(ev->data_usec % 1000000u));
        gsq_buf_adds(b, "\n");
    }
    /* asked for after the last round boundary: the run had ended */
    pthread_mutex_lock(&r->param_mu);
    for (c = r->param_queue; c; c = c->next)
        gsq_buf_printf(b,
                       "gsqlc: parameter $%s: the change to '%s' came as the run ended and was "
                       "not applied\n",
                       c->name, c->value);
    pthread_mutex_unlock(&r->param_mu);
}

void gsq_params_free(gsq_run *r)
{
    gsq_param_change *c = r->param_queue;
    uint32_t i;
    while (c) {
        gsq_param_change *next = c->next;
        free(c->name);
        free(c->value);
        free(c);
        c = next;
    }
    r->param_queue = NULL;
    for (i = 0; i < r->n_param_events; i++) {
        free(r->param_events[i].name);
        free(r->param_events[i].old_value);
        free(r->param_events[i].value);
    }
    free(r->param_events);
    r->param_events = NULL;
    r->n_param_events = 0;
}
