/* Unit tests of the inline packet decoder (runtime_c/sources/gsq_pkt_decode.h,
 * gsq_pkt_decode_fast, over a gsq_pkt_info full of old bytes) against the
 * general one (sources/pkt_decode.c, gsq_pkt_decode, over a zeroed one):
 * for Ethernet / IPv4 frames of every transport, with the
 * header fields the fast path tests set to each value that leaves it
 * (tags, other ethertypes and versions, short IHL, fragments, total length
 * 0 or past the capture, options, every capture length down to 0), other
 * link types, and frames of random bytes, both must leave the same
 * gsq_pkt_info byte for byte.  Linked with the runtime objects; prints one
 * line per failure and "N passed, M failed". */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gsq_internal.h"
#include "gsq_pkt_decode.h"

const gsq_queryset_def gsq_queryset = {0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, NULL};

#include "unit_check.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

static int mismatches;

/* Both decoders over one frame; a mismatch is reported once per frame. */
static void compare(int linktype, const uint8_t *p, uint32_t caplen, uint32_t wire_len)
{
    gsq_pkt_info general, fast;
    memset(&general, 0, sizeof general);
    general.ts_usec = 1700000000000000ull;
    general.wire_len = wire_len;
    memset(&fast, 0xA5, sizeof fast); /* whatever the record held before */
    gsq_pkt_decode(&general, linktype, p, caplen);
    gsq_pkt_decode_fast(&fast, general.ts_usec, wire_len, linktype, p, caplen);
    int same = memcmp(&general, &fast, sizeof fast) == 0;
    if (!same && mismatches++ < 5)
        printf("mismatch: linktype %d caplen %u proto %u ihl %u\n", linktype, caplen,
               caplen > 23 ? p[23] : 0u, caplen > 14 ? (p[14] & 15u) : 0u);
    CHECK(same);
}

/* An Ethernet frame carrying IPv4 with this protocol, IHL and payload. */
static uint32_t build_frame(uint8_t *f, uint8_t proto, unsigned ihl, uint32_t payload)
{
    uint32_t tot = ihl * 4u + payload, i;
    memset(f, 0, 1600);
    for (i = 0; i < 12; i++)
        f[i] = (uint8_t)rnd();
    f[12] = 0x08;
    f[13] = 0x00;
    f[14] = (uint8_t)(0x40 | ihl);
    f[16] = (uint8_t)(tot >> 8);
    f[17] = (uint8_t)tot;
    f[23] = proto;
    for (i = 26; i < 34; i++)
        f[i] = (uint8_t)rnd();
    uint32_t l4 = 14u + ihl * 4u;
    if (proto == 6)
        f[l4 + 12] = (uint8_t)((5u + rnd() % 11u) << 4); /* data offset 20..60 */
    if (proto == 17) {
        uint32_t ulen = payload;
        f[l4 + 4] = (uint8_t)(ulen >> 8);
        f[l4 + 5] = (uint8_t)ulen;
    }
    for (i = l4; i < l4 + 4 && i < 1600; i++)
        f[i] = (uint8_t)(f[i] | (rnd() & 0x0f));
    return 14u + tot;
}

int main(void)
{
    static uint8_t f[1600];
    static const uint8_t protos[] = {6, 17, 1, 58, 47, 0};
    static const unsigned ihls[] = {5, 6, 15};
    static const uint32_t payloads[] = {0, 4, 8, 20, 40, 100, 1400};
    size_t a, b, c;
    uint32_t caplen, k;

    for (a = 0; a < sizeof protos; a++)
        for (b = 0; b < sizeof ihls / sizeof ihls[0]; b++)
            for (c = 0; c < sizeof payloads / sizeof payloads[0]; c++) {
                uint32_t len = build_frame(f, protos[a], ihls[b], payloads[c]);
                for (caplen = 0; caplen <= len + 2 && caplen <= sizeof f; caplen++) {
                    compare(1, f, caplen, len);
                    compare(1, f, caplen, caplen); /* snap length at caplen */
                }
            }

    /* each field the fast path tests, set to what makes it step aside */
    uint32_t len = build_frame(f, 6, 5, 100);
    f[12] = 0x81; /* 802.1Q */
    compare(1, f, len, len);
    f[12] = 0x86; f[13] = 0xdd; /* IPv6 ethertype over an IPv4 header */
    compare(1, f, len, len);
    f[12] = 0x08; f[13] = 0x00;
    f[14] = 0x45 ^ 0x20; /* version 6 */
    compare(1, f, len, len);
    f[14] = 0x44; /* IHL 4 */
    compare(1, f, len, len);
    f[14] = 0x45;
    f[16] = 0; f[17] = 0; /* total length 0 (segmentation offload) */
    compare(1, f, len, len);
    compare(1, f, len, 10);
    compare(1, f, len, 14);
    f[16] = 0xff; f[17] = 0xff; /* past the capture */
    compare(1, f, len, len);
    f[16] = 0; f[17] = 10; /* shorter than its header */
    compare(1, f, len, len);
    f[16] = 0; f[17] = 120;
    for (k = 0; k < 0x10000; k += 0x0fff) { /* fragment offsets and flags */
        f[20] = (uint8_t)(k >> 8);
        f[21] = (uint8_t)k;
        compare(1, f, len, len);
    }
    f[20] = f[21] = 0;
    compare(0, f, len, len);   /* DLT_NULL */
    compare(113, f, len, len); /* Linux cooked */
    compare(-1, f, len, len);  /* not decoded */

    /* random frames, mostly with the fast path's ethertype and version */
    for (k = 0; k < 200000; k++) {
        uint32_t n = rnd() % 120u, i;
        for (i = 0; i < n; i++)
            f[i] = (uint8_t)rnd();
        if (rnd() % 4u) {
            f[12] = 0x08;
            f[13] = 0x00;
            f[14] = (uint8_t)(0x40 | (f[14] & 15u));
            if (rnd() % 2u) {
                f[20] = 0;
                f[21] = 0;
            }
        }
        compare(1, f, n, rnd() % 2u ? n : rnd() % 2000u);
    }
    return check_report();
}
