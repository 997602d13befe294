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
