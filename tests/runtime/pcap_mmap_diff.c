/*
 * pcap_mmap_diff.c -- reads capture files through one reader and prints
 * what it delivers, for tests/test_pcap_mmap.py to compare the
 * memory-mapped reader (runtime_c/sources/pcap_mmap.c) with libpcap.
 *
 *   pcap_mmap_diff mmap|mem|libpcap|cuts FILE...
 *
 * mmap: gsq_pcap_mmap_open (the file mapped); mem: the file read into a
 * heap block of exactly its size and gsq_pcap_mmap_open_buffer, so that
 * AddressSanitizer checks every read of the reader; libpcap:
 * pcap_open_offline and pcap_next_ex, timestamps as the runtime reads
 * libpcap's (gsq_pkt_ts_usec: unsigned seconds), a link type not decoded
 * as -1 (as the mapped reader gives it).  Every packet is decoded
 * (gsq_pkt_decode) with its link type.
 *
 * Per file: "file PATH", then "fallback WHY" (mmap, mem: not taken) or
 * "openfail MSG" (libpcap), or one line per packet
 * "p TS_USEC CAPLEN WIRE_LEN LINKTYPE FNV1A64(bytes) L3 L4 PROTO PAYLOAD"
 * and a last line "eof" or "error MSG" (mmap, mem: "error @OFFSET MSG",
 * then "counts CUT_TO_SNAPLEN UNDECODED").
 *
 * cuts: the file in a heap block cut into up to 3 runs (gsq_pcap_mmap_cuts,
 * built with small blocks: -DGSQ_PCAP_CUT_BLOCK), "nocut WHY" or "cuts
 * C0 C1 ..." then, per run, "run" and the packets read with
 * gsq_pcap_mmap_restrict from a fresh open, and "eof" or "error ...".
 */
#define _DEFAULT_SOURCE
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsq_pkt_decode.h"
#include "pcap_mmap.h"

static uint64_t fnv(const uint8_t *p, uint32_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    uint32_t i;
    for (i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void packet(uint64_t ts, uint32_t caplen, uint32_t wire, int lt, const uint8_t *d)
{
    gsq_pkt_info pi;
    memset(&pi, 0, sizeof pi);
    pi.ts_usec = ts;
    pi.wire_len = wire;
    gsq_pkt_decode(&pi, gsq_pkt_linktype_known(lt) ? lt : -1, d, caplen);
    printf("p %llu %u %u %d %016llx %d %d %u %u-%u\n", (unsigned long long)ts, caplen, wire, lt,
           (unsigned long long)fnv(d, caplen), pi.ip_version ? (int)pi.l3_off : -1, pi.l4_off,
           pi.ip_proto, pi.payload_off, pi.payload_end);
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    uint8_t *b = NULL;
    long len;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        b = malloc(len ? (size_t)len : 1);
        if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
            free(b);
            b = NULL;
        }
        *n = (size_t)len;
    }
    fclose(f);
    return b;
}

static void by_reader(const char *path, int mem)
{
    gsq_pcap_mmap m;
    gsq_pcap_mmap_pkt p;
    char why[256];
    uint8_t *buf = NULL;
    size_t n = 0;
    int rc;
    if (mem) {
        buf = slurp(path, &n);
        if (!buf) {
            printf("fallback cannot read\n");
            return;
        }
        rc = gsq_pcap_mmap_open_buffer(&m, buf, n, why, sizeof why);
    } else {
        rc = gsq_pcap_mmap_open(&m, path, why, sizeof why);
    }
    if (rc != 0) {
        printf("fallback %s\n", why);
        free(buf);
        return;
    }
    while ((rc = gsq_pcap_mmap_next(&m, &p)) == 1) {
        if (p.data < m.map + m.hdr_end || p.caplen > m.size ||
            (size_t)(p.data - m.map) > m.size - p.caplen)
            printf("outside the file\n");
        packet(p.ts_usec, p.caplen, p.wire_len, p.linktype, p.data);
    }
    if (rc == 0)
        printf("eof\n");
    else
        printf("error @%zu %s\n", m.err_off, m.err);
    if (gsq_pcap_mmap_next(&m, &p) != rc) /* at the end, it stays there */
        printf("not done\n");
    printf("counts %llu %llu\n", (unsigned long long)m.cut_to_snaplen,
           (unsigned long long)m.undecoded);
    gsq_pcap_mmap_close(&m);
    gsq_pcap_mmap_close(&m);
    free(buf);
}

static void print_packets(gsq_pcap_mmap *m)
{
    gsq_pcap_mmap_pkt p;
    int rc;
    while ((rc = gsq_pcap_mmap_next(m, &p)) == 1)
        packet(p.ts_usec, p.caplen, p.wire_len, p.linktype, p.data);
    if (rc == 0)
        printf("eof\n");
    else
        printf("error @%zu %s\n", m->err_off, m->err);
}

static void by_cuts(const char *path)
{
    gsq_pcap_mmap m;
    char why[256];
    uint64_t cuts[4];
    size_t n = 0;
    uint8_t *buf = slurp(path, &n);
    int parts, k;
    if (!buf || gsq_pcap_mmap_open_buffer(&m, buf, n, why, sizeof why) != 0) {
        printf("fallback\n");
        free(buf);
        return;
    }
    parts = gsq_pcap_mmap_cuts(&m, 3, cuts, why, sizeof why);
    gsq_pcap_mmap_close(&m);
    if (parts <= 0) {
        printf("nocut %s\n", parts < 0 ? "out of memory" : why);
        free(buf);
        return;
    }
    printf("cuts");
    for (k = 0; k <= parts; k++)
        printf(" %llu", (unsigned long long)cuts[k]);
    printf("\n");
    for (k = 0; k < parts; k++) {
        printf("run\n");
        if (gsq_pcap_mmap_open_buffer(&m, buf, n, why, sizeof why) != 0 ||
            gsq_pcap_mmap_restrict(&m, (size_t)cuts[k], (size_t)cuts[k + 1], why,
                                   sizeof why) != 0) {
            printf("restrict failed %s\n", why);
            continue;
        }
        print_packets(&m);
        gsq_pcap_mmap_close(&m);
    }
    free(buf);
}

static void by_libpcap(const char *path)
{
    char errbuf[PCAP_ERRBUF_SIZE];
    struct pcap_pkthdr *h;
    const u_char *d;
    int rc;
    pcap_t *pc = pcap_open_offline(path, errbuf);
    if (!pc) {
        printf("openfail %s\n", errbuf);
        return;
    }
    while ((rc = pcap_next_ex(pc, &h, &d)) == 1)
        packet(gsq_pkt_ts_usec((int64_t)h->ts.tv_sec, (int64_t)h->ts.tv_usec,
                               pcap_major_version(pc) == 2),
               h->caplen, h->len,
               gsq_pkt_linktype_known(pcap_datalink(pc)) ? pcap_datalink(pc) : -1, d);
    if (rc == PCAP_ERROR_BREAK)
        printf("eof\n");
    else
        printf("error %s\n", pcap_geterr(pc));
    pcap_close(pc);
}

int main(int argc, char **argv)
{
    int i, mode;
    static const char *const modes[] = {"mmap", "mem", "libpcap", "cuts"};
    for (mode = 0; argc >= 2 && mode < 4 && strcmp(argv[1], modes[mode]) != 0; mode++)
        ;
    if (argc < 2 || mode == 4) {
        fprintf(stderr, "usage: pcap_mmap_diff mmap|mem|libpcap|cuts FILE...\n");
        return 2;
    }
    for (i = 2; i < argc; i++) {
        printf("file %s\n", argv[i]);
        if (mode == 3)
            by_cuts(argv[i]);
        else if (mode == 2)
            by_libpcap(argv[i]);
        else
            by_reader(argv[i], mode == 1);
        fflush(stdout);
    }
    return 0;
}
