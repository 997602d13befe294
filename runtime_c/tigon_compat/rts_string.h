/* rts_string.h -- an LFTA's string as Tigon's functions receive it: `length`
 * bytes at `data` (not NUL-terminated); `owner` is unused by gsqlc (0). */
#ifndef GSQLC_COMPAT_RTS_STRING_H
#define GSQLC_COMPAT_RTS_STRING_H
#include "gstypes.h"

struct FTA;
struct gs_string {
    gs_int32_t length;
    gs_sp_t data;
    struct FTA *owner;
};
#endif
