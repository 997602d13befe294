/* Hand-written baseline for the gsqlc benchmark: the practical limit of a
 * single-threaded C program doing the work of Q1 / Q2 over a pcap file.
 *
 *   loop q0|q1|q2 FILE.pcap OUT     (OUT may be /dev/null or - for stdout)
 *
 * Reads records with libpcap (pcap_next_ex), decodes Ethernet (802.1Q tags
 * skipped) and IPv4 by hand; non-IPv4 packets are skipped, as FROM IPV4 does.
 *   q1: SELECT time, srcIP, destIP, len FROM IPV4 WHERE protocol = 6 AND len > 100
 *       -> "time|a.b.c.d|a.b.c.d|len" lines
 *   q2: SELECT tb, srcIP, destIP, count(*) FROM IPV4 GROUP BY time/60 as tb, srcIP, destIP
 *       -> "tb|a.b.c.d|a.b.c.d|count" lines; an open-addressing hash table per
 *       epoch, flushed when time/60 changes and at the end.
 *   q0: decode only, output nothing (the cost of reading and decoding).
 * Prints {"packets": N, "ipv4": N, "rows": N} on stderr.
 */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUTBUF (4u << 20)

static FILE *out;
static char obuf[1 << 16];
static size_t olen;
static uint64_t rows;

static inline void oflush(void) { fwrite(obuf, 1, olen, out); olen = 0; }

static inline char *put_u64(char *p, uint64_t v) {
    char tmp[24];
    int n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (n) *p++ = tmp[--n];
    return p;
}

static inline char *put_ip(char *p, uint32_t a) {
    p = put_u64(p, a >> 24); *p++ = '.';
    p = put_u64(p, (a >> 16) & 255); *p++ = '.';
    p = put_u64(p, (a >> 8) & 255); *p++ = '.';
    return put_u64(p, a & 255);
}

static inline void row4(uint64_t a, uint32_t ip1, uint32_t ip2, uint64_t b) {
    if (olen > sizeof obuf - 96) oflush();
    char *p = obuf + olen;
    p = put_u64(p, a); *p++ = '|';
    p = put_ip(p, ip1); *p++ = '|';
    p = put_ip(p, ip2); *p++ = '|';
    p = put_u64(p, b); *p++ = '\n';
    olen = (size_t)(p - obuf);
    rows++;
}

static inline uint32_t rd32(const u_char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint16_t rd16(const u_char *p) { return (uint16_t)(p[0] << 8 | p[1]); }

/* ---- q2: open addressing, linear probing, key = src<<32|dst ------------ */
typedef struct { uint64_t key; uint64_t cnt; } slot;  /* cnt 0 = empty */
static slot *tab;
static uint64_t tmask, tused;
static int tbits;

static void tab_init(int bits) {
    tbits = bits;
    tmask = (1ull << bits) - 1;
    tab = calloc(tmask + 1, sizeof(slot));
    tused = 0;
    if (!tab) { perror("calloc"); exit(2); }
}

static inline uint64_t hash64(uint64_t k) {
    return (k * 0x9E3779B97F4A7C15ull) >> (64 - tbits);
}

static void tab_add(uint64_t key, uint64_t n);

static void tab_grow(void) {
    slot *old = tab;
    uint64_t oldn = tmask + 1;
    tab_init(tbits + 1);
    for (uint64_t i = 0; i < oldn; i++)
        if (old[i].cnt) tab_add(old[i].key, old[i].cnt);
    free(old);
}

static inline void tab_add(uint64_t key, uint64_t n) {
    uint64_t h = hash64(key);
    for (;;) {
        slot *s = &tab[h];
        if (s->cnt == 0) {
            s->key = key; s->cnt = n;
            if (++tused * 2 > tmask) tab_grow();
            return;
        }
        if (s->key == key) { s->cnt += n; return; }
        h = (h + 1) & tmask;
    }
}

static void tab_flush(uint64_t tb) {
    for (uint64_t i = 0; i <= tmask; i++)
        if (tab[i].cnt) {
            row4(tb, (uint32_t)(tab[i].key >> 32), (uint32_t)tab[i].key, tab[i].cnt);
        }
    memset(tab, 0, (tmask + 1) * sizeof(slot));
    tused = 0;
}

int main(int argc, char **argv) {
    if (argc != 4 || argv[1][0] != 'q' || argv[1][1] < '0' || argv[1][1] > '2' ||
        argv[1][2]) {
        fprintf(stderr, "usage: %s q0|q1|q2 FILE.pcap OUT\n", argv[0]);
        return 2;
    }
    int q = argv[1][1] - '0', q2 = q == 2;
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *pc = pcap_open_offline(argv[2], err);
    if (!pc) { fprintf(stderr, "%s\n", err); return 1; }
    if (pcap_datalink(pc) != DLT_EN10MB) {
        fprintf(stderr, "%s: not an Ethernet capture\n", argv[2]);
        return 1;
    }
    out = strcmp(argv[3], "-") ? fopen(argv[3], "w") : stdout;
    if (!out) { perror(argv[3]); return 1; }
    setvbuf(out, NULL, _IOFBF, OUTBUF);
    if (q2) tab_init(16);

    struct pcap_pkthdr *h;
    const u_char *d;
    uint64_t npk = 0, nip = 0, cur_tb = 0;
    int have_tb = 0, rc;
    while ((rc = pcap_next_ex(pc, &h, &d)) == 1) {
        npk++;
        uint32_t cl = h->caplen, off = 14;
        if (cl < 14) continue;
        uint16_t et = rd16(d + 12);
        while ((et == 0x8100 || et == 0x88a8) && cl >= off + 4) {
            et = rd16(d + off + 2);
            off += 4;
        }
        if (et != 0x0800 || cl < off + 20) continue;
        const u_char *ip = d + off;
        if ((ip[0] >> 4) != 4) continue;
        nip++;
        uint32_t t = (uint32_t)h->ts.tv_sec;
        uint32_t len = rd16(ip + 2);
        uint32_t proto = ip[9];
        uint32_t src = rd32(ip + 12), dst = rd32(ip + 16);
        if (q == 0) {
            rows += (proto ^ len ^ src ^ dst ^ t) == 0xFFFFFFFFu;  /* keep the loads */
        } else if (q == 1) {
            if (proto == 6 && len > 100) row4(t, src, dst, len);
        } else {
            uint64_t tb = t / 60;
            if (!have_tb || tb != cur_tb) {
                if (have_tb) tab_flush(cur_tb);
                cur_tb = tb; have_tb = 1;
            }
            tab_add((uint64_t)src << 32 | dst, 1);
        }
    }
    if (rc == -1) { fprintf(stderr, "%s: %s\n", argv[2], pcap_geterr(pc)); return 1; }
    if (q2 && have_tb) tab_flush(cur_tb);
    oflush();
    if (fflush(out) != 0) { perror(argv[3]); return 1; }
    pcap_close(pc);
    fprintf(stderr, "{\"packets\": %llu, \"ipv4\": %llu, \"rows\": %llu}\n",
            (unsigned long long)npk, (unsigned long long)nip, (unsigned long long)rows);
    return 0;
}
