// merge_any.cpp -- the merges of gsq_merge.h: gsq::merge_op over a functor
// that reads its query's gsq_merge_spec (the node's params) at run time,
// instantiated for every direction and order of the merge column type
// GSQ_MERGE_TYPE (a type tag of gsq_merge.h; without it, of every type).
// Compiled once per type tag and toolchain into the cache's shared folder
// (backend/native_build.py; the generated CMake project's gsqlc_merges_*
// object libraries), the types side by side, and linked into every query
// set: a merge then costs a query set no C++ compile.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "gsq_merge.h"
#include "merge_op.hpp"

namespace {

// The column type (enum gsq_type) a type tag's operators read.
template <class T>
bool reads(int type)
{
    if constexpr (std::is_same_v<T, uint8_t>)
        return type == GSQ_T_BOOL;
    else if constexpr (std::is_same_v<T, uint16_t>)
        return type == GSQ_T_USHORT;
    else if constexpr (std::is_same_v<T, uint32_t>)
        return type == GSQ_T_UINT || type == GSQ_T_IP;
    else if constexpr (std::is_same_v<T, int32_t>)
        return type == GSQ_T_INT;
    else if constexpr (std::is_same_v<T, uint64_t>)
        return type == GSQ_T_ULLONG;
    else if constexpr (std::is_same_v<T, int64_t>)
        return type == GSQ_T_LLONG;
    else
        return type == GSQ_T_FLOAT;
}

// merge_op's functor (merge_op.hpp) over the node's gsq_merge_spec.
template <class T, bool Increasing, bool Ordered>
class spec_merge {
public:
    using time_type = T;
    static constexpr bool increasing = Increasing;
    static constexpr bool ordered = Ordered;

    explicit spec_merge(gsq_node *node)
    {
        const auto *spec = static_cast<const gsq_merge_spec *>(gsq_node_params(node));
        if (spec == nullptr || !reads<T>(spec->col_type) ||
            spec->col_offset > spec->fixed_size || spec->fixed_size - spec->col_offset < sizeof(T))
            throw std::logic_error("a merge's column does not match its operator (gsq_merge.h)");
        offset_ = spec->col_offset;
        if constexpr (std::is_floating_point_v<T>)
            slack_ = static_cast<T>(spec->slack_float);
        else
            slack_ = static_cast<T>(spec->slack_int);
        heartbeat_.assign(spec->fixed_size, 0);   // a heartbeat: the column set, the rest zero
    }

    time_type time_of(const void *tup, uint32_t len) const
    {
        (void)len;
        T t;
        std::memcpy(&t, static_cast<const unsigned char *>(tup) + offset_, sizeof t);
        return t;
    }

    time_type slack() const { return slack_; }

    void emit_heartbeat(gsq_node *node, time_type tm)
    {
        std::memcpy(heartbeat_.data() + offset_, &tm, sizeof tm);
        gsq_emit(node, GSQ_HEARTBEAT, heartbeat_.data(), static_cast<uint32_t>(heartbeat_.size()),
                 nullptr, 0u);
    }

private:
    uint32_t offset_ = 0;
    T slack_{};
    std::vector<unsigned char> heartbeat_;
};

using type_u8 = uint8_t;
using type_u16 = uint16_t;
using type_u32 = uint32_t;
using type_i32 = int32_t;
using type_u64 = uint64_t;
using type_i64 = int64_t;
using type_f64 = double;
constexpr bool direction_inc = true;
constexpr bool direction_dec = false;
constexpr bool order_ordered = true;
constexpr bool order_unordered = false;

template <class T, bool Increasing, bool Ordered>
using glue = gsq::detail::c_glue<gsq::merge_op<spec_merge<T, Increasing, Ordered>>>;

} // namespace

#define GSQ_MERGE_DEFINE(t, d, o)                                                        \
    void *GSQ_MERGE_FN(t, d, o, create)(gsq_node * node)                                 \
    {                                                                                     \
        return glue<type_##t, direction_##d, order_##o>::create(node);                   \
    }                                                                                     \
    void GSQ_MERGE_FN(t, d, o, accept)(void *op, gsq_node *node, int input, int kind,    \
                                       const void *tup, uint32_t len)                    \
    {                                                                                     \
        glue<type_##t, direction_##d, order_##o>::accept(op, node, input, kind, tup, len); \
    }                                                                                     \
    void GSQ_MERGE_FN(t, d, o, destroy)(void *op)                                         \
    {                                                                                     \
        glue<type_##t, direction_##d, order_##o>::destroy(op);                           \
    }
#ifdef GSQ_MERGE_TYPE
GSQ_MERGES_OF_TYPE(GSQ_MERGE_DEFINE, GSQ_MERGE_TYPE)
#else
GSQ_MERGES(GSQ_MERGE_DEFINE)
#endif
#undef GSQ_MERGE_DEFINE
