/*
 * pkt_decode.c -- the one-time decoding of a captured frame's headers into
 * gsq_pkt_info (gsq_record.h): link layer (Ethernet with 802.1Q/802.1ad
 * tags, Linux cooked SLL/SLL2, raw IP, NULL/LOOP), IPv4 / IPv6 (extension
 * and fragment headers), TCP / UDP / ICMP / ICMPv6.  The pcap reader
 * (pcap_source.c) and gsqlc._native's read_pcap both decode with it.
 *
 * Depends on libc and <pcap/dlt.h> (the DLT_* numbers) only.
 */
#include <pcap/dlt.h>
#include <string.h>

#include "gsq_pkt_decode.h"

#define ETH_VLAN 0x8100
#define ETH_QINQ 0x88a8
#define ETH_QINQ_OLD 0x9100
#define ETH_IPV4 0x0800
#define ETH_IPV6 0x86dd

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(((unsigned)p[0] << 8) | p[1]);
}

/* DLT_RAW is 12 on most systems, 14 on OpenBSD; LINKTYPE_RAW (101) is
 * what files say and what libpcap usually maps to DLT_RAW. */
static int is_raw(int lt)
{
    return lt == DLT_RAW || lt == 12 || lt == 14 || lt == 101;
}

int gsq_pkt_linktype_known(int lt)
{
    return lt == DLT_EN10MB || lt == DLT_LINUX_SLL ||
#ifdef DLT_LINUX_SLL2
           lt == DLT_LINUX_SLL2 ||
#endif
           is_raw(lt) || lt == DLT_IPV4 || lt == DLT_IPV6 || lt == DLT_NULL || lt == DLT_LOOP;
}

/* The datagram's length when its header leaves it 0 (IPv4 with TCP
 * segmentation offload, IPv6 jumbograms and Linux BIG TCP): what was on
 * the wire from the IP header on. */
static uint32_t wire_from_l3(const gsq_pkt_info *pi)
{
    return pi->wire_len > pi->l3_off ? pi->wire_len - pi->l3_off : 0;
}

/* An IPv6 Jumbo Payload option (RFC 2675: type 0xC2, 4 bytes) in the
 * hop-by-hop header at p[cur..cur+hlen), all captured: its length, else 0. */
static uint32_t jumbo_payload(const uint8_t *p, uint32_t cur, uint32_t hlen)
{
    uint32_t o = cur + 2, end = cur + hlen;
    while (o < end) {
        uint8_t type = p[o];
        if (type == 0) { /* Pad1 */
            o++;
            continue;
        }
        if (o + 2 > end || o + 2u + p[o + 1] > end)
            return 0;
        if (type == 0xC2 && p[o + 1] == 4)
            return ((uint32_t)p[o + 2] << 24) | ((uint32_t)p[o + 3] << 16) |
                   ((uint32_t)p[o + 4] << 8) | p[o + 5];
        o += 2u + p[o + 1];
    }
    return 0;
}

/* Walk 802.1Q / 802.1ad tags starting with ethertype at p[off-2..off). */
static void vlan_tags(gsq_pkt_info *pi, const uint8_t *p, uint32_t caplen, uint32_t *off,
                      uint16_t *type)
{
    int first = 1;
    while ((*type == ETH_VLAN || *type == ETH_QINQ || *type == ETH_QINQ_OLD) &&
           *off + 4 <= caplen) {
        if (first)
            pi->vlan_id = rd16(p + *off) & 0x0fff;
        first = 0;
        *type = rd16(p + *off + 2);
        *off += 4;
    }
}

static int is_ipv6_ext(uint8_t nh)
{
    return nh == 0 || nh == 43 || nh == 44 || nh == 60 || nh == 51;
}

static void decode_ipv4(gsq_pkt_info *pi, const uint8_t *p, uint32_t off)
{
    uint32_t caplen = pi->caplen, ihl, tot;
    if (off + 20 > caplen || (p[off] >> 4) != 4)
        return;
    ihl = (uint32_t)(p[off] & 15) * 4u;
    if (ihl < 20)
        return;
    pi->ip_version = 4;
    pi->l3_off = off;
    pi->l3_hdr_len = ihl;
    pi->ip_proto = p[off + 9];
    tot = rd16(p + off + 2);
    pi->ip_len = tot ? tot : wire_from_l3(pi); /* 0: TSO left it unset */
    pi->l3_end = (tot >= ihl && off + tot < caplen) ? off + tot : caplen;
    if ((rd16(p + off + 6) & 0x1fff) != 0) /* not the first fragment */
        return;
    if (off + ihl > caplen)
        return;
    gsq_pkt__decode_l4(pi, p, off + ihl);
}

static void decode_ipv6(gsq_pkt_info *pi, const uint8_t *p, uint32_t off)
{
    uint32_t caplen = pi->caplen, plen, cur;
    uint8_t nh;
    if (off + 40 > caplen || (p[off] >> 4) != 6)
        return;
    pi->ip_version = 6;
    pi->l3_off = off;
    plen = rd16(p + off + 4);
    pi->l3_end = (plen != 0 && off + 40 + plen < caplen) ? off + 40 + plen : caplen;
    pi->ip_len = plen + 40u;
    nh = p[off + 6];
    cur = off + 40;
    if (plen == 0) { /* a jumbogram's length is in its hop-by-hop header */
        uint32_t jumbo = 0;
        if (nh == 0 && cur + 8 <= caplen) {
            uint32_t hlen = ((uint32_t)p[cur + 1] + 1u) * 8u;
            if (cur + hlen <= caplen)
                jumbo = jumbo_payload(p, cur, hlen);
        }
        pi->ip_len = jumbo && jumbo <= UINT32_MAX - 40u ? jumbo + 40u : wire_from_l3(pi);
        if (jumbo && (uint64_t)off + pi->ip_len < caplen)
            pi->l3_end = off + pi->ip_len;
    }
    while (is_ipv6_ext(nh)) {
        uint32_t hlen;
        if (cur + 8 > caplen) { /* extension header not captured */
            pi->ip_proto = nh;
            pi->l3_hdr_len = cur - off;
            return;
        }
        if (nh == 44) {
            uint16_t fo = rd16(p + cur + 2);
            pi->ip6_frag_off = (uint16_t)(fo >> 3);
            pi->ip6_mf = (uint8_t)(fo & 1);
            pi->ip6_frag_id = ((uint32_t)p[cur + 4] << 24) | ((uint32_t)p[cur + 5] << 16) |
                              ((uint32_t)p[cur + 6] << 8) | p[cur + 7];
            hlen = 8;
        } else if (nh == 51) {
            hlen = ((uint32_t)p[cur + 1] + 2u) * 4u;
        } else {
            hlen = ((uint32_t)p[cur + 1] + 1u) * 8u;
        }
        nh = p[cur];
        cur += hlen;
    }
    pi->ip_proto = nh;
    pi->l3_hdr_len = cur - off;
    if (pi->ip6_frag_off != 0)
        return;
    gsq_pkt__decode_l4(pi, p, cur);
}

static void decode_l3(gsq_pkt_info *pi, const uint8_t *p, uint32_t off, uint16_t type)
{
    pi->has_eth_type = 1;
    pi->eth_type = type;
    if (type == ETH_IPV4)
        decode_ipv4(pi, p, off);
    else if (type == ETH_IPV6)
        decode_ipv6(pi, p, off);
}

/* Address family of a loopback header to an ethertype (0: unknown). */
static uint16_t af_to_type(uint32_t af)
{
    if (af == 2)
        return ETH_IPV4;
    if (af == 10 || af == 24 || af == 28 || af == 30)
        return ETH_IPV6;
    return 0;
}

/* IP version nibble of a raw frame to an ethertype. */
static uint16_t raw_type(const uint8_t *p, uint32_t caplen)
{
    if (caplen < 1)
        return 0;
    if ((p[0] >> 4) == 4)
        return ETH_IPV4;
    if ((p[0] >> 4) == 6)
        return ETH_IPV6;
    return 0;
}

void gsq_pkt_decode(gsq_pkt_info *pi, int lt, const uint8_t *p, uint32_t caplen)
{
    uint32_t off;
    uint16_t type;
    pi->caplen = caplen;
    pi->mac_src = pi->mac_dst = -1;
    pi->l4_off = -1;
    pi->has_eth_type = 0;
    pi->ip_version = 0;
    pi->ip_len = 0;
    pi->vlan_id = 0;

    if (lt == DLT_EN10MB) {
        if (caplen < 14)
            return;
        pi->mac_dst = 0;
        pi->mac_src = 6;
        off = 14;
        type = rd16(p + 12);
        vlan_tags(pi, p, caplen, &off, &type);
        decode_l3(pi, p, off, type);
    } else if (lt == DLT_LINUX_SLL) {
        if (caplen < 16)
            return;
        if (rd16(p + 4) == 6)
            pi->mac_src = 6;
        off = 16;
        type = rd16(p + 14);
        vlan_tags(pi, p, caplen, &off, &type);
        decode_l3(pi, p, off, type);
#ifdef DLT_LINUX_SLL2
    } else if (lt == DLT_LINUX_SLL2) {
        if (caplen < 20)
            return;
        if (p[11] == 6)
            pi->mac_src = 12;
        off = 20;
        type = rd16(p);
        vlan_tags(pi, p, caplen, &off, &type);
        decode_l3(pi, p, off, type);
#endif
    } else if (is_raw(lt)) {
        type = raw_type(p, caplen);
        if (type)
            decode_l3(pi, p, 0, type);
    } else if (lt == DLT_IPV4 || lt == DLT_IPV6) { /* raw IP of one version only */
        type = raw_type(p, caplen);
        if (type == (lt == DLT_IPV4 ? ETH_IPV4 : ETH_IPV6))
            decode_l3(pi, p, 0, type);
    } else if (lt == DLT_NULL || lt == DLT_LOOP) {
        uint32_t af;
        if (caplen < 4)
            return;
        if (lt == DLT_LOOP) {
            af = ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
        } else {
            memcpy(&af, p, 4); /* host byte order of the capturing machine */
            if (af > 0xffff) /* written by a machine of the other endianness */
                af = ((af >> 24) & 0xff) | ((af >> 8) & 0xff00) | ((af << 8) & 0xff0000) |
                     (af << 24);
        }
        type = af_to_type(af);
        if (type)
            decode_l3(pi, p, 4, type);
    }
}
