/*
 * gsq_pkt_decode.h -- the packet decoder (pkt_decode.c): a captured frame's
 * link, IP and transport headers located once into gsq_pkt_info, which the
 * accessors of gsq_packet.h then read (C11 and C++17).
 *
 * Self-contained: pkt_decode.c needs only libc and <pcap/dlt.h>, so code
 * outside the runtime (the gsqlc._native Python extension) links it alone.
 */
#ifndef GSQ_PKT_DECODE_H
#define GSQ_PKT_DECODE_H

#include <string.h>

#include "gsq_record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Nonzero when frames of this link type (DLT_*) are decoded: Ethernet
 * (802.1Q/802.1ad tags), Linux cooked (SLL, SLL2), raw IP (either version,
 * or IPv4 / IPv6 only: link types 228, 229), NULL and LOOP. */
int gsq_pkt_linktype_known(int linktype);

/* Fill pi from a frame of this link type (DLT_*; one for which
 * gsq_pkt_linktype_known is 0, e.g. -1, decodes nothing).  p holds caplen
 * bytes.  pi must be zeroed beforehand except ts_usec and wire_len, which
 * the caller sets (the decoder reads wire_len). */
void gsq_pkt_decode(gsq_pkt_info *pi, int linktype, const uint8_t *p, uint32_t caplen);

/* The transport header at p[off..) of the IP datagram pi describes (its
 * ip_proto, ip_version, ip_len, l3_hdr_len and l3_end set): l4_off, and for
 * TCP / UDP tcp_data_len and the payload's bounds, when the fixed part of
 * the header is captured and inside the datagram.  Shared by gsq_pkt_decode
 * and gsq_pkt_decode_fast. */
static inline void gsq_pkt__decode_l4(gsq_pkt_info *pi, const uint8_t *p, uint32_t off)
{
    uint32_t caplen = pi->caplen, need;
    switch (pi->ip_proto) {
    case 6: need = 20; break;
    case 17: need = 8; break;
    case 1: need = pi->ip_version == 4 ? 4 : 0; break;
    case 58: need = pi->ip_version == 6 ? 4 : 0; break;
    default: need = 0; break;
    }
    if (need == 0 || off > caplen || caplen - off < need || off > pi->l3_end ||
        pi->l3_end - off < need)
        return;
    pi->l4_off = (int32_t)off;
    if (pi->ip_proto == 6) {
        uint32_t doff = (uint32_t)(p[off + 12] >> 4) * 4u;
        uint32_t ip_payload; /* bytes after the IP header(s), per the headers */
        if (doff < 20)
            doff = 20;
        ip_payload = pi->ip_len > pi->l3_hdr_len ? pi->ip_len - pi->l3_hdr_len : 0;
        pi->tcp_data_len = ip_payload > doff ? ip_payload - doff : 0;
        pi->payload_off = off + doff;
        pi->payload_end = pi->l3_end;
    } else if (pi->ip_proto == 17) {
        uint32_t ulen = ((uint32_t)p[off + 4] << 8) | p[off + 5];
        pi->payload_off = off + 8;
        pi->payload_end = pi->l3_end;
        if (ulen >= 8 && off + ulen < pi->payload_end)
            pi->payload_end = off + ulen;
    }
    if (pi->payload_off > pi->payload_end)
        pi->payload_off = pi->payload_end;
}

/* gsq_pkt_decode of a frame into pi whatever pi held, with the common
 * frame -- Ethernet (link type 1) without tags carrying IPv4 -- decoded
 * inline, so that a reader's loop over such frames makes no call; any
 * other frame goes to gsq_pkt_decode.  The result is gsq_pkt_decode's over
 * a zeroed pi with ts_usec and wire_len set
 * (tests/runtime/test_pkt_decode_fast.c compares the two). */
static inline void gsq_pkt_decode_fast(gsq_pkt_info *pi, uint64_t ts_usec, uint32_t wire_len,
                                       int linktype, const uint8_t *p, uint32_t caplen)
{
    uint32_t ihl, tot;
    memset(pi, 0, sizeof *pi); /* (an initializer would not be C++17) */
    pi->ts_usec = ts_usec;
    pi->wire_len = wire_len;
    if (linktype != 1 || caplen < 34 || p[12] != 0x08 || p[13] != 0x00 || (p[14] >> 4) != 4 ||
        (p[14] & 15u) < 5u) {
        gsq_pkt_decode(pi, linktype, p, caplen);
        return;
    }
    ihl = (uint32_t)(p[14] & 15u) * 4u;
    tot = ((uint32_t)p[16] << 8) | p[17];
    pi->caplen = caplen;
    pi->mac_src = 6;
    pi->eth_type = 0x0800;
    pi->has_eth_type = 1;
    pi->ip_version = 4;
    pi->ip_proto = p[23];
    pi->l3_off = 14;
    pi->l3_hdr_len = ihl;
    pi->l3_end = (tot >= ihl && 14u + tot < caplen) ? 14u + tot : caplen;
    pi->l4_off = -1;
    pi->ip_len = tot ? tot : (wire_len > 14u ? wire_len - 14u : 0u);
    if (((((uint32_t)p[20] << 8) | p[21]) & 0x1fffu) != 0 || 14u + ihl > caplen)
        return; /* a later fragment, or the options not captured */
    gsq_pkt__decode_l4(pi, p, 14u + ihl);
}

/* A packet timestamp from libpcap (its pcap_pkthdr's tv_sec, tv_usec) in
 * microseconds since the epoch.  A classic capture stores the seconds as an
 * unsigned 32-bit number; libpcap 1.10 reads it signed, so a packet from
 * 2038-01-19 03:14:08 UTC on (2^31 s) arrives with a negative tv_sec, here
 * read back as the unsigned number the file holds.  pcapng seconds are 64
 * bits and come unchanged (classic 0: pcapng or a live capture; libpcap's
 * pcap_major_version is 2 for a classic file); the fraction is taken as
 * libpcap gives it. */
static inline uint64_t gsq_pkt_ts_usec(int64_t tv_sec, int64_t tv_usec, int classic)
{
    uint64_t sec = classic && tv_sec < 0 ? (uint64_t)(uint32_t)tv_sec : (uint64_t)tv_sec;
    return sec * 1000000u + (uint64_t)tv_usec;
}

/* The first microsecond whose whole second does not fit the packet
 * schema's 32-bit `time` (2106-02-07 06:28:16 UTC): `time` holds at
 * UINT32_MAX from there on (gsq_acc_get_time); readers count such packets. */
#define GSQ_PKT_TIME_END_USEC ((UINT64_C(0xffffffff) + 1u) * 1000000u)

#ifdef __cplusplus
}
#endif

#endif /* GSQ_PKT_DECODE_H */
