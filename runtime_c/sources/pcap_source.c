/*
 * pcap_source.c -- the pcap:PATH and pcap-live:IFACE readers.  Each frame's
 * headers are decoded once into gsq_pkt_info by gsq_pkt_decode
 * (pkt_decode.c).
 *
 * Files: read through the memory-mapped reader of pcap_mmap.c (zero copy:
 * a record's data points into the mapping) when it takes the file -- a
 * regular file, classic pcap or pcapng of a decoded link type (pcap_mmap.h
 * says exactly which) -- and option pcap_reader is mmap (the default).
 * Otherwise (pcap_reader=libpcap, a pipe or FIFO, a format variant or link
 * type it leaves alone) through libpcap as before: the file is opened with
 * fopen (for a precise error message) and handed to pcap_fopen_offline.
 * Both deliver the same packets, timestamps and lengths.  A read error in
 * the middle of the file (libpcap: "truncated dump file"; the mapped
 * reader: a record or block cut short or inconsistent) ends the source;
 * what was read is processed and the report says so, with the reason (the
 * mapped reader: and the byte offset of the record or block).
 *
 * Live interfaces: on Linux, with pcap_reader=mmap (the default), read in
 * place from an AF_PACKET socket's TPACKET_V3 ring (afpacket.c: zero copy,
 * a record's data points into a block of the ring), unless that reader
 * does not take the interface ("any", a hardware type it leaves alone:
 * afpacket.h) -- then, as with pcap_reader=libpcap or on another system,
 * through pcap_open_live (100 ms timeout) in non-blocking mode.  Both take
 * options live_snaplen:NAME (default 65535) and live_promisc:NAME
 * (default 0); the ring takes live_block_size:NAME, live_blocks:NAME and
 * live_block_timeout:NAME, and live_kernel_filter:NAME (default 1: the
 * query set's kernel filter of the interface, gsq_kernel_filter, is the
 * ring's socket filter; kernel_filter_of says when).  When no packet is
 * ready the run loop polls the socket (wait_fd) for at most 100 ms, so a
 * stop signal is noticed promptly.
 *
 * The ring's blocks and the records' lifetime: a batch's records point
 * into the blocks they were read from; the run loop has processed every
 * record of a batch (run_batch, then gsq_ring_release) before it calls
 * read_batch again, so ring_read_batch first hands back to the kernel
 * every block read to its end -- except the one holding a packet held
 * back past the batch's time limit (held_ap) -- and only then reads on.
 * Records are never read after close, which unmaps the ring.
 *
 * Every record's app_usec and arrival_usec are its packet timestamp (as
 * pkt.ts_usec).  Time-aligned replay (run/loop.c): a batch stops before the
 * first packet stamped after s->limit_usec; that packet is set aside
 * ("held": libpcap's copied, the mapped one just remembered) and is the
 * first one of the next batch.  pcap_src_peek reads ahead the same way.
 * Both paths end a batch at the same packet: the mapped one counts the
 * bytes the libpcap path would have copied into the ring.
 *
 * Reader state invariants: exactly one of handle (libpcap), mapped
 * (mm open) and ringed (ap open) holds from pcap_src_open to
 * pcap_src_close -- or none, with
 * at_eof set, when a pipe's run was cancelled before its file header came
 * (pipe.cancelled); linktype is
 * pcap_datalink(handle), or the mapped file's (first interface's) link
 * type; when held is set, the next packet is held_hdr/held_data
 * (held_hdr.caplen bytes, libpcap), held_pkt (mapped) or held_ap (ringed).
 */
#define _GNU_SOURCE /* fopencookie; u_char & co. used by pcap.h */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <poll.h>
#include <time.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsq_source_ops.h"
#include "gsq_pkt_decode.h"
#include "pcap_mmap.h"
#include "afpacket.h"

/* libpcap's read timeout on a live interface: a buffer not full is handed
 * over after it */
#define GSQ_LIBPCAP_TIMEOUT_MS 100u

/* A capture read from a pipe or FIFO: libpcap reads it through a stdio
 * stream whose reads poll the descriptor (at most 100 ms at a time), so a
 * cancelled run (SIGINT/SIGTERM, gsqlc_cancel) stops even while the
 * writer is idle; the stream then ends (cancelled set), as at end of input. */
typedef struct pipe_cookie {
    gsq_run *r;
    int fd;          /* owned: closed with the stream */
    int cancelled;   /* the stream ended because the run was cancelled */
} pipe_cookie;

typedef struct pcap_reader {
    pcap_t *handle;
    pipe_cookie pipe;   /* the libpcap stream's, when reading a pipe or FIFO */
    int live;           /* gsq_pcap_live_ops */
    int mapped;         /* read through mm (pcap_mmap.h) */
    gsq_pcap_mmap mm;   /* owned while mapped */
    int ringed;         /* live, read through ap (afpacket.h) */
#ifdef __linux__
    gsq_afpacket ap;    /* owned while ringed */
    gsq_afpacket_pkt held_ap; /* ringed: points into a block of ap */
    int64_t if_dropped; /* the interface's rx_dropped growth (-1: unknown) */
    int64_t kf_filtered; /* gsq_afpacket_filtered at the end */
    /* a fanout member (live_fanout:NAME) that is not its group's first:
     * the interface's own counters (rx_dropped growth, the filtered
     * estimate) are the first member's to report, once for the group */
    int fanout_later;
    char kf_why[96];    /* why no kernel filter is attached ("": one is) */
#endif
    uint64_t drain_until_ms; /* live, cancelled: read until then (CLOCK_MONOTONIC ms) */
    int linktype;
    int decoded;        /* link type is one the decoder understands */
    int classic;        /* libpcap reads a classic pcap file (gsq_pkt_ts_usec) */
    uint64_t past_time_end; /* packets whose `time` holds at UINT32_MAX */
    int kernel_counted;     /* live: kernel holds pcap_stats' counts */
    struct pcap_stat kernel;
    char errmsg[PCAP_ERRBUF_SIZE + 256]; /* why the file ended early */
    char fallback[256]; /* why the mapped reader did not take the file, or the
                         * ring the interface */
    /* a packet read ahead (pcap_src_peek, or past the batch's time limit):
     * it is the next record of this source */
    int held;
    struct pcap_pkthdr held_hdr;
    uint8_t *held_data; /* owned, held_cap bytes */
    size_t held_cap;
    gsq_pcap_mmap_pkt held_pkt; /* mapped: points into mm */
    /* where the records of a capture file lie, for pcap_src_progress: from
     * rec_start (after the file header, or a pcap_range's start) to
     * rec_end; rec_end 0 when unknown (a pipe, a live interface).  file:
     * libpcap's stream of a regular file (its position), else NULL */
    uint64_t rec_start, rec_end;
    FILE *file;
} pcap_reader;

/* ---- reading ---------------------------------------------------------- */

static ssize_t pipe_read(void *cookie, char *buf, size_t size)
{
    pipe_cookie *c = cookie;
    for (;;) {
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN, .revents = 0};
        int rc;
        if (gsq_run_cancelled(c->r)) {
            c->cancelled = 1;
            return 0;
        }
        rc = poll(&pfd, 1, 100);
        if (rc < 0 && errno != EINTR)
            return -1;
        if (rc > 0) {
            ssize_t n = read(c->fd, buf, size);
            if (n >= 0 || (errno != EINTR && errno != EAGAIN))
                return n;
        }
    }
}

static int pipe_close(void *cookie)
{
    pipe_cookie *c = cookie;
    return close(c->fd);
}

/* The file at path as a stdio stream for libpcap: a regular file as it is;
 * a pipe or FIFO (the FIFO opened without waiting for a writer) through
 * pipe_read.  NULL with errno set. */
static FILE *open_capture_stream(gsq_run *r, pcap_reader *pr, const char *path)
{
    static const cookie_io_functions_t pipe_io = {.read = pipe_read, .close = pipe_close};
    struct stat st;
    FILE *f;
    int fd;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
        return fopen(path, "rb");
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    pr->pipe = (pipe_cookie){.r = r, .fd = fd, .cancelled = 0};
    f = fopencookie(&pr->pipe, "rb", pipe_io);
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

#ifdef __linux__
/* The kernel filter for live source s (gsq_kernel_filter), or NULL with
 * why[]: the query set's filter of the interface every LFTA bound to s
 * reads, unless option live_kernel_filter:NAME is 0 or the snapshot
 * length is below what the program needs.  (An LFTA of the interface not
 * bound here only widens the filter, which keeps what it wants too.) */
static const gsq_kernel_filter *kernel_filter_of(const gsq_run *r, const gsq_source *s,
                                                 const gsq_iface_time *t, uint32_t snaplen,
                                                 char *why, size_t why_len)
{
    const char *iface;
    uint32_t j;
    if (t && t->live_kernel_filter_off) {
        snprintf(why, why_len, "option live_kernel_filter:%s=0", s->iface);
        return NULL;
    }
    if (s->n_lftas == 0) {
        snprintf(why, why_len, "no query reads the interface");
        return NULL;
    }
    iface = s->lftas[0]->lfta->iface;
    for (j = 1; j < s->n_lftas; j++)
        if (strcmp(s->lftas[j]->lfta->iface, iface) != 0) {
            snprintf(why, why_len, "its queries read several interfaces");
            return NULL;
        }
    for (j = 0; j < r->qs->n_kernel_filters; j++) {
        const gsq_kernel_filter *kf = &r->qs->kernel_filters[j];
        if (strcmp(kf->iface, iface) != 0)
            continue;
        if (snaplen < kf->min_snaplen) {
            snprintf(why, why_len, "snapshot length %u below %u", snaplen, kf->min_snaplen);
            return NULL;
        }
        return kf;
    }
    snprintf(why, why_len, "its queries keep every frame (gsqlc explain says why)");
    return NULL;
}
#endif


#ifdef __linux__
/* The fanout group of the set s is a member of: the group an earlier
 * member joined (-1: s is the first, and makes it). */
static int fanout_group_of_set(const gsq_run *r, const gsq_source *s)
{
    uint32_t i, j, k;
    for (i = 0; i < r->n_members; i++) {
        if (strcmp(r->members[i].member, s->iface) != 0)
            continue;
        for (j = 0; j < r->n_members; j++)
            if (strcmp(r->members[j].set, r->members[i].set) == 0)
                for (k = 0; k < r->n_sources; k++)
                    if (&r->sources[k] != s && r->sources[k].fanout &&
                        strcmp(r->sources[k].iface, r->members[j].member) == 0)
                        return r->sources[k].fanout_group;
    }
    return -1;
}

/* s is one of n sockets of a set sharing interface s->path by flow
 * (live_fanout:NAME, PACKET_FANOUT): join its set's group (the first
 * member makes one). */
static int join_fanout(gsq_run *r, gsq_source *s, pcap_reader *pr, uint32_t n)
{
    char why[128];
    int group = fanout_group_of_set(r, s);
    pr->fanout_later = group >= 0;
    if (gsq_afpacket_join_fanout(&pr->ap, &group, why, sizeof why) != 0) {
        gsq_run_fail(r, "pcap-live:%s: cannot share the interface's frames between %u "
                        "sockets: %s", s->path, (unsigned)n, why);
        return -1;
    }
    s->fanout = n;
    s->fanout_group = (uint16_t)group;
    return 0;
}
#endif

static int pcap_src_open(gsq_run *r, gsq_source *s)
{
    pcap_reader *pr = calloc(1, sizeof *pr);
    char errbuf[PCAP_ERRBUF_SIZE];
    const gsq_iface_time *range;
    if (!pr) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    s->impl = pr;
    errbuf[0] = '\0';
    pr->live = s->ops == &gsq_pcap_live_ops;
    range = gsq_iface_settings(r, s->iface);
    if (range && !range->has_range)
        range = NULL;
    if (range && pr->live) {
        gsq_run_fail(r, "pcap_range:%s: interface %s is live, not a capture file", s->iface,
                     s->path);
        return -1;
    }
    if (pr->live) {
        const gsq_iface_time *t = gsq_iface_settings(r, s->iface);
        uint32_t snaplen = t && t->live_snaplen ? t->live_snaplen : GSQ_LIVE_SNAPLEN;
        uint32_t fanout = t && t->live_fanout >= 2 ? t->live_fanout : 0;
        int promisc = t && t->live_promisc;
#ifdef __linux__
        if (r->pcap_reader == GSQ_PCAP_READER_MMAP) {
            gsq_afpacket_opts o;
            const gsq_kernel_filter *kf;
            char why[sizeof pr->fallback];
            int rc;
            o.block_size = t && t->live_block_size ? t->live_block_size : GSQ_LIVE_BLOCK_SIZE;
            o.blocks = t && t->live_blocks ? t->live_blocks : GSQ_LIVE_BLOCKS;
            o.block_timeout_ms =
                t && t->live_block_timeout ? t->live_block_timeout : GSQ_LIVE_BLOCK_TIMEOUT_MS;
            o.snaplen = snaplen;
            o.promisc = promisc;
            kf = kernel_filter_of(r, s, t, snaplen, pr->kf_why, sizeof pr->kf_why);
            o.filter = kf ? kf->insns : NULL;
            o.filter_len = kf ? kf->n_insns : 0;
            o.fanout = fanout != 0;
            rc = gsq_afpacket_open(&pr->ap, s->path, &o, why, sizeof why);
            if (rc < 0) {
                gsq_run_fail(r, "pcap-live:%s: %s", s->path, why);
                return -1;
            }
            if (rc == 0 && fanout && join_fanout(r, s, pr, fanout) != 0)
                return -1;
            if (rc == 0) {
                s->drains_on_cancel = 1;
                if (kf && !pr->ap.filter_insns)
                    snprintf(pr->kf_why, sizeof pr->kf_why, "%s", pr->ap.filter_why);
                pr->ringed = 1;
                pr->linktype = pr->ap.linktype;
                pr->decoded = gsq_pkt_linktype_known(pr->linktype);
                return 0;
            }
            snprintf(pr->fallback, sizeof pr->fallback, "%s", why);
        } else {
            snprintf(pr->fallback, sizeof pr->fallback, "option pcap_reader=libpcap");
        }
#else
        snprintf(pr->fallback, sizeof pr->fallback, "no AF_PACKET on this system");
#endif
        if (fanout) {
            gsq_run_fail(r, "pcap-live:%s: fanout needs gsqlc's AF_PACKET reader, and this "
                            "interface is read through libpcap (%s)",
                         s->path, pr->fallback);
            return -1;
        }
        pr->handle = pcap_open_live(s->path, (int)snaplen, promisc, (int)GSQ_LIBPCAP_TIMEOUT_MS,
                                    errbuf);
        if (!pr->handle) {
            gsq_run_fail(r, "cannot open interface %s: %s", s->path, errbuf);
            return -1;
        }
        if (pcap_setnonblock(pr->handle, 1, errbuf) != 0) {
            gsq_run_fail(r, "cannot open interface %s: %s", s->path, errbuf);
            return -1;
        }
        s->drains_on_cancel = 1;
    } else {
        FILE *f;
        if (r->pcap_reader == GSQ_PCAP_READER_MMAP &&
            gsq_pcap_mmap_open(&pr->mm, s->path, pr->fallback, sizeof pr->fallback) == 0) {
            pr->mapped = 1;
            pr->linktype = pr->mm.linktype;
            pr->decoded = 1;
            if (range && gsq_pcap_mmap_restrict(&pr->mm, (size_t)range->range_start,
                                                (size_t)range->range_end, errbuf,
                                                sizeof errbuf) != 0) {
                gsq_run_fail(r, "pcap_range:%s: %s: %s", s->iface, s->path, errbuf);
                return -1;
            }
            pr->rec_start = pr->mm.off;
            pr->rec_end = pr->mm.size;
            return 0;
        }
        if (r->pcap_reader != GSQ_PCAP_READER_MMAP)
            snprintf(pr->fallback, sizeof pr->fallback, "option pcap_reader=libpcap");
        if (range) {
            gsq_run_fail(r, "pcap_range:%s: %s is not read through the memory-mapped reader (%s)",
                         s->iface, s->path, pr->fallback);
            return -1;
        }
        f = open_capture_stream(r, pr, s->path);
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
            if (pr->pipe.cancelled) { /* stopped before a file header came */
                s->at_eof = 1;
                return 0;
            }
            gsq_run_fail(r, "cannot open %s: %s", s->path, errbuf);
            return -1;
        }
    }
    pr->linktype = pcap_datalink(pr->handle);
    pr->decoded = gsq_pkt_linktype_known(pr->linktype);
    pr->classic = !pr->live && pcap_major_version(pr->handle) == 2;
    if (!pr->live) { /* a regular file (a pipe's stream has no descriptor) */
        struct stat st;
        long at;
        FILE *f = pcap_file(pr->handle);
        if (f && fileno(f) >= 0 && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
            (at = ftell(f)) >= 0 && st.st_size > at) {
            pr->file = f;
            pr->rec_start = (uint64_t)at;
            pr->rec_end = (uint64_t)st.st_size;
        }
    }
    return 0;
}

/* A live capture's counts from the kernel (pcap_stats), read once at the
 * end: packets the kernel dropped for want of buffer space (ps_drop) and
 * the interface dropped (ps_ifdrop) never reached the run. */
static void live_kernel_counts(pcap_reader *pr)
{
    struct pcap_stat ps;
#ifdef __linux__
    if (pr->ringed && !pr->kernel_counted) {
        /* the socket's counts (summed: each read resets them), and the
         * interface's rx_dropped growth since open, as libpcap's ps_ifdrop */
        int64_t now = gsq_afpacket_if_dropped(&pr->ap);
        gsq_afpacket_count(&pr->ap);
        pr->kernel_counted = 1;
        pr->kernel.ps_recv = (u_int)pr->ap.kernel_received;
        pr->kernel.ps_drop = (u_int)pr->ap.kernel_dropped;
        pr->if_dropped = now >= 0 && pr->ap.if_dropped_at_open >= 0
                             ? (now > pr->ap.if_dropped_at_open ? now - pr->ap.if_dropped_at_open : 0)
                             : -1;
        if (pr->fanout_later)
            pr->if_dropped = 0;
        pr->kernel.ps_ifdrop = pr->if_dropped > 0 ? (u_int)pr->if_dropped : 0;
        /* a fanout member reads a share of the frames: what the interface
         * received less what this socket did is no estimate of anything */
        pr->kf_filtered = pr->ap.fanout ? -1 : gsq_afpacket_filtered(&pr->ap);
        return;
    }
#endif
    if (!pr->live || !pr->handle || pr->kernel_counted)
        return;
    memset(&ps, 0, sizeof ps);
    if (pcap_stats(pr->handle, &ps) == 0) {
        pr->kernel_counted = 1;
        pr->kernel = ps;
    }
}

static void pcap_src_close(gsq_source *s)
{
    pcap_reader *pr = s->impl;
    if (!pr)
        return;
    if (pr->handle)
        pcap_close(pr->handle);
    gsq_pcap_mmap_close(&pr->mm);
#ifdef __linux__
    gsq_afpacket_close(&pr->ap);
#endif
    free(pr->held_data);
    free(pr);
    s->impl = NULL;
}

/* A live handle's descriptor for the run loop's idle poll (-1: none, or
 * not a live interface). */
static int pcap_src_wait_fd(const gsq_source *s)
{
    const pcap_reader *pr = s->impl;
#ifdef __linux__
    if (pr && pr->ringed)
        return pr->ap.fd;
#endif
    if (!pr || !pr->live || !pr->handle)
        return -1;
    return pcap_get_selectable_fd(pr->handle);
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

static uint64_t ts_of(const pcap_reader *pr, const struct pcap_pkthdr *h)
{
    return gsq_pkt_ts_usec((int64_t)h->ts.tv_sec, (int64_t)h->ts.tv_usec, pr->classic);
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
    if (pr->live) {
        /* e.g. "The interface disappeared": what was captured is processed
         * and flushed, then the run fails (run.c) */
        char msg[PCAP_ERRBUF_SIZE + 256];
        snprintf(msg, sizeof msg, "error reading interface %s after %llu packets: %s", s->path,
                 (unsigned long long)s->records_read, pcap_geterr(pr->handle));
        s->failure = gsq_strdup(msg);
        s->at_eof = 1;
        if (!s->failure) {
            gsq_run_fail(r, "out of memory");
            return -1;
        }
        return -2;
    }
    if (!pr->pipe.cancelled) { /* else the run was stopped inside a record */
        s->truncated = 1;
        snprintf(pr->errmsg, sizeof pr->errmsg, "libpcap: %s", pcap_geterr(pr->handle));
    }
    s->at_eof = 1;
    return -2;
}

/* ---- the mapped file -------------------------------------------------- */

/* The next packet of the mapped file: 1, or 0 at its end (s->at_eof set;
 * an early end is s->truncated, with the reason in errmsg). */
static inline int mm_next(gsq_source *s, pcap_reader *pr, gsq_pcap_mmap_pkt *pk)
{
    int rc = gsq_pcap_mmap_next(&pr->mm, pk);
    if (rc == 1)
        return 1;
    if (rc < 0) {
        s->truncated = 1;
        snprintf(pr->errmsg, sizeof pr->errmsg, "at byte %zu: %s", pr->mm.err_off, pr->mm.err);
    }
    s->at_eof = 1;
    return 0;
}

#define ALIGN8(x) (((x) + 7u) & ~(size_t)7u)

/* pcap_src_read_batch of a mapped file: records point into the mapping
 * (the previous batch's are released, so what lies before the next packet
 * may leave the resident set).  The batch ends where the libpcap path's
 * would (vused: the ring bytes it would have taken), so batches, and with
 * them heartbeats, do not depend on the reader.  Every record sets kind,
 * len, data, pkt, app_usec and arrival_usec (gsq_ring_commit_ref: the
 * CSV members and ts_unreadable stay zero). */
static int mm_read_batch(gsq_source *s, pcap_reader *pr)
{
    gsq_ring *ring = &s->ring;
    size_t vused = 0;
    size_t room = ring->cap > GSQ_PCAP_MAX_CAPLEN + 8 ? ring->cap - (GSQ_PCAP_MAX_CAPLEN + 8) : 0;
    gsq_pcap_mmap_release(&pr->mm, pr->held ? pr->held_pkt.data : pr->mm.map + pr->mm.off);
    while (!gsq_ring_batch_full(ring)) {
        gsq_pcap_mmap_pkt pk;
        gsq_record *rec;
        if (ring->n_recs > 0 && vused > room) /* ring->cap - vused < max caplen + 8 */
            return 0;
        if (pr->held)
            pk = pr->held_pkt;
        else if (!mm_next(s, pr, &pk))
            return 0;
        if (pk.ts_usec > s->limit_usec) { /* the next round's */
            pr->held_pkt = pk;
            pr->held = 1;
            s->held_back++;
            return 0;
        }
        pr->held = 0;
        rec = gsq_ring_commit_ref(ring);
        rec->kind = GSQ_SRC_PCAP;
        rec->len = pk.caplen;
        rec->data = pk.data;
        rec->app_usec = rec->arrival_usec = pk.ts_usec;
        pr->past_time_end += pk.ts_usec >= GSQ_PKT_TIME_END_USEC;
        gsq_pkt_decode_fast(&rec->pkt, pk.ts_usec, pk.wire_len, pk.linktype, pk.data, pk.caplen);
        vused += ALIGN8(pk.caplen ? pk.caplen : 1u);
        s->records_read++;
        s->bytes_read += pk.caplen;
    }
    return 0;
}

/* ---- the AF_PACKET ring (Linux) ---------------------------------------- */

/* Cancelled: the frames that reached the capture before are read, the
 * last of them once the kernel has handed over the block it was filling,
 * which it does within timeout_ms (the ring's block timeout, libpcap's
 * read timeout).  The milliseconds left of that (the first call sets the
 * deadline: timeout_ms and 1 ms from now); 0 once it has passed -- then
 * the source ends, frames still arriving or not. */
static uint64_t drain_left_ms(pcap_reader *pr, uint32_t timeout_ms)
{
    struct timespec ts;
    uint64_t now;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    if (!pr->drain_until_ms)
        pr->drain_until_ms = now + timeout_ms + 1u;
    return now < pr->drain_until_ms ? pr->drain_until_ms - now : 0;
}

/* Cancelled, no frame ready: wait on the capture's descriptor (fd < 0:
 * 1 ms) for the last block, at most until the deadline. */
static int drain_wait(pcap_reader *pr, int fd, uint32_t timeout_ms)
{
    struct pollfd p;
    uint64_t left = drain_left_ms(pr, timeout_ms);
    p.fd = fd;
    p.events = POLLIN;
    p.revents = 0;
    if (left)
        (void)poll(fd >= 0 ? &p : NULL, fd >= 0 ? 1 : 0, fd >= 0 ? (int)left : 1);
    return 0;
}

#ifdef __linux__
/* pcap_src_read_batch of a live interface read through its ring: records
 * point into the ring's blocks.  The previous batch's records have all
 * been processed (see the header comment): its blocks go back to the
 * kernel first.  Every record sets kind, len, data, pkt, app_usec and
 * arrival_usec (gsq_ring_commit_ref). */
/* Nothing ready in the ring: 0, unless the interface went down or away
 * (the socket's error) -- then, as the libpcap path says it, what was read is
 * processed and flushed and the run fails (s->failure, run.c); -1 out of
 * memory. */
static int ring_idle(gsq_run *r, gsq_source *s, pcap_reader *pr)
{
    char msg[512];
    int err = gsq_afpacket_error(&pr->ap);
    if (!err)
        return 0;
    snprintf(msg, sizeof msg, "error reading interface %s after %llu packets: %s", s->path,
             (unsigned long long)s->records_read, strerror(err));
    s->failure = gsq_strdup(msg);
    s->at_eof = 1;
    if (!s->failure) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    return 0;
}

static int ring_read_batch(gsq_run *r, gsq_source *s, pcap_reader *pr)
{
    gsq_ring *ring = &s->ring;
    gsq_afpacket_release(&pr->ap, pr->held ? pr->held_ap.data : NULL);
    if (gsq_run_cancelled(r) &&
        (!drain_left_ms(pr, pr->ap.block_timeout_ms) || gsq_afpacket_error(&pr->ap))) {
        s->at_eof = 1;
        return 0;
    }
    while (!gsq_ring_batch_full(ring)) {
        gsq_afpacket_pkt pk;
        gsq_record *rec;
        if (pr->held)
            pk = pr->held_ap;
        else if (!gsq_afpacket_next(&pr->ap, &pk))
            /* nothing ready: the run loop polls the socket, or (cancelled)
             * the last block is awaited */
            return gsq_run_cancelled(r)
                       ? (ring->n_recs ? 0 : drain_wait(pr, pr->ap.fd, pr->ap.block_timeout_ms))
                       : ring_idle(r, s, pr);
        if (pk.ts_usec > s->limit_usec) { /* the next round's */
            pr->held_ap = pk;
            pr->held = 1;
            s->held_back++;
            return 0;
        }
        pr->held = 0;
        rec = gsq_ring_commit_ref(ring);
        rec->kind = GSQ_SRC_PCAP;
        rec->len = pk.caplen;
        rec->data = pk.data;
        rec->app_usec = rec->arrival_usec = pk.ts_usec;
        pr->past_time_end += pk.ts_usec >= GSQ_PKT_TIME_END_USEC;
        gsq_pkt_decode_fast(&rec->pkt, pk.ts_usec, pk.wire_len,
                            pr->decoded ? pr->linktype : -1, pk.data, pk.caplen);
        s->records_read++;
        s->bytes_read += pk.caplen;
    }
    return 0;
}
#endif

/* ---- both -------------------------------------------------------------- */

static int pcap_src_peek(gsq_run *r, gsq_source *s, uint64_t *ts_usec)
{
    pcap_reader *pr = s->impl;
    struct pcap_pkthdr *h;
    const u_char *data;
    int rc;
    if (pr->mapped) {
        if (!pr->held) {
            if (s->at_eof || !mm_next(s, pr, &pr->held_pkt))
                return 0;
            pr->held = 1;
        }
        *ts_usec = pr->held_pkt.ts_usec;
        return 1;
    }
    if (!pr->held) {
        if (s->at_eof || !pr->handle)
            return 0;
        rc = next_packet(r, s, pr, &h, &data);
        if (rc == -1)
            return -1;
        if (rc != 1)
            return 0; /* the end (a live source is never peeked) */
        if (hold(r, s, pr, h, data) != 0)
            return -1;
    }
    *ts_usec = ts_of(pr, &pr->held_hdr);
    return 1;
}

static int pcap_src_read_batch(gsq_run *r, gsq_source *s)
{
    pcap_reader *pr = s->impl;
    if (pr->mapped)
        return mm_read_batch(s, pr);
#ifdef __linux__
    if (pr->ringed)
        return ring_read_batch(r, s, pr);
#endif
    if (!pr->handle) { /* a pipe's run stopped before its file header */
        s->at_eof = 1;
        return 0;
    }
    while (!gsq_ring_batch_full(&s->ring)) {
        struct pcap_pkthdr *h;
        const u_char *data;
        uint8_t *mem;
        gsq_record *rec;
        uint64_t ts;
        int rc;
        /* a packet, once taken from libpcap, must fit: stop the batch
         * while the largest possible capture might not */
        if (s->ring.n_recs > 0 && s->ring.cap - s->ring.used < GSQ_PCAP_MAX_CAPLEN + 8)
            return 0;
        if (pr->live && gsq_run_cancelled(r) && !drain_left_ms(pr, GSQ_LIBPCAP_TIMEOUT_MS)) {
            s->at_eof = 1;
            return 0;
        }
        if (pr->held) {
            h = &pr->held_hdr;
            data = pr->held_data;
        } else {
            rc = next_packet(r, s, pr, &h, &data);
            if (rc == 0) /* live: nothing ready (the run loop waits; cancelled: we do) */
                return pr->live && gsq_run_cancelled(r) && !s->ring.n_recs
                           ? drain_wait(pr, pcap_get_selectable_fd(pr->handle),
                                        GSQ_LIBPCAP_TIMEOUT_MS)
                           : 0;
            if (rc == -2)
                return 0;
            if (rc < 0)
                return -1;
        }
        ts = ts_of(pr, h);
        if (ts > s->limit_usec) { /* the next round's */
            if (!pr->held && hold(r, s, pr, h, data) != 0)
                return -1;
            s->held_back++;
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
        rec->pkt.ts_usec = rec->app_usec = rec->arrival_usec = ts;
        pr->past_time_end += ts >= GSQ_PKT_TIME_END_USEC;
        rec->pkt.wire_len = h->len;
        gsq_pkt_decode(&rec->pkt, pr->decoded ? pr->linktype : -1, mem, h->caplen);
        s->records_read++;
        s->bytes_read += h->caplen;
    }
    return 0;
}

static void pcap_src_report(const gsq_source *s, gsq_buf *out)
{
    pcap_reader *pr = s->impl;
    if (!pr)
        return;
    live_kernel_counts(pr);
#ifdef __linux__
    if (pr->ringed && pr->kernel_counted && (pr->kernel.ps_drop || pr->kernel.ps_ifdrop))
        gsq_buf_printf(out,
                       "gsqlc: warning: %s: %u packets dropped by the kernel (capture ring "
                       "full %llu times: a larger ring, live_blocks or live_block_size, holds "
                       "longer bursts) and %u by the interface; %llu were read\n",
                       s->path, pr->kernel.ps_drop, (unsigned long long)pr->ap.kernel_freezes,
                       pr->kernel.ps_ifdrop, (unsigned long long)s->records_read);
    else
#endif
    if (pr->kernel_counted && (pr->kernel.ps_drop || pr->kernel.ps_ifdrop))
        gsq_buf_printf(out,
                       "gsqlc: warning: %s: %u packets dropped by the kernel (capture buffer "
                       "full) and %u by the interface; %llu were read\n",
                       s->path, pr->kernel.ps_drop, pr->kernel.ps_ifdrop,
                       (unsigned long long)s->records_read);
    if (s->truncated)
        gsq_buf_printf(out,
                       "gsqlc: %s: truncated capture after %llu packets (%s); what was read "
                       "was processed\n",
                       s->path, (unsigned long long)s->records_read, pr->errmsg);
    if (!pr->decoded && (pr->handle || pr->mapped || pr->ringed)) /* opened: link type known */
        gsq_buf_printf(out,
                       "gsqlc: warning: %s: link type %d is not decoded; only time, timestamp, "
                       "caplen and wire_len are available\n",
                       s->path, pr->linktype);
    if (pr->mapped && pr->mm.undecoded)
        gsq_buf_printf(out,
                       "gsqlc: warning: %s: %llu packets of pcapng interfaces of a link type "
                       "not decoded (%u first); only time, timestamp, caplen and wire_len are "
                       "available for them\n",
                       s->path, (unsigned long long)pr->mm.undecoded,
                       (unsigned)pr->mm.undecoded_linktype);
    if (pr->past_time_end)
        gsq_buf_printf(out,
                       "gsqlc: warning: %s: %llu packets stamped from 2106-02-07 06:28:16 UTC "
                       "on, past the 32-bit `time` (seconds): their time is 4294967295; "
                       "timestamp holds their exact time\n",
                       s->path, (unsigned long long)pr->past_time_end);
    if (pr->mapped && pr->mm.cut_to_snaplen)
        gsq_buf_printf(out,
                       "gsqlc: warning: %s: %llu packets longer than the snapshot length %u "
                       "were cut to it (as libpcap cuts them)\n",
                       s->path, (unsigned long long)pr->mm.cut_to_snaplen,
                       (unsigned)pr->mm.snaplen);
}

/* "pcap_reader" (mmap or libpcap; a live interface: afpacket or libpcap),
 * "pcap_fallback" (why a file was not mapped or an interface not read
 * through its ring, null when it was), "read_error" (what ended
 * the file early), "cut_to_snaplen" and "undecoded_packets" (mapped),
 * "past_time_end" (packets whose `time` holds at UINT32_MAX); live:
 * "kernel_dropped", "interface_dropped" (pcap_stats at the end: what never
 * reached the run; its ps_recv is left out, as it means different things
 * on different systems.  On Linux loopback the kernel sees each packet
 * twice, going out and coming in, and counts both copies it drops: there
 * kernel_dropped is twice the packets lost, measured in bench/results_soak;
 * the AF_PACKET reader's socket filter drops the outgoing copy in the
 * kernel, so its kernel_dropped counts each packet lost once).  The ring
 * (afpacket): "interface_dropped" is the growth of the interface's
 * rx_dropped count over the run, "kernel_received" the frames that reached
 * the socket (read or dropped), and "ring" its size and counts: blocks and
 * frames read, "frozen" (times the kernel found every block still the
 * run's), "vlan_restored" (frames whose VLAN tag was put back);
 * "kernel_filter": the query set's kernel filter attached as the socket
 * filter -- "instructions" (of the program), "filtered" (an estimate of
 * the frames it dropped in the kernel: gsq_afpacket_filtered, -1 when the
 * interface's counters cannot be read) -- or "instructions" 0 and
 * "why_not". */
static void pcap_src_stats(const gsq_source *s, gsq_buf *out)
{
    pcap_reader *pr = s->impl;
    if (!pr)
        return;
    live_kernel_counts(pr);
    if (pr->live)
        gsq_buf_printf(out, ",\"kernel_dropped\":%u,\"interface_dropped\":%u",
                       pr->kernel.ps_drop, pr->kernel.ps_ifdrop);
#ifdef __linux__
    if (pr->ringed)
        gsq_buf_printf(out,
                       ",\"kernel_received\":%llu,\"ring\":{\"block_size\":%u,\"blocks\":%u,"
                       "\"blocks_read\":%llu,\"frames_read\":%llu,\"frozen\":%llu,"
                       "\"vlan_restored\":%llu}",
                       (unsigned long long)pr->ap.kernel_received, pr->ap.block_size,
                       pr->ap.n_blocks, (unsigned long long)pr->ap.blocks_read,
                       (unsigned long long)pr->ap.frames_read,
                       (unsigned long long)pr->ap.kernel_freezes,
                       (unsigned long long)pr->ap.vlan_restored);
    if (s->fanout)
        gsq_buf_printf(out, ",\"fanout\":{\"members\":%u,\"group\":%u,\"thread\":\"%s\"}",
                       (unsigned)s->fanout, (unsigned)s->fanout_group,
                       s->threaded ? "capture worker" : "run loop");
    if (pr->ringed && pr->ap.filter_insns)
        gsq_buf_printf(out, ",\"kernel_filter\":{\"instructions\":%u,\"filtered\":%lld}",
                       pr->ap.filter_insns, (long long)pr->kf_filtered);
    else if (pr->ringed) {
        gsq_buf_adds(out, ",\"kernel_filter\":{\"instructions\":0,\"why_not\":");
        gsq_buf_json_str(out, pr->kf_why, strlen(pr->kf_why));
        gsq_buf_adds(out, "}");
    }
#endif
    gsq_buf_printf(out, ",\"pcap_reader\":\"%s\"",
                   pr->mapped ? "mmap" : pr->ringed ? "afpacket" : "libpcap");
    gsq_buf_adds(out, ",\"pcap_fallback\":");
    if (!pr->mapped && !pr->ringed && (pr->handle || !pr->live))
        gsq_buf_json_str(out, pr->fallback, strlen(pr->fallback));
    else
        gsq_buf_adds(out, "null");
    gsq_buf_adds(out, ",\"read_error\":");
    if (s->truncated)
        gsq_buf_json_str(out, pr->errmsg, strlen(pr->errmsg));
    else
        gsq_buf_adds(out, "null");
    gsq_buf_printf(out,
                   ",\"cut_to_snaplen\":%llu,\"undecoded_packets\":%llu,"
                   "\"past_time_end\":%llu",
                   (unsigned long long)pr->mm.cut_to_snaplen,
                   (unsigned long long)pr->mm.undecoded,
                   (unsigned long long)pr->past_time_end);
}

/* A capture file's records consumed and all there are, in bytes (records
 * with their headers); a pipe's or a live interface's bytes_read and 0. */
static void pcap_src_progress(const gsq_source *s, uint64_t *pos, uint64_t *total)
{
    const pcap_reader *pr = s->impl;
    uint64_t at;
    if (!pr->rec_end)
        return;
    if (pr->mapped) {
        at = pr->mm.off;
    } else {
        long t = ftell(pr->file);
        at = t >= 0 ? (uint64_t)t : pr->rec_start;
    }
    *pos = at > pr->rec_start ? at - pr->rec_start : 0;
    *total = pr->rec_end - pr->rec_start;
}

static int pcap_live_streaming(const gsq_source *s)
{
    (void)s;
    return 1;
}

const gsq_source_ops gsq_pcap_ops = {
    .name = "pcap",
    .scheme = "pcap:",
    .records_key = "packets_read",
    .lfta_kind = GSQ_SRC_PCAP,
    .timestamps = 1,
    .check_lfta = gsq_source_check_lfta,
    .open = pcap_src_open,
    .peek = pcap_src_peek,
    .read_batch = pcap_src_read_batch,
    .close = pcap_src_close,
    .report = pcap_src_report,
    .stats = pcap_src_stats,
    .progress = pcap_src_progress,
};

/* The same reader on a live interface: never peeked (no time-aligned
 * replay), and read as packets arrive. */
const gsq_source_ops gsq_pcap_live_ops = {
    .name = "pcap-live",
    .scheme = "pcap-live:",
    .records_key = "packets_read",
    .lfta_kind = GSQ_SRC_PCAP,
    .timestamps = 1,
    .check_lfta = gsq_source_check_lfta,
    .open = pcap_src_open,
    .streaming = pcap_live_streaming,
    .read_batch = pcap_src_read_batch,
    .wait_fd = pcap_src_wait_fd,
    .close = pcap_src_close,
    .report = pcap_src_report,
    .stats = pcap_src_stats,
};

GSQ_EXPORT int gsqlc_pcap_cuts(const char *path, uint32_t parts, uint64_t *cuts, char *why,
                               size_t why_len)
{
    gsq_pcap_mmap mm;
    int n;
    if (!path || !cuts || parts == 0) {
        snprintf(why, why_len, "no file or no parts");
        return 0;
    }
    if (gsq_pcap_mmap_open(&mm, path, why, why_len) != 0)
        return 0;
    n = gsq_pcap_mmap_cuts(&mm, parts, cuts, why, why_len);
    gsq_pcap_mmap_close(&mm);
    return n;
}
