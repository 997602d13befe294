/* sender: Ethernet/IPv4/UDP frames written on an interface through an
 * AF_PACKET socket with sendmmsg(2), at a fixed rate or as fast as it goes,
 * for the live benchmark (live_bench.py).
 *
 *   sender IFACE FRAMES [--rate R] [--flows F] [--ports P] [--batch B]
 *          [--payload BYTES] [--watch PID]...
 *
 * Frame k belongs to flow k % F: source 10.0.0.0 + f, destination
 * 10.128.0.0 + (f * 40503) % 2^16 (F distinct pairs, F at most 2^20), UDP source port
 * 1024 + f % 50000, destination port 60000 + k % P.  IPv4 header checksums
 * are right.  All F frames are built before the first is sent; sending
 * only points iovecs at them.
 *
 * Pacing: frame k is not sent before t0 + k / R (monotonic clock); a batch
 * goes out when its first frame is due, so at R the frames leave in bursts
 * of B at most.  Every frame sendmmsg refuses (ENOBUFS, EAGAIN) is sent
 * again: FRAMES frames leave, exactly.
 *
 * --watch PID (repeatable): the CPU time (user + system, all threads,
 * fields 14 and 15 of /proc/PID/stat) each watched process used from just
 * before the first frame to one second after the last, as the benchmark's
 * CPU per frame is defined.
 *
 * Alongside, the same interval's nanoseconds on a CPU summed over the
 * process's threads from /proc/PID/task/TID/schedstat, which resolves what
 * the 10 ms ticks of /proc/PID/stat cannot on short runs.
 *
 * Prints one JSON object: frames, seconds (first to last frame), rate
 * reached, sendmmsg calls and retries, and per watched PID its CPU time
 * both ways (stat_s, sched_ns).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_WATCH 8
#define MAX_BATCH 1024
#define HDR_LEN (14 + 20 + 8)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* User + system seconds of process pid, all its threads; -1 if unreadable. */
static double cpu_seconds(long pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* The command name (field 2) may hold spaces: count fields after ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    unsigned long long utime = 0, stime = 0;
    int field = 2;
    for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " ")) {
        field++;
        if (field == 14)
            utime = strtoull(tok, NULL, 10);
        else if (field == 15) {
            stime = strtoull(tok, NULL, 10);
            break;
        }
    }
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* Nanoseconds on a CPU of process pid's live threads (the first field of
 * each /proc/PID/task/TID/schedstat): the same time as cpu_seconds at the
 * scheduler's resolution rather than the tick's; -1 if unreadable. */
static double cpu_ns(long pid)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%ld/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    double total = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%ld/task/%.20s/schedstat", pid, e->d_name);
        FILE *f = fopen(path, "r");
        unsigned long long ns = 0;
        if (f) {
            if (fscanf(f, "%llu", &ns) != 1)
                ns = 0;
            fclose(f);
        }
        total += (double)ns;
    }
    closedir(d);
    return total;
}

static uint16_t ip_checksum(const uint8_t *h, size_t len)
{
    uint32_t s = 0;
    for (size_t i = 0; i + 1 < len; i += 2)
        s += (uint32_t)h[i] << 8 | h[i + 1];
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

/* Frame of flow f with destination port port into out (HDR_LEN + payload). */
static void build_frame(uint8_t *out, uint32_t f, uint16_t port, size_t payload)
{
    static const uint8_t macs[12] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
    memcpy(out, macs, 12);
    out[12] = 0x08;
    out[13] = 0x00;
    uint8_t *ip = out + 14;
    uint16_t total = (uint16_t)(20 + 8 + payload);
    uint32_t src = (10u << 24) + f;
    uint32_t dst = (10u << 24) + (128u << 16) + ((f * 40503u) & 0xffff);
    ip[0] = 0x45;
    ip[1] = 0;
    ip[2] = (uint8_t)(total >> 8);
    ip[3] = (uint8_t)total;
    ip[4] = (uint8_t)(f >> 8);
    ip[5] = (uint8_t)f;
    ip[6] = ip[7] = 0;
    ip[8] = 64;
    ip[9] = 17;
    ip[10] = ip[11] = 0;
    for (int i = 0; i < 4; i++) {
        ip[12 + i] = (uint8_t)(src >> (24 - 8 * i));
        ip[16 + i] = (uint8_t)(dst >> (24 - 8 * i));
    }
    uint16_t c = ip_checksum(ip, 20);
    ip[10] = (uint8_t)(c >> 8);
    ip[11] = (uint8_t)c;
    uint8_t *udp = ip + 20;
    uint16_t sport = (uint16_t)(1024 + f % 50000);
    uint16_t ulen = (uint16_t)(8 + payload);
    udp[0] = (uint8_t)(sport >> 8);
    udp[1] = (uint8_t)sport;
    udp[2] = (uint8_t)(port >> 8);
    udp[3] = (uint8_t)port;
    udp[4] = (uint8_t)(ulen >> 8);
    udp[5] = (uint8_t)ulen;
    udp[6] = udp[7] = 0;  /* no UDP checksum */
    memset(udp + 8, 'x', payload);
}

static void usage(void)
{
    fprintf(stderr, "usage: sender IFACE FRAMES [--rate R] [--flows F] [--ports P] "
                    "[--batch B] [--payload BYTES] [--watch PID]...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        usage();
    const char *iface = argv[1];
    unsigned long long frames = strtoull(argv[2], NULL, 10);
    double rate = 0;
    unsigned long flows = 1024, ports = 16, batch = 64, payload = 18;
    long watch[MAX_WATCH];
    int n_watch = 0;
    for (int i = 3; i < argc; i++) {
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (!strcmp(argv[i - 1], "--rate"))
            rate = strtod(v, NULL);
        else if (!strcmp(argv[i - 1], "--flows"))
            flows = strtoul(v, NULL, 10);
        else if (!strcmp(argv[i - 1], "--ports"))
            ports = strtoul(v, NULL, 10);
        else if (!strcmp(argv[i - 1], "--batch"))
            batch = strtoul(v, NULL, 10);
        else if (!strcmp(argv[i - 1], "--payload"))
            payload = strtoul(v, NULL, 10);
        else if (!strcmp(argv[i - 1], "--watch") && n_watch < MAX_WATCH)
            watch[n_watch++] = strtol(v, NULL, 10);
        else
            usage();
    }
    if (!frames || !flows || flows > (1u << 20) || !ports || ports > 5000 || !batch ||
        batch > MAX_BATCH || payload > 1400)
        usage();

    int fd = socket(AF_PACKET, SOCK_RAW, 0);  /* protocol 0: send only */
    if (fd < 0) {
        perror("socket(AF_PACKET)");
        return 1;
    }
    int one = 1;
    /* Straight to the driver: the frames are the benchmark's, no qdisc. */
    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
    struct sockaddr_ll to = {.sll_family = AF_PACKET, .sll_ifindex = (int)if_nametoindex(iface),
                             .sll_halen = 6};
    if (!to.sll_ifindex) {
        fprintf(stderr, "sender: no interface %s\n", iface);
        return 1;
    }
    memcpy(to.sll_addr, "\x02\0\0\0\0\x02", 6);

    /* One frame per (flow, port) pair the cycle meets: frame k is
     * (k % flows, k % ports), which repeats every lcm(flows, ports). */
    unsigned long a = flows, b = ports;
    while (b) {
        unsigned long t = a % b;
        a = b;
        b = t;
    }
    unsigned long cycle = flows / a * ports;
    size_t flen = HDR_LEN + payload;
    uint8_t *buf = malloc(cycle * flen);
    struct mmsghdr *msgs = calloc(batch, sizeof *msgs);
    struct iovec *iov = calloc(batch, sizeof *iov);
    if (!buf || !msgs || !iov) {
        fprintf(stderr, "sender: out of memory for %lu frames\n", cycle);
        return 1;
    }
    for (unsigned long k = 0; k < cycle; k++)
        build_frame(buf + k * flen, (uint32_t)(k % flows), (uint16_t)(60000 + k % ports),
                    payload);
    for (unsigned long i = 0; i < batch; i++) {
        iov[i].iov_len = flen;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &to;
        msgs[i].msg_hdr.msg_namelen = sizeof to;
    }

    double cpu0[MAX_WATCH], ns0[MAX_WATCH];
    for (int w = 0; w < n_watch; w++) {
        cpu0[w] = cpu_seconds(watch[w]);
        ns0[w] = cpu_ns(watch[w]);
    }
    unsigned long long sent = 0, calls = 0, retries = 0;
    double t0 = now_s();
    while (sent < frames) {
        if (rate > 0) {
            double due = t0 + (double)sent / rate;
            double wait = due - now_s();
            if (wait > 200e-6) {
                struct timespec ts = {0, (long)((wait - 100e-6) * 1e9)};
                nanosleep(&ts, NULL);
            }
            while (now_s() < due)
                ;
        }
        unsigned long n = batch;
        if (frames - sent < n)
            n = (unsigned long)(frames - sent);
        for (unsigned long i = 0; i < n; i++)
            iov[i].iov_base = buf + ((sent + i) % cycle) * flen;
        int r = sendmmsg(fd, msgs, (unsigned)n, 0);
        calls++;
        if (r < 0) {
            if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) {
                retries++;
                continue;
            }
            perror("sendmmsg");
            return 1;
        }
        if ((unsigned long)r < n)
            retries++;
        sent += (unsigned long long)r;
    }
    double t1 = now_s();
    if (n_watch) {
        struct timespec one_s = {1, 0};
        nanosleep(&one_s, NULL);
    }
    printf("{\"frames\": %llu, \"frame_bytes\": %zu, \"seconds\": %.6f, \"rate\": %.1f, "
           "\"asked_rate\": %.1f, \"calls\": %llu, \"retries\": %llu, \"cpu\": {",
           sent, flen, t1 - t0, (double)sent / (t1 - t0 > 0 ? t1 - t0 : 1e-9), rate, calls,
           retries);
    for (int w = 0; w < n_watch; w++)
        printf("%s\"%ld\": {\"stat_s\": %.3f, \"sched_ns\": %.0f}", w ? ", " : "", watch[w],
               cpu0[w] < 0 ? -1.0 : cpu_seconds(watch[w]) - cpu0[w],
               ns0[w] < 0 ? -1.0 : cpu_ns(watch[w]) - ns0[w]);
    printf("}}\n");
    free(buf);
    free(msgs);
    free(iov);
    close(fd);
    return 0;
}
