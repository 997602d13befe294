/*
 * teardown.c -- releasing a run: gsq_teardown at the end of gsqlc_run (the
 * nodes' destroy, sinks and sources closed: what only the running needs),
 * gsqlc_destroy for the rest (configuration, results, the run itself).
 */
#include <stdlib.h>

#include "gsq_run_steps.h"
#include "gsq_source_ops.h"

void gsq_teardown(gsq_run *r)
{
    uint32_t i;
    gsq_workers_free(r); /* stopped by the loop; not if it never ran */
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
        free(n->stage);
        n->stage = NULL;
        n->stage_n = 0;
        free(n->pack);
        n->pack = NULL;
        n->pack_cap = 0;
    }
    for (i = 0; i < r->n_sinks; i++)
        gsq_sink_close(r->sinks[i]);
    for (i = 0; i < r->n_sources; i++) {
        gsq_source *s = &r->sources[i];
        s->ops->close(s);
        gsq_ring_free(&s->ring);
        gsq_chunk_free(&s->chunk);
    }
    for (i = 0; i < r->n_injects; i++)
        gsq_inject_close(&r->injects[i]);
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
    gsq_params_free(r);
    pthread_mutex_destroy(&r->param_mu);
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
    for (i = 0; i < r->n_ooos; i++)
        free(r->ooos[i].iface);
    free(r->ooos);
    for (i = 0; i < r->n_latencies; i++)
        free(r->latencies[i].iface);
    free(r->latencies);
    for (i = 0; i < r->n_skew_decls; i++) {
        free(r->skew_decls[i].from);
        free(r->skew_decls[i].to);
        free(r->skew_decls[i].set.p);
    }
    free(r->skew_decls);
    gsq_tg_free(r);
    for (i = 0; i < r->n_times; i++) {
        free(r->times[i].iface);
        free(r->times[i].arrival_name);
    }
    free(r->times);
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
    gsqlc_buffer_pool_release(r->buffer_pool); /* after the sinks gave theirs back */
    for (i = 0; i < r->n_sources; i++) {
        free(r->sources[i].lftas);
        free(r->sources[i].failure);
        free(r->sources[i].pf_always);
        free(r->sources[i].pf_want);
        free(r->sources[i].pf_dropped);
        free(r->sources[i].pf_classes);
    }
    free(r->sources);
    if (r->streams)
        for (i = 0; i < r->qs->n_streams; i++)
            free(r->streams[i].subs);
    free(r->streams);
    gsq_free_nodes(r);
    gsq_buf_free(&r->error);
    gsq_buf_free(&r->stats);
    gsq_buf_free(&r->report);
    free(r);
}
