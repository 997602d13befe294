/*
 * pcap_mmap.c -- the memory-mapped pcap / pcapng file reader (contract and
 * invariants in pcap_mmap.h).  The rules follow libpcap 1.10's sf-pcap.c
 * and sf-pcapng.c, which pcap_source.c used for every file before and
 * still uses for what this reader does not take.
 */
#define _DEFAULT_SOURCE /* madvise(MADV_DONTNEED) */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <pcap/dlt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gsq_pkt_decode.h"
#include "pcap_mmap.h"

#define MAGIC_USEC 0xa1b2c3d4u
#define MAGIC_NSEC 0xa1b23c4du
#define BT_SHB 0x0a0d0d0au
#define BT_IDB 0x00000001u
#define BT_PB 0x00000002u
#define BT_SPB 0x00000003u
#define BT_EPB 0x00000006u
#define NG_BYTE_ORDER_MAGIC 0x1a2b3c4du
#define NG_MAX_BLOCK (16u << 20)   /* libpcap: INITIAL_MAX_BLOCKSIZE */
#define NG_MAX_SHB (1u << 20)      /* a first SHB above this goes to libpcap */
#define USER_TSRESOL 1000000u      /* libpcap's microseconds */

/* libpcap's timestamp scalings (sf-pcapng.c) */
enum { SC_PASS, SC_UP_DEC, SC_DOWN_DEC, SC_BIN };

/* ---- byte order --------------------------------------------------------- */

static uint32_t bswap32(uint32_t v)
{
    return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

static uint32_t raw32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint32_t rd32(const gsq_pcap_mmap *m, const uint8_t *p)
{
    uint32_t v = raw32(p);
    return m->swapped ? bswap32(v) : v;
}

static inline uint16_t rd16(const gsq_pcap_mmap *m, const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return m->swapped ? (uint16_t)((v >> 8) | (v << 8)) : v;
}

static uint64_t rd64(const gsq_pcap_mmap *m, const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    if (m->swapped)
        v = ((uint64_t)bswap32((uint32_t)v) << 32) | bswap32((uint32_t)(v >> 32));
    return v;
}

/* A file's 32-bit field read as libpcap's bpf_int32, widened. */
static inline int64_t s32(uint32_t v)
{
    return v < 0x80000000u ? (int64_t)v : (int64_t)v - (int64_t)0x100000000;
}

/* ---- errors ------------------------------------------------------------- */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(gsq_pcap_mmap *m, size_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, sizeof m->err, fmt, ap);
    va_end(ap);
    m->err_off = off;
    m->failed = 1;
    m->done = 1;
    return -1;
}

/* Link types: the file's LINKTYPE_* to the decoder's DLT_* (libpcap's
 * linktype_to_dlt for these), -1 for one the decoder does not know. */
static int decoded_dlt(uint32_t file_lt)
{
    int dlt;
    switch (file_lt) {
    case 0: dlt = DLT_NULL; break;
    case 1: dlt = DLT_EN10MB; break;
    case 101: dlt = DLT_RAW; break;
    case 108: dlt = DLT_LOOP; break;
    case 228: dlt = DLT_IPV4; break;
    case 229: dlt = DLT_IPV6; break;
    case 113: dlt = DLT_LINUX_SLL; break;
#ifdef DLT_LINUX_SLL2
    case 276: dlt = DLT_LINUX_SLL2; break;
#endif
    default: return -1;
    }
    return gsq_pkt_linktype_known(dlt) ? dlt : -1;
}

/* ---- pcapng blocks -------------------------------------------------------- */

typedef struct ng_block {
    uint32_t type, len;
    const uint8_t *body; /* after type and length, before the trailer */
    size_t body_len;
} ng_block;

/* The block at off, as libpcap's read_block checks it: 1, 0 at the end of
 * the file, -1 (failed) when it is cut short or its length is wrong. */
static int ng_block_at(gsq_pcap_mmap *m, size_t off, ng_block *b)
{
    size_t left = m->size - off;
    const uint8_t *p = m->map + off;
    if (left == 0)
        return 0;
    if (left < 8)
        return fail(m, off, "block header cut short: the file ends %zu bytes into its 8", left);
    b->type = rd32(m, p);
    b->len = rd32(m, p + 4);
    if (b->len < 12)
        return fail(m, off, "block of type 0x%08x has a length of %u, below 12", b->type,
                    b->len);
    if (b->len % 4 != 0)
        return fail(m, off, "block of type 0x%08x has a length of %u, not a multiple of 4",
                    b->type, b->len);
    if (b->len > NG_MAX_BLOCK)
        return fail(m, off, "block of type 0x%08x has a length of %u, above the maximum of %u",
                    b->type, b->len, NG_MAX_BLOCK);
    if (b->len > left)
        return fail(m, off, "block of type 0x%08x cut short: %u bytes long, the file ends after "
                    "%zu", b->type, b->len, left);
    if (rd32(m, p + b->len - 4) != b->len)
        return fail(m, off, "block of type 0x%08x: length %u in its header but %u in its trailer",
                    b->type, b->len, rd32(m, p + b->len - 4));
    b->body = p + 8;
    b->body_len = b->len - 12;
    return 1;
}

/* An Interface Description Block (libpcap's add_interface and
 * process_idb_options): appended to ifaces, or -1 (failed). */
static int ng_add_iface(gsq_pcap_mmap *m, size_t off, const ng_block *b)
{
    gsq_pcap_mmap_iface f;
    size_t pos = 8;
    int saw_resol = 0, saw_offset = 0, binary = 0;
    if (b->body_len < 8)
        return fail(m, off, "interface description block too short (%zu bytes)", b->body_len);
    memset(&f, 0, sizeof f);
    f.file_linktype = rd16(m, b->body);
    f.linktype = decoded_dlt(f.file_linktype);
    f.snaplen = rd32(m, b->body + 4);
    if (f.snaplen == 0 || f.snaplen > GSQ_PCAP_MMAP_MAX_CAPLEN)
        f.snaplen = GSQ_PCAP_MMAP_MAX_CAPLEN;
    f.tsresol = USER_TSRESOL;
    while (pos != b->body_len) {
        uint16_t code, olen;
        size_t padded;
        const uint8_t *val;
        if (b->body_len - pos < 4)
            return fail(m, off, "interface description block: option header cut short");
        code = rd16(m, b->body + pos);
        olen = rd16(m, b->body + pos + 2);
        pos += 4;
        padded = ((size_t)olen + 3u) & ~(size_t)3u;
        if (b->body_len - pos < padded)
            return fail(m, off, "interface description block: option %u cut short", code);
        val = b->body + pos;
        pos += padded;
        if (code == 0) { /* opt_endofopt */
            if (olen != 0)
                return fail(m, off, "interface description block: opt_endofopt of length %u",
                            olen);
            break;
        }
        if (code == 9) { /* if_tsresol */
            uint8_t v = val[0];
            if (olen != 1)
                return fail(m, off, "interface description block: if_tsresol of length %u", olen);
            if (saw_resol)
                return fail(m, off, "interface description block: two if_tsresol options");
            saw_resol = 1;
            if (v & 0x80) {
                if ((v & 0x7f) > 63)
                    return fail(m, off, "interface description block: if_tsresol 2^-%u is too "
                                "fine", v & 0x7f);
                binary = 1;
                f.tsresol = (uint64_t)1 << (v & 0x7f);
            } else {
                unsigned i;
                if (v > 19)
                    return fail(m, off, "interface description block: if_tsresol 10^-%u is too "
                                "fine", v);
                binary = 0;
                f.tsresol = 1;
                for (i = 0; i < v; i++)
                    f.tsresol *= 10;
            }
        } else if (code == 14) { /* if_tsoffset */
            if (olen != 8)
                return fail(m, off, "interface description block: if_tsoffset of length %u",
                            olen);
            if (saw_offset)
                return fail(m, off, "interface description block: two if_tsoffset options");
            saw_offset = 1;
            f.tsoffset = rd64(m, val);
        }
    }
    if (f.tsresol == USER_TSRESOL) {
        f.scale = SC_PASS;
    } else if (binary) {
        f.scale = SC_BIN;
    } else if (f.tsresol > USER_TSRESOL) {
        f.scale = SC_DOWN_DEC;
        f.scale_factor = f.tsresol / USER_TSRESOL;
    } else {
        f.scale = SC_UP_DEC;
        f.scale_factor = USER_TSRESOL / f.tsresol;
    }
    if (m->n_ifaces == m->cap_ifaces) {
        uint32_t nc = m->cap_ifaces ? m->cap_ifaces * 2 : 4;
        gsq_pcap_mmap_iface *ni;
        if (nc > (1u << 24))
            return fail(m, off, "more than %u interfaces in a section", 1u << 24);
        ni = realloc(m->ifaces, (size_t)nc * sizeof *ni);
        if (!ni)
            return fail(m, off, "out of memory for %u interfaces", nc);
        m->ifaces = ni;
        m->cap_ifaces = nc;
    }
    m->ifaces[m->n_ifaces++] = f;
    return 0;
}

/* libpcap's conversion of a pcapng timestamp to tv_sec, tv_usec, and
 * ours of those to microseconds (pcap_source.c). */
static uint64_t ng_usec(const gsq_pcap_mmap_iface *f, uint64_t t)
{
    uint64_t sec, frac;
    if (f->scale == SC_PASS) { /* the usual case: a constant divisor */
        sec = t / USER_TSRESOL + f->tsoffset;
        frac = t % USER_TSRESOL;
    } else {
        sec = t / f->tsresol + f->tsoffset;
        frac = t % f->tsresol;
        if (f->scale == SC_UP_DEC)
            frac *= f->scale_factor;
        else if (f->scale == SC_DOWN_DEC)
            frac /= f->scale_factor;
        else
            frac = frac * USER_TSRESOL / f->tsresol; /* may wrap, as libpcap's */
    }
    /* tv_sec = (time_t)sec; tv_usec = (int)frac */
    return sec * 1000000u + (uint64_t)s32((uint32_t)frac);
}

static int next_ng(gsq_pcap_mmap *m, gsq_pcap_mmap_pkt *p)
{
    ng_block b;
    size_t off;
    uint32_t ifid, caplen, wire;
    uint64_t t;
    size_t room;
    const uint8_t *data;
    for (;;) {
        int rc;
        off = m->off;
        rc = ng_block_at(m, off, &b);
        if (rc <= 0) {
            m->done = 1;
            return rc;
        }
        m->off = off + b.len;
        if (b.type == BT_EPB || b.type == BT_PB) {
            /* the same layout; the obsolete block's interface id is 16 bits
             * (then 16 bits of drops) */
            if (b.body_len < 20)
                return fail(m, off, "%s too short (%zu bytes)",
                            b.type == BT_EPB ? "enhanced packet block" : "packet block",
                            b.body_len);
            ifid = b.type == BT_EPB ? rd32(m, b.body) : rd16(m, b.body);
            t = ((uint64_t)rd32(m, b.body + 4) << 32) | rd32(m, b.body + 8);
            caplen = rd32(m, b.body + 12);
            wire = rd32(m, b.body + 16);
            data = b.body + 20;
            room = b.body_len - 20;
            break;
        }
        if (b.type == BT_SPB) {
            if (b.body_len < 4)
                return fail(m, off, "simple packet block too short (%zu bytes)", b.body_len);
            ifid = 0;
            wire = rd32(m, b.body);
            if (m->n_ifaces == 0)
                return fail(m, off, "simple packet block in a section without interface "
                            "description block");
            caplen = wire < m->ifaces[0].snaplen ? wire : m->ifaces[0].snaplen;
            t = 0;
            data = b.body + 4;
            room = b.body_len - 4;
            break;
        }
        if (b.type == BT_IDB) {
            if (ng_add_iface(m, off, &b) != 0)
                return -1;
        } else if (b.type == BT_SHB) {
            uint32_t bom;
            if (b.body_len < 16)
                return fail(m, off, "section header block too short (%zu bytes)", b.body_len);
            bom = rd32(m, b.body);
            if (bom == bswap32(NG_BYTE_ORDER_MAGIC))
                return fail(m, off, "a section of the other byte order");
            if (bom != NG_BYTE_ORDER_MAGIC)
                return fail(m, off, "section header block with a bad byte-order magic 0x%08x",
                            bom);
            if (rd16(m, b.body + 4) != 1)
                return fail(m, off, "section of pcapng major version %u", rd16(m, b.body + 4));
            m->n_ifaces = 0; /* a section has its own interfaces */
        } else {
            m->blocks_skipped++;
        }
    }
    if (ifid >= m->n_ifaces)
        return fail(m, off, "packet on interface %u, which has no interface description block",
                    ifid);
    if (caplen > m->ifaces[ifid].snaplen)
        return fail(m, off, "caplen %u above the snapshot length %u of interface %u", caplen,
                    m->ifaces[ifid].snaplen, ifid);
    if (caplen > room)
        return fail(m, off, "packet block too short for its %u captured bytes", caplen);
    p->data = data;
    p->caplen = caplen;
    p->wire_len = wire;
    p->ts_usec = ng_usec(&m->ifaces[ifid], t);
    p->linktype = m->ifaces[ifid].linktype;
    if (p->linktype < 0 && m->undecoded++ == 0)
        m->undecoded_linktype = m->ifaces[ifid].file_linktype;
    return 1;
}

/* ---- classic pcap ----------------------------------------------------------- */

static int next_classic(gsq_pcap_mmap *m, gsq_pcap_mmap_pkt *p)
{
    size_t off = m->off, left = m->size - off;
    const uint8_t *h = m->map + off;
    uint32_t caplen;
    if (left < 16) {
        m->done = 1;
        if (left == 0)
            return 0;
        return fail(m, off, "record header cut short: the file ends %zu bytes into its 16", left);
    }
    caplen = rd32(m, h + 8);
    if (caplen > GSQ_PCAP_MMAP_MAX_CAPLEN)
        return fail(m, off, "caplen %u above the maximum of %u", caplen,
                    GSQ_PCAP_MMAP_MAX_CAPLEN);
    if (left - 16 < caplen)
        return fail(m, off, "record cut short: %u captured bytes, the file ends after %zu",
                    caplen, left - 16);
    m->off = off + 16 + caplen;
    if (caplen > m->snaplen) { /* libpcap cuts it to the snapshot length */
        caplen = m->snaplen;
        m->cut_to_snaplen++;
    }
    p->data = h + 16;
    p->caplen = caplen;
    p->wire_len = rd32(m, h + 12);
    p->ts_usec = gsq_pcap_mmap__classic_usec(m, rd32(m, h), rd32(m, h + 4));
    p->linktype = m->linktype;
    return 1;
}

int gsq_pcap_mmap_next_any(gsq_pcap_mmap *m, gsq_pcap_mmap_pkt *p)
{
    if (m->done)
        return m->failed ? -1 : 0;
    return m->ng ? next_ng(m, p) : next_classic(m, p);
}

#define RELEASE_STEP ((size_t)8 << 20)

void gsq_pcap_mmap_release(gsq_pcap_mmap *m, const uint8_t *p)
{
    size_t upto, page;
    long ps;
    if (!m->mapped || p < m->map || p > m->map + m->size)
        return;
    upto = (size_t)(p - m->map);
    if (upto - m->released < RELEASE_STEP && upto != m->size)
        return;
    ps = sysconf(_SC_PAGESIZE);
    page = ps > 0 ? (size_t)ps : 4096u;
    upto -= upto % page;
    if (upto <= m->released)
        return;
    /* a private read-only file mapping: the pages are dropped from this
     * process and would be read again from the page cache */
    (void)madvise((void *)(m->map + m->released), upto - m->released, MADV_DONTNEED);
    m->released = upto;
}

/* ---- ranges --------------------------------------------------------------- */

int gsq_pcap_mmap_restrict(gsq_pcap_mmap *m, size_t start, size_t end, char *why,
                           size_t why_len)
{
    const char *bad = NULL;
    if (m->ng)
        bad = "a range of a pcapng capture (ranges are of classic pcap files)";
    else if (start < m->hdr_end || start > end || end > m->size)
        bad = "outside the capture's records";
    else if (start < end && (end - start < 16 || rd32(m, m->map + start + 8) >
                             GSQ_PCAP_MMAP_MAX_CAPLEN ||
                             rd32(m, m->map + start + 8) > end - start - 16))
        bad = "its start is not a record of the range";
    if (bad) {
        snprintf(why, why_len, "bytes %zu:%zu: %s", start, end, bad);
        return -1;
    }
    m->off = start;
    m->size = end;
    m->released = 0;
    return 0;
}

/* The cut test on one packet's time: by ts_usec and by the whole seconds
 * the LFTAs' `time` holds (the two order alike but for wrapped times). */
typedef struct cut_time {
    uint64_t usec;
    uint32_t sec;
} cut_time;

typedef struct cut_block {
    size_t start;          /* offset of its first record */
    cut_time lo, hi;       /* its earliest and latest packet */
} cut_block;

static void cut_widen(cut_block *b, uint64_t usec)
{
    uint32_t sec = (uint32_t)(usec / 1000000u);
    if (usec < b->lo.usec)
        b->lo.usec = usec;
    if (usec > b->hi.usec)
        b->hi.usec = usec;
    if (sec < b->lo.sec)
        b->lo.sec = sec;
    if (sec > b->hi.sec)
        b->hi.sec = sec;
}

int gsq_pcap_mmap_cuts(const gsq_pcap_mmap *m, uint32_t parts, uint64_t *cuts, char *why,
                       size_t why_len)
{
    gsq_pcap_mmap scan = *m;    /* a cursor of its own (classic: no owned state;
                                 * never closed: m owns the mapping) */
    gsq_pcap_mmap_pkt pk;
    cut_block *blocks = NULL, *nb;
    cut_time *head = NULL;      /* head[j]: the latest time of blocks [0, j) */
    size_t n = 0, cap = 0;
    uint64_t records = 0;
    uint32_t used = 1, k;
    int rc;
    cuts[0] = m->hdr_end;
    cuts[1] = m->size;
    if (m->ng) {
        snprintf(why, why_len, "a pcapng capture is read on one thread (cuts are of classic pcap "
                 "files)");
        return 0;
    }
    if (parts < 2)
        return 1;
    scan.off = m->hdr_end;
    scan.done = scan.failed = 0;
    scan.released = 0;
    while ((rc = gsq_pcap_mmap_next(&scan, &pk)) == 1) {
        if (records % GSQ_PCAP_CUT_BLOCK == 0) {
            /* only headers are read: the pages behind leave the resident set */
            gsq_pcap_mmap_release(&scan, pk.data);
            if (n == cap) {
                cap = cap ? 2 * cap : 256;
                nb = realloc(blocks, cap * sizeof *nb);
                if (!nb)
                    goto oom;
                blocks = nb;
            }
            blocks[n].start = (size_t)(pk.data - m->map) - 16;
            blocks[n].lo.usec = UINT64_MAX;
            blocks[n].lo.sec = UINT32_MAX;
            blocks[n].hi.usec = 0;
            blocks[n].hi.sec = 0;
            n++;
        }
        cut_widen(&blocks[n - 1], pk.ts_usec);
        records++;
    }
    if (rc != 0 || n < 2) { /* one run, which reports how the file ends */
        free(blocks);
        snprintf(why, why_len, rc != 0 ? "the capture ends early (read on one thread)"
                 : "fewer than %u packets: too few to split", 2 * GSQ_PCAP_CUT_BLOCK);
        return 0;
    }
    cuts[1] = scan.off;
    head = malloc((n + 1) * sizeof *head);
    if (!head)
        goto oom;
    head[0].usec = 0;
    head[0].sec = 0;
    for (k = 0; k < n; k++) {
        head[k + 1].usec = head[k].usec > blocks[k].hi.usec ? head[k].usec : blocks[k].hi.usec;
        head[k + 1].sec = head[k].sec > blocks[k].hi.sec ? head[k].sec : blocks[k].hi.sec;
    }
    /* the earliest time of blocks [j, n), from the end; a cut before block j
     * is clean when head[j] <= that */
    {
        cut_time tail = {UINT64_MAX, UINT32_MAX};
        uint8_t *clean = calloc(n, 1);
        size_t j, prev = 0;
        if (!clean)
            goto oom;
        for (j = n; j-- > 1;) {
            if (blocks[j].lo.usec < tail.usec)
                tail.usec = blocks[j].lo.usec;
            if (blocks[j].lo.sec < tail.sec)
                tail.sec = blocks[j].lo.sec;
            clean[j] = head[j].usec <= tail.usec && head[j].sec <= tail.sec;
        }
        for (k = 1; k < parts; k++) {
            size_t want = (size_t)((uint64_t)k * n / parts), best = 0, d;
            /* the clean block boundary nearest the even cut, after the last */
            for (d = 0; d < n && !best; d++) {
                if (want + d < n && want + d > prev && clean[want + d])
                    best = want + d;
                else if (d <= want && want - d > prev && clean[want - d])
                    best = want - d;
            }
            if (best) {
                cuts[used++] = blocks[best].start;
                prev = best;
            }
        }
        free(clean);
    }
    cuts[used] = scan.off;
    free(head);
    free(blocks);
    return (int)used;
oom:
    free(head);
    free(blocks);
    return -1;
}

/* ---- opening ------------------------------------------------------------ */

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int refuse(gsq_pcap_mmap *m, char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    if (why && why_len) {
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    gsq_pcap_mmap_close(m);
    return 1;
}

static int open_classic(gsq_pcap_mmap *m, char *why, size_t why_len)
{
    uint32_t magic = raw32(m->map), lt, snap;
    if (magic == MAGIC_USEC || magic == MAGIC_NSEC) {
        m->swapped = 0;
    } else {
        m->swapped = 1;
        magic = bswap32(magic);
    }
    m->nsec = magic == MAGIC_NSEC;
    if (m->size < 24)
        return refuse(m, why, why_len, "file header cut short");
    if (rd16(m, m->map + 4) != 2 || rd16(m, m->map + 6) != 4)
        return refuse(m, why, why_len, "pcap version %u.%u", rd16(m, m->map + 4),
                      rd16(m, m->map + 6));
    snap = rd32(m, m->map + 16);
    lt = rd32(m, m->map + 20);
    m->linktype = decoded_dlt(lt); /* -1 as well for FCS/extension bits */
    if (m->linktype < 0)
        return refuse(m, why, why_len, "link type %u is not decoded", lt);
    m->snaplen = (snap == 0 || snap >= 0x80000000u) ? GSQ_PCAP_MMAP_MAX_CAPLEN : snap;
    m->off = m->hdr_end = 24;
    return 0;
}

/* The section header and the blocks up to the first IDB, as libpcap's
 * pcap_ng_check_header reads them; whatever it might refuse, or accept
 * otherwise than this reader would, goes to libpcap. */
static int open_ng(gsq_pcap_mmap *m, char *why, size_t why_len)
{
    uint32_t bom, len;
    size_t off;
    if (m->size < 28)
        return refuse(m, why, why_len, "section header cut short");
    bom = raw32(m->map + 8);
    if (bom == NG_BYTE_ORDER_MAGIC)
        m->swapped = 0;
    else if (bom == bswap32(NG_BYTE_ORDER_MAGIC))
        m->swapped = 1;
    else
        return refuse(m, why, why_len, "not a pcapng section header");
    m->ng = 1;
    len = rd32(m, m->map + 4);
    if (len < 28 || len > NG_MAX_SHB || len % 4 != 0 || len > m->size ||
        rd32(m, m->map + len - 4) != len)
        return refuse(m, why, why_len, "section header block of length %u", len);
    if (rd16(m, m->map + 12) != 1 || (rd16(m, m->map + 14) != 0 && rd16(m, m->map + 14) != 2))
        return refuse(m, why, why_len, "pcapng version %u.%u", rd16(m, m->map + 12),
                      rd16(m, m->map + 14));
    for (off = len;;) {
        ng_block b;
        int rc = ng_block_at(m, off, &b);
        if (rc <= 0)
            return refuse(m, why, why_len, "%s before the first interface description block",
                          rc == 0 ? "end of file" : m->err);
        if (b.type == BT_EPB || b.type == BT_SPB || b.type == BT_PB)
            return refuse(m, why, why_len, "packet block before the first interface "
                          "description block");
        if (b.type == BT_IDB) {
            if (ng_add_iface(m, off, &b) != 0)
                return refuse(m, why, why_len, "first interface: %s", m->err);
            /* a first interface of a link type not decoded is taken too:
             * its packets count as undecoded, and the later interfaces'
             * (libpcap refuses a second link type) are read */
            m->linktype = m->ifaces[0].linktype;
            m->off = m->hdr_end = off + b.len;
            return 0;
        }
        off += b.len;
    }
}

/* The capture in map[0..size): which kind, and its header. */
static int open_capture(gsq_pcap_mmap *m, char *why, size_t why_len)
{
    uint32_t magic;
    if (m->size < 4)
        return refuse(m, why, why_len, "too short for a capture");
    magic = raw32(m->map);
    if (magic == MAGIC_USEC || magic == MAGIC_NSEC || magic == bswap32(MAGIC_USEC) ||
        magic == bswap32(MAGIC_NSEC))
        return open_classic(m, why, why_len);
    if (magic == BT_SHB)
        return open_ng(m, why, why_len);
    return refuse(m, why, why_len, "not a pcap or pcapng file this reader takes");
}

int gsq_pcap_mmap_open_buffer(gsq_pcap_mmap *m, const uint8_t *buf, size_t size, char *why,
                              size_t why_len)
{
    memset(m, 0, sizeof *m);
    m->map = buf;
    m->size = m->map_size = size;
    return open_capture(m, why, why_len);
}

int gsq_pcap_mmap_open(gsq_pcap_mmap *m, const char *path, char *why, size_t why_len)
{
    struct stat st;
    void *map;
    int fd;
    memset(m, 0, sizeof *m);
    /* stat first: opening a FIFO would block, or take a writer's data */
    if (stat(path, &st) != 0)
        return refuse(m, why, why_len, "stat: %s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return refuse(m, why, why_len, "not a regular file");
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return refuse(m, why, why_len, "open: %s", strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        (uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
        close(fd);
        return refuse(m, why, why_len, "not a non-empty regular file");
    }
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd); /* the mapping stays */
    if (map == MAP_FAILED)
        return refuse(m, why, why_len, "mmap: %s", strerror(errno));
    m->map = map;
    m->size = m->map_size = (size_t)st.st_size;
    m->mapped = 1;
    (void)posix_madvise(map, m->size, POSIX_MADV_SEQUENTIAL);
    return open_capture(m, why, why_len);
}

void gsq_pcap_mmap_close(gsq_pcap_mmap *m)
{
    if (m->mapped)
        munmap((void *)m->map, m->map_size);
    free(m->ifaces);
    memset(m, 0, sizeof *m);
}
