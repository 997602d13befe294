/*
 * parse.c -- text to value conversions (gsq_parse_* in gsq_runtime.h).
 *
 * Convention: 0 = the whole text (less surrounding blanks) is a valid value;
 * 1 = a value was still produced, Tigon-style (strtoul semantics: the valid
 * prefix, 0 when there is none, saturated on overflow; an empty text reads
 * as the zero value); -1 = nothing usable (bool, IP, IPV6 only; *out = 0).
 *
 * Inputs are (pointer, length), never NUL-terminated.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gsq_runtime.h"

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Trim blanks on both sides. */
static void trim(const char **p, size_t *n)
{
    while (*n && is_blank(**p)) {
        (*p)++;
        (*n)--;
    }
    while (*n && is_blank((*p)[*n - 1]))
        (*n)--;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/*
 * Core integer reader.  Reads [sign] digits | 0x hexdigits from the trimmed
 * text.  *mag = magnitude saturated at `limit` (overflow sets *ovf), *neg the
 * sign.  Returns 0 when every byte was consumed and there was >= 1 digit.
 */
static int read_integer(const char *p, size_t n, int allow_minus, uint64_t limit,
                        uint64_t *mag, int *neg, int *ovf)
{
    size_t i = 0;
    uint64_t v = 0;
    int digits = 0, bad = 0;
    *neg = 0;
    *ovf = 0;
    trim(&p, &n);
    if (n == 0) {
        *mag = 0;
        return 1;
    }
    if (p[0] == '+' || p[0] == '-') {
        if (p[0] == '-') {
            if (!allow_minus)
                bad = 1;
            *neg = 1;
        }
        i++;
    }
    if (i + 2 < n && p[i] == '0' && (p[i + 1] == 'x' || p[i + 1] == 'X') &&
        hexval(p[i + 2]) >= 0) {
        i += 2;
        for (; i < n && hexval(p[i]) >= 0; i++) {
            uint64_t d = (uint64_t)hexval(p[i]);
            digits = 1;
            if (v > (limit - d) / 16) {
                *ovf = 1;
                v = limit;
            } else if (!*ovf) {
                v = v * 16 + d;
            }
        }
    } else {
        for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
            uint64_t d = (uint64_t)(p[i] - '0');
            digits = 1;
            if (v > (limit - d) / 10) {
                *ovf = 1;
                v = limit;
            } else if (!*ovf) {
                v = v * 10 + d;
            }
        }
    }
    if (bad) {
        /* '-' on an unsigned type: not a valid value, reads as 0 */
        *mag = 0;
        *neg = 0;
        return 1;
    }
    *mag = v;
    return (digits && i == n && !*ovf) ? 0 : 1;
}

static int parse_unsigned(const char *p, size_t n, uint64_t limit, uint64_t *out)
{
    uint64_t mag;
    int neg, ovf;
    int rc = read_integer(p, n, 0, limit, &mag, &neg, &ovf);
    *out = mag;
    return rc;
}

static int parse_signed(const char *p, size_t n, uint64_t maxpos, int64_t *out)
{
    uint64_t mag;
    int neg, ovf, rc;
    /* the magnitude of the most negative value is maxpos + 1 */
    rc = read_integer(p, n, 1, maxpos + 1, &mag, &neg, &ovf);
    if (neg) {
        *out = mag > maxpos ? (int64_t)(-(int64_t)maxpos - 1) : -(int64_t)mag;
    } else if (mag > maxpos) {
        *out = (int64_t)maxpos;
        rc = 1;
    } else {
        *out = (int64_t)mag;
    }
    return rc;
}

int gsq_parse_ushort(const char *p, size_t n, uint16_t *out)
{
    uint64_t v;
    int rc = parse_unsigned(p, n, UINT16_MAX, &v);
    *out = (uint16_t)v;
    return rc;
}

int gsq_parse_uint(const char *p, size_t n, uint32_t *out)
{
    uint64_t v;
    int rc = parse_unsigned(p, n, UINT32_MAX, &v);
    *out = (uint32_t)v;
    return rc;
}

int gsq_parse_ullong(const char *p, size_t n, uint64_t *out)
{
    return parse_unsigned(p, n, UINT64_MAX, out);
}

int gsq_parse_int(const char *p, size_t n, int32_t *out)
{
    int64_t v;
    int rc = parse_signed(p, n, INT32_MAX, &v);
    *out = (int32_t)v;
    return rc;
}

int gsq_parse_llong(const char *p, size_t n, int64_t *out)
{
    return parse_signed(p, n, INT64_MAX, out);
}

int gsq_parse_float(const char *p, size_t n, double *out)
{
    char buf[128];
    char *end;
    size_t len;
    int rc = 0;
    trim(&p, &n);
    *out = 0.0;
    if (n == 0)
        return 1;
    len = n;
    if (len >= sizeof buf) {
        len = sizeof buf - 1;
        rc = 1;
    }
    memcpy(buf, p, len);
    buf[len] = '\0';
    /* strtod skips leading white space itself; blanks were trimmed, so
     * anything else (e.g. "\n5") is not exact. */
    if (len && !(buf[0] == '+' || buf[0] == '-' || buf[0] == '.' ||
                 (buf[0] >= '0' && buf[0] <= '9') || buf[0] == 'i' ||
                 buf[0] == 'I' || buf[0] == 'n' || buf[0] == 'N'))
        rc = 1;
    *out = strtod(buf, &end);
    if (end == buf || (size_t)(end - buf) != len)
        rc = 1;
    return rc;
}

int gsq_parse_bool(const char *p, size_t n, uint8_t *out)
{
    trim(&p, &n);
    *out = 0;
    if (n == 0)
        return 1;
    if ((n == 4 && strncasecmp(p, "true", 4) == 0) || (n == 1 && p[0] == '1')) {
        *out = 1;
        return 0;
    }
    if ((n == 5 && strncasecmp(p, "false", 5) == 0) || (n == 1 && p[0] == '0'))
        return 0;
    return -1;
}

int gsq_parse_ip(const char *p, size_t n, uint32_t *out)
{
    uint32_t v = 0;
    size_t i = 0;
    int part;
    trim(&p, &n);
    *out = 0;
    if (n == 0)
        return 1;
    for (part = 0; part < 4; part++) {
        unsigned octet = 0;
        int digits = 0;
        if (part > 0) {
            if (i >= n || p[i] != '.')
                return -1;
            i++;
        }
        while (i < n && p[i] >= '0' && p[i] <= '9' && digits < 4) {
            octet = octet * 10 + (unsigned)(p[i] - '0');
            digits++;
            i++;
        }
        if (digits == 0 || digits > 3 || octet > 255)
            return -1;
        v = (v << 8) | octet;
    }
    if (i != n)
        return -1;
    *out = v;
    return 0;
}

int gsq_parse_ipv6(const char *p, size_t n, gsq_ipv6 *out)
{
    char buf[64];
    trim(&p, &n);
    memset(out->b, 0, 16);
    if (n == 0)
        return 1;
    if (n >= sizeof buf || memchr(p, '\0', n))
        return -1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    if (inet_pton(AF_INET6, buf, out->b) != 1) {
        memset(out->b, 0, 16);
        return -1;
    }
    return 0;
}

/* Whether p[0..n) (trimmed) is one or more ASCII digits and nothing else. */
static int all_digits(const char *p, size_t n)
{
    size_t i;
    trim(&p, &n);
    if (n == 0)
        return 0;
    for (i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return 0;
    return 1;
}

int gsq_parse_ip_value(const char *p, size_t n, uint32_t *out)
{
    uint64_t v;
    if (!all_digits(p, n))
        return gsq_parse_ip(p, n, out);
    *out = 0;
    if (parse_unsigned(p, n, UINT32_MAX, &v) != 0)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int gsq_parse_ipv6_value(const char *p, size_t n, gsq_ipv6 *out)
{
    size_t i;
    if (!all_digits(p, n))
        return gsq_parse_ipv6(p, n, out);
    trim(&p, &n);
    memset(out->b, 0, 16);
    for (i = 0; i < n; i++) { /* out = out * 10 + digit, big-endian bytes */
        unsigned carry = (unsigned)(p[i] - '0');
        int k;
        for (k = 15; k >= 0; k--) {
            unsigned cur = out->b[k] * 10u + carry;
            out->b[k] = (uint8_t)(cur & 255u);
            carry = cur >> 8;
        }
        if (carry) { /* past 2^128 - 1 */
            memset(out->b, 0, 16);
            return -1;
        }
    }
    return 0;
}
