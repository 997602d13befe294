/*
 * gsq_record.h -- one input record as an LFTA sees it, and the CSV
 * accessors generated LFTA code calls (C11 and C++17).
 *
 * A record lives in its source's ring buffer and is valid only during the
 * LFTA's accept() call.  The reader fills it once; LFTAs only read it.
 *
 * CSV records: the fields are stored unquoted ("" already turned into ")
 * and contiguous in `data`; field i (1-based, 1 <= i <= n_fields) is
 * data[field_end[i-1] .. field_end[i]).  Every (position, type) pair read by
 * an LFTA bound to the source was converted once at ingest into `vals`;
 * `layout` maps (type, position) to the slot in `vals`.  A position beyond
 * n_fields reads as the zero value of its type (0, FALSE, 0.0.0.0, the
 * all-zero IPV6 address, the empty string): the reader has already warned.
 * So the CSV accessors return 0 (value available) for CSV files.
 *
 * Records of an Arrow source (arrow_source.c) are CSV records too: only
 * `vals` (and `layout`) are set (no text: len == n_fields == 0), and
 * `valid`, when not NULL, has layout->n_slots bytes, 0 for a slot whose
 * value is null.  The accessors return 1 (unavailable) for a null slot.
 * CSV files leave valid NULL (every slot valid).
 *
 * pcap records: `data` holds the captured frame (len == pkt.caplen bytes);
 * `pkt` holds the header offsets decoded once by the reader (see
 * gsq_packet.h for the accessors).
 *
 * Timestamps (every record of a source with timestamps: pcap always, a CSV
 * file or an Arrow source whose time column is known; 0 otherwise):
 * app_usec is the record's application time and arrival_usec the instant
 * it arrived, both in microseconds.  pcap: both are the packet timestamp
 * (also in pkt.ts_usec).  CSV records: app_usec is the time column in its
 * unit; arrival_usec the arrival column in the same unit, or app_usec
 * when there is none.  The data clock is the largest arrival_usec read, and
 * time-aligned replay holds records back by arrival_usec.  A record whose
 * time (or arrival) value is unreadable -- negative, not a number, empty,
 * null -- still reaches the LFTAs with ts_unreadable set: its app_usec and
 * arrival_usec are those of the last readable record of its source (0
 * before the first) and advance no clock.
 */
#ifndef GSQ_RECORD_H
#define GSQ_RECORD_H

#include "gsq_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A converted CSV value.  Which member is meaningful depends on the type:
 * u: bool (0/1), ushort, uint, ullong, IP;  i: int, llong;  f: float;
 * v6: IPV6;  s: string (a view into the record's data). */
typedef union gsq_csv_value {
    uint64_t u;
    int64_t i;
    double f;
    gsq_ipv6 v6;
    gsq_str s;
} gsq_csv_value;

/* Columnar input (an Arrow source read a chunk of rows at a time, option
 * columnar): an LFTA's accept_cols receives the chunk's columns, one per
 * entry of its gsq_lfta_def.csv_fields, in that order.  Invariants: a
 * gsq_col holds n values (vals[i] is row i's, converted as for the value
 * cache, unless raw is set); valid is NULL when no row of the chunk is null there, else
 * valid[i] == 0 marks row i null; row_ok is NULL when every row is to be
 * read, else a row with row_ok[i] == 0 is skipped (rejected as malformed,
 * or dropped below a generated heartbeat).  Strings are views into the
 * source's current record batch, valid during the call. */
typedef struct gsq_col {
    const gsq_csv_value *vals;
    const uint8_t *valid;
    /* NULL, or the chunk's values as they are in the source (row i at
     * raw[i] as the C type of the field's type; then vals is not filled
     * and valid is NULL): a column already of that exact type and without
     * nulls is not converted at all */
    const void *raw;
} gsq_col;

/* Rows a columnar chunk of an Arrow source that is a run's only input
 * holds at most by default (arrow_source.c); a selection's generated loop
 * computes the keep bytes of this many rows at once.  16384 measured 3.5 ms
 * faster than 4096 for a selection over 20 M rows (fewer passes between the
 * columns' streams). */
#define GSQ_ARROW_CHUNK_ROWS 16384u

typedef struct gsq_cols {
    uint32_t n;
    const uint8_t *row_ok;
    const gsq_col *const *col;
    /* under the data clock: the clock after row i was read (UINT64_MAX:
     * not known yet), for gsq_cols_row_clock; else NULL */
    const uint64_t *clock_usec;
} gsq_cols;

/* Per-source map from (type, position) to a slot of the value cache.
 * Invariants: slot[t] is NULL (no LFTA reads type t) or has max_pos + 1
 * entries; an entry is -1 (not cached) or < n_slots.  Index 0 is unused
 * (positions are 1-based). */
typedef struct gsq_csv_layout {
    uint32_t max_pos;
    uint32_t n_slots;
    const int32_t *slot[GSQ_T_STRING + 1];
} gsq_csv_layout;

/* Decoded packet headers.  Offsets are from the start of the frame.
 * Invariants: every offset that is set (>= 0, or l3_off when ip_version != 0)
 * leaves the fixed part of its header inside the captured bytes:
 *   mac_src/mac_dst + 6 <= caplen;
 *   ip_version 4: l3_off + 20 <= caplen; 6: l3_off + 40 <= caplen;
 *   l4_off >= 0 only for TCP (20 bytes), UDP (8), ICMP/ICMPv6 (4) headers that
 *   are fully captured and belong to the first fragment;
 *   payload_off <= payload_end <= caplen. */
typedef struct gsq_pkt_info {
    uint64_t ts_usec;       /* pcap record timestamp, microseconds */
    uint32_t caplen;        /* bytes captured (== record len) */
    uint32_t wire_len;      /* bytes on the wire */
    int32_t mac_src;        /* offset of the 6-byte source MAC, -1: none */
    int32_t mac_dst;        /* offset of the 6-byte destination MAC, -1: none */
    uint16_t eth_type;      /* after any 802.1Q tags; valid if has_eth_type */
    uint16_t vlan_id;       /* outermost 802.1Q tag's VID, 0 when untagged */
    uint8_t has_eth_type;   /* link layer decoded (Ethernet, SLL, raw, loop) */
    uint8_t ip_version;     /* 0 (no complete IP header), 4 or 6 */
    uint8_t ip_proto;       /* IPv4 protocol / IPv6 last next-header */
    uint8_t ip6_mf;         /* IPv6 fragment header: more-fragments flag */
    uint16_t ip6_frag_off;  /* IPv6 fragment header: offset, 8-byte units */
    uint16_t reserved_;
    uint32_t ip6_frag_id;   /* IPv6 fragment header: identification */
    uint32_t l3_off;        /* IP header offset (if ip_version != 0) */
    uint32_t l3_hdr_len;    /* IPv4 IHL*4; IPv6 40 + extension headers */
    uint32_t l3_end;        /* end of the IP datagram within the capture */
    int32_t l4_off;         /* TCP/UDP/ICMP header offset, -1: absent */
    uint32_t tcp_data_len;  /* TCP payload length per the IP/TCP headers */
    uint32_t ip_len;        /* IP datagram length per its header (IPv6: 40 +
                               payload length, or the jumbo option's); where
                               the header says 0 (TSO, BIG TCP), the bytes on
                               the wire from l3_off */
    uint32_t payload_off;   /* TCP/UDP payload bytes actually captured: */
    uint32_t payload_end;   /*   data[payload_off .. payload_end) */
} gsq_pkt_info;

struct gsq_record {
    int kind;                     /* enum gsq_source_kind */
    uint32_t len;                 /* bytes at data */
    const uint8_t *data;
    /* CSV only */
    uint32_t n_fields;
    const uint32_t *field_end;    /* n_fields + 1 entries, field_end[0] == 0 */
    const gsq_csv_value *vals;    /* layout->n_slots entries */
    const gsq_csv_layout *layout;
    const uint8_t *valid;         /* NULL, or layout->n_slots bytes: 0 = null */
    /* pcap only */
    gsq_pkt_info pkt;
    /* timestamps (above) */
    uint64_t app_usec;            /* application time, microseconds */
    uint64_t arrival_usec;        /* arrival instant, microseconds */
    uint8_t ts_unreadable;        /* 1: carries the last readable ones */
};

/* ---- CSV accessors -------------------------------------------------- */

static inline const gsq_csv_value *gsq_csv__cached(const gsq_record *r,
                                                   int type, uint32_t pos)
{
    const gsq_csv_layout *l = r->layout;
    if (l && pos <= l->max_pos && l->slot[type]) {
        int32_t s = l->slot[type][pos];
        if (s >= 0)
            return &r->vals[s];
    }
    return NULL;
}

/* Nonzero when the cached value v (from gsq_csv__cached) is null. */
static inline int gsq_csv__null(const gsq_record *r, const gsq_csv_value *v)
{
    return r->valid && !r->valid[v - r->vals];
}

/* Text of field pos (an empty view when the row has no such field). */
static inline gsq_str gsq_csv_field_text(const gsq_record *r, uint32_t pos)
{
    gsq_str s;
    if (pos >= 1 && pos <= r->n_fields && r->field_end) {
        s.p = (const char *)r->data + r->field_end[pos - 1];
        s.len = r->field_end[pos] - r->field_end[pos - 1];
    } else {
        s.p = "";
        s.len = 0;
    }
    return s;
}

/* The slow path below only runs for a (position, type) the LFTA did not
 * declare in gsq_lfta_def.csv_fields; it converts on the fly. */

static inline int gsq_csv_get_bool(gsq_node *n, const gsq_record *r,
                                   uint32_t pos, uint8_t *out)
{
    const gsq_csv_value *v = gsq_csv__cached(r, GSQ_T_BOOL, pos);
    (void)n;
    if (v) {
        if (gsq_csv__null(r, v))
            return 1;
        *out = (uint8_t)v->u;
    } else {
        gsq_str t = gsq_csv_field_text(r, pos);
        (void)gsq_parse_bool(t.p, t.len, out);
    }
    return 0;
}

static inline int gsq_csv_get_ushort(gsq_node *n, const gsq_record *r,
                                     uint32_t pos, uint16_t *out)
{
    const gsq_csv_value *v = gsq_csv__cached(r, GSQ_T_USHORT, pos);
    (void)n;
    if (v) {
        if (gsq_csv__null(r, v))
            return 1;
        *out = (uint16_t)v->u;
    } else {
        gsq_str t = gsq_csv_field_text(r, pos);
        (void)gsq_parse_ushort(t.p, t.len, out);
    }
    return 0;
}

static inline int gsq_csv_get_uint(gsq_node *n, const gsq_record *r,
                                   uint32_t pos, uint32_t *out)
{
    const gsq_csv_value *v = gsq_csv__cached(r, GSQ_T_UINT, pos);
    (void)n;
    if (v) {
        if (gsq_csv__null(r, v))
            return 1;
        *out = (uint32_t)v->u;
    } else {
        gsq_str t = gsq_csv_field_text(r, pos);
        (void)gsq_parse_uint(t.p, t.len, out);
    }
    return 0;
}

static inline int gsq_csv_get_int(gsq_node *n, const gsq_record *r,
                                  uint32_t pos, int32_t *out)
{
    const gsq_csv_value *v = gsq_csv__cached(r, GSQ_T_INT, pos);
    (void)n;
    if (v) {
        if (gsq_csv__null(r, v))
            return 1;
        *out = (int32_t)v->i;
    } else {
        gsq_str t = gsq_csv_field_text(r, pos);
        (void)gsq_parse_int(t.p, t.len, out);
    }
    return 0;
}

static inline int gsq_csv_get_ullong(gsq_node *n, const gsq_record *r,
                                     uint32_t pos, uint64_t *out)
{
    const gsq_csv_value *v = gsq_csv__cached(r, GSQ_T_ULLONG, pos);
    (void)n;
    if (v) {
        if (gsq_csv__null(r, v))
            return 1;
        *out = v->u;
    } else {
        gsq_str t = gsq_csv_field_text(r, pos);
        (void)gsq_parse_ullong(t.p, t.len, out);
    }
    return 0;
}

static inline int gsq_csv_get_llong(gsq_node *n, const gsq_record *r,
                                    uint32_t pos, int64_t *out)
{
    const gsq_csv_value *v = gsq_csv__cached(r, GSQ_T_LLONG, pos);
    (void)n;
    if (v) {
        if (gsq_csv__null(r, v))
            return 1;
        *out = v->i;
    } else {
        gsq_str t = gsq_csv_field_text(r, pos);
        (void)gsq_parse_llong(t.p, t.len, out);
    }
    return 0;
}

static inline int gsq_csv_get_float(gsq_node *n, const gsq_record *r,
                                    uint32_t pos, double *out)
{
    const gsq_csv_value *v = gsq_csv__cached(r, GSQ_T_FLOAT, pos);
    (void)n;
    if (v) {
        if (gsq_csv__null(r, v))
            return 1;
        *out = v->f;
    } else {
        gsq_str t = gsq_csv_field_text(r, pos);
        (void)gsq_parse_float(t.p, t.len, out);
    }
    return 0;
}

static inline int gsq_csv_get_ip(gsq_node *n, const gsq_record *r,
                                 uint32_t pos, uint32_t *out)
{
    const gsq_csv_value *v = gsq_csv__cached(r, GSQ_T_IP, pos);
    (void)n;
    if (v) {
        if (gsq_csv__null(r, v))
            return 1;
        *out = (uint32_t)v->u;
    } else {
        gsq_str t = gsq_csv_field_text(r, pos);
        (void)gsq_parse_ip_value(t.p, t.len, out);
    }
    return 0;
}

static inline int gsq_csv_get_ipv6(gsq_node *n, const gsq_record *r,
                                   uint32_t pos, gsq_ipv6 *out)
{
    const gsq_csv_value *v = gsq_csv__cached(r, GSQ_T_IPV6, pos);
    (void)n;
    if (v) {
        if (gsq_csv__null(r, v))
            return 1;
        *out = v->v6;
    } else {
        gsq_str t = gsq_csv_field_text(r, pos);
        (void)gsq_parse_ipv6_value(t.p, t.len, out);
    }
    return 0;
}

static inline int gsq_csv_get_string(gsq_node *n, const gsq_record *r,
                                     uint32_t pos, gsq_str *out)
{
    const gsq_csv_value *v = gsq_csv__cached(r, GSQ_T_STRING, pos);
    (void)n;
    if (v && gsq_csv__null(r, v))
        return 1;
    *out = v ? v->s : gsq_csv_field_text(r, pos);
    return 0;
}

/* get_system_time: the run's clock in seconds; always available. */
static inline int gsq_acc_get_system_time(gsq_node *n, const gsq_record *r,
                                          uint32_t *out)
{
    (void)r;
    *out = gsq_clock_seconds(n);
    return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* GSQ_RECORD_H */
