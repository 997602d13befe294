/* vstring.h -- an HFTA's string as Tigon's functions receive it: `length`
 * bytes at address `offset`.  `reserved` says who owns them: INTERNAL (a
 * malloc'd copy its holder frees), SHALLOW_COPY (someone else's),
 * PACKED (inside a tuple; vstring32's offset is then relative). */
#ifndef GSQLC_COMPAT_VSTRING_H
#define GSQLC_COMPAT_VSTRING_H
#include "gstypes.h"

#define INTERNAL 0
#define SHALLOW_COPY 1
#define PACKED 2

typedef struct vstring {
    gs_int32_t length;
    gs_p_t offset;
    gs_int32_t reserved;
} vstring;

typedef struct vstring32 {
    gs_int32_t length;
    gs_int32_t offset;
    gs_int32_t reserved;
} vstring32;
#endif
