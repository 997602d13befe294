/*
 * plan.c -- which nodes a run runs.
 *
 * A stream is demanded when a sink (file or Arrow) reads it -- or, in a run
 * without any sink, when no HFTA reads it (every leaf counts as having a
 * sink, so such a run still runs every query).  The producer of a demanded
 * stream is needed, unless the stream is fed from Arrow
 * (gsqlc_bind_stream_arrow): that cuts the dependency.  A needed HFTA
 * demands each of its inputs.  HFTAs come in topological order (inputs
 * before readers), so one pass from the last HFTA back decides them all;
 * then the LFTAs (every instance of an LFTA over an interface set, and its
 * set merge, run when the LFTA would).  A stream fed from Arrow is read only when demanded.
 */
#include <stdlib.h>

#include "gsq_internal.h"

int gsq_plan(gsq_run *r)
{
    const gsq_queryset_def *qs = r->qs;
    uint32_t n = qs->n_streams ? qs->n_streams : 1, i;
    uint8_t *demand = calloc(n, 1), *injected = calloc(n, 1);
    int j;

    if (!demand || !injected) {
        free(demand);
        free(injected);
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    for (i = 0; i < r->n_injects; i++)
        injected[r->injects[i].stream] = 1;
    if (r->n_sinks) {
        for (i = 0; i < r->n_sinks; i++)
            demand[r->sinks[i]->stream] = 1;
    } else {
        for (i = 0; i < qs->n_streams; i++)
            demand[i] = 1;
        for (i = 0; i < qs->n_hftas; i++)
            for (j = 0; j < qs->hftas[i]->n_inputs; j++) {
                int s = qs->hftas[i]->in_streams[j];
                if (s >= 0 && (uint32_t)s < qs->n_streams)
                    demand[s] = 0;
            }
    }
    for (i = qs->n_hftas; i-- > 0;) {
        const gsq_hfta_def *d = qs->hftas[i];
        gsq_node *nd = &r->nodes[r->hfta_base + i];
        if (!demand[d->out_stream] || injected[d->out_stream])
            continue;
        nd->needed = 1;
        for (j = 0; j < d->n_inputs; j++) {
            int s = d->in_streams[j];
            if (s >= 0 && (uint32_t)s < qs->n_streams)
                demand[s] = 1;
        }
    }
    for (i = 0; i < r->hfta_base; i++) { /* LFTA instances and set merges */
        int s = qs->lftas[r->nodes[i].def_index]->out_stream;
        r->nodes[i].needed = demand[s] && !injected[s];
    }
    for (i = 0; i < r->n_injects; i++)
        r->injects[i].active = demand[r->injects[i].stream];
    free(demand);
    free(injected);
    return 0;
}
