/*
 * pcap_mmap.h -- a zero-copy reader of pcap and pcapng capture FILES
 * (pcap_mmap.c): the file is memory-mapped read-only and every packet it
 * delivers points into the mapping; no copy, no library call per packet.
 * pcap_source.c reads `pcap:PATH` through it and keeps libpcap for live
 * interfaces and for whatever this reader does not take (below).
 *
 * What it takes (anything else: gsq_pcap_mmap_open returns 1 with the
 * reason, and the caller opens the file through libpcap exactly as
 * before, so libpcap's behaviour and messages are unchanged there):
 *   - a regular, non-empty file that can be mapped (not a pipe, FIFO or
 *     terminal);
 *   - classic pcap version 2.4, either byte order, microsecond
 *     (0xa1b2c3d4) or nanosecond (0xa1b23c4d) magic;
 *   - pcapng version 1.0 or 1.2, either byte order, whose first Interface
 *     Description Block comes before any packet block and is well formed;
 *   - classic: the file's link type is one gsq_pkt_decode understands:
 *     Ethernet, Linux SLL / SLL2, raw IP, IPv4, IPv6, NULL, LOOP (file
 *     link types 1, 113, 276, 101, 228, 229, 0, 108); pcapng: any (the
 *     packets of an interface of another link type count as undecoded).
 *
 * What it delivers is what libpcap 1.10 delivers (struct pcap_pkthdr and
 * data, as pcap_source.c turns them into records), so results do not
 * depend on the reader:
 *   - ts_usec: libpcap's (uint64_t)tv_sec * 1000000 + (uint64_t)tv_usec
 *     (classic: the seconds unsigned 32-bit, as the format defines them and
 *     gsq_pkt_ts_usec reads libpcap's -- which takes them as signed, so a
 *     packet from 2038 on would otherwise go back to 1901 -- the fraction
 *     as libpcap takes it, nanoseconds divided by 1000 rounding towards zero;
 *     pcapng: the 64-bit count in the interface's if_tsresol units
 *     (powers of 10 and of 2) plus if_tsoffset seconds, scaled to
 *     microseconds with libpcap's integer arithmetic);
 *   - classic: a snapshot length <= 0 (as int) means 262144; a record
 *     whose caplen is above the snapshot length but not above 262144 is
 *     delivered cut to it (counted in cut_to_snaplen);
 *   - the end of the file is the end; a record or block cut short, a
 *     caplen above 262144 (classic) or above the interface's snapshot
 *     length (pcapng), an inconsistent or oversized (> 16 MiB) block
 *     length, a packet on an interface without IDB, a bad IDB option, a
 *     later section of the other byte order or another major version --
 *     where libpcap fails -- end the file: gsq_pcap_mmap_next returns -1
 *     and err/err_off say what was wrong and where.  Packets before it
 *     were delivered.
 * Beyond libpcap (which fails there): pcapng interfaces may differ in
 * link type and snapshot length; each packet carries its interface's
 * link type (-1 when the decoder does not know it: counted in undecoded).
 * Swapped files of link type SLL/SLL2 carrying CAN: libpcap byte-swaps the
 * CAN id in the frame; this reader never writes the mapping, but the
 * decoder reads nothing of CAN frames, so no field differs.
 *
 * Invariants (between calls, after a successful open):
 *   map[0..map_size) is the file as mapped at open (PROT_READ, owned: close
 *   unmaps it; or the caller's buffer, gsq_pcap_mmap_open_buffer); every
 *   read of the reader lies inside map[0..size), size <= map_size (size is
 *   less after gsq_pcap_mmap_restrict), it never writes there; hdr_end <=
 *   off <= size; off is the start of the next record (classic) or block
 *   (pcapng); every packet returned so far lies inside [hdr_end, off);
 *   released <= off is page-aligned and only pages below it were given
 *   back; once next returned 0 or -1 it returns the same again (done).
 *   pcapng: ifaces[0..n_ifaces) are the IDBs of the current section
 *   (ifaces owned, cap_ifaces entries); swapped is the byte order of
 *   every section.
 * The file is read as it was at open: what another process appends later
 * is not read (libpcap would read it), and a file truncated while it is
 * mapped can raise SIGBUS; capture files being replayed are not expected
 * to change.
 *
 * Needs only libc, POSIX mmap, <pcap/dlt.h> (the DLT_* numbers) and
 * gsq_pkt_linktype_known (pkt_decode.c).
 */
#ifndef GSQ_PCAP_MMAP_H
#define GSQ_PCAP_MMAP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GSQ_PCAP_MMAP_MAX_CAPLEN 262144u /* libpcap's maximum for these link types */

/* One pcapng interface (IDB) of the current section. */
typedef struct gsq_pcap_mmap_iface {
    int linktype;          /* DLT_* for gsq_pkt_decode, -1: not decoded */
    uint32_t file_linktype; /* as written in the IDB */
    uint32_t snaplen;      /* adjusted: 0 or above 262144 is 262144 */
    uint64_t tsresol;      /* units per second */
    uint64_t tsoffset;     /* seconds added (libpcap: unsigned arithmetic) */
    int scale;             /* how fractions become microseconds (pcap_mmap.c) */
    uint64_t scale_factor;
} gsq_pcap_mmap_iface;

typedef struct gsq_pcap_mmap {
    const uint8_t *map;    /* the mapped file (or the caller's buffer), map_size bytes */
    size_t size;           /* where reading ends: map_size, or a range's end */
    size_t map_size;
    int mapped;            /* map is ours to unmap (else the caller's buffer) */
    size_t off;            /* next record / block */
    size_t hdr_end;        /* end of the file header (classic) or first IDB */
    size_t released;       /* map[0..released) was given back (gsq_pcap_mmap_release) */
    int ng;                /* pcapng (else classic pcap) */
    int swapped;           /* written in the other byte order */
    int nsec;              /* classic: nanosecond timestamps */
    int linktype;          /* classic: DLT_*; pcapng: the first IDB's (or -1) */
    uint32_t snaplen;      /* classic: the snapshot length in effect */
    gsq_pcap_mmap_iface *ifaces;
    uint32_t n_ifaces, cap_ifaces;
    int done;              /* next returned 0 or -1 */
    int failed;            /* next returned -1 */
    /* counters */
    uint64_t cut_to_snaplen;   /* classic: caplen above the snapshot length */
    uint64_t undecoded;        /* packets of a link type not decoded */
    uint64_t blocks_skipped;   /* pcapng: blocks neither packet, IDB nor SHB */
    uint32_t undecoded_linktype; /* file link type of the first undecoded packet */
    /* what ended the file early (failed): where and what */
    size_t err_off;
    char err[200];
} gsq_pcap_mmap;

/* One packet: caplen bytes at data (inside the mapping, valid until close). */
typedef struct gsq_pcap_mmap_pkt {
    const uint8_t *data;
    uint32_t caplen;
    uint32_t wire_len;
    uint64_t ts_usec;
    int linktype;          /* for gsq_pkt_decode: DLT_*, or -1 (not decoded) */
} gsq_pcap_mmap_pkt;

/* Map and check the file at path.  0: m is open (close it);
 * 1: not for this reader (why says so, m is closed: use libpcap). */
int gsq_pcap_mmap_open(gsq_pcap_mmap *m, const char *path, char *why, size_t why_len);

/* The same over a capture already in memory, buf[0..size) (e.g. a test
 * that wants every read checked against a heap block): 0 open, 1 not
 * taken (why).  buf stays the caller's and must outlive m. */
int gsq_pcap_mmap_open_buffer(gsq_pcap_mmap *m, const uint8_t *buf, size_t size, char *why,
                              size_t why_len);

/* The next packet: 1 and *p; 0 at the end of the file; -1 when the file
 * ends early (m->err, m->err_off).  gsq_pcap_mmap_next (below) reads a
 * whole classic record within the snapshot length inline, and leaves
 * everything else (pcapng, cuts, ends, errors) to gsq_pcap_mmap_next_any. */
int gsq_pcap_mmap_next_any(gsq_pcap_mmap *m, gsq_pcap_mmap_pkt *p);

/* The caller no longer reads the file before p (a pointer into it, or
 * map + size): whole pages of it may leave the process's resident set
 * (they stay in the page cache), in steps of 8 MiB.  Only for a
 * mapped file (not a buffer); reading them again would still work. */
void gsq_pcap_mmap_release(gsq_pcap_mmap *m, const uint8_t *p);

/* ---- the inline part -------------------------------------------------- */

static inline uint32_t gsq_pcap_mmap__rd32(const gsq_pcap_mmap *m, const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    if (m->swapped)
        v = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
    return v;
}

/* A classic record's timestamp to microseconds -- what gsq_pkt_ts_usec
 * makes of libpcap's tv_sec, tv_usec for the same record: the seconds
 * unsigned; the fraction as libpcap 1.10 takes it (signed 32-bit, unsigned
 * in a swapped file; nanoseconds divided by 1000), since a fraction of a
 * second past 2^31 is no time at all. */
static inline uint64_t gsq_pcap_mmap__classic_usec(const gsq_pcap_mmap *m, uint32_t sec,
                                                   uint32_t frac)
{
    int64_t f = frac; /* libpcap's: signed, but in a swapped file */
    if (!m->swapped && frac >= 0x80000000u)
        f = (int64_t)frac - (int64_t)0x100000000;
    if (m->nsec)
        f /= 1000;
    return (uint64_t)sec * 1000000u + (uint64_t)f;
}

static inline int gsq_pcap_mmap_next(gsq_pcap_mmap *m, gsq_pcap_mmap_pkt *p)
{
    if (!m->ng && !m->done && m->size - m->off >= 16) {
        const uint8_t *h = m->map + m->off;
        uint32_t caplen = gsq_pcap_mmap__rd32(m, h + 8);
        __builtin_prefetch(h + 1024); /* the hardware's stream prefetch stalls between batches */
        if (caplen <= m->snaplen && caplen <= GSQ_PCAP_MMAP_MAX_CAPLEN &&
            caplen <= m->size - m->off - 16) {
            m->off += 16 + (size_t)caplen;
            p->data = h + 16;
            p->caplen = caplen;
            p->wire_len = gsq_pcap_mmap__rd32(m, h + 12);
            p->ts_usec = gsq_pcap_mmap__classic_usec(m, gsq_pcap_mmap__rd32(m, h),
                                                     gsq_pcap_mmap__rd32(m, h + 4));
            p->linktype = m->linktype;
            return 1;
        }
    }
    return gsq_pcap_mmap_next_any(m, p);
}

/* Read only the records in [start, end) of a classic capture: 0, or -1
 * with the reason in why when m is pcapng, or start or end is not a record
 * boundary gsq_pcap_mmap_cuts could have given (hdr_end <= start <= end <=
 * size; a record header at start when start < end).  Records are then
 * delivered as from the whole file, ending at end. */
int gsq_pcap_mmap_restrict(gsq_pcap_mmap *m, size_t start, size_t end, char *why,
                           size_t why_len);

/* Where a classic capture can be cut into up to `parts` runs of records of
 * about equal counts, each a range for gsq_pcap_mmap_restrict, such that
 * no packet of a run is later than a packet of a later run (by ts_usec and
 * by its whole seconds: results over the runs in order equal the whole
 * file's).  Cuts fall between blocks of GSQ_PCAP_CUT_BLOCK records; where
 * none is clean near an even cut there are fewer runs.  Returns the number
 * of runs n >= 1 and cuts[0..n] (cuts[0] = hdr_end, cuts[n] = the end of
 * the last whole record).  0, with the reason in why: pcapng, a capture
 * that ends early (cut short, corrupt: read whole, it says so) or one of
 * fewer than two blocks.  -1: out of memory.  m is not moved (its pages
 * read may leave the resident set). */
#ifndef GSQ_PCAP_CUT_BLOCK /* (a test builds the reader with small blocks) */
#define GSQ_PCAP_CUT_BLOCK 4096u
#endif
int gsq_pcap_mmap_cuts(const gsq_pcap_mmap *m, uint32_t parts, uint64_t *cuts, char *why,
                       size_t why_len);

/* Unmap and free; safe on a closed or zeroed m, and twice. */
void gsq_pcap_mmap_close(gsq_pcap_mmap *m);

#ifdef __cplusplus
}
#endif

#endif /* GSQ_PCAP_MMAP_H */
