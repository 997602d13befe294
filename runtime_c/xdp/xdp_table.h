/* xdp_table.h -- the protocol between an aggregating LFTA run in the kernel's
 * XDP hook (a BPF program) and the user space that loads it (xdp_loader.c).
 *
 * Included by both sides.  A BPF program (clang -target bpf -mcpu=v3) first
 * defines
 *
 *     struct xdp_key  { ... };   the group's key,        a multiple of 8 bytes
 *     struct xdp_aggr { ... };   the group's aggregates, a multiple of 8 bytes
 *     #define XDP_SLOTS 64       slots of one epoch's table, a power of 2
 *
 * then includes this file, which defines the maps (xdp_slots, xdp_ring,
 * xdp_ctl, xdp_cpu) and the inline functions of the protocol.  User space
 * includes it without those definitions and gets the shared layouts alone;
 * the loader learns the key and aggregate sizes from its caller and checks
 * them against the table's value size.
 *
 * MAPS
 *   xdp_slots  PERCPU_ARRAY, 2 * XDP_SLOTS entries of struct xdp_slot: two
 *              direct-mapped tables, one per epoch parity; slot i of the
 *              table of parity p is entry p * XDP_SLOTS + i.  Per CPU, so
 *              no two CPUs ever write the same memory.
 *   xdp_ring   RINGBUF: records (struct xdp_rec_hdr, key, aggregates) of
 *              partial aggregates the program emits itself.
 *   xdp_ctl    ARRAY (mmapable), one struct xdp_ctl shared by every CPU and
 *              user space: the clock offset, the epoch length, the owner
 *              word of each parity's table and the verdict on every frame.
 *   xdp_cpu    PERCPU_ARRAY, one struct xdp_cpu_state per CPU: the busy
 *              counter and the counts of what the program did.
 *
 * SLOT
 *   epoch1 is 0 for an empty slot, else the slot's epoch + 1.  A slot of the
 *   table of parity p only ever holds a group of the epoch that owner[p]
 *   names (see below), so a slot of another epoch is only met if user space
 *   broke the rules; the program then ejects it like a collision.
 *
 * CLOCK
 *   A packet's time is bpf_ktime_get_ns() (CLOCK_MONOTONIC) plus
 *   xdp_ctl.wall_minus_mono_ns, which the loader measures and sets once,
 *   before it attaches the program, and never changes (a change would move
 *   epoch boundaries under packets already counted).  Its epoch is
 *   wall_ns / xdp_ctl.epoch_ns.  User space computes the same epoch from its
 *   own CLOCK_MONOTONIC read and the same offset, so both sides agree on
 *   when an epoch ends whatever the wall clock does later (NTP steps).
 *
 * OWNERSHIP: the rule that makes every packet count exactly once
 *   owner[p] is written by user space only; the program only reads it.
 *     XDP_OWN_OPEN(E)      the table of parity p belongs to epoch E: a packet
 *                          of epoch E may add to it, nothing else may.
 *     XDP_OWN_DRAINING(E)  user space is reading and zeroing epoch E's table:
 *                          no packet may touch it.
 *   A packet of epoch F adds to the table of parity F & 1 only if that
 *   table's owner word is XDP_OWN_OPEN(F).  Otherwise (user space is late:
 *   the table still holds epoch F - 2, or is being drained; or the packet is
 *   late: its epoch is being drained) the packet is BYPASSED: it is emitted
 *   alone to the ring as a partial of one packet, and no table is touched.
 *   Within an open table a packet whose slot holds another group EJECTS that
 *   group to the ring and takes the slot.
 *
 *   User space drains epoch E (parity p), when owner[p] == XDP_OWN_OPEN(E):
 *     1. stores owner[p] = XDP_OWN_DRAINING(E);
 *     2. waits until no CPU is inside the program with a decision taken
 *        before step 1 (the busy counter, below);
 *     3. reads every CPU's slots of table p, emits those of epoch E, zeroes
 *        them all;
 *     4. stores owner[p] = XDP_OWN_OPEN(N), N = E + 2, or, if user space is
 *        so late that a later epoch of parity p has begun, that epoch (its
 *        packets until now were bypassed; those from now on go in the table).
 *   Between 1 and 4 no packet writes table p, so what step 3 reads is final
 *   and zeroing it erases nothing uncounted.  Every packet is therefore in
 *   exactly one of: the drain of its epoch's table, an ejection, a bypass --
 *   whatever the timing of user space and of the packets.  Epochs are
 *   drained in order per parity; an epoch never opened (user space was late
 *   past all of it) has no table: all its packets went through the ring.
 *
 *   The busy counter (xdp_cpu_state.busy) is incremented atomically by the
 *   program when it begins (before it reads owner) and when it ends (after
 *   its last write to a slot): odd while the program runs on that CPU.  The
 *   atomic increment is a full barrier and so is user space's store of step
 *   1, so (Dekker) either the program sees DRAINING, or user space sees the
 *   counter odd and waits for it to change.  The program runs in softirq
 *   context with migration disabled, so one CPU runs one invocation at a
 *   time.
 *
 *   Timeliness, not exactness, depends on the clock: user space drains E
 *   once the clock is past E's end plus a grace period, so packets stamped
 *   in E have all been counted; a packet stamped in E that reaches the
 *   program's owner check after the drain began is bypassed to the ring with
 *   epoch E, a late partial (counted, but after E's drain).
 *
 *   The one loss: the ring is full when the program ejects or bypasses.  It
 *   then counts the lost record (ring_lost); a run whose ring_lost is not 0
 *   is not exact.  User space must consume the ring faster than the program
 *   fills it (XDP_RING_BYTES, default 1 MiB).  The program wakes user space
 *   only once the ring holds an eighth of it: user space reads the ring on
 *   its own at least every 100 ms too.
 *
 * VERDICT
 *   xdp_ctl.verdict is what the program returns for every frame it sees,
 *   counted or not (xdp_verdict): XDP_PASS, or XDP_DROP on an interface
 *   declared dedicated to monitoring that no user-space reader needs.  The
 *   loader sets it once, before it attaches the program; any other value
 *   (0 included) passes the frame.
 *
 * RING RECORD
 *   struct xdp_rec_hdr, then key_bytes of key, then aggr_bytes of
 *   aggregates, all 8-byte aligned.
 */
#ifndef GSQLC_XDP_TABLE_H
#define GSQLC_XDP_TABLE_H

#include <linux/types.h>

/* owner words: (epoch + 1) << 1, low bit set while draining; 0 = no epoch */
#define XDP_OWN_OPEN(e) (((__u64)(e) + 1) << 1)
#define XDP_OWN_DRAINING(e) ((((__u64)(e) + 1) << 1) | 1)
#define XDP_OWN_EPOCH(w) (((__u64)(w) >> 1) - 1)
#define XDP_OWN_IS_DRAINING(w) ((w) & 1)

/* kinds of partial: ring records, and (DRAIN) what user space drains */
#define XDP_REC_COLLISION 1 /* ejected: another group of its epoch took the slot */
#define XDP_REC_OLD 2       /* ejected: the slot held another epoch (rules broken) */
#define XDP_REC_BYPASS 3    /* one packet whose epoch's table was not open */
#define XDP_REC_DRAIN 4     /* read by user space from the table (not in the ring) */

struct xdp_ctl {
    __s64 wall_minus_mono_ns; /* set by the loader before attaching */
    __u64 epoch_ns;           /* epoch length, set by the loader before attaching */
    __u64 owner[2];           /* per parity; written by user space only */
    __u64 verdict;            /* XDP_PASS or XDP_DROP, set by the loader before attaching */
};

struct xdp_cpu_state {
    __u64 busy;              /* odd while the program runs on this CPU */
    __u64 packets;           /* packets the program aggregated */
    __u64 collisions;        /* XDP_REC_COLLISION records emitted */
    __u64 old_ejections;     /* XDP_REC_OLD records emitted */
    __u64 bypassed;          /* XDP_REC_BYPASS records emitted */
    __u64 ring_lost;         /* records lost to a full ring: the run is not exact */
};

struct xdp_rec_hdr {
    __u16 kind;       /* XDP_REC_* */
    __u16 key_bytes;  /* bytes of key after the header */
    __u16 aggr_bytes; /* bytes of aggregates after the key */
    __u16 cpu;        /* the CPU whose table or packet it comes from */
    __u64 epoch;      /* the partial's epoch */
};

#ifdef __bpf__
/* ---- the BPF side: needs struct xdp_key, struct xdp_aggr, XDP_SLOTS ---- */
#include <bpf/bpf_helpers.h>
#include <linux/bpf.h>

#ifndef XDP_SLOTS
#error "define XDP_SLOTS (a power of 2) before including xdp_table.h"
#endif
#ifndef XDP_RING_BYTES
#define XDP_RING_BYTES (1 << 20)
#endif

_Static_assert((XDP_SLOTS & (XDP_SLOTS - 1)) == 0, "XDP_SLOTS must be a power of 2");
_Static_assert(sizeof(struct xdp_key) % 8 == 0, "struct xdp_key must be a multiple of 8 bytes");
_Static_assert(sizeof(struct xdp_aggr) % 8 == 0, "struct xdp_aggr must be a multiple of 8 bytes");

struct xdp_slot {
    __u64 epoch1; /* 0 = empty, else epoch + 1 */
    struct xdp_key key;
    struct xdp_aggr aggr;
};

struct xdp_rec {
    struct xdp_rec_hdr h;
    struct xdp_key key;
    struct xdp_aggr aggr;
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 2 * XDP_SLOTS);
    __type(key, __u32);
    __type(value, struct xdp_slot);
} xdp_slots SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, XDP_RING_BYTES);
} xdp_ring SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct xdp_ctl);
} xdp_ctl SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct xdp_cpu_state);
} xdp_cpu SEC(".maps");

/* One invocation's view: its CPU's state, the shared control word, the
 * packet's epoch. */
struct xdp_run {
    struct xdp_cpu_state *st;
    struct xdp_ctl *ctl;
    __u64 epoch;
    volatile __u64 busy_was;
};

/* Begins an invocation (busy odd, a full barrier) and stamps the packet.
 * 0 on success; on failure (maps missing) nothing was begun. */
static __always_inline int xdp_run_begin(struct xdp_run *r)
{
    __u32 zero = 0;
    r->st = bpf_map_lookup_elem(&xdp_cpu, &zero);
    r->ctl = bpf_map_lookup_elem(&xdp_ctl, &zero);
    if (!r->st || !r->ctl)
        return -1;
    /* the fetch form (its result kept): a full barrier on every JIT; the
     * plain atomic add is not one on arm64 */
    r->busy_was = __sync_fetch_and_add(&r->st->busy, 1);
    __u64 epoch_ns = *(volatile __u64 *)&r->ctl->epoch_ns;
    __s64 off = *(volatile __s64 *)&r->ctl->wall_minus_mono_ns;
    __u64 wall = bpf_ktime_get_ns() + (__u64)off;
    r->epoch = epoch_ns ? wall / epoch_ns : 0;
    return 0;
}

/* What the program returns for a frame (VERDICT above), on every path --
 * frames it does not count too, before or without xdp_run_begin: XDP_DROP
 * only when the loader said so, else XDP_PASS. */
static __always_inline int xdp_verdict(void)
{
    __u32 zero = 0;
    struct xdp_ctl *ctl = bpf_map_lookup_elem(&xdp_ctl, &zero);
    if (ctl && *(volatile __u64 *)&ctl->verdict == XDP_DROP)
        return XDP_DROP;
    return XDP_PASS;
}

/* Ends an invocation begun by xdp_run_begin: busy even again. */
static __always_inline void xdp_run_end(struct xdp_run *r)
{
    /* the fetch form again: the slot's writes are ordered before it */
    r->busy_was = __sync_fetch_and_add(&r->st->busy, 1);
}

/* Emits one partial to the ring; counts it, or counts it lost. */
static __always_inline void xdp_emit(struct xdp_run *r, __u16 kind, __u64 epoch,
                                     const struct xdp_key *key, const struct xdp_aggr *aggr)
{
    struct xdp_rec *rec = bpf_ringbuf_reserve(&xdp_ring, sizeof(*rec), 0);
    if (!rec) {
        r->st->ring_lost++;
        return;
    }
    rec->h.kind = kind;
    rec->h.key_bytes = sizeof(struct xdp_key);
    rec->h.aggr_bytes = sizeof(struct xdp_aggr);
    rec->h.cpu = (__u16)bpf_get_smp_processor_id();
    rec->h.epoch = epoch;
    __builtin_memcpy(&rec->key, key, sizeof(*key));
    __builtin_memcpy(&rec->aggr, aggr, sizeof(*aggr));
    /* user space is woken only once the ring holds an eighth of its bytes
     * (it also reads the ring on every round of its run, at least every
     * 100 ms): a wake-up per record cost the run a system call and a
     * context switch per partial */
    bpf_ringbuf_submit(rec, bpf_ringbuf_query(&xdp_ring, BPF_RB_AVAIL_DATA) >= XDP_RING_BYTES / 8
                                ? BPF_RB_FORCE_WAKEUP
                                : BPF_RB_NO_WAKEUP);
    if (kind == XDP_REC_COLLISION)
        r->st->collisions++;
    else if (kind == XDP_REC_OLD)
        r->st->old_ejections++;
    else if (kind == XDP_REC_BYPASS)
        r->st->bypassed++;
}

static __always_inline int xdp_key_eq(const struct xdp_key *a, const struct xdp_key *b)
{
    const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;
    __u64 diff = 0;
#pragma unroll
    for (unsigned i = 0; i < sizeof(struct xdp_key) / 8; i++)
        diff |= x[i] ^ y[i];
    return diff == 0;
}

/* The slot of `key` (hash `h`) in the table of the packet's epoch, ready to
 * have the packet's aggregates merged into: the resident group if it is
 * `key`'s, else a slot holding `key` with zeroed aggregates (the resident,
 * if any, ejected first).  NULL when the table is not open for the packet's
 * epoch: the caller then bypasses the packet with xdp_emit(XDP_REC_BYPASS).
 * Call between xdp_run_begin and xdp_run_end. */
static __always_inline struct xdp_slot *xdp_slot_for(struct xdp_run *r, const struct xdp_key *key,
                                                     __u32 h)
{
    __u64 p = r->epoch & 1;
    __u64 own = *(volatile __u64 *)&r->ctl->owner[p];
    if (own != XDP_OWN_OPEN(r->epoch))
        return 0;
    __u32 idx = (__u32)(p * XDP_SLOTS) + (h & (XDP_SLOTS - 1));
    struct xdp_slot *s = bpf_map_lookup_elem(&xdp_slots, &idx);
    if (!s)
        return 0;
    if (s->epoch1 == r->epoch + 1 && xdp_key_eq(&s->key, key))
        return s;
    if (s->epoch1 != 0)
        xdp_emit(r, s->epoch1 == r->epoch + 1 ? XDP_REC_COLLISION : XDP_REC_OLD, s->epoch1 - 1,
                 &s->key, &s->aggr);
    s->epoch1 = r->epoch + 1;
    __builtin_memcpy(&s->key, key, sizeof(*key));
    __builtin_memset(&s->aggr, 0, sizeof(s->aggr));
    return s;
}

#endif /* __bpf__ */
#endif /* GSQLC_XDP_TABLE_H */
