/* Hand-written pcap LFTAs with heartbeats, shaped like generated ones
 * (seed 000 4.3 and 4.5): accept() saves the last seen time before any
 * predicate and discards records below a bound already promised from the
 * clock; heartbeat() announces max(last seen, clock - max_skew). */
#include <stddef.h>
#include <string.h>

#include "gsq_packet.h"
#include "qs_hb.h"

typedef struct hb_state {
    int seen;
    uint64_t last;     /* largest packet time seen (or inferred) */
    int promised;
    uint64_t bound;    /* largest bound announced from the clock */
    int no_hb;         /* $no_hb names this LFTA: heartbeat() is silent */
} hb_state;

static int hb_init(void *state, gsq_node *node, const char *name)
{
    hb_state *st = (hb_state *)state;
    const char *v = gsq_param(node, "no_hb");
    st->no_hb = v && strcmp(v, name) == 0;
    return 0;
}

static int hb_a_init(void *state, gsq_node *node)
{
    return hb_init(state, node, "hb_a");
}

static int hb_b_init(void *state, gsq_node *node)
{
    return hb_init(state, node, "hb_b");
}

static void emit(gsq_node *node, int kind, hb_pkt_t *t, const char *iface, gsq_str payload)
{
    gsq_str_field sf[2];
    sf[0].field_off = (uint32_t)offsetof(hb_pkt_t, iface);
    sf[0].s = gsq_str_lit(iface, (uint32_t)strlen(iface));
    sf[1].field_off = (uint32_t)offsetof(hb_pkt_t, payload);
    sf[1].s = payload;
    gsq_emit(node, kind, t, sizeof *t, sf, 2);
}

static void hb_accept(void *state, gsq_node *node, const gsq_record *rec, const char *iface)
{
    hb_state *st = (hb_state *)state;
    hb_pkt_t t;
    uint64_t ts;
    gsq_str payload;
    if (gsq_acc_get_timestamp(node, rec, &ts))
        return;
    if (st->promised && ts < st->bound) {
        gsq_count(node, GSQ_CNT_SKEW_DROPPED, 1);
        return;
    }
    if (!st->seen || ts > st->last) {
        st->last = ts;
        st->seen = 1;
    }
    memset(&t, 0, sizeof t);
    t.ts_usec = ts;
    t.time = (uint32_t)(ts / 1000000u);
    t.bound_ok = gsq_clock_bound_usec(node, &t.bound_usec) == 0;
    if (gsq_acc_get_udp_data(node, rec, &payload))
        payload = gsq_str_lit("", 0);
    emit(node, GSQ_DATA, &t, iface, payload);
}

static void hb_a_accept(void *state, gsq_node *node, const gsq_record *rec)
{
    hb_accept(state, node, rec, "a");
}

static void hb_b_accept(void *state, gsq_node *node, const gsq_record *rec)
{
    hb_accept(state, node, rec, "b");
}

static void hb_heartbeat(void *state, gsq_node *node, const char *iface)
{
    hb_state *st = (hb_state *)state;
    hb_pkt_t t;
    uint64_t b;
    if (st->no_hb)
        return;
    if (gsq_clock_bound_usec(node, &b) == 0) {
        if (!st->promised || b > st->bound) {
            st->bound = b;
            st->promised = 1;
        }
        if (!st->seen || b > st->last) {
            st->last = b;
            st->seen = 1;
        }
    }
    if (!st->seen)
        return; /* nothing known yet: no temporal update */
    memset(&t, 0, sizeof t);
    t.ts_usec = st->last;
    t.time = (uint32_t)(st->last / 1000000u);
    emit(node, GSQ_HEARTBEAT, &t, iface, gsq_str_lit("", 0));
}

static void hb_a_heartbeat(void *state, gsq_node *node)
{
    hb_heartbeat(state, node, "a");
}

static void hb_b_heartbeat(void *state, gsq_node *node)
{
    hb_heartbeat(state, node, "b");
}

const gsq_lfta_def lfta_hb_a = {
    "hb_a", "a", "HB", GSQ_SRC_PCAP, ST_HB_A, 0, NULL,
    sizeof(hb_state), hb_a_init, hb_a_accept, NULL, NULL, hb_a_heartbeat, NULL, NULL, 0, 0, 0,
    NULL, /* accept_cols: records only */
    0,    /* ignores_clock: it may read the clock */
    NULL, /* prefilter: none */
    NULL, NULL, NULL, /* reads no parameter, no epoch marks */
    NULL,             /* not in the kernel's XDP hook */
};

const gsq_lfta_def lfta_hb_b = {
    "hb_b", "b", "HB", GSQ_SRC_PCAP, ST_HB_B, 0, NULL,
    sizeof(hb_state), hb_b_init, hb_b_accept, NULL, NULL, hb_b_heartbeat, NULL, NULL, 0, 0, 0,
    NULL, /* accept_cols: records only */
    0,    /* ignores_clock: it may read the clock */
    NULL, /* prefilter: none */
    NULL, NULL, NULL, /* reads no parameter, no epoch marks */
    NULL,             /* not in the kernel's XDP hook */
};
