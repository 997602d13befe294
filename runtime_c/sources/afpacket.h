/*
 * afpacket.h -- a zero-copy reader of a live Linux interface (afpacket.c):
 * an AF_PACKET socket (SOCK_RAW, all protocols, bound to the interface)
 * with a TPACKET_V3 memory-mapped receive ring.  The kernel fills the
 * ring's blocks with frames and hands each full (or timed-out) block over;
 * every frame this reader delivers points into its block, and the block
 * goes back to the kernel only when the caller says it no longer reads
 * the frames taken from it (gsq_afpacket_release).  No copy, no system
 * call per frame.  pcap_source.c reads `pcap-live:IFACE` through it (option
 * pcap_reader=mmap, the default) and keeps libpcap for the rest.
 *
 * What it takes (anything else: gsq_afpacket_open returns 1 with the
 * reason, and the caller opens the interface through libpcap): a named
 * interface (not "any") whose hardware type is Ethernet or loopback
 * (frames with an Ethernet header: link type DLT_EN10MB) or has no link
 * header at all (ARPHRD_NONE, e.g. tun: DLT_RAW).
 *
 * What it delivers is what libpcap 1.10 delivers on the same interface:
 *   - ts_usec: the kernel's stamp, tp_sec * 10^6 + tp_nsec / 1000;
 *   - caplen: the bytes captured (tp_snaplen, at most the snapshot length),
 *     wire_len: the frame's length (tp_len);
 *   - a VLAN tag the kernel took off the frame (TP_STATUS_VLAN_VALID) is
 *     put back in place after the MAC addresses, caplen and wire_len
 *     counting its 4 bytes (the ring is written there: that block is the
 *     reader's until released);
 *   - loopback: each frame once (the copy going out is dropped in the
 *     kernel by the socket's filter, as libpcap leaves it out).
 * The snapshot length is applied by the kernel (the socket filter returns
 * it), so frames take no more ring space than what is kept.
 *
 * A socket to join a PACKET_FANOUT group (gsq_afpacket_opts.fanout) is
 * opened with a filter taking nothing, and its own filter replaces it once
 * it has joined (gsq_afpacket_join_fanout): bound but not yet a member, it
 * would receive every frame, which the group's members receive too.
 *
 * The socket filter: on loopback a first rule drops the copy going out;
 * then, when the caller gives one (gsq_afpacket_opts.filter, a query set's
 * kernel filter: gsq_runtime.h, gsq_kernel_filter) and the link type is
 * Ethernet, that program, each of its nonzero returns replaced by the
 * snapshot length; else a return of the snapshot length.  A frame the
 * program drops is counted nowhere by the kernel (not in PACKET_STATISTICS):
 * gsq_afpacket_filtered estimates them from the interface's counters.
 *
 * Invariants (between calls, after a successful open):
 *   opened; fd is the socket (owned: close closes it); ring[0..n_blocks *
 *   block_size) is its receive ring, mapped read-write (owned: close
 *   unmaps it); block i starts at ring + i * block_size.
 *   Ownership of the blocks: the n_own blocks rel, rel+1, ... (mod
 *   n_blocks) are the reader's (their block_status has TP_STATUS_USER and
 *   the kernel does not touch them); every other block is the kernel's
 *   (being filled, or empty) and is not read.  The kernel fills blocks in
 *   ring order, so the next block to become the reader's is always
 *   (rel + n_own) mod n_blocks.  Among the reader's blocks only the last
 *   one can be partly read: in_block says it is, with `left` frames
 *   remaining from `next`; the others were read to their end and wait for
 *   gsq_afpacket_release.  n_own == n_blocks means the whole ring is the
 *   reader's: nothing more can be read until a release.
 *   A frame returned by gsq_afpacket_next stays valid (its bytes unchanged)
 *   until a release that does not keep its block, or close.
 *
 * Counters: blocks_read and frames_read (taken from the ring);
 * kernel_received, kernel_dropped, kernel_freezes: the socket's
 * PACKET_STATISTICS (frames that passed the filter, those dropped for
 * want of ring space, and the times the ring was full), summed over
 * every read (the kernel resets them when read); if_dropped_at_open:
 * the interface's rx_dropped count at open (-1: unknown); if_seen_at_open:
 * the frames the interface had received (and, but on loopback, sent) at
 * open (-1: unknown).  filter_insns: the instructions of the caller's
 * program attached (0: none; filter_why then says why not).
 */
#ifndef GSQ_AFPACKET_H
#define GSQ_AFPACKET_H

#ifdef __linux__

#include <stddef.h>
#include <stdint.h>

/* What the options give (pcap_source.c reads them from the run options;
 * option_table.h has their ranges). */
typedef struct gsq_afpacket_opts {
    uint32_t block_size;       /* bytes: a power of two, at least the page size */
    uint32_t blocks;           /* the ring's blocks (>= 2) */
    uint32_t block_timeout_ms; /* a block not full is handed over after this */
    uint32_t snaplen;          /* bytes of each frame kept */
    int promisc;               /* put the interface in promiscuous mode */
    /* NULL, or a classic BPF program of filter_len instructions to attach
     * over Ethernet frames (gsq_kernel_filter; borrowed for the call) */
    const struct gsq_bpf_insn *filter;
    uint32_t filter_len;
    /* the socket is to join a PACKET_FANOUT group: until it has joined
     * (gsq_afpacket_join_fanout) it takes no frame -- bound alone it would
     * receive every frame, which the group's sockets receive too */
    int fanout;
} gsq_afpacket_opts;

typedef struct gsq_afpacket {
    int opened;             /* fd and ring are held (0: closed, or zeroed) */
    int fd;                 /* the socket */
    uint8_t *ring;          /* the mapped ring, NULL when closed */
    size_t ring_size;
    uint32_t block_size, n_blocks;
    uint32_t block_timeout_ms; /* the kernel hands a block over after this */
    uint32_t snaplen;
    int linktype;           /* DLT_* of every frame */
    int arphrd;             /* the interface's hardware type */
    /* reading (see the invariants above) */
    uint32_t rel, n_own;
    int in_block;
    uint32_t left;
    uint8_t *next;          /* the next frame's tpacket3_hdr in the last owned block */
    /* counters */
    uint64_t blocks_read, frames_read, vlan_restored;
    uint64_t kernel_received, kernel_dropped, kernel_freezes;
    int64_t if_dropped_at_open;
    int64_t if_seen_at_open;
    uint32_t filter_insns;
    char filter_why[64];
    /* the filter a fanout member attaches once it has joined (borrowed:
     * a query set's program lives as long as its run) */
    const struct gsq_bpf_insn *pending_filter;
    uint32_t pending_filter_len;
    int fanout;             /* a PACKET_FANOUT group was joined */
    char ifname[64];
} gsq_afpacket;

/* One frame: caplen bytes at data, inside the ring. */
typedef struct gsq_afpacket_pkt {
    const uint8_t *data;
    uint32_t caplen;
    uint32_t wire_len;
    uint64_t ts_usec;
} gsq_afpacket_pkt;

/* Open interface ifname.  0: a is open (close it); 1: not for this reader
 * (why: the reason; a is closed: use libpcap); -1: the interface cannot be
 * captured (why: what failed, e.g. "no such interface" or
 * "PACKET_RX_RING: Cannot allocate memory (...)"; a is closed). */
int gsq_afpacket_open(gsq_afpacket *a, const char *ifname, const gsq_afpacket_opts *o,
                      char *why, size_t why_len);

/* The next frame: 1 and *p; 0 when none is ready (the kernel has not
 * handed over the next block, or every block is the reader's). */
int gsq_afpacket_next(gsq_afpacket *a, gsq_afpacket_pkt *p);
/* The error the socket holds (SO_ERROR, read and cleared), 0 when none:
 * ENETDOWN once the interface went down or away -- the kernel then hands
 * over no more frames, and poll reports POLLERR, not POLLIN. */
int gsq_afpacket_error(gsq_afpacket *a);

/* The caller no longer reads the frames taken so far, except those in the
 * block holding keep (NULL: none kept) and after it: every block read to
 * its end before that one goes back to the kernel. */
void gsq_afpacket_release(gsq_afpacket *a, const uint8_t *keep);

/* Join a PACKET_FANOUT group on the socket's interface: the kernel then
 * hands each frame to one socket of the group, chosen by a hash of its
 * flow (PACKET_FANOUT_HASH, IP fragments reassembled for the hash first:
 * PACKET_FANOUT_FLAG_DEFRAG), so a flow's frames all reach the same socket.
 * *group < 0: a new group with an id the kernel picks, unique in the
 * network namespace (PACKET_FANOUT_FLAG_UNIQUEID; 0 is an id like any),
 * written to *group for the other sockets to join.  0, or -1 with why set
 * (e.g. a kernel before 4.4). */
int gsq_afpacket_join_fanout(gsq_afpacket *a, int *group, char *why, size_t why_len);

/* Add the socket's PACKET_STATISTICS since the last call to the counters. */
void gsq_afpacket_count(gsq_afpacket *a);

/* The interface's rx_dropped count now (-1: unknown). */
int64_t gsq_afpacket_if_dropped(const gsq_afpacket *a);

/* The interface's frames seen now: rx_packets, plus tx_packets but on
 * loopback (whose outgoing copies the socket filter drops anyway); -1:
 * unknown. */
int64_t gsq_afpacket_if_seen(const gsq_afpacket *a);

/* An estimate of the frames the caller's program dropped since open: the
 * growth of gsq_afpacket_if_seen minus the frames that passed the filter
 * (kernel_received, so call gsq_afpacket_count first); 0 when no program
 * is attached, -1 when the interface's counters cannot be read.  Other
 * sockets' traffic does not enter it, but frames the interface counts
 * and never hands to packet sockets do. */
int64_t gsq_afpacket_filtered(const gsq_afpacket *a);

/* Unmap and close; safe on a closed or zeroed a, and twice. */
void gsq_afpacket_close(gsq_afpacket *a);

#endif /* __linux__ */
#endif /* GSQ_AFPACKET_H */
