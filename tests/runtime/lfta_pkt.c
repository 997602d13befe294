/* Hand-written LFTA over pcap records: reads every packet accessor and
 * emits, per packet, the PKT fields plus a text "fields" listing every other
 * accessor that is available as name=value; (unavailable ones are absent),
 * and the TCP/UDP payloads. */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gsq_packet.h"

typedef struct pkt_all_t {
    uint32_t systemTime;
    uint32_t time;
    uint64_t timestamp;
    uint32_t caplen;
    uint32_t wire_len;
    gsq_ipv6 srcIPv6;
    gsq_strref fields;
    gsq_strref tcp_data;
    gsq_strref udp_data;
} pkt_all_t;

typedef struct pkt_state {
    char text[2048];
    size_t len;
} pkt_state;

static void add(pkt_state *st, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add(pkt_state *st, const char *name, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(st->text + st->len, sizeof st->text - st->len, "%s=", name);
    if (n > 0)
        st->len += (size_t)n;
    va_start(ap, fmt);
    n = vsnprintf(st->text + st->len, sizeof st->text - st->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        st->len += (size_t)n;
    if (st->len + 1 < sizeof st->text)
        st->text[st->len++] = ';';
}

#define U32(acc, name) do { uint32_t v_; if (!gsq_acc_get_##acc(node, rec, &v_)) add(st, name, "%" PRIu32, v_); } while (0)
#define U64(acc, name) do { uint64_t v_; if (!gsq_acc_get_##acc(node, rec, &v_)) add(st, name, "%" PRIu64, v_); } while (0)
#define BOOL(acc, name) do { uint8_t v_; if (!gsq_acc_get_##acc(node, rec, &v_)) add(st, name, "%u", (unsigned)v_); } while (0)
#define IP4(acc, name) do { uint32_t v_; if (!gsq_acc_get_##acc(node, rec, &v_)) add(st, name, "%u.%u.%u.%u", v_ >> 24, (v_ >> 16) & 255, (v_ >> 8) & 255, v_ & 255); } while (0)
#define IP6(acc, name) do { gsq_ipv6 v_; if (!gsq_acc_get_##acc(node, rec, &v_)) { char h_[33]; int k_; for (k_ = 0; k_ < 16; k_++) snprintf(h_ + 2 * k_, 3, "%02x", v_.b[k_]); add(st, name, "%s", h_); } } while (0)
#define STRLEN(acc, name) do { gsq_str v_; if (!gsq_acc_get_##acc(node, rec, &v_)) add(st, name, "%u", (unsigned)v_.len); } while (0)

static void pkt_accept(void *state, gsq_node *node, const gsq_record *rec)
{
    pkt_state *st = (pkt_state *)state;
    pkt_all_t t;
    gsq_str tcp, udp;
    gsq_str_field sf[3];
    memset(&t, 0, sizeof t);
    st->len = 0;
    /* the PKT fields are required */
    if (gsq_acc_get_system_time(node, rec, &t.systemTime) || gsq_acc_get_time(node, rec, &t.time) ||
        gsq_acc_get_timestamp(node, rec, &t.timestamp) || gsq_acc_get_caplen(node, rec, &t.caplen) ||
        gsq_acc_get_wire_len(node, rec, &t.wire_len))
        return;
    U64(eth_src, "eth_src");
    U64(eth_dst, "eth_dst");
    U32(eth_type, "eth_type");
    U32(vlan_id, "vlan_id");
    U32(ip_version, "ipversion");
    U32(ip_protocol, "protocol");
    U32(ip_len, "len");
    U32(ip_hdr_length, "hdr_length");
    U32(ip_ttl, "ttl");
    U32(ip_tos, "tos");
    U32(ip_id, "id");
    U32(ip_offset, "offset");
    BOOL(ip_more_fragments, "more_fragments");
    BOOL(ip_dont_fragment, "dont_fragment");
    IP4(ipv4_src, "srcIP");
    IP4(ipv4_dst, "destIP");
    IP6(ipv6_src, "srcIPv6");
    IP6(ipv6_dst, "destIPv6");
    U32(src_port, "srcPort");
    U32(dst_port, "destPort");
    U32(tcp_src_port, "tcp_srcPort");
    U32(tcp_dst_port, "tcp_destPort");
    U32(tcp_seq, "sequence_number");
    U32(tcp_ack, "ack_number");
    U32(tcp_flags, "flags");
    BOOL(tcp_fin, "fin");
    BOOL(tcp_syn, "syn");
    BOOL(tcp_rst, "rst");
    BOOL(tcp_psh, "psh");
    BOOL(tcp_ackflag, "ack");
    BOOL(tcp_urg, "urg");
    U32(tcp_window, "window");
    U32(tcp_data_length, "data_length");
    STRLEN(tcp_data, "TCP_data_len");
    U32(udp_src_port, "udp_srcPort");
    U32(udp_dst_port, "udp_destPort");
    U32(udp_length, "udp_length");
    STRLEN(udp_data, "UDP_data_len");
    U32(icmp_type, "icmp_type");
    U32(icmp_code, "icmp_code");
    (void)gsq_acc_get_ipv6_src(node, rec, &t.srcIPv6);
    if (gsq_acc_get_tcp_data(node, rec, &tcp))
        tcp = gsq_str_lit("", 0);
    if (gsq_acc_get_udp_data(node, rec, &udp))
        udp = gsq_str_lit("", 0);
    sf[0].field_off = (uint32_t)offsetof(pkt_all_t, fields);
    sf[0].s = gsq_str_lit(st->text, (uint32_t)st->len);
    sf[1].field_off = (uint32_t)offsetof(pkt_all_t, tcp_data);
    sf[1].s = tcp;
    sf[2].field_off = (uint32_t)offsetof(pkt_all_t, udp_data);
    sf[2].s = udp;
    gsq_emit(node, GSQ_DATA, &t, sizeof t, sf, 3);
}

static const gsq_lfta_def lfta_pkt_all = {
    "pkt_all", "pkt", "PKT_ALL", GSQ_SRC_PCAP, 0, 0, NULL,
    sizeof(pkt_state), NULL, pkt_accept, NULL, NULL, NULL, NULL, NULL, 0, 0, 0,
    NULL, /* accept_cols: records only */
    0,    /* ignores_clock: it may read the clock */
    NULL, /* prefilter: none */
    NULL, NULL, NULL, /* reads no parameter, no epoch marks */
    NULL,             /* not in the kernel's XDP hook */
};

static const gsq_column pkt_cols[] = {
    {"systemTime", GSQ_T_UINT, offsetof(pkt_all_t, systemTime)},
    {"time", GSQ_T_UINT, offsetof(pkt_all_t, time)},
    {"timestamp", GSQ_T_ULLONG, offsetof(pkt_all_t, timestamp)},
    {"caplen", GSQ_T_UINT, offsetof(pkt_all_t, caplen)},
    {"wire_len", GSQ_T_UINT, offsetof(pkt_all_t, wire_len)},
    {"srcIPv6", GSQ_T_IPV6, offsetof(pkt_all_t, srcIPv6)},
    {"fields", GSQ_T_STRING, offsetof(pkt_all_t, fields)},
    {"TCP_data", GSQ_T_STRING, offsetof(pkt_all_t, tcp_data)},
    {"UDP_data", GSQ_T_STRING, offsetof(pkt_all_t, udp_data)},
};
static const gsq_stream_desc streams[] = {
    {"pkt_all", sizeof(pkt_all_t), 9, pkt_cols, GSQ_ROWS_ONE},
};
static const gsq_lfta_def *const lftas[] = {&lfta_pkt_all};

const gsq_queryset_def gsq_queryset = {1, streams, 1, lftas, 0, NULL, 0, NULL, 0, NULL, NULL};
