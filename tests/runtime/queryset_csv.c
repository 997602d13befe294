/* The hand-written CSV query set: csv_all and csv_alt (LFTAs on iface
 * "csv"), csv_regex (HFTA over csv_all). */
#include <stddef.h>

#include "gsq_runtime.h"
#include "qs_csv.h"

extern const gsq_lfta_def lfta_csv_all, lfta_csv_alt;
extern const gsq_hfta_def hfta_csv_regex;

static const gsq_column csv_all_cols[] = {
    {"systemTime", GSQ_T_UINT, offsetof(csv_all_t, systemTime)},
    {"b", GSQ_T_BOOL, offsetof(csv_all_t, b)},
    {"us", GSQ_T_USHORT, offsetof(csv_all_t, us)},
    {"ui", GSQ_T_UINT, offsetof(csv_all_t, ui)},
    {"i", GSQ_T_INT, offsetof(csv_all_t, i)},
    {"ull", GSQ_T_ULLONG, offsetof(csv_all_t, ull)},
    {"ll", GSQ_T_LLONG, offsetof(csv_all_t, ll)},
    {"f", GSQ_T_FLOAT, offsetof(csv_all_t, f)},
    {"ip", GSQ_T_IP, offsetof(csv_all_t, ip)},
    {"ip6", GSQ_T_IPV6, offsetof(csv_all_t, ip6)},
    {"s", GSQ_T_STRING, offsetof(csv_all_t, s)},
};
static const gsq_column csv_alt_cols[] = {
    {"s3", GSQ_T_STRING, offsetof(csv_alt_t, s3)},
    {"u2", GSQ_T_ULLONG, offsetof(csv_alt_t, u2)},
};
static const gsq_column csv_regex_cols[] = {
    {"n", GSQ_T_UINT, offsetof(csv_regex_t, n)},
    {"m", GSQ_T_STRING, offsetof(csv_regex_t, m)},
    {"matched", GSQ_T_BOOL, offsetof(csv_regex_t, matched)},
};
static const gsq_stream_desc streams[] = {
    {"csv_all", sizeof(csv_all_t), 11, csv_all_cols, GSQ_ROWS_ONE},
    {"csv_alt", sizeof(csv_alt_t), 2, csv_alt_cols, GSQ_ROWS_ONE},
    {"csv_regex", sizeof(csv_regex_t), 3, csv_regex_cols, GSQ_ROWS_ONE},
};
static const gsq_lfta_def *const lftas[] = {&lfta_csv_all, &lfta_csv_alt};
static const gsq_hfta_def *const hftas[] = {&hfta_csv_regex};

const gsq_queryset_def gsq_queryset = {3, streams, 2, lftas, 1, hftas, 0, NULL, 0, NULL, NULL};
