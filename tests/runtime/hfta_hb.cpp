// Hand-written HFTAs (C++17) of the heartbeat query set.
//  hb_merge: hb_a and hb_b -> hb_out, every tuple passed through unchanged
//    with gsq_emit_raw (heartbeats too); $bad_raw=short|strref makes it
//    pass a broken tuple instead, which the runtime must refuse; $joint
//    makes it emit a copy of each heartbeat as a GSQ_JOINT_HEARTBEAT after it.
//  hb_stats: hb_out -> hb_summary, counts data, heartbeats and joint
//    heartbeats; at the end one tuple (counts, first and last heartbeat
//    time), then EOF.
#include <cstddef>
#include <cstring>
#include <new>
#include <vector>

#include "gsq_runtime.h"
#include "qs_hb.h"

namespace {

struct merge_op {
    int bad = 0; // 1 short, 2 strref
    bool joint = false;
    int eofs = 0;
    std::vector<unsigned char> scratch;
};

void *merge_create(gsq_node *node)
{
    merge_op *op = new (std::nothrow) merge_op();
    if (!op) {
        gsq_node_fail(node, "out of memory");
        return nullptr;
    }
    const char *v = gsq_param(node, "bad_raw");
    if (v)
        op->bad = std::strcmp(v, "short") == 0 ? 1 : 2;
    op->joint = gsq_param(node, "joint") != nullptr;
    return op;
}

void merge_accept(void *p, gsq_node *node, int input, int kind, const void *tup, uint32_t len)
{
    merge_op *op = static_cast<merge_op *>(p);
    (void)input;
    if (kind == GSQ_EOF) {
        if (++op->eofs == 2) // every input ended: ours
            gsq_emit_raw(node, GSQ_EOF, nullptr, 0);
        return;
    }
    if (kind == GSQ_DATA && op->bad == 1) {
        gsq_emit_raw(node, kind, tup, (uint32_t)sizeof(hb_pkt_t) - 1);
        return;
    }
    if (kind == GSQ_DATA && op->bad == 2) {
        op->scratch.assign(static_cast<const unsigned char *>(tup),
                           static_cast<const unsigned char *>(tup) + len);
        hb_pkt_t t;
        std::memcpy(&t, op->scratch.data(), sizeof t);
        t.payload.len += 1; // one byte past the tail
        std::memcpy(op->scratch.data(), &t, sizeof t);
        gsq_emit_raw(node, kind, op->scratch.data(), len);
        return;
    }
    gsq_emit_raw(node, kind, tup, len);
    if (kind == GSQ_HEARTBEAT && op->joint)
        gsq_emit_raw(node, GSQ_JOINT_HEARTBEAT, tup, len);
}

void merge_destroy(void *p)
{
    delete static_cast<merge_op *>(p);
}

struct stats_op {
    hb_summary_t s{};
    bool have_hb = false;
};

void *stats_create(gsq_node *node)
{
    stats_op *op = new (std::nothrow) stats_op();
    if (!op)
        gsq_node_fail(node, "out of memory");
    return op;
}

void stats_accept(void *p, gsq_node *node, int input, int kind, const void *tup, uint32_t len)
{
    stats_op *op = static_cast<stats_op *>(p);
    (void)input;
    (void)len;
    if (kind == GSQ_EOF) {
        gsq_emit(node, GSQ_DATA, &op->s, sizeof op->s, nullptr, 0);
        gsq_emit(node, GSQ_EOF, nullptr, 0, nullptr, 0);
        return;
    }
    if (kind == GSQ_DATA) {
        op->s.n_data++;
        return;
    }
    if (kind == GSQ_JOINT_HEARTBEAT) {
        op->s.n_joint++;
        return;
    }
    const hb_pkt_t *in = static_cast<const hb_pkt_t *>(tup);
    op->s.n_hb++;
    if (!op->have_hb)
        op->s.first_hb_usec = in->ts_usec;
    op->have_hb = true;
    op->s.last_hb_usec = in->ts_usec;
}

void stats_destroy(void *p)
{
    delete static_cast<stats_op *>(p);
}

const int merge_inputs[] = {ST_HB_A, ST_HB_B};
const int stats_inputs[] = {ST_HB_OUT};

} // namespace

extern "C" const gsq_hfta_def hfta_hb_merge = {
    "hb_merge", 2, merge_inputs, ST_HB_OUT, merge_create, merge_accept, merge_destroy,
    nullptr, // no prefetch hints
    nullptr, // no params
    nullptr, // no runs of data tuples: accept() each
    GSQ_PROMISES_NONE,
    nullptr, // reads no parameter
};

extern "C" const gsq_hfta_def hfta_hb_stats = {
    "hb_stats", 1, stats_inputs, ST_HB_SUMMARY, stats_create, stats_accept, stats_destroy,
    nullptr, // no prefetch hints
    nullptr, // no params
    nullptr, // no runs of data tuples: accept() each
    GSQ_PROMISES_NONE,
    nullptr, // reads no parameter
};
