/*
 * gsq_packet.h -- packet field accessors (compiler/gsqlc/data/packet_schema.txt)
 * called by generated LFTA code over pcap records (C11 and C++17).
 *
 * Every accessor: static inline int gsq_acc_get_X(gsq_node *, const
 * gsq_record *, CTYPE *out); returns 0 and sets *out when the field is
 * available, nonzero when its header is absent from this packet (an ICMP
 * packet has no ports, an IPv6 packet no srcIP, a non-IP frame no IP field,
 * a truncated capture lacks the bytes).  The headers were decoded once by
 * the pcap reader (gsq_pkt_info in gsq_record.h); the accessors only read.
 *
 * Semantics beyond the schema comments:
 *   eth_src/eth_dst  Ethernet only (eth_src also for Linux cooked capture
 *                    with a 6-byte address); big-endian 48-bit integer.
 *   eth_type         also for SLL/raw/loopback frames (0x0800 / 0x86DD).
 *   vlan_id          the outermost 802.1Q/802.1ad tag's VID.
 *   time             whole seconds of timestamp; UINT32_MAX from 2106-02-07
 *                    06:28:16 UTC on (GSQ_PKT_TIME_END_USEC), where 32 bits
 *                    end: the readers count those packets.
 *   len              the IP datagram's length (gsq_pkt_info.ip_len): where
 *                    the header says 0 (TSO, jumbograms, BIG TCP), the
 *                    jumbo option's or the wire length from the IP header.
 *   hdr_length       IPv6: 40 + extension headers (bytes up to L4).
 *   id, offset,      IPv6: from the fragment header when there is one,
 *   more_fragments   else 0.
 *   data_length      TCP payload length per the IP and TCP headers (on the
 *                    wire); TCP_data/UDP_data hold the bytes captured.
 */
#ifndef GSQ_PACKET_H
#define GSQ_PACKET_H

#include "gsq_record.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GSQ_IPPROTO_ICMP 1
#define GSQ_IPPROTO_TCP 6
#define GSQ_IPPROTO_UDP 17
#define GSQ_IPPROTO_ICMPV6 58

static inline uint16_t gsq_pkt__u16(const uint8_t *p)
{
    return (uint16_t)(((unsigned)p[0] << 8) | (unsigned)p[1]);
}

static inline uint32_t gsq_pkt__u32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline uint64_t gsq_pkt__mac(const uint8_t *p)
{
    uint64_t v = 0;
    int i;
    for (i = 0; i < 6; i++)
        v = (v << 8) | p[i];
    return v;
}

static inline const uint8_t *gsq_pkt__l3(const gsq_record *r)
{
    return r->data + r->pkt.l3_off;
}

/* L4 header of protocol proto, or NULL. */
static inline const uint8_t *gsq_pkt__l4(const gsq_record *r, int proto)
{
    if (r->pkt.l4_off < 0 || r->pkt.ip_proto != proto)
        return NULL;
    return r->data + r->pkt.l4_off;
}

static inline const uint8_t *gsq_pkt__icmp(const gsq_record *r)
{
    if (r->pkt.l4_off < 0)
        return NULL;
    if ((r->pkt.ip_version == 4 && r->pkt.ip_proto == GSQ_IPPROTO_ICMP) ||
        (r->pkt.ip_version == 6 && r->pkt.ip_proto == GSQ_IPPROTO_ICMPV6))
        return r->data + r->pkt.l4_off;
    return NULL;
}

/* TCP or UDP header, or NULL. */
static inline const uint8_t *gsq_pkt__ports(const gsq_record *r)
{
    if (r->pkt.l4_off < 0)
        return NULL;
    if (r->pkt.ip_proto != GSQ_IPPROTO_TCP && r->pkt.ip_proto != GSQ_IPPROTO_UDP)
        return NULL;
    return r->data + r->pkt.l4_off;
}

/* ---- PKT ------------------------------------------------------------ */

static inline int gsq_acc_get_time(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    uint64_t sec = r->pkt.ts_usec / 1000000u;
    (void)n;
    /* past 2106 the 32-bit seconds hold at their largest (counted by the
     * readers) rather than wrap back to 1970 against the time order */
    *out = sec > UINT32_MAX ? UINT32_MAX : (uint32_t)sec;
    return 0;
}

static inline int gsq_acc_get_timestamp(gsq_node *n, const gsq_record *r, uint64_t *out)
{
    (void)n;
    *out = r->pkt.ts_usec;
    return 0;
}

static inline int gsq_acc_get_caplen(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    *out = r->pkt.caplen;
    return 0;
}

static inline int gsq_acc_get_wire_len(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    *out = r->pkt.wire_len;
    return 0;
}

/* ---- ETH ------------------------------------------------------------ */

static inline int gsq_acc_get_eth_src(gsq_node *n, const gsq_record *r, uint64_t *out)
{
    (void)n;
    if (r->pkt.mac_src < 0)
        return 1;
    *out = gsq_pkt__mac(r->data + r->pkt.mac_src);
    return 0;
}

static inline int gsq_acc_get_eth_dst(gsq_node *n, const gsq_record *r, uint64_t *out)
{
    (void)n;
    if (r->pkt.mac_dst < 0)
        return 1;
    *out = gsq_pkt__mac(r->data + r->pkt.mac_dst);
    return 0;
}

static inline int gsq_acc_get_eth_type(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    if (!r->pkt.has_eth_type)
        return 1;
    *out = r->pkt.eth_type;
    return 0;
}

static inline int gsq_acc_get_vlan_id(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    if (!r->pkt.has_eth_type)
        return 1;
    *out = r->pkt.vlan_id;
    return 0;
}

/* ---- IP (v4 or v6) ---------------------------------------------------- */

static inline int gsq_acc_get_ip_version(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    if (!r->pkt.ip_version)
        return 1;
    *out = r->pkt.ip_version;
    return 0;
}

static inline int gsq_acc_get_ip_protocol(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    if (!r->pkt.ip_version)
        return 1;
    *out = r->pkt.ip_proto;
    return 0;
}

static inline int gsq_acc_get_ip_len(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    if (!r->pkt.ip_version)
        return 1;
    *out = r->pkt.ip_len;
    return 0;
}

static inline int gsq_acc_get_ip_hdr_length(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    if (!r->pkt.ip_version)
        return 1;
    *out = r->pkt.l3_hdr_len;
    return 0;
}

static inline int gsq_acc_get_ip_ttl(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    if (r->pkt.ip_version == 4)
        *out = gsq_pkt__l3(r)[8];
    else if (r->pkt.ip_version == 6)
        *out = gsq_pkt__l3(r)[7];
    else
        return 1;
    return 0;
}

static inline int gsq_acc_get_ip_tos(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    if (r->pkt.ip_version == 4)
        *out = gsq_pkt__l3(r)[1];
    else if (r->pkt.ip_version == 6)
        *out = (gsq_pkt__u16(gsq_pkt__l3(r)) >> 4) & 0xffu;
    else
        return 1;
    return 0;
}

static inline int gsq_acc_get_ip_id(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    if (r->pkt.ip_version == 4)
        *out = gsq_pkt__u16(gsq_pkt__l3(r) + 4);
    else if (r->pkt.ip_version == 6)
        *out = r->pkt.ip6_frag_id;
    else
        return 1;
    return 0;
}

static inline int gsq_acc_get_ip_offset(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    if (r->pkt.ip_version == 4)
        *out = gsq_pkt__u16(gsq_pkt__l3(r) + 6) & 0x1fffu;
    else if (r->pkt.ip_version == 6)
        *out = r->pkt.ip6_frag_off;
    else
        return 1;
    return 0;
}

static inline int gsq_acc_get_ip_more_fragments(gsq_node *n, const gsq_record *r, uint8_t *out)
{
    (void)n;
    if (r->pkt.ip_version == 4)
        *out = (gsq_pkt__u16(gsq_pkt__l3(r) + 6) & 0x2000u) ? 1 : 0;
    else if (r->pkt.ip_version == 6)
        *out = r->pkt.ip6_mf ? 1 : 0;
    else
        return 1;
    return 0;
}

static inline int gsq_acc_get_ip_dont_fragment(gsq_node *n, const gsq_record *r, uint8_t *out)
{
    (void)n;
    if (r->pkt.ip_version == 4)
        *out = (gsq_pkt__u16(gsq_pkt__l3(r) + 6) & 0x4000u) ? 1 : 0;
    else if (r->pkt.ip_version == 6)
        *out = 0;
    else
        return 1;
    return 0;
}

static inline int gsq_acc_get_ipv4_src(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    if (r->pkt.ip_version != 4)
        return 1;
    *out = gsq_pkt__u32(gsq_pkt__l3(r) + 12);
    return 0;
}

static inline int gsq_acc_get_ipv4_dst(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    if (r->pkt.ip_version != 4)
        return 1;
    *out = gsq_pkt__u32(gsq_pkt__l3(r) + 16);
    return 0;
}

static inline int gsq_acc_get_ipv6_src(gsq_node *n, const gsq_record *r, gsq_ipv6 *out)
{
    (void)n;
    if (r->pkt.ip_version != 6)
        return 1;
    memcpy(out->b, gsq_pkt__l3(r) + 8, 16);
    return 0;
}

static inline int gsq_acc_get_ipv6_dst(gsq_node *n, const gsq_record *r, gsq_ipv6 *out)
{
    (void)n;
    if (r->pkt.ip_version != 6)
        return 1;
    memcpy(out->b, gsq_pkt__l3(r) + 24, 16);
    return 0;
}

static inline int gsq_acc_get_src_port(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    const uint8_t *h = gsq_pkt__ports(r);
    (void)n;
    if (!h)
        return 1;
    *out = gsq_pkt__u16(h);
    return 0;
}

static inline int gsq_acc_get_dst_port(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    const uint8_t *h = gsq_pkt__ports(r);
    (void)n;
    if (!h)
        return 1;
    *out = gsq_pkt__u16(h + 2);
    return 0;
}

/* ---- TCP -------------------------------------------------------------- */

static inline int gsq_acc_get_tcp_src_port(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    const uint8_t *h = gsq_pkt__l4(r, GSQ_IPPROTO_TCP);
    (void)n;
    if (!h)
        return 1;
    *out = gsq_pkt__u16(h);
    return 0;
}

static inline int gsq_acc_get_tcp_dst_port(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    const uint8_t *h = gsq_pkt__l4(r, GSQ_IPPROTO_TCP);
    (void)n;
    if (!h)
        return 1;
    *out = gsq_pkt__u16(h + 2);
    return 0;
}

static inline int gsq_acc_get_tcp_seq(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    const uint8_t *h = gsq_pkt__l4(r, GSQ_IPPROTO_TCP);
    (void)n;
    if (!h)
        return 1;
    *out = gsq_pkt__u32(h + 4);
    return 0;
}

static inline int gsq_acc_get_tcp_ack(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    const uint8_t *h = gsq_pkt__l4(r, GSQ_IPPROTO_TCP);
    (void)n;
    if (!h)
        return 1;
    *out = gsq_pkt__u32(h + 8);
    return 0;
}

static inline int gsq_acc_get_tcp_flags(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    const uint8_t *h = gsq_pkt__l4(r, GSQ_IPPROTO_TCP);
    (void)n;
    if (!h)
        return 1;
    *out = h[13];
    return 0;
}

static inline int gsq_pkt__tcp_flag(const gsq_record *r, unsigned bit, uint8_t *out)
{
    const uint8_t *h = gsq_pkt__l4(r, GSQ_IPPROTO_TCP);
    if (!h)
        return 1;
    *out = (h[13] & bit) ? 1 : 0;
    return 0;
}

static inline int gsq_acc_get_tcp_fin(gsq_node *n, const gsq_record *r, uint8_t *out)
{
    (void)n;
    return gsq_pkt__tcp_flag(r, 0x01u, out);
}

static inline int gsq_acc_get_tcp_syn(gsq_node *n, const gsq_record *r, uint8_t *out)
{
    (void)n;
    return gsq_pkt__tcp_flag(r, 0x02u, out);
}

static inline int gsq_acc_get_tcp_rst(gsq_node *n, const gsq_record *r, uint8_t *out)
{
    (void)n;
    return gsq_pkt__tcp_flag(r, 0x04u, out);
}

static inline int gsq_acc_get_tcp_psh(gsq_node *n, const gsq_record *r, uint8_t *out)
{
    (void)n;
    return gsq_pkt__tcp_flag(r, 0x08u, out);
}

static inline int gsq_acc_get_tcp_ackflag(gsq_node *n, const gsq_record *r, uint8_t *out)
{
    (void)n;
    return gsq_pkt__tcp_flag(r, 0x10u, out);
}

static inline int gsq_acc_get_tcp_urg(gsq_node *n, const gsq_record *r, uint8_t *out)
{
    (void)n;
    return gsq_pkt__tcp_flag(r, 0x20u, out);
}

static inline int gsq_acc_get_tcp_window(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    const uint8_t *h = gsq_pkt__l4(r, GSQ_IPPROTO_TCP);
    (void)n;
    if (!h)
        return 1;
    *out = gsq_pkt__u16(h + 14);
    return 0;
}

static inline int gsq_acc_get_tcp_data_length(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    (void)n;
    if (!gsq_pkt__l4(r, GSQ_IPPROTO_TCP))
        return 1;
    *out = r->pkt.tcp_data_len;
    return 0;
}

static inline int gsq_acc_get_tcp_data(gsq_node *n, const gsq_record *r, gsq_str *out)
{
    (void)n;
    if (!gsq_pkt__l4(r, GSQ_IPPROTO_TCP))
        return 1;
    out->p = (const char *)r->data + r->pkt.payload_off;
    out->len = r->pkt.payload_end - r->pkt.payload_off;
    return 0;
}

/* ---- UDP -------------------------------------------------------------- */

static inline int gsq_acc_get_udp_src_port(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    const uint8_t *h = gsq_pkt__l4(r, GSQ_IPPROTO_UDP);
    (void)n;
    if (!h)
        return 1;
    *out = gsq_pkt__u16(h);
    return 0;
}

static inline int gsq_acc_get_udp_dst_port(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    const uint8_t *h = gsq_pkt__l4(r, GSQ_IPPROTO_UDP);
    (void)n;
    if (!h)
        return 1;
    *out = gsq_pkt__u16(h + 2);
    return 0;
}

static inline int gsq_acc_get_udp_length(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    const uint8_t *h = gsq_pkt__l4(r, GSQ_IPPROTO_UDP);
    (void)n;
    if (!h)
        return 1;
    *out = gsq_pkt__u16(h + 4);
    return 0;
}

static inline int gsq_acc_get_udp_data(gsq_node *n, const gsq_record *r, gsq_str *out)
{
    (void)n;
    if (!gsq_pkt__l4(r, GSQ_IPPROTO_UDP))
        return 1;
    out->p = (const char *)r->data + r->pkt.payload_off;
    out->len = r->pkt.payload_end - r->pkt.payload_off;
    return 0;
}

/* ---- ICMP / ICMPv6 ---------------------------------------------------- */

static inline int gsq_acc_get_icmp_type(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    const uint8_t *h = gsq_pkt__icmp(r);
    (void)n;
    if (!h)
        return 1;
    *out = h[0];
    return 0;
}

static inline int gsq_acc_get_icmp_code(gsq_node *n, const gsq_record *r, uint32_t *out)
{
    const uint8_t *h = gsq_pkt__icmp(r);
    (void)n;
    if (!h)
        return 1;
    *out = h[1];
    return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* GSQ_PACKET_H */
