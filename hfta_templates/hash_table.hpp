// hash_table.hpp -- the open-addressing hash map behind the HFTA operators.
//
// Linear probing over a power-of-two number of slots, grown by doubling
// when the load would pass 0.7.  A slot is two parts in two arrays: its
// (mixed) hash in hashes_, its key and value in entries_.  A probe walks the
// dense hash array (eight slots a cache line) and touches an entry only
// where the hashes match, so finding a key -- or the free slot a new key
// takes, the common case when most groups are new -- costs about one miss
// in each array, both of which prefetch() starts loading.  Growth never
// re-hashes keys (strings are hashed once per insert).
//
// Invariants: hashes_[i] == 0 exactly when slot i is free, and entries_[i]
// holds a constructed entry exactly when it is not (a free slot's entry is
// raw memory: a map costs nothing per free slot beyond its 8 hash bytes
// being zeroed).  Every key sits in the probe run that starts at its home
// slot (hash & (capacity - 1)) with no free slot before it; erasing shifts
// later members of the run back, so there are no tombstones.  size_ counts
// the used slots and stays at or below 0.7 of the capacity.
//
// Iteration is in slot order and also available by index
// (capacity / occupied / key_at / value_at / next_occupied), so a slow flush
// can stop after one group and resume at the next slot later.  The order is a
// pure function of the inserted keys and their insertion order.
//
// Requirements: Key and Value are move-constructible and move-assignable,
// Value value-initialisable (a new key's value starts as Value{}).  A map is
// copyable (when Key and Value are) and movable; a moved-from map is empty
// and without storage, and may be used again.  Both arrays come from
// gsq_table_reserve: one of GSQ_TABLE_HUGE_BYTES or more is mapped on huge
// pages where the kernel allows (a map growing to millions of groups faults
// a page in per 2 MiB, not per 4 KiB, and misses the TLB less), and a run's
// freed large arrays are kept for the next table of their size.
#ifndef GSQ_HASH_TABLE_HPP
#define GSQ_HASH_TABLE_HPP

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "gsq_runtime.h" // gsq_table_reserve, gsq_table_free

namespace gsq {

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
    struct slot_entry {
        Key key;
        Value value;
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

    open_hash_map(const open_hash_map &other) : hash_(other.hash_), eq_(other.eq_)
    {
        if (other.cap_ == 0)
            return;
        allocate(other.cap_);
        try {
            for (size_t i = 0; i < cap_; ++i) {
                if (other.hashes_[i]) {
                    ::new (static_cast<void *>(entries_ + i)) slot_entry(other.entries_[i]);
                    hashes_[i] = other.hashes_[i];
                    ++size_;
                }
            }
        } catch (...) { // a copy threw: no destructor runs for a half-made map
            release();
            throw;
        }
    }
    open_hash_map &operator=(const open_hash_map &other)
    {
        if (this != &other) {
            open_hash_map copy(other);
            swap(copy);
        }
        return *this;
    }

    // A moved-from map is empty and usable: no slots and size 0.
    open_hash_map(open_hash_map &&other) noexcept(
        std::is_nothrow_move_constructible_v<Hash> && std::is_nothrow_move_constructible_v<Eq>)
        : hashes_(other.hashes_), entries_(other.entries_), cap_(other.cap_), size_(other.size_),
          hash_(std::move(other.hash_)), eq_(std::move(other.eq_))
    {
        other.forget();
    }
    open_hash_map &operator=(open_hash_map &&other) noexcept(
        std::is_nothrow_move_assignable_v<Hash> && std::is_nothrow_move_assignable_v<Eq>)
    {
        if (this != &other) {
            release();
            hashes_ = other.hashes_;
            entries_ = other.entries_;
            cap_ = other.cap_;
            size_ = other.size_;
            hash_ = std::move(other.hash_);
            eq_ = std::move(other.eq_);
            other.forget();
        }
        return *this;
    }
    ~open_hash_map() { release(); }

    size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    // Number of slots (0 or a power of two).
    size_t capacity() const noexcept { return cap_; }

    // Returns the value of `key`, inserting a value-initialised one first if
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

    // The hash the map files `key` under (never 0: 0 marks a free slot);
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
        const size_t i = probe(key, hash_of(key));
        return hashes_[i] ? &entries_[i].value : nullptr;
    }
    const Value *find(const Key &key) const { return const_cast<open_hash_map *>(this)->find(key); }

    // Start loading the slot where key's probe starts (reads nothing): a hint
    // given some keys ahead, so that a table larger than the cache costs
    // overlapping misses rather than one stall per key.
    void prefetch(const Key &key) const noexcept { prefetch_hash(hash_of(key)); }
    // The same for the key whose hash_of is h: its home slot's hash and entry.
    void prefetch_hash(uint64_t h) const noexcept
    {
        if (cap_ == 0)
            return;
        const size_t i = h & mask();
        __builtin_prefetch(hashes_ + i);
        __builtin_prefetch(entries_ + i, 1);
        // GCC counts a prefetch as no effect and would drop a caller that
        // only prefetches as pure; this keeps it.
        __asm__ __volatile__("" : : "r"(hashes_ + i));
    }
    bool contains(const Key &key) const { return find(key) != nullptr; }

    // Backward-shift deletion: later members of the probe run move up into
    // the hole, so no tombstones are needed.  Invalidates slot indexes.
    bool erase(const Key &key)
    {
        if (size_ == 0)
            return false;
        const size_t at = probe(key, hash_of(key));
        if (!hashes_[at])
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
        for (size_t i = 0; i < cap_ && size_ != 0;) {
            slot_entry &e = entries_[i];
            if (hashes_[i] && pred(static_cast<const Key &>(e.key), static_cast<const Value &>(e.value))) {
                on_erase(static_cast<const Key &>(e.key), e.value);
                erase_at(i); // a later member of the run may move into i: look again
                ++n;
            } else {
                ++i;
            }
        }
        return n;
    }

    // ---- index access (slot order; stable while the map is not modified) --
    bool occupied(size_t i) const noexcept { return hashes_[i] != 0; }
    const Key &key_at(size_t i) const noexcept
    {
        assert(occupied(i));
        return entries_[i].key;
    }
    Value &value_at(size_t i) noexcept
    {
        assert(occupied(i));
        return entries_[i].value;
    }
    const Value &value_at(size_t i) const noexcept
    {
        assert(occupied(i));
        return entries_[i].value;
    }
    // First occupied slot index >= i, or capacity() if there is none.
    size_t next_occupied(size_t i) const noexcept
    {
        while (i < cap_ && !hashes_[i])
            ++i;
        return i;
    }

    // Removes every entry and keeps the slots (for reuse at equal size).
    void clear() noexcept
    {
        if (size_ == 0)
            return;
        destroy_entries();
        std::memset(hashes_, 0, cap_ * sizeof *hashes_);
        size_ = 0;
    }

    // Removes every entry and frees the slots.
    void release() noexcept
    {
        if (cap_ == 0)
            return;
        destroy_entries();
        gsq_table_free(hashes_);
        gsq_table_free(entries_);
        forget();
    }

    // Re-allocates the slots at the smallest capacity that holds the current
    // entries (frees them when empty).  For maps that shrink a lot (a join's
    // index after a purge); O(capacity).
    void shrink_to_fit()
    {
        if (size_ == 0) {
            release();
            return;
        }
        size_t cap = min_capacity;
        while (over_max_load(size_, cap))
            cap *= 2;
        if (cap < cap_)
            rehash(cap);
    }

    // Makes room for n entries without growing.
    void reserve(size_t n)
    {
        if (n == 0)
            return; // an empty map stays unallocated
        size_t cap = cap_ == 0 ? min_capacity : cap_;
        while (over_max_load(n, cap))
            cap *= 2;
        if (cap != cap_)
            rehash(cap);
    }

    void swap(open_hash_map &other) noexcept
    {
        using std::swap;
        swap(hashes_, other.hashes_);
        swap(entries_, other.entries_);
        swap(cap_, other.cap_);
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
        entry operator*() const { return entry{map_->entries_[index_].key, map_->entries_[index_].value}; }
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
    iterator end() { return iterator(this, cap_); }
    const_iterator begin() const { return const_iterator(this, 0); }
    const_iterator end() const { return const_iterator(this, cap_); }

private:
    static_assert(alignof(slot_entry) <= 64, "an entry's alignment exceeds what gsq_table_reserve gives");

    static bool over_max_load(size_t n, size_t cap) noexcept { return n * 10 > cap * 7; }

    size_t mask() const noexcept { return cap_ - 1; }

    // The slot holding `key`, or the free slot where it would go.  Needs
    // slots, at least one of them free (the load bound).
    size_t probe(const Key &key, uint64_t h) const
    {
        const size_t m = mask();
        size_t i = h & m;
        while (hashes_[i] && !(hashes_[i] == h && eq_(entries_[i].key, key)))
            i = (i + 1) & m;
        return i;
    }

    template <class K>
    std::pair<Value &, bool> insert_impl(K &&key, uint64_t h)
    {
        if (cap_ == 0)
            rehash(min_capacity);
        size_t i = probe(key, h);
        if (hashes_[i])
            return {entries_[i].value, false};
        if (over_max_load(size_ + 1, cap_)) {
            rehash(cap_ * 2);
            i = probe(key, h);
        }
        ::new (static_cast<void *>(entries_ + i)) slot_entry{Key(std::forward<K>(key)), Value{}};
        hashes_[i] = h;
        ++size_;
        return {entries_[i].value, true};
    }

    void erase_at(size_t hole)
    {
        const size_t m = mask();
        for (size_t j = (hole + 1) & m; hashes_[j]; j = (j + 1) & m) {
            const size_t home = hashes_[j] & m;
            // The entry at j may move into the hole only if its home slot is
            // not cyclically inside (hole, j]; otherwise it would become
            // unreachable from home.
            const bool home_in_between =
                hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
            if (!home_in_between) {
                entries_[hole] = std::move(entries_[j]);
                hashes_[hole] = hashes_[j];
                hole = j;
            }
        }
        entries_[hole].~slot_entry(); // also frees what the key/value owned
        hashes_[hole] = 0;
        --size_;
    }

    // Slots for cap entries, all free (cap_ 0 before: no storage held).
    void allocate(size_t cap)
    {
        uint64_t *hashes = static_cast<uint64_t *>(gsq_table_reserve(cap, sizeof(uint64_t)));
        slot_entry *entries = static_cast<slot_entry *>(gsq_table_reserve(cap, sizeof(slot_entry)));
        if (!hashes || !entries) {
            gsq_table_free(hashes);
            gsq_table_free(entries);
            throw std::bad_alloc();
        }
        std::memset(hashes, 0, cap * sizeof *hashes);
        hashes_ = hashes;
        entries_ = entries;
        cap_ = cap;
        size_ = 0;
    }

    void destroy_entries() noexcept
    {
        if constexpr (!std::is_trivially_destructible_v<slot_entry>) {
            for (size_t i = 0; i < cap_; ++i)
                if (hashes_[i])
                    entries_[i].~slot_entry();
        }
    }

    // The map without its storage (which another map took, or was freed).
    void forget() noexcept
    {
        hashes_ = nullptr;
        entries_ = nullptr;
        cap_ = 0;
        size_ = 0;
    }

    // Moves every entry into new_capacity slots (a failed allocation leaves
    // the map as it was).
    void rehash(size_t new_capacity)
    {
        open_hash_map grown(0, hash_, eq_);
        grown.allocate(new_capacity);
        const size_t m = grown.mask();
        for (size_t j = 0; j < cap_; ++j) {
            if (!hashes_[j])
                continue;
            size_t i = hashes_[j] & m;
            while (grown.hashes_[i])
                i = (i + 1) & m;
            ::new (static_cast<void *>(grown.entries_ + i)) slot_entry(std::move(entries_[j]));
            grown.hashes_[i] = hashes_[j];
            ++grown.size_;
        }
        swap(grown); // grown: the old slots, destroyed and freed with it
    }

    uint64_t *hashes_ = nullptr;   // cap_ hashes; 0: the slot is free
    slot_entry *entries_ = nullptr; // cap_ entries, constructed where used
    size_t cap_ = 0;
    size_t size_ = 0;
    Hash hash_{};
    Eq eq_{};
};

} // namespace gsq

#endif // GSQ_HASH_TABLE_HPP
