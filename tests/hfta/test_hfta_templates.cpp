// Tests of the header-only HFTA templates (hfta_templates/*.hpp) against a
// fake runtime: the gsq_* functions below record what the operators emit.
// Prints "N passed, N failed"; exit status 0 only if nothing failed.
#include <algorithm>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "gsq_runtime.h"
#include "groupby_op.hpp"
#include "hash_table.hpp"
#include "selection_op.hpp"

// ---- tiny check harness -------------------------------------------------

static int g_passed = 0;
static int g_failed = 0;

template <class T>
static std::string show(const T &v) { return std::to_string(v); }
static std::string show(const std::string &v) { return '"' + v + '"'; }

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) {                                                                  \
            ++g_passed;                                                              \
        } else {                                                                     \
            ++g_failed;                                                              \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_EQ(a, b)                                                               \
    do {                                                                             \
        const auto check_a_ = (a);                                                   \
        const auto check_b_ = (b);                                                   \
        if (check_a_ == check_b_) {                                                  \
            ++g_passed;                                                              \
        } else {                                                                     \
            ++g_failed;                                                              \
            std::fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%s vs %s)\n", __FILE__, \
                         __LINE__, #a, #b, show(check_a_).c_str(),         \
                         show(check_b_).c_str());                          \
        }                                                                            \
    } while (0)

// ---- fake runtime --------------------------------------------------------

struct emitted {
    int kind;
    std::vector<unsigned char> fixed;
    std::map<uint32_t, std::string> strs; // field offset -> bytes
};

struct gsq_node {
    std::vector<emitted> out;
    uint64_t counters[GSQ_CNT__COUNT] = {};
    std::map<std::string, std::string> params;
    bool failed = false;
    std::string failure;
};

extern "C" {

void gsq_emit(gsq_node *node, int kind, const void *fixed, uint32_t fixed_size, const gsq_str_field *strs,
              uint32_t n_strs)
{
    emitted e;
    e.kind = kind;
    if (fixed)
        e.fixed.assign(static_cast<const unsigned char *>(fixed),
                       static_cast<const unsigned char *>(fixed) + fixed_size);
    for (uint32_t i = 0; i < n_strs; ++i)
        e.strs[strs[i].field_off] = std::string(strs[i].s.p, strs[i].s.len);
    node->out.push_back(std::move(e));
}

const char *gsq_param(gsq_node *node, const char *name)
{
    auto it = node->params.find(name);
    return it == node->params.end() ? nullptr : it->second.c_str();
}

void gsq_node_fail(gsq_node *node, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!node->failed) // the first failure is the one reported
        node->failure = buf;
    node->failed = true;
}

int gsq_node_failed(gsq_node *node) { return node->failed ? 1 : 0; }

uint32_t gsq_clock_seconds(gsq_node *) { return 0; }

void gsq_count(gsq_node *node, int counter, uint64_t n) { node->counters[counter] += n; }

// Decimal parsing with the runtime's return convention (0 whole text, 1
// valid prefix or empty, -1 nothing usable); enough for the functors here.
static int parse_decimal(const char *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9')
        v = v * 10 + static_cast<uint64_t>(p[i++] - '0');
    *out = v;
    if (n == 0)
        return 1;
    if (i == 0) {
        *out = 0;
        return -1;
    }
    return i == n ? 0 : 1;
}

int gsq_parse_uint(const char *p, size_t n, uint32_t *out)
{
    uint64_t v;
    int rc = parse_decimal(p, n, &v);
    *out = static_cast<uint32_t>(v);
    return rc;
}

int gsq_parse_ullong(const char *p, size_t n, uint64_t *out) { return parse_decimal(p, n, out); }

} // extern "C"

// ---- tuple layouts (what streams.h would generate) -----------------------

struct tup_pkt { // input: PKT(time increasing, src, name, len)
    uint32_t time;
    uint32_t src;
    gsq_strref name;
    uint32_t len;
};

struct tup_flow { // output: tb, src, name, cnt, bytes
    uint32_t tb;
    uint32_t src;
    gsq_strref name;
    uint64_t cnt;
    uint64_t bytes;
};

// A serialized input tuple: fixed struct, then the string bytes.
static std::vector<unsigned char> pkt(uint32_t time, uint32_t src, const std::string &name, uint32_t len)
{
    tup_pkt t{};
    t.time = time;
    t.src = src;
    t.len = len;
    t.name.off = sizeof(tup_pkt);
    t.name.len = static_cast<uint32_t>(name.size());
    std::vector<unsigned char> bytes(sizeof t + name.size());
    std::memcpy(bytes.data(), &t, sizeof t);
    if (!name.empty())
        std::memcpy(bytes.data() + sizeof t, name.data(), name.size());
    return bytes;
}

struct flow_row {
    uint32_t tb, src;
    std::string name;
    uint64_t cnt, bytes;
    bool operator==(const flow_row &o) const
    {
        return tb == o.tb && src == o.src && name == o.name && cnt == o.cnt && bytes == o.bytes;
    }
    bool operator<(const flow_row &o) const
    {
        return std::tie(tb, src, name, cnt, bytes) < std::tie(o.tb, o.src, o.name, o.cnt, o.bytes);
    }
};

static flow_row decode_flow(const emitted &e)
{
    tup_flow f{};
    std::memcpy(&f, e.fixed.data(), sizeof f);
    auto s = e.strs.find(offsetof(tup_flow, name));
    return flow_row{f.tb, f.src, s == e.strs.end() ? std::string("<missing>") : s->second, f.cnt, f.bytes};
}

static size_t count_kind(const gsq_node &node, int kind)
{
    return static_cast<size_t>(std::count_if(node.out.begin(), node.out.end(),
                                             [kind](const emitted &e) { return e.kind == kind; }));
}

// ---- functors (what the code generator would write) -----------------------

// SELECT time, src, name, len FROM PKT WHERE len > $min_len  (default 100)
struct big_packets_functor {
    uint32_t min_len = 100;

    explicit big_packets_functor(gsq_node *node)
    {
        if (const char *p = gsq_param(node, "min_len")) {
            if (gsq_parse_uint(p, std::strlen(p), &min_len) != 0)
                gsq_node_fail(node, "parameter min_len: bad uint '%s'", p);
        }
    }

    void process(gsq_node *node, const void *tup, uint32_t)
    {
        tup_pkt in;
        std::memcpy(&in, tup, sizeof in);
        if (!(in.len > min_len))
            return;
        gsq_str name = gsq_tuple_str(tup, in.name);
        tup_pkt out = in;
        gsq_str_field f{static_cast<uint32_t>(offsetof(tup_pkt, name)), name};
        gsq_emit(node, GSQ_DATA, &out, sizeof out, &f, 1);
    }
};

// SELECT tb, src, name, count(*), sum(len) FROM PKT WHERE len > 0
// GROUP BY time/60 as tb, src, name  HAVING count(*) >= $min_cnt (default 0)
struct flows_functor {
    struct key_type {
        uint32_t tb = 0;
        uint32_t src = 0;
        std::string name;
    };
    struct state_type {
        uint64_t cnt = 0;
        uint64_t bytes = 0;
    };
    using epoch_type = uint32_t;
    struct key_hash {
        size_t operator()(const key_type &k) const
        {
            return gsq::hash_combine(gsq::hash_combine(k.tb, k.src), gsq::hash_bytes(k.name.data(), k.name.size()));
        }
    };
    struct key_eq {
        bool operator()(const key_type &a, const key_type &b) const
        {
            return a.tb == b.tb && a.src == b.src && a.name == b.name;
        }
    };

    uint64_t min_cnt = 0;
    int emit_calls = 0;

    explicit flows_functor(gsq_node *node)
    {
        if (const char *p = gsq_param(node, "min_cnt")) {
            if (gsq_parse_ullong(p, std::strlen(p), &min_cnt) != 0)
                gsq_node_fail(node, "parameter min_cnt: bad ullong '%s'", p);
        }
        if (gsq_param(node, "throw_in_ctor"))
            throw std::runtime_error("flows: constructor failed");
    }

    bool extract(const void *tup, uint32_t, key_type &key)
    {
        tup_pkt t;
        std::memcpy(&t, tup, sizeof t);
        if (!(t.len > 0))
            return false;
        key.tb = t.time / 60;
        key.src = t.src;
        gsq_str s = gsq_tuple_str(tup, t.name);
        key.name.assign(s.p, s.len);
        return true;
    }

    epoch_type epoch_of(const key_type &key) const { return key.tb; }

    int epoch_compare(const epoch_type &current, const epoch_type &e) const
    {
        return e > current ? 1 : (e < current ? -1 : 0);
    }

    void init(state_type &s, const void *tup, uint32_t len) { update(s, tup, len); }

    void update(state_type &s, const void *tup, uint32_t)
    {
        tup_pkt t;
        std::memcpy(&t, tup, sizeof t);
        if (t.len == 999999)
            throw std::runtime_error("flows: impossible length");
        s.cnt += 1;
        s.bytes += t.len;
    }

    void emit(gsq_node *node, const key_type &k, const state_type &s)
    {
        ++emit_calls;
        if (!(s.cnt >= min_cnt))
            return;
        tup_flow out{};
        out.tb = k.tb;
        out.src = k.src;
        out.cnt = s.cnt;
        out.bytes = s.bytes;
        gsq_str_field f{static_cast<uint32_t>(offsetof(tup_flow, name)),
                        gsq_str_lit(k.name.data(), static_cast<uint32_t>(k.name.size()))};
        gsq_emit(node, GSQ_DATA, &out, sizeof out, &f, 1);
    }
};

struct flows3_functor : flows_functor { // the same query over three inputs
    static constexpr int n_inputs = 3;
    using flows_functor::flows_functor;
};

using flows_op = gsq::groupby_op<flows_functor>;

static void feed(flows_op &op, gsq_node &node, uint32_t time, uint32_t src, const std::string &name, uint32_t len,
                 int input = 0)
{
    auto t = pkt(time, src, name, len);
    op.accept(&node, input, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
}

// ---- hash table tests ------------------------------------------------------

static void test_hash_many_inserts()
{
    gsq::open_hash_map<uint64_t, uint64_t> m;
    CHECK_EQ(m.capacity(), size_t(0));
    CHECK(m.find(7) == nullptr);
    const uint64_t n = 100000;
    bool all_inserted = true;
    for (uint64_t i = 0; i < n; ++i) {
        auto [v, inserted] = m.find_or_insert(i * 7919);
        all_inserted = all_inserted && inserted;
        v = i;
    }
    CHECK(all_inserted);
    CHECK_EQ(m.size(), size_t(n));
    const size_t cap = m.capacity();
    CHECK((cap & (cap - 1)) == 0);     // power of two
    CHECK(m.size() * 10 <= cap * 7);   // load <= 0.7
    CHECK(m.size() * 10 > cap * 7 / 2); // grew by doubling, not more
    bool all_found = true;
    for (uint64_t i = 0; i < n; ++i) {
        const uint64_t *v = m.find(i * 7919);
        all_found = all_found && v && *v == i;
    }
    CHECK(all_found);
    CHECK(m.find(1) == nullptr);
    auto [again, inserted] = m.find_or_insert(7919 * 5);
    CHECK(!inserted);
    CHECK_EQ(again, uint64_t(5));
    CHECK_EQ(m.size(), size_t(n));
}

static void test_hash_iteration()
{
    gsq::open_hash_map<uint32_t, uint32_t> m;
    uint64_t expect_sum = 0;
    for (uint32_t i = 1; i <= 1000; ++i) {
        m.find_or_insert(i).first = i * 2;
        expect_sum += i;
    }
    uint64_t key_sum = 0;
    size_t visits = 0;
    bool values_ok = true;
    std::vector<uint32_t> order;
    for (auto [key, value] : m) {
        key_sum += key;
        ++visits;
        values_ok = values_ok && value == key * 2;
        order.push_back(key);
    }
    CHECK_EQ(visits, size_t(1000));
    CHECK_EQ(key_sum, expect_sum);
    CHECK(values_ok);

    // Resumable index iteration, 7 entries at a time, sees the same order.
    std::vector<uint32_t> resumed;
    size_t pos = 0;
    bool slots_ok = true;
    for (;;) {
        int taken = 0;
        while (taken < 7) {
            pos = m.next_occupied(pos);
            if (pos == m.capacity())
                break;
            slots_ok = slots_ok && m.occupied(pos) && m.value_at(pos) == m.key_at(pos) * 2;
            resumed.push_back(m.key_at(pos));
            ++pos;
            ++taken;
        }
        if (taken < 7)
            break;
    }
    CHECK(slots_ok);
    CHECK(resumed == order);

    // Mutation through the iterator, and const iteration.
    for (auto e : m)
        e.value += 1;
    const auto &cm = m;
    bool bumped = true;
    for (auto e : cm)
        bumped = bumped && e.value == e.key * 2 + 1;
    CHECK(bumped);

    // Deterministic: same keys inserted in the same order iterate identically.
    gsq::open_hash_map<uint32_t, uint32_t> twin;
    for (uint32_t i = 1; i <= 1000; ++i)
        twin.find_or_insert(i);
    std::vector<uint32_t> twin_order;
    for (auto e : twin)
        twin_order.push_back(e.key);
    CHECK(twin_order == order);
}

struct constant_hash {
    size_t operator()(uint32_t) const { return 42; }
};
struct mod8_hash {
    size_t operator()(uint32_t k) const { return k % 8; }
};

static void test_hash_bad_hash()
{
    gsq::open_hash_map<uint32_t, uint32_t, constant_hash> m;
    for (uint32_t i = 0; i < 1000; ++i)
        m.find_or_insert(i).first = i + 1;
    CHECK_EQ(m.size(), size_t(1000));
    bool ok = true;
    for (uint32_t i = 0; i < 1000; ++i)
        ok = ok && m.find(i) && *m.find(i) == i + 1;
    CHECK(ok);
    CHECK(m.find(5000) == nullptr);
    // Erase every third key from one long probe run (backward shift).
    for (uint32_t i = 0; i < 1000; i += 3)
        CHECK(m.erase(i));
    CHECK(!m.erase(0));
    ok = true;
    for (uint32_t i = 0; i < 1000; ++i)
        ok = ok && ((i % 3 == 0) ? m.find(i) == nullptr : (m.find(i) && *m.find(i) == i + 1));
    CHECK(ok);
    CHECK_EQ(m.size(), size_t(1000 - 334));
}

static void test_hash_erase_random()
{
    // Randomised against std::unordered_map, with a hash whose probe runs
    // wrap around the end of a small table.
    gsq::open_hash_map<uint32_t, uint32_t, mod8_hash> m;
    std::unordered_map<uint32_t, uint32_t> ref;
    std::mt19937 rng(12345);
    bool ok = true;
    for (int step = 0; step < 20000; ++step) {
        const uint32_t k = rng() % 64;
        if (rng() % 3 == 0) {
            ok = ok && (m.erase(k) == (ref.erase(k) == 1));
        } else {
            auto [v, inserted] = m.find_or_insert(k);
            ok = ok && (inserted == (ref.count(k) == 0));
            v = static_cast<uint32_t>(step);
            ref[k] = static_cast<uint32_t>(step);
        }
        ok = ok && m.size() == ref.size();
        if (step % 97 == 0) {
            for (uint32_t q = 0; q < 64; ++q) {
                auto it = ref.find(q);
                const uint32_t *v = m.find(q);
                ok = ok && (it == ref.end() ? v == nullptr : (v && *v == it->second));
            }
        }
    }
    CHECK(ok);
}

static void test_hash_string_keys()
{
    gsq::open_hash_map<std::string, int> m;
    bool all_inserted = true;
    for (int i = 0; i < 5000; ++i) {
        std::string key = "key-with-a-long-enough-prefix-to-allocate-" + std::to_string(i);
        auto [v, inserted] = m.find_or_insert(std::move(key));
        all_inserted = all_inserted && inserted;
        v = i;
    }
    CHECK(all_inserted);
    CHECK_EQ(m.size(), size_t(5000));
    const std::string probe = "key-with-a-long-enough-prefix-to-allocate-1234";
    auto [v, inserted] = m.find_or_insert(probe); // by const&
    CHECK(!inserted);
    CHECK_EQ(v, 1234);
    CHECK(m.find("nope") == nullptr);
    CHECK(m.find("") == nullptr);
    m.find_or_insert(std::string()).first = -1; // the empty string is a key like any other
    CHECK(m.find("") && *m.find("") == -1);
}

static void test_hash_clear_release_swap()
{
    gsq::open_hash_map<std::string, int> a, b;
    for (int i = 0; i < 100; ++i)
        a.find_or_insert("a" + std::to_string(i)).first = i;
    b.find_or_insert("only").first = 1;
    const size_t cap_a = a.capacity();
    a.swap(b);
    CHECK_EQ(a.size(), size_t(1));
    CHECK_EQ(b.size(), size_t(100));
    CHECK_EQ(b.capacity(), cap_a);
    CHECK(a.find("only") && !a.find("a1"));
    CHECK(b.find("a1") && *b.find("a1") == 1);
    b.clear();
    CHECK_EQ(b.size(), size_t(0));
    CHECK_EQ(b.capacity(), cap_a); // clear keeps the slots
    CHECK(b.find("a1") == nullptr);
    CHECK(b.begin() == b.end());
    b.find_or_insert("again").first = 3;
    CHECK_EQ(b.size(), size_t(1));
    b.release();
    CHECK_EQ(b.capacity(), size_t(0)); // release frees them
    CHECK(b.find("again") == nullptr);
    CHECK(b.begin() == b.end());
    b.find_or_insert("after-release").first = 4;
    CHECK(b.find("after-release") && *b.find("after-release") == 4);

    gsq::open_hash_map<int, int> r(1000);
    const size_t reserved = r.capacity();
    CHECK(reserved >= 1024 && (reserved & (reserved - 1)) == 0);
    for (int i = 0; i < 700; ++i)
        r.find_or_insert(i);
    CHECK_EQ(r.capacity(), reserved); // no growth within the reservation
}

// ---- selection ---------------------------------------------------------------

static void test_selection()
{
    using op_t = gsq::selection_op<big_packets_functor>;
    gsq_node node;
    op_t op(&node);
    const uint32_t lens[] = {50, 150, 100, 101, 1500};
    for (uint32_t i = 0; i < 5; ++i) {
        auto t = pkt(i, i + 10, "n" + std::to_string(i), lens[i]);
        op.accept(&node, 0, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
    }
    auto hb = pkt(9, 0, "", 0);
    op.accept(&node, 0, GSQ_HEARTBEAT, hb.data(), static_cast<uint32_t>(hb.size()));
    CHECK_EQ(node.out.size(), size_t(3)); // 150, 101, 1500; the heartbeat is not forwarded
    std::vector<uint32_t> got;
    std::vector<std::string> names;
    for (const auto &e : node.out) {
        tup_pkt t;
        std::memcpy(&t, e.fixed.data(), sizeof t);
        got.push_back(t.len);
        names.push_back(e.strs.at(offsetof(tup_pkt, name)));
    }
    CHECK((got == std::vector<uint32_t>{150, 101, 1500}));
    CHECK((names == std::vector<std::string>{"n1", "n3", "n4"}));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    op.accept(&node, 0, GSQ_EOF, nullptr, 0); // a repeated EOF is not forwarded twice
    CHECK_EQ(count_kind(node, GSQ_EOF), size_t(1));
    CHECK_EQ(node.out.back().kind, int(GSQ_EOF));
    CHECK(node.out.back().fixed.empty());

    // Parameter, through the C glue.
    constexpr static int inputs[] = {0};
    const gsq_hfta_def def = gsq::hfta_def_of<op_t>("big", inputs, 1);
    CHECK_EQ(def.n_inputs, 1);
    gsq_node pnode;
    pnode.params["min_len"] = "1000";
    void *h = def.create(&pnode);
    CHECK(h != nullptr);
    for (uint32_t len : lens) {
        auto t = pkt(0, 0, "x", len);
        def.accept(h, &pnode, 0, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
    }
    def.accept(h, &pnode, 0, GSQ_EOF, nullptr, 0);
    CHECK_EQ(count_kind(pnode, GSQ_DATA), size_t(1));
    CHECK_EQ(count_kind(pnode, GSQ_EOF), size_t(1));
    // Data after the end of stream is a protocol error, reported, not thrown.
    auto late = pkt(0, 0, "x", 5000);
    def.accept(h, &pnode, 0, GSQ_DATA, late.data(), static_cast<uint32_t>(late.size()));
    CHECK(pnode.failed);
    CHECK(pnode.failure.find("after its end of stream") != std::string::npos);
    def.destroy(h);

    gsq_node bad;
    bad.params["min_len"] = "lots";
    CHECK(def.create(&bad) == nullptr);
    CHECK(bad.failed && bad.failure.find("min_len") != std::string::npos);
}

// ---- group-by ----------------------------------------------------------------

static void test_groupby_single_epoch()
{
    gsq_node node;
    flows_op op(&node);
    feed(op, node, 0, 1, "a", 10);
    feed(op, node, 5, 2, "b", 20);
    feed(op, node, 10, 1, "a", 30);
    feed(op, node, 59, 1, "c", 40);
    feed(op, node, 30, 1, "a", 0); // WHERE len > 0 filters it
    CHECK_EQ(node.out.size(), size_t(0));
    CHECK_EQ(op.open_groups(), size_t(3));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK_EQ(node.out.size(), size_t(4));
    CHECK_EQ(node.out.back().kind, int(GSQ_EOF));
    std::vector<flow_row> rows;
    for (size_t i = 0; i + 1 < node.out.size(); ++i)
        rows.push_back(decode_flow(node.out[i]));
    std::sort(rows.begin(), rows.end());
    std::vector<flow_row> want = {{0, 1, "a", 2, 40}, {0, 1, "c", 1, 40}, {0, 2, "b", 1, 20}};
    CHECK(rows == want);
    CHECK_EQ(op.stats().groups_created, uint64_t(3));
    CHECK_EQ(op.stats().groups_flushed, uint64_t(3));
    CHECK_EQ(op.stats().max_table_size, size_t(3));
    CHECK_EQ(op.open_groups(), size_t(0));
    CHECK_EQ(op.allocated_slots(), size_t(0));
}

// The order a table of these keys (inserted in this order) iterates in.
static std::vector<uint32_t> slot_order_of_srcs(uint32_t tb, const std::vector<uint32_t> &srcs, const std::string &name)
{
    gsq::open_hash_map<flows_functor::key_type, flows_functor::state_type, flows_functor::key_hash,
                       flows_functor::key_eq>
        ref;
    for (uint32_t s : srcs)
        ref.find_or_insert(flows_functor::key_type{tb, s, name});
    std::vector<uint32_t> order;
    for (auto e : ref)
        order.push_back(e.key.src);
    return order;
}

static void test_groupby_slow_flush()
{
    gsq_node node;
    flows_op op(&node);
    std::vector<uint32_t> srcs;
    for (uint32_t s = 100; s < 110; ++s) { // epoch 0: 10 groups, src 100..109
        srcs.push_back(s);
        feed(op, node, 1, s, "g", s);
        feed(op, node, 2, s, "g", 1);
    }
    CHECK_EQ(node.out.size(), size_t(0));

    // The first tuple of epoch 1 closes epoch 0 but emits nothing itself.
    feed(op, node, 60, 1, "new", 5);
    CHECK_EQ(node.out.size(), size_t(0));
    CHECK_EQ(op.flush_pending(), size_t(10));
    CHECK_EQ(op.open_groups(), size_t(1));
    CHECK_EQ(op.stats().epochs_closed, uint64_t(1));

    // Then every input tuple emits exactly one old group, in slot order.
    std::vector<uint32_t> flushed_srcs;
    bool one_each = true;
    for (uint32_t i = 0; i < 10; ++i) {
        const size_t before = node.out.size();
        feed(op, node, 61 + i, 1, "new", 5); // all in epoch 1, one group
        one_each = one_each && node.out.size() == before + 1;
        const flow_row r = decode_flow(node.out.back());
        flushed_srcs.push_back(r.src);
        one_each = one_each && r.tb == 0 && r.cnt == 2 && r.bytes == r.src + 1 && r.name == "g";
        one_each = one_each && op.flush_pending() == 9 - i;
    }
    CHECK(one_each);
    CHECK(flushed_srcs == slot_order_of_srcs(0, srcs, "g"));
    // The flushing table's memory is gone once its last group is out.
    gsq::open_hash_map<int, int> one;
    one.find_or_insert(1);
    CHECK_EQ(op.allocated_slots(), one.capacity());

    // Nothing left to flush: further tuples emit nothing.
    feed(op, node, 100, 2, "new", 5);
    CHECK_EQ(node.out.size(), size_t(10));
    CHECK_EQ(op.open_groups(), size_t(2));

    // A filtered tuple still advances the flush: close epoch 1 (2 groups).
    feed(op, node, 120, 1, "x", 5);
    CHECK_EQ(op.flush_pending(), size_t(2));
    feed(op, node, 121, 1, "x", 0); // WHERE rejects it, the flush still steps
    CHECK_EQ(node.out.size(), size_t(11));
    CHECK_EQ(op.flush_pending(), size_t(1));
    CHECK_EQ(op.open_groups(), size_t(1));
}

static void test_groupby_epoch_change_mid_flush()
{
    gsq_node node;
    flows_op op(&node);
    for (uint32_t s = 0; s < 8; ++s) // epoch 0: 8 groups
        feed(op, node, 0, s, "e0", 1);
    feed(op, node, 60, 0, "e1", 1); // closes epoch 0: flush of 8 starts
    feed(op, node, 61, 1, "e1", 1); // emits old group 1
    feed(op, node, 62, 2, "e1", 1); // emits old group 2
    CHECK_EQ(node.out.size(), size_t(2));
    CHECK_EQ(op.flush_pending(), size_t(6));
    CHECK_EQ(op.open_groups(), size_t(3));

    // Epoch 2 arrives mid-flush: one step (group 3), then the remaining 5
    // immediately; epoch 1's 3 groups start their own slow flush.
    feed(op, node, 120, 9, "e2", 1);
    CHECK_EQ(node.out.size(), size_t(8));
    std::set<uint32_t> e0_srcs;
    bool all_e0 = true;
    for (const auto &e : node.out) {
        const flow_row r = decode_flow(e);
        all_e0 = all_e0 && r.tb == 0 && r.name == "e0";
        e0_srcs.insert(r.src);
    }
    CHECK(all_e0);
    CHECK_EQ(e0_srcs.size(), size_t(8)); // each old group exactly once
    CHECK_EQ(op.flush_pending(), size_t(3));
    CHECK_EQ(op.open_groups(), size_t(1));
    CHECK_EQ(op.stats().epochs_closed, uint64_t(2));

    feed(op, node, 121, 9, "e2", 1);
    CHECK_EQ(node.out.size(), size_t(9));
    CHECK_EQ(decode_flow(node.out.back()).tb, uint32_t(1));
}

static void test_groupby_late_tuple()
{
    gsq_node node;
    flows_op op(&node);
    feed(op, node, 60, 1, "a", 1);  // epoch 1
    feed(op, node, 61, 2, "a", 1);
    feed(op, node, 120, 1, "a", 1); // epoch 2: flush of 2 groups starts
    feed(op, node, 59, 7, "late", 1); // epoch 0: late -- but it still steps the flush
    CHECK_EQ(node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(1));
    CHECK_EQ(op.stats().late_dropped, uint64_t(1));
    CHECK_EQ(node.out.size(), size_t(1));
    feed(op, node, 100, 7, "late", 1); // epoch 1 is closed (and flushing): late too
    CHECK_EQ(node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(2));
    CHECK_EQ(op.stats().groups_created, uint64_t(3));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    bool no_late = true;
    for (const auto &e : node.out)
        if (e.kind == GSQ_DATA)
            no_late = no_late && decode_flow(e).name != "late";
    CHECK(no_late);
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(3));
}

static void test_groupby_eof_flush()
{
    gsq_node node;
    flows_op op(&node);
    for (uint32_t s = 0; s < 5; ++s)
        feed(op, node, 0, s, "old", 1);
    for (uint32_t s = 0; s < 4; ++s)
        feed(op, node, 60, s, "cur", 2); // closes epoch 0, flushes 3 of its 5
    CHECK_EQ(node.out.size(), size_t(3));
    CHECK_EQ(op.flush_pending(), size_t(2));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    // The 2 remaining old groups first, then the 4 current ones, then EOF.
    CHECK_EQ(node.out.size(), size_t(3 + 2 + 4 + 1));
    bool order_ok = true;
    for (size_t i = 0; i < 5; ++i)
        order_ok = order_ok && node.out[i].kind == GSQ_DATA && decode_flow(node.out[i]).name == "old";
    for (size_t i = 5; i < 9; ++i)
        order_ok = order_ok && node.out[i].kind == GSQ_DATA && decode_flow(node.out[i]).name == "cur" &&
                   decode_flow(node.out[i]).bytes == 2;
    CHECK(order_ok);
    CHECK_EQ(node.out.back().kind, int(GSQ_EOF));
    CHECK_EQ(count_kind(node, GSQ_EOF), size_t(1));
    CHECK_EQ(op.allocated_slots(), size_t(0));
    CHECK_EQ(op.stats().groups_flushed, uint64_t(9));

    // An empty input still ends with exactly one EOF.
    gsq_node empty_node;
    flows_op empty_op(&empty_node);
    empty_op.accept(&empty_node, 0, GSQ_EOF, nullptr, 0);
    CHECK_EQ(empty_node.out.size(), size_t(1));
    CHECK_EQ(empty_node.out[0].kind, int(GSQ_EOF));
}

static void test_groupby_having()
{
    gsq_node node;
    node.params["min_cnt"] = "3";
    flows_op op(&node);
    for (uint32_t i = 0; i < 3; ++i)
        feed(op, node, i, 1, "three", 1);
    feed(op, node, 0, 2, "one", 1);
    for (uint32_t i = 0; i < 4; ++i)
        feed(op, node, i, 3, "four", 1);
    feed(op, node, 60, 1, "next", 1); // closes epoch 0 (3 groups)
    feed(op, node, 61, 1, "next", 1);
    feed(op, node, 62, 1, "next", 1);
    feed(op, node, 63, 1, "next", 1);
    // Three groups were flushed (one per tuple); HAVING passed two of them.
    CHECK_EQ(op.functor().emit_calls, 3);
    CHECK_EQ(op.stats().groups_flushed, uint64_t(3));
    std::vector<flow_row> rows;
    for (const auto &e : node.out)
        rows.push_back(decode_flow(e));
    std::sort(rows.begin(), rows.end());
    std::vector<flow_row> want = {{0, 1, "three", 3, 3}, {0, 3, "four", 4, 4}};
    CHECK(rows == want);
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(3)); // "next" has count 3
    CHECK_EQ(decode_flow(node.out[2]).name, std::string("next"));
}

static void test_groupby_multiple_inputs()
{
    using op3 = gsq::groupby_op<flows3_functor>;
    static_assert(op3::n_inputs == 3);
    gsq_node node;
    op3 op(&node);
    auto feed3 = [&](int input, uint32_t time, uint32_t src) {
        auto t = pkt(time, src, "m", 1);
        op.accept(&node, input, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
    };
    feed3(0, 0, 1);
    feed3(1, 0, 1);
    feed3(2, 0, 2);
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    op.accept(&node, 1, GSQ_EOF, nullptr, 0); // repeated: counts once, input 2 stays open
    CHECK_EQ(node.out.size(), size_t(0));
    feed3(2, 1, 1); // input 2 is still open
    bool threw = false;
    try {
        feed3(0, 1, 1); // input 0 has ended
    } catch (const gsq::protocol_error &) {
        threw = true;
    }
    CHECK(threw);
    threw = false;
    try {
        feed3(3, 1, 1);
    } catch (const gsq::protocol_error &) {
        threw = true;
    }
    CHECK(threw);
    op.accept(&node, 2, GSQ_EOF, nullptr, 0);
    CHECK_EQ(node.out.size(), size_t(3));
    CHECK_EQ(node.out.back().kind, int(GSQ_EOF));
    std::vector<flow_row> rows = {decode_flow(node.out[0]), decode_flow(node.out[1])};
    std::sort(rows.begin(), rows.end());
    std::vector<flow_row> want = {{0, 1, "m", 3, 3}, {0, 2, "m", 1, 1}};
    CHECK(rows == want);
}

static void test_groupby_memory_across_epochs()
{
    gsq_node node;
    flows_op op(&node);
    size_t max_slots = 0;
    const uint32_t groups = 1000;
    for (uint32_t epoch = 0; epoch < 40; ++epoch)
        for (uint32_t s = 0; s < groups; ++s) {
            feed(op, node, epoch * 60, s, "mem", 1);
            max_slots = std::max(max_slots, op.allocated_slots());
        }
    // Two tables of 1000 groups at most: 2 * 2048 slots.
    CHECK(max_slots <= 2 * 2048);
    CHECK_EQ(op.stats().max_table_size, size_t(groups));
    CHECK_EQ(op.stats().groups_created, uint64_t(40) * groups);
    // The first tuple of an epoch closes the one before without a flush
    // step, so the 999 later tuples of the last epoch flush all but one of
    // the previous epoch's groups (earlier flushes were finished by the next
    // epoch's first tuple).
    CHECK_EQ(op.stats().groups_flushed, uint64_t(39) * groups - 1);
    CHECK_EQ(op.flush_pending(), size_t(1));
    CHECK_EQ(op.allocated_slots(), size_t(2 * 2048));
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(39) * groups - 1);
    feed(op, node, 39 * 60, 0, "mem", 1); // one more step ends that flush
    CHECK_EQ(op.flush_pending(), size_t(0));
    CHECK_EQ(op.allocated_slots(), size_t(2048));
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(39) * groups);
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(40) * groups);
    CHECK_EQ(op.allocated_slots(), size_t(0));
}

static void test_groupby_immediate_policy()
{
    gsq_node node;
    gsq::groupby_op<flows_functor, gsq::flush_policy::immediate> op(&node);
    for (uint32_t s = 0; s < 6; ++s) {
        auto t = pkt(0, s, "i", 1);
        op.accept(&node, 0, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
    }
    auto t = pkt(60, 0, "i", 1);
    op.accept(&node, 0, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
    CHECK_EQ(node.out.size(), size_t(6)); // the whole epoch at once
    CHECK_EQ(op.flush_pending(), size_t(0));
    CHECK_EQ(op.allocated_slots(), size_t(16));
}

static void test_groupby_c_glue()
{
    constexpr static int inputs[] = {5};
    static const gsq_hfta_def def = gsq::hfta_def_of<flows_op>("flows", inputs, 6);
    CHECK(std::strcmp(def.name, "flows") == 0);
    CHECK_EQ(def.n_inputs, 1);
    CHECK_EQ(def.in_streams[0], 5);
    CHECK_EQ(def.out_stream, 6);

    gsq_node node;
    void *op = def.create(&node);
    CHECK(op != nullptr);
    for (uint32_t s = 0; s < 3; ++s) {
        auto t = pkt(0, s, "glue", 7);
        def.accept(op, &node, 0, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
    }
    def.accept(op, &node, 0, GSQ_HEARTBEAT, nullptr, 0);
    def.accept(op, &node, 0, GSQ_EOF, nullptr, 0);
    CHECK_EQ(node.out.size(), size_t(4));
    CHECK(!node.failed);
    def.destroy(op);

    // An exception inside the functor becomes gsq_node_fail, never a throw.
    gsq_node throwing;
    op = def.create(&throwing);
    auto ok = pkt(0, 1, "x", 1);
    auto bad = pkt(0, 1, "x", 999999);
    def.accept(op, &throwing, 0, GSQ_DATA, ok.data(), static_cast<uint32_t>(ok.size()));
    def.accept(op, &throwing, 0, GSQ_DATA, bad.data(), static_cast<uint32_t>(bad.size()));
    CHECK(throwing.failed);
    CHECK_EQ(throwing.failure, std::string("flows: impossible length"));
    def.accept(op, &throwing, 7, GSQ_DATA, ok.data(), static_cast<uint32_t>(ok.size()));
    def.accept(op, &throwing, 0, 42, nullptr, 0);
    CHECK_EQ(throwing.failure, std::string("flows: impossible length")); // the first failure stays
    def.destroy(op); // groups still open: freed, not emitted

    // Bad parameter: create reports and returns NULL.
    gsq_node badparam;
    badparam.params["min_cnt"] = "-3x";
    CHECK(def.create(&badparam) == nullptr);
    CHECK(badparam.failed && badparam.failure.find("min_cnt") != std::string::npos);

    // A throwing constructor: create reports and returns NULL.
    gsq_node ctor;
    ctor.params["throw_in_ctor"] = "1";
    CHECK(def.create(&ctor) == nullptr);
    CHECK_EQ(ctor.failure, std::string("flows: constructor failed"));

    // Unknown kinds and bad input indexes name the problem.
    gsq_node proto;
    op = def.create(&proto);
    def.accept(op, &proto, 1, GSQ_DATA, ok.data(), static_cast<uint32_t>(ok.size()));
    CHECK(proto.failure.find("input 1") != std::string::npos);
    def.destroy(op);
    gsq_node kind;
    op = def.create(&kind);
    def.accept(op, &kind, 0, 42, nullptr, 0);
    CHECK(kind.failure.find("unknown tuple kind 42") != std::string::npos);
    def.destroy(op);
}

int main()
{
    test_hash_many_inserts();
    test_hash_iteration();
    test_hash_bad_hash();
    test_hash_erase_random();
    test_hash_string_keys();
    test_hash_clear_release_swap();
    test_selection();
    test_groupby_single_epoch();
    test_groupby_slow_flush();
    test_groupby_epoch_change_mid_flush();
    test_groupby_late_tuple();
    test_groupby_eof_flush();
    test_groupby_having();
    test_groupby_multiple_inputs();
    test_groupby_memory_across_epochs();
    test_groupby_immediate_policy();
    test_groupby_c_glue();
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
