/* Hand-written LFTAs over CSV, shaped like generated ones. */
#include <stddef.h>
#include <string.h>

#include "gsq_record.h"
#include "gsq_funcs.h"
#include "qs_csv.h"

/* ---- csv_all: SELECT systemTime, every position ... [WHERE ui >= $min_ui] */

typedef struct csv_all_state {
    int have_min;
    uint32_t min_ui;
    int hb; /* $hb set: heartbeat() emits the clock as systemTime */
} csv_all_state;

static int csv_all_init(void *state, gsq_node *node)
{
    csv_all_state *st = (csv_all_state *)state;
    const char *v = gsq_param(node, "min_ui");
    if (gsq_param(node, "fail_init")) {
        gsq_node_fail(node, "parameter $fail_init is set");
        return -1;
    }
    if (v) {
        if (gsq_parse_uint(v, strlen(v), &st->min_ui) != 0) {
            gsq_node_fail(node, "parameter $min_ui: '%s' is not a uint", v);
            return -1;
        }
        st->have_min = 1;
    }
    st->hb = gsq_param(node, "hb") != NULL;
    return 0;
}

static void csv_all_heartbeat(void *state, gsq_node *node)
{
    csv_all_state *st = (csv_all_state *)state;
    csv_all_t t;
    gsq_str_field sf[1];
    if (!st->hb)
        return;
    memset(&t, 0, sizeof t);
    t.systemTime = gsq_clock_seconds(node);
    sf[0].field_off = (uint32_t)offsetof(csv_all_t, s);
    sf[0].s = gsq_str_lit("hb", 2);
    gsq_emit(node, GSQ_HEARTBEAT, &t, sizeof t, sf, 1);
}

static void csv_all_accept(void *state, gsq_node *node, const gsq_record *rec)
{
    csv_all_state *st = (csv_all_state *)state;
    csv_all_t t;
    gsq_str s;
    gsq_str_field sf[1];
    memset(&t, 0, sizeof t);
    if (gsq_acc_get_system_time(node, rec, &t.systemTime) ||
        gsq_csv_get_bool(node, rec, 1, &t.b) || gsq_csv_get_ushort(node, rec, 2, &t.us) ||
        gsq_csv_get_uint(node, rec, 3, &t.ui) || gsq_csv_get_int(node, rec, 4, &t.i) ||
        gsq_csv_get_ullong(node, rec, 5, &t.ull) || gsq_csv_get_llong(node, rec, 6, &t.ll) ||
        gsq_csv_get_float(node, rec, 7, &t.f) || gsq_csv_get_ip(node, rec, 8, &t.ip) ||
        gsq_csv_get_ipv6(node, rec, 9, &t.ip6) || gsq_csv_get_string(node, rec, 10, &s))
        return;
    if (st->have_min && t.ui < st->min_ui)
        return;
    sf[0].field_off = (uint32_t)offsetof(csv_all_t, s);
    sf[0].s = s;
    if (gsq_str_eq(s, gsq_str_lit("__heartbeat__", 13)))
        gsq_emit(node, GSQ_HEARTBEAT, &t, sizeof t, sf, 1);
    else
        gsq_emit(node, GSQ_DATA, &t, sizeof t, sf, 1);
}

static const gsq_csv_field csv_all_fields[] = {
    {1, GSQ_T_BOOL, "b", GSQ_TF_NONE, 0},     {2, GSQ_T_USHORT, "us", GSQ_TF_NONE, 0},
    {3, GSQ_T_UINT, "ui", GSQ_TF_NONE, 0},    {4, GSQ_T_INT, "i", GSQ_TF_NONE, 0},
    {5, GSQ_T_ULLONG, "ull", GSQ_TF_NONE, 0}, {6, GSQ_T_LLONG, "ll", GSQ_TF_NONE, 0},
    {7, GSQ_T_FLOAT, "f", GSQ_TF_NONE, 0},    {8, GSQ_T_IP, "ip", GSQ_TF_NONE, 0},
    {9, GSQ_T_IPV6, "ip6", GSQ_TF_NONE, 0},   {10, GSQ_T_STRING, "s", GSQ_TF_NONE, 0},
};

const gsq_lfta_def lfta_csv_all = {
    "csv_all", "csv", "CSV_ALL", GSQ_SRC_CSV, ST_CSV_ALL,
    sizeof csv_all_fields / sizeof csv_all_fields[0], csv_all_fields,
    sizeof(csv_all_state), csv_all_init, csv_all_accept, NULL, NULL, csv_all_heartbeat, NULL, NULL,
    0, 0, 0,
    NULL, /* accept_cols: records only */
    0,    /* ignores_clock: it may read the clock */
    NULL, /* prefilter: none */
    NULL, NULL, NULL, /* reads no parameter, no epoch marks */
    NULL,             /* not in the kernel's XDP hook */
};

/* ---- csv_alt: SELECT pos3 (as string), pos2 (as ullong) ----------------- */

static void csv_alt_accept(void *state, gsq_node *node, const gsq_record *rec)
{
    csv_alt_t t;
    gsq_str s;
    gsq_str_field sf[1];
    (void)state;
    memset(&t, 0, sizeof t);
    if (gsq_csv_get_string(node, rec, 3, &s) || gsq_csv_get_ullong(node, rec, 2, &t.u2))
        return;
    sf[0].field_off = (uint32_t)offsetof(csv_alt_t, s3);
    sf[0].s = s;
    gsq_emit(node, GSQ_DATA, &t, sizeof t, sf, 1);
}

static const gsq_csv_field csv_alt_fields[] = {{3, GSQ_T_STRING, "s3", GSQ_TF_NONE, 0},
                                                {2, GSQ_T_ULLONG, "u2", GSQ_TF_NONE, 0}};

const gsq_lfta_def lfta_csv_alt = {
    "csv_alt", "csv", "CSV_ALT", GSQ_SRC_CSV, ST_CSV_ALT,
    2, csv_alt_fields, 0, NULL, csv_alt_accept, NULL, NULL, NULL, NULL, NULL, 0, 0, 0,
    NULL, /* accept_cols: records only */
    0,    /* ignores_clock: it may read the clock */
    NULL, /* prefilter: none */
    NULL, NULL, NULL, /* reads no parameter, no epoch marks */
    NULL,             /* not in the kernel's XDP hook */
};
