// Randomised tests of gsq::filter_join_op (hfta_templates/filter_join_op.hpp)
// against a brute-force semi-join, with a fake runtime.  Each trial draws two
// time-ordered inputs (keys from a small range, duplicates, rejected tuples,
// late tuples, valid heartbeats), delivers them in a random interleaving and
// checks: the rows out are exactly the S tuples some R tuple of equal key
// had within the window, in S order; heartbeats out increase strictly and
// never exceed the time of a later row; one EOF at the end, nothing held.
// Prints "N passed, N failed"; exit status 0 only if nothing failed.
#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gsq_runtime.h"
#include "filter_join_op.hpp"

static int g_passed = 0;
static int g_failed = 0;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (cond) {                                                                          \
            ++g_passed;                                                                      \
        } else {                                                                             \
            ++g_failed;                                                                      \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s (%s)\n", __FILE__, __LINE__, #cond, \
                         g_ctx.c_str());                                                     \
        }                                                                                    \
    } while (0)

static std::string g_ctx;
static uint64_t g_rows = 0, g_candidates = 0, g_hbs = 0, g_late = 0; // coverage of the trials

// ---- fake runtime --------------------------------------------------------

struct gsq_node {
    uint64_t counters[GSQ_CNT__COUNT] = {};
    uint64_t peaks[GSQ_PEAK__COUNT] = {};
    int eofs = 0;
    bool failed = false;
};

extern "C" {
// the tables' memory (table_mem.c's, without its huge-page hint)
void *gsq_table_reserve(size_t n, size_t size) { return std::malloc(n && size ? n * size : 1); }
void gsq_table_free(void *p) { std::free(p); }

void gsq_emit(gsq_node *node, int kind, const void *, uint32_t, const gsq_str_field *, uint32_t)
{
    if (kind == GSQ_EOF)
        ++node->eofs;
}
void gsq_node_fail(gsq_node *node, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
    node->failed = true;
}
int gsq_node_failed(gsq_node *node) { return node->failed ? 1 : 0; }
void gsq_count(gsq_node *node, int counter, uint64_t n) { node->counters[counter] += n; }
int gsq_inputs_are_partials(gsq_node *) { return 0; } // raw tuples here
// a late tuple is one row here (the runtime reads a partial's count of rows)
void gsq_count_late(gsq_node *node, int, const void *, uint32_t)
{
    node->counters[GSQ_CNT_LATE_DROPPED] += 1;
    node->counters[GSQ_CNT_LATE_DROPPED_ROWS] += 1;
}
void gsq_peak(gsq_node *node, int which, uint64_t value)
{
    node->peaks[which] = std::max(node->peaks[which], value);
}
} // extern "C"

// ---- the functor ---------------------------------------------------------

template <class T>
struct tup {
    T t;
    uint32_t k;
    uint32_t v;  // R rejects v % 5 == 0, S rejects v % 7 == 0
    uint32_t id;
};

struct out_event {
    bool heartbeat;
    double t;      // heartbeat value or the row's S time
    uint32_t id;   // the row's S tuple
};

static int64_t g_window_back = 0; // read by each functor when it is made

template <class T>
struct functor {
    static constexpr int n_inputs = 2;
    using time_type = T;
    struct key_type {
        uint32_t k{};
    };
    struct key_hash {
        size_t operator()(const key_type &k) const { return k.k % 3; } // collisions on purpose
    };
    struct key_eq {
        bool operator()(const key_type &a, const key_type &b) const { return a.k == b.k; }
    };
    T back;
    std::vector<out_event> log;

    explicit functor(gsq_node *) : back(static_cast<T>(g_window_back)) {}

    static const tup<T> *in(const void *p) { return static_cast<const tup<T> *>(p); }
    bool left_extract(const void *p, uint32_t, key_type &k, time_type &t)
    {
        if (in(p)->v % 5 == 0)
            return false;
        k.k = in(p)->k;
        t = in(p)->t;
        return true;
    }
    bool right_extract(const void *p, uint32_t, key_type &k, time_type &t)
    {
        if (in(p)->v % 7 == 0)
            return false;
        k.k = in(p)->k;
        t = in(p)->t;
        return true;
    }
    time_type left_time_of(const void *p, uint32_t) const { return in(p)->t; }
    time_type right_time_of(const void *p, uint32_t) const { return in(p)->t; }
    time_type window_back() const { return back; }
    void emit(gsq_node *, const void *s, uint32_t)
    {
        log.push_back(out_event{false, static_cast<double>(in(s)->t), in(s)->id});
    }
    void emit_heartbeat(gsq_node *, time_type t) { log.push_back(out_event{true, static_cast<double>(t), 0}); }
};

// ---- one trial -------------------------------------------------------------

struct event {
    int input;  // 0 R, 1 S
    int kind;   // GSQ_DATA, GSQ_HEARTBEAT, GSQ_EOF
    tup<int64_t> tu;
    bool late;  // a data tuple earlier than its input's progress
};

template <class T>
static void trial(std::mt19937_64 &rng, int n_trial)
{
    std::uniform_int_distribution<int> pct(0, 99);
    const int n_keys = 1 + static_cast<int>(rng() % 6);
    const int64_t window = 1 + static_cast<int64_t>(rng() % 12);
    const int64_t t_lo = std::is_signed_v<T> ? -40 : 0;
    g_ctx = "trial " + std::to_string(n_trial) + " window " + std::to_string(window);

    // Each input: a time-ordered list of data tuples and heartbeats.
    std::vector<event> seq[2];
    uint32_t id = 0;
    for (int s = 0; s < 2; ++s) {
        int64_t t = t_lo + static_cast<int64_t>(rng() % 5);
        int64_t progress = std::numeric_limits<int64_t>::min();
        const int n = static_cast<int>(rng() % 120);
        const int busy = 20 + pct(rng) * 3 / 4; // % of steps with a tuple
        for (int i = 0; i < n; ++i) {
            t += pct(rng) < 60 ? 0 : 1 + static_cast<int64_t>(rng() % 4);
            if (pct(rng) < 15)
                t += static_cast<int64_t>(rng() % 40); // an idle stretch
            if (pct(rng) >= busy) {
                seq[s].push_back(event{s, GSQ_HEARTBEAT, tup<int64_t>{t, 0, 0, 0}, false});
                progress = std::max(progress, t);
                continue;
            }
            event e{s, GSQ_DATA, tup<int64_t>{t, static_cast<uint32_t>(rng() % n_keys),
                                               static_cast<uint32_t>(rng() % 100), id++},
                    false};
            if (progress > t_lo && pct(rng) < 4) {
                e.tu.t = progress - 1;
                e.late = true;
            } else {
                progress = std::max(progress, t);
            }
            seq[s].push_back(e);
            if (pct(rng) < 10)
                seq[s].push_back(e); // a duplicate (same id: a repeated R or S row)
        }
    }
    // Brute force over the tuples the operator must take.
    std::vector<uint32_t> want;
    for (const event &se : seq[1]) {
        if (se.kind != GSQ_DATA || se.late || se.tu.v % 7 == 0)
            continue;
        const int64_t s_t = se.tu.t;
        int64_t lo = s_t - (window - 1);
        if (std::is_unsigned_v<T> && lo < 0)
            lo = 0;
        bool hit = false;
        for (const event &re : seq[0])
            hit = hit || (re.kind == GSQ_DATA && !re.late && re.tu.v % 5 != 0 && re.tu.k == se.tu.k &&
                          re.tu.t >= lo && re.tu.t <= s_t);
        if (hit)
            want.push_back(se.tu.id);
    }
    // A random interleaving; each input ends with its EOF.
    std::vector<event> order;
    size_t pos[2] = {0, 0};
    const int bias = pct(rng);
    while (pos[0] < seq[0].size() || pos[1] < seq[1].size()) {
        int s = pct(rng) < bias ? 0 : 1;
        const int burst = 1 + static_cast<int>(rng() % 30);
        for (int b = 0; b < burst; ++b) {
            if (pos[s] >= seq[s].size())
                s = 1 - s;
            order.push_back(seq[s][pos[s]++]);
            if (pos[s] == seq[s].size())
                order.push_back(event{s, GSQ_EOF, {}, false});
            if (pos[0] >= seq[0].size() && pos[1] >= seq[1].size())
                break;
        }
    }
    for (int s = 0; s < 2; ++s)
        if (seq[s].empty())
            order.push_back(event{s, GSQ_EOF, {}, false});

    gsq_node node;
    g_window_back = window - 1;
    gsq::filter_join_op<functor<T>> op(&node);
    functor<T> &f = op.functor();
    uint64_t late = 0;
    for (const event &e : order) {
        tup<T> tu{static_cast<T>(e.tu.t), e.tu.k, e.tu.v, e.tu.id};
        if (e.kind == GSQ_EOF)
            op.accept(&node, e.input, GSQ_EOF, nullptr, 0);
        else
            op.accept(&node, e.input, e.kind, &tu, sizeof tu);
        late += e.late && ((e.input == 0 && e.tu.v % 5 != 0) || (e.input == 1 && e.tu.v % 7 != 0));
    }
    std::vector<uint32_t> got;
    for (const out_event &o : f.log)
        if (!o.heartbeat)
            got.push_back(o.id);
    // Duplicated S rows appear twice in `want` as in `got`.
    CHECK(got == want);
    g_rows += got.size();
    for (const event &se : seq[1])
        g_candidates += se.kind == GSQ_DATA;
    for (const out_event &o : f.log)
        g_hbs += o.heartbeat;
    g_late += late;
    if (got != want)
        std::fprintf(stderr, "  got %zu rows, want %zu\n", got.size(), want.size());
    double last_hb = -1e300;
    bool hb_ok = true;
    for (size_t i = 0; i < f.log.size(); ++i) {
        if (!f.log[i].heartbeat)
            continue;
        hb_ok = hb_ok && f.log[i].t > last_hb;
        last_hb = f.log[i].t;
        for (size_t j = i + 1; j < f.log.size(); ++j)
            hb_ok = hb_ok && (f.log[j].heartbeat || f.log[j].t >= f.log[i].t);
    }
    CHECK(hb_ok);
    CHECK(node.eofs == 1);
    CHECK(op.buffered(0) == 0 && op.buffered(1) == 0 && op.keys() == 0);
    CHECK(node.counters[GSQ_CNT_LATE_DROPPED] == late);
}

// The filter holds only the keys R had within the window of S's progress.
static void test_keys_are_purged()
{
    g_ctx = "purge";
    gsq_node node;
    g_window_back = 4;
    gsq::filter_join_op<functor<uint32_t>> op(&node);
    size_t most = 0;
    for (uint32_t t = 0; t < 100000; ++t) {
        tup<uint32_t> r{t, t, 1, t};      // a new key every time
        tup<uint32_t> s{t, t - 2, 1, t};  // the key R had 2 units ago
        op.accept(&node, 0, GSQ_DATA, &r, sizeof r);
        op.accept(&node, 1, GSQ_DATA, &s, sizeof s);
        most = std::max(most, op.keys());
    }
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    CHECK(most < 200);
    size_t rows = 0;
    for (const out_event &o : op.functor().log)
        rows += !o.heartbeat;
    CHECK(rows == 100000 - 2);
    CHECK(node.peaks[GSQ_PEAK_HELD_TUPLES] < 300);
}

// A joint heartbeat (a join's joint punctuation) on either input is ignored:
// it moves no progress, so the S tuple stays buffered behind R.
static void test_joint_heartbeat_ignored()
{
    g_ctx = "joint";
    gsq_node node;
    g_window_back = 4;
    gsq::filter_join_op<functor<uint32_t>> op(&node);
    tup<uint32_t> s{10, 1, 1, 1};
    op.accept(&node, 1, GSQ_DATA, &s, sizeof s);
    tup<uint32_t> far{50, 0, 0, 0};
    op.accept(&node, 0, GSQ_JOINT_HEARTBEAT, &far, sizeof far);
    op.accept(&node, 1, GSQ_JOINT_HEARTBEAT, &far, sizeof far);
    CHECK(op.buffered(1) == 1 && op.functor().log.empty() && op.stats().heartbeats_in == 0);
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    CHECK(node.eofs == 1);
}

int main()
{
    std::mt19937_64 rng(20240611);
    for (int i = 0; i < 1500; ++i) {
        trial<uint32_t>(rng, i);
        trial<int64_t>(rng, i);
        trial<double>(rng, i);
    }
    test_keys_are_purged();
    test_joint_heartbeat_ignored();
    std::printf("trials: %llu rows out of %llu S tuples, %llu heartbeats out, %llu late\n",
                (unsigned long long)g_rows, (unsigned long long)g_candidates,
                (unsigned long long)g_hbs, (unsigned long long)g_late);
    CHECK(g_rows > 10000 && g_hbs > 10000 && g_late > 100);
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
