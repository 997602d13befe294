/*
 * fuzz_pcap.c -- libFuzzer harness of the memory-mapped pcap / pcapng
 * reader (runtime_c/sources/pcap_mmap.c) and the packet decoder
 * (runtime_c/sources/pkt_decode.c), both compiled from the runtime's own
 * sources (fuzz/readers/build.sh; pcap_mmap.c with -DGSQ_PCAP_CUT_BLOCK=4u,
 * as tests/test_pcap_mmap.py builds it, so that small inputs have blocks
 * to cut between).
 *
 * The input is the capture file itself: copied into a heap block of
 * exactly its size (AddressSanitizer then sees any read past its end),
 * opened with gsq_pcap_mmap_open_buffer and read with gsq_pcap_mmap_next
 * until 0 or -1, every packet decoded with gsq_pkt_decode.  A classic
 * capture is then cut (gsq_pcap_mmap_cuts) and each run read again from a
 * fresh open restricted to it (gsq_pcap_mmap_restrict); a restriction to
 * arbitrary offsets taken from the input is tried too (refused or read).
 *
 * The header's contract is checked as well: every packet lies inside
 * [hdr_end, off) of the buffer, the decoder's offsets inside the captured
 * bytes (gsq_record.h), and the reader stays done once it returned 0 or
 * -1.  A violation aborts (a crash for libFuzzer).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gsq_pkt_decode.h"
#include "pcap_mmap.h"

#define CHECK(c)                  \
    do {                          \
        if (!(c))                 \
            __builtin_trap();     \
    } while (0)

static void decode(const gsq_pcap_mmap_pkt *p)
{
    gsq_pkt_info pi;
    uint32_t k;
    volatile uint8_t sink = 0;
    memset(&pi, 0, sizeof pi);
    pi.ts_usec = p->ts_usec;
    pi.wire_len = p->wire_len;
    gsq_pkt_decode(&pi, gsq_pkt_linktype_known(p->linktype) ? p->linktype : -1, p->data,
                   p->caplen);
    /* the invariants of gsq_pkt_info (gsq_record.h) */
    CHECK(pi.caplen == p->caplen);
    if (pi.mac_src >= 0)
        CHECK((uint32_t)pi.mac_src + 6 <= p->caplen);
    if (pi.mac_dst >= 0)
        CHECK((uint32_t)pi.mac_dst + 6 <= p->caplen);
    if (pi.ip_version == 4)
        CHECK(pi.l3_off + 20 <= p->caplen);
    if (pi.ip_version == 6)
        CHECK(pi.l3_off + 40 <= p->caplen);
    if (pi.l4_off >= 0) {
        CHECK(pi.ip_version != 0);
        CHECK((uint32_t)pi.l4_off + 4 <= p->caplen);
    }
    CHECK(pi.payload_off <= pi.payload_end && pi.payload_end <= p->caplen);
    /* what the accessors read: touch it (ASan checks the bytes) */
    for (k = pi.payload_off; k < pi.payload_end; k++)
        sink ^= p->data[k];
    if (pi.l4_off >= 0)
        sink ^= p->data[pi.l4_off + 3];
    (void)sink;
}

/* Read m to its end; returns the last rc (0 or -1). */
static int read_all(gsq_pcap_mmap *m, const uint8_t *buf)
{
    gsq_pcap_mmap_pkt p;
    int rc;
    uint32_t n = 0;
    while ((rc = gsq_pcap_mmap_next(m, &p)) == 1) {
        CHECK(p.data >= buf + m->hdr_end);
        CHECK(p.data + p.caplen <= buf + m->off);
        CHECK(m->off <= m->size && m->size <= m->map_size);
        decode(&p);
        CHECK(++n < 10000000u);
    }
    CHECK(rc == 0 || rc == -1);
    CHECK(m->done && (rc == -1) == (m->failed != 0));
    CHECK(gsq_pcap_mmap_next(m, &p) == rc); /* stays done */
    return rc;
}

static uint64_t rd_le64(const uint8_t *p)
{
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gsq_pcap_mmap m;
    char why[256];
    uint8_t *buf = malloc(size ? size : 1);
    uint64_t cuts[8];
    int n, i;
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    if (gsq_pcap_mmap_open_buffer(&m, buf, size, why, sizeof why) != 0) {
        free(buf);
        return 0;
    }
    CHECK(m.hdr_end <= m.size && m.off == m.hdr_end);
    read_all(&m, buf);
    gsq_pcap_mmap_close(&m);

    if (gsq_pcap_mmap_open_buffer(&m, buf, size, why, sizeof why) != 0)
        __builtin_trap(); /* taken once, taken again */
    if (!m.ng) {
        /* cut into up to 3 runs, each read from a fresh open */
        n = gsq_pcap_mmap_cuts(&m, 3, cuts, why, sizeof why);
        CHECK(n >= -1 && n <= 3);
        for (i = 0; i < n; i++) {
            gsq_pcap_mmap r;
            CHECK(cuts[i] <= cuts[i + 1] && cuts[i + 1] <= size);
            if (gsq_pcap_mmap_open_buffer(&r, buf, size, why, sizeof why) != 0)
                __builtin_trap();
            if (gsq_pcap_mmap_restrict(&r, (size_t)cuts[i], (size_t)cuts[i + 1], why,
                                       sizeof why) != 0)
                __builtin_trap(); /* a cut is a range restrict takes */
            CHECK(read_all(&r, buf) == 0); /* cuts are of captures read whole */
            gsq_pcap_mmap_close(&r);
        }
        /* a range from the input's last 16 bytes: refused, or read */
        if (size >= 40) {
            size_t a = (size_t)(rd_le64(buf + size - 16) % (size + 1));
            size_t b = (size_t)(rd_le64(buf + size - 8) % (size + 1));
            if (gsq_pcap_mmap_restrict(&m, a, b, why, sizeof why) == 0)
                read_all(&m, buf);
        }
    }
    gsq_pcap_mmap_close(&m);
    gsq_pcap_mmap_close(&m); /* twice is safe */
    free(buf);
    return 0;
}
