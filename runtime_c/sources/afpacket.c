/*
 * afpacket.c -- the AF_PACKET / TPACKET_V3 reader of live interfaces
 * (afpacket.h says what it takes, what it delivers and its invariants).
 *
 * Block hand-over follows the kernel's protocol: a block is the reader's
 * once its block_status has TP_STATUS_USER (read with acquire order, so
 * its frames are seen whole), and goes back by storing TP_STATUS_KERNEL
 * (release order, after every read of it).  The kernel fills blocks in
 * ring order and never skips one, so the reader waits on one block only:
 * (rel + n_own) mod n_blocks.  Linux only; elsewhere this file is empty
 * and pcap_source.c reads every live interface through libpcap.
 */
#ifdef __linux__
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <pcap/dlt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "afpacket.h"
#include "gsq_runtime.h"

#define VLAN_TAG_LEN 4u

/* A failed call of open: a closed, why[] <- "CALL: strerror(errno)"
 * (errno as the call left it), -1. */
static int fail_call(gsq_afpacket *a, char *why, size_t why_len, const char *call)
{
    int e = errno;
    gsq_afpacket_close(a);
    snprintf(why, why_len, "%s: %s", call, strerror(e));
    return -1;
}

/* The interface's counter /sys/class/net/IFACE/statistics/NAME, -1 if it
 * cannot be read. */
static int64_t sys_counter(const char *ifname, const char *name)
{
    char path[160];
    long long v;
    FILE *f;
    int n;
    snprintf(path, sizeof path, "/sys/class/net/%s/statistics/%s", ifname, name);
    f = fopen(path, "r");
    if (!f)
        return -1;
    n = fscanf(f, "%lld", &v);
    fclose(f);
    return n == 1 && v >= 0 ? (int64_t)v : -1;
}

int64_t gsq_afpacket_if_dropped(const gsq_afpacket *a)
{
    return sys_counter(a->ifname, "rx_dropped");
}

int64_t gsq_afpacket_if_seen(const gsq_afpacket *a)
{
    int64_t rx = sys_counter(a->ifname, "rx_packets");
    int64_t tx = a->arphrd == ARPHRD_LOOPBACK ? 0 : sys_counter(a->ifname, "tx_packets");
    return rx < 0 || tx < 0 ? -1 : rx + tx;
}

int64_t gsq_afpacket_filtered(const gsq_afpacket *a)
{
    int64_t now, d;
    if (!a->filter_insns)
        return 0;
    now = gsq_afpacket_if_seen(a);
    if (now < 0 || a->if_seen_at_open < 0)
        return -1;
    d = now - a->if_seen_at_open - (int64_t)a->kernel_received;
    return d > 0 ? d : 0;
}

/* The socket filter (afpacket.h): on loopback nothing of the copy going
 * out; then prog (NULL: none) with its nonzero returns made the snapshot
 * length, or the snapshot length (the kernel keeps the bytes a filter
 * returns).  0, or -1 with errno set. */
static int attach_filter(int fd, uint32_t snaplen, int loopback, const struct gsq_bpf_insn *prog,
                         uint32_t prog_len)
{
    struct sock_filter lo[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PKTTYPE)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, 0),
        BPF_STMT(BPF_RET | BPF_K, snaplen),
    };
    struct sock_fprog fp;
    struct sock_filter *all;
    uint32_t i, head = loopback ? 3 : 0;
    int rc, e;
    if (!prog) {
        fp.len = (unsigned short)(head + 1);
        fp.filter = loopback ? lo : lo + 3;
        return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof fp);
    }
    all = calloc((size_t)head + prog_len, sizeof *all);
    if (!all)
        return -1;
    memcpy(all, lo, head * sizeof *all);
    for (i = 0; i < prog_len; i++) {
        struct sock_filter *f = &all[head + i];
        f->code = prog[i].code;
        f->jt = prog[i].jt;
        f->jf = prog[i].jf;
        f->k = prog[i].k;
        if (f->code == (BPF_RET | BPF_K) && f->k != 0)
            f->k = snaplen;
    }
    fp.len = (unsigned short)(head + prog_len);
    fp.filter = all;
    rc = setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof fp);
    e = errno;
    free(all);
    errno = e;
    return rc;
}

int gsq_afpacket_open(gsq_afpacket *a, const char *ifname, const gsq_afpacket_opts *o,
                      char *why, size_t why_len)
{
    struct ifreq ifr;
    struct tpacket_req3 req;
    struct sockaddr_ll sll;
    int version = TPACKET_V3, ifindex;
    long page = sysconf(_SC_PAGESIZE);
    memset(a, 0, sizeof *a);
    a->fd = -1;
    if (strcmp(ifname, "any") == 0) {
        snprintf(why, why_len, "interface any (frames of every link type)");
        return 1;
    }
    if (strlen(ifname) >= IFNAMSIZ) {
        snprintf(why, why_len, "no such interface (a name has at most %d characters)",
                 IFNAMSIZ - 1);
        return -1;
    }
    if (page > 0 && (o->block_size % (uint32_t)page) != 0) {
        snprintf(why, why_len, "block size %u is not a multiple of the page size %ld",
                 o->block_size, page);
        return -1;
    }
    snprintf(a->ifname, sizeof a->ifname, "%s", ifname);
    a->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0); /* bound below: no frame yet */
    if (a->fd < 0)
        return fail_call(a, why, why_len, "socket(AF_PACKET)");
    a->opened = 1;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, ifname, strlen(ifname));
    if (ioctl(a->fd, SIOCGIFINDEX, &ifr) != 0) {
        if (errno != ENODEV)
            return fail_call(a, why, why_len, "SIOCGIFINDEX");
        gsq_afpacket_close(a);
        snprintf(why, why_len, "no such interface");
        return -1;
    }
    ifindex = ifr.ifr_ifindex;
    if (ioctl(a->fd, SIOCGIFHWADDR, &ifr) != 0)
        return fail_call(a, why, why_len, "SIOCGIFHWADDR");
    a->arphrd = ifr.ifr_hwaddr.sa_family;
    switch (a->arphrd) {
    case ARPHRD_ETHER:
    case ARPHRD_LOOPBACK:
        a->linktype = DLT_EN10MB;
        break;
    case ARPHRD_NONE:
        a->linktype = DLT_RAW;
        break;
    default:
        gsq_afpacket_close(a);
        snprintf(why, why_len, "hardware type %d (neither Ethernet, loopback nor none)",
                 a->arphrd);
        return 1;
    }
    if (setsockopt(a->fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) != 0)
        return fail_call(a, why, why_len, "PACKET_VERSION TPACKET_V3");
    {
        const struct gsq_bpf_insn *prog = o->filter;
        if (prog && a->linktype != DLT_EN10MB) {
            snprintf(a->filter_why, sizeof a->filter_why, "frames without an Ethernet header");
            prog = NULL;
        } else if (prog && o->filter_len + 3u > BPF_MAXINSNS) {
            snprintf(a->filter_why, sizeof a->filter_why, "a program of %u instructions",
                     o->filter_len);
            prog = NULL;
        }
        a->snaplen = o->snaplen;
        if (o->fanout) { /* nothing until it joins its group, then prog */
            struct sock_filter none = BPF_STMT(BPF_RET | BPF_K, 0);
            struct sock_fprog fp = {1, &none};
            a->pending_filter = prog;
            a->pending_filter_len = o->filter_len;
            if (setsockopt(a->fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof fp) != 0)
                return fail_call(a, why, why_len, "SO_ATTACH_FILTER");
        } else if (attach_filter(a->fd, o->snaplen, a->arphrd == ARPHRD_LOOPBACK, prog,
                                 o->filter_len) != 0) {
            return fail_call(a, why, why_len, "SO_ATTACH_FILTER");
        }
        a->filter_insns = prog ? o->filter_len : 0;
    }
    memset(&req, 0, sizeof req);
    req.tp_block_size = o->block_size;
    req.tp_block_nr = o->blocks;
    req.tp_frame_size = o->block_size; /* TPACKET_V3 frames are of any size: one per block */
    req.tp_frame_nr = o->blocks;
    req.tp_retire_blk_tov = o->block_timeout_ms;
    a->block_timeout_ms = o->block_timeout_ms;
    if (setsockopt(a->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0) {
        int e = errno;
        gsq_afpacket_close(a);
        snprintf(why, why_len, "PACKET_RX_RING: %s (a ring of %u blocks of %u bytes)",
                 strerror(e), o->blocks, o->block_size);
        return -1;
    }
    a->block_size = o->block_size;
    a->n_blocks = o->blocks;
    a->snaplen = o->snaplen;
    a->ring_size = (size_t)o->block_size * o->blocks;
    a->ring = mmap(NULL, a->ring_size, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
    if (a->ring == MAP_FAILED) {
        a->ring = NULL;
        return fail_call(a, why, why_len, "mmap of the ring");
    }
    if (o->promisc) {
        struct packet_mreq mr;
        memset(&mr, 0, sizeof mr);
        mr.mr_ifindex = ifindex;
        mr.mr_type = PACKET_MR_PROMISC;
        if (setsockopt(a->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) != 0)
            return fail_call(a, why, why_len, "PACKET_ADD_MEMBERSHIP");
    }
    memset(&sll, 0, sizeof sll);
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = ifindex;
    if (bind(a->fd, (struct sockaddr *)&sll, sizeof sll) != 0)
        return fail_call(a, why, why_len, "bind");
    a->if_dropped_at_open = gsq_afpacket_if_dropped(a);
    a->if_seen_at_open = gsq_afpacket_if_seen(a);
    return 0;
}

static inline struct tpacket_block_desc *block_at(const gsq_afpacket *a, uint32_t i)
{
    return (struct tpacket_block_desc *)(a->ring + (size_t)i * a->block_size);
}

/* A VLAN tag the kernel took off: back after the MAC addresses, as
 * libpcap puts it (4 bytes before the frame are free: the frame starts past
 * the frame header and its link-level address). */
static void restore_vlan(gsq_afpacket *a, const struct tpacket3_hdr *h, gsq_afpacket_pkt *p)
{
    uint8_t *d = (uint8_t *)p->data;
    uint16_t tpid = (h->hv1.tp_vlan_tpid || (h->tp_status & TP_STATUS_VLAN_TPID_VALID))
                        ? h->hv1.tp_vlan_tpid
                        : ETH_P_8021Q;
    uint16_t tci = h->hv1.tp_vlan_tci;
    if (a->linktype != DLT_EN10MB || p->caplen < 12 ||
        h->tp_mac < TPACKET_ALIGN(sizeof *h) + sizeof(struct sockaddr_ll) + VLAN_TAG_LEN)
        return;
    d -= VLAN_TAG_LEN;
    memmove(d, d + VLAN_TAG_LEN, 12);
    d[12] = (uint8_t)(tpid >> 8);
    d[13] = (uint8_t)tpid;
    d[14] = (uint8_t)(tci >> 8);
    d[15] = (uint8_t)tci;
    p->data = d;
    p->caplen += VLAN_TAG_LEN;
    p->wire_len += VLAN_TAG_LEN;
    a->vlan_restored++;
}

int gsq_afpacket_error(gsq_afpacket *a)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (a->fd < 0 || getsockopt(a->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        return 0;
    return err;
}

int gsq_afpacket_next(gsq_afpacket *a, gsq_afpacket_pkt *p)
{
    const struct tpacket3_hdr *h;
    for (;;) {
        if (a->in_block)
            break;
        if (a->n_own == a->n_blocks)
            return 0; /* the whole ring is ours until a release */
        {
            uint32_t b = (a->rel + a->n_own) % a->n_blocks;
            struct tpacket_block_desc *bd = block_at(a, b);
            if (!(__atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
                return 0;
            a->n_own++;
            a->blocks_read++;
            a->left = bd->hdr.bh1.num_pkts;
            a->in_block = a->left > 0;
            a->next = (uint8_t *)bd + bd->hdr.bh1.offset_to_first_pkt;
        }
    }
    h = (const struct tpacket3_hdr *)a->next;
    p->data = a->next + h->tp_mac;
    p->caplen = h->tp_snaplen < a->snaplen ? h->tp_snaplen : a->snaplen;
    p->wire_len = h->tp_len;
    p->ts_usec = (uint64_t)h->tp_sec * 1000000u + h->tp_nsec / 1000u;
    if ((h->tp_status & TP_STATUS_VLAN_VALID) || h->hv1.tp_vlan_tci)
        restore_vlan(a, h, p);
    a->next += h->tp_next_offset;
    a->in_block = --a->left > 0; /* a block read to its end waits for a release */
    if (a->in_block) {
        /* The kernel wrote the next frame from another CPU: ask for its
         * header and first bytes while this one is decoded. */
        __builtin_prefetch(a->next);
        __builtin_prefetch(a->next + 64);
        __builtin_prefetch(a->next + 128);
    }
    a->frames_read++;
    return 1;
}

#ifndef PACKET_FANOUT_FLAG_UNIQUEID
#define PACKET_FANOUT_FLAG_UNIQUEID 0x2000
#endif

int gsq_afpacket_join_fanout(gsq_afpacket *a, int *group, char *why, size_t why_len)
{
    uint32_t type = PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_DEFRAG;
    uint32_t word = *group < 0 ? (type | PACKET_FANOUT_FLAG_UNIQUEID) << 16
                               : ((uint32_t)*group & 0xffffu) | type << 16;
    int arg;
    memcpy(&arg, &word, sizeof arg); /* the kernel reads the word's bits */
    socklen_t len = sizeof arg;
    if (setsockopt(a->fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof arg) != 0) {
        snprintf(why, why_len, "PACKET_FANOUT: %s", strerror(errno));
        return -1;
    }
    if (*group < 0) {
        if (getsockopt(a->fd, SOL_PACKET, PACKET_FANOUT, &arg, &len) != 0) {
            snprintf(why, why_len, "PACKET_FANOUT: %s", strerror(errno));
            return -1;
        }
        *group = arg & 0xffff;
    }
    a->fanout = 1;
    /* a member of the group now: its frames are its share, taken from here */
    if (attach_filter(a->fd, a->snaplen, a->arphrd == ARPHRD_LOOPBACK, a->pending_filter,
                      a->pending_filter_len) != 0) {
        snprintf(why, why_len, "SO_ATTACH_FILTER: %s", strerror(errno));
        return -1;
    }
    return 0;
}

void gsq_afpacket_release(gsq_afpacket *a, const uint8_t *keep)
{
    size_t keep_block = keep ? (size_t)(keep - a->ring) / a->block_size : SIZE_MAX;
    while (a->n_own > (a->in_block ? 1u : 0u) && a->rel != keep_block) {
        __atomic_store_n(&block_at(a, a->rel)->hdr.bh1.block_status, TP_STATUS_KERNEL,
                         __ATOMIC_RELEASE);
        a->rel = (a->rel + 1) % a->n_blocks;
        a->n_own--;
    }
}

void gsq_afpacket_count(gsq_afpacket *a)
{
    struct tpacket_stats_v3 st;
    socklen_t len = sizeof st;
    if (!a->opened)
        return;
    memset(&st, 0, sizeof st);
    if (getsockopt(a->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) != 0)
        return;
    a->kernel_received += st.tp_packets;
    a->kernel_dropped += st.tp_drops;
    a->kernel_freezes += st.tp_freeze_q_cnt;
}

void gsq_afpacket_close(gsq_afpacket *a)
{
    if (!a->opened)
        return;
    if (a->ring)
        munmap(a->ring, a->ring_size);
    close(a->fd);
    a->ring = NULL;
    a->fd = -1;
    a->opened = 0;
    a->n_own = 0;
    a->in_block = 0;
}

#else
typedef int gsq_afpacket_linux_only; /* ISO C: a translation unit declares something */
#endif /* __linux__ */
