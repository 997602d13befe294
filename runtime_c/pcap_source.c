/*
 * pcap_source.c -- the pcap:PATH and pcap-live:IFACE readers (libpcap), and
 * the one-time decoding of each frame's headers into gsq_pkt_info.
 *
 * Offline: the file is opened with fopen (for a precise error message) and
 * handed to pcap_fopen_offline.  A read error in the middle of the file
 * (libpcap: "truncated dump file") ends the source; what was read is
 * processed and the report says so.  Live: pcap_open_live(snaplen 65535,
 * promiscuous off, 100 ms timeout) in non-blocking mode; when no packet is
 * ready the reader polls the selectable fd for at most 100 ms, so a stop
 * signal is noticed promptly.
 *
 * Time-aligned replay (run.c): a batch stops before the first packet
 * stamped after s->limit_usec; that packet is copied aside ("held") and is
 * the first one of the next batch.  gsq_pcap_peek reads ahead the same way.
 *
 * Reader state invariants: handle is open from gsq_pcap_open to
 * gsq_pcap_close; linktype is pcap_datalink(handle); when held is set,
 * held_hdr/held_data are the next packet (held_hdr.caplen bytes).
 */
#define _DEFAULT_SOURCE /* u_char & co. used by pcap.h */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <poll.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsq_internal.h"

typedef struct pcap_reader {
    pcap_t *handle;
    int linktype;
    int decoded;        /* link type is one the decoder understands */
    char errmsg[PCAP_ERRBUF_SIZE + 64];
    /* a packet read ahead (gsq_pcap_peek, or past the batch's time limit):
     * it is the next record of this source */
    int held;
    struct pcap_pkthdr held_hdr;
    uint8_t *held_data; /* owned, held_cap bytes */
    size_t held_cap;
} pcap_reader;

/* ---- decoding --------------------------------------------------------- */

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

static int linktype_known(int lt)
{
    return lt == DLT_EN10MB || lt == DLT_LINUX_SLL ||
#ifdef DLT_LINUX_SLL2
           lt == DLT_LINUX_SLL2 ||
#endif
           is_raw(lt) || lt == DLT_NULL || lt == DLT_LOOP;
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

static void decode_l4(gsq_pkt_info *pi, const uint8_t *p, uint32_t off)
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
        if (pi->ip_version == 4) {
            uint32_t tot = rd16(p + pi->l3_off + 2);
            if (tot == 0) /* TSO: length not filled in */
                tot = pi->wire_len > pi->l3_off ? pi->wire_len - pi->l3_off : 0;
            ip_payload = tot > pi->l3_hdr_len ? tot - pi->l3_hdr_len : 0;
        } else {
            uint32_t tot = (uint32_t)rd16(p + pi->l3_off + 4) + 40u;
            ip_payload = tot > pi->l3_hdr_len ? tot - pi->l3_hdr_len : 0;
        }
        pi->tcp_data_len = ip_payload > doff ? ip_payload - doff : 0;
        pi->payload_off = off + doff;
        pi->payload_end = pi->l3_end;
    } else if (pi->ip_proto == 17) {
        uint32_t ulen = rd16(p + off + 4);
        pi->payload_off = off + 8;
        pi->payload_end = pi->l3_end;
        if (ulen >= 8 && off + ulen < pi->payload_end)
            pi->payload_end = off + ulen;
    }
    if (pi->payload_off > pi->payload_end)
        pi->payload_off = pi->payload_end;
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
    pi->l3_end = (tot >= ihl && off + tot < caplen) ? off + tot : caplen;
    if ((rd16(p + off + 6) & 0x1fff) != 0) /* not the first fragment */
        return;
    if (off + ihl > caplen)
        return;
    decode_l4(pi, p, off + ihl);
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
    nh = p[off + 6];
    cur = off + 40;
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
    decode_l4(pi, p, cur);
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

/* ---- reading ---------------------------------------------------------- */

int gsq_pcap_open(gsq_run *r, gsq_source *s)
{
    pcap_reader *pr = calloc(1, sizeof *pr);
    char errbuf[PCAP_ERRBUF_SIZE];
    if (!pr) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    s->impl = pr;
    errbuf[0] = '\0';
    if (s->live) {
        pr->handle = pcap_open_live(s->path, 65535, 0, 100, errbuf);
        if (!pr->handle) {
            gsq_run_fail(r, "cannot open interface %s: %s", s->path, errbuf);
            return -1;
        }
        if (pcap_setnonblock(pr->handle, 1, errbuf) != 0) {
            gsq_run_fail(r, "cannot open interface %s: %s", s->path, errbuf);
            return -1;
        }
    } else {
        FILE *f = fopen(s->path, "rb");
        if (!f) {
            gsq_run_fail(r, "cannot open %s: %s", s->path, strerror(errno));
            return -1;
        }
        /* libpcap reads each record with two small freads: a large stdio
         * buffer turns 4 KiB read(2) calls into 1 MiB ones. */
        setvbuf(f, NULL, _IOFBF, (size_t)1 << 20);
        pr->handle = pcap_fopen_offline(f, errbuf); /* owns f from here on */
        if (!pr->handle) {
            fclose(f);
            gsq_run_fail(r, "cannot open %s: %s", s->path, errbuf);
            return -1;
        }
    }
    pr->linktype = pcap_datalink(pr->handle);
    pr->decoded = linktype_known(pr->linktype);
    return 0;
}

void gsq_pcap_close(gsq_source *s)
{
    pcap_reader *pr = s->impl;
    if (!pr)
        return;
    if (pr->handle)
        pcap_close(pr->handle);
    free(pr->held_data);
    free(pr);
    s->impl = NULL;
}

/* Wait up to 100 ms (or until the next heartbeat tick) for the live handle
 * to become readable. */
static void live_wait(gsq_run *r, pcap_reader *pr)
{
    struct pollfd pfd;
    int fd = pcap_get_selectable_fd(pr->handle);
    if (fd < 0)
        return;
    pfd.fd = fd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    (void)poll(&pfd, 1, gsq_hb_wait_ms(r));
}

/* Copy the packet libpcap returned aside: it becomes the next record. */
static int hold(gsq_run *r, gsq_source *s, pcap_reader *pr, const struct pcap_pkthdr *h,
                const u_char *data)
{
    if (pr->held_cap < h->caplen || !pr->held_data) {
        uint8_t *nb = realloc(pr->held_data, h->caplen ? h->caplen : 1);
        if (!nb) {
            gsq_run_fail(r, "out of memory reading %s", s->path);
            return -1;
        }
        pr->held_data = nb;
        pr->held_cap = h->caplen ? h->caplen : 1;
    }
    if (h->caplen)
        memcpy(pr->held_data, data, h->caplen);
    pr->held_hdr = *h;
    pr->held = 1;
    return 0;
}

static uint64_t ts_of(const struct pcap_pkthdr *h)
{
    return (uint64_t)h->ts.tv_sec * 1000000u + (uint64_t)h->ts.tv_usec;
}

/* The next packet from libpcap: 1, 0 (live: none ready), or -2 at the end of
 * the source (s->at_eof set); -1 after failing the run. */
static int next_packet(gsq_run *r, gsq_source *s, pcap_reader *pr, struct pcap_pkthdr **h,
                       const u_char **data)
{
    int rc = pcap_next_ex(pr->handle, h, data);
    if (rc == 1 || rc == 0)
        return rc;
    if (rc == PCAP_ERROR_BREAK) {
        s->at_eof = 1;
        return -2;
    }
    if (s->live) {
        gsq_run_fail(r, "error reading interface %s: %s", s->path, pcap_geterr(pr->handle));
        return -1;
    }
    s->truncated = 1;
    snprintf(pr->errmsg, sizeof pr->errmsg, "%s", pcap_geterr(pr->handle));
    s->at_eof = 1;
    return -2;
}

int gsq_pcap_peek(gsq_run *r, gsq_source *s, uint64_t *ts_usec)
{
    pcap_reader *pr = s->impl;
    struct pcap_pkthdr *h;
    const u_char *data;
    int rc;
    if (!pr->held) {
        if (s->at_eof)
            return 0;
        rc = next_packet(r, s, pr, &h, &data);
        if (rc == -1)
            return -1;
        if (rc != 1)
            return 0; /* the end (a live source is never peeked) */
        if (hold(r, s, pr, h, data) != 0)
            return -1;
    }
    *ts_usec = ts_of(&pr->held_hdr);
    return 1;
}

int gsq_pcap_read_batch(gsq_run *r, gsq_source *s)
{
    pcap_reader *pr = s->impl;
    int waited = 0;
    while (!gsq_ring_batch_full(&s->ring)) {
        struct pcap_pkthdr *h;
        const u_char *data;
        uint8_t *mem;
        gsq_record *rec;
        int rc;
        /* a packet, once taken from libpcap, must fit: stop the batch
         * while the largest possible capture might not */
        if (s->ring.n_recs > 0 && s->ring.cap - s->ring.used < GSQ_PCAP_MAX_CAPLEN + 8)
            return 0;
        if (s->live && gsq_stop_requested()) {
            s->at_eof = 1;
            return 0;
        }
        if (pr->held) {
            h = &pr->held_hdr;
            data = pr->held_data;
        } else {
            rc = next_packet(r, s, pr, &h, &data);
            if (rc == 0) { /* live: nothing ready */
                if (s->ring.n_recs > 0 || waited)
                    return 0;
                live_wait(r, pr);
                waited = 1;
                continue;
            }
            if (rc == -2)
                return 0;
            if (rc < 0)
                return -1;
        }
        if (ts_of(h) > s->limit_usec) { /* the next round's */
            if (!pr->held && hold(r, s, pr, h, data) != 0)
                return -1;
            return 0;
        }
        mem = gsq_ring_reserve(&s->ring, h->caplen);
        if (!mem) { /* see the check above: only out of memory */
            gsq_run_fail(r, "out of memory reading %s", s->path);
            return -1;
        }
        memcpy(mem, data, h->caplen);
        pr->held = 0;
        rec = gsq_ring_commit(&s->ring, h->caplen);
        rec->kind = GSQ_SRC_PCAP;
        rec->data = mem;
        rec->len = h->caplen;
        rec->pkt.ts_usec = ts_of(h);
        rec->pkt.wire_len = h->len;
        gsq_pkt_decode(&rec->pkt, pr->decoded ? pr->linktype : -1, mem, h->caplen);
        s->records_read++;
        s->bytes_read += h->caplen;
    }
    return 0;
}

void gsq_pcap_report(const gsq_source *s, gsq_buf *out)
{
    const pcap_reader *pr = s->impl;
    if (!pr)
        return;
    if (s->truncated)
        gsq_buf_printf(out,
                       "gsqlc: %s: truncated capture after %llu packets; what was read was "
                       "processed\n",
                       s->path, (unsigned long long)s->records_read);
    if (!pr->decoded)
        gsq_buf_printf(out,
                       "gsqlc: warning: %s: link type %d is not decoded; only time, timestamp, "
                       "caplen and wire_len are available\n",
                       s->path, pr->linktype);
}
