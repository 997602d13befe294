// regex.hpp -- gsq::regex, an owned compiled regular expression for HFTA
// functors (the str_regex_match / str_extract_regex handles).
//
// A gsq::regex owns at most one heap-allocated gsq_regex (gsq_funcs.h):
// compile() makes it, the destructor releases it (gsq_regex_free).  It is
// not copyable; moving hands the compiled expression over (a pointer move,
// so the regex_t itself never changes address) and leaves the source empty.
// Invariant: re_ is null or points to a gsq_regex that gsq_regex_compile has
// initialised and nobody else frees.  Like gsq_regex, not thread-safe.
#ifndef GSQ_REGEX_HPP
#define GSQ_REGEX_HPP

#include <cstddef>
#include <new>
#include <utility>

#include "gsq_funcs.h"
#include "gsq_runtime.h"

namespace gsq {

class regex {
public:
    regex() = default;
    ~regex() { reset(); }

    regex(const regex &) = delete;
    regex &operator=(const regex &) = delete;

    regex(regex &&o) noexcept : re_(std::exchange(o.re_, nullptr)) {}
    regex &operator=(regex &&o) noexcept
    {
        if (this != &o) {
            reset();
            re_ = std::exchange(o.re_, nullptr);
        }
        return *this;
    }

    // Compile pattern[0..len) (POSIX ERE), replacing what was held.  On an
    // error: false, after gsq_node_fail(node, "bad regular expression
    // PATTERN: REASON"); the regex is then empty.
    bool compile(gsq_node *node, const char *pattern, std::size_t len)
    {
        char err[256];
        reset();
        gsq_regex *re = new (std::nothrow) gsq_regex();
        if (!re) {
            gsq_node_fail(node, "bad regular expression %s: %s", pattern, "out of memory");
            return false;
        }
        if (gsq_regex_compile(re, pattern, len, err, sizeof err) != 0) {
            gsq_regex_free(re);
            delete re;
            gsq_node_fail(node, "bad regular expression %s: %s", pattern, err);
            return false;
        }
        re_ = re;
        return true;
    }

    // The handle the gsq_fn_*regex* functions take; null when empty (they
    // must not be called then: a failed compile fails the node first).
    gsq_regex *get() const noexcept { return re_; }
    explicit operator bool() const noexcept { return re_ != nullptr; }

private:
    void reset() noexcept
    {
        if (re_) {
            gsq_regex_free(re_);
            delete re_;
            re_ = nullptr;
        }
    }

    gsq_regex *re_ = nullptr;
};

} // namespace gsq

#endif // GSQ_REGEX_HPP
