/* drive.c -- the XDP blocks' test driver: opens an xdp_loader on a BPF object
 * and an interface, then answers commands read from stdin, one a line:
 *
 *   now        -> "now EPOCH"            the epoch the program stamps now
 *   poll       -> rec lines, "polled N"  what the ring holds
 *   drain E    -> rec lines, "drained N" epoch E's table, then the ring
 *   stats      -> "stats PACKETS COLLISIONS OLD BYPASSED RING_LOST BUSY"
 *   finish     -> rec lines, "finished N NOW": detached, every open table
 *                 and the ring handed on; NOW is the epoch after it
 *   ready      -> "readable 0|1"        whether the ring's epoll fd is
 *   quit       (or end of input) detaches and exits 0
 *
 * A partial is "rec KIND EPOCH CPU KEYHEX AGGRHEX"; a failed command prints
 * "error MESSAGE" and the driver goes on.  Usage:
 *
 *   drive [--mem] [--drop] OBJECT IFNAME EPOCH_MS GRACE_MS KEY_BYTES AGGR_BYTES
 *         [auto|native|generic]
 *
 * --mem reads OBJECT into memory and opens it from there (object_mem);
 * --drop sets the verdict XDP_DROP.
 * prints "ready MODE WALL_MINUS_MONO_NS ERROR_BOUND_NS", or "error MESSAGE"
 * on stdout and exits 1 when the open fails. */
#define _POSIX_C_SOURCE 200809L
#include <poll.h>
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

/* the whole file at path, *len bytes (NULL: unreadable) */
static void *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            char *nb = realloc(buf, cap = cap ? cap * 2 : 65536);
            if (!nb)
                break;
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    int mem = 0, drop = 0;
    while (argc > 1 && !strncmp(argv[1], "--", 2)) {
        mem |= !strcmp(argv[1], "--mem");
        drop |= !strcmp(argv[1], "--drop");
        argv++;
        argc--;
    }
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
        .drop = drop,
        .on_partial = print_partial,
    };
    void *image = NULL;
    if (mem) {
        image = slurp(argv[1], &o.object_len);
        if (!image) {
            printf("error cannot read %s\n", argv[1]);
            return 1;
        }
        o.object_mem = image;
        o.object_path = NULL; /* named "xdp_object" in errors: no program name given */
    }
    if (argc > 7)
        o.mode = !strcmp(argv[7], "native") ? XDP_ATTACH_NATIVE
                 : !strcmp(argv[7], "generic") ? XDP_ATTACH_GENERIC
                                               : XDP_ATTACH_AUTO;
    char err[4096];
    struct xdp_loader *ld;
    int rc = xdp_loader_open(&o, &ld, err, sizeof err);
    free(image); /* read during open only */
    if (rc != 0) {
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
        } else if (!strncmp(line, "finish", 6)) {
            if ((n = xdp_loader_finish(ld, err, sizeof err)) < 0)
                printf("error %s\n", err);
            else
                printf("finished %d %llu\n", n, (unsigned long long)xdp_loader_epoch_now(ld));
        } else if (!strncmp(line, "ready", 5)) {
            struct pollfd pfd = {.fd = xdp_loader_epoll_fd(ld), .events = POLLIN, .revents = 0};
            printf("readable %d\n", poll(&pfd, 1, 0) > 0);
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
