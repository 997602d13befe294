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
 * (802.1Q/802.1ad tags), Linux cooked (SLL, SLL2), raw IP, NULL and LOOP. */
int gsq_pkt_linktype_known(int linktype);

/* Fill pi from a frame of this link type (DLT_*; one for which
 * gsq_pkt_linktype_known is 0, e.g. -1, decodes nothing).  p holds caplen
 * bytes.  pi must be zeroed beforehand except ts_usec and wire_len, which
 * the caller sets (the decoder reads wire_len). */
void gsq_pkt_decode(gsq_pkt_info *pi, int linktype, const uint8_t *p, uint32_t caplen);

#ifdef __cplusplus
}
#endif

#endif /* GSQ_PKT_DECODE_H */
