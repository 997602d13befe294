/* xdp_loader.c -- see xdp_loader.h. */
#define _GNU_SOURCE
#include "xdp_loader.h"

#include <errno.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define LOG_BYTES (1 << 20) /* the verifier's log of a refused program */
#define LOG_TAIL 2000       /* how much of its end goes into an error */
#define BUSY_WAIT_NS 1000000000ull
/* finish: an invocation that fetched the program before the detach may
 * still begin after it (the kernel swaps the pointer without waiting for
 * its readers); NAPI runs it within microseconds, and this outlasts that by
 * far before the busy counters are waited out */
#define DETACH_SETTLE_NS 10000000ull

struct xdp_loader {
    struct bpf_object *obj;
    struct bpf_program *prog;
    struct ring_buffer *ring;
    int slots_fd, cpu_fd, ctl_fd;
    struct xdp_ctl *ctl; /* the mmapped xdp_ctl map */
    size_t ctl_len;
    int ifindex;
    unsigned attach_flags; /* 0 while not attached */
    int link_fd;           /* the bpf_link holding the attachment, -1 while none: the
                            * kernel detaches the program when it closes, so a run that
                            * dies (a crash, SIGKILL) leaves no program behind */
    const char *mode;
    size_t key_bytes, aggr_bytes;
    size_t slot_stride;       /* round_up(slot value size, 8): one CPU's slot */
    unsigned slots;           /* slots of one parity's table */
    unsigned ncpus;           /* libbpf_num_possible_cpus() */
    unsigned char *zero_buf;  /* batch * ncpus * slot_stride, zeros */
    struct xdp_cpu_state *cpu_buf; /* ncpus */
    uint64_t epoch_ns, grace_ns;
    uint64_t first_epoch;     /* the first epoch whose table was opened (open's now) */
    unsigned batch;           /* slots a drain reads (and zeroes) per system call */
    uint32_t *batch_keys;     /* batch of them */
    unsigned char *batch_vals; /* batch * ncpus * slot_stride */
    int64_t wall_minus_mono_ns;
    uint64_t offset_error_ns;
    xdp_partial_fn on_partial;
    void *arg;
    int cb_failed;   /* a callback returned < 0 during the current call */
    unsigned delivered;
    char *log;       /* the verifier's log buffer */
    char *ifname;
    char *objname;   /* the object's name in errors: its path, or its name in memory */
};

/* libbpf's own messages: its warnings would repeat, less precisely, what
 * the loader's error says (and name causes that are not this one's, such
 * as RLIMIT_MEMLOCK on a kernel that has not needed it since 5.11); shown
 * only with GSQLC_XDP_DEBUG set.  libbpf's printer is one per process. */
static int libbpf_messages(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    (void)level;
    if (!getenv("GSQLC_XDP_DEBUG"))
        return 0;
    return vfprintf(stderr, fmt, ap);
}

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* strerror of a libbpf result (a negative errno), with what is usually the cause */
static const char *why(int rc, char *buf, size_t len)
{
    int e = rc < 0 ? -rc : rc;
    const char *hint = "";
    if (e == EPERM || e == EACCES)
        hint = " (needs root or CAP_BPF + CAP_NET_ADMIN)";
    char msg[96];
    if (e >= __LIBBPF_ERRNO__START && libbpf_strerror(-e, msg, sizeof msg) == 0)
        snprintf(buf, len, "%s%s", msg, hint); /* libbpf's own codes: not an ELF object, ... */
    else
        snprintf(buf, len, "%s%s", strerror(e), hint);
    return buf;
}

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* wall - monotonic as the midpoint of two CLOCK_REALTIME reads around a
 * CLOCK_MONOTONIC read; the tightest of a few tries */
static void measure_offset(int64_t *off, uint64_t *bound)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 8; i++) {
        uint64_t r1 = clock_ns(CLOCK_REALTIME);
        uint64_t m = clock_ns(CLOCK_MONOTONIC);
        uint64_t r2 = clock_ns(CLOCK_REALTIME);
        if (r2 < r1)
            continue; /* the wall clock stepped back between the reads */
        if (r2 - r1 < best) {
            best = r2 - r1;
            *off = (int64_t)(r1 + (r2 - r1) / 2) - (int64_t)m;
        }
    }
    *bound = (best + 1) / 2;
}

static int deliver(struct xdp_loader *ld, const struct xdp_partial *p)
{
    ld->delivered++;
    if (ld->on_partial && ld->on_partial(ld->arg, p) < 0)
        ld->cb_failed = 1;
    return 0;
}

static int on_ring(void *ctx, void *data, size_t size)
{
    struct xdp_loader *ld = ctx;
    const struct xdp_rec_hdr *h = data;
    if (size < sizeof(*h) || h->key_bytes != ld->key_bytes || h->aggr_bytes != ld->aggr_bytes ||
        size < sizeof(*h) + h->key_bytes + h->aggr_bytes) {
        ld->cb_failed = 2; /* a record not of this program's layout */
        return 0;
    }
    const unsigned char *b = data;
    struct xdp_partial p = {h->kind, h->cpu, h->epoch, b + sizeof(*h), h->key_bytes,
                            b + sizeof(*h) + h->key_bytes, h->aggr_bytes};
    return deliver(ld, &p);
}

static int find_map(struct xdp_loader *ld, const char *name, char *err, size_t errlen)
{
    struct bpf_map *m = bpf_object__find_map_by_name(ld->obj, name);
    if (!m) {
        fail(err, errlen, "BPF object %s: no map %s (is it built on xdp_table.h?)",
             bpf_object__name(ld->obj), name);
        return -1;
    }
    return bpf_map__fd(m);
}

/* the verifier's last lines, from the start of a line */
static const char *log_tail(const char *log)
{
    size_t n = strlen(log);
    while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' '))
        n--;
    if (n <= LOG_TAIL)
        return log;
    const char *t = log + n - LOG_TAIL;
    const char *nl = strchr(t, '\n');
    return nl ? nl + 1 : t;
}

/* Attaches through a bpf_link in mode `flags`: 0, or a negative errno. */
static int link_xdp(struct xdp_loader *ld, unsigned flags)
{
    LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = flags);
    int fd = bpf_link_create(bpf_program__fd(ld->prog), ld->ifindex, BPF_XDP, &lo);
    if (fd < 0)
        return fd < -1 ? fd : -errno;
    ld->link_fd = fd;
    ld->attach_flags = flags;
    return 0;
}

/* Closes the link: the program leaves the interface.  0, or a negative errno. */
static int unlink_xdp(struct xdp_loader *ld)
{
    int rc = 0;
    if (ld->link_fd >= 0 && close(ld->link_fd) != 0)
        rc = -errno;
    ld->link_fd = -1;
    ld->attach_flags = 0;
    return rc;
}

static int attach(struct xdp_loader *ld, enum xdp_attach_mode mode, char *err, size_t errlen)
{
    char b1[128], b2[128];
    int rc_native = 0, rc;
    if (mode != XDP_ATTACH_GENERIC) {
        rc = link_xdp(ld, XDP_FLAGS_DRV_MODE);
        if (rc == 0) {
            ld->mode = "native";
            return 0;
        }
        if (rc == -EBUSY || rc == -EEXIST) {
            fail(err, errlen, "attaching to interface %s: it already has an XDP program", ld->ifname);
            return -1;
        }
        if (mode == XDP_ATTACH_NATIVE) {
            fail(err, errlen, "attaching to interface %s in native (driver) mode: %s", ld->ifname,
                 why(rc, b1, sizeof b1));
            return -1;
        }
        rc_native = rc;
    }
    rc = link_xdp(ld, XDP_FLAGS_SKB_MODE);
    if (rc == 0) {
        ld->mode = "generic";
        return 0;
    }
    if (rc == -EBUSY || rc == -EEXIST)
        fail(err, errlen, "attaching to interface %s: it already has an XDP program", ld->ifname);
    else if (rc_native)
        fail(err, errlen, "attaching to interface %s: native (driver) mode: %s; generic (SKB) mode: %s",
             ld->ifname, why(rc_native, b1, sizeof b1), why(rc, b2, sizeof b2));
    else
        fail(err, errlen, "attaching to interface %s in generic (SKB) mode: %s", ld->ifname,
             why(rc, b1, sizeof b1));
    return -1;
}

int xdp_loader_open(const struct xdp_loader_opts *o, struct xdp_loader **out, char *err, size_t errlen)
{
    char b[128];
    int rc;
    *out = NULL;
    int in_mem = o->object_mem != NULL;
    if ((in_mem ? o->object_len == 0 : !o->object_path) || !o->ifname || o->epoch_ns == 0 ||
        o->key_bytes % 8 || o->aggr_bytes % 8 || o->grace_ns >= o->epoch_ns) {
        fail(err, errlen, "xdp loader options: an object (path, or bytes), an interface, an epoch length, "
                          "a grace period shorter than it and key and aggregate sizes in 8-byte words "
                          "are needed");
        return -1;
    }
    libbpf_set_print(libbpf_messages);
    struct xdp_loader *ld = calloc(1, sizeof *ld);
    if (!ld) {
        fail(err, errlen, "out of memory");
        return -1;
    }
    ld->slots_fd = ld->cpu_fd = ld->ctl_fd = ld->link_fd = -1;
    ld->key_bytes = o->key_bytes;
    ld->aggr_bytes = o->aggr_bytes;
    ld->epoch_ns = o->epoch_ns;
    ld->grace_ns = o->grace_ns;
    ld->on_partial = o->on_partial;
    ld->arg = o->arg;
    ld->ifname = strdup(o->ifname);
    ld->objname = strdup(in_mem ? (o->program ? o->program : "xdp_object") : o->object_path);
    ld->log = calloc(1, LOG_BYTES);
    if (!ld->ifname || !ld->objname || !ld->log) {
        fail(err, errlen, "out of memory");
        goto bad;
    }
    ld->ifindex = (int)if_nametoindex(o->ifname);
    if (ld->ifindex == 0) {
        fail(err, errlen, "interface %s: %s", o->ifname,
             errno == ENODEV ? "no such interface" : strerror(errno));
        goto bad;
    }

    /* object_name: libbpf's name of an object read from memory (its own
     * messages and internal maps say it); a file's is its own */
    LIBBPF_OPTS(bpf_object_open_opts, oo, .kernel_log_buf = ld->log, .kernel_log_size = LOG_BYTES,
                .kernel_log_level = 0, .object_name = in_mem ? ld->objname : NULL);
    ld->obj = in_mem ? bpf_object__open_mem(o->object_mem, o->object_len, &oo)
                     : bpf_object__open_file(o->object_path, &oo);
    if (!ld->obj) {
        rc = -errno;
        ld->obj = NULL;
        fail(err, errlen, "opening BPF object %s%s: %s", ld->objname, in_mem ? " (in memory)" : "",
             why(rc, b, sizeof b));
        goto bad;
    }
    ld->prog = o->program ? bpf_object__find_program_by_name(ld->obj, o->program)
                          : bpf_object__next_program(ld->obj, NULL);
    if (!ld->prog) {
        fail(err, errlen, "BPF object %s: no program %s", ld->objname,
             o->program ? o->program : "at all");
        goto bad;
    }
    if (bpf_program__type(ld->prog) != BPF_PROG_TYPE_XDP) {
        fail(err, errlen, "BPF object %s: program %s is not an XDP program (SEC(\"xdp\"))",
             ld->objname, bpf_program__name(ld->prog));
        goto bad;
    }
    rc = bpf_object__load(ld->obj);
    if (rc) {
        const char *tail = log_tail(ld->log);
        /* an object in memory is named after its program: the name once */
        const char *of = in_mem ? "" : " of ", *obj = in_mem ? "" : ld->objname;
        if (*tail) /* the verifier refused it (EACCES, EINVAL): its reasons, not a permission */
            fail(err, errlen, "loading the XDP program %s%s%s: the verifier refused it (%s); its log ends:\n%s",
                 bpf_program__name(ld->prog), of, obj, strerror(rc < 0 ? -rc : rc), tail);
        else
            fail(err, errlen, "loading the XDP program %s%s%s: %s", bpf_program__name(ld->prog), of,
                 obj, why(rc, b, sizeof b));
        goto bad;
    }
    if ((ld->slots_fd = find_map(ld, "xdp_slots", err, errlen)) < 0 ||
        (ld->cpu_fd = find_map(ld, "xdp_cpu", err, errlen)) < 0 ||
        (ld->ctl_fd = find_map(ld, "xdp_ctl", err, errlen)) < 0 || find_map(ld, "xdp_ring", err, errlen) < 0)
        goto bad;

    struct bpf_map *slots = bpf_object__find_map_by_name(ld->obj, "xdp_slots");
    size_t vsize = bpf_map__value_size(slots);
    if (vsize != 8 + ld->key_bytes + ld->aggr_bytes) {
        fail(err, errlen, "BPF object %s: its slots are %zu bytes, not 8 + %zu of key + %zu of aggregates",
             ld->objname, vsize, ld->key_bytes, ld->aggr_bytes);
        goto bad;
    }
    ld->slot_stride = (vsize + 7) / 8 * 8;
    ld->slots = bpf_map__max_entries(slots) / 2;
    int ncpus = libbpf_num_possible_cpus();
    if (ncpus <= 0) {
        fail(err, errlen, "counting the possible CPUs: %s", why(ncpus, b, sizeof b));
        goto bad;
    }
    ld->ncpus = (unsigned)ncpus;
    /* a drain's batch: as many slots as fit 4 MiB over every CPU */
    ld->batch = (unsigned)((4u << 20) / ((size_t)ld->ncpus * ld->slot_stride));
    if (ld->batch < 1)
        ld->batch = 1;
    if (ld->batch > ld->slots)
        ld->batch = ld->slots;
    ld->batch_keys = calloc(ld->batch, sizeof *ld->batch_keys);
    ld->batch_vals = calloc((size_t)ld->batch * ld->ncpus, ld->slot_stride);
    ld->zero_buf = calloc((size_t)ld->batch * ld->ncpus, ld->slot_stride);
    ld->cpu_buf = calloc(ld->ncpus, sizeof *ld->cpu_buf);
    if (!ld->batch_keys || !ld->batch_vals || !ld->zero_buf || !ld->cpu_buf) {
        fail(err, errlen, "out of memory");
        goto bad;
    }

    long page = sysconf(_SC_PAGESIZE);
    ld->ctl_len = (sizeof(struct xdp_ctl) + (size_t)page - 1) / (size_t)page * (size_t)page;
    void *ctl = mmap(NULL, ld->ctl_len, PROT_READ | PROT_WRITE, MAP_SHARED, ld->ctl_fd, 0);
    if (ctl == MAP_FAILED) {
        fail(err, errlen, "mapping the map xdp_ctl: %s (is it BPF_F_MMAPABLE?)", strerror(errno));
        goto bad;
    }
    ld->ctl = ctl;

    measure_offset(&ld->wall_minus_mono_ns, &ld->offset_error_ns);
    ld->ctl->wall_minus_mono_ns = ld->wall_minus_mono_ns;
    ld->ctl->epoch_ns = ld->epoch_ns;
    ld->ctl->verdict = o->drop ? XDP_DROP : XDP_PASS;
    uint64_t now = xdp_loader_epoch_now(ld);
    ld->first_epoch = now;
    __atomic_store_n(&ld->ctl->owner[now & 1], XDP_OWN_OPEN(now), __ATOMIC_SEQ_CST);
    __atomic_store_n(&ld->ctl->owner[(now + 1) & 1], XDP_OWN_OPEN(now + 1), __ATOMIC_SEQ_CST);

    ld->ring = ring_buffer__new(bpf_map__fd(bpf_object__find_map_by_name(ld->obj, "xdp_ring")), on_ring,
                                ld, NULL);
    if (!ld->ring) {
        fail(err, errlen, "reading the ring buffer xdp_ring: %s", why(-errno, b, sizeof b));
        goto bad;
    }
    if (attach(ld, o->mode, err, errlen) != 0)
        goto bad;
    *out = ld;
    return 0;
bad:
    xdp_loader_close(ld);
    return -1;
}

void xdp_loader_close(struct xdp_loader *ld)
{
    if (!ld)
        return;
    unlink_xdp(ld);
    ring_buffer__free(ld->ring);
    if (ld->ctl)
        munmap(ld->ctl, ld->ctl_len);
    bpf_object__close(ld->obj);
    free(ld->batch_keys);
    free(ld->batch_vals);
    free(ld->zero_buf);
    free(ld->cpu_buf);
    free(ld->log);
    free(ld->ifname);
    free(ld->objname);
    free(ld);
}

const char *xdp_loader_mode(const struct xdp_loader *ld)
{
    return ld->mode;
}

int64_t xdp_loader_wall_minus_mono_ns(const struct xdp_loader *ld, uint64_t *error_bound_ns)
{
    if (error_bound_ns)
        *error_bound_ns = ld->offset_error_ns;
    return ld->wall_minus_mono_ns;
}

uint64_t xdp_loader_first_epoch(const struct xdp_loader *ld)
{
    return ld->first_epoch;
}

uint64_t xdp_loader_epoch_now(const struct xdp_loader *ld)
{
    return (clock_ns(CLOCK_MONOTONIC) + (uint64_t)ld->wall_minus_mono_ns) / ld->epoch_ns;
}

uint64_t xdp_loader_drainable_at(const struct xdp_loader *ld, uint64_t epoch)
{
    return (epoch + 1) * ld->epoch_ns - (uint64_t)ld->wall_minus_mono_ns + ld->grace_ns;
}

static int call_result(struct xdp_loader *ld, int rc, const char *what, char *err, size_t errlen)
{
    char b[128];
    if (rc < 0 && rc != -EINTR) {
        fail(err, errlen, "%s: %s", what, why(rc, b, sizeof b));
        return -1;
    }
    if (ld->cb_failed == 2) {
        fail(err, errlen, "%s: a ring record not of the program's key and aggregate sizes", what);
        return -1;
    }
    if (ld->cb_failed) {
        fail(err, errlen, "%s: the partials' consumer failed", what);
        return -1;
    }
    return 0;
}

int xdp_loader_poll(struct xdp_loader *ld, int timeout_ms, char *err, size_t errlen)
{
    ld->cb_failed = 0;
    ld->delivered = 0;
    int rc = timeout_ms == 0 ? ring_buffer__consume(ld->ring) : ring_buffer__poll(ld->ring, timeout_ms);
    if (call_result(ld, rc, "reading the ring buffer xdp_ring", err, errlen))
        return -1;
    return (int)ld->delivered;
}

/* step 2: every CPU found inside the program has left it */
static int wait_not_busy(struct xdp_loader *ld, char *err, size_t errlen)
{
    char b[128];
    uint32_t zero = 0;
    int rc = bpf_map_lookup_elem(ld->cpu_fd, &zero, ld->cpu_buf);
    if (rc) {
        fail(err, errlen, "reading the map xdp_cpu: %s", why(-errno, b, sizeof b));
        return -1;
    }
    uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + BUSY_WAIT_NS;
    for (unsigned c = 0; c < ld->ncpus; c++) {
        uint64_t was = ld->cpu_buf[c].busy;
        if (!(was & 1))
            continue;
        struct xdp_cpu_state *now = calloc(ld->ncpus, sizeof *now);
        if (!now) {
            fail(err, errlen, "out of memory");
            return -1;
        }
        for (;;) {
            if (bpf_map_lookup_elem(ld->cpu_fd, &zero, now)) {
                fail(err, errlen, "reading the map xdp_cpu: %s", why(-errno, b, sizeof b));
                free(now);
                return -1;
            }
            if (now[c].busy != was)
                break;
            if (clock_ns(CLOCK_MONOTONIC) > deadline) {
                fail(err, errlen, "draining: CPU %u stays inside the XDP program", c);
                free(now);
                return -1;
            }
        }
        free(now);
    }
    return 0;
}

static int read_table(struct xdp_loader *ld, unsigned p, uint64_t epoch, char *err, size_t errlen);

int xdp_loader_drain(struct xdp_loader *ld, uint64_t epoch, char *err, size_t errlen)
{
    unsigned p = (unsigned)(epoch & 1);
    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    uint64_t at = xdp_loader_drainable_at(ld, epoch);
    if (now < at) {
        fail(err, errlen, "epoch %llu is not over: it may be drained in %llu ms", (unsigned long long)epoch,
             (unsigned long long)((at - now + 999999) / 1000000));
        return -1;
    }
    ld->cb_failed = 0;
    ld->delivered = 0;
    uint64_t own = __atomic_load_n(&ld->ctl->owner[p], __ATOMIC_SEQ_CST);
    if (own != XDP_OWN_OPEN(epoch)) {
        uint64_t e = XDP_OWN_EPOCH(own);
        if (XDP_OWN_IS_DRAINING(own)) {
            fail(err, errlen, "epoch %llu: its table is being drained (a drain that failed?)",
                 (unsigned long long)e);
            return -1;
        }
        if (e < epoch) {
            fail(err, errlen, "epoch %llu: epoch %llu of the same table is not drained yet "
                              "(drain epochs in order)", (unsigned long long)epoch, (unsigned long long)e);
            return -1;
        }
        /* drained already, or never open: only the ring has its partials */
        int rc = ring_buffer__consume(ld->ring);
        return call_result(ld, rc, "reading the ring buffer xdp_ring", err, errlen) ? -1
                                                                                     : (int)ld->delivered;
    }
    /* 1: no packet may touch the table from now on */
    __atomic_store_n(&ld->ctl->owner[p], XDP_OWN_DRAINING(epoch), __ATOMIC_SEQ_CST);
    /* 2 */
    if (wait_not_busy(ld, err, errlen))
        return -1; /* left DRAINING: packets bypass the table, none is lost */
    /* 3 */
    if (read_table(ld, p, epoch, err, errlen))
        return -1;
    /* 4: open the table to the next epoch of its parity that has not ended */
    uint64_t next = epoch + 2, cur = xdp_loader_epoch_now(ld);
    if (cur > next)
        next = (cur & 1) == p ? cur : cur + 1;
    __atomic_store_n(&ld->ctl->owner[p], XDP_OWN_OPEN(next), __ATOMIC_SEQ_CST);

    int rc = ring_buffer__consume(ld->ring);
    if (call_result(ld, rc, "reading the ring buffer xdp_ring", err, errlen))
        return -1;
    return (int)ld->delivered;
}

/* step 3 of a drain of `epoch`, table p (DRAINING, no CPU inside): hands on
 * every CPU's slots and zeroes them */
static int read_table(struct xdp_loader *ld, unsigned p, uint64_t epoch, char *err, size_t errlen)
{
    char b[128];
    /* a batch of slots per system call (BPF_MAP_LOOKUP_BATCH, from the key
     * after in_batch), then the batch zeroed (BPF_MAP_UPDATE_BATCH) */
    LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);
    for (unsigned done = 0; done < ld->slots;) {
        uint32_t prev = p * ld->slots + done - 1, out = 0;
        __u32 n = ld->slots - done < ld->batch ? ld->slots - done : ld->batch;
        int rc = bpf_map_lookup_batch(ld->slots_fd, p * ld->slots + done ? &prev : NULL, &out,
                                      ld->batch_keys, ld->batch_vals, &n, &opts);
        if (rc && rc != -ENOENT) {
            fail(err, errlen, "reading the map xdp_slots: %s", why(rc, b, sizeof b));
            return -1;
        }
        if (n == 0) {
            fail(err, errlen, "reading the map xdp_slots: no slot after %u", (unsigned)prev);
            return -1;
        }
        for (__u32 k = 0; k < n; k++)
            for (unsigned c = 0; c < ld->ncpus; c++) {
                const unsigned char *s =
                    ld->batch_vals + ((size_t)k * ld->ncpus + c) * ld->slot_stride;
                uint64_t epoch1;
                memcpy(&epoch1, s, 8);
                if (epoch1 == 0)
                    continue;
                struct xdp_partial part = {epoch1 == epoch + 1 ? XDP_REC_DRAIN : XDP_REC_OLD, c,
                                           epoch1 - 1, s + 8, ld->key_bytes,
                                           s + 8 + ld->key_bytes, ld->aggr_bytes};
                deliver(ld, &part);
            }
        __u32 m = n;
        rc = bpf_map_update_batch(ld->slots_fd, ld->batch_keys, ld->zero_buf, &m, &opts);
        if (rc || m != n) {
            fail(err, errlen, "zeroing the map xdp_slots: %s", why(rc ? rc : -EIO, b, sizeof b));
            return -1;
        }
        done += n;
    }
    return 0;
}

int xdp_loader_finish(struct xdp_loader *ld, char *err, size_t errlen)
{
    char b[128];
    if (ld->link_fd >= 0) {
        int rc = unlink_xdp(ld);
        if (rc) {
            fail(err, errlen, "detaching the XDP program from interface %s: %s", ld->ifname,
                 why(rc, b, sizeof b));
            return -1;
        }
        struct timespec settle = {0, (long)DETACH_SETTLE_NS};
        nanosleep(&settle, NULL);
    }
    ld->cb_failed = 0;
    ld->delivered = 0;
    /* steps 1 and 2 for both tables at once, then 3 for each, the earlier
     * epoch first; no step 4: no packet comes any more */
    uint64_t own[2];
    int open[2];
    for (unsigned p = 0; p < 2; p++) {
        own[p] = __atomic_load_n(&ld->ctl->owner[p], __ATOMIC_SEQ_CST);
        open[p] = own[p] != 0 && !XDP_OWN_IS_DRAINING(own[p]);
        if (open[p])
            __atomic_store_n(&ld->ctl->owner[p], XDP_OWN_DRAINING(XDP_OWN_EPOCH(own[p])),
                             __ATOMIC_SEQ_CST);
    }
    if ((open[0] || open[1]) && wait_not_busy(ld, err, errlen))
        return -1;
    unsigned first = open[1] && (!open[0] || XDP_OWN_EPOCH(own[1]) < XDP_OWN_EPOCH(own[0]));
    for (unsigned k = 0; k < 2; k++) {
        unsigned p = k ? !first : first;
        if (open[p] && read_table(ld, p, XDP_OWN_EPOCH(own[p]), err, errlen))
            return -1;
    }
    int rc = ring_buffer__consume(ld->ring);
    if (call_result(ld, rc, "reading the ring buffer xdp_ring", err, errlen))
        return -1;
    return (int)ld->delivered;
}

int xdp_loader_epoll_fd(const struct xdp_loader *ld)
{
    return ring_buffer__epoll_fd(ld->ring);
}

int xdp_loader_stats(const struct xdp_loader *ld, struct xdp_cpu_state *sum, char *err, size_t errlen)
{
    char b[128];
    uint32_t zero = 0;
    memset(sum, 0, sizeof *sum);
    if (bpf_map_lookup_elem(ld->cpu_fd, &zero, ld->cpu_buf)) {
        fail(err, errlen, "reading the map xdp_cpu: %s", why(-errno, b, sizeof b));
        return -1;
    }
    for (unsigned c = 0; c < ld->ncpus; c++) {
        const struct xdp_cpu_state *s = &ld->cpu_buf[c];
        sum->busy += s->busy & 1;
        sum->packets += s->packets;
        sum->collisions += s->collisions;
        sum->old_ejections += s->old_ejections;
        sum->bypassed += s->bypassed;
        sum->ring_lost += s->ring_lost;
    }
    return 0;
}
