/* count_by_src.bpf.c -- a hand-written XDP LFTA standing in for a generated
 * one: for IPv4/UDP frames,
 *
 *     SELECT epoch, srcIP, destPort, COUNT(*), SUM(len)
 *     FROM PKT GROUP BY time / EPOCH AS epoch, srcIP, destPort
 *
 * in the direct-mapped per-CPU table of xdp_table.h (XDP_SLOTS slots, so
 * groups collide), every frame -- counted or not -- given the loader's
 * verdict (xdp_verdict: XDP_PASS unless the loader was told to drop).  The
 * epoch length is the loader's (xdp_ctl.epoch_ns).
 *
 *     clang-14 -O2 -g -target bpf -mcpu=v3 -I/usr/include/x86_64-linux-gnu \
 *         -I runtime_c/xdp -c count_by_src.bpf.c -o count_by_src.bpf.o
 */
#include <linux/types.h>

struct xdp_key {
    __u32 src_ip;    /* network order, as on the wire */
    __u16 dest_port; /* host order */
    __u16 pad;
};

struct xdp_aggr {
    __u64 packets;
    __u64 bytes; /* wire length: the frame from its Ethernet header on */
};

#ifndef XDP_SLOTS
#define XDP_SLOTS 64
#endif

#include "xdp_table.h"

#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>

static __always_inline __u16 be16(__u16 v)
{
    return (__u16)((v >> 8) | (v << 8));
}

SEC("xdp")
int count_by_src(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end || eth->h_proto != be16(ETH_P_IP))
        return xdp_verdict();
    struct iphdr *ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > end || ip->version != 4 || ip->ihl < 5 || ip->protocol != IPPROTO_UDP)
        return xdp_verdict();
    /* a fragment after the first has no UDP header */
    if (ip->frag_off & be16(0x1fff))
        return xdp_verdict();
    struct udphdr *udp = (void *)ip + ip->ihl * 4;
    if ((void *)(udp + 1) > end)
        return xdp_verdict();

    struct xdp_key key = {.src_ip = ip->saddr, .dest_port = be16(udp->dest), .pad = 0};
    struct xdp_aggr one = {.packets = 1, .bytes = (__u64)(end - data)};
    struct xdp_run r;
    if (xdp_run_begin(&r) != 0)
        return xdp_verdict();
    /* murmur3's finaliser: every key bit reaches the slot index's low bits */
    __u32 h = key.src_ip ^ ((__u32)key.dest_port << 16 | key.dest_port);
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    struct xdp_slot *s = xdp_slot_for(&r, &key, h);
    if (s) {
        s->aggr.packets += one.packets;
        s->aggr.bytes += one.bytes;
        r.st->packets++;
    } else {
        xdp_emit(&r, XDP_REC_BYPASS, r.epoch, &key, &one);
    }
    xdp_run_end(&r);
    return xdp_verdict();
}

char LICENSE[] SEC("license") = "GPL";
