/*
 * run.c -- a run's life: gsqlc_create, gsqlc_run (setup.c, loop.c,
 * teardown.c do the work), gsqlc_cancel, and the results (error, stats,
 * report).  The other exported calls configure a run: options.c, bind.c.
 *
 * The library keeps no process-wide state and changes no signal's
 * disposition: a run ends early only through gsqlc_cancel (the stand-alone
 * runner calls it from its SIGINT/SIGTERM handler), and SIGPIPE is blocked
 * on the running thread only.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "column_compress.h"
#include "gsq_run_steps.h"

/* Whether GSQLC_DISABLE_CPU_FEATURES (a list, as NumPy's
 * NPY_DISABLE_CPU_FEATURES) names feature f: the runtime's kernels that need
 * it are not used, their portable forms are. */
static int cpu_feature_disabled(const char *f)
{
    const char *v = getenv("GSQLC_DISABLE_CPU_FEATURES");
    size_t n = strlen(f);
    while (v && *v) {
        size_t len;
        v += strspn(v, ", \t");
        len = strcspn(v, ", \t");
        if (len == n && strncasecmp(v, f, n) == 0)
            return 1;
        v += len;
    }
    return 0;
}

GSQ_EXPORT gsq_run *gsqlc_create(void)
{
    gsq_run *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->qs = &gsq_queryset;
    r->csv_sep = ',';
    r->clock_mode = GSQ_CLOCK_AUTO;
    r->batch = 512;
    r->columnar = 1;
    r->prefilter = 1;
    r->cpu_kernels = (cpu_feature_disabled("avx512") ? 0 : GSQ_COMPRESS_AVX512)
                     | (cpu_feature_disabled("avx2") ? 0 : GSQ_COMPRESS_AVX2);
    r->hb_interval_usec = 1000000u;
    r->stall_intervals = 3;
    r->hb_horizon_usec = 10000000u;
    r->hb_window = 1000;
    r->hb_alpha = 0.5;
    r->trace_fd = -1;
    r->cur_trace = -1;
    atomic_init(&r->cancel, 0);
    atomic_init(&r->param_pending, 0);
    if (pthread_mutex_init(&r->param_mu, NULL) != 0) {
        free(r);
        return NULL;
    }
    return r;
}

/* A source that ended in an error (gsq_source.failure) fails the run once
 * what it read was processed and flushed. */
static void gsq_fail_on_source_failure(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_sources && !r->failed; i++)
        if (r->sources[i].failure)
            gsq_run_fail(r, "%s; what was read before was processed", r->sources[i].failure);
}

GSQ_EXPORT int gsqlc_run(gsq_run *r)
{
    sigset_t pipe_set, old_mask;

    if (r->started) {
        gsq_set_error(r, "this run was already executed; create a new one");
        return -1;
    }
    pthread_mutex_lock(&r->param_mu); /* a change from now on is queued */
    r->started = 1;
    pthread_mutex_unlock(&r->param_mu);
    if (gsq_setup_nodes(r) != 0) {
        gsq_progress_publish(r, 1);
        return -1;
    }

    /* SIGPIPE blocked on this thread only (a signal's disposition is the
     * process's, not the run's): a closed output pipe is a write error
     * (EPIPE), and the SIGPIPE the write raised is taken back below. */
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);

    if (gsq_setup_graph(r) == 0) {
        if (gsq_start_nodes(r) == 0) {
            gsq_main_loop(r);
            gsq_flush_sinks(r); /* also after a failure: what was produced */
            gsq_fail_on_source_failure(r);
        }
        gsq_hb_close(r);
    }

    if (!sigismember(&old_mask, SIGPIPE)) {
        sigset_t pending;
        const struct timespec now = {0, 0};
        sigemptyset(&pending);
        if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
            (void)sigtimedwait(&pipe_set, NULL, &now);
        pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    }

    gsq_build_stats(r);
    gsq_build_report(r);
    gsq_progress_publish(r, 1); /* the stats' counters, before the sources close */
    gsq_teardown(r);
    return r->failed ? -1 : 0;
}

GSQ_EXPORT int gsqlc_cancel(gsq_run *r)
{
    if (!r)
        return -1;
    atomic_store(&r->cancel, 1);
    return 0;
}

int gsq_run_cancelled(gsq_run *r)
{
    return atomic_load(&r->cancel) != 0;
}

GSQ_EXPORT const char *gsqlc_error(gsq_run *r)
{
    return gsq_buf_str(&r->error);
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
