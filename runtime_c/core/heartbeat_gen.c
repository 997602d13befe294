/*
 * heartbeat_gen.c -- heartbeat generation from time bounds (Srivastava & Widom 2004,
 * Srivastava & Widom, "Flexible time management in data stream systems").
 *
 * The streams are the run's sources with record timestamps.  Each record's
 * application timestamp (tau) and the run clock when its batch was applied
 * (c, the wall-clock instant of the seed; under the data clock the replayed
 * one) drive one heartbeat per stream, hb_usec: every later record of that
 * stream is stamped >= hb_usec, or it is dropped at the input and counted
 * (gsq_tg_arrive).  The LFTAs of a stream promise it (converted to their
 * time field) in their heartbeats.
 *
 * Given bounds (Figure 2).  B_ij is the declared skew set (options
 * skew:I:J), B_ii = {(0, out_of_order:I)} ({(0, 0)} when undeclared), L_j
 * = latency:J.  Set-up closes B under paths (section 3.2: B*, a
 * Floyd-Warshall over the (min, +) dioid of non-redundant pair sets), so a
 * guarantee through a third stream counts.  A batch of stream i whose
 * largest timestamp is tau, applied at c, makes tau - delta due on every
 * stream j at c + t + L_j for each (t, delta) in B*_ij.
 *
 * Estimated bounds (section 6).  B' is measured instead: for every pair and
 * every t = k * step_usec up to the horizon, delta_ij[t] >= max(tau_i^max at
 * c - t, minus a record of j's timestamp) ("max": the largest ever seen;
 * "adaptive", Figure 4: lowered to alpha * delta + (1 - alpha) * (the
 * window's largest) after `window` records that did not exceed it).  The
 * estimates start at 0, so the first records of a lagging stream are
 * dropped until they are learnt -- the seed's behaviour, counted.
 *
 * Memory (section 5.1).  The seed's array tau_j[c] is kept only over the
 * window a guarantee can reach: a ring of `cap` wall-clock quanta from
 * base_q, each slot the largest heartbeat due then; moving the clock folds
 * the slots passed into hb_usec.  Arrivals are summarised per batch
 * (largest, smallest, largest trail behind the running maximum), so the
 * per-record cost is a few comparisons; the batch's c is the clock after
 * it, later than its records' arrival -- a guarantee is never early.
 *
 * Timeout (section 3.4).  When no record arrived on any stream for
 * timeout_usec of CLOCK_MONOTONIC time, every stream's heartbeat becomes
 * the largest timestamp seen; the caller fires a tick so it reaches the
 * plan even when the data clock stands still.  Theorem 3.3 (a timeout is
 * needed unless every delta_min of B* is 0) is reported in the stats.
 *
 * Query-level heartbeats (section 7.1, option hb_level=query): every LFTA
 * is given the least heartbeat over all streams instead of its own.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gsq_internal.h"
#include "gsq_merge.h"
#include "gsq_source_ops.h"

#define GSQ_TG_MAX_SLOTS 8192u   /* pending quanta per stream */
#define GSQ_TG_MIN_QUANTUM 1000u /* microseconds */
#define GSQ_TG_EST_STEPS 16u     /* estimation steps over the horizon */

static uint64_t sat_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* ---- bound sets -------------------------------------------------------- */

int gsq_bound_set_add(gsq_bound_set *s, uint64_t t, uint64_t d)
{
    uint32_t i, k;
    for (i = 0; i < s->n; i++)
        if (s->p[i].t_usec <= t && s->p[i].delta_usec <= d)
            return 0; /* redundant */
    for (i = k = 0; i < s->n; i++) /* drop the pairs (t, d) dominates */
        if (!(t <= s->p[i].t_usec && d <= s->p[i].delta_usec))
            s->p[k++] = s->p[i];
    s->n = k;
    if (s->n == s->cap) {
        uint32_t ncap = s->cap ? s->cap * 2 : 2;
        gsq_bound_pair *np;
        if (s->cap >= GSQ_MAX_BOUND_PAIRS)
            return 0;
        if (ncap > GSQ_MAX_BOUND_PAIRS)
            ncap = GSQ_MAX_BOUND_PAIRS;
        np = realloc(s->p, ncap * sizeof *np);
        if (!np)
            return -1;
        s->p = np;
        s->cap = ncap;
    }
    for (i = s->n; i > 0 && s->p[i - 1].t_usec > t; i--)
        s->p[i] = s->p[i - 1];
    s->p[i].t_usec = t;
    s->p[i].delta_usec = d;
    s->n++;
    return 0;
}

static void bset_free(gsq_bound_set *s)
{
    free(s->p);
    s->p = NULL;
    s->n = s->cap = 0;
}

/* B*_ij |= B*_ik (x) B*_kj, every intermediate k in turn.  Cycles never
 * help (every component is >= 0), so simple paths suffice and one pass
 * over k is the closure.  0, or -1 when out of memory. */
static int close_bounds(gsq_time_gen *g)
{
    uint32_t n = g->n, i, j, k, a, b;
    for (k = 0; k < n; k++)
        for (i = 0; i < n; i++) {
            gsq_bound_set *ik = &g->bstar[i * n + k];
            if (i == k || !ik->n)
                continue;
            for (j = 0; j < n; j++) {
                gsq_bound_set *kj = &g->bstar[k * n + j], *ij = &g->bstar[i * n + j];
                /* copies: bset_add may reorder ij, which may alias neither */
                uint32_t nik = ik->n, nkj = kj->n;
                gsq_bound_pair pik[GSQ_MAX_BOUND_PAIRS], pkj[GSQ_MAX_BOUND_PAIRS];
                if (j == k || !kj->n)
                    continue;
                memcpy(pik, ik->p, nik * sizeof *pik);
                memcpy(pkj, kj->p, nkj * sizeof *pkj);
                for (a = 0; a < nik; a++)
                    for (b = 0; b < nkj; b++)
                        if (gsq_bound_set_add(ij, sat_add(pik[a].t_usec, pkj[b].t_usec),
                                     sat_add(pik[a].delta_usec, pkj[b].delta_usec)) != 0)
                            return -1;
            }
        }
    return 0;
}

/* ---- set-up ------------------------------------------------------------- */

static const gsq_skew *find_iface(const gsq_skew *arr, uint32_t n, const char *iface)
{
    uint32_t i;
    for (i = 0; i < n; i++)
        if (strcmp(arr[i].iface, iface) == 0)
            return &arr[i];
    return NULL;
}

static int stream_of(const gsq_time_gen *g, const char *iface)
{
    uint32_t i;
    for (i = 0; i < g->n; i++)
        if (strcmp(g->st[i].src->iface, iface) == 0)
            return (int)i;
    return -1;
}

/* Whether the run asks for generated heartbeats at all: without any bound
 * beyond the LFTAs' own (out_of_order of sources without timestamps is the
 * LFTAs' business), behaviour stays what it was. */
static int wanted(const gsq_run *r)
{
    uint32_t i;
    if (r->n_latencies || r->n_skew_decls || r->hb_estimate != GSQ_EST_GIVEN ||
        r->hb_timeout_usec || r->hb_level != GSQ_LEVEL_OPERATOR)
        return 1;
    for (i = 0; i < r->n_sources; i++)
        if (r->sources[i].has_ts && find_iface(r->ooos, r->n_ooos, r->sources[i].iface))
            return 1;
    return 0;
}

int gsq_tg_setup(gsq_run *r)
{
    gsq_time_gen *g = &r->tg;
    uint32_t i, j, n = 0;
    uint64_t reach = 0, lmax = 0;
    memset(g, 0, sizeof *g);
    if (!wanted(r))
        return 0;
    for (i = 0; i < r->n_sources; i++)
        n += r->sources[i].has_ts ? 1u : 0u;
    if (!n)
        return 0; /* reported: gsq_tg_report names what could not be used */
    g->active = 1;
    g->estimate = r->hb_estimate;
    g->level = r->hb_level;
    g->horizon_usec = r->hb_horizon_usec;
    g->window = r->hb_window;
    g->alpha = r->hb_alpha;
    g->timeout_usec = r->hb_timeout_usec;
    g->n = n;
    g->st = calloc(n, sizeof *g->st);
    g->bstar = calloc((size_t)n * n, sizeof *g->bstar);
    if (!g->st || !g->bstar)
        goto oom;
    for (i = j = 0; i < r->n_sources; i++) {
        gsq_source *s = &r->sources[i];
        const gsq_skew *k;
        if (!s->has_ts)
            continue;
        g->st[j].src = s;
        s->tg = &g->st[j];
        if ((k = find_iface(r->latencies, r->n_latencies, s->iface)) != NULL)
            g->st[j].latency_usec = k->usec;
        if (g->st[j].latency_usec > lmax)
            lmax = g->st[j].latency_usec;
        j++;
    }
    if (g->estimate == GSQ_EST_GIVEN) {
        for (i = 0; i < n; i++) { /* B_ii = (0, out_of_order), (0, 0) undeclared */
            const gsq_skew *k = find_iface(r->ooos, r->n_ooos, g->st[i].src->iface);
            if (gsq_bound_set_add(&g->bstar[i * n + i], 0, k ? k->usec : 0) != 0)
                goto oom;
        }
        for (i = 0; i < r->n_skew_decls; i++) {
            const gsq_skew_decl *d = &r->skew_decls[i];
            int a = stream_of(g, d->from), b = stream_of(g, d->to);
            uint32_t p;
            if (a < 0 || b < 0)
                continue; /* reported (gsq_tg_report) */
            for (p = 0; p < d->set.n; p++)
                if (gsq_bound_set_add(&g->bstar[(uint32_t)a * n + (uint32_t)b], d->set.p[p].t_usec,
                             d->set.p[p].delta_usec) != 0)
                    goto oom;
        }
        for (i = 0; i < n * n; i++)
            g->pairs_declared += g->bstar[i].n;
        if (close_bounds(g) != 0)
            goto oom;
        g->timeout_needed = 0;
        for (i = 0; i < n * n; i++) {
            uint32_t p;
            g->pairs_closure += g->bstar[i].n;
            /* theorem 3.3: an empty entry, or one whose least delta > 0 */
            if (!g->bstar[i].n || g->bstar[i].p[g->bstar[i].n - 1].delta_usec > 0)
                g->timeout_needed = 1;
            for (p = 0; p < g->bstar[i].n; p++)
                if (g->bstar[i].p[p].t_usec > reach)
                    reach = g->bstar[i].p[p].t_usec;
        }
        g->pairs_closure -= g->pairs_declared;
        reach = sat_add(reach, lmax);
    } else {
        size_t m;
        g->steps = GSQ_TG_EST_STEPS + 1;
        g->step_usec = g->horizon_usec / GSQ_TG_EST_STEPS;
        if (g->step_usec < GSQ_TG_MIN_QUANTUM)
            g->step_usec = GSQ_TG_MIN_QUANTUM;
        m = (size_t)n * n * g->steps;
        g->est_delta = calloc(m, sizeof *g->est_delta);
        g->est_win = calloc(m, sizeof *g->est_win);
        g->est_num = calloc(m, sizeof *g->est_num);
        for (i = 0; i < n; i++)
            if (!(g->st[i].hist = calloc(g->steps, sizeof *g->st[i].hist)))
                goto oom;
        if (!g->est_delta || !g->est_win || !g->est_num)
            goto oom;
        g->timeout_needed = 1;
        reach = g->step_usec * (g->steps - 1);
    }
    g->quantum_usec = reach / (GSQ_TG_MAX_SLOTS - 2) + 1;
    if (g->quantum_usec < GSQ_TG_MIN_QUANTUM)
        g->quantum_usec = GSQ_TG_MIN_QUANTUM;
    g->cap = (uint32_t)(reach / g->quantum_usec + 3);
    for (i = 0; i < n; i++) {
        g->st[i].pending = calloc(g->cap, sizeof *g->st[i].pending);
        g->st[i].pending_set = calloc(g->cap, 1);
        if (!g->st[i].pending || !g->st[i].pending_set)
            goto oom;
    }
    g->last_arrival_mono = gsq_mono_usec();
    return 0;
oom:
    gsq_run_fail(r, "out of memory");
    return -1;
}

void gsq_tg_free(gsq_run *r)
{
    gsq_time_gen *g = &r->tg;
    uint32_t i;
    for (i = 0; g->st && i < g->n; i++) {
        free(g->st[i].pending);
        free(g->st[i].pending_set);
        free(g->st[i].hist);
    }
    for (i = 0; g->bstar && i < g->n * g->n; i++)
        bset_free(&g->bstar[i]);
    free(g->bstar);
    free(g->st);
    free(g->est_delta);
    free(g->est_win);
    free(g->est_num);
    memset(g, 0, sizeof *g);
}

/* ---- the pending heartbeats (section 5.1) ------------------------------ */

static void raise_hb(gsq_tg_stream *t, uint64_t v)
{
    if (!t->has_hb || v > t->hb_usec) {
        t->hb_usec = v;
        t->has_hb = 1;
    }
}

/* Fold the quanta up to now into the heartbeats; the window starts at now. */
static void advance(gsq_time_gen *g, uint64_t now)
{
    uint64_t q = now / g->quantum_usec, k, end;
    uint32_t i;
    if (!g->based) {
        g->base_q = q;
        g->based = 1;
    }
    if (q < g->base_q) /* a wall clock set back: keep the window */
        return;
    end = q - g->base_q >= g->cap ? g->base_q + g->cap - 1 : q;
    for (i = 0; i < g->n; i++) {
        gsq_tg_stream *t = &g->st[i];
        for (k = g->base_q; k <= end; k++) {
            uint32_t slot = (uint32_t)(k % g->cap);
            if (t->pending_set[slot]) {
                raise_hb(t, t->pending[slot]);
                t->pending_set[slot] = 0;
            }
        }
    }
    g->base_q = q;
}

/* Heartbeat v becomes due on stream t at wall instant due >= now (advance
 * ran for now): at once when due, else in the slot of its quantum rounded
 * up, which advance folds only once the clock reached it -- never early. */
static void schedule(gsq_time_gen *g, gsq_tg_stream *t, uint64_t now, uint64_t due, uint64_t v)
{
    uint64_t q;
    uint32_t slot;
    if (t->has_hb && v <= t->hb_usec)
        return;
    if (due <= now) {
        raise_hb(t, v);
        return;
    }
    q = due / g->quantum_usec + (due % g->quantum_usec ? 1 : 0);
    if (q < g->base_q || q - g->base_q >= g->cap)
        return; /* outside the window (a clock set back): a guarantee lost, none broken */
    slot = (uint32_t)(q % g->cap);
    if (!t->pending_set[slot] || v > t->pending[slot]) {
        t->pending[slot] = v;
        t->pending_set[slot] = 1;
    }
}

/* ---- estimation (section 6) ------------------------------------------- */

/* Record max_usec of every stream as of estimation step h (the steps
 * skipped since its last record carry the same maximum). */
static void hist_to(gsq_time_gen *g, uint64_t h)
{
    uint32_t i;
    for (i = 0; i < g->n; i++) {
        gsq_tg_stream *t = &g->st[i];
        uint64_t k;
        if (!t->seen)
            continue;
        if (!t->hist_init) {
            t->hist_first = t->hist_step = h;
            t->hist_init = 1;
        }
        if (h < t->hist_step) /* a clock set back: no history to speak of */
            continue;
        for (k = t->hist_step + 1; k < h && k <= t->hist_step + g->steps; k++)
            t->hist[k % g->steps] = t->max_usec;
        t->hist_step = h;
        t->hist[h % g->steps] = t->max_usec;
    }
}

/* tau_i^max at estimation step s, when recorded: 1 and *out. */
static int hist_at(const gsq_time_gen *g, const gsq_tg_stream *t, uint64_t s, uint64_t *out)
{
    if (!t->hist_init || s < t->hist_first || s > t->hist_step || t->hist_step - s >= g->steps)
        return 0;
    *out = t->hist[s % g->steps];
    return 1;
}

/* Figure 4 for one (i, j, t) with a new estimate est from m records; the
 * "max" estimator is window infinity. */
static void est_update(gsq_time_gen *g, size_t idx, uint64_t est, uint64_t m)
{
    uint64_t *d = &g->est_delta[idx], *w = &g->est_win[idx], *num = &g->est_num[idx];
    if (est > *d) {
        *d = est;
        *w = 0;
        *num = 0;
        return;
    }
    if (g->estimate != GSQ_EST_ADAPTIVE)
        return;
    *num += m;
    if (est > *w)
        *w = est;
    if (*num > g->window) {
        double nd = ceil(g->alpha * (double)*d + (1.0 - g->alpha) * (double)*w);
        *d = nd >= (double)*d ? *d : (uint64_t)nd;
        *w = 0;
        *num = 0;
    }
}

/* The arrivals of stream j (b_n records, smallest b_min, trail b_disorder
 * behind its own running maximum) measured against every stream i's
 * largest timestamp t = k * step_usec earlier (section 6.1). */
static void estimate(gsq_time_gen *g, uint32_t j, uint64_t now)
{
    gsq_tg_stream *tj = &g->st[j];
    uint64_t h = now / g->step_usec, ref;
    uint32_t i, k;
    for (i = 0; i < g->n; i++)
        for (k = 0; k < g->steps; k++) {
            size_t idx = ((size_t)i * g->n + j) * g->steps + k;
            if (i == j && k == 0) /* out of order within the stream, record by record */
                est_update(g, idx, tj->b_disorder, tj->b_n);
            else if (h >= k && hist_at(g, &g->st[i], h - k, &ref))
                est_update(g, idx, sat_sub(ref, tj->b_min), tj->b_n);
        }
}

/* ---- per batch and per tick ------------------------------------------- */

static void apply(gsq_time_gen *g, uint32_t i, uint64_t now)
{
    gsq_tg_stream *ti = &g->st[i];
    uint64_t tau = ti->b_max;
    uint32_t j, p;
    if (g->estimate != GSQ_EST_GIVEN) {
        hist_to(g, now / g->step_usec);
        estimate(g, i, now);
        for (j = 0; j < g->n; j++)
            for (p = 0; p < g->steps; p++)
                schedule(g, &g->st[j], now, sat_add(now, p * g->step_usec),
                         sat_sub(tau, g->est_delta[((size_t)i * g->n + j) * g->steps + p]));
    } else {
        for (j = 0; j < g->n; j++) {
            const gsq_bound_set *b = &g->bstar[i * g->n + j];
            for (p = 0; p < b->n; p++)
                schedule(g, &g->st[j], now, sat_add(sat_add(now, b->p[p].t_usec),
                                               g->st[j].latency_usec),
                         sat_sub(tau, b->p[p].delta_usec));
        }
    }
    if (!ti->seen || tau > ti->max_usec)
        ti->max_usec = tau;
    ti->seen = 1;
    ti->b_n = 0;
    ti->b_disorder = 0;
}

int gsq_tg_after_batch(gsq_run *r, gsq_source *s, uint64_t now)
{
    gsq_time_gen *g = &r->tg;
    uint32_t i;
    uint64_t mono, top = 0;
    int any = 0;
    if (!g->active)
        return 0;
    mono = gsq_mono_usec();
    if (s && s->tg && s->tg->b_n) {
        g->last_arrival_mono = mono;
        g->idle_fired = 0;
        advance(g, now);
        apply(g, (uint32_t)(s->tg - g->st), now);
        g->flushes++;
        return 0;
    }
    if (!g->timeout_usec || g->idle_fired || mono - g->last_arrival_mono < g->timeout_usec)
        return 0;
    /* every input paused (section 3.4): the largest timestamp seen */
    advance(g, now);
    for (i = 0; i < g->n; i++) {
        gsq_tg_stream *t = &g->st[i];
        if (t->b_n) /* arrivals not applied yet: apply now */
            apply(g, i, now);
        if (t->seen && (!any || t->max_usec > top)) {
            top = t->max_usec;
            any = 1;
        }
    }
    g->idle_fired = 1;
    if (!any)
        return 0;
    for (i = 0; i < g->n; i++)
        raise_hb(&g->st[i], top);
    g->timeouts++;
    return 1;
}

void gsq_tg_tick_begin(gsq_run *r, int clock_known, uint64_t now)
{
    gsq_time_gen *g = &r->tg;
    uint32_t i;
    if (!g->active)
        return;
    if (clock_known)
        advance(g, now);
    for (i = 0; i < g->n; i++) {
        if (g->st[i].b_n && clock_known) /* e.g. the final heartbeat */
            apply(g, i, now);
        g->st[i].tick_promised = 0;
    }
}

void gsq_tg_tick_end(gsq_run *r)
{
    gsq_time_gen *g = &r->tg;
    uint32_t i;
    for (i = 0; g->active && i < g->n; i++) {
        gsq_tg_stream *t = &g->st[i];
        if (t->tick_promised && (!t->issued || t->tick_promise_usec > t->issued_usec)) {
            t->issued_usec = t->tick_promise_usec;
            t->issued = 1;
        }
    }
}

/* ---- what generated LFTAs call ------------------------------------------ */

int gsq_generated_heartbeat_usec(gsq_node *node, uint64_t *out)
{
    gsq_time_gen *g = &node->run->tg;
    gsq_tg_stream *t;
    uint32_t i;
    if (!node->lfta || !node->source || !(t = node->source->tg))
        return 1;
    /* a CSV source's timestamps are its time column: an LFTA following
     * another column infers its own heartbeats */
    if (node->lfta->time_pos != node->source->time_pos)
        return 1;
    if (g->level == GSQ_LEVEL_QUERY) {
        uint64_t lo = UINT64_MAX;
        for (i = 0; i < g->n; i++) {
            if (!g->st[i].has_hb)
                return -1;
            if (g->st[i].hb_usec < lo)
                lo = g->st[i].hb_usec;
        }
        *out = lo;
        return 0;
    }
    if (!t->has_hb)
        return -1;
    *out = t->hb_usec;
    return 0;
}

int gsq_heartbeats_generated(gsq_node *node)
{
    return node->run->tg.active;
}

/* ---- promises through the plan (gsq_input_heartbeats_strict) ------------
 *
 * A stream "keeps promises" when each of its heartbeats h says that no later
 * data tuple of the stream is below h in h's temporal columns, because the
 * run drops (and counts) whatever would break it before it gets there:
 *   - an LFTA instance whose source's heartbeats are generated (Srivastava & Widom 2004)
 *     and whose heartbeat follows only the record's own timestamp
 *     (hb_record_time; for a CSV source its time column): records below a
 *     promise are dropped at the input;
 *   - a set merge (the merge of an LFTA's instances over an interface set)
 *     all of whose instances keep promises;
 *   - a MERGE all of whose inputs keep promises.
 * Both merges are the runtime's (gsq_merge.h, gsq::merge_op): under
 * generated heartbeats their progress is their inputs' heartbeats only, the
 * heartbeat they emit is the least of their inputs' bounds, and a data
 * tuple below it is dropped as late -- so, over inputs that keep promises,
 * it is the least of those promises.
 * Anything else does not, as far as the runtime can tell: an HFTA other
 * than a merge (a generated operator's definition does not say what kind it
 * is, so a selection that passes promises on cannot be told from one that
 * does not), an LFTA whose heartbeat follows another field, a source
 * without generated heartbeats. */

/* gsq_merge_spec's column widths (enum gsq_type): 0 for a type no merge reads */
static uint32_t merge_col_width(int type)
{
    switch (type) {
    case GSQ_T_BOOL: return 1;
    case GSQ_T_USHORT: return 2;
    case GSQ_T_UINT: case GSQ_T_INT: case GSQ_T_IP: return 4;
    case GSQ_T_ULLONG: case GSQ_T_LLONG: case GSQ_T_FLOAT: return 8;
    default: return 0;
    }
}

/* Whether d is one of the runtime's merges (gsq_merge.h) writing stream
 * `out`: only those give a definition params, a gsq_merge_spec of a numeric
 * column of their (inputs' and output's) tuples. */
static int is_runtime_merge(const gsq_run *r, const gsq_hfta_def *d, int out)
{
    const gsq_merge_spec *spec = d ? (const gsq_merge_spec *)d->params : NULL;
    uint32_t w;
    if (!spec || out < 0 || (uint32_t)out >= r->qs->n_streams)
        return 0;
    w = merge_col_width(spec->col_type);
    return w && spec->fixed_size == r->qs->streams[out].fixed_size &&
           spec->col_offset <= spec->fixed_size && spec->fixed_size - spec->col_offset >= w;
}

static int lfta_keeps_promises(const gsq_node *n)
{
    return n->lfta->hb_record_time && n->source && n->source->tg &&
           n->lfta->time_pos == n->source->time_pos;
}

static int stream_keeps_promises(const gsq_run *r, int stream, uint32_t depth);

static int node_keeps_promises(const gsq_run *r, const gsq_node *n, uint32_t depth)
{
    const uint32_t at = (uint32_t)(n - r->nodes);
    uint32_t i, k = 0;
    int j;
    if (n->lfta)
        return lfta_keeps_promises(n);
    if (!is_runtime_merge(r, n->hfta, n->out_stream))
        return 0;
    if (at < r->hfta_base) { /* a set merge: its inputs are the LFTA's instances */
        for (i = 0; i < r->n_lfta_nodes; i++) {
            if (r->nodes[i].merge != n)
                continue;
            if (!lfta_keeps_promises(&r->nodes[i]))
                return 0;
            k++;
        }
        return k != 0;
    }
    if (n->hfta->n_inputs < 2 || !n->hfta->in_streams)
        return 0;
    for (j = 0; j < n->hfta->n_inputs; j++) {
        const int in = n->hfta->in_streams[j];
        if (in < 0 || (uint32_t)in >= r->qs->n_streams ||
            r->qs->streams[in].fixed_size != r->qs->streams[n->out_stream].fixed_size ||
            !stream_keeps_promises(r, in, depth + 1))
            return 0;
    }
    return 1;
}

/* Whether the stream's producer keeps promises (above).  The producer is
 * its LFTA (instance), its set merge or its HFTA; an LFTA instance feeding
 * a set merge does not write the stream itself. */
static int stream_keeps_promises(const gsq_run *r, int stream, uint32_t depth)
{
    uint32_t i;
    if (depth > r->n_nodes) /* the plan is acyclic: never, but never loop */
        return 0;
    for (i = 0; i < r->n_nodes; i++) {
        const gsq_node *n = &r->nodes[i];
        if (n->out_stream == stream && !n->merge)
            return node_keeps_promises(r, n, depth);
    }
    return 0;
}

/* Whether the stream's heartbeats are kept promises without declared
 * bounds: its producer is an HFTA or set merge whose definition says it
 * keeps them (merges, joins, aggregations drop what would break a
 * heartbeat they emitted), or a selection forwarding such an input's.  An
 * LFTA's are not: a record older than its open epochs still goes out. */
static int stream_promised(const gsq_run *r, int stream, uint32_t depth)
{
    uint32_t i;
    int j;
    if (depth > r->n_nodes)
        return 0;
    for (i = 0; i < r->n_nodes; i++) {
        const gsq_node *n = &r->nodes[i];
        if (n->out_stream != stream || n->merge)
            continue;
        if (n->lfta || !n->hfta)
            return 0;
        if (n->hfta->promises == GSQ_PROMISES_KEPT)
            return 1;
        if (n->hfta->promises != GSQ_PROMISES_FORWARDED || n->hfta->n_inputs < 1)
            return 0;
        for (j = 0; j < n->hfta->n_inputs; j++)
            if (!stream_promised(r, n->hfta->in_streams[j], depth + 1))
                return 0;
        return 1;
    }
    return 0;
}

int gsq_input_heartbeats_strict(gsq_node *node, int input)
{
    gsq_run *r = node->run;
    int stream;
    if (!node->hfta || input < 0 || input >= node->hfta->n_inputs)
        return 0;
    stream = node->hfta->in_streams[input];
    if (r->tg.active && stream_keeps_promises(r, stream, 0))
        return 1;
    /* Without declared bounds, or where they do not reach, behind an operator that keeps its
     * heartbeats while they run: a merge's heartbeat is the least progress
     * of its inputs, a join's the least its state may still produce, so an
     * idle member or input holding epochs open keeps them open downstream
     * too, however far the others run ahead (data would close them early). */
    return r->hb_interval_usec != 0 && stream_promised(r, stream, 0);
}

void gsq_heartbeat_promised(gsq_node *node, uint64_t usec)
{
    gsq_tg_stream *t;
    if (!node->lfta || !node->source || !(t = node->source->tg))
        return;
    if (!t->tick_promised || usec < t->tick_promise_usec) {
        t->tick_promise_usec = usec;
        t->tick_promised = 1;
    }
}

/* ---- stats and report --------------------------------------------------- */

void gsq_tg_stats_run(const gsq_run *r, gsq_buf *b)
{
    const gsq_time_gen *g = &r->tg;
    static const char *const est[] = {"given", "max", "adaptive"};
    if (!g->active) {
        gsq_buf_adds(b, ",\"heartbeat_generator\":null");
        return;
    }
    gsq_buf_printf(b, ",\"heartbeat_generator\":{\"estimate\":\"%s\",\"level\":\"%s\","
                   "\"streams\":%u,\"quantum_usec\":%llu,\"window_quanta\":%u,"
                   "\"timeout_usec\":%llu,\"timeouts\":%llu,\"timeout_needed\":%s,"
                   "\"batches_applied\":%llu",
                   est[g->estimate], g->level == GSQ_LEVEL_QUERY ? "query" : "operator", g->n,
                   (unsigned long long)g->quantum_usec, g->cap,
                   (unsigned long long)g->timeout_usec, (unsigned long long)g->timeouts,
                   g->timeout_needed ? "true" : "false", (unsigned long long)g->flushes);
    if (g->estimate == GSQ_EST_GIVEN)
        gsq_buf_printf(b, ",\"pairs_declared\":%u,\"pairs_from_closure\":%u", g->pairs_declared,
                       g->pairs_closure);
    else
        gsq_buf_printf(b, ",\"horizon_usec\":%llu,\"step_usec\":%llu,\"window\":%u,\"alpha\":%g",
                       (unsigned long long)g->horizon_usec, (unsigned long long)g->step_usec,
                       g->window, g->alpha);
    gsq_buf_addc(b, '}');
}

/* A source's "time": its heartbeat, how far it lags the source's data, the
 * drops, and the bounds in force towards every stream (closed given
 * bounds as [t, delta] pairs, or the estimates at t = k * step). */
void gsq_tg_stats_source(const gsq_run *r, const gsq_source *s, gsq_buf *b)
{
    const gsq_time_gen *g = &r->tg;
    const gsq_tg_stream *t = s->tg;
    uint32_t i, j, k;
    if (!g->active || !t) {
        gsq_buf_adds(b, ",\"time\":null");
        return;
    }
    i = (uint32_t)(t - g->st);
    gsq_buf_printf(b, ",\"time\":{\"dropped_below_heartbeat\":%llu,\"latency_usec\":%llu",
                   (unsigned long long)t->dropped, (unsigned long long)t->latency_usec);
    if (t->seen)
        gsq_buf_printf(b, ",\"max_usec\":%llu", (unsigned long long)t->max_usec);
    if (t->has_hb)
        gsq_buf_printf(b, ",\"heartbeat_usec\":%llu", (unsigned long long)t->hb_usec);
    if (t->seen && t->has_hb)
        gsq_buf_printf(b, ",\"heartbeat_lag_usec\":%llu",
                       (unsigned long long)sat_sub(t->max_usec, t->hb_usec));
    if (t->issued)
        gsq_buf_printf(b, ",\"issued_usec\":%llu", (unsigned long long)t->issued_usec);
    gsq_buf_adds(b, ",\"bounds_to\":{");
    for (j = 0; j < g->n; j++) {
        gsq_buf_printf(b, "%s", j ? "," : "");
        gsq_buf_json_str(b, g->st[j].src->iface, strlen(g->st[j].src->iface));
        gsq_buf_adds(b, ":[");
        if (g->estimate == GSQ_EST_GIVEN) {
            const gsq_bound_set *bs = &g->bstar[i * g->n + j];
            for (k = 0; k < bs->n; k++)
                gsq_buf_printf(b, "%s[%llu,%llu]", k ? "," : "",
                               (unsigned long long)bs->p[k].t_usec,
                               (unsigned long long)bs->p[k].delta_usec);
        } else {
            for (k = 0; k < g->steps; k++)
                gsq_buf_printf(b, "%s[%llu,%llu]", k ? "," : "",
                               (unsigned long long)(k * g->step_usec),
                               (unsigned long long)g->est_delta[((size_t)i * g->n + j) *
                                                                g->steps + k]);
        }
        gsq_buf_addc(b, ']');
    }
    gsq_buf_adds(b, "}}");
}

static int has_ts_source(const gsq_run *r, const char *iface)
{
    uint32_t i;
    for (i = 0; i < r->n_sources; i++)
        if (strcmp(r->sources[i].iface, iface) == 0)
            return r->sources[i].has_ts;
    return -1; /* no such source */
}

void gsq_tg_report(const gsq_run *r, gsq_buf *b)
{
    const gsq_time_gen *g = &r->tg;
    uint32_t i;
    for (i = 0; g->active && i < g->n; i++)
        if (g->st[i].dropped)
            gsq_buf_printf(b, "gsqlc: warning: %llu record(s) of interface '%s' arrived below a "
                           "heartbeat already issued and were dropped (a time bound was "
                           "exceeded: raise out_of_order/skew/latency, or the estimate's "
                           "window)\n",
                           (unsigned long long)g->st[i].dropped, g->st[i].src->iface);
    if (g->active && g->timeouts && !r->report_losses_only)
        gsq_buf_printf(b, "gsqlc: every input paused for the heartbeat timeout %llu time(s); "
                       "heartbeats moved to the largest timestamp seen\n",
                       (unsigned long long)g->timeouts);
    for (i = 0; i < r->n_latencies; i++)
        if (has_ts_source(r, r->latencies[i].iface) == 0)
            gsq_buf_printf(b, "gsqlc: warning: latency is set for interface '%s', whose records "
                           "carry no timestamps: not used\n", r->latencies[i].iface);
    for (i = 0; i < r->n_skew_decls; i++) {
        const gsq_skew_decl *d = &r->skew_decls[i];
        int a = has_ts_source(r, d->from), c = has_ts_source(r, d->to);
        if (a <= 0 || c <= 0)
            gsq_buf_printf(b, "gsqlc: warning: the skew bound %s -> %s is not used: interface "
                           "'%s' %s\n", d->from, d->to, a <= 0 ? d->from : d->to,
                           (a <= 0 ? a : c) < 0 ? "is read by no query"
                                                : "has records without timestamps");
    }
}
