/*
 * gsq_funcs.h -- built-in scalar functions called by generated LFTA (C11)
 * and HFTA (C++17) code.  All static inline; strings are gsq_str views.
 *
 * Regular expressions (HFTA-only): a gsq_regex is compiled once (when the
 * operator is created) and owns a scratch buffer used to NUL-terminate
 * subjects.  Invariant: scratch is NULL or holds cap bytes; `compiled` is 1
 * exactly when `re` must be regfree'd.  A gsq_regex is not thread-safe.
 */
#ifndef GSQ_FUNCS_H
#define GSQ_FUNCS_H

#include <stdio.h>
#include <stdlib.h>
#include <regex.h>
#include "gsq_runtime.h"
#include "gsq_funcs_num.h"

#ifdef __cplusplus
extern "C" {
#endif

/* str_match_start[s, prefix]: s starts with prefix. */
static inline uint8_t gsq_fn_str_match_start(gsq_str s, gsq_str prefix)
{
    return (uint8_t)(prefix.len <= s.len &&
                     (prefix.len == 0 || memcmp(s.p, prefix.p, prefix.len) == 0));
}

/* str_exists_substr[s, needle]: needle occurs in s (empty needle: 1). */
static inline uint8_t gsq_fn_str_exists_substr(gsq_str s, gsq_str needle)
{
    uint32_t i, last;
    if (needle.len == 0)
        return 1;
    if (needle.len > s.len)
        return 0;
    last = s.len - needle.len;
    for (i = 0; i <= last; i++) {
        const void *hit = memchr(s.p + i, (unsigned char)needle.p[0], last - i + 1);
        if (!hit)
            return 0;
        i = (uint32_t)((const char *)hit - s.p);
        if (memcmp(s.p + i, needle.p, needle.len) == 0)
            return 1;
    }
    return 0;
}

/* str_match_offset[off, s, pat]: pat occurs at byte offset off of s. */
static inline uint8_t gsq_fn_str_match_offset(uint32_t off, gsq_str s, gsq_str pat)
{
    if (off > s.len || pat.len > s.len - off)
        return 0;
    return (uint8_t)(pat.len == 0 || memcmp(s.p + off, pat.p, pat.len) == 0);
}

/* str_truncate(s, n): the first min(n, len) bytes of s. */
static inline gsq_str gsq_fn_str_truncate(gsq_str s, uint32_t n)
{
    if (n < s.len)
        s.len = n;
    return s;
}

static inline uint32_t gsq_fn_str_length(gsq_str s)
{
    return s.len;
}

/* Where the digits of a decimal number in s start: after leading blanks
 * and an optional sign (*neg is 1 for '-'). */
static inline uint32_t gsq_fn__number_start(gsq_str s, int *neg)
{
    uint32_t i = 0;
    while (i < s.len && (s.p[i] == ' ' || s.p[i] == '\t' || s.p[i] == '\n' ||
                         s.p[i] == '\r' || s.p[i] == '\f' || s.p[i] == '\v'))
        i++;
    *neg = 0;
    if (i < s.len && (s.p[i] == '+' || s.p[i] == '-')) {
        *neg = s.p[i] == '-';
        i++;
    }
    return i;
}

/* strtoi(s): like C strtoul(s, NULL, 10) truncated to 32 bits: leading
 * blanks, optional sign ('-' negates modulo 2^32), the decimal prefix. */
static inline uint32_t gsq_fn_strtoi(gsq_str s)
{
    uint32_t v = 0;
    int neg;
    uint32_t i = gsq_fn__number_start(s, &neg);
    for (; i < s.len && s.p[i] >= '0' && s.p[i] <= '9'; i++)
        v = v * 10u + (uint32_t)(s.p[i] - '0');
    return neg ? (uint32_t)(0u - v) : v;
}

/* strtoip(s): dotted quad to an IP (host order), 0 when not valid. */
static inline uint32_t gsq_fn_strtoip(gsq_str s)
{
    uint32_t v = 0;
    if (gsq_parse_ip(s.p, s.len, &v) != 0)
        return 0;
    return v;
}

/* str_compare[a, b]: the two strings are equal, byte for byte. */
static inline uint8_t gsq_fn_str_compare(gsq_str a, gsq_str b)
{
    return (uint8_t)(a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0));
}

/* byte_match_offset[off, byte, s]: the byte at offset off of s is `byte`
 * (false past the end, and for a byte value above 255). */
static inline uint8_t gsq_fn_byte_match_offset(uint32_t off, uint32_t byte, gsq_str s)
{
    return (uint8_t)(off < s.len && (uint32_t)(unsigned char)s.p[off] == byte);
}

/* str_suffix(s, n): the last min(n, len) bytes of s. */
static inline gsq_str gsq_fn_str_suffix(gsq_str s, uint32_t n)
{
    if (n < s.len) {
        s.p += s.len - n;
        s.len = n;
    }
    return s;
}

/* Where needle first occurs in s[from..len), or s.len when it does not
 * (needle not empty). */
static inline uint32_t gsq_fn__find(gsq_str s, uint32_t from, gsq_str needle)
{
    uint32_t i;
    if (needle.len > s.len)
        return s.len;
    for (i = from; i <= s.len - needle.len; i++)
        if (memcmp(s.p + i, needle.p, needle.len) == 0)
            return i;
    return s.len;
}

/* get_list_entry(list, sep, i): entry i (0 is the first) of list split at
 * each occurrence of sep; the empty string when there is no entry i.  An
 * empty sep leaves the list whole (entry 0). */
static inline gsq_str gsq_fn_get_list_entry(gsq_str list, gsq_str sep, uint32_t i)
{
    gsq_str r;
    uint32_t start = 0, end;
    if (!list.p)
        list.p = "";
    r.p = list.p;
    r.len = 0;
    for (;;) {
        end = sep.len ? gsq_fn__find(list, start, sep) : list.len;
        if (i == 0) {
            r.p = list.p + start;
            r.len = end - start;
            return r;
        }
        if (end >= list.len)
            return r;
        start = end + sep.len;
        i--;
    }
}

/* sum_uint_in_list(list, sep): the sum of the entries of list split at sep
 * (as get_list_entry), each read as strtoi reads a string, modulo 2^64. */
static inline int64_t gsq_fn_sum_uint_in_list(gsq_str list, gsq_str sep)
{
    uint64_t sum = 0;
    uint32_t start = 0, end;
    gsq_str e;
    if (!list.p)
        list.p = "";
    for (;;) {
        end = sep.len ? gsq_fn__find(list, start, sep) : list.len;
        e.p = list.p + start;
        e.len = end - start;
        sum += gsq_fn_strtoi(e);
        if (end >= list.len)
            break;
        start = end + sep.len;
    }
    return sum <= (uint64_t)INT64_MAX ? (int64_t)sum
                                      : (int64_t)(sum - (uint64_t)INT64_MAX - 1) + INT64_MIN;
}

/* string_hash(s): 32-bit FNV-1a of the bytes of s. */
static inline uint32_t gsq_fn_string_hash(gsq_str s)
{
    uint32_t h = 2166136261u, i;
    for (i = 0; i < s.len; i++)
        h = (h ^ (unsigned char)s.p[i]) * 16777619u;
    return h;
}

/* string_hash_long(s): 64-bit FNV-1a of the bytes of s. */
static inline uint64_t gsq_fn_string_hash_long(gsq_str s)
{
    uint64_t h = 14695981039346656037ull;
    uint32_t i;
    for (i = 0; i < s.len; i++)
        h = (h ^ (unsigned char)s.p[i]) * 1099511628211ull;
    return h;
}

/* to_llong(s): like C strtoll(s, NULL, 10): leading blanks, an optional
 * sign, the decimal prefix; saturates at the llong bounds; 0 without
 * digits. */
static inline int64_t gsq_fn_to_llong(gsq_str s)
{
    uint64_t v = 0, lim;
    int neg, over = 0;
    uint32_t i = gsq_fn__number_start(s, &neg);
    lim = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
    for (; i < s.len && s.p[i] >= '0' && s.p[i] <= '9'; i++) {
        uint64_t d = (uint64_t)(s.p[i] - '0');
        if (over || v > (lim - d) / 10u) {
            over = 1;
            continue;
        }
        v = v * 10u + d;
    }
    if (over)
        return neg ? INT64_MIN : INT64_MAX;
    if (neg)
        return v == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)v;
    return (int64_t)v;
}

/* ---- regular expressions (POSIX ERE) ---------------------------------- */

typedef struct gsq_regex {
    regex_t re;
    int compiled;
    char *scratch;
    size_t cap;
} gsq_regex;

/* Compile pattern[0..len) as an ERE.  0 on success; -1 with a message in
 * err (NUL-terminated, truncated to errlen) on failure.  Either way the
 * gsq_regex must later be released with gsq_regex_free. */
static inline int gsq_regex_compile(gsq_regex *re, const char *pattern, size_t len,
                                    char *err, size_t errlen)
{
    char *pat;
    int rc;
    memset(re, 0, sizeof *re);
    pat = (char *)malloc(len + 1);
    if (!pat) {
        if (err && errlen)
            snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (len)
        memcpy(pat, pattern, len);
    pat[len] = '\0';
    rc = regcomp(&re->re, pat, REG_EXTENDED);
    free(pat);
    if (rc != 0) {
        if (err && errlen)
            regerror(rc, &re->re, err, errlen);
        return -1;
    }
    re->compiled = 1;
    return 0;
}

static inline void gsq_regex_free(gsq_regex *re)
{
    if (re->compiled)
        regfree(&re->re);
    free(re->scratch);
    re->scratch = NULL;
    re->cap = 0;
    re->compiled = 0;
}

/* First match of the whole pattern in s: 0 with (*so, *eo) set, 1 when
 * there is none (or the regex is not compiled / out of memory). */
static inline int gsq_regex__exec(gsq_regex *re, gsq_str s, size_t *so, size_t *eo)
{
    regmatch_t m[1];
    int flags = 0;
    if (!re->compiled)
        return 1;
    if (re->cap < (size_t)s.len + 1) {
        size_t ncap = re->cap ? re->cap : 64;
        char *nb;
        while (ncap < (size_t)s.len + 1)
            ncap *= 2;
        nb = (char *)realloc(re->scratch, ncap);
        if (!nb)
            return 1;
        re->scratch = nb;
        re->cap = ncap;
    }
    if (s.len)
        memcpy(re->scratch, s.p, s.len);
    re->scratch[s.len] = '\0';
    m[0].rm_so = 0;
    m[0].rm_eo = (regoff_t)s.len;
#ifdef REG_STARTEND
    flags |= REG_STARTEND; /* subjects may contain NUL bytes */
#endif
    if (regexec(&re->re, re->scratch, 1, m, flags) != 0 || m[0].rm_so < 0)
        return 1;
    *so = (size_t)m[0].rm_so;
    *eo = (size_t)m[0].rm_eo;
    return 0;
}

/* str_extract_regex(s, pattern): the first match, a view into s; the empty
 * string when there is none. */
static inline gsq_str gsq_fn_str_extract_regex(gsq_regex *re, gsq_str s)
{
    size_t so, eo;
    gsq_str r;
    if (gsq_regex__exec(re, s, &so, &eo) != 0) {
        r.p = s.p ? s.p : "";
        r.len = 0;
        return r;
    }
    r.p = s.p + so;
    r.len = (uint32_t)(eo - so);
    return r;
}

/* str_regex_match[s, pattern]: the pattern matches somewhere in s. */
static inline uint8_t gsq_fn_str_regex_match(gsq_regex *re, gsq_str s)
{
    size_t so, eo;
    return (uint8_t)(gsq_regex__exec(re, s, &so, &eo) == 0);
}

/* str_partial_regex_match[s, pattern, n]: the pattern matches within the
 * first min(n, len) bytes of s. */
static inline uint8_t gsq_fn_str_partial_regex_match(gsq_regex *re, gsq_str s, uint32_t n)
{
    size_t so, eo;
    if (n < s.len)
        s.len = n;
    return (uint8_t)(gsq_regex__exec(re, s, &so, &eo) == 0);
}

#ifdef __cplusplus
}
#endif

#endif /* GSQ_FUNCS_H */
