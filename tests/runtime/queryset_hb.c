/* The hand-written heartbeat query set (see qs_hb.h). */
#include <stddef.h>

#include "gsq_runtime.h"
#include "qs_hb.h"

extern const gsq_lfta_def lfta_hb_a, lfta_hb_b;
extern const gsq_hfta_def hfta_hb_merge, hfta_hb_stats;

static const gsq_column pkt_cols[] = {
    {"ts_usec", GSQ_T_ULLONG, offsetof(hb_pkt_t, ts_usec)},
    {"bound_usec", GSQ_T_ULLONG, offsetof(hb_pkt_t, bound_usec)},
    {"time", GSQ_T_UINT, offsetof(hb_pkt_t, time)},
    {"bound_ok", GSQ_T_BOOL, offsetof(hb_pkt_t, bound_ok)},
    {"iface", GSQ_T_STRING, offsetof(hb_pkt_t, iface)},
    {"payload", GSQ_T_STRING, offsetof(hb_pkt_t, payload)},
};
static const gsq_column summary_cols[] = {
    {"n_data", GSQ_T_UINT, offsetof(hb_summary_t, n_data)},
    {"n_hb", GSQ_T_UINT, offsetof(hb_summary_t, n_hb)},
    {"n_joint", GSQ_T_UINT, offsetof(hb_summary_t, n_joint)},
    {"first_hb_usec", GSQ_T_ULLONG, offsetof(hb_summary_t, first_hb_usec)},
    {"last_hb_usec", GSQ_T_ULLONG, offsetof(hb_summary_t, last_hb_usec)},
};
static const gsq_stream_desc streams[] = {
    {"hb_a", sizeof(hb_pkt_t), 6, pkt_cols, GSQ_ROWS_ONE},
    {"hb_b", sizeof(hb_pkt_t), 6, pkt_cols, GSQ_ROWS_ONE},
    {"hb_out", sizeof(hb_pkt_t), 6, pkt_cols, GSQ_ROWS_ONE},
    {"hb_summary", sizeof(hb_summary_t), 5, summary_cols, GSQ_ROWS_ONE},
};
static const gsq_lfta_def *const lftas[] = {&lfta_hb_a, &lfta_hb_b};
static const gsq_hfta_def *const hftas[] = {&hfta_hb_merge, &hfta_hb_stats};

const gsq_queryset_def gsq_queryset = {4, streams, 2, lftas, 2, hftas, 0, NULL, 0, NULL, NULL};
