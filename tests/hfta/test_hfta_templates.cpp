// Tests of the header-only HFTA templates (hfta_templates/*.hpp) against a
// fake runtime: the gsq_* functions below record what the operators emit.
// Prints "N passed, N failed"; exit status 0 only if nothing failed.
#include <algorithm>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <climits>
#include <cstdint>
#include <map>
#include <optional>
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
#include "join_op.hpp"
#include "merge_op.hpp"
#include "regex.hpp"
#include "selection_op.hpp"

// ---- tiny check harness -------------------------------------------------

// The tests compile in parts (-DTEST_PART=1..TEST_PARTS, built side by side
// by test_hfta_templates.py: one unit instantiating every operator took
// minutes under the sanitizers); without TEST_PART one program runs them all.
#ifndef TEST_PART
#define TEST_PART 0
#endif
#define TEST_PARTS 9
#define IN_PART(n) (TEST_PART == 0 || TEST_PART == (n))

static int g_passed = 0;
static int g_failed = 0;

template <class T>
[[maybe_unused]] static std::string show(const T &v) { return std::to_string(v); }
[[maybe_unused]] static std::string show(const std::string &v) { return '"' + v + '"'; }

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
    std::vector<unsigned char> fixed;     // gsq_emit: the fixed struct; gsq_emit_raw: the whole tuple
    std::map<uint32_t, std::string> strs; // field offset -> bytes (gsq_emit only)
    bool raw = false;                     // emitted by gsq_emit_raw
};

struct gsq_node {
    std::vector<emitted> out;
    uint64_t counters[GSQ_CNT__COUNT] = {};
    uint64_t peaks[GSQ_PEAK__COUNT] = {};
    std::map<std::string, std::string> params;
    bool failed = false;
    std::string failure;
    bool generated = false; // gsq_heartbeats_generated
    bool strict_input = false; // gsq_input_heartbeats_strict (every input)
    uint64_t max_groups = 0; // gsq_node_max_groups: 0, none given (no limit here)
};

extern "C" {

// the tables' memory (table_mem.c's, without its huge-page hint)
void *gsq_table_reserve(size_t n, size_t size) { return std::malloc(n && size ? n * size : 1); }
void gsq_table_free(void *p) { std::free(p); }

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

void gsq_emit_raw(gsq_node *node, int kind, const void *tup, uint32_t len)
{
    emitted e;
    e.kind = kind;
    e.raw = true;
    if (kind != GSQ_EOF && tup)
        e.fixed.assign(static_cast<const unsigned char *>(tup), static_cast<const unsigned char *>(tup) + len);
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
int gsq_heartbeats_generated(gsq_node *node) { return node->generated ? 1 : 0; }
int gsq_input_heartbeats_strict(gsq_node *node, int) { return node->strict_input ? 1 : 0; }
uint64_t gsq_node_max_groups(gsq_node *node, size_t, int *given)
{
    *given = node->max_groups != 0;
    return node->max_groups ? node->max_groups : UINT64_MAX;
}

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

// Decimal parsing with the runtime's return convention (0 whole text, 1
// valid prefix or empty, -1 nothing usable); enough for the functors here.
[[maybe_unused]] static int parse_decimal(const char *p, size_t n, uint64_t *out)
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
[[maybe_unused]] static std::vector<unsigned char> pkt(uint32_t time, uint32_t src, const std::string &name, uint32_t len)
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

[[maybe_unused]] static flow_row decode_flow(const emitted &e)
{
    tup_flow f{};
    std::memcpy(&f, e.fixed.data(), sizeof f);
    auto s = e.strs.find(offsetof(tup_flow, name));
    return flow_row{f.tb, f.src, s == e.strs.end() ? std::string("<missing>") : s->second, f.cnt, f.bytes};
}

[[maybe_unused]] static size_t count_kind(const gsq_node &node, int kind)
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

[[maybe_unused]] static void feed(flows_op &op, gsq_node &node, uint32_t time, uint32_t src, const std::string &name, uint32_t len,
                 int input = 0)
{
    auto t = pkt(time, src, name, len);
    op.accept(&node, input, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
}

// ---- hash table tests ------------------------------------------------------

#if IN_PART(1)
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
    // its last doublings took slot arrays (hash, key, value: 24 bytes a
    // slot) past GSQ_TABLE_HUGE_BYTES, from gsq_table_reserve
    CHECK(cap * 3 * sizeof(uint64_t) >= GSQ_TABLE_HUGE_BYTES);
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
#endif

#if IN_PART(1)
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
#endif

struct constant_hash {
    size_t operator()(uint32_t) const { return 42; }
};
struct mod8_hash {
    size_t operator()(uint32_t k) const { return k % 8; }
};

#if IN_PART(1)
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
#endif

#if IN_PART(1)
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
#endif

#if IN_PART(1)
static void test_hash_erase_if()
{
    // Randomised against std::unordered_map, with wrapping probe runs: every
    // entry the predicate picks goes exactly once, the others stay findable.
    std::mt19937 rng(777);
    bool ok = true;
    for (int round = 0; round < 300; ++round) {
        gsq::open_hash_map<uint32_t, uint32_t, mod8_hash> m;
        std::unordered_map<uint32_t, uint32_t> ref;
        const uint32_t n = rng() % 40;
        for (uint32_t i = 0; i < n; ++i) {
            const uint32_t k = rng() % 64;
            m.find_or_insert(k).first = k * 3;
            ref[k] = k * 3;
        }
        const uint32_t mod = 2 + rng() % 3;
        std::multiset<uint32_t> gone;
        const size_t erased = m.erase_if([mod](uint32_t k, uint32_t) { return k % mod == 0; },
                                         [&gone](uint32_t k, uint32_t v) { gone.insert(k + 1000 * (v != k * 3)); });
        std::multiset<uint32_t> want;
        for (auto it = ref.begin(); it != ref.end();) {
            if (it->first % mod == 0) {
                want.insert(it->first);
                it = ref.erase(it);
            } else {
                ++it;
            }
        }
        ok = ok && gone == want && erased == want.size() && m.size() == ref.size();
        for (uint32_t q = 0; q < 64; ++q) {
            auto it = ref.find(q);
            const uint32_t *v = m.find(q);
            ok = ok && (it == ref.end() ? v == nullptr : (v && *v == it->second));
        }
    }
    CHECK(ok);
}
#endif

#if IN_PART(1)
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
#endif

#if IN_PART(1)
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
#endif

// A moved-from map is empty and usable (it used to keep its size with no
// slots, so find() read out of bounds).
#if IN_PART(1)
static void test_hash_moved_from()
{
    gsq::open_hash_map<std::string, int> a;
    for (int i = 0; i < 50; ++i)
        a.find_or_insert("k" + std::to_string(i)).first = i;
    gsq::open_hash_map<std::string, int> b(std::move(a));
    CHECK_EQ(b.size(), size_t(50));
    CHECK(b.find("k7") && *b.find("k7") == 7);
    CHECK_EQ(a.size(), size_t(0)); // NOLINT(bugprone-use-after-move): the point
    CHECK(a.empty() && a.capacity() == 0);
    CHECK(a.find("k7") == nullptr && !a.contains("k0"));
    CHECK(!a.erase("k1"));
    CHECK(a.begin() == a.end());
    a.find_or_insert("again").first = 5; // usable again
    CHECK(a.size() == 1 && a.find("again") && *a.find("again") == 5 && a.find("k7") == nullptr);

    gsq::open_hash_map<std::string, int> c;
    c.find_or_insert("old").first = 1;
    c = std::move(b); // c's own entries go
    CHECK(c.size() == 50 && c.find("k49") && *c.find("k49") == 49 && c.find("old") == nullptr);
    CHECK(b.size() == 0 && b.capacity() == 0 && b.find("k1") == nullptr);
    b.find_or_insert("b").first = 2;
    CHECK(b.size() == 1 && *b.find("b") == 2);
    gsq::open_hash_map<std::string, int> &same = c;
    c = std::move(same); // self-move keeps it
    CHECK(c.size() == 50 && c.find("k0") && *c.find("k0") == 0);
    gsq::open_hash_map<std::string, int> d;
    gsq::open_hash_map<std::string, int> e(std::move(d)); // an unallocated map moves too
    CHECK(d.size() == 0 && e.size() == 0 && d.find("x") == nullptr && e.find("x") == nullptr);

    const gsq::open_hash_map<std::string, int> copy = c; // copies still copy
    CHECK(copy.size() == 50 && copy.find("k3") && *copy.find("k3") == 3 && c.size() == 50);
}
#endif

// ---- selection ---------------------------------------------------------------

#if IN_PART(1)
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
#endif

// ---- group-by ----------------------------------------------------------------

#if IN_PART(1)
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
#endif

// The order a table of these keys (inserted in this order) iterates in.
[[maybe_unused]] static std::vector<uint32_t> slot_order_of_srcs(uint32_t tb, const std::vector<uint32_t> &srcs, const std::string &name)
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

#if IN_PART(1)
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
#endif

#if IN_PART(1)
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
#endif

#if IN_PART(1)
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
#endif

#if IN_PART(1)
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
#endif

#if IN_PART(1)
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
#endif

#if IN_PART(1)
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
#endif

#if IN_PART(1)
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
#endif

#if IN_PART(1)
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
#endif

#if IN_PART(1)
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

    // More groups open than max_groups: the node fails, naming the limit;
    // groups up to it are accepted
    gsq_node capped;
    capped.max_groups = 2;
    op = def.create(&capped);
    for (uint32_t s = 0; s < 2; ++s) {
        auto t = pkt(0, s, "cap", 7);
        def.accept(op, &capped, 0, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
    }
    CHECK(!capped.failed);
    auto third = pkt(0, 2, "cap", 7);
    def.accept(op, &capped, 0, GSQ_DATA, third.data(), static_cast<uint32_t>(third.size()));
    CHECK(capped.failed);
    CHECK(capped.failure.find("more than 2 groups open at once: the limit max_groups") !=
          std::string::npos);
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
#endif

// ---- heartbeats in selection and group-by ---------------------------------------

// SELECT time/10 as t10, src, name, len FROM PKT WHERE len > 100, with the
// temporal update: t10 = time/10.
struct big_packets_hb_functor : big_packets_functor {
    using big_packets_functor::big_packets_functor;
    int heartbeats = 0;

    void heartbeat(gsq_node *node, const void *tup, uint32_t)
    {
        ++heartbeats;
        tup_pkt in;
        std::memcpy(&in, tup, sizeof in);
        tup_pkt out{};
        out.time = in.time / 10;
        gsq_emit(node, GSQ_HEARTBEAT, &out, sizeof out, nullptr, 0);
    }
};

static_assert(gsq::has_selection_heartbeat<big_packets_hb_functor>::value);
static_assert(!gsq::has_selection_heartbeat<big_packets_functor>::value);

[[maybe_unused]] static void send_hb(gsq_node &node, void *opv, void (*acc)(void *, gsq_node *, int, int, const void *, uint32_t),
                    int input, uint32_t time, uint32_t src = 0)
{
    auto t = pkt(time, src, "", 0);
    acc(opv, &node, input, GSQ_HEARTBEAT, t.data(), static_cast<uint32_t>(t.size()));
}

template <class Op>
[[maybe_unused]] static void hb(Op &op, gsq_node &node, uint32_t time, int input = 0, uint32_t src = 0)
{
    auto t = pkt(time, src, "", 0);
    op.accept(&node, input, GSQ_HEARTBEAT, t.data(), static_cast<uint32_t>(t.size()));
}

#if IN_PART(2)
static void test_selection_heartbeat()
{
    gsq_node node;
    gsq::selection_op<big_packets_hb_functor> op(&node);
    auto small = pkt(91, 1, "s", 50); // filtered out
    op.accept(&node, 0, GSQ_DATA, small.data(), static_cast<uint32_t>(small.size()));
    hb(op, node, 95); // WHERE (len > 100) is not evaluated on heartbeats
    auto big = pkt(97, 1, "b", 500);
    op.accept(&node, 0, GSQ_DATA, big.data(), static_cast<uint32_t>(big.size()));
    hb(op, node, 123);
    op.accept(&node, 0, GSQ_HEARTBEAT, nullptr, 0); // no bytes: dropped
    CHECK_EQ(op.functor().heartbeats, 2);
    CHECK_EQ(node.out.size(), size_t(3));
    CHECK_EQ(node.out[0].kind, int(GSQ_HEARTBEAT));
    CHECK_EQ(node.out[1].kind, int(GSQ_DATA));
    CHECK_EQ(node.out[2].kind, int(GSQ_HEARTBEAT));
    tup_pkt h0, h2;
    std::memcpy(&h0, node.out[0].fixed.data(), sizeof h0);
    std::memcpy(&h2, node.out[2].fixed.data(), sizeof h2);
    CHECK_EQ(h0.time, uint32_t(9));
    CHECK_EQ(h2.time, uint32_t(12));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK_EQ(node.out.back().kind, int(GSQ_EOF));

    // Through the C glue as well.
    constexpr static int inputs[] = {0};
    const gsq_hfta_def def = gsq::hfta_def_of<gsq::selection_op<big_packets_hb_functor>>("bighb", inputs, 1);
    gsq_node gnode;
    void *h = def.create(&gnode);
    send_hb(gnode, h, def.accept, 0, 40);
    CHECK_EQ(count_kind(gnode, GSQ_HEARTBEAT), size_t(1));
    def.destroy(h);
}
#endif

// flows_functor with temporal updates: the epoch tb = time/60 of a heartbeat
// (src 0xdead: a heartbeat that announces nothing), emitted as tb.
struct flows_hb_functor : flows_functor {
    using flows_functor::flows_functor;

    bool heartbeat_epoch(const void *tup, uint32_t, epoch_type &e) const
    {
        tup_pkt t;
        std::memcpy(&t, tup, sizeof t);
        if (t.src == 0xdead)
            return false;
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

// Emits heartbeats but cannot read an epoch from them.
struct flows_hb_emit_only_functor : flows_functor {
    using flows_functor::flows_functor;
    void emit_heartbeat(gsq_node *node, const epoch_type &e)
    {
        tup_flow out{};
        out.tb = e;
        gsq_emit(node, GSQ_HEARTBEAT, &out, sizeof out, nullptr, 0);
    }
};

static_assert(gsq::has_heartbeat_epoch<flows_hb_functor>::value);
static_assert(gsq::has_epoch_heartbeat_emit<flows_hb_functor>::value);
static_assert(!gsq::has_heartbeat_epoch<flows_hb_emit_only_functor>::value);
static_assert(gsq::has_epoch_heartbeat_emit<flows_hb_emit_only_functor>::value);
static_assert(!gsq::has_heartbeat_epoch<flows_functor>::value);
static_assert(!gsq::has_epoch_heartbeat_emit<flows_functor>::value);

using flows_hb_op = gsq::groupby_op<flows_hb_functor>;

template <class Op>
[[maybe_unused]] static void gfeed(Op &op, gsq_node &node, uint32_t time, uint32_t src, const std::string &name, uint32_t len = 1)
{
    auto t = pkt(time, src, name, len);
    op.accept(&node, 0, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
}

[[maybe_unused]] static std::vector<uint32_t> heartbeat_tbs(const gsq_node &node)
{
    std::vector<uint32_t> v;
    for (const auto &e : node.out)
        if (e.kind == GSQ_HEARTBEAT)
            v.push_back(decode_flow(e).tb);
    return v;
}

#if IN_PART(2)
static void test_groupby_heartbeat_closes_epoch()
{
    gsq_node node;
    flows_hb_op op(&node);
    for (uint32_t s = 0; s < 3; ++s)
        gfeed(op, node, 1, s, "e0");
    hb(op, node, 30); // same epoch: nothing closes
    CHECK_EQ(node.out.size(), size_t(1));
    CHECK((heartbeat_tbs(node) == std::vector<uint32_t>{0}));

    hb(op, node, 60); // epoch 1 announced: epoch 0 closes, nothing inserted
    CHECK_EQ(op.stats().epochs_closed, uint64_t(1));
    CHECK_EQ(op.flush_pending(), size_t(3));
    CHECK_EQ(op.open_groups(), size_t(0));
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(0));
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(0)); // still flushing epoch 0

    // Each heartbeat steps the slow flush; the value stays at the flushing
    // epoch until its last group is out.
    hb(op, node, 61);
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(1));
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(0));
    hb(op, node, 62);
    CHECK_EQ(op.flush_pending(), size_t(1));
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(0));
    hb(op, node, 63);
    CHECK_EQ(op.flush_pending(), size_t(0));
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(3));
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(1));
    // The heartbeat after the last flushed group comes after that group.
    CHECK_EQ(node.out.back().kind, int(GSQ_HEARTBEAT));
    CHECK_EQ(node.out[node.out.size() - 2].kind, int(GSQ_DATA));

    hb(op, node, 0); // an older heartbeat: the output never goes back
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(1));
    gfeed(op, node, 30, 9, "late"); // epoch 0 < 1: late (a heartbeat promised epoch 1)
    CHECK_EQ(node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(1));

    hb(op, node, 200); // epoch 3: epoch 1 (empty) closes
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(3));
    CHECK_EQ(op.flush_pending(), size_t(0));
    gfeed(op, node, 130, 9, "late"); // epoch 2 < 3
    CHECK_EQ(node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(2));
    gfeed(op, node, 190, 9, "ok");
    hb(op, node, 0, 0, 0xdead); // announces nothing: current epoch again
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(3));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(4));
    CHECK_EQ(decode_flow(node.out[node.out.size() - 2]).name, std::string("ok"));
    const auto tbs = heartbeat_tbs(node);
    CHECK(std::is_sorted(tbs.begin(), tbs.end()));
    CHECK_EQ(op.stats().heartbeats_in, uint64_t(8));
    CHECK_EQ(op.stats().heartbeats_out, uint64_t(8));
}
#endif

#if IN_PART(2)
static void test_groupby_heartbeat_mid_flush()
{
    gsq_node node;
    flows_hb_op op(&node);
    for (uint32_t s = 0; s < 5; ++s)
        gfeed(op, node, 0, s, "e0");
    gfeed(op, node, 60, 0, "e1"); // closes epoch 0: flush of 5
    gfeed(op, node, 61, 1, "e1"); // one step
    CHECK_EQ(op.flush_pending(), size_t(4));
    hb(op, node, 62); // same epoch: one more step, heartbeat = flushing epoch 0
    CHECK_EQ(op.flush_pending(), size_t(3));
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(0));

    // Epoch 2 announced mid-flush: one step, the rest of epoch 0 at once,
    // then epoch 1 (2 groups) starts flushing: the heartbeat says 1.
    hb(op, node, 125);
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(5));
    CHECK_EQ(op.flush_pending(), size_t(2));
    CHECK_EQ(op.open_groups(), size_t(0));
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(1));
    bool first_five_e0 = true;
    size_t seen = 0;
    for (const auto &e : node.out)
        if (e.kind == GSQ_DATA && seen++ < 5)
            first_five_e0 = first_five_e0 && decode_flow(e).tb == 0;
    CHECK(first_five_e0);

    // A heartbeat without bytes still steps the flush and reports.
    op.accept(&node, 0, GSQ_HEARTBEAT, nullptr, 0);
    CHECK_EQ(op.flush_pending(), size_t(1));
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(1));
    hb(op, node, 126);
    CHECK_EQ(op.flush_pending(), size_t(0));
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(2));
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(7));
}
#endif

#if IN_PART(2)
static void test_groupby_heartbeat_variants()
{
    // A heartbeat before any data sets the epoch.
    {
        gsq_node node;
        flows_hb_op op(&node);
        hb(op, node, 600);
        CHECK((heartbeat_tbs(node) == std::vector<uint32_t>{10}));
        gfeed(op, node, 599, 1, "late");
        gfeed(op, node, 600, 1, "ok");
        CHECK_EQ(node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(1));
        op.accept(&node, 0, GSQ_EOF, nullptr, 0);
        CHECK_EQ(count_kind(node, GSQ_DATA), size_t(1));
        CHECK_EQ(node.out.back().kind, int(GSQ_EOF));
    }
    // emit_heartbeat without heartbeat_epoch: reports the epoch seen in data,
    // closes nothing.
    {
        gsq_node node;
        gsq::groupby_op<flows_hb_emit_only_functor> op(&node);
        hb(op, node, 0); // nothing known: no heartbeat
        CHECK_EQ(node.out.size(), size_t(0));
        gfeed(op, node, 120, 1, "a");
        hb(op, node, 6000);
        CHECK_EQ(op.stats().epochs_closed, uint64_t(0));
        CHECK((heartbeat_tbs(node) == std::vector<uint32_t>{2}));
    }
    // A functor without heartbeat members: heartbeats still step the flush.
    {
        gsq_node node;
        flows_op op(&node);
        for (uint32_t s = 0; s < 3; ++s)
            gfeed(op, node, 0, s, "e0");
        gfeed(op, node, 60, 0, "e1");
        hb(op, node, 61);
        hb(op, node, 62);
        CHECK_EQ(op.flush_pending(), size_t(1));
        CHECK_EQ(count_kind(node, GSQ_DATA), size_t(2));
        CHECK_EQ(count_kind(node, GSQ_HEARTBEAT), size_t(0));
    }
    // Immediate flush: a heartbeat that closes the epoch flushes it at once.
    {
        gsq_node node;
        gsq::groupby_op<flows_hb_functor, gsq::flush_policy::immediate> op(&node);
        for (uint32_t s = 0; s < 4; ++s)
            gfeed(op, node, 0, s, "e0");
        hb(op, node, 60);
        CHECK_EQ(count_kind(node, GSQ_DATA), size_t(4));
        CHECK_EQ(node.out.back().kind, int(GSQ_HEARTBEAT));
        CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(1));
    }
}
#endif

// Random time-ordered input with heartbeats: no output ever contradicts an
// earlier heartbeat, heartbeats never go back, nothing is lost.
#if IN_PART(2)
static void test_groupby_heartbeat_random()
{
    std::mt19937 rng(2024);
    bool ok = true;
    for (int trial = 0; trial < 100; ++trial) {
        gsq_node node;
        flows_hb_op op(&node);
        uint32_t time = 0;
        uint64_t tuples = 0;
        for (int step = 0; step < 300; ++step) {
            time += rng() % 7;
            if (rng() % 4 == 0) {
                hb(op, node, time); // the next data tuple is at >= time
            } else {
                gfeed(op, node, time, rng() % 5, "r");
                ++tuples;
            }
        }
        op.accept(&node, 0, GSQ_EOF, nullptr, 0);
        uint64_t counted = 0;
        std::optional<uint32_t> last_hb;
        for (const auto &e : node.out) {
            if (e.kind == GSQ_HEARTBEAT) {
                const uint32_t tb = decode_flow(e).tb;
                ok = ok && (!last_hb || *last_hb <= tb);
                last_hb = tb;
            } else if (e.kind == GSQ_DATA) {
                const flow_row r = decode_flow(e);
                ok = ok && (!last_hb || *last_hb <= r.tb);
                counted += r.cnt;
            }
        }
        ok = ok && counted == tuples && node.counters[GSQ_CNT_LATE_DROPPED] == 0;
        ok = ok && node.out.back().kind == GSQ_EOF;
    }
    CHECK(ok);
}
#endif

// ---- group-by with bounded disorder (max_disorder, strict_heartbeats) -----------

// flows_hb_functor with up to K open epochs; Strict: input heartbeats close
// the epochs before them.
template <unsigned K, bool Strict = false>
struct flows_ooo_functor : flows_hb_functor {
    static constexpr unsigned max_disorder = K;
    static constexpr bool strict_heartbeats = Strict;
    using flows_hb_functor::flows_hb_functor;
};

static_assert(gsq::groupby_op<flows_functor>::max_disorder == 1);
static_assert(!gsq::groupby_op<flows_functor>::strict_heartbeats);
static_assert(gsq::groupby_op<flows_ooo_functor<3, true>>::max_disorder == 3);
static_assert(gsq::groupby_op<flows_ooo_functor<3, true>>::strict_heartbeats);
static_assert(!gsq::groupby_op<flows_ooo_functor<2>>::strict_heartbeats);

[[maybe_unused]] static std::vector<uint32_t> data_tbs(const gsq_node &node)
{
    std::vector<uint32_t> v;
    for (const auto &e : node.out)
        if (e.kind == GSQ_DATA)
            v.push_back(decode_flow(e).tb);
    return v;
}

#if IN_PART(2)
static void test_groupby_disorder_epochs()
{
    using op_t = gsq::groupby_op<flows_ooo_functor<3>>;
    gsq_node node;
    op_t op(&node);
    gfeed(op, node, 300, 1, "a"); // epoch 5
    gfeed(op, node, 420, 1, "a"); // 7: newer, opens
    gfeed(op, node, 360, 1, "a"); // 6: between 5 and 7, opens
    CHECK_EQ(op.open_epochs(), size_t(3));
    CHECK_EQ(op.open_groups(), size_t(3));
    gfeed(op, node, 240, 1, "late"); // 4: older than all, 3 open: late
    CHECK_EQ(op.stats().late_dropped, uint64_t(1));
    gfeed(op, node, 301, 1, "a"); // 5 again: folds
    gfeed(op, node, 302, 2, "a");
    CHECK_EQ(node.out.size(), size_t(0));
    CHECK_EQ(op.stats().epochs_closed, uint64_t(0));
    gfeed(op, node, 480, 1, "a"); // 8: opens, 5 closes (2 groups to flush)
    CHECK_EQ(op.open_epochs(), size_t(3));
    CHECK_EQ(op.flush_pending(), size_t(2));
    CHECK_EQ(op.open_groups(), size_t(3));
    gfeed(op, node, 310, 1, "late"); // 5 is closed: late, and it steps the flush
    CHECK_EQ(op.stats().late_dropped, uint64_t(2));
    CHECK_EQ(node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(2));
    CHECK_EQ(op.flush_pending(), size_t(1));
    hb(op, node, 540); // epoch 9: opens, 6 closes (the rest of 5 first)
    CHECK_EQ(op.open_epochs(), size_t(3));
    CHECK_EQ(op.stats().epochs_closed, uint64_t(2));
    CHECK((heartbeat_tbs(node) == std::vector<uint32_t>{6})); // 6 is flushing
    hb(op, node, 541);
    CHECK((heartbeat_tbs(node) == std::vector<uint32_t>{6, 7})); // 6 out: oldest open 7
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK((data_tbs(node) == std::vector<uint32_t>{5, 5, 6, 7, 8}));
    std::vector<flow_row> rows;
    for (const auto &e : node.out)
        if (e.kind == GSQ_DATA)
            rows.push_back(decode_flow(e));
    std::sort(rows.begin(), rows.end());
    const std::vector<flow_row> want = {{5, 1, "a", 2, 2}, {5, 2, "a", 1, 1}, {6, 1, "a", 1, 1},
                                        {7, 1, "a", 1, 1}, {8, 1, "a", 1, 1}};
    CHECK(rows == want);
    CHECK_EQ(node.out.back().kind, int(GSQ_EOF));
    CHECK_EQ(op.stats().peak_open_epochs, size_t(3));
    CHECK_EQ(op.open_epochs(), size_t(0));
    CHECK_EQ(op.allocated_slots(), size_t(0));

    // Older epochs open while fewer than K are: 5, then 3 (older), then 4
    // (between), then 2 is late (3 open).  A heartbeat emitted fixes a floor.
    gsq_node n2;
    op_t op2(&n2);
    gfeed(op2, n2, 300, 1, "x");
    gfeed(op2, n2, 180, 1, "x");
    CHECK_EQ(op2.open_epochs(), size_t(2));
    gfeed(op2, n2, 240, 1, "x");
    gfeed(op2, n2, 120, 1, "x");
    CHECK_EQ(op2.open_epochs(), size_t(3));
    CHECK_EQ(op2.stats().late_dropped, uint64_t(1));
    gsq_node n3;
    op_t op3(&n3);
    gfeed(op3, n3, 300, 1, "x");
    hb(op3, n3, 300); // emits 5: nothing before 5 may come out any more
    CHECK((heartbeat_tbs(n3) == std::vector<uint32_t>{5}));
    gfeed(op3, n3, 240, 1, "x");
    CHECK_EQ(op3.stats().late_dropped, uint64_t(1));
    CHECK_EQ(op3.open_epochs(), size_t(1));
    hb(op3, n3, 0); // an older heartbeat opens nothing, repeats 5
    CHECK((heartbeat_tbs(n3) == std::vector<uint32_t>{5, 5}));
    CHECK_EQ(op3.open_epochs(), size_t(1));

    // While fewer than K are open, the heartbeat out is no later than the
    // input's: an input at 3 may still send 3 and 4, which then count.
    gsq_node n4;
    op_t op4(&n4);
    gfeed(op4, n4, 300, 1, "x");
    hb(op4, n4, 180);
    CHECK((heartbeat_tbs(n4) == std::vector<uint32_t>{3}));
    gfeed(op4, n4, 240, 1, "x");
    gfeed(op4, n4, 120, 1, "late"); // before the heartbeat 3
    CHECK_EQ(op4.stats().late_dropped, uint64_t(1));
    CHECK_EQ(op4.open_epochs(), size_t(2));
    hb(op4, n4, 180);
    CHECK((heartbeat_tbs(n4) == std::vector<uint32_t>{3, 3}));
    gfeed(op4, n4, 420, 1, "x"); // 7: three open (4, 5, 7): the oldest open is the bound
    hb(op4, n4, 180);
    CHECK((heartbeat_tbs(n4) == std::vector<uint32_t>{3, 3, 4}));
}
#endif

#if IN_PART(2)
static void test_groupby_disorder_strict()
{
    using op_t = gsq::groupby_op<flows_ooo_functor<3, true>>;
    gsq_node node;
    op_t op(&node);
    for (uint32_t tb : {5u, 6u, 7u})
        gfeed(op, node, tb * 60, 1, "s");
    gfeed(op, node, 5 * 60, 2, "s");
    hb(op, node, 6 * 60); // 5 is complete: it closes
    CHECK_EQ(op.open_epochs(), size_t(2));
    CHECK_EQ(op.flush_pending(), size_t(2));
    CHECK((heartbeat_tbs(node) == std::vector<uint32_t>{5}));
    gfeed(op, node, 5 * 60, 3, "late");
    CHECK_EQ(op.stats().late_dropped, uint64_t(1));
    gfeed(op, node, 6 * 60, 2, "s"); // folds into 6 (and flushes 5's last group)
    CHECK_EQ(op.flush_pending(), size_t(0));
    hb(op, node, 9 * 60); // 9 opens; 6 and 7 close (6 flushed at once)
    CHECK_EQ(op.open_epochs(), size_t(1));
    CHECK_EQ(op.stats().epochs_closed, uint64_t(3));
    CHECK_EQ(heartbeat_tbs(node).back(), uint32_t(7)); // 7 is flushing
    gfeed(op, node, 8 * 60, 1, "late"); // before the promise 9
    CHECK_EQ(op.stats().late_dropped, uint64_t(2));
    gfeed(op, node, 10 * 60, 1, "s");
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK((data_tbs(node) == std::vector<uint32_t>{5, 5, 6, 6, 7, 10}));

    // A strict heartbeat below the newest open epoch: the epochs before it
    // close and it opens as the oldest (so the heartbeat out is h, and
    // tuples between h and the newest still count).
    gsq_node n2;
    op_t op2(&n2);
    gfeed(op2, n2, 5 * 60, 1, "s");
    gfeed(op2, n2, 8 * 60, 1, "s");
    hb(op2, n2, 6 * 60);
    CHECK_EQ(op2.open_epochs(), size_t(2));
    hb(op2, n2, 6 * 60); // 5's only group went out with this step
    CHECK((heartbeat_tbs(n2) == std::vector<uint32_t>{5, 6}));
    gfeed(op2, n2, 7 * 60, 1, "s"); // between 6 and 8
    gfeed(op2, n2, 6 * 60, 1, "s");
    CHECK_EQ(op2.open_epochs(), size_t(3));
    CHECK_EQ(op2.stats().late_dropped, uint64_t(0));
    op2.accept(&n2, 0, GSQ_EOF, nullptr, 0);
    CHECK((data_tbs(n2) == std::vector<uint32_t>{5, 6, 7, 8}));
}
#endif

#if IN_PART(2)
static void test_groupby_disorder_memory()
{
    // In-order input with K = 3: 3 open epochs and one flushing, at most.
    gsq_node node;
    gsq::groupby_op<flows_ooo_functor<3>> op(&node);
    size_t max_slots = 0;
    const uint32_t groups = 1000;
    for (uint32_t epoch = 0; epoch < 20; ++epoch)
        for (uint32_t s = 0; s < groups; ++s) {
            gfeed(op, node, epoch * 60, s, "mem");
            max_slots = std::max(max_slots, op.allocated_slots());
        }
    CHECK(max_slots <= 4 * 2048);
    CHECK(max_slots > 3 * 2048);
    CHECK_EQ(op.stats().peak_open_groups, size_t(3) * groups);
    CHECK_EQ(op.stats().max_table_size, size_t(groups));
    CHECK_EQ(node.peaks[GSQ_PEAK_HELD_TUPLES], uint64_t(3) * groups);
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(20) * groups);
    const auto tbs = data_tbs(node);
    CHECK(std::is_sorted(tbs.begin(), tbs.end()));
}
#endif

// Joint punctuation (seed 004 section 7): the key's tb is the epoch (time /
// 60, the join's left time), src stands for the right time (an ordinary
// key).  A joint punctuation tuple carries (time, src) = (J_L, J_R).
template <unsigned K, bool Ordered>
struct flows_joint_functor : flows_ooo_functor<K, true> {
    static constexpr bool ordered_output = Ordered;
    using flows_ooo_functor<K, true>::flows_ooo_functor;
    uint32_t jl = 0, jr = 0;
    bool known = false;

    bool joint_update(const void *tup, uint32_t)
    {
        tup_pkt t;
        std::memcpy(&t, tup, sizeof t);
        const bool moved = !known || t.time / 60 > jl || t.src > jr;
        jl = known ? std::max(jl, t.time / 60) : t.time / 60;
        jr = known ? std::max(jr, t.src) : t.src;
        known = true;
        return moved;
    }
    bool joint_covers(const flows_functor::key_type &k) const { return known && k.tb < jl && k.src < jr; }
    bool joint_may_cover(const uint32_t &e) const { return known && e < jl; }
};

static_assert(gsq::groupby_op<flows_joint_functor<3, true>>::joint_punctuation);
static_assert(!gsq::groupby_op<flows_ooo_functor<3, true>>::joint_punctuation);
static_assert(!gsq::groupby_op<flows_joint_functor<3, false>>::ordered_output);

template <class Op>
[[maybe_unused]] static void joint(Op &op, gsq_node &node, uint32_t time, uint32_t right)
{
    auto t = pkt(time, right, "", 0);
    op.accept(&node, 0, GSQ_JOINT_HEARTBEAT, t.data(), static_cast<uint32_t>(t.size()));
}

[[maybe_unused]] static std::vector<std::pair<uint32_t, uint32_t>> data_cells(const gsq_node &node)
{
    std::vector<std::pair<uint32_t, uint32_t>> v;
    for (const auto &e : node.out)
        if (e.kind == GSQ_DATA)
            v.emplace_back(decode_flow(e).tb, decode_flow(e).src);
    return v;
}

#if IN_PART(2)
static void test_groupby_joint_ordered()
{
    using op_t = gsq::groupby_op<flows_joint_functor<3, true>>;
    gsq_node node;
    op_t op(&node);
    gfeed(op, node, 0, 1, "x");
    gfeed(op, node, 0, 5, "x");
    gfeed(op, node, 60, 2, "x");
    joint(op, node, 60, 3); // (0, 1) is covered, but an epoch before 0 may still open
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(0));
    hb(op, node, 0, 0, 0); // strict: nothing before epoch 0 any more
    joint(op, node, 60, 4); // moved: epoch 0 is the oldest, (0, 1) leaves
    CHECK((data_cells(node) == std::vector<std::pair<uint32_t, uint32_t>>{{0, 1}}));
    CHECK_EQ(op.stats().joint_released, uint64_t(1));
    joint(op, node, 60, 4); // did not move: nothing to do
    CHECK_EQ(op.stats().joint_heartbeats_in, uint64_t(3));
    gfeed(op, node, 0, 1, "x"); // its group is out: late
    CHECK_EQ(op.stats().late_dropped, uint64_t(1));
    gfeed(op, node, 0, 6, "x"); // not covered: counts
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    const auto cells = data_cells(node);
    CHECK_EQ(cells.size(), size_t(4));
    CHECK((std::vector<uint32_t>{cells[0].first, cells[1].first, cells[2].first, cells[3].first} ==
           std::vector<uint32_t>{0, 0, 0, 1})); // epoch order kept
    CHECK_EQ(op.stats().groups_created, uint64_t(4));
}
#endif

#if IN_PART(2)
static void test_groupby_joint_any_order()
{
    using op_t = gsq::groupby_op<flows_joint_functor<3, false>>;
    gsq_node node;
    op_t op(&node);
    gfeed(op, node, 0, 9, "x");
    gfeed(op, node, 60, 2, "x");
    gfeed(op, node, 120, 3, "x");
    gfeed(op, node, 120, 7, "x");
    joint(op, node, 180, 4); // (1, 2) and (2, 3) are covered, from any open epoch
    CHECK((data_cells(node) == std::vector<std::pair<uint32_t, uint32_t>>{{1, 2}, {2, 3}}));
    CHECK_EQ(op.open_groups(), size_t(2));
    CHECK_EQ(op.open_epochs(), size_t(3)); // epochs stay open for groups to come
    hb(op, node, 0, 0, 0);
    CHECK((heartbeat_tbs(node) == std::vector<uint32_t>{0})); // still epoch 0's group to come
    gfeed(op, node, 120, 3, "x");
    CHECK_EQ(op.stats().late_dropped, uint64_t(1));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK((data_cells(node) ==
           std::vector<std::pair<uint32_t, uint32_t>>{{1, 2}, {2, 3}, {0, 9}, {2, 7}}));

    // Without the members a joint punctuation is only a flush step.
    gsq_node n2;
    gsq::groupby_op<flows_ooo_functor<3, true>> plain(&n2);
    gfeed(plain, n2, 0, 1, "x");
    joint(plain, n2, 180, 4);
    CHECK_EQ(count_kind(n2, GSQ_DATA), size_t(0));
}
#endif

// ---- merge -------------------------------------------------------------------------

// MERGE a.time : b.time [: c.time ...] SLACK $slack FROM ... over PKT-shaped streams.
template <int N, bool Increasing = true>
struct pkt_merge_functor {
    static constexpr int n_inputs = N;
    using time_type = uint32_t;
    static constexpr bool increasing = Increasing;
    uint32_t slack_ = 0;

    explicit pkt_merge_functor(gsq_node *node)
    {
        if (const char *p = gsq_param(node, "slack"))
            gsq_parse_uint(p, std::strlen(p), &slack_);
    }
    time_type time_of(const void *tup, uint32_t) const
    {
        tup_pkt t;
        std::memcpy(&t, tup, sizeof t);
        return t.time;
    }
    time_type slack() const { return slack_; }
    void emit_heartbeat(gsq_node *node, time_type tm)
    {
        tup_pkt out{};
        out.time = tm;
        gsq_emit(node, GSQ_HEARTBEAT, &out, sizeof out, nullptr, 0);
    }
};

struct pkt_row {
    uint32_t time = 0, src = 0, len = 0;
    std::string name;
    bool operator<(const pkt_row &o) const { return std::tie(time, src, len, name) < std::tie(o.time, o.src, o.len, o.name); }
    bool operator==(const pkt_row &o) const { return time == o.time && src == o.src && len == o.len && name == o.name; }
};

// A packed tuple seen by a stub (raw) or a heartbeat (fixed part only).
[[maybe_unused]] static pkt_row decode_pkt(const void *bytes, uint32_t size)
{
    tup_pkt t;
    std::memcpy(&t, bytes, sizeof t);
    pkt_row r{t.time, t.src, t.len, {}};
    if (t.name.len != 0 && size_t(t.name.off) + t.name.len <= size)
        r.name.assign(static_cast<const char *>(bytes) + t.name.off, t.name.len);
    else if (t.name.len != 0)
        r.name = "<out of bounds>";
    return r;
}

[[maybe_unused]] static pkt_row decode_pkt(const emitted &e) { return decode_pkt(e.fixed.data(), static_cast<uint32_t>(e.fixed.size())); }

template <class Op>
[[maybe_unused]] static void mfeed(Op &op, gsq_node &node, int input, uint32_t time, const std::string &name)
{
    auto t = pkt(time, static_cast<uint32_t>(input), name, 7);
    op.accept(&node, input, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
}

[[maybe_unused]] static std::vector<uint32_t> data_times(const gsq_node &node)
{
    std::vector<uint32_t> v;
    for (const auto &e : node.out)
        if (e.kind == GSQ_DATA)
            v.push_back(decode_pkt(e).time);
    return v;
}

[[maybe_unused]] static std::vector<uint32_t> hb_times(const gsq_node &node)
{
    std::vector<uint32_t> v;
    for (const auto &e : node.out)
        if (e.kind == GSQ_HEARTBEAT)
            v.push_back(decode_pkt(e).time);
    return v;
}

#if IN_PART(3)
static void test_merge_two_interleaved()
{
    gsq_node node;
    gsq::merge_op<pkt_merge_functor<2>> op(&node);
    mfeed(op, node, 0, 1, "a1");
    CHECK_EQ(node.out.size(), size_t(0)); // input 1 unknown: blocks
    mfeed(op, node, 1, 2, "b2");
    CHECK((data_times(node) == std::vector<uint32_t>{1}));
    mfeed(op, node, 0, 3, "a3");
    mfeed(op, node, 1, 3, "b3");
    mfeed(op, node, 0, 5, "a5");
    mfeed(op, node, 1, 4, "b4");
    mfeed(op, node, 1, 6, "b6");
    CHECK((data_times(node) == std::vector<uint32_t>{1, 2, 3, 3, 4, 5}));
    CHECK_EQ(op.buffered(1), size_t(1));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK((data_times(node) == std::vector<uint32_t>{1, 2, 3, 3, 4, 5, 6}));
    CHECK_EQ(count_kind(node, GSQ_EOF), size_t(0));
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    CHECK_EQ(node.out.back().kind, int(GSQ_EOF));
    CHECK_EQ(count_kind(node, GSQ_EOF), size_t(1));
    std::vector<std::string> names;
    bool raw = true;
    for (const auto &e : node.out)
        if (e.kind == GSQ_DATA) {
            names.push_back(decode_pkt(e).name);
            raw = raw && e.raw;
        }
    CHECK(raw); // passed through unchanged, string tail included
    CHECK((names == std::vector<std::string>{"a1", "b2", "a3", "b3", "b4", "a5", "b6"}));
    CHECK_EQ(op.stats().buffered, size_t(0));
    CHECK_EQ(op.stats().buffered_bytes, size_t(0));
    CHECK_EQ(op.stats().released, uint64_t(7));
}
#endif

#if IN_PART(3)
static void test_merge_stalled_input()
{
    gsq_node node;
    gsq::merge_op<pkt_merge_functor<3>> op(&node);
    const size_t tup_size = pkt(0, 0, "n", 7).size();
    for (uint32_t t = 1; t <= 100; ++t) {
        mfeed(op, node, 0, t, "n");
        mfeed(op, node, 1, t, "n");
    }
    // Input 2 is silent: everything waits.
    CHECK_EQ(node.out.size(), size_t(0));
    CHECK_EQ(op.buffered(0), size_t(100));
    CHECK_EQ(op.stats().buffered, size_t(200));
    CHECK_EQ(op.stats().buffered_bytes, 200 * tup_size);

    hb(op, node, 50, 2); // input 2: nothing below 50 will come
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(100));
    CHECK_EQ(op.stats().buffered, size_t(100));
    CHECK((hb_times(node) == std::vector<uint32_t>{50}));
    CHECK_EQ(node.out.back().kind, int(GSQ_HEARTBEAT)); // after what it released
    hb(op, node, 50, 2); // nothing advanced: no heartbeat
    hb(op, node, 30, 0); // input 0 heartbeat below its data: no news
    CHECK_EQ(hb_times(node).size(), size_t(1));
    hb(op, node, 80, 2);
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(160));
    CHECK((hb_times(node) == std::vector<uint32_t>{50, 80}));
    op.accept(&node, 2, GSQ_EOF, nullptr, 0); // the rest goes, no heartbeat
    CHECK_EQ(count_kind(node, GSQ_DATA), size_t(200));
    CHECK_EQ(hb_times(node).size(), size_t(2));
    const auto times = data_times(node);
    CHECK(std::is_sorted(times.begin(), times.end()));
    CHECK_EQ(op.stats().peak_buffered, size_t(200));
    CHECK_EQ(op.stats().peak_bytes, 200 * tup_size);
    // ... and the same peaks reach the run's stats through gsq_peak.
    CHECK_EQ(node.peaks[GSQ_PEAK_HELD_TUPLES], uint64_t(200));
    CHECK_EQ(node.peaks[GSQ_PEAK_HELD_BYTES], uint64_t(200 * tup_size));
    CHECK_EQ(op.stats().buffered_bytes, size_t(0));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    CHECK_EQ(node.out.back().kind, int(GSQ_EOF));
    CHECK_EQ(count_kind(node, GSQ_EOF), size_t(1));
}
#endif

#if IN_PART(3)
static void test_merge_heartbeat_value()
{
    // The heartbeat is the min over inputs of progress and the smallest
    // tuple still buffered.
    gsq_node node;
    gsq::merge_op<pkt_merge_functor<2>> op(&node);
    hb(op, node, 10, 0);
    CHECK_EQ(node.out.size(), size_t(0)); // input 1 unknown
    hb(op, node, 7, 1);
    CHECK((hb_times(node) == std::vector<uint32_t>{7}));
    mfeed(op, node, 0, 12, "a12"); // waits for input 1 (at 7)
    hb(op, node, 20, 1);           // releases 12: input 0 is at 12
    CHECK((data_times(node) == std::vector<uint32_t>{12}));
    CHECK((hb_times(node) == std::vector<uint32_t>{7, 12}));
    mfeed(op, node, 1, 25, "b25"); // waits (input 0 at 12)
    hb(op, node, 30, 0);           // releases 25; min(30, 25) = 25
    CHECK((hb_times(node) == std::vector<uint32_t>{7, 12, 25}));
    mfeed(op, node, 1, 40, "b40");
    hb(op, node, 35, 0); // 40 stays buffered: min(35, 40, p1 = 40) = 35
    CHECK((hb_times(node) == std::vector<uint32_t>{7, 12, 25, 35}));
    CHECK_EQ(op.buffered(1), size_t(1));
    mfeed(op, node, 0, 33, "late"); // below 35, the heartbeat just promised
    CHECK_EQ(node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(1));
    CHECK_EQ(op.stats().late_dropped, uint64_t(1));
}
#endif

#if IN_PART(3)
static void test_merge_slack()
{
    gsq_node node;
    node.params["slack"] = "5";
    gsq::merge_op<pkt_merge_functor<2>> op(&node);
    mfeed(op, node, 0, 10, "a10");
    mfeed(op, node, 1, 6, "b6"); // 6 <= 10 + 5; then 10 <= 6 + 5
    CHECK((data_times(node) == std::vector<uint32_t>{6, 10}));
    mfeed(op, node, 1, 4, "late"); // 4 < 10 - 5
    CHECK_EQ(node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(1));
    mfeed(op, node, 1, 7, "b7"); // within the slack: accepted, out of order by 3
    CHECK((data_times(node) == std::vector<uint32_t>{6, 10, 7}));
    mfeed(op, node, 0, 20, "a20"); // 20 > 7 + 5: waits
    CHECK_EQ(op.buffered(0), size_t(1));
    hb(op, node, 12, 1); // input 1 at 12: 20 > 17 still waits
    // H = min(buffered 20, input 0: max(20 - 5, 10 - 5), input 1: max(12, 7 - 5, 5)) = 12
    CHECK((hb_times(node) == std::vector<uint32_t>{12}));
    CHECK_EQ(op.buffered(0), size_t(1));
    hb(op, node, 15, 1); // 20 <= 15 + 5: out
    CHECK_EQ(op.buffered(0), size_t(0));
    CHECK_EQ(hb_times(node).back(), uint32_t(15));
    mfeed(op, node, 1, 14, "late2"); // below the heartbeat 15 (and 20 - 5)
    CHECK_EQ(node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(2));
}
#endif

#if IN_PART(3)
static void test_merge_decreasing()
{
    gsq_node node;
    gsq::merge_op<pkt_merge_functor<2, false>> op(&node);
    mfeed(op, node, 0, 10, "a10");
    mfeed(op, node, 1, 9, "b9");
    mfeed(op, node, 0, 8, "a8");
    mfeed(op, node, 1, 7, "b7");
    mfeed(op, node, 0, 6, "a6");
    CHECK((data_times(node) == std::vector<uint32_t>{10, 9, 8, 7}));
    hb(op, node, 3, 1); // input 1 goes no higher than 3: 6 goes
    CHECK((data_times(node) == std::vector<uint32_t>{10, 9, 8, 7, 6}));
    CHECK((hb_times(node) == std::vector<uint32_t>{6})); // input 0 may still send 6
    mfeed(op, node, 0, 8, "late"); // above 6: late for a decreasing field
    CHECK_EQ(node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(1));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    CHECK_EQ(node.out.back().kind, int(GSQ_EOF));
}
#endif

#if IN_PART(3)
static void test_merge_eof_order()
{
    gsq_node node;
    gsq::merge_op<pkt_merge_functor<2>> op(&node);
    mfeed(op, node, 0, 5, "a5");
    mfeed(op, node, 1, 3, "b3");
    mfeed(op, node, 1, 8, "b8");
    mfeed(op, node, 1, 9, "b9");
    mfeed(op, node, 0, 7, "a7");
    CHECK((data_times(node) == std::vector<uint32_t>{3, 5, 7}));
    op.accept(&node, 1, GSQ_EOF, nullptr, 0); // 8, 9 wait for input 0
    CHECK_EQ(op.buffered(1), size_t(2));
    op.accept(&node, 1, GSQ_EOF, nullptr, 0); // repeated: ignored
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK((data_times(node) == std::vector<uint32_t>{3, 5, 7, 8, 9}));
    CHECK_EQ(node.out.back().kind, int(GSQ_EOF));
    CHECK_EQ(count_kind(node, GSQ_EOF), size_t(1));
    CHECK_EQ(count_kind(node, GSQ_HEARTBEAT), size_t(0));

    // Out-of-order arrival within the slack is released sorted.
    gsq_node snode;
    snode.params["slack"] = "10";
    gsq::merge_op<pkt_merge_functor<2>> sop(&snode);
    mfeed(sop, snode, 0, 20, "a20");
    mfeed(sop, snode, 0, 14, "a14");
    mfeed(sop, snode, 0, 17, "a17");
    sop.accept(&snode, 0, GSQ_EOF, nullptr, 0);
    sop.accept(&snode, 1, GSQ_EOF, nullptr, 0);
    CHECK((data_times(snode) == std::vector<uint32_t>{14, 17, 20}));

    // Protocol errors through the glue.
    constexpr static int inputs[] = {1, 2, 3};
    const gsq_hfta_def def = gsq::hfta_def_of<gsq::merge_op<pkt_merge_functor<3>>>("m3", inputs, 4);
    CHECK_EQ(def.n_inputs, 3);
    gsq_node gnode;
    void *h = def.create(&gnode);
    auto t = pkt(1, 0, "x", 1);
    def.accept(h, &gnode, 3, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
    CHECK(gnode.failed && gnode.failure.find("input 3") != std::string::npos);
    def.destroy(h); // a buffered tuple is freed, not emitted
}
#endif

// Random ordered inputs with heartbeats against a sort of everything.
#if IN_PART(3)
static void test_merge_random()
{
    std::mt19937 rng(777);
    bool ok = true, sorted_ok = true, hb_ok = true, slack_ok = true;
    for (int trial = 0; trial < 300; ++trial) {
        const int n = 2 + static_cast<int>(rng() % 3);
        const uint32_t slack = trial % 3 == 0 ? rng() % 4 : 0;
        gsq_node node;
        node.params["slack"] = std::to_string(slack);
        // One operator type per input count.
        std::function<void(int, int, const void *, uint32_t)> accept;
        std::function<const gsq::merge_stats &()> stats;
        gsq::merge_op<pkt_merge_functor<2>> op2(&node);
        gsq::merge_op<pkt_merge_functor<3>> op3(&node);
        gsq::merge_op<pkt_merge_functor<4>> op4(&node);
        if (n == 2) {
            accept = [&](int i, int k, const void *p, uint32_t l) { op2.accept(&node, i, k, p, l); };
            stats = [&]() -> const gsq::merge_stats & { return op2.stats(); };
        } else if (n == 3) {
            accept = [&](int i, int k, const void *p, uint32_t l) { op3.accept(&node, i, k, p, l); };
            stats = [&]() -> const gsq::merge_stats & { return op3.stats(); };
        } else {
            accept = [&](int i, int k, const void *p, uint32_t l) { op4.accept(&node, i, k, p, l); };
            stats = [&]() -> const gsq::merge_stats & { return op4.stats(); };
        }
        // Per input: events (data with a time, or heartbeat with a value
        // between the previous time and the next data time), then EOF.
        struct ev {
            bool hb;
            uint32_t t;
            std::string name;
        };
        std::vector<std::vector<ev>> evs(static_cast<size_t>(n));
        std::vector<pkt_row> all;
        for (int i = 0; i < n; ++i) {
            uint32_t t = static_cast<uint32_t>(rng() % 10);
            const int m = static_cast<int>(rng() % 40);
            for (int j = 0; j < m; ++j) {
                const uint32_t next = t + static_cast<uint32_t>(rng() % 5);
                if (rng() % 4 == 0)
                    evs[i].push_back({true, t + (next - t) / 2, {}});
                t = next;
                std::string name = "i" + std::to_string(i) + "n" + std::to_string(j);
                evs[i].push_back({false, t, name});
                all.push_back(pkt_row{t, static_cast<uint32_t>(i), 7, name});
            }
            if (rng() % 2)
                evs[i].push_back({true, t + static_cast<uint32_t>(rng() % 3), {}}); // a last heartbeat may run ahead
        }
        std::vector<size_t> pos(static_cast<size_t>(n), 0);
        std::vector<bool> ended(static_cast<size_t>(n), false);
        int open = n;
        while (open > 0) {
            const int i = static_cast<int>(rng() % static_cast<uint32_t>(n));
            if (ended[i])
                continue;
            if (pos[i] == evs[i].size()) {
                ended[i] = true;
                --open;
                accept(i, GSQ_EOF, nullptr, 0);
                continue;
            }
            const ev &e = evs[i][pos[i]++];
            auto bytes = pkt(e.t, static_cast<uint32_t>(i), e.name, 7);
            accept(i, e.hb ? GSQ_HEARTBEAT : GSQ_DATA, bytes.data(), static_cast<uint32_t>(bytes.size()));
        }
        std::vector<pkt_row> got;
        std::optional<uint32_t> last_hb, max_out;
        for (const auto &e : node.out) {
            if (e.kind == GSQ_HEARTBEAT) {
                const uint32_t h = decode_pkt(e).time;
                hb_ok = hb_ok && (!last_hb || *last_hb < h);
                last_hb = h;
            } else if (e.kind == GSQ_DATA) {
                const pkt_row r = decode_pkt(e);
                hb_ok = hb_ok && (!last_hb || *last_hb <= r.time);
                if (slack == 0)
                    sorted_ok = sorted_ok && (got.empty() || got.back().time <= r.time);
                slack_ok = slack_ok && (!max_out || r.time + slack >= *max_out);
                max_out = max_out ? std::max(*max_out, r.time) : r.time;
                got.push_back(r);
            }
        }
        std::sort(got.begin(), got.end());
        std::sort(all.begin(), all.end());
        ok = ok && got == all && node.counters[GSQ_CNT_LATE_DROPPED] == 0;
        ok = ok && !node.out.empty() && node.out.back().kind == GSQ_EOF && count_kind(node, GSQ_EOF) == 1;
        ok = ok && stats().buffered == 0 && stats().buffered_bytes == 0 && stats().released == all.size();
    }
    CHECK(ok);
    CHECK(sorted_ok);
    CHECK(hb_ok);
    CHECK(slack_ok);
}
#endif

// ---- unordered merge (the OOP union) --------------------------------------------

template <int N, bool Increasing = true>
struct pkt_union_functor : pkt_merge_functor<N, Increasing> {
    static constexpr bool ordered = false;
    using pkt_merge_functor<N, Increasing>::pkt_merge_functor;
};

// No n_inputs: the number of inputs is the constructor's (a set merge).
struct pkt_set_union_functor {
    using time_type = uint32_t;
    static constexpr bool increasing = true;
    static constexpr bool ordered = false;
    explicit pkt_set_union_functor(gsq_node *) {}
    time_type time_of(const void *tup, uint32_t) const
    {
        tup_pkt t;
        std::memcpy(&t, tup, sizeof t);
        return t.time;
    }
    time_type slack() const { return 0; }
    void emit_heartbeat(gsq_node *node, time_type tm)
    {
        tup_pkt out{};
        out.time = tm;
        gsq_emit(node, GSQ_HEARTBEAT, &out, sizeof out, nullptr, 0);
    }
};

static_assert(gsq::merge_op<pkt_merge_functor<2>>::ordered);
static_assert(!gsq::merge_op<pkt_union_functor<2>>::ordered);
static_assert(gsq::merge_op<pkt_set_union_functor>::n_inputs == 0);

#if IN_PART(3)
static void test_merge_unordered()
{
    gsq_node node;
    gsq::merge_op<pkt_union_functor<2>> op(&node);
    mfeed(op, node, 0, 10, "a10"); // input 1 unknown: through all the same
    CHECK((data_times(node) == std::vector<uint32_t>{10}));
    mfeed(op, node, 1, 3, "b3");
    CHECK((data_times(node) == std::vector<uint32_t>{10, 3}));
    CHECK(node.out[0].raw && decode_pkt(node.out[0]).name == "a10");
    CHECK_EQ(op.buffered(0) + op.buffered(1), size_t(0));
    hb(op, node, 5, 0); // lb_0 = max(5, 10) = 10, lb_1 = 3
    CHECK((hb_times(node) == std::vector<uint32_t>{3}));
    mfeed(op, node, 1, 2, "late"); // below the heartbeat 3
    CHECK_EQ(op.stats().late_dropped, uint64_t(1));
    CHECK_EQ(node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(1));
    mfeed(op, node, 1, 4, "b4");
    hb(op, node, 8, 1); // min(10, 8)
    CHECK((hb_times(node) == std::vector<uint32_t>{3, 8}));
    hb(op, node, 8, 1); // nothing new: nothing emitted
    CHECK_EQ(hb_times(node).size(), size_t(2));
    mfeed(op, node, 0, 7, "late2");
    mfeed(op, node, 0, 9, "a9"); // below input 0's own 10, but not below 8
    CHECK((data_times(node) == std::vector<uint32_t>{10, 3, 4, 9}));
    CHECK_EQ(op.stats().late_dropped, uint64_t(2));
    op.accept(&node, 1, GSQ_EOF, nullptr, 0); // no heartbeat on an EOF
    CHECK_EQ(hb_times(node).size(), size_t(2));
    hb(op, node, 20, 0); // input 1 ended: H = lb_0 = 20
    CHECK((hb_times(node) == std::vector<uint32_t>{3, 8, 20}));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK_EQ(node.out.back().kind, int(GSQ_EOF));
    CHECK_EQ(count_kind(node, GSQ_EOF), size_t(1));
    CHECK_EQ(op.stats().received, uint64_t(6));
    CHECK_EQ(op.stats().released, uint64_t(4));
    CHECK_EQ(op.stats().buffered, size_t(0));
    CHECK_EQ(op.stats().peak_buffered, size_t(0));
    CHECK_EQ(op.stats().peak_bytes, size_t(0));

    // One input running ahead does not make the other's tuples late.
    gsq_node fnode;
    gsq::merge_op<pkt_union_functor<2>> fop(&fnode);
    mfeed(fop, fnode, 0, 1000, "fast");
    mfeed(fop, fnode, 1, 1, "slow");
    hb(fop, fnode, 1, 1);
    mfeed(fop, fnode, 1, 2, "slow2");
    CHECK((data_times(fnode) == std::vector<uint32_t>{1000, 1, 2}));
    CHECK((hb_times(fnode) == std::vector<uint32_t>{1}));
    CHECK_EQ(fop.stats().late_dropped, uint64_t(0));

    // Generated heartbeats (seed 002): an input's data trails by up to its
    // declared bound, so only heartbeats bound it -- a tuple below the input's
    // own data but above the heartbeats is not late.
    gsq_node gnode;
    gnode.generated = true;
    gsq::merge_op<pkt_union_functor<2>> gop(&gnode);
    mfeed(gop, gnode, 0, 10, "a10");
    hb(gop, gnode, 4, 0);
    hb(gop, gnode, 5, 1);
    CHECK((hb_times(gnode) == std::vector<uint32_t>{4})); // not min(10, 5)
    mfeed(gop, gnode, 0, 6, "a6");                        // behind 10, above 4
    CHECK_EQ(gop.stats().late_dropped, uint64_t(0));
    CHECK((data_times(gnode) == std::vector<uint32_t>{10, 6}));

    // Slack: an input's lower bound is its data less the slack.
    gsq_node snode;
    snode.params["slack"] = "5";
    gsq::merge_op<pkt_union_functor<2>> sop(&snode);
    mfeed(sop, snode, 0, 10, "a10");
    hb(sop, snode, 7, 1);
    CHECK((hb_times(snode) == std::vector<uint32_t>{5}));
    mfeed(sop, snode, 0, 6, "a6"); // within input 0's slack
    CHECK_EQ(sop.stats().late_dropped, uint64_t(0));

    // Decreasing merge field.
    gsq_node dnode;
    gsq::merge_op<pkt_union_functor<2, false>> dop(&dnode);
    mfeed(dop, dnode, 0, 10, "a10");
    mfeed(dop, dnode, 1, 12, "b12");
    hb(dop, dnode, 8, 0); // lb_0 = 8 (it goes down), lb_1 = 12: H = 12
    CHECK((hb_times(dnode) == std::vector<uint32_t>{12}));
    mfeed(dop, dnode, 0, 13, "late");
    CHECK_EQ(dop.stats().late_dropped, uint64_t(1));

    // A run-time number of inputs (a set merge): H waits for all three.
    gsq_node rnode;
    gsq::merge_op<pkt_set_union_functor> rop(&rnode, 3);
    mfeed(rop, rnode, 0, 5, "a");
    hb(rop, rnode, 6, 1);
    CHECK_EQ(hb_times(rnode).size(), size_t(0));
    hb(rop, rnode, 4, 2);
    CHECK((hb_times(rnode) == std::vector<uint32_t>{4}));
    mfeed(rop, rnode, 2, 4, "c");
    for (int i = 0; i < 3; ++i)
        rop.accept(&rnode, i, GSQ_EOF, nullptr, 0);
    CHECK((data_times(rnode) == std::vector<uint32_t>{5, 4}));
    CHECK_EQ(rnode.out.back().kind, int(GSQ_EOF));
}
#endif

// ---- join --------------------------------------------------------------------------

// SELECT ... <KIND> FROM PKT R, PKT S WHERE R.src = S.src AND
//   S.time BETWEEN R.time - $band_lo AND R.time + $band_hi AND R.len > 0 AND S.len > 0
// A tuple is known by its name; emit records rows and heartbeats in one log.
struct join_event {
    bool hb = false;     // a heartbeat (hl, hr), or with joint a joint heartbeat (jl, jr)
    bool joint = false;
    int64_t t = 0;       // hl or jl, or the row's join time
    int64_t t2 = 0;      // hr or jr
    int64_t tl = 0, tr = 0; // a row's left and right times (0 for a missing side)
    std::string l, r;    // names; "" for a missing side
};

// A bound as the log keeps it: the type's max (no bound, e.g. a double's) is
// clamped to int64_t.
template <class T>
[[maybe_unused]] static int64_t logged_bound(T v)
{
    if constexpr (std::is_floating_point_v<T>) {
        if (!(v < static_cast<T>(INT64_MAX)))
            return INT64_MAX;
        if (!(v > static_cast<T>(INT64_MIN)))
            return INT64_MIN;
    }
    return static_cast<int64_t>(v);
}

template <gsq::join_kind K, class T = uint32_t>
struct pkt_join_functor {
    static constexpr int n_inputs = 2;
    static constexpr gsq::join_kind kind = K;
    struct key_type {
        uint32_t src = 0;
    };
    struct key_hash {
        size_t operator()(const key_type &k) const { return k.src; }
    };
    struct key_eq {
        bool operator()(const key_type &a, const key_type &b) const { return a.src == b.src; }
    };
    using time_type = T;

    T lo = 0, hi = 0;
    std::vector<join_event> log;

    explicit pkt_join_functor(gsq_node *node)
    {
        if (const char *p = gsq_param(node, "band_lo"))
            lo = static_cast<T>(std::strtoll(p, nullptr, 10));
        if (const char *p = gsq_param(node, "band_hi"))
            hi = static_cast<T>(std::strtoll(p, nullptr, 10));
    }

    static bool extract(const void *tup, key_type &k, T &t)
    {
        tup_pkt p;
        std::memcpy(&p, tup, sizeof p);
        if (p.len == 0)
            return false;
        k.src = p.src;
        t = static_cast<T>(p.time);
        return true;
    }
    bool left_extract(const void *tup, uint32_t, key_type &k, T &t) { return extract(tup, k, t); }
    bool right_extract(const void *tup, uint32_t, key_type &k, T &t) { return extract(tup, k, t); }
    T band_lo() const { return lo; }
    T band_hi() const { return hi; }
    static T time(const void *tup)
    {
        tup_pkt p;
        std::memcpy(&p, tup, sizeof p);
        return static_cast<T>(p.time);
    }
    T left_time_of(const void *tup, uint32_t) const { return time(tup); }
    T right_time_of(const void *tup, uint32_t) const { return time(tup); }

    void emit(gsq_node *, const void *l, uint32_t llen, const void *r, uint32_t rlen)
    {
        join_event e;
        if (l) {
            const pkt_row row = decode_pkt(l, llen);
            e.l = row.name;
            e.t = e.tl = row.time;
        }
        if (r) {
            const pkt_row row = decode_pkt(r, rlen);
            e.r = row.name;
            e.tr = row.time;
            if (!l)
                e.t = row.time;
        }
        log.push_back(e);
    }
    void emit_heartbeat(gsq_node *, T hl, T hr)
    {
        join_event e;
        e.hb = true;
        e.t = logged_bound(hl);
        e.t2 = logged_bound(hr);
        log.push_back(e);
    }
};

// The same join with joint punctuation (the optional emit_joint_heartbeat).
template <class Base>
struct with_joint_punctuation : Base {
    using Base::Base;
    void emit_joint_heartbeat(gsq_node *, typename Base::time_type jl, typename Base::time_type jr)
    {
        join_event e;
        e.hb = e.joint = true;
        e.t = logged_bound(jl);
        e.t2 = logged_bound(jr);
        this->log.push_back(e);
    }
};

// The same join with inputs declared disordered (F::left_ordered /
// F::right_ordered false): the OOP join of seed 004 5.3.
template <gsq::join_kind K, class T, bool LeftOrdered, bool RightOrdered>
struct pkt_ooo_join_functor : pkt_join_functor<K, T> {
    static constexpr bool left_ordered = LeftOrdered;
    static constexpr bool right_ordered = RightOrdered;
    using pkt_join_functor<K, T>::pkt_join_functor;
};

static_assert(gsq::join_op<pkt_join_functor<gsq::join_kind::inner>>::left_ordered);
static_assert(gsq::join_op<pkt_join_functor<gsq::join_kind::inner>>::right_ordered);
static_assert(gsq::join_op<pkt_join_functor<gsq::join_kind::inner>>::output_ordered);
static_assert(!gsq::join_op<pkt_ooo_join_functor<gsq::join_kind::inner, uint32_t, false, true>>::left_ordered);
static_assert(gsq::join_op<pkt_ooo_join_functor<gsq::join_kind::inner, uint32_t, false, true>>::right_ordered);
static_assert(!gsq::join_op<pkt_ooo_join_functor<gsq::join_kind::inner, uint32_t, true, false>>::right_ordered);
static_assert(!gsq::join_op<pkt_ooo_join_functor<gsq::join_kind::inner, uint32_t, true, false>>::output_ordered);
static_assert(gsq::join_op<pkt_ooo_join_functor<gsq::join_kind::inner, uint32_t, true, true>>::output_ordered);
static_assert(!gsq::join_op<pkt_join_functor<gsq::join_kind::inner>>::joint_punctuation);
static_assert(gsq::join_op<with_joint_punctuation<pkt_join_functor<gsq::join_kind::inner>>>::joint_punctuation);
static_assert(!gsq::join_op<with_joint_punctuation<
                  pkt_ooo_join_functor<gsq::join_kind::inner, uint32_t, false, true>>>::left_ordered);

template <class Op>
[[maybe_unused]] static void jfeed(Op &op, gsq_node &node, int side, uint32_t time, uint32_t key, const std::string &name,
                  uint32_t len = 1)
{
    auto t = pkt(time, key, name, len);
    op.accept(&node, side, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
}

using row_pair = std::pair<std::string, std::string>;

[[maybe_unused]] static std::vector<row_pair> join_rows(const std::vector<join_event> &log)
{
    std::vector<row_pair> v;
    for (const auto &e : log)
        if (!e.hb)
            v.emplace_back(e.l, e.r);
    std::sort(v.begin(), v.end());
    return v;
}

// The hl of every heartbeat.
[[maybe_unused]] static std::vector<int64_t> join_hbs(const std::vector<join_event> &log)
{
    std::vector<int64_t> v;
    for (const auto &e : log)
        if (e.hb && !e.joint)
            v.push_back(e.t);
    return v;
}

using bound_pair = std::pair<int64_t, int64_t>;

// Every heartbeat's (hl, hr), or with joint every joint heartbeat's (jl, jr).
[[maybe_unused]] static std::vector<bound_pair> join_bounds(const std::vector<join_event> &log, bool joint = false)
{
    std::vector<bound_pair> v;
    for (const auto &e : log)
        if (e.hb && e.joint == joint)
            v.emplace_back(e.t, e.t2);
    return v;
}

// The promises of a join's heartbeats, checked over its log in emission order:
//   (a) no row after a joint heartbeat (jl, jr) has tl < jl and tr < jr (the
//       time of a missing side counts as below anything);
//   (b) no row after a heartbeat (hl, hr) has a join time < hl, nor a right
//       time < hr: rows with a right tuple, and the left-only rows of an
//       equality join, whose right-time column is filled from tl;
//   (c) each kind's pairs never go back, and each one raises a component;
//   (d) leads: some joint heartbeat came with both components above the hl
//       emitted before it.
struct join_bounds_check {
    bool equality;
    std::optional<bound_pair> hb, joint;
    bool joint_ok = true, hb_ok = true, monotone = true, leads = false;
    size_t joints = 0;

    explicit join_bounds_check(bool eq) : equality(eq) {}

    static bool raises(std::optional<bound_pair> &last, const bound_pair &next)
    {
        const bool ok = !last || (next.first >= last->first && next.second >= last->second && next != *last);
        last = next;
        return ok;
    }
    void feed(const join_event &e)
    {
        if (e.hb && e.joint) {
            monotone = raises(joint, {e.t, e.t2}) && monotone;
            ++joints;
            leads = leads || (hb && e.t > hb->first && e.t2 > hb->first);
        } else if (e.hb) {
            monotone = raises(hb, {e.t, e.t2}) && monotone;
        } else {
            const bool has_l = !e.l.empty(), has_r = !e.r.empty();
            if (joint)
                joint_ok = joint_ok && !((!has_l || e.tl < joint->first) && (!has_r || e.tr < joint->second));
            if (hb) {
                hb_ok = hb_ok && e.t >= hb->first;
                if (has_r)
                    hb_ok = hb_ok && e.tr >= hb->second;
                else if (equality)
                    hb_ok = hb_ok && e.tl >= hb->second;
            }
        }
    }
    bool ok() const { return joint_ok && hb_ok && monotone; }
};

[[maybe_unused]] static join_bounds_check check_join_bounds(const std::vector<join_event> &log, bool equality)
{
    join_bounds_check c(equality);
    for (const auto &e : log)
        c.feed(e);
    return c;
}

// A join's answer by nested loop: every pair (l, r) of tuples that take part
// (take(x), and not filtered out: len != 0) with equal keys and r's time in
// [l's - lo, l's + hi], then the unmatched tuples of each side K preserves;
// sorted.
template <gsq::join_kind K, class E, class Take>
[[maybe_unused]] static std::vector<row_pair> nested_loop_join(const std::vector<E> &left, const std::vector<E> &right,
                                              int64_t lo, int64_t hi, Take take)
{
    std::vector<row_pair> want;
    std::set<std::string> lmatched, rmatched;
    for (const E &l : left)
        for (const E &r : right) {
            if (!take(l) || !take(r) || l.len == 0 || r.len == 0 || l.key != r.key)
                continue;
            const int64_t tl = l.t, tr = r.t;
            if (tr >= tl - lo && tr <= tl + hi) {
                want.emplace_back(l.name, r.name);
                lmatched.insert(l.name);
                rmatched.insert(r.name);
            }
        }
    constexpr bool keep_l = K == gsq::join_kind::left_outer || K == gsq::join_kind::full_outer;
    constexpr bool keep_r = K == gsq::join_kind::right_outer || K == gsq::join_kind::full_outer;
    for (const E &l : left)
        if (keep_l && take(l) && l.len != 0 && !lmatched.count(l.name))
            want.emplace_back(l.name, "");
    for (const E &r : right)
        if (keep_r && take(r) && r.len != 0 && !rmatched.count(r.name))
            want.emplace_back("", r.name);
    std::sort(want.begin(), want.end());
    return want;
}

template <gsq::join_kind K>
[[maybe_unused]] static void check_join_kind_keys(const std::vector<row_pair> &want)
{
    gsq_node node;
    gsq::join_op<pkt_join_functor<K>> op(&node);
    auto &log = op.functor().log;
    jfeed(op, node, 0, 1, 1, "a");
    jfeed(op, node, 0, 1, 2, "b");
    jfeed(op, node, 1, 1, 1, "x");
    CHECK_EQ(log.size(), size_t(1)); // a|x at once
    jfeed(op, node, 1, 1, 3, "y");
    jfeed(op, node, 0, 1, 7, "f", 0); // filtered out: not even an outer row
    CHECK_EQ(op.entries(0), size_t(2));
    jfeed(op, node, 1, 2, 9, "z"); // right at 2: left entries at 1 are done
    CHECK_EQ(op.entries(0), size_t(0));
    constexpr bool left_kept = K == gsq::join_kind::left_outer || K == gsq::join_kind::full_outer;
    CHECK_EQ(log.size(), size_t(left_kept ? 2 : 1)); // b|- when it was purged
    CHECK_EQ(op.entries(1), size_t(3));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0); // no more left: right entries go
    CHECK_EQ(op.entries(1), size_t(0));
    CHECK_EQ(node.out.size(), size_t(0));
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    CHECK_EQ(count_kind(node, GSQ_EOF), size_t(1));
    CHECK(join_rows(log) == want);
    CHECK_EQ(op.stats().matches, uint64_t(1));
    CHECK_EQ(op.stats().filtered[0], uint64_t(1));
    CHECK_EQ(op.keys(0) + op.keys(1), size_t(0));
}

#if IN_PART(4)
static void test_join_kinds_with_keys()
{
    using gsq::join_kind;
    check_join_kind_keys<join_kind::inner>({{"a", "x"}});
    check_join_kind_keys<join_kind::left_outer>({{"a", "x"}, {"b", ""}});
    check_join_kind_keys<join_kind::right_outer>({{"", "y"}, {"", "z"}, {"a", "x"}});
    check_join_kind_keys<join_kind::full_outer>({{"", "y"}, {"", "z"}, {"a", "x"}, {"b", ""}});
}
#endif

#if IN_PART(4)
static void test_join_band()
{
    gsq_node node;
    node.params["band_lo"] = "2";
    node.params["band_hi"] = "3"; // tr in [tl - 2, tl + 3]
    gsq::join_op<pkt_join_functor<gsq::join_kind::full_outer>> op(&node);
    auto &log = op.functor().log;
    jfeed(op, node, 0, 10, 0, "a");
    jfeed(op, node, 1, 7, 0, "r7"); // below 10 - 2: unmatched, and unmatchable at once
    CHECK_EQ(op.entries(1), size_t(0));
    CHECK((join_rows(log) == std::vector<row_pair>{{"", "r7"}}));
    jfeed(op, node, 1, 8, 0, "r8");
    jfeed(op, node, 1, 13, 0, "r13");
    CHECK_EQ(op.entries(0), size_t(1));
    jfeed(op, node, 1, 14, 0, "r14"); // 14 > 10 + 3: a can match nothing more
    CHECK_EQ(op.entries(0), size_t(0));
    jfeed(op, node, 0, 12, 0, "b"); // [10, 15]: r8 is gone (12 > 8 + 2)
    CHECK_EQ(op.entries(1), size_t(2));
    hb(op, node, 20, 1); // right at 20 > 12 + 3: b done
    CHECK_EQ(op.entries(0), size_t(0));
    // hl = min(p_L 12, p_R - band_hi 17, p_R 20, oldest right 13) = 12;
    // hr = min(p_R 20, p_L - band_lo 10, oldest right 13, p_L 12) = 10
    CHECK((join_bounds(log) == std::vector<bound_pair>{{12, 10}}));
    hb(op, node, 30, 0); // left at 30: r13, r14 done
    CHECK_EQ(op.entries(1), size_t(0));
    // hl = min(30, 17, 20) = 17; hr = min(20, 28, 30) = 20
    CHECK((join_bounds(log) == std::vector<bound_pair>{{12, 10}, {17, 20}}));
    hb(op, node, 25, 0); // behind: nothing new
    CHECK_EQ(join_hbs(log).size(), size_t(2));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    const std::vector<row_pair> want = {{"", "r7"}, {"a", "r13"}, {"a", "r8"}, {"b", "r13"}, {"b", "r14"}};
    CHECK(join_rows(log) == want);
    CHECK_EQ(op.stats().unmatched[1], uint64_t(1));

    // A band that excludes equality, on a signed time: tr in [tl + 2, tl + 5].
    gsq_node snode;
    snode.params["band_lo"] = "-2";
    snode.params["band_hi"] = "5";
    gsq::join_op<pkt_join_functor<gsq::join_kind::inner, int64_t>> sop(&snode);
    jfeed(sop, snode, 0, 10, 0, "a");
    for (uint32_t t : {11u, 12u, 15u, 16u})
        jfeed(sop, snode, 1, t, 0, "r" + std::to_string(t));
    CHECK((join_rows(sop.functor().log) == std::vector<row_pair>{{"a", "r12"}, {"a", "r15"}}));
}
#endif

// The right-time bound hr apart from hl: with band_lo > 0 a matched row's
// right time may be band_lo below its left time, so a heartbeat that gave the
// right-time columns hl (what the operator did before hr) promised too much.
#if IN_PART(4)
static void test_join_heartbeat_per_column()
{
    gsq_node node;
    node.params["band_lo"] = "10";
    node.params["band_hi"] = "10"; // tr in [tl - 10, tl + 10]
    gsq::join_op<pkt_join_functor<gsq::join_kind::inner>> op(&node);
    auto &log = op.functor().log;
    jfeed(op, node, 1, 92, 0, "r92");
    jfeed(op, node, 1, 120, 0, "r120"); // p_R = 120
    hb(op, node, 100, 0);               // p_L = 100
    // hl = min(p_L 100, p_R - band_hi 110) = 100; hr = min(p_R 120, p_L - band_lo 90) = 90
    CHECK((join_bounds(log) == std::vector<bound_pair>{{100, 90}}));
    jfeed(op, node, 0, 100, 0, "l100"); // matches r92: right time 92 < hl, >= hr
    CHECK(log.back().l == "l100" && log.back().r == "r92" && log.back().tr == 92);
    hb(op, node, 101, 0); // both bounds rise by one
    hb(op, node, 121, 1); // nothing rises (hl = min(101, 111), hr = min(121, 91))
    CHECK((join_bounds(log) == std::vector<bound_pair>{{100, 90}, {101, 91}}));
    CHECK_EQ(op.stats().heartbeats_out, uint64_t(2));
    CHECK_EQ(op.stats().joint_heartbeats_out, uint64_t(0)); // no emit_joint_heartbeat

    // A right outer join: a future unmatched right holds hl at p_R; once the
    // left input ended its terms go.
    gsq_node rnode;
    rnode.params["band_lo"] = "0";
    rnode.params["band_hi"] = "5"; // tr in [tl, tl + 5]
    gsq::join_op<pkt_join_functor<gsq::join_kind::right_outer>> rop(&rnode);
    auto &rlog = rop.functor().log;
    hb(rop, rnode, 50, 0);
    hb(rop, rnode, 50, 1); // hl = min(50, 45, 50) = 45, hr = min(50, 50) = 50
    CHECK((join_bounds(rlog) == std::vector<bound_pair>{{45, 50}}));
    rop.accept(&rnode, 0, GSQ_EOF, nullptr, 0); // no more lefts: hl = min(p_R - 5, p_R), hr = p_R
    hb(rop, rnode, 60, 1);
    CHECK((join_bounds(rlog) == std::vector<bound_pair>{{45, 50}, {55, 60}}));
}
#endif

// Joint punctuation (seed 004 7, Figure 8): (J_L, J_R) does not lose the band,
// so it leads the individual heartbeat; a preserved side's oldest stored
// entry holds its component back; an ended input's is the type's max.
#if IN_PART(4)
static void test_join_joint_punctuation()
{
    gsq_node node;
    node.params["band_lo"] = "30";
    node.params["band_hi"] = "30";
    using op_t = gsq::join_op<with_joint_punctuation<pkt_join_functor<gsq::join_kind::left_outer>>>;
    static_assert(op_t::joint_punctuation);
    op_t op(&node);
    auto &log = op.functor().log;
    jfeed(op, node, 0, 100, 1, "l100");
    hb(op, node, 100, 1); // p_L 100, p_R 100
    // hl = min(100, 70, oldest left 100) = 70, hr = min(100, 70, 100) = 70;
    // J_L = min(p_L 100, oldest left 100) = 100, J_R = p_R 100
    CHECK((join_bounds(log) == std::vector<bound_pair>{{70, 70}}));
    CHECK((join_bounds(log, true) == std::vector<bound_pair>{{100, 100}}));
    CHECK(log.back().joint); // after the heartbeat
    hb(op, node, 120, 0); // hr = min(100, 90, 120, 100) = 90; J_L held by l100
    CHECK((join_bounds(log) == std::vector<bound_pair>{{70, 70}, {70, 90}}));
    CHECK_EQ(join_bounds(log, true).size(), size_t(1));
    hb(op, node, 125, 1);
    // hl = min(120, 95, 100) = 95, hr = min(125, 90, 120, 100) = 90;
    // J = (min(120, 100), 125) = (100, 125)
    CHECK((join_bounds(log) == std::vector<bound_pair>{{70, 70}, {70, 90}, {95, 90}}));
    CHECK((join_bounds(log, true) == std::vector<bound_pair>{{100, 100}, {100, 125}}));
    hb(op, node, 131, 1); // l100 can match no more: out unmatched; J_L = p_L 120
    CHECK(!log[log.size() - 3].hb && log[log.size() - 3].l == "l100");
    CHECK((join_bounds(log).back() == bound_pair{101, 90}));
    CHECK((join_bounds(log, true).back() == bound_pair{120, 131}));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    hb(op, node, 140, 1); // J_L = +infinity: the type's max
    CHECK((join_bounds(log, true).back() == bound_pair{UINT32_MAX, 140}));
    CHECK_EQ(op.stats().joint_heartbeats_out, uint64_t(join_bounds(log, true).size()));
    CHECK_EQ(op.stats().heartbeats_out, uint64_t(join_bounds(log).size()));
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    CHECK_EQ(count_kind(node, GSQ_EOF), size_t(1));
}
#endif

// A joint heartbeat arriving on an input (a join feeding another operator) is
// ignored by every operator that does not use it: no output, no progress, no
// failure.
#if IN_PART(4)
static void test_joint_heartbeat_input_ignored()
{
    auto t = pkt(50, 0, "", 0);
    const uint32_t len = static_cast<uint32_t>(t.size());
    gsq_node jnode;
    gsq::join_op<with_joint_punctuation<pkt_join_functor<gsq::join_kind::full_outer>>> jop(&jnode);
    jfeed(jop, jnode, 0, 10, 0, "l10");
    jop.accept(&jnode, 1, GSQ_JOINT_HEARTBEAT, t.data(), len);
    jop.accept(&jnode, 0, GSQ_JOINT_HEARTBEAT, nullptr, 0);
    CHECK(!jnode.failed && jop.functor().log.empty() && jop.entries(0) == 1);
    CHECK_EQ(jop.stats().heartbeats_in, uint64_t(0));
    jfeed(jop, jnode, 1, 10, 0, "r10"); // still matches: p_R did not move
    CHECK_EQ(jop.stats().matches, uint64_t(1));

    // A selection (it may not keep both time columns: nothing passes on), and
    // a merge (no progress: input 1 still blocks input 0's tuple).
    gsq_node snode;
    gsq::selection_op<big_packets_hb_functor> sop(&snode);
    sop.accept(&snode, 0, GSQ_JOINT_HEARTBEAT, t.data(), len);
    CHECK(!snode.failed && snode.out.empty() && sop.functor().heartbeats == 0);
    gsq_node mnode;
    gsq::merge_op<pkt_merge_functor<2>> mop(&mnode);
    mfeed(mop, mnode, 0, 12, "a12");
    mop.accept(&mnode, 1, GSQ_JOINT_HEARTBEAT, t.data(), len);
    CHECK(!mnode.failed && mnode.out.empty() && mop.stats().heartbeats_in == 0);

    constexpr static int inputs[] = {1, 2};
    const gsq_hfta_def def =
        gsq::hfta_def_of<gsq::join_op<pkt_join_functor<gsq::join_kind::inner>>>("j", inputs, 3);
    gsq_node gnode;
    void *h = def.create(&gnode);
    def.accept(h, &gnode, 1, GSQ_JOINT_HEARTBEAT, t.data(), len);
    def.accept(h, &gnode, 1, 42, t.data(), len); // an unknown kind still fails the node
    CHECK(gnode.failure.find("unknown tuple kind 42") != std::string::npos);
    def.destroy(h);
}
#endif

#if IN_PART(4)
static void test_join_heartbeat_purge_memory()
{
    gsq_node node;
    gsq::join_op<pkt_join_functor<gsq::join_kind::left_outer>> op(&node);
    auto &log = op.functor().log;
    size_t max_entries = 0;
    bool drops = true;
    for (uint32_t block = 0; block < 10; ++block) {
        for (uint32_t t = 100 * block; t < 100 * block + 100; ++t) {
            jfeed(op, node, 0, t, t % 7, "l" + std::to_string(t));
            max_entries = std::max(max_entries, op.entries(0));
        }
        hb(op, node, 100 * block + 100, 1); // the right side moved past them all
        drops = drops && op.entries(0) == 0 && op.index_slots(0) == 0 && op.stats().bytes[0] == 0;
    }
    CHECK(drops);
    CHECK_EQ(max_entries, size_t(100));
    CHECK_EQ(op.stats().peak_side_entries[0], size_t(100));
    CHECK_EQ(op.stats().peak_entries, size_t(100));
    CHECK_EQ(op.stats().purged[0], uint64_t(1000));
    // Every left row came out exactly once, unmatched.
    std::set<std::string> names;
    size_t rows = 0;
    for (const auto &e : log)
        if (!e.hb) {
            ++rows;
            names.insert(e.l);
        }
    CHECK_EQ(rows, size_t(1000));
    CHECK_EQ(names.size(), size_t(1000));
    // Heartbeats: min(p_L, p_R) after each block.
    std::vector<int64_t> want;
    for (int64_t block = 0; block < 10; ++block)
        want.push_back(100 * block + 99);
    CHECK(join_hbs(log) == want);
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK_EQ(rows, join_rows(log).size());
    CHECK_EQ(count_kind(node, GSQ_EOF), size_t(1));

    // Many keys, then a purge: the index gives its slots back.
    gsq_node knode;
    gsq::join_op<pkt_join_functor<gsq::join_kind::inner>> kop(&knode);
    for (uint32_t k = 0; k < 5000; ++k)
        jfeed(kop, knode, 0, 1, k, "k");
    jfeed(kop, knode, 0, 2, 0, "last");
    const size_t big = kop.index_slots(0);
    hb(kop, knode, 2, 1); // left entries at 1 are done, "last" stays
    CHECK_EQ(kop.entries(0), size_t(1));
    CHECK(kop.index_slots(0) < big / 100);
}
#endif

#if IN_PART(4)
static void test_join_many_to_many_and_late()
{
    gsq_node node;
    gsq::join_op<pkt_join_functor<gsq::join_kind::full_outer>> op(&node);
    auto &log = op.functor().log;
    for (const char *n : {"l1", "l2", "l3"})
        jfeed(op, node, 0, 5, 1, n);
    jfeed(op, node, 1, 5, 1, "r1");
    jfeed(op, node, 1, 5, 1, "r2");
    jfeed(op, node, 0, 5, 1, "l4"); // probes both stored rights
    CHECK_EQ(op.stats().matches, uint64_t(8));
    // Late: below the side's progress.
    jfeed(op, node, 0, 4, 1, "late");
    hb(op, node, 9, 0);
    jfeed(op, node, 0, 8, 1, "late2");
    CHECK_EQ(op.stats().late_dropped[0], uint64_t(2));
    CHECK_EQ(node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(2));
    CHECK_EQ(op.entries(1), size_t(0)); // left at 9 > 5: the rights are done
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    std::vector<row_pair> want;
    for (const char *l : {"l1", "l2", "l3", "l4"})
        for (const char *r : {"r1", "r2"})
            want.emplace_back(l, r);
    CHECK(join_rows(log) == want); // every pair once, no outer rows

    // A filtered tuple still moves its input's progress (and purges).
    gsq_node fnode;
    gsq::join_op<pkt_join_functor<gsq::join_kind::right_outer>> fop(&fnode);
    jfeed(fop, fnode, 0, 5, 2, "l5");
    jfeed(fop, fnode, 1, 6, 2, "r6");
    CHECK_EQ(fop.entries(1), size_t(1));
    jfeed(fop, fnode, 0, 12, 0, "filtered", 0);
    CHECK_EQ(fop.entries(1), size_t(0)); // left at 12 > 6
    CHECK((join_rows(fop.functor().log) == std::vector<row_pair>{{"", "r6"}}));
    CHECK_EQ(fop.stats().filtered[0], uint64_t(1));
    jfeed(fop, fnode, 0, 11, 2, "late3");
    CHECK_EQ(fop.stats().late_dropped[0], uint64_t(1));
    CHECK_EQ(op.stats().unmatched[0], uint64_t(0));
}
#endif

#if IN_PART(4)
static void test_join_eof()
{
    gsq_node node;
    gsq::join_op<pkt_join_functor<gsq::join_kind::full_outer>> op(&node);
    auto &log = op.functor().log;
    jfeed(op, node, 0, 1, 1, "a");
    jfeed(op, node, 0, 1, 3, "c");
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK_EQ(op.entries(0), size_t(2)); // they wait for the right side
    jfeed(op, node, 1, 1, 1, "x");      // still matches a stored left
    jfeed(op, node, 1, 1, 2, "y");      // can match nothing: out at once
    CHECK_EQ(op.entries(1), size_t(0));
    CHECK((join_rows(log) == std::vector<row_pair>{{"", "y"}, {"a", "x"}}));
    hb(op, node, 1, 1);
    CHECK((join_hbs(log) == std::vector<int64_t>{1})); // p_R - 0, p_R, oldest left 1
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    CHECK((join_rows(log) == std::vector<row_pair>{{"", "y"}, {"a", "x"}, {"c", ""}}));
    CHECK_EQ(node.out.size(), size_t(1));
    CHECK_EQ(node.out.back().kind, int(GSQ_EOF));
    CHECK_EQ(op.stats().entries[0] + op.stats().entries[1], size_t(0));

    // The C glue and a protocol error.
    constexpr static int inputs[] = {1, 2};
    const gsq_hfta_def def = gsq::hfta_def_of<gsq::join_op<pkt_join_functor<gsq::join_kind::inner>>>("j", inputs, 3);
    CHECK_EQ(def.n_inputs, 2);
    gsq_node gnode;
    void *h = def.create(&gnode);
    auto t = pkt(1, 0, "x", 1);
    def.accept(h, &gnode, 0, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
    def.accept(h, &gnode, 0, GSQ_EOF, nullptr, 0);
    def.accept(h, &gnode, 0, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
    CHECK(gnode.failed && gnode.failure.find("after its end of stream") != std::string::npos);
    def.destroy(h);
}
#endif

// A pure temporal join (no equality keys: an empty key struct), as the code
// generator writes it for R.tb = S.tb alone.
struct tb_only_join_functor : pkt_join_functor<gsq::join_kind::inner> {
    struct key_type {};
    struct key_hash {
        size_t operator()(const key_type &) const { return 0; }
    };
    struct key_eq {
        bool operator()(const key_type &, const key_type &) const { return true; }
    };
    using pkt_join_functor::pkt_join_functor;
    bool left_extract(const void *tup, uint32_t, key_type &, uint32_t &t)
    {
        t = time(tup);
        return true;
    }
    bool right_extract(const void *tup, uint32_t, key_type &, uint32_t &t)
    {
        t = time(tup);
        return true;
    }
};

#if IN_PART(4)
static void test_join_empty_key()
{
    gsq_node node;
    gsq::join_op<tb_only_join_functor> op(&node);
    jfeed(op, node, 0, 1, 1, "a");
    jfeed(op, node, 0, 1, 2, "b");
    jfeed(op, node, 1, 1, 3, "x");
    jfeed(op, node, 1, 2, 4, "y");
    CHECK_EQ(op.keys(0), size_t(0)); // a, b purged by y
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    CHECK((join_rows(op.functor().log) == std::vector<row_pair>{{"a", "x"}, {"b", "x"}}));
}
#endif

// Random time-ordered inputs with heartbeats, each kind against a nested loop.
template <gsq::join_kind K, class T>
[[maybe_unused]] static bool join_random_trial(std::mt19937 &rng, int64_t lo, int64_t hi, bool &hb_ok)
{
    struct ev {
        bool hb;
        uint32_t t, key, len;
        std::string name;
    };
    std::vector<ev> side[2];
    for (int s = 0; s < 2; ++s) {
        uint32_t t = 3 + static_cast<uint32_t>(rng() % 6);
        const int m = static_cast<int>(rng() % 30);
        for (int j = 0; j < m; ++j) {
            const uint32_t next = t + static_cast<uint32_t>(rng() % 4);
            if (rng() % 4 == 0)
                side[s].push_back({true, t + static_cast<uint32_t>(rng() % (next - t + 1)), 0, 0, {}});
            t = next;
            side[s].push_back({false, t, static_cast<uint32_t>(rng() % 3), rng() % 10 == 0 ? 0u : 1u,
                               (s == 0 ? "L" : "R") + std::to_string(j)});
        }
    }
    // The reference: a nested loop over the tuples that pass the filters.
    const std::vector<row_pair> want =
        nested_loop_join<K>(side[0], side[1], lo, hi, [](const ev &x) { return !x.hb; });

    gsq_node node;
    node.params["band_lo"] = std::to_string(lo);
    node.params["band_hi"] = std::to_string(hi);
    gsq::join_op<with_joint_punctuation<pkt_join_functor<K, T>>> op(&node);
    size_t pos[2] = {0, 0};
    bool ended[2] = {false, false};
    while (!ended[0] || !ended[1]) {
        const int s = static_cast<int>(rng() % 2);
        if (ended[s])
            continue;
        if (pos[s] == side[s].size()) {
            ended[s] = true;
            op.accept(&node, s, GSQ_EOF, nullptr, 0);
            continue;
        }
        const ev &e = side[s][pos[s]++];
        auto bytes = pkt(e.t, e.key, e.name, e.len);
        op.accept(&node, s, e.hb ? GSQ_HEARTBEAT : GSQ_DATA, bytes.data(), static_cast<uint32_t>(bytes.size()));
    }
    hb_ok = hb_ok && check_join_bounds(op.functor().log, lo == 0 && hi == 0).ok();
    return join_rows(op.functor().log) == want && node.out.size() == 1 && node.out[0].kind == GSQ_EOF &&
           node.counters[GSQ_CNT_LATE_DROPPED] == 0 && op.entries(0) == 0 && op.entries(1) == 0 &&
           op.stats().bytes[0] == 0 && op.stats().bytes[1] == 0;
}

#if IN_PART(4)
static void test_join_random()
{
    using gsq::join_kind;
    std::mt19937 rng(99);
    int bad = 0;
    bool hb_ok = true;
    for (int trial = 0; trial < 400; ++trial) {
        const bool equality = trial % 3 == 0;
        const int64_t lo = equality ? 0 : static_cast<int64_t>(rng() % 4);
        const int64_t hi = equality ? 0 : static_cast<int64_t>(rng() % 4);
        const uint32_t seed = rng();
        // The same input for every kind (same seed).
        std::mt19937 r1(seed), r2(seed), r3(seed), r4(seed);
        bad += !join_random_trial<join_kind::inner, uint32_t>(r1, lo, hi, hb_ok);
        bad += !join_random_trial<join_kind::left_outer, uint32_t>(r2, lo, hi, hb_ok);
        bad += !join_random_trial<join_kind::right_outer, uint32_t>(r3, lo, hi, hb_ok);
        bad += !join_random_trial<join_kind::full_outer, uint32_t>(r4, lo, hi, hb_ok);
        // Signed time, bands that may exclude equality (lo + hi >= 0).
        const int64_t slo = static_cast<int64_t>(rng() % 7) - 3;
        const int64_t shi = -slo + static_cast<int64_t>(rng() % 4);
        std::mt19937 r5(seed), r6(seed);
        bad += !join_random_trial<join_kind::full_outer, int64_t>(r5, slo, shi, hb_ok);
        bad += !join_random_trial<join_kind::inner, double>(r6, slo, shi, hb_ok);
    }
    CHECK_EQ(bad, 0);
    CHECK(hb_ok);
}
#endif

// The defect a user met: an outer equality join emitted an unmatched row
// after a matched row of a later time (the unmatched left was purged only
// after the right tuple at 2 had probed), so an aggregation over the join's
// output, ordered on the join time, dropped it as late.
[[maybe_unused]] static std::vector<int64_t> join_row_times(const std::vector<join_event> &log)
{
    std::vector<int64_t> v;
    for (const auto &e : log)
        if (!e.hb)
            v.push_back(e.t);
    return v;
}

#if IN_PART(4)
static void test_join_outer_output_order()
{
    {
        gsq_node node;
        gsq::join_op<pkt_join_functor<gsq::join_kind::left_outer>> op(&node);
        static_assert(gsq::join_op<pkt_join_functor<gsq::join_kind::left_outer>>::output_disorder_of(0, 0) == 0);
        CHECK_EQ(op.output_disorder(), uint32_t(0));
        auto &log = op.functor().log;
        jfeed(op, node, 0, 1, 1, "a1"); // unmatched: no right of key 1
        jfeed(op, node, 0, 2, 2, "b2");
        jfeed(op, node, 1, 1, 9, "r1"); // right at 1, another key
        jfeed(op, node, 1, 2, 2, "r2"); // matches b2; makes a1 unmatchable
        CHECK((join_row_times(log) == std::vector<int64_t>{1, 2}));
        CHECK(log.size() == 2 && log[0].l == "a1" && log[0].r.empty() && log[1].l == "b2" && log[1].r == "r2");
        op.accept(&node, 0, GSQ_EOF, nullptr, 0);
        op.accept(&node, 1, GSQ_EOF, nullptr, 0);
        const auto times = join_row_times(log);
        CHECK(std::is_sorted(times.begin(), times.end()));
    }
    {
        // The mirror image: right-only rows before a later left's matches.
        gsq_node node;
        gsq::join_op<pkt_join_functor<gsq::join_kind::full_outer>> op(&node);
        auto &log = op.functor().log;
        jfeed(op, node, 1, 1, 1, "r1");
        jfeed(op, node, 1, 3, 3, "r3");
        jfeed(op, node, 0, 1, 9, "l1"); // unmatchable at once (right is at 3): out
        jfeed(op, node, 0, 3, 3, "l3"); // r1 goes first, then l3|r3
        CHECK((join_row_times(log) == std::vector<int64_t>{1, 1, 3}));
        CHECK(log.size() == 3 && log[0].l == "l1" && log[1].r == "r1" && log[1].l.empty() &&
              log[2].l == "l3" && log[2].r == "r3");
        op.accept(&node, 0, GSQ_EOF, nullptr, 0);
        op.accept(&node, 1, GSQ_EOF, nullptr, 0);
        CHECK_EQ(join_row_times(log).size(), size_t(3));
    }
}
#endif

// ---- OOP join (disordered inputs) -------------------------------------------------

// Figure 4 of seed 004 on a hand-made trace: progress from heartbeats only,
// data behind earlier data accepted, data behind its own heartbeat late, a
// tuple already past the other side's band not stored, purge oldest first.
#if IN_PART(4)
static void test_join_disordered_basic()
{
    gsq_node node;
    using op_t = gsq::join_op<pkt_ooo_join_functor<gsq::join_kind::full_outer, uint32_t, false, false>>;
    op_t op(&node);
    auto &log = op.functor().log;
    jfeed(op, node, 0, 5, 1, "a5");
    jfeed(op, node, 0, 3, 1, "b3"); // behind a5, no heartbeat yet: accepted
    CHECK_EQ(op.stats().late_dropped[0], uint64_t(0));
    jfeed(op, node, 1, 3, 1, "x3"); // matches b3 (equality join)
    CHECK((join_rows(log) == std::vector<row_pair>{{"b3", "x3"}}));
    jfeed(op, node, 1, 9, 7, "w9"); // right data does not move p_R: nothing purged
    CHECK_EQ(op.entries(0), size_t(2));
    hb(op, node, 4, 1); // p_R = 4: b3 (matched) goes; p_L unknown: no heartbeat
    CHECK_EQ(op.entries(0), size_t(1));
    CHECK_EQ(op.entries(1), size_t(2));
    CHECK(join_hbs(log).empty());
    hb(op, node, 3, 0); // p_L = 3: H = min(3, 4 - 0, oldest left 5, 4, oldest right 3) = 3
    CHECK((join_hbs(log) == std::vector<int64_t>{3}));
    CHECK_EQ(op.entries(1), size_t(2)); // x3 stays: a left at 3 may still come
    jfeed(op, node, 0, 2, 1, "c2"); // below its own heartbeat: late
    CHECK_EQ(op.stats().late_dropped[0], uint64_t(1));
    CHECK_EQ(node.counters[GSQ_CNT_LATE_DROPPED], uint64_t(1));
    jfeed(op, node, 0, 3, 1, "d3"); // not late; matches x3; 3 < p_R 4: not stored
    jfeed(op, node, 0, 3, 2, "e3"); // no match, not stored: out at once, unmatched
    CHECK_EQ(op.entries(0), size_t(1));
    CHECK(log.back().l == "e3" && log.back().r.empty());
    jfeed(op, node, 1, 6, 1, "y6");
    jfeed(op, node, 1, 4, 1, "z4"); // behind y6: accepted, stored
    CHECK_EQ(op.entries(1), size_t(4));
    jfeed(op, node, 0, 6, 1, "f6"); // matches y6 only
    jfeed(op, node, 1, 20, 9, "filtered", 0); // a filtered disordered tuple moves nothing
    CHECK_EQ(op.entries(0), size_t(2));
    hb(op, node, 7, 0); // p_L = 7: x3 (matched), z4 (unmatched), y6 (matched) go, oldest first
    CHECK_EQ(op.entries(1), size_t(1)); // w9
    CHECK(log.back().hb && log.back().t == 4); // min(7, 4, 5, 4, 9)
    CHECK(log[log.size() - 2].l.empty() && log[log.size() - 2].r == "z4");
    op.accept(&node, 1, GSQ_EOF, nullptr, 0); // a5 (unmatched) and f6 (matched) go
    CHECK_EQ(op.entries(0), size_t(0));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    const std::vector<row_pair> want = {{"", "w9"}, {"", "z4"}, {"a5", ""}, {"b3", "x3"},
                                        {"d3", "x3"}, {"e3", ""}, {"f6", "y6"}};
    CHECK(join_rows(log) == want);
    CHECK_EQ(op.stats().filtered[1], uint64_t(1));
    CHECK_EQ(op.stats().unmatched[0] + op.stats().unmatched[1], uint64_t(4));
    CHECK_EQ(op.stats().peak_side_entries[1], size_t(4));
    CHECK(node.out.size() == 1 && node.out[0].kind == GSQ_EOF);
    CHECK_EQ(op.keys(0) + op.keys(1), size_t(0));
    // No row below a heartbeat emitted before it.
    CHECK(check_join_bounds(log, true).ok());
}
#endif

// One disordered side against an in-order one, with a band: the in-order
// side keeps today's rules (progress from its data), the disordered one its
// heartbeats.
#if IN_PART(4)
static void test_join_disordered_one_side_band()
{
    gsq_node node;
    node.params["band_lo"] = "2";
    node.params["band_hi"] = "3"; // tr in [tl - 2, tl + 3]
    gsq::join_op<pkt_ooo_join_functor<gsq::join_kind::left_outer, uint32_t, false, true>> op(&node);
    auto &log = op.functor().log;
    jfeed(op, node, 1, 10, 0, "r10"); // in-order right: p_R = 10
    jfeed(op, node, 0, 12, 0, "l12"); // matches r10
    jfeed(op, node, 0, 6, 0, "l6");   // 6 + 3 < 10: can match no future right: out, unmatched
    jfeed(op, node, 0, 8, 0, "l8");   // matches r10; 8 + 3 >= 10: stored
    CHECK_EQ(op.entries(0), size_t(2));
    jfeed(op, node, 1, 9, 0, "r9"); // the in-order right went back: late (today's rule)
    CHECK_EQ(op.stats().late_dropped[1], uint64_t(1));
    jfeed(op, node, 1, 12, 0, "r12"); // p_R = 12: l8 (8 + 3 < 12) goes, matched
    CHECK_EQ(op.entries(0), size_t(1));
    CHECK_EQ(op.entries(1), size_t(2)); // p_L unknown: no right purged
    hb(op, node, 13, 0);                // p_L = 13: r10 (10 + 2 < 13) goes
    CHECK_EQ(op.entries(1), size_t(1));
    // hl = min(p_L 13, p_R - band_hi 9, oldest left 12) = 9;
    // hr = min(p_R 12, p_L - band_lo 11, p_L 13, oldest left 12) = 11
    CHECK((join_bounds(log) == std::vector<bound_pair>{{9, 11}}));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    const std::vector<row_pair> want = {{"l12", "r10"}, {"l12", "r12"}, {"l6", ""}, {"l8", "r10"}};
    CHECK(join_rows(log) == want);
}
#endif

// Many entries of a disordered side, most purged at once: the pool is
// compacted (and freed when empty) and the join stays right.
#if IN_PART(4)
static void test_join_disordered_compaction()
{
    std::mt19937 rng(7);
    gsq_node node;
    node.params["band_lo"] = "1";
    node.params["band_hi"] = "1";
    gsq::join_op<pkt_ooo_join_functor<gsq::join_kind::full_outer, uint32_t, false, false>> op(&node);
    struct tup {
        uint32_t t, key;
        std::string name;
    };
    std::vector<tup> ls, rs;
    for (int i = 0; i < 4000; ++i) {
        ls.push_back({static_cast<uint32_t>(rng() % 4000), static_cast<uint32_t>(rng() % 300), "l" + std::to_string(i)});
        jfeed(op, node, 0, ls.back().t, ls.back().key, ls.back().name);
    }
    CHECK_EQ(op.entries(0), size_t(4000));
    hb(op, node, 3700, 1); // lefts below 3699 go (most of them); p_L unknown
    const size_t kept = op.entries(0);
    CHECK(kept > 100 && kept < 400);
    CHECK_EQ(op.entry_slots(0), kept); // compacted: fewer than 1/8 of 4000 slots held
    hb(op, node, 3500, 0);
    for (int i = 0; i < 600; ++i) {
        rs.push_back({3700 + static_cast<uint32_t>(rng() % 300), static_cast<uint32_t>(rng() % 300),
                      "r" + std::to_string(i)});
        jfeed(op, node, 1, rs.back().t, rs.back().key, rs.back().name);
    }
    for (int i = 0; i < 200; ++i) { // more lefts after the compaction, out of order
        ls.push_back({3600 + static_cast<uint32_t>(rng() % 400), static_cast<uint32_t>(rng() % 300),
                      "m" + std::to_string(i)});
        jfeed(op, node, 0, ls.back().t, ls.back().key, ls.back().name);
    }
    hb(op, node, 3900, 0);
    hb(op, node, 3800, 1);
    CHECK(op.entry_slots(0) >= op.entries(0));
    op.accept(&node, 0, GSQ_EOF, nullptr, 0);
    CHECK_EQ(op.entries(1), size_t(0)); // no more lefts: every right goes
    CHECK_EQ(op.entry_slots(1), size_t(0)); // and the pool with them
    op.accept(&node, 1, GSQ_EOF, nullptr, 0);
    CHECK_EQ(op.entry_slots(0), size_t(0));
    std::vector<row_pair> want;
    std::set<std::string> lm, rm;
    for (const tup &l : ls)
        for (const tup &r : rs)
            if (l.key == r.key && r.t + 1 >= l.t && r.t <= l.t + 1) {
                want.emplace_back(l.name, r.name);
                lm.insert(l.name);
                rm.insert(r.name);
            }
    for (const tup &l : ls)
        if (!lm.count(l.name))
            want.emplace_back(l.name, "");
    for (const tup &r : rs)
        if (!rm.count(r.name))
            want.emplace_back("", r.name);
    std::sort(want.begin(), want.end());
    CHECK(join_rows(op.functor().log) == want);
    CHECK_EQ(op.stats().late_dropped[0] + op.stats().late_dropped[1], uint64_t(0));
    CHECK_EQ(op.stats().bytes[0] + op.stats().bytes[1], size_t(0));
}
#endif

#if IN_PART(1)
static void test_sat_arith()
{
    CHECK_EQ(gsq::sat_add<uint32_t>(4000000000u, 400000000u), UINT32_MAX);
    CHECK_EQ(gsq::sat_sub<uint32_t>(3, 5), uint32_t(0));
    CHECK_EQ(gsq::sat_sub<uint16_t>(3, 5), uint16_t(0));
    CHECK_EQ(gsq::sat_add<int32_t>(-5, -10), int32_t(-15));
    CHECK_EQ(gsq::sat_add<int32_t>(INT32_MIN + 1, -10), INT32_MIN);
    CHECK_EQ(gsq::sat_sub<int32_t>(INT32_MAX - 1, -10), INT32_MAX);
    CHECK_EQ(gsq::sat_sub<int64_t>(INT64_MIN + 3, 10), INT64_MIN);
    CHECK_EQ(gsq::sat_add<int64_t>(7, 3), int64_t(10));
    CHECK_EQ(gsq::sat_sub<double>(1.5, 2.0), -0.5);
}
#endif

// gsq::regex: compiled once, owned, moved by hand-over, errors reported as
// the node's failure.
[[maybe_unused]] static bool regex_matches(const gsq::regex &re, const char *s)
{
    return gsq_fn_str_regex_match(re.get(), gsq_str_lit(s, (uint32_t)std::strlen(s))) != 0;
}

#if IN_PART(1)
static void test_regex()
{
    gsq_node node;
    gsq::regex empty;
    CHECK(!empty && empty.get() == nullptr);

    gsq::regex a;
    static const char pat[] = "ab+c";
    CHECK(a.compile(&node, pat, sizeof pat - 1));
    CHECK(static_cast<bool>(a) && !node.failed);
    CHECK(regex_matches(a, "xxabbbc") && !regex_matches(a, "ac"));
    gsq_str got = gsq_fn_str_extract_regex(a.get(), gsq_str_lit("xxabbcyy", 8u));
    CHECK_EQ(std::string(got.p, got.len), std::string("abbc"));

    gsq_regex *handle = a.get();
    gsq::regex b(std::move(a)); // the same compiled expression, a left empty
    CHECK(b.get() == handle && !a && regex_matches(b, "abc"));
    gsq::regex c;
    CHECK(c.compile(&node, "x", 1));
    c = std::move(b); // c's own expression is released first
    CHECK(c.get() == handle && !b && regex_matches(c, "abc") && !regex_matches(c, "x"));
    gsq::regex &same = c;
    c = std::move(same); // self-move keeps it
    CHECK(c.get() == handle);
    a = std::move(c); // moved-from objects are assignable
    CHECK(a.get() == handle && !c);

    // a pattern with a NUL: the length, not the NUL, ends it
    gsq::regex n;
    CHECK(n.compile(&node, "a\0b", 1) && regex_matches(n, "a"));
    CHECK(!node.failed);
}
#endif

#if IN_PART(1)
static void test_regex_error()
{
    gsq_node node;
    gsq::regex bad;
    static const char pat[] = "a(b";
    CHECK(!bad.compile(&node, pat, sizeof pat - 1));
    CHECK(!bad && node.failed);
    CHECK(node.failure.rfind("bad regular expression a(b: ", 0) == 0);
    CHECK(node.failure.size() > std::strlen("bad regular expression a(b: "));
    // a failed compile empties a regex that held one
    gsq_node ok;
    gsq::regex r;
    CHECK(r.compile(&ok, "a", 1) && r);
    CHECK(!r.compile(&ok, "(", 1) && !r && ok.failed);
}
#endif

#if IN_PART(5) || IN_PART(6) || IN_PART(7) || IN_PART(8)
#include "test_hfta_order.hpp"
#endif

// A group-by whose key copies without allocating: prefetch hints apply.
struct pod_flows_functor {
    struct key_type {
        uint32_t tb = 0;
        uint32_t src = 0;
    };
    struct state_type {
        uint64_t cnt = 0;
    };
    using epoch_type = uint32_t;
    struct key_hash {
        size_t operator()(const key_type &k) const { return k.tb * 31u + k.src; }
    };
    struct key_eq {
        bool operator()(const key_type &a, const key_type &b) const { return a.tb == b.tb && a.src == b.src; }
    };
    explicit pod_flows_functor(gsq_node *) {}
    bool extract(const void *tup, uint32_t len, key_type &key) const
    {
        tup_pkt t;
        if (len < sizeof t)
            return false;
        std::memcpy(&t, tup, sizeof t);
        key.tb = t.time / 60;
        key.src = t.src;
        return true;
    }
    epoch_type epoch_of(const key_type &key) const { return key.tb; }
    int epoch_compare(const epoch_type &current, const epoch_type &e) const
    {
        return e > current ? 1 : (e < current ? -1 : 0);
    }
    void init(state_type &s, const void *, uint32_t) { s.cnt = 1; }
    void update(state_type &s, const void *, uint32_t) { s.cnt += 1; }
    void emit(gsq_node *node, const key_type &k, const state_type &s)
    {
        tup_flow out{};
        out.tb = k.tb;
        out.src = k.src;
        out.cnt = s.cnt;
        gsq_emit(node, GSQ_DATA, &out, sizeof out, nullptr, 0);
    }
};

// gsq_hfta_def.prefetch: a hint that changes nothing -- the same output and
// counters with hints given ahead of every tuple (and for tuples never sent);
// operators without hints leave it NULL.
#if IN_PART(1)
static void test_groupby_prefetch_hint()
{
    constexpr static int inputs[] = {0};
    const gsq_hfta_def def = gsq::hfta_def_of<gsq::groupby_op<pod_flows_functor>>("pf", inputs, 1);
    CHECK(def.prefetch != nullptr);
    constexpr static int inputs3[] = {0, 1, 2};
    CHECK(gsq::hfta_def_of<gsq::merge_op<pkt_merge_functor<3>>>("m3", inputs3, 4).prefetch == nullptr);

    std::vector<std::vector<unsigned char>> tuples;
    uint32_t x = 12345;
    for (uint32_t i = 0; i < 5000; ++i) {
        x = x * 1103515245u + 12345u;
        tuples.push_back(pkt(i / 20, (x >> 8) % 3000, "", 1));
    }
    gsq_node plain, hinted;
    void *a = def.create(&plain);
    void *b = def.create(&hinted);
    for (size_t i = 0; i < tuples.size(); ++i) {
        const auto &t = tuples[i];
        def.accept(a, &plain, 0, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
        if (i + 8 < tuples.size())
            def.prefetch(b, 0, tuples[i + 8].data(), static_cast<uint32_t>(tuples[i + 8].size()));
        auto never = pkt(i / 20 + 7, 99999, "", 1); // a later epoch's group, never sent
        def.prefetch(b, 0, never.data(), static_cast<uint32_t>(never.size()));
        def.prefetch(b, 0, t.data(), 3); // too short: ignored
        def.accept(b, &hinted, 0, GSQ_DATA, t.data(), static_cast<uint32_t>(t.size()));
    }
    def.accept(a, &plain, 0, GSQ_EOF, nullptr, 0);
    def.accept(b, &hinted, 0, GSQ_EOF, nullptr, 0);
    CHECK(plain.out.size() > 3000);
    CHECK_EQ(plain.out.size(), hinted.out.size());
    bool same = true;
    for (size_t i = 0; i < plain.out.size(); ++i)
        same = same && plain.out[i].kind == hinted.out[i].kind && plain.out[i].fixed == hinted.out[i].fixed;
    CHECK(same);
    CHECK(std::memcmp(plain.counters, hinted.counters, sizeof plain.counters) == 0);
    CHECK(std::memcmp(plain.peaks, hinted.peaks, sizeof plain.peaks) == 0);
    def.destroy(a);
    def.destroy(b);
}
#endif

// pod_flows_functor that filters out one source in five (extract: false).
struct pod_sampled_functor : pod_flows_functor {
    using pod_flows_functor::pod_flows_functor;
    bool extract(const void *tup, uint32_t len, key_type &key) const
    {
        return pod_flows_functor::extract(tup, len, key) && key.src % 5 != 0;
    }
};

// gsq_hfta_def.accept_run: runs of data tuples give what accept() gives for
// each tuple -- output, counters, peaks -- for runs of every length around
// the look-ahead, with tuples filtered out, late ones dropped and epochs
// opening and closing (the slow flush stepping) inside a run; a key that
// does not copy trivially (a string) goes through accept() one by one.
#if IN_PART(1)
template <class Op>
static void check_accept_run(const char *what)
{
    constexpr static int inputs[] = {0};
    const gsq_hfta_def def = gsq::hfta_def_of<Op>("run", inputs, 1);
    CHECK(def.accept_run != nullptr);
    std::vector<unsigned char> flat;
    uint32_t len = 0, n = 0, x = 777;
    for (uint32_t i = 0; i < 6000; ++i, ++n) {
        x = x * 1103515245u + 12345u;
        // every 37th tuple two minutes behind: of a closed epoch, late
        const uint32_t time = 600 + i / 20 - (i % 37 == 0 ? 120 : 0);
        const auto t = pkt(time, (x >> 8) % 3000, "ab", 1);
        len = static_cast<uint32_t>(t.size());
        flat.insert(flat.end(), t.begin(), t.end());
    }
    gsq_node single, runs;
    void *a = def.create(&single);
    void *b = def.create(&runs);
    for (uint32_t i = 0; i < n; ++i)
        def.accept(a, &single, 0, GSQ_DATA, flat.data() + size_t{i} * len, len);
    const uint32_t lengths[] = {1, 3, 15, 16, 17, 33, 250};
    for (uint32_t i = 0, k = 0; i < n; ++k) {
        const uint32_t m = std::min(lengths[k % 7], n - i);
        def.accept_run(b, &runs, 0, flat.data() + size_t{i} * len, len, len, m);
        i += m;
    }
    def.accept(a, &single, 0, GSQ_EOF, nullptr, 0);
    def.accept(b, &runs, 0, GSQ_EOF, nullptr, 0);
    CHECK(single.out.size() > 1000);
    CHECK(single.counters[GSQ_CNT_LATE_DROPPED] > 100);
    CHECK_EQ(single.out.size(), runs.out.size());
    bool same = true;
    for (size_t i = 0; i < single.out.size() && i < runs.out.size(); ++i)
        same = same && single.out[i].kind == runs.out[i].kind && single.out[i].fixed == runs.out[i].fixed;
    if (!same)
        std::fprintf(stderr, "accept_run differs from accept (%s)\n", what);
    CHECK(same);
    CHECK(std::memcmp(single.counters, runs.counters, sizeof single.counters) == 0);
    CHECK(std::memcmp(single.peaks, runs.peaks, sizeof single.peaks) == 0);
    def.destroy(a);
    def.destroy(b);
}

static void test_groupby_accept_run()
{
    check_accept_run<gsq::groupby_op<pod_flows_functor>>("pod key");
    check_accept_run<gsq::groupby_op<pod_sampled_functor>>("pod key, filtered");
    check_accept_run<gsq::groupby_op<pod_flows_functor, gsq::flush_policy::immediate>>("immediate flush");
    check_accept_run<flows_op>("string key");
    constexpr static int inputs3[] = {0, 1, 2};
    CHECK(gsq::hfta_def_of<gsq::merge_op<pkt_merge_functor<3>>>("m3", inputs3, 4).accept_run == nullptr);
}
#endif

#if IN_PART(9)
#include "test_groupby_promised.hpp"
#endif

int main()
{
#if IN_PART(1)
    test_regex();
    test_regex_error();
    test_hash_many_inserts();
    test_hash_iteration();
    test_hash_bad_hash();
    test_hash_erase_random();
    test_hash_erase_if();
    test_hash_string_keys();
    test_hash_clear_release_swap();
    test_hash_moved_from();
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
    test_groupby_prefetch_hint();
    test_groupby_accept_run();
    test_sat_arith();
#endif
#if IN_PART(2)
    test_selection_heartbeat();
    test_groupby_heartbeat_closes_epoch();
    test_groupby_heartbeat_mid_flush();
    test_groupby_heartbeat_variants();
    test_groupby_heartbeat_random();
    test_groupby_disorder_epochs();
    test_groupby_disorder_strict();
    test_groupby_disorder_memory();
    test_groupby_joint_ordered();
    test_groupby_joint_any_order();
#endif
#if IN_PART(3)
    test_merge_two_interleaved();
    test_merge_stalled_input();
    test_merge_heartbeat_value();
    test_merge_slack();
    test_merge_decreasing();
    test_merge_eof_order();
    test_merge_random();
    test_merge_unordered();
#endif
#if IN_PART(4)
    test_join_kinds_with_keys();
    test_join_band();
    test_join_heartbeat_per_column();
    test_join_joint_punctuation();
    test_joint_heartbeat_input_ignored();
    test_join_heartbeat_purge_memory();
    test_join_many_to_many_and_late();
    test_join_eof();
    test_join_empty_key();
    test_join_random();
    test_join_outer_output_order();
    test_join_disordered_basic();
    test_join_disordered_one_side_band();
    test_join_disordered_compaction();
#endif
#if IN_PART(5)
    test_order_properties_groupby_merge();
#endif
#if IN_PART(6)
    test_order_properties_join();
#endif
#if IN_PART(7)
    test_order_properties_ooo_join();
#endif
#if IN_PART(8)
    test_order_properties_ooo_outer_join();
#endif
#if IN_PART(9)
    test_groupby_promised();
#endif
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
