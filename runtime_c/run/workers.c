/*
 * workers.c -- capture workers: the members of a fanout set (live_fanout,
 * PACKET_FANOUT sockets sharing one interface's frames by flow) read on
 * threads of their own, each running its own LFTA instances.
 *
 * A round of the run loop starts with every worker's source read and run
 * at once (gsq_workers_round): each worker reads a batch of its source and
 * runs its LFTAs over it (gsq_read_and_run), which touches nothing but its
 * source, its LFTA nodes and their output queues; the run loop waits for
 * all of them, then goes through the sources as ever -- draining those
 * queues into the set merge, firing heartbeats, applying parameter
 * changes -- while the workers wait for the next round.  So everything
 * shared (the merges and HFTAs, the clock, heartbeats, stats, events) is
 * touched by the run loop's thread alone, and only while no worker runs:
 * the mutex of each handover orders a worker's writes before the run
 * loop's reads and back.  The output is the one thread's: each member's
 * LFTAs see the same batches, and their queues are drained in the same
 * order, as if the run loop had read the members one after the other.
 *
 * Not with the data clock (an LFTA would read the clock another worker
 * moves) nor with traces (a heartbeat's trace is the run's): the members
 * are then read by the run loop itself, and the stats say why.
 *
 * Invariants: a worker's `go` is set only by the run loop, while `done` is
 * clear; `done` is set only by the worker, after its batch; between the
 * two the worker owns its source and that source's LFTA nodes.
 */
#define _POSIX_C_SOURCE 200809L /* pthread_sigmask, sigset_t */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "gsq_run_steps.h"

struct gsq_worker {
    gsq_run *r;
    gsq_source *s;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go;      /* the run loop asks for a batch */
    int done;    /* the worker finished it */
    int quit;
    int started; /* thread created: joined at stop */
};

static void *worker_main(void *arg)
{
    gsq_worker *w = arg;
    sigset_t all;
    /* signals are the process's business: the run loop's thread (or the
     * program around it) takes them */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->go && !w->quit)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->quit)
            break;
        w->go = 0;
        pthread_mutex_unlock(&w->mu);
        w->s->round_rc = gsq_read_and_run(w->r, w->s, &w->s->round_n);
        pthread_mutex_lock(&w->mu);
        w->done = 1;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Why the fanout members cannot have workers in this run (NULL: they can). */
static const char *why_no_workers(const gsq_run *r)
{
    if (r->clock_mode == GSQ_CLOCK_DATA)
        return "the data clock (clock=data) is moved by every record the LFTAs read";
    if (r->trace_path)
        return "traces follow every heartbeat through the run";
    return NULL;
}

int gsq_workers_start(gsq_run *r)
{
    uint32_t i, n = 0;
    for (i = 0; i < r->n_sources; i++)
        n += r->sources[i].fanout != 0;
    if (!n)
        return 0;
    r->workers_why_not = why_no_workers(r);
    if (r->workers_why_not)
        return 0;
    r->workers = calloc(n, sizeof *r->workers);
    if (!r->workers) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    for (i = 0; i < r->n_sources; i++) {
        gsq_source *s = &r->sources[i];
        gsq_worker *w;
        if (!s->fanout)
            continue;
        w = &r->workers[r->n_workers++];
        w->r = r;
        w->s = s;
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            gsq_run_fail(r, "cannot start a capture thread for interface %s", s->iface);
            return -1;
        }
        w->started = 1;
        s->threaded = 1;
    }
    return 0;
}

void gsq_workers_round(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_workers; i++) {
        gsq_worker *w = &r->workers[i];
        if (w->s->at_eof || !w->started)
            continue;
        w->s->round_ran = 1;
        pthread_mutex_lock(&w->mu);
        w->go = 1;
        w->done = 0;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
    for (i = 0; i < r->n_workers; i++) {
        gsq_worker *w = &r->workers[i];
        if (!w->s->round_ran)
            continue;
        pthread_mutex_lock(&w->mu);
        while (!w->done)
            pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
    }
}

void gsq_workers_stop(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_workers; i++) {
        gsq_worker *w = &r->workers[i];
        if (!w->started)
            continue;
        pthread_mutex_lock(&w->mu);
        w->quit = 1;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
        w->started = 0;
    }
}

void gsq_workers_free(gsq_run *r)
{
    uint32_t i;
    gsq_workers_stop(r);
    for (i = 0; i < r->n_workers; i++) {
        pthread_mutex_destroy(&r->workers[i].mu);
        pthread_cond_destroy(&r->workers[i].cv);
    }
    free(r->workers);
    r->workers = NULL;
    r->n_workers = 0;
}
