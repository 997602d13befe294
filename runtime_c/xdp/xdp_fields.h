/* xdp_fields.h -- the packet fields of gsqlc's packet schema as a BPF
 * program in the XDP hook finds them: the BPF side of a kernel LFTA
 * (compiler/gsqlc/backend/xdp_gen.py).  BPF only (clang -target bpf).
 *
 * xdp_pkt_decode reads a frame's headers once (xf_load: in place, or
 * through bpf_xdp_load_bytes for a frame of several buffers) into a
 * struct xdp_pkt; each getter xf_get_X(pkt, &out) then returns 0 and
 * the field, or nonzero when the field is unavailable in this frame --
 * the same answer as runtime_c/include/gsq_packet.h's gsq_acc_get_X over
 * the same frame captured whole (its decoding: runtime_c/sources/
 * pkt_decode.c and gsq_pkt_decode.h), so that a kernel LFTA counts exactly
 * the frames the LFTA counts in user space.  Differences, both outside
 * what the planner lets into the kernel:
 *   - IPv6: ip_version is 6 and every IP field is unavailable (the
 *     extension headers are not walked).  The planner admits only LFTAs
 *     that read an IPv4-only field (or no IP field), which skip an IPv6
 *     frame in user space too.
 *   - more than XDP_MAX_VLAN_TAGS 802.1Q/802.1ad tags: xdp_pkt_decode
 *     returns nonzero and the program leaves the frame uncounted.
 * time and timestamp are the program's clock (xdp_table.h), caplen has no
 * meaning here: the planner keeps LFTAs reading caplen in user space.
 */
#ifndef GSQLC_XDP_FIELDS_H
#define GSQLC_XDP_FIELDS_H

#include <bpf/bpf_helpers.h>
#include <linux/bpf.h>
#include <linux/types.h>

#define XDP_MAX_VLAN_TAGS 4

struct xdp_pkt {
    __u32 wire_len;    /* the frame's bytes (every fragment of a multi-buffer frame) */
    __u32 has_eth;     /* an Ethernet header is there (14 bytes) */
    __u32 has_type;    /* eth_type is known */
    __u32 eth_type;    /* after any tags */
    __u32 vlan_id;     /* the outermost tag's VID, 0 when untagged */
    __u32 ip_version;  /* 0: no IP header; 4; 6 (no IP field decoded) */
    __u32 ip_proto;
    __u32 ip_len;      /* total length (0 in the header: the wire's from L3) */
    __u32 ip_hdr_len;
    __u32 has_l4;      /* l4 holds the transport header's fixed part */
    __u8 mac[12];      /* destination, source */
    __u8 ip[20];       /* the IPv4 header's fixed part */
    __u8 l4[20];       /* TCP 20, UDP 8, ICMP 4 bytes */
};

static __always_inline __u32 xf_u16(const __u8 *b)
{
    return ((__u32)b[0] << 8) | b[1];
}

static __always_inline __u32 xf_u32(const __u8 *b)
{
    return ((__u32)b[0] << 24) | ((__u32)b[1] << 16) | ((__u32)b[2] << 8) | b[3];
}

/* len bytes at offset off of the frame into dst: read in place when they
 * are in the frame's first buffer (the common case: a bounds check the
 * verifier follows, no call), else through bpf_xdp_load_bytes (a frame of
 * several buffers).  0, or nonzero when the frame is shorter.  len is a
 * constant at every call (the function is inlined). */
static __always_inline int xf_load(struct xdp_md *ctx, __u32 off, void *dst, __u32 len)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    if (off <= 255 && data + off + len <= end) {
        __builtin_memcpy(dst, data + off, len);
        return 0;
    }
    return bpf_xdp_load_bytes(ctx, off, dst, len);
}

/* The transport header's fixed part, when it is inside the frame and the
 * datagram (l3_end) -- gsq_pkt__decode_l4's rule. */
static __always_inline void xf_decode_l4(struct xdp_md *ctx, struct xdp_pkt *p, __u32 off,
                                         __u32 l3_end)
{
    __u32 need = p->ip_proto == 6 ? 20 : p->ip_proto == 17 ? 8 : p->ip_proto == 1 ? 4 : 0;
    if (need == 0 || off > p->wire_len || p->wire_len - off < need || off > l3_end ||
        l3_end - off < need)
        return;
    if (need == 20) {
        if (xf_load(ctx, off, p->l4, 20) != 0)
            return;
    } else if (need == 8) {
        if (xf_load(ctx, off, p->l4, 8) != 0)
            return;
    } else if (xf_load(ctx, off, p->l4, 4) != 0) {
        return;
    }
    p->has_l4 = 1;
}

/* Decodes the frame into *p (zeroed here).  0, or nonzero when the frame
 * has more tags than the program walks (it is then not counted). */
static __always_inline int xdp_pkt_decode(struct xdp_md *ctx, struct xdp_pkt *p)
{
    __u8 tag[4];
    __u32 off = 14, type, tot, ihl, l3_end;
    __builtin_memset(p, 0, sizeof(*p));
    p->wire_len = bpf_xdp_get_buff_len(ctx);
    if (p->wire_len < 14 || xf_load(ctx, 0, p->mac, 12) != 0 ||
        xf_load(ctx, 12, tag, 2) != 0)
        return 0;
    p->has_eth = 1;
    type = xf_u16(tag);
#pragma unroll
    for (int i = 0; i < XDP_MAX_VLAN_TAGS; i++) {
        if (type != 0x8100 && type != 0x88a8 && type != 0x9100)
            break;
        if (off + 4 > p->wire_len || xf_load(ctx, off, tag, 4) != 0)
            break;
        if (i == 0)
            p->vlan_id = xf_u16(tag) & 0x0fff;
        type = xf_u16(tag + 2);
        off += 4;
    }
    if ((type == 0x8100 || type == 0x88a8 || type == 0x9100) && off + 4 <= p->wire_len)
        return 1; /* more tags than walked */
    p->has_type = 1;
    p->eth_type = type;
    if (type == 0x86DD) {
        __u8 v;
        if (off + 40 <= p->wire_len && xf_load(ctx, off, &v, 1) == 0 && (v >> 4) == 6)
            p->ip_version = 6;
        return 0;
    }
    if (type != 0x0800 || off + 20 > p->wire_len || xf_load(ctx, off, p->ip, 20) != 0)
        return 0;
    if ((p->ip[0] >> 4) != 4)
        return 0;
    ihl = (__u32)(p->ip[0] & 15) * 4;
    if (ihl < 20)
        return 0;
    p->ip_version = 4;
    p->ip_hdr_len = ihl;
    p->ip_proto = p->ip[9];
    tot = xf_u16(p->ip + 2);
    p->ip_len = tot ? tot : p->wire_len - off;
    l3_end = (tot >= ihl && off + tot < p->wire_len) ? off + tot : p->wire_len;
    if ((xf_u16(p->ip + 6) & 0x1fff) != 0) /* not the first fragment */
        return 0;
    if (off + ihl > p->wire_len)
        return 0;
    xf_decode_l4(ctx, p, off + ihl, l3_end);
    return 0;
}

/* ---- getters: 0 and *out, or nonzero (unavailable) ------------------- */

#define XF_IPV4(p) ((p)->ip_version == 4)
#define XF_L4(p, proto) ((p)->has_l4 && (p)->ip_proto == (proto))
#define XF_PORTS(p) ((p)->has_l4 && ((p)->ip_proto == 6 || (p)->ip_proto == 17))

static __always_inline int xf_get_wire_len(const struct xdp_pkt *p, __u32 *out)
{
    *out = p->wire_len;
    return 0;
}

static __always_inline __u64 xf_mac(const __u8 *b)
{
    return ((__u64)xf_u16(b) << 32) | xf_u32(b + 2);
}

static __always_inline int xf_get_eth_src(const struct xdp_pkt *p, __u64 *out)
{
    if (!p->has_eth)
        return 1;
    *out = xf_mac(p->mac + 6);
    return 0;
}

static __always_inline int xf_get_eth_dst(const struct xdp_pkt *p, __u64 *out)
{
    if (!p->has_eth)
        return 1;
    *out = xf_mac(p->mac);
    return 0;
}

static __always_inline int xf_get_eth_type(const struct xdp_pkt *p, __u32 *out)
{
    if (!p->has_type)
        return 1;
    *out = p->eth_type;
    return 0;
}

static __always_inline int xf_get_vlan_id(const struct xdp_pkt *p, __u32 *out)
{
    *out = p->vlan_id;
    return 0;
}

static __always_inline int xf_get_ip_version(const struct xdp_pkt *p, __u32 *out)
{
    if (!XF_IPV4(p))
        return 1;
    *out = 4;
    return 0;
}

static __always_inline int xf_get_ip_protocol(const struct xdp_pkt *p, __u32 *out)
{
    if (!XF_IPV4(p))
        return 1;
    *out = p->ip_proto;
    return 0;
}

static __always_inline int xf_get_ip_len(const struct xdp_pkt *p, __u32 *out)
{
    if (!XF_IPV4(p))
        return 1;
    *out = p->ip_len;
    return 0;
}

static __always_inline int xf_get_ip_hdr_length(const struct xdp_pkt *p, __u32 *out)
{
    if (!XF_IPV4(p))
        return 1;
    *out = p->ip_hdr_len;
    return 0;
}

static __always_inline int xf_get_ip_ttl(const struct xdp_pkt *p, __u32 *out)
{
    if (!XF_IPV4(p))
        return 1;
    *out = p->ip[8];
    return 0;
}

static __always_inline int xf_get_ip_tos(const struct xdp_pkt *p, __u32 *out)
{
    if (!XF_IPV4(p))
        return 1;
    *out = p->ip[1];
    return 0;
}

static __always_inline int xf_get_ip_id(const struct xdp_pkt *p, __u32 *out)
{
    if (!XF_IPV4(p))
        return 1;
    *out = xf_u16(p->ip + 4);
    return 0;
}

static __always_inline int xf_get_ip_offset(const struct xdp_pkt *p, __u32 *out)
{
    if (!XF_IPV4(p))
        return 1;
    *out = xf_u16(p->ip + 6) & 0x1fff;
    return 0;
}

static __always_inline int xf_get_ip_more_fragments(const struct xdp_pkt *p, __u8 *out)
{
    if (!XF_IPV4(p))
        return 1;
    *out = (xf_u16(p->ip + 6) & 0x2000) ? 1 : 0;
    return 0;
}

static __always_inline int xf_get_ip_dont_fragment(const struct xdp_pkt *p, __u8 *out)
{
    if (!XF_IPV4(p))
        return 1;
    *out = (xf_u16(p->ip + 6) & 0x4000) ? 1 : 0;
    return 0;
}

static __always_inline int xf_get_ipv4_src(const struct xdp_pkt *p, __u32 *out)
{
    if (!XF_IPV4(p))
        return 1;
    *out = xf_u32(p->ip + 12);
    return 0;
}

static __always_inline int xf_get_ipv4_dst(const struct xdp_pkt *p, __u32 *out)
{
    if (!XF_IPV4(p))
        return 1;
    *out = xf_u32(p->ip + 16);
    return 0;
}

static __always_inline int xf_get_src_port(const struct xdp_pkt *p, __u32 *out)
{
    if (!XF_PORTS(p))
        return 1;
    *out = xf_u16(p->l4);
    return 0;
}

static __always_inline int xf_get_dst_port(const struct xdp_pkt *p, __u32 *out)
{
    if (!XF_PORTS(p))
        return 1;
    *out = xf_u16(p->l4 + 2);
    return 0;
}

/* the getter of a field of transport protocol PROTO read as READ from p->l4 */
#define XF_L4_FIELD(NAME, PROTO, READ)                                             \
    static __always_inline int xf_get_##NAME(const struct xdp_pkt *p, __u32 *out) \
    {                                                                             \
        if (!XF_L4(p, PROTO))                                                     \
            return 1;                                                             \
        *out = (READ);                                                            \
        return 0;                                                                 \
    }
#define XF_TCP_FLAG(NAME, BIT)                                                    \
    static __always_inline int xf_get_##NAME(const struct xdp_pkt *p, __u8 *out) \
    {                                                                            \
        if (!XF_L4(p, 6))                                                        \
            return 1;                                                            \
        *out = (p->l4[13] & (BIT)) ? 1 : 0;                                      \
        return 0;                                                                \
    }

XF_L4_FIELD(tcp_src_port, 6, xf_u16(p->l4))
XF_L4_FIELD(tcp_dst_port, 6, xf_u16(p->l4 + 2))
XF_L4_FIELD(tcp_seq, 6, xf_u32(p->l4 + 4))
XF_L4_FIELD(tcp_ack, 6, xf_u32(p->l4 + 8))
XF_L4_FIELD(tcp_flags, 6, p->l4[13])
XF_L4_FIELD(tcp_window, 6, xf_u16(p->l4 + 14))
XF_TCP_FLAG(tcp_fin, 0x01)
XF_TCP_FLAG(tcp_syn, 0x02)
XF_TCP_FLAG(tcp_rst, 0x04)
XF_TCP_FLAG(tcp_psh, 0x08)
XF_TCP_FLAG(tcp_ackflag, 0x10)
XF_TCP_FLAG(tcp_urg, 0x20)
XF_L4_FIELD(udp_src_port, 17, xf_u16(p->l4))
XF_L4_FIELD(udp_dst_port, 17, xf_u16(p->l4 + 2))
XF_L4_FIELD(udp_length, 17, xf_u16(p->l4 + 4))
XF_L4_FIELD(icmp_type, 1, p->l4[0])
XF_L4_FIELD(icmp_code, 1, p->l4[1])

#undef XF_L4_FIELD
#undef XF_TCP_FLAG

#endif /* GSQLC_XDP_FIELDS_H */
