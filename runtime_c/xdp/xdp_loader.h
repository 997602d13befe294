/* xdp_loader.h -- user space of an aggregating LFTA run in the XDP hook.
 *
 * Loads a BPF object built on xdp_table.h (clang -target bpf), measures and
 * sets the clock offset, attaches the program to an interface, and hands
 * every partial aggregate it gets -- ejected or bypassed by the program
 * through the ring buffer, or drained from an epoch's table -- to one
 * callback.  The protocol (slots, ownership of each parity's table, ring
 * records) is xdp_table.h's; this file follows its user-space half.
 *
 * OWNERSHIP
 *   xdp_loader_open returns a loader the caller owns and frees with
 *   xdp_loader_close, which detaches the program from the interface (unless
 *   xdp_loader_finish did) and frees the BPF object, maps and ring reader; a
 *   failed open has detached and freed whatever it had made.  The loader
 *   copies nothing of the options but the strings it needs (object path or
 *   name, interface name); an object given in memory (object_mem) is read
 *   during open only.  A partial handed to the callback points into memory
 *   the loader owns, valid during the call only.  Errors are written to the
 *   caller's buffer (err, errlen), a sentence naming what is missing or
 *   refused.  The program is attached through a bpf_link the loader holds
 *   open: should the process die without closing it (a crash, SIGKILL),
 *   the kernel closes the link and the program leaves the interface.
 *
 * INVARIANTS
 *   One loader per attached program; one thread uses it at a time (calls are
 *   not synchronised).  The clock offset is set once, before the program is
 *   attached.  Epochs of one parity are drained in order; an epoch may be
 *   drained once the clock is past its end plus the grace period, and
 *   should be before the epoch two after it begins -- if it is not, the
 *   program bypasses that epoch's packets to the ring until it is, and
 *   every packet is still counted exactly once.  xdp_loader_finish ends
 *   the run: once it returns no program runs and every partial has been
 *   handed on; only close, stats and the clock functions may follow.
 *
 * Build: C11, with libbpf: cc -std=c11 ... xdp_loader.c -lbpf -lelf -lz
 */
#ifndef GSQLC_XDP_LOADER_H
#define GSQLC_XDP_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "xdp_table.h"

struct xdp_loader;

/* One partial aggregate: kind is XDP_REC_* of xdp_table.h. */
struct xdp_partial {
    unsigned kind;
    unsigned cpu;
    uint64_t epoch;
    const void *key;
    size_t key_bytes;
    const void *aggr;
    size_t aggr_bytes;
};

/* Returns 0, or a negative value that is reported as the call's failure
 * (the remaining partials of that call are still read and handed on). */
typedef int (*xdp_partial_fn)(void *arg, const struct xdp_partial *p);

enum xdp_attach_mode {
    XDP_ATTACH_AUTO,    /* native (driver) mode, else generic (SKB) mode */
    XDP_ATTACH_NATIVE,  /* native only */
    XDP_ATTACH_GENERIC, /* generic only */
};

struct xdp_loader_opts {
    const char *object_path; /* the BPF object (ELF) file; unused with object_mem */
    const void *object_mem;  /* or the object's bytes (NULL: object_path's) */
    size_t object_len;       /*   object_len of them; named in errors and by libbpf
                              *   as the program (or "xdp_object") */
    const char *ifname;      /* the interface to attach to */
    const char *program;     /* the XDP program's name; NULL: the object's first */
    size_t key_bytes;        /* sizeof(struct xdp_key) of the program */
    size_t aggr_bytes;       /* sizeof(struct xdp_aggr) of the program */
    uint64_t epoch_ns;       /* epoch length */
    uint64_t grace_ns;       /* how long past an epoch's end before it may be drained */
    enum xdp_attach_mode mode;
    int drop;                /* 1: every frame is dropped (XDP_DROP) once seen, for an
                              * interface dedicated to monitoring; 0: passed on */
    xdp_partial_fn on_partial;
    void *arg; /* on_partial's first argument */
};

/* Opens, loads and attaches.  0 and *out set, or -1 and err written. */
int xdp_loader_open(const struct xdp_loader_opts *o, struct xdp_loader **out, char *err, size_t errlen);

/* Detaches the program and frees everything; NULL is a no-op. */
void xdp_loader_close(struct xdp_loader *ld);

/* "native" or "generic": the mode the program was attached in. */
const char *xdp_loader_mode(const struct xdp_loader *ld);

/* The clock offset set in the program (wall = monotonic + offset), and its
 * error bound: half the gap between the two CLOCK_REALTIME reads around the
 * CLOCK_MONOTONIC read it was measured from. */
int64_t xdp_loader_wall_minus_mono_ns(const struct xdp_loader *ld, uint64_t *error_bound_ns);

/* The first epoch whose table open opened: the first to drain (earlier
 * ones have no packet). */
uint64_t xdp_loader_first_epoch(const struct xdp_loader *ld);

/* The epoch the program stamps a packet with now. */
uint64_t xdp_loader_epoch_now(const struct xdp_loader *ld);

/* The CLOCK_MONOTONIC time (ns) from which `epoch` may be drained: its end
 * plus the grace period. */
uint64_t xdp_loader_drainable_at(const struct xdp_loader *ld, uint64_t epoch);

/* Hands on the ring's records, waiting up to timeout_ms (0: what is there,
 * -1: until one comes).  The number handed on, or -1 and err written. */
int xdp_loader_poll(struct xdp_loader *ld, int timeout_ms, char *err, size_t errlen);

/* Drains `epoch`'s table over all CPUs (xdp_table.h's steps 1-4), then
 * hands on what the ring holds.  The number of partials handed on (0 if the
 * epoch's table was never open: its packets all went through the ring), or
 * -1 and err written: too early, an earlier epoch of the same parity not
 * drained, a CPU that never leaves the program, a map call refused. */
int xdp_loader_drain(struct xdp_loader *ld, uint64_t epoch, char *err, size_t errlen);

/* The end of a run: detaches the program (no frame reaches it from then on)
 * and waits until no CPU is still inside it, then drains every table still
 * open -- whatever the clock: its epoch need not have ended -- and hands on
 * what the ring holds.  The number of partials handed on, or -1 and err
 * written (a drain step refused; the program is detached whatever happens).
 * Once it returned, every partial of every epoch up to
 * xdp_loader_epoch_now() has been handed on and none will come: a caller
 * emits its last heartbeat for epoch_now() + 1.  A second call (or one
 * after a failed one) hands on what is left, if anything; close does not
 * detach again. */
int xdp_loader_finish(struct xdp_loader *ld, char *err, size_t errlen);

/* The ring buffer's epoll descriptor: readable while partials wait in the
 * ring (poll or drain hands them on).  Owned by the loader. */
int xdp_loader_epoll_fd(const struct xdp_loader *ld);

/* The program's counters summed over CPUs (busy is the sum's parity only). */
int xdp_loader_stats(const struct xdp_loader *ld, struct xdp_cpu_state *sum, char *err, size_t errlen);

#endif /* GSQLC_XDP_LOADER_H */
