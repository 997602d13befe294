/* Stream structs of the hand-written CSV query set (what the generator
 * would emit into a shared header). */
#ifndef QS_CSV_H
#define QS_CSV_H
#include "gsq_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* csv_all: every type, one column per CSV position 1..10 */
typedef struct csv_all_t {
    uint32_t systemTime;
    uint8_t b;
    uint16_t us;
    uint32_t ui;
    int32_t i;
    uint64_t ull;
    int64_t ll;
    double f;
    uint32_t ip;
    gsq_ipv6 ip6;
    gsq_strref s;
} csv_all_t;

/* csv_alt: position 3 read as a string, position 2 as ullong */
typedef struct csv_alt_t {
    gsq_strref s3;
    uint64_t u2;
} csv_alt_t;

/* csv_regex (HFTA over csv_all) */
typedef struct csv_regex_t {
    uint32_t n;
    gsq_strref m;
    uint8_t matched;
} csv_regex_t;

enum { ST_CSV_ALL = 0, ST_CSV_ALT = 1, ST_CSV_REGEX = 2 };

#ifdef __cplusplus
}
#endif
#endif
