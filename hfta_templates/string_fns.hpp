// string_fns.hpp -- the HFTA-only built-in functions whose result is a new
// string (GS-lite's to_hex_string and int_to_string_map), and the storage it
// lives in.
//
// Storage.  A call site of such a function in an HFTA functor owns the
// storage of its result, a member of the functor: to_hex_string writes into
// its call site's gsq::str_buffer (reused, grown as needed, freed with the
// functor); int_to_string_map returns a view of a value held by its call
// site's gsq::int_string_map, read once when the functor starts and immutable
// after.  A result so lives until the same call site runs again -- past the
// expression that used it, until the tuple's output, group key or aggregate
// has copied it -- and two calls in one query never share storage.
#ifndef GSQ_STRING_FNS_HPP
#define GSQ_STRING_FNS_HPP

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

#include "gsq_runtime.h"
#include "gsq_types.h"

namespace gsq {

// the storage of one call site's new string
class str_buffer {
public:
    str_buffer() = default;
    str_buffer(const str_buffer &) = delete;
    str_buffer &operator=(const str_buffer &) = delete;
    void open() {}
    std::string &get() { return s_; }

private:
    std::string s_;
};

// an int_to_string_map file: lines `KEY,VALUE`, KEY a decimal integer (a
// sign allowed), VALUE the text after the comma up to the first blank or
// the line's end (GS-lite reads it so, with sscanf "%lld,%s"); blank lines
// are skipped, a later line for a key wins.  A missing file or any other
// line fails the node, naming the file (and the line).
class int_string_map {
public:
    int_string_map() = default;
    int_string_map(const int_string_map &) = delete;
    int_string_map &operator=(const int_string_map &) = delete;

    void open(gsq_node *node, gsq_str path)
    {
        const std::string name(path.p, path.len);
        std::FILE *f = std::fopen(name.c_str(), "r");
        if (f == nullptr) {
            gsq_node_fail(node, "int_to_string_map: cannot read the map file %s: %s",
                          name.c_str(), std::strerror(errno));
            return;
        }
        std::string line;
        unsigned long n = 0;
        int c = 0;
        while (c != EOF) {
            line.clear();
            while ((c = std::fgetc(f)) != EOF && c != '\n')
                line.push_back((char)c);
            if (c == EOF && line.empty())
                break;
            ++n;
            if (!add(line)) {
                gsq_node_fail(node, "int_to_string_map: the map file %s, line %lu: expected "
                              "KEY,VALUE (KEY an integer), got '%.60s'", name.c_str(), n,
                              line.c_str());
                break;
            }
        }
        std::fclose(f);
    }

    gsq_str lookup(int64_t key) const
    {
        auto it = map_.find(key);
        if (it == map_.end())
            return gsq_str_lit("", 0);
        return gsq_str_lit(it->second.data(), (uint32_t)it->second.size());
    }

private:
    static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

    bool add(const std::string &line)
    {
        size_t i = 0;
        while (i < line.size() && blank(line[i]))
            ++i;
        if (i == line.size())
            return true;   // a blank line
        const size_t comma = line.find(',', i);
        if (comma == std::string::npos || comma == i)
            return false;
        const std::string key_text = line.substr(i, comma - i);
        char *end = nullptr;
        errno = 0;
        const long long key = std::strtoll(key_text.c_str(), &end, 10);
        if (errno != 0 || end == key_text.c_str() || *end != '\0')
            return false;
        size_t v = comma + 1;
        while (v < line.size() && blank(line[v]))
            ++v;
        size_t w = v;
        while (w < line.size() && !blank(line[w]))
            ++w;
        map_[(int64_t)key] = line.substr(v, w - v);
        return true;
    }

    std::unordered_map<int64_t, std::string> map_;
};

} // namespace gsq

// to_hex_string(s): two lower-case hex digits a byte, into the call site's
// buffer
static inline gsq_str gsq_fn_to_hex_string(gsq::str_buffer &buf, gsq_str s)
{
    static const char digits[] = "0123456789abcdef";
    std::string &out = buf.get();
    out.resize((size_t)s.len * 2);
    const unsigned char *b = (const unsigned char *)s.p;
    for (uint32_t i = 0; i < s.len; i++) {
        out[2 * (size_t)i] = digits[b[i] >> 4];
        out[2 * (size_t)i + 1] = digits[b[i] & 0x0f];
    }
    return gsq_str_lit(out.data(), (uint32_t)out.size());
}

// int_to_string_map(x, file): the map's value for x (as a 64-bit signed
// integer, as GS-lite's), empty when the file gives none
static inline gsq_str gsq_fn_int_to_string_map(uint64_t key, const gsq::int_string_map &m)
{
    return m.lookup((int64_t)key);
}

#endif // GSQ_STRING_FNS_HPP
