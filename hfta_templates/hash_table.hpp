// hash_table.hpp -- the open-addressing hash map behind the HFTA operators.
//
// Linear probing over a power-of-two array of slots kept in one std::vector,
// grown by doubling when the load would pass 0.7.  Each slot stores the
// (mixed) hash of its key: lookups compare hashes before calling Eq, and
// growth never re-hashes keys (strings are hashed once per insert).
//
// Iteration is in slot order and also available by index
// (capacity / occupied / key_at / value_at / next_occupied), so a slow flush
// can stop after one group and resume at the next slot later.  The order is a
// pure function of the inserted keys and their insertion order.
//
// Requirements: Key and Value are default-constructible and move-assignable
// (empty slots hold default-constructed objects; for std::string and plain
// aggregate states that costs no allocation).  A map is copyable (when Key
// and Value are) and movable; a moved-from map is empty and without storage,
// and may be used again.
#ifndef GSQ_HASH_TABLE_HPP
#define GSQ_HASH_TABLE_HPP

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "gsq_runtime.h" // gsq_table_reserve, gsq_table_free

namespace gsq {

// The allocator of a map's slot array: an array of GSQ_TABLE_HUGE_BYTES or
// more comes from gsq_table_reserve (on huge pages where the kernel allows:
// a map growing to millions of groups faults a page in per 2 MiB, not per
// 4 KiB, and misses the TLB less), a smaller one from std::allocator.
template <class T>
struct slot_allocator {
    using value_type = T;
    slot_allocator() = default;
    template <class U>
    slot_allocator(const slot_allocator<U> &) noexcept
    {
    }
    static bool large(size_t n) noexcept { return n >= GSQ_TABLE_HUGE_BYTES / sizeof(T); }
    T *allocate(size_t n)
    {
        if (!large(n))
            return std::allocator<T>().allocate(n);
        void *p = gsq_table_reserve(n, sizeof(T));
        if (!p)
            throw std::bad_alloc();
        return static_cast<T *>(p);
    }
    void deallocate(T *p, size_t n) noexcept
    {
        if (large(n))
            gsq_table_free(p);
        else
            std::allocator<T>().deallocate(p, n);
    }
    friend bool operator==(const slot_allocator &, const slot_allocator &) noexcept { return true; }
    friend bool operator!=(const slot_allocator &, const slot_allocator &) noexcept { return false; }
};

// Murmur3's 64-bit finalizer: every input bit affects every output bit, so
// identity-like user hashes (std::hash<int>, k % 8) still spread over the low
// bits that pick a slot.
constexpr uint64_t mix64(uint64_t h) noexcept
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

// Combine the hash of one more key column into a running hash (generated
// key_hash functors chain this over the group-by columns).
constexpr uint64_t hash_combine(uint64_t seed, uint64_t value) noexcept
{
    return mix64(seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)));
}

inline uint64_t hash_bytes(const void *p, size_t n) noexcept
{
    return std::hash<std::string_view>{}(std::string_view(static_cast<const char *>(p), n));
}

template <class Key, class Value, class Hash = std::hash<Key>, class Eq = std::equal_to<Key>>
class open_hash_map {
    struct slot {
        uint64_t hash = 0; // 0 marks an empty slot; stored hashes are never 0
        Key key{};
        Value value{};
    };

public:
    using key_type = Key;
    using mapped_type = Value;
    using hasher = Hash;
    using key_equal = Eq;

    static constexpr size_t min_capacity = 16;

    // A map starts without storage; the first insert allocates.
    open_hash_map() = default;
    explicit open_hash_map(size_t expected_size, const Hash &hash = Hash(), const Eq &eq = Eq())
        : hash_(hash), eq_(eq)
    {
        reserve(expected_size);
    }

    open_hash_map(const open_hash_map &) = default;
    open_hash_map &operator=(const open_hash_map &) = default;

    // A moved-from map is empty and usable: no slots and size 0 (the
    // defaulted moves would leave it with the old size and no slots, so
    // find() on it would read out of bounds).
    open_hash_map(open_hash_map &&other) noexcept(
        std::is_nothrow_move_constructible_v<Hash> && std::is_nothrow_move_constructible_v<Eq>)
        : slots_(std::move(other.slots_)), size_(other.size_), hash_(std::move(other.hash_)),
          eq_(std::move(other.eq_))
    {
        other.release();
    }
    open_hash_map &operator=(open_hash_map &&other) noexcept(
        std::is_nothrow_move_assignable_v<Hash> && std::is_nothrow_move_assignable_v<Eq>)
    {
        if (this != &other) {
            slots_ = std::move(other.slots_);
            size_ = other.size_;
            hash_ = std::move(other.hash_);
            eq_ = std::move(other.eq_);
            other.release();
        }
        return *this;
    }
    ~open_hash_map() = default;

    size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    // Number of slots (0 or a power of two).
    size_t capacity() const noexcept { return slots_.size(); }

    // Returns the value of `key`, inserting a default-constructed one first if
    // absent; `.second` is true when it was inserted.  The reference stays
    // valid until the next insert or erase.
    std::pair<Value &, bool> find_or_insert(const Key &key) { return insert_impl(key, hash_of(key)); }
    std::pair<Value &, bool> find_or_insert(Key &&key)
    {
        const uint64_t h = hash_of(key);
        return insert_impl(std::move(key), h);
    }
    // The same, h being hash_of(key) (computed ahead, e.g. for a prefetch).
    std::pair<Value &, bool> find_or_insert(const Key &key, uint64_t h) { return insert_impl(key, h); }

    // The hash the map files `key` under (never 0: 0 marks an empty slot);
    // the same in every map of this type, whatever its size.
    uint64_t hash_of(const Key &key) const
    {
        const uint64_t h = mix64(static_cast<uint64_t>(hash_(key)));
        return h ? h : 1;
    }

    Value *find(const Key &key)
    {
        if (size_ == 0)
            return nullptr;
        slot &s = slots_[probe(key, hash_of(key))];
        return s.hash ? &s.value : nullptr;
    }
    const Value *find(const Key &key) const { return const_cast<open_hash_map *>(this)->find(key); }

    // Start loading the slot where key's probe starts (reads nothing): a hint
    // given some keys ahead, so that a table larger than the cache costs
    // overlapping misses rather than one stall per key.
    void prefetch(const Key &key) const noexcept { prefetch_hash(hash_of(key)); }
    // The same for the key whose hash_of is h.
    void prefetch_hash(uint64_t h) const noexcept
    {
        if (slots_.empty())
            return;
        const slot *s = &slots_[h & mask()];
        __builtin_prefetch(s);
        // GCC counts a prefetch as no effect and would drop a caller that
        // only prefetches as pure; this keeps it.
        __asm__ __volatile__("" : : "r"(s));
    }
    bool contains(const Key &key) const { return find(key) != nullptr; }

    // Backward-shift deletion: later members of the probe run move up into
    // the hole, so no tombstones are needed.  Invalidates slot indexes.
    bool erase(const Key &key)
    {
        if (size_ == 0)
            return false;
        const size_t at = probe(key, hash_of(key));
        if (!slots_[at].hash)
            return false;
        erase_at(at);
        return true;
    }

    // Calls on_erase(key, value) for every entry where pred(key, value)
    // holds, then removes it; returns how many went.  pred must not depend on
    // how often it is asked: an entry the backward shift moves into a slot
    // already visited is asked again.
    template <class Pred, class OnErase>
    size_t erase_if(Pred &&pred, OnErase &&on_erase)
    {
        size_t n = 0;
        for (size_t i = 0; i < slots_.size() && size_ != 0;) {
            slot &s = slots_[i];
            if (s.hash && pred(static_cast<const Key &>(s.key), static_cast<const Value &>(s.value))) {
                on_erase(static_cast<const Key &>(s.key), s.value);
                erase_at(i); // a later member of the run may move into i: look again
                ++n;
            } else {
                ++i;
            }
        }
        return n;
    }

private:
    void erase_at(size_t hole)
    {
        const size_t m = mask();
        for (size_t j = (hole + 1) & m; slots_[j].hash; j = (j + 1) & m) {
            const size_t home = slots_[j].hash & m;
            // The entry at j may move into the hole only if its home slot is
            // not cyclically inside (hole, j]; otherwise it would become
            // unreachable from home.
            const bool home_in_between =
                hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
            if (!home_in_between) {
                slots_[hole] = std::move(slots_[j]);
                hole = j;
            }
        }
        slots_[hole] = slot{}; // also frees what the key/value owned
        --size_;
    }

public:

    // ---- index access (slot order; stable while the map is not modified) --
    bool occupied(size_t i) const noexcept { return slots_[i].hash != 0; }
    const Key &key_at(size_t i) const noexcept
    {
        assert(occupied(i));
        return slots_[i].key;
    }
    Value &value_at(size_t i) noexcept
    {
        assert(occupied(i));
        return slots_[i].value;
    }
    const Value &value_at(size_t i) const noexcept
    {
        assert(occupied(i));
        return slots_[i].value;
    }
    // First occupied slot index >= i, or capacity() if there is none.
    size_t next_occupied(size_t i) const noexcept
    {
        while (i < slots_.size() && !slots_[i].hash)
            ++i;
        return i;
    }

    // Removes every entry and keeps the slot array (for reuse at equal size).
    void clear()
    {
        if (size_ == 0)
            return;
        for (slot &s : slots_)
            if (s.hash)
                s = slot{};
        size_ = 0;
    }

    // Removes every entry and frees the slot array.
    void release() noexcept
    {
        std::vector<slot, slot_allocator<slot>>().swap(slots_);
        size_ = 0;
    }

    // Re-allocates the slot array at the smallest capacity that holds the
    // current entries (frees it when empty).  For maps that shrink a lot
    // (a join's index after a purge); O(capacity).
    void shrink_to_fit()
    {
        if (size_ == 0) {
            release();
            return;
        }
        size_t cap = min_capacity;
        while (over_max_load(size_, cap))
            cap *= 2;
        if (cap < slots_.size())
            rehash(cap);
    }

    // Makes room for n entries without growing.
    void reserve(size_t n)
    {
        if (n == 0)
            return; // an empty map stays unallocated
        size_t cap = slots_.empty() ? min_capacity : slots_.size();
        while (over_max_load(n, cap))
            cap *= 2;
        if (cap != slots_.size())
            rehash(cap);
    }

    void swap(open_hash_map &other) noexcept
    {
        using std::swap;
        swap(slots_, other.slots_);
        swap(size_, other.size_);
        swap(hash_, other.hash_);
        swap(eq_, other.eq_);
    }
    friend void swap(open_hash_map &a, open_hash_map &b) noexcept { a.swap(b); }

    // ---- iteration over occupied slots, in slot order ---------------------
    template <bool Const>
    class basic_iterator {
        using map_ptr = std::conditional_t<Const, const open_hash_map *, open_hash_map *>;
        using value_ref = std::conditional_t<Const, const Value &, Value &>;

    public:
        // What *it yields; works with `for (auto [key, value] : map)`.
        struct entry {
            const Key &key;
            value_ref value;
        };

        basic_iterator(map_ptr map, size_t index) : map_(map), index_(map->next_occupied(index)) {}
        entry operator*() const { return entry{map_->slots_[index_].key, map_->slots_[index_].value}; }
        basic_iterator &operator++()
        {
            index_ = map_->next_occupied(index_ + 1);
            return *this;
        }
        size_t index() const noexcept { return index_; }
        bool operator==(const basic_iterator &o) const noexcept { return index_ == o.index_; }
        bool operator!=(const basic_iterator &o) const noexcept { return index_ != o.index_; }

    private:
        map_ptr map_;
        size_t index_;
    };
    using iterator = basic_iterator<false>;
    using const_iterator = basic_iterator<true>;

    iterator begin() { return iterator(this, 0); }
    iterator end() { return iterator(this, slots_.size()); }
    const_iterator begin() const { return const_iterator(this, 0); }
    const_iterator end() const { return const_iterator(this, slots_.size()); }

private:
    static bool over_max_load(size_t n, size_t cap) noexcept { return n * 10 > cap * 7; }

    size_t mask() const noexcept { return slots_.size() - 1; }

    // The slot holding `key`, or the empty slot where it would go.  Needs a
    // non-empty slot array with at least one empty slot (the load bound).
    size_t probe(const Key &key, uint64_t h) const
    {
        const size_t m = mask();
        size_t i = h & m;
        while (slots_[i].hash && !(slots_[i].hash == h && eq_(slots_[i].key, key)))
            i = (i + 1) & m;
        return i;
    }

    template <class K>
    std::pair<Value &, bool> insert_impl(K &&key, uint64_t h)
    {
        if (slots_.empty())
            rehash(min_capacity);
        size_t i = probe(key, h);
        if (slots_[i].hash)
            return {slots_[i].value, false};
        if (over_max_load(size_ + 1, slots_.size())) {
            rehash(slots_.size() * 2);
            i = probe(key, h);
        }
        slot &s = slots_[i];
        s.key = std::forward<K>(key);
        s.hash = h;
        ++size_;
        return {s.value, true};
    }

    void rehash(size_t new_capacity)
    {
        std::vector<slot, slot_allocator<slot>> old(new_capacity);
        old.swap(slots_);
        const size_t m = mask();
        for (slot &s : old) {
            if (!s.hash)
                continue;
            size_t i = s.hash & m;
            while (slots_[i].hash)
                i = (i + 1) & m;
            slots_[i] = std::move(s);
        }
    }

    std::vector<slot, slot_allocator<slot>> slots_;
    size_t size_ = 0;
    Hash hash_{};
    Eq eq_{};
};

} // namespace gsq

#endif // GSQ_HASH_TABLE_HPP
