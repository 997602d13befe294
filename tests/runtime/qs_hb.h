/* Stream structs of the hand-written heartbeat query set: two pcap LFTAs
 * (hb_a on interface "a", hb_b on "b") whose heartbeat() announces the last
 * seen packet time (or the clock less the interface's max_skew), an HFTA
 * hb_merge passing both streams through with gsq_emit_raw (with $joint, a
 * joint heartbeat after each heartbeat), and an HFTA hb_stats counting what
 * reaches it. */
#ifndef QS_HB_H
#define QS_HB_H
#include "gsq_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* hb_a, hb_b, hb_out */
typedef struct hb_pkt_t {
    uint64_t ts_usec;    /* packet time; in a heartbeat the time announced */
    uint64_t bound_usec; /* gsq_clock_bound_usec when the packet was read */
    uint32_t time;       /* ts_usec in seconds */
    uint8_t bound_ok;    /* gsq_clock_bound_usec returned 0 */
    gsq_strref iface;    /* "a" or "b" */
    gsq_strref payload;  /* the UDP payload */
} hb_pkt_t;

/* hb_summary: one tuple at the end */
typedef struct hb_summary_t {
    uint32_t n_data;
    uint32_t n_hb;
    uint32_t n_joint; /* GSQ_JOINT_HEARTBEAT tuples */
    uint64_t first_hb_usec;
    uint64_t last_hb_usec;
} hb_summary_t;

enum { ST_HB_A = 0, ST_HB_B = 1, ST_HB_OUT = 2, ST_HB_SUMMARY = 3 };

#ifdef __cplusplus
}
#endif
#endif
