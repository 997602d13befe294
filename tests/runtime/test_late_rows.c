/* Unit tests of late drops counted in rows (runtime_c/core/node.c,
 * gsq_count_late; runtime_c/run/report.c, the report line): a dropped
 * tuple of a stream of partial aggregates counts the rows its count(*)
 * column holds, one of a stream whose partials count no rows is counted
 * apart, any other is one row; the set merge's input is its LFTA's stream;
 * a count outside the tuple is not read.  Linked with the runtime objects;
 * prints one line per failure and "N passed, M failed". */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsq_internal.h"

const gsq_queryset_def gsq_queryset = {0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, NULL};

#include "unit_check.h"

typedef struct partial {
    uint32_t tb;
    uint32_t pad;
    uint64_t n;   /* count(*) */
    uint64_t q;
} partial;

static const gsq_column partial_cols[] = {
    {"tb", GSQ_T_UINT, offsetof(partial, tb)},
    {"n", GSQ_T_ULLONG, offsetof(partial, n)},
    {"q", GSQ_T_ULLONG, offsetof(partial, q)},
};

/* 0: partials counting rows in column 1; 1: partials counting none; 2: rows */
static const gsq_stream_desc streams[] = {
    {"_fta_counted", sizeof(partial), 3, partial_cols, 1},
    {"_fta_uncounted", sizeof(partial), 3, partial_cols, GSQ_ROWS_UNKNOWN},
    {"rows", sizeof(partial), 3, partial_cols, GSQ_ROWS_ONE},
    {"agg", sizeof(partial), 3, partial_cols, GSQ_ROWS_ONE},
};
static const int agg_inputs[] = {0, 1, 2};
static const gsq_hfta_def agg_def = {"agg", 3, agg_inputs, 3, NULL, NULL, NULL,
                                     NULL, NULL, NULL, GSQ_PROMISES_KEPT, NULL};
static const gsq_hfta_def set_merge_def = {NULL, 0, NULL, 0, NULL, NULL, NULL,
                                           NULL, NULL, NULL, GSQ_PROMISES_KEPT, NULL};
static const gsq_queryset_def qs = {4, streams, 0, NULL, 1, NULL, 0, NULL, 0, NULL, NULL};

int main(void)
{
    gsq_run *r = calloc(1, sizeof *r);
    gsq_node nodes[2];
    partial p = {7, 0, 42, 1000};
    const char *rep;
    memset(nodes, 0, sizeof nodes);
    r->qs = &qs;
    r->nodes = nodes;
    r->n_nodes = 2;
    r->n_lfta_nodes = 0;
    r->hfta_base = 1; /* nodes[0]: a set merge, nodes[1]: an HFTA */
    nodes[0].run = r;
    nodes[0].hfta = &set_merge_def;
    nodes[0].name = "_fta_counted";
    nodes[0].n_inputs = 2;
    nodes[0].out_stream = 0;
    nodes[1].run = r;
    nodes[1].hfta = &agg_def;
    nodes[1].name = "agg";
    nodes[1].n_inputs = 3;
    nodes[1].out_stream = 3;

    /* a partial of 42 rows, on input 0 (counted) */
    gsq_count_late(&nodes[1], 0, &p, sizeof p);
    CHECK(nodes[1].counters[GSQ_CNT_LATE_DROPPED] == 1);
    CHECK(nodes[1].counters[GSQ_CNT_LATE_DROPPED_ROWS] == 42);
    /* a partial of a query counting no rows (input 1) */
    gsq_count_late(&nodes[1], 1, &p, sizeof p);
    CHECK(nodes[1].counters[GSQ_CNT_LATE_DROPPED] == 2);
    CHECK(nodes[1].counters[GSQ_CNT_LATE_DROPPED_UNKNOWN] == 1);
    /* a row (input 2) */
    gsq_count_late(&nodes[1], 2, &p, sizeof p);
    CHECK(nodes[1].counters[GSQ_CNT_LATE_DROPPED_ROWS] == 43);
    /* a tuple too short to hold its count is not read: unknown */
    gsq_count_late(&nodes[1], 0, &p, offsetof(partial, n) + 4);
    CHECK(nodes[1].counters[GSQ_CNT_LATE_DROPPED_UNKNOWN] == 2);
    CHECK(nodes[1].counters[GSQ_CNT_LATE_DROPPED_ROWS] == 43);
    /* the set merge's inputs are its LFTA's stream (its own out_stream) */
    p.n = 5;
    gsq_count_late(&nodes[0], 1, &p, sizeof p);
    CHECK(nodes[0].counters[GSQ_CNT_LATE_DROPPED] == 1);
    CHECK(nodes[0].counters[GSQ_CNT_LATE_DROPPED_ROWS] == 5);
    /* heartbeats off: a merge of partials takes progress from data */
    CHECK(gsq_inputs_are_partials(&nodes[0]) == 0);
    r->hb_interval_usec = 1000000;
    CHECK(gsq_inputs_are_partials(&nodes[0]) == 1);
    CHECK(gsq_inputs_are_partials(&nodes[1]) == 1);

    /* the report speaks of rows */
    gsq_build_report(r);
    rep = gsq_buf_str(&r->report);
    CHECK(strstr(rep, "gsqlc: _fta_counted: 1 partial aggregates holding 5 rows arrived later "
                      "than the closed epoch allows and were dropped\n") != NULL);
    CHECK(strstr(rep, "gsqlc: agg: 2 partial aggregates holding 43 rows arrived later than the "
                      "closed epoch allows and were dropped (and 2 more partial aggregates of a "
                      "query that counts no rows)\n") != NULL);
    if (check_failed)
        printf("report was:\n%s", rep);
    gsq_buf_free(&r->report);
    free(r);
    return check_report();
}
