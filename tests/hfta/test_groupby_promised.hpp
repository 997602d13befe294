// test_groupby_promised.hpp -- groupby_op over an input whose heartbeats are
// promises the run keeps (heartbeats generated from declared time bounds:
// gsq_input_heartbeats_strict; the fake runtime's gsq_node::strict_input).
// Included at the end of test_hfta_templates.cpp (its fake runtime, check
// harness, tuple layouts and functors), in a part of its own.
//
// What groupby_op.hpp's "Promised input" says:
//   - data never closes an epoch: input disordered by more than max_disorder
//     epochs, within the promises, loses nothing, for any K;
//   - a data tuple of an epoch before the latest promise received is late
//     (dropped, counted); one of the promise's own epoch still counts;
//   - epochs close on heartbeats only, oldest first: the output is in epoch
//     order and never below a heartbeat emitted before it;
//   - memory follows the promises, not K: the tables of the epochs a
//     heartbeat closes are released once flushed;
//   - without promises (the default) nothing changes: the K rule holds.
// And a randomized reference model of those rules (open epochs over
// std::set), and the pipeline "OOP union of skewed inputs -> group-by" with
// skew wider than K.
//
// running_op (CLOSING_WHEN) over promises: a later epoch's tuples are held
// until a heartbeat completes the epochs before it, so its output -- the
// groups, their reports and what they carry -- is that of the in-order
// operator over the same input sorted by epoch.
#ifndef TEST_GROUPBY_PROMISED_HPP
#define TEST_GROUPBY_PROMISED_HPP

#include "running_op.hpp"

// pod_flows_functor (a key that copies trivially: accept_run's look-ahead
// and prefetch hints apply) with heartbeats, K = 2.
struct pod_promised_functor : pod_flows_functor {
    static constexpr unsigned max_disorder = 2;
    using pod_flows_functor::pod_flows_functor;
    bool heartbeat_epoch(const void *tup, uint32_t, epoch_type &e) const
    {
        tup_pkt t;
        std::memcpy(&t, tup, sizeof t);
        e = t.time / 60;
        return true;
    }
    void emit_heartbeat(gsq_node *node, const epoch_type &e) const
    {
        tup_flow out{};
        out.tb = e;
        gsq_emit(node, GSQ_HEARTBEAT, &out, sizeof out, nullptr, 0);
    }
};

namespace promised {

// A node whose input keeps its promises (gsq_input_heartbeats_strict).
struct promised_node : gsq_node {
    promised_node() { strict_input = true; }
};

static uint32_t clamp_sub(uint32_t a, uint32_t b) { return a > b ? a - b : 0; }

static std::vector<uint32_t> data_epochs(const gsq_node &node)
{
    std::vector<uint32_t> v;
    for (const auto &e : node.out)
        if (e.kind == GSQ_DATA)
            v.push_back(decode_flow(e).tb);
    return v;
}

// (a) no data row below a heartbeat emitted before it, heartbeats never go
// back; (b) data rows in epoch order.
static bool in_order_under_heartbeats(const gsq_node &node)
{
    std::optional<uint32_t> hb, last;
    for (const auto &e : node.out) {
        if (e.kind == GSQ_HEARTBEAT) {
            const uint32_t tb = decode_flow(e).tb;
            if (hb && tb < *hb)
                return false;
            hb = tb;
        } else if (e.kind == GSQ_DATA) {
            const uint32_t tb = decode_flow(e).tb;
            if ((hb && tb < *hb) || (last && tb < *last))
                return false;
            last = tb;
        }
    }
    return true;
}

static void test_mode_chosen_at_run_time()
{
    gsq_node plain;
    gsq::groupby_op<flows_ooo_functor<3>> a(&plain);
    CHECK(!a.promised());
    promised_node p;
    gsq::groupby_op<flows_ooo_functor<3>> b(&p);
    CHECK(b.promised());
    gsq::groupby_op<flows_hb_functor> k1(&p); // K = 1 as well
    CHECK(k1.promised());
    // the plan's strict heartbeats alone keep the K rule
    gsq::groupby_op<flows_ooo_functor<3, true>> c(&plain);
    CHECK(!c.promised());
    // no promise without heartbeat_epoch (nothing would ever close an epoch),
    // nor over several inputs (a heartbeat of one says nothing of the others)
    gsq::groupby_op<flows_functor> d(&p);
    CHECK(!d.promised());
    gsq::groupby_op<flows3_functor> e(&p);
    CHECK(!e.promised());
    // through the C glue, as the runtime creates it
    constexpr static int inputs[] = {0};
    const gsq_hfta_def def = gsq::hfta_def_of<gsq::groupby_op<flows_ooo_functor<2>>>("pr", inputs, 1);
    void *op = def.create(&p);
    CHECK(op != nullptr && static_cast<gsq::groupby_op<flows_ooo_functor<2>> *>(op)->promised());
    def.destroy(op);
}

// Disorder of five epochs with K = 1 and K = 3: nothing is late, every
// epoch stays open until a heartbeat promises it complete.
template <unsigned K>
static void check_wide_disorder()
{
    promised_node node;
    gsq::groupby_op<flows_ooo_functor<K>> op(&node);
    // epochs 5, 9, 6, 8, 7, 5, 4: up to five behind the newest
    for (uint32_t tb : {5u, 9u, 6u, 8u, 7u, 5u, 4u})
        gfeed(op, node, tb * 60 + 1, tb, "w");
    CHECK_EQ(op.stats().late_dropped, uint64_t(0));
    CHECK_EQ(op.open_epochs(), size_t(6)); // 4, 5, 6, 7, 8, 9
    CHECK_EQ(op.stats().epochs_closed, uint64_t(0));
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(0));
    CHECK_EQ(op.open_groups(), size_t(6));

    hb(op, node, 4 * 60); // the promise 4: closes nothing
    CHECK_EQ(op.stats().epochs_closed, uint64_t(0));
    CHECK((heartbeat_tbs(node) == std::vector<uint32_t>{4}));
    gfeed(op, node, 4 * 60 + 30, 4, "w"); // the promise's own epoch still counts
    gfeed(op, node, 3 * 60, 3, "late");   // before the promise: late
    CHECK_EQ(op.stats().late_dropped, uint64_t(1));
    CHECK_EQ(node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(1));

    hb(op, node, 7 * 60 + 5); // 4, 5 and 6 close, oldest first
    CHECK_EQ(op.stats().epochs_closed, uint64_t(3));
    CHECK_EQ(op.open_epochs(), size_t(3)); // 7, 8, 9
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(6)); // 6 is still flushing
    gfeed(op, node, 6 * 60, 6, "late"); // 6 is closed
    gfeed(op, node, 7 * 60, 7, "w");    // 7 is open: counts
    CHECK_EQ(op.stats().late_dropped, uint64_t(2));
    hb(op, node, 7 * 60 + 9);
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(7));
    gfeed(op, node, 12 * 60, 12, "w"); // newer than all: opens, closes nothing
    CHECK_EQ(op.open_epochs(), size_t(4));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK((data_epochs(node) == std::vector<uint32_t>{4, 5, 6, 7, 8, 9, 12}));
    std::vector<flow_row> rows;
    for (const auto &e : node.out)
        if (e.kind == GSQ_DATA)
            rows.push_back(decode_flow(e));
    uint64_t total = 0;
    for (const auto &r : rows)
        total += r.cnt;
    CHECK_EQ(total, uint64_t(7 + 1 + 1 + 1)); // the 7, the second 4, the second 7, the 12
    CHECK(in_order_under_heartbeats(node));
    CHECK_EQ(op.stats().peak_open_epochs, size_t(6));
    CHECK_EQ(op.allocated_slots(), size_t(0));
    CHECK_EQ(node.out.back().kind, int(GSQ_EOF));

    // The same input without promises: the K rule drops what is behind.
    gsq_node plain;
    gsq::groupby_op<flows_ooo_functor<K>> k_rule(&plain);
    for (uint32_t tb : {5u, 9u, 6u, 8u, 7u, 5u, 4u})
        gfeed(k_rule, plain, tb * 60 + 1, tb, "w");
    CHECK(k_rule.stats().late_dropped > 0);
    CHECK(k_rule.open_epochs() <= K);
}

// Heartbeats out: nothing before the input promised anything (an older
// epoch may still open), then the promise (or the flushing epoch).
static void test_heartbeats_out()
{
    promised_node node;
    gsq::groupby_op<flows_ooo_functor<2>> op(&node);
    gfeed(op, node, 10 * 60, 1, "h");
    gfeed(op, node, 12 * 60, 1, "h");
    op.accept(&node, 0, GSQ_HEARTBEAT, nullptr, 0); // no bytes: nothing known yet
    CHECK_EQ(count_kind(node, GSQ_HEARTBEAT), size_t(0));
    hb(op, node, 8 * 60); // promise 8: epochs 8 and 9 may still come
    CHECK((heartbeat_tbs(node) == std::vector<uint32_t>{8}));
    CHECK_EQ(op.open_epochs(), size_t(3)); // 8 (opened by the promise as the oldest), 10, 12
    gfeed(op, node, 8 * 60, 2, "h"); // at the promise: counts
    gfeed(op, node, 9 * 60, 2, "h"); // in a gap: opens
    CHECK_EQ(op.open_epochs(), size_t(4));
    CHECK_EQ(op.stats().late_dropped, uint64_t(0));
    hb(op, node, 5 * 60); // an older promise: repeated, nothing goes back
    CHECK((heartbeat_tbs(node) == std::vector<uint32_t>{8, 8}));
    hb(op, node, 11 * 60); // 8, 9 and 10 close
    CHECK_EQ(op.stats().epochs_closed, uint64_t(3));
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(10)); // flushing
    hb(op, node, 11 * 60);
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(11)); // the promise, opened as the oldest
    gfeed(op, node, 11 * 60, 3, "h");
    CHECK_EQ(op.stats().late_dropped, uint64_t(0));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK((data_epochs(node) == std::vector<uint32_t>{8, 9, 10, 11, 12}));
    CHECK(in_order_under_heartbeats(node));
}

// Memory follows the promises: many epochs open at once (K = 2), their
// tables released as heartbeats close them.
static void test_memory_released()
{
    promised_node node;
    gsq::groupby_op<flows_ooo_functor<2>> op(&node);
    const uint32_t groups = 500;
    // ten epochs, the newest first: each one older than every open one
    // (nine epochs of disorder)
    for (uint32_t e = 0; e < 10; ++e)
        for (uint32_t s = 0; s < groups; ++s)
            gfeed(op, node, (9 - e) * 60 + s % 60, s, "m");
    CHECK_EQ(op.open_epochs(), size_t(10));
    CHECK_EQ(op.open_groups(), size_t(10) * groups);
    CHECK_EQ(op.stats().late_dropped, uint64_t(0));
    CHECK(op.allocated_slots() >= size_t(10) * groups);
    for (uint32_t h = 1; h <= 10; ++h) {
        hb(op, node, h * 60);
        const size_t before = op.allocated_slots();
        for (uint32_t s = 0; s < groups; ++s) // the flush steps on the next tuples
            hb(op, node, h * 60);
        CHECK(op.allocated_slots() < before);
        CHECK_EQ(op.open_epochs(), h < 10 ? size_t(10 - h) : size_t(1)); // h .. 9, or 10 (empty)
        CHECK_EQ(op.flush_pending(), size_t(0));
    }
    CHECK_EQ(op.open_groups(), size_t(0));
    CHECK_EQ(op.allocated_slots(), size_t(0)); // every table released
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(10) * groups);
    CHECK_EQ(op.stats().peak_open_groups, size_t(10) * groups);
    CHECK_EQ(node.peaks[GSQ_PEAK_HELD_TUPLES], uint64_t(10) * groups);
    CHECK(in_order_under_heartbeats(node));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK_EQ(node.out.back().kind, int(GSQ_EOF));
}

// The promised epochs' slots: many more epochs than any array, opened at
// both ends and in the middle, closed a few at a time, and again after the
// slots were compacted -- the routing stays right (against a std::map).
static void test_many_epochs()
{
    promised_node node;
    gsq::groupby_op<pod_promised_functor> op(&node);
    std::mt19937 rng(99);
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> want;
    uint32_t low = 0; // the promise
    for (int round = 0; round < 40; ++round) {
        const uint32_t top = low + 200;
        for (int i = 0; i < 400; ++i) {
            const uint32_t e = low + rng() % (top - low + 1); // anywhere in the window
            const uint32_t src = rng() % 3;
            gfeed(op, node, e * 60 + rng() % 60, src, "", 1);
            ++want[{e, src}];
        }
        // a few down at the bottom, then the promise moves up
        low += 1 + rng() % 30;
        hb(op, node, low * 60);
    }
    CHECK_EQ(op.stats().late_dropped, uint64_t(0));
    CHECK(op.stats().peak_open_epochs > 150);
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> got;
    for (const auto &e : node.out)
        if (e.kind == GSQ_DATA) {
            const flow_row r = decode_flow(e);
            got[{r.tb, r.src}] += r.cnt;
        }
    CHECK(got == want);
    CHECK(in_order_under_heartbeats(node));
}

// ---- randomized: the rules over std::set --------------------------------------

// groupby_op.hpp's rules with promises: any number of open epochs, closed
// by heartbeats only.
struct promised_reference {
    std::set<uint32_t> open;
    std::map<uint32_t, std::set<uint32_t>> groups;
    std::optional<uint32_t> closed, floor, hb_out, h_in;
    size_t remaining = 0;
    uint64_t late = 0;
    std::map<std::pair<uint32_t, uint32_t>, std::pair<uint64_t, uint64_t>> totals;
    std::vector<uint32_t> hbs;

    static void raise(std::optional<uint32_t> &v, uint32_t x)
    {
        if (!v || *v < x)
            v = x;
    }
    void step()
    {
        if (remaining != 0)
            --remaining;
    }
    bool admissible(uint32_t e) const { return (!closed || e > *closed) && (!floor || e >= *floor); }
    void close_oldest()
    {
        const uint32_t e = *open.begin();
        open.erase(open.begin());
        closed = e;
        remaining = groups[e].size();
        groups.erase(e);
    }
    void data(uint32_t time, uint32_t src, uint32_t len)
    {
        step();
        if (len == 0)
            return;
        const uint32_t e = time / 60;
        if (open.count(e) == 0 && (open.empty() || e < *open.begin()) && !admissible(e)) {
            ++late;
            return;
        }
        open.insert(e);
        groups[e].insert(src);
        auto &t = totals[{e, src}];
        t.first += 1;
        t.second += len;
    }
    void heartbeat(std::optional<uint32_t> h)
    {
        step();
        if (h) {
            raise(h_in, *h);
            if (open.empty()) {
                if (admissible(*h))
                    open.insert(*h);
            } else if (*h > *open.rbegin()) {
                open.insert(*h);
            }
            raise(floor, *h);
            while (!open.empty() && *open.begin() < *h)
                close_oldest();
            if (!open.empty() && *h < *open.begin() && admissible(*h))
                open.insert(*h);
        }
        std::optional<uint32_t> out;
        if (remaining != 0) {
            out = closed;
        } else if (!open.empty()) {
            out = *open.begin();
            std::optional<uint32_t> lo = h_in;
            if (closed)
                raise(lo, *closed);
            if (!lo)
                out.reset();
            else if (*lo < *out)
                out = lo;
        }
        if (!out)
            return;
        raise(hb_out, *out);
        raise(floor, *hb_out);
        hbs.push_back(*hb_out);
    }
};

// Data disordered by up to d epochs behind the newest (d up to 3K + 4), and
// heartbeats at (newest - d): honest promises, or (liars) up to 3 epochs
// above them.  Honest ones lose nothing; every trial matches the model.
template <unsigned K>
static void promised_trials(uint32_t seed)
{
    std::mt19937 rng(seed);
    int trials = 0, bad_answer = 0, bad_late = 0, bad_hbs = 0, bad_order = 0, bad_open = 0, lost = 0,
        late_trials = 0, wide = 0;
    for (int rep = 0; rep < 300; ++rep) {
        const bool liar = rep % 3 == 2;
        promised_node node;
        gsq::groupby_op<flows_ooo_functor<K>> op(&node);
        promised_reference ref;
        const uint32_t d = rng() % (3 * K + 5);
        const uint32_t n_srcs = 1 + rng() % 5;
        const int n = 30 + static_cast<int>(rng() % 300);
        uint32_t m = d + 10 + rng() % 3; // no promise of epoch 0 (see test_blank_promises)
        uint64_t data_in = 0, filtered = 0;
        bool open_ok = true;
        for (int i = 0; i < n; ++i) {
            if (rng() % 4 == 0)
                m += 1 + rng() % 2;
            if (rng() % 10 < 2) {
                if (rng() % 8 == 0) {
                    op.accept(&node, 0, GSQ_HEARTBEAT, nullptr, 0);
                    ref.heartbeat(std::nullopt);
                    continue;
                }
                uint32_t h = clamp_sub(m, d);
                if (liar)
                    h += rng() % 4;
                hb(op, node, h * 60 + rng() % 60);
                ref.heartbeat(h);
            } else {
                const uint32_t e = clamp_sub(m, rng() % (d + 1));
                const uint32_t time = e * 60 + rng() % 60;
                const uint32_t src = rng() % n_srcs;
                const uint32_t len = rng() % 20 == 0 ? 0 : 1 + rng() % 100;
                gfeed(op, node, time, src, "r", len);
                ref.data(time, src, len);
                ++data_in;
                filtered += len == 0;
            }
            open_ok = open_ok && op.open_epochs() == ref.open.size() && op.open_groups() == [&] {
                size_t g = 0;
                for (const auto &kv : ref.groups)
                    g += kv.second.size();
                return g;
            }();
        }
        wide += op.stats().peak_open_epochs > K;
        op.accept(&node, 0, GSQ_EOF, nullptr, 0);
        std::vector<flow_row> got, want;
        uint64_t counted = 0;
        for (const auto &e : node.out)
            if (e.kind == GSQ_DATA) {
                got.push_back(decode_flow(e));
                counted += got.back().cnt;
            }
        for (const auto &[k, v] : ref.totals)
            want.push_back(flow_row{k.first, k.second, "r", v.first, v.second});
        std::sort(got.begin(), got.end());
        ++trials;
        bad_answer += !(got == want && counted + op.stats().late_dropped + filtered == data_in);
        bad_late += !(op.stats().late_dropped == ref.late && node.counters[GSQ_CNT_LATE_DROPPED] == ref.late);
        bad_hbs += heartbeat_tbs(node) != ref.hbs;
        bad_order += !in_order_under_heartbeats(node);
        bad_open += !(open_ok && op.allocated_slots() == 0);
        lost += !liar && op.stats().late_dropped != 0;
        late_trials += op.stats().late_dropped != 0;
    }
    CHECK_EQ(bad_answer, 0);
    CHECK_EQ(bad_late, 0);
    CHECK_EQ(bad_hbs, 0);
    CHECK_EQ(bad_order, 0);
    CHECK_EQ(bad_open, 0);
    CHECK_EQ(lost, 0);       // honest promises: nothing late, however wide
    CHECK(late_trials > 0);  // lying ones make tuples late
    CHECK(wide > trials / 4); // many trials open more than K epochs
    std::printf("promised: groupby K=%u: %d trials, %d with more than K epochs open, %d with late tuples\n", K,
                trials, wide, late_trials);
}

// Three inputs, each in order, lagging a common clock by up to 6 epochs,
// through the OOP union (under generated heartbeats its progress is its
// inputs' heartbeats) into a group-by: over promises nothing is lost with
// K = 1 or 3; the K rule alone loses tuples on the same streams.
template <unsigned K>
static void union_trials(uint32_t seed)
{
    std::mt19937 rng(seed);
    uint64_t lost_promised = 0, lost_k_rule = 0;
    int bad = 0;
    for (int rep = 0; rep < 60; ++rep) {
        gsq_node mnode;
        mnode.generated = true;
        gsq::merge_op<pkt_union_functor<3>> merge(&mnode);
        uint32_t lag[3];
        for (uint32_t &l : lag)
            l = rng() % 360;
        std::map<std::pair<uint32_t, uint32_t>, uint64_t> want;
        uint32_t clock = 1000 + rng() % 100;
        const int n = 200 + static_cast<int>(rng() % 400);
        for (int i = 0; i < n; ++i) {
            clock += rng() % 4;
            const int in = static_cast<int>(rng() % 3);
            const uint32_t t = clock - lag[in];
            if (rng() % 6 == 0) {
                hb(merge, mnode, t, in); // each input's own promise
                continue;
            }
            const uint32_t src = rng() % 4;
            auto bytes = pkt(t, src, "u", 1);
            merge.accept(&mnode, in, GSQ_DATA, bytes.data(), static_cast<uint32_t>(bytes.size()));
            ++want[{t / 60, src}];
        }
        for (int in = 0; in < 3; ++in)
            merge.accept(&mnode, in, GSQ_EOF, nullptr, 0);
        bad += mnode.counters[GSQ_CNT_LATE_DROPPED] != 0;
        for (int with_promises = 0; with_promises < 2; ++with_promises) {
            promised_node gnode;
            gnode.strict_input = with_promises != 0;
            gsq::groupby_op<flows_ooo_functor<K>> gb(&gnode);
            for (const auto &e : mnode.out) {
                if (e.kind == GSQ_EOF)
                    gb.accept(&gnode, 0, GSQ_EOF, nullptr, 0);
                else
                    gb.accept(&gnode, 0, e.kind, e.fixed.data(), static_cast<uint32_t>(e.fixed.size()));
            }
            std::map<std::pair<uint32_t, uint32_t>, uint64_t> got;
            for (const auto &e : gnode.out)
                if (e.kind == GSQ_DATA) {
                    const flow_row r = decode_flow(e);
                    got[{r.tb, r.src}] += r.cnt;
                }
            bad += !in_order_under_heartbeats(gnode);
            if (with_promises) {
                lost_promised += gb.stats().late_dropped;
                bad += got != want;
            } else {
                lost_k_rule += gb.stats().late_dropped;
            }
        }
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(lost_promised, uint64_t(0));
    CHECK(lost_k_rule > 0);
    std::printf("promised: union -> groupby K=%u: lost %llu over promises, %llu by the K rule\n", K,
                static_cast<unsigned long long>(lost_promised), static_cast<unsigned long long>(lost_k_rule));
}

// accept_run and prefetch hints over promises give what accept() gives.
static void test_accept_run_promised()
{
    constexpr static int inputs[] = {0};
    const gsq_hfta_def def = gsq::hfta_def_of<gsq::groupby_op<pod_promised_functor>>("runp", inputs, 1);
    std::vector<unsigned char> flat;
    uint32_t len = 0, n = 0, x = 4242;
    for (uint32_t i = 0; i < 6000; ++i, ++n) {
        x = x * 1103515245u + 12345u;
        // up to 8 epochs behind, every 41st one 20 epochs behind
        const uint32_t back = (x >> 12) % 480 + (i % 41 == 0 ? 1200 : 0);
        const auto t = pkt(2000 + i / 2 - back, (x >> 8) % 500, "", 1);
        len = static_cast<uint32_t>(t.size());
        flat.insert(flat.end(), t.begin(), t.end());
    }
    promised_node single, runs;
    void *a = def.create(&single);
    void *b = def.create(&runs);
    const uint32_t lengths[] = {1, 3, 15, 16, 17, 33, 250};
    for (uint32_t i = 0, k = 0; i < n; ++k) {
        const uint32_t m = std::min(lengths[k % 7], n - i);
        for (uint32_t j = 0; j < m; ++j) {
            if (j + 4 < m)
                def.prefetch(a, 0, flat.data() + size_t{i + j + 4} * len, len);
            def.accept(a, &single, 0, GSQ_DATA, flat.data() + size_t{i + j} * len, len);
        }
        def.accept_run(b, &runs, 0, flat.data() + size_t{i} * len, len, len, m);
        i += m;
        // the promise: 10 epochs behind the newest
        auto h = pkt(2000 + i / 2 - 600, 0, "", 0);
        def.accept(a, &single, 0, GSQ_HEARTBEAT, h.data(), static_cast<uint32_t>(h.size()));
        def.accept(b, &runs, 0, GSQ_HEARTBEAT, h.data(), static_cast<uint32_t>(h.size()));
    }
    def.accept(a, &single, 0, GSQ_EOF, nullptr, 0);
    def.accept(b, &runs, 0, GSQ_EOF, nullptr, 0);
    CHECK(single.counters[GSQ_CNT_LATE_DROPPED] > 50); // the 20-epoch ones
    CHECK(single.counters[GSQ_CNT_LATE_DROPPED] < 6000 / 41 + 2);
    CHECK_EQ(single.out.size(), runs.out.size());
    bool same = true;
    for (size_t i = 0; i < single.out.size() && i < runs.out.size(); ++i)
        same = same && single.out[i].kind == runs.out[i].kind && single.out[i].fixed == runs.out[i].fixed;
    CHECK(same);
    CHECK(std::memcmp(single.counters, runs.counters, sizeof single.counters) == 0);
    CHECK(std::memcmp(single.peaks, runs.peaks, sizeof single.peaks) == 0);
    CHECK(in_order_under_heartbeats(single));
    def.destroy(a);
    def.destroy(b);
}

// ---- running_op ----------------------------------------------------------------

// SELECT tb, src, count(*), (running) total FROM PKT GROUP BY time/60 AS tb, src
// CLOSING_WHEN count(*) = 0: a group reports every epoch while it sees
// tuples, is dropped after an epoch without any; `bytes` carries its running
// total across epochs.
struct running_flows_functor {
    struct key_type {
        uint32_t tb = 0;
        uint32_t src = 0;
    };
    struct state_type {
        uint64_t cnt = 0;
        uint64_t total = 0;
        bool fresh_ = false;
    };
    using epoch_type = uint32_t;
    struct key_hash {
        size_t operator()(const key_type &k) const { return gsq::hash_combine(k.tb, k.src); }
    };
    struct key_eq {
        bool operator()(const key_type &a, const key_type &b) const { return a.tb == b.tb && a.src == b.src; }
    };
    explicit running_flows_functor(gsq_node *) {}
    bool extract(const void *tup, uint32_t, key_type &k) const
    {
        tup_pkt t;
        std::memcpy(&t, tup, sizeof t);
        if (t.len == 0)
            return false; // WHERE len > 0
        k.tb = t.time / 60;
        k.src = t.src;
        return true;
    }
    epoch_type epoch_of(const key_type &k) const { return k.tb; }
    int epoch_compare(const epoch_type &cur, const epoch_type &e) const { return e > cur ? 1 : e < cur ? -1 : 0; }
    void init(state_type &s, const void *, uint32_t)
    {
        s.cnt = 1;
        s.total = 1;
    }
    void update(state_type &s, const void *, uint32_t)
    {
        if (s.fresh_) {
            s.fresh_ = false;
            s.cnt = 0;
        }
        s.cnt += 1;
        s.total += 1;
    }
    bool closing(const key_type &, const state_type &s) const { return s.cnt == 0; }
    void carry(key_type &k, state_type &s, const epoch_type &e) const
    {
        k.tb = e;
        s.cnt = 0;
        s.fresh_ = true;
    }
    void emit(gsq_node *node, const key_type &k, const state_type &s) const
    {
        tup_flow out{};
        out.tb = k.tb;
        out.src = k.src;
        out.cnt = s.fresh_ ? 0 : s.cnt;
        out.bytes = s.total;
        gsq_emit(node, GSQ_DATA, &out, sizeof out, nullptr, 0);
    }
    bool heartbeat_epoch(const void *tup, uint32_t, epoch_type &e) const
    {
        tup_pkt t;
        std::memcpy(&t, tup, sizeof t);
        e = t.time / 60;
        return true;
    }
    void emit_heartbeat(gsq_node *node, const epoch_type &e) const
    {
        tup_flow out{};
        out.tb = e;
        gsq_emit(node, GSQ_HEARTBEAT, &out, sizeof out, nullptr, 0);
    }
};

using running_op_t = gsq::running_op<running_flows_functor>;

// One input event: a data tuple (time, src, len) or a heartbeat at time.
struct event {
    bool heartbeat;
    uint32_t time, src, len;
};

static void feed_events(running_op_t &op, gsq_node &node, const std::vector<event> &evs)
{
    for (const event &ev : evs) {
        auto t = pkt(ev.time, ev.src, "", ev.len);
        op.accept(&node, 0, ev.heartbeat ? GSQ_HEARTBEAT : GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
    }
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
}

// What the in-order operator is given for the same events: at each
// heartbeat h, the data not yet given of epochs before h, sorted by epoch
// (arrival order within one), then h; at the end, the rest likewise.  Data
// before the latest heartbeat's epoch is late over promises: left out.
static std::vector<event> sorted_like_promises(const std::vector<event> &evs, uint64_t &late)
{
    std::vector<event> out, pending;
    std::optional<uint32_t> current;
    auto give = [&](std::optional<uint32_t> below) {
        std::vector<event> now, keep;
        for (const event &ev : pending)
            (!below || ev.time / 60 < *below ? now : keep).push_back(ev);
        std::stable_sort(now.begin(), now.end(),
                         [](const event &a, const event &b) { return a.time / 60 < b.time / 60; });
        out.insert(out.end(), now.begin(), now.end());
        pending = keep;
    };
    for (const event &ev : evs) {
        if (ev.heartbeat) {
            give(ev.time / 60);
            out.push_back(ev);
            if (!current || *current < ev.time / 60)
                current = ev.time / 60;
        } else if (current && ev.time / 60 < *current) {
            late += ev.len != 0; // (a tuple WHERE drops is not late)
        } else {
            pending.push_back(ev);
        }
    }
    give(std::nullopt);
    return out;
}

static bool same_output(const gsq_node &a, const gsq_node &b)
{
    if (a.out.size() != b.out.size())
        return false;
    for (size_t i = 0; i < a.out.size(); ++i)
        if (a.out[i].kind != b.out[i].kind || a.out[i].fixed != b.out[i].fixed)
            return false;
    return true;
}

static void test_running_promised()
{
    {
        promised_node p;
        running_op_t op(&p);
        CHECK(op.promised());
        gsq_node plain;
        running_op_t op2(&plain);
        CHECK(!op2.promised());
    }
    // epochs 5, 7, 6, 5: a later epoch's tuple does not end 5; 6 and 5 count
    promised_node node;
    running_op_t op(&node);
    const std::vector<event> evs = {{false, 5 * 60, 1, 1}, {false, 7 * 60, 1, 1}, {false, 6 * 60, 2, 1},
                                    {false, 5 * 60 + 9, 1, 1}, {true, 6 * 60, 0, 0}, {false, 6 * 60, 1, 1},
                                    {false, 5 * 60, 3, 1}, {true, 8 * 60, 0, 0}};
    for (size_t i = 0; i < 4; ++i) {
        auto t = pkt(evs[i].time, evs[i].src, "", evs[i].len);
        op.accept(&node, 0, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
    }
    CHECK_EQ(op.held_tuples(), size_t(4)); // no promise yet: all held
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(0));
    CHECK_EQ(count_kind(node, GSQ_HEARTBEAT), size_t(0));
    {
        auto t = pkt(6 * 60, 0, "", 0);
        op.accept(&node, 0, GSQ_HEARTBEAT, t.data(), static_cast<uint32_t>(t.size()));
    }
    // 5 went out (src 1: two tuples), 6 is current with src 2, 7 is held
    CHECK_EQ(op.held_tuples(), size_t(1));
    CHECK((heartbeat_tbs(node) == std::vector<uint32_t>{6}));
    std::vector<flow_row> rows;
    for (const auto &e : node.out)
        if (e.kind == GSQ_DATA)
            rows.push_back(decode_flow(e));
    CHECK_EQ(rows.size(), size_t(1));
    CHECK(rows.size() == 1 && rows[0].tb == 5 && rows[0].src == 1 && rows[0].cnt == 2);
    // the same events from the start, against the in-order operator
    promised_node pn;
    running_op_t op3(&pn);
    feed_events(op3, pn, evs);
    uint64_t late = 0;
    const auto ref_in = sorted_like_promises(evs, late);
    CHECK_EQ(late, uint64_t(1)); // the 5 after the promise 6
    gsq_node ref_node;
    running_op_t ref(&ref_node);
    feed_events(ref, ref_node, ref_in);
    CHECK(same_output(pn, ref_node));
    CHECK_EQ(pn.counters[GSQ_CNT_LATE_DROPPED], late);
    CHECK_EQ(ref_node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(0));
    CHECK_EQ(op3.held_tuples(), size_t(0));

    // Randomized: disorder up to d epochs, honest or lying promises; the
    // output always equals the in-order operator's over the sorted input.
    std::mt19937 rng(4711);
    const auto r = [&rng](uint32_t k) { return static_cast<uint32_t>(rng() % k); };
    int bad = 0, bad_late = 0, lost = 0, held_some = 0;
    for (int rep = 0; rep < 300; ++rep) {
        const bool liar = rep % 4 == 3;
        const uint32_t d = r(8);
        std::vector<event> in;
        uint32_t m = d + 2, max_held = 0;
        const int n = 20 + static_cast<int>(r(300));
        for (int i = 0; i < n; ++i) {
            if (r(4) == 0)
                m += 1 + r(2);
            if (r(8) == 0) {
                const uint32_t h = m - d + (liar ? r(3) : 0);
                in.push_back({true, h * 60 + r(60), 0, 0});
            } else {
                const uint32_t e = m - r(d + 1);
                in.push_back({false, e * 60 + r(60), r(5), r(15) == 0 ? 0u : 1u});
            }
        }
        promised_node pnode;
        running_op_t pop(&pnode);
        for (const event &ev : in) {
            auto t = pkt(ev.time, ev.src, "", ev.len);
            pop.accept(&pnode, 0, ev.heartbeat ? GSQ_HEARTBEAT : GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
            max_held = std::max<uint32_t>(max_held, static_cast<uint32_t>(pop.held_tuples()));
        }
        pop.accept(&pnode, 0, GSQ_EOF, nullptr, 0);
        uint64_t want_late = 0;
        const auto sorted = sorted_like_promises(in, want_late);
        gsq_node rnode;
        running_op_t rop(&rnode);
        feed_events(rop, rnode, sorted);
        bad += !same_output(pnode, rnode) || rnode.counters[GSQ_CNT_LATE_DROPPED] != 0;
        bad_late += pnode.counters[GSQ_CNT_LATE_DROPPED] != want_late;
        lost += !liar && pnode.counters[GSQ_CNT_LATE_DROPPED] != 0;
        held_some += max_held > 0;
        bad += pop.held_tuples() != 0;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(bad_late, 0);
    CHECK_EQ(lost, 0);
    CHECK(held_some > 200);
}

// A merge's heartbeat sets only its merge column: an epoch over another
// column reads zeros from it.  Heartbeats announcing what one of zeros does,
// below the data's epochs, promise nothing: back to the K rule for good.
static void test_blank_promises()
{
    promised_node node;
    gsq::groupby_op<flows_ooo_functor<3>> op(&node);
    for (uint32_t tb : {5u, 9u, 6u, 8u, 7u})
        gfeed(op, node, tb * 60, tb, "z");
    CHECK_EQ(op.open_epochs(), size_t(5));
    auto zero = std::vector<unsigned char>(sizeof(tup_pkt), 0);
    op.accept(&node, 0, GSQ_HEARTBEAT, zero.data(), static_cast<uint32_t>(zero.size()));
    CHECK(!op.promised());
    CHECK_EQ(op.open_epochs(), size_t(3)); // 7, 8, 9: 5 and 6 closed (K rule)
    CHECK_EQ(op.stats().epochs_closed, uint64_t(2));
    gfeed(op, node, 6 * 60, 6, "late"); // closed
    gfeed(op, node, 10 * 60, 10, "z");  // opens, 7 closes
    CHECK_EQ(op.open_epochs(), size_t(3));
    CHECK_EQ(op.stats().late_dropped, uint64_t(1));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK((data_epochs(node) == std::vector<uint32_t>{5, 6, 7, 8, 9, 10}));
    CHECK(in_order_under_heartbeats(node));

    // a promise of epoch 0 before any later data is a promise
    promised_node n2;
    gsq::groupby_op<flows_ooo_functor<3>> early(&n2);
    hb(early, n2, 0);
    gfeed(early, n2, 5 * 60, 1, "z");
    hb(early, n2, 2 * 60);
    CHECK(early.promised());
    // a heartbeat of time 0 after it, below the data: nothing promised
    hb(early, n2, 0);
    CHECK(!early.promised());

    // running_op: the held epochs are taken in order, then in order for good
    promised_node n3;
    running_op_t run(&n3);
    gfeed(run, n3, 5 * 60, 1, "");
    gfeed(run, n3, 7 * 60, 1, "");
    CHECK_EQ(run.held_tuples(), size_t(2));
    run.accept(&n3, 0, GSQ_HEARTBEAT, zero.data(), static_cast<uint32_t>(zero.size()));
    CHECK(!run.promised());
    CHECK_EQ(run.held_tuples(), size_t(0));
    CHECK_EQ(count_kind(n3, GSQ_DATA), size_t(1)); // 5's group; 7 is current
    gfeed(run, n3, 6 * 60, 1, "");                 // before the current epoch: late
    CHECK_EQ(n3.counters[GSQ_CNT_LATE_DROPPED], uint64_t(1));
}

} // namespace promised

static void test_groupby_promised()
{
    promised::test_mode_chosen_at_run_time();
    promised::check_wide_disorder<1>();
    promised::check_wide_disorder<3>();
    promised::test_heartbeats_out();
    promised::test_memory_released();
    promised::test_many_epochs();
    promised::test_accept_run_promised();
    promised::promised_trials<1>(901);
    promised::promised_trials<3>(903);
    promised::union_trials<1>(911);
    promised::union_trials<3>(913);
    promised::test_running_promised();
    promised::test_blank_promises();
}

#endif // TEST_GROUPBY_PROMISED_HPP
