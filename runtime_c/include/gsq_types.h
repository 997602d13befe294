/*
 * gsq_types.h -- value types shared by the C runtime, generated LFTAs (C11)
 * and generated HFTAs (C++17).
 *
 * GSQL type   C representation
 * ---------   ----------------
 * bool        uint8_t   (0 or 1, never anything else)
 * ushort      uint16_t
 * uint        uint32_t
 * int         int32_t
 * ullong      uint64_t
 * llong       int64_t
 * float       double
 * IP          uint32_t  (host byte order: 10.0.0.1 == 0x0A000001)
 * IPV6        gsq_ipv6  (16 bytes, network byte order)
 * string      gsq_str   (a view: pointer + length, never NUL-terminated,
 *                        never owned; valid only while the record or tuple
 *                        it points into is alive)
 *
 * Serialized tuples (what flows between operators) are a fixed-layout C
 * struct followed by a tail of string bytes.  A string column in the struct
 * is a gsq_strref: offset of its bytes from the start of the tuple and
 * length.  Invariant: off + len <= tuple length.
 */
#ifndef GSQ_TYPES_H
#define GSQ_TYPES_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gsq_str {
    const char *p;
    uint32_t len;
} gsq_str;

typedef struct gsq_strref {
    uint32_t off;
    uint32_t len;
} gsq_strref;

typedef struct gsq_ipv6 {
    uint8_t b[16];
} gsq_ipv6;

/* Type codes, used by column descriptors and the CSV layout tables. */
enum gsq_type {
    GSQ_T_BOOL = 1,
    GSQ_T_USHORT,
    GSQ_T_UINT,
    GSQ_T_INT,
    GSQ_T_ULLONG,
    GSQ_T_LLONG,
    GSQ_T_FLOAT,
    GSQ_T_IP,
    GSQ_T_IPV6,
    GSQ_T_STRING
};

/* Tuple kinds carried beside every emitted tuple. */
enum gsq_tuple_kind {
    GSQ_DATA = 0,      /* an ordinary tuple */
    GSQ_HEARTBEAT = 1, /* temporal update: temporal columns set, others ignored */
    GSQ_EOF = 2,       /* end of stream: no tuple bytes (tup may be NULL, len 0) */
    /* joint punctuation (Li et al. 2008 s.7): a temporal update on two columns
     * together -- no later tuple has BOTH its left-time columns below the
     * values given AND its right-time columns below theirs; other fields
     * ignored.  Routed between operators like GSQ_HEARTBEAT, never handed to
     * sinks; an operator that does not use it ignores it. */
    GSQ_JOINT_HEARTBEAT = 3
};

static inline gsq_str gsq_tuple_str(const void *tuple, gsq_strref r)
{
    gsq_str s;
    s.p = (const char *)tuple + r.off;
    s.len = r.len;
    return s;
}

static inline gsq_str gsq_str_lit(const char *p, uint32_t len)
{
    gsq_str s;
    s.p = p;
    s.len = len;
    return s;
}

/* Three-way compare of two strings: bytewise, shorter prefix first. */
static inline int gsq_str_cmp(gsq_str a, gsq_str b)
{
    uint32_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.p, b.p, n) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return a.len < b.len ? -1 : (a.len > b.len ? 1 : 0);
}

static inline int gsq_str_eq(gsq_str a, gsq_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

static inline int gsq_ipv6_cmp(gsq_ipv6 a, gsq_ipv6 b)
{
    int c = memcmp(a.b, b.b, 16);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

static inline int gsq_ipv6_eq(gsq_ipv6 a, gsq_ipv6 b)
{
    return memcmp(a.b, b.b, 16) == 0;
}

#ifdef __cplusplus
}
#endif

#endif /* GSQ_TYPES_H */
