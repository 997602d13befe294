/* drive.c -- the XDP blocks' test driver: opens an xdp_loader on a BPF object
 * and an interface, then answers commands read from stdin, one a line:
 *
 *   now        -> "now EPOCH"            the epoch the program stamps now
 *   poll       -> rec lines, "polled N"  what the ring holds
 *   drain E    -> rec lines, "drained N" epoch E's table, then the ring
 *   stats      -> "stats PACKETS COLLISIONS OLD BYPASSED RING_LOST BUSY"
 *   quit       (or end of input) detaches and exits 0
 *
 * A partial is "rec KIND EPOCH CPU KEYHEX AGGRHEX"; a failed command prints
 * "error MESSAGE" and the driver goes on.  Usage:
 *
 *   drive OBJECT IFNAME EPOCH_MS GRACE_MS KEY_BYTES AGGR_BYTES [auto|native|generic]
 *
 * prints "ready MODE WALL_MINUS_MONO_NS ERROR_BOUND_NS", or "error MESSAGE"
 * on stdout and exits 1 when the open fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdp_loader.h"

static void hex(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        printf("%02x", b[i]);
}

static int print_partial(void *arg, const struct xdp_partial *p)
{
    (void)arg;
    printf("rec %u %llu %u ", p->kind, (unsigned long long)p->epoch, p->cpu);
    hex(p->key, p->key_bytes);
    putchar(' ');
    hex(p->aggr, p->aggr_bytes);
    putchar('\n');
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: drive OBJECT IFNAME EPOCH_MS GRACE_MS KEY_BYTES AGGR_BYTES [MODE]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct xdp_loader_opts o = {
        .object_path = argv[1],
        .ifname = argv[2],
        .epoch_ns = strtoull(argv[3], NULL, 10) * 1000000ull,
        .grace_ns = strtoull(argv[4], NULL, 10) * 1000000ull,
        .key_bytes = strtoul(argv[5], NULL, 10),
        .aggr_bytes = strtoul(argv[6], NULL, 10),
        .mode = XDP_ATTACH_AUTO,
        .on_partial = print_partial,
    };
    if (argc > 7)
        o.mode = !strcmp(argv[7], "native") ? XDP_ATTACH_NATIVE
                 : !strcmp(argv[7], "generic") ? XDP_ATTACH_GENERIC
                                               : XDP_ATTACH_AUTO;
    char err[4096];
    struct xdp_loader *ld;
    if (xdp_loader_open(&o, &ld, err, sizeof err) != 0) {
        printf("error %s\n", err);
        return 1;
    }
    uint64_t bound;
    long long off = (long long)xdp_loader_wall_minus_mono_ns(ld, &bound);
    printf("ready %s %lld %llu\n", xdp_loader_mode(ld), off, (unsigned long long)bound);

    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        unsigned long long e;
        int n;
        if (!strncmp(line, "quit", 4)) {
            break;
        } else if (!strncmp(line, "now", 3)) {
            printf("now %llu\n", (unsigned long long)xdp_loader_epoch_now(ld));
        } else if (!strncmp(line, "poll", 4)) {
            if ((n = xdp_loader_poll(ld, 0, err, sizeof err)) < 0)
                printf("error %s\n", err);
            else
                printf("polled %d\n", n);
        } else if (sscanf(line, "drain %llu", &e) == 1) {
            if ((n = xdp_loader_drain(ld, e, err, sizeof err)) < 0)
                printf("error %s\n", err);
            else
                printf("drained %d\n", n);
        } else if (!strncmp(line, "stats", 5)) {
            struct xdp_cpu_state s;
            if (xdp_loader_stats(ld, &s, err, sizeof err) < 0)
                printf("error %s\n", err);
            else
                printf("stats %llu %llu %llu %llu %llu %llu\n", (unsigned long long)s.packets,
                       (unsigned long long)s.collisions, (unsigned long long)s.old_ejections,
                       (unsigned long long)s.bypassed, (unsigned long long)s.ring_lost,
                       (unsigned long long)s.busy);
        } else {
            printf("error unknown command: %s", line);
        }
    }
    xdp_loader_close(ld);
    return 0;
}
