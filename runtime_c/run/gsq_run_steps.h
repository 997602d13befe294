/*
 * gsq_run_steps.h -- the steps of gsqlc_run, shared by the files of run/:
 *
 *   gsq_setup_nodes   allocate the nodes (LFTA instances, one per member of
 *                     an interface set; set merges; the HFTAs: sets.c) and
 *                     link them to their definitions; -1 (error set, run
 *                     failed): out of memory, or a set over an LFTA
 *                     without set merge
 *   gsq_setup_graph   plan the nodes that run, bindings -> sources (opened
 *                     through their ops), subscriber tables, Arrow-fed
 *                     streams; 0, or -1 with the run failed
 *   gsq_start_nodes   open the sinks and the trace file, init/create every
 *                     running node in queryset order; 0, or -1 (failed)
 *   gsq_main_loop     read to the end (or gsqlc_cancel), then EOF (loop.c)
 *   gsq_flush_sinks   flush every open sink
 *   gsq_read_and_run  one source's batch read and its LFTAs run over it
 *                     (loop.c): what the run loop does for a source, and a
 *                     capture worker for its own (workers.c)
 *   gsq_workers_*     the capture workers of fanout members: started by
 *                     the run loop, a round of them, stopped and freed
 *   gsq_teardown      destroy the nodes, close the sinks and sources
 *
 * Each step runs at most once per run, in this order; gsq_teardown runs
 * whatever the others did (every release is safe on what was never set).
 */
#ifndef GSQ_RUN_STEPS_H
#define GSQ_RUN_STEPS_H

#include "gsq_internal.h"

#define GSQ_DEFAULT_IFACE "default"

int gsq_setup_nodes(gsq_run *r);
int gsq_setup_graph(gsq_run *r);
int gsq_start_nodes(gsq_run *r);
void gsq_main_loop(gsq_run *r);
void gsq_flush_sinks(gsq_run *r);
void gsq_teardown(gsq_run *r);
int gsq_read_and_run(gsq_run *r, gsq_source *s, uint32_t *n);
int gsq_workers_start(gsq_run *r);
void gsq_workers_round(gsq_run *r);
void gsq_workers_stop(gsq_run *r);
void gsq_workers_free(gsq_run *r);

#endif /* GSQ_RUN_STEPS_H */
