/* rts_udaf.h -- included by Tigon's LFTA aggregate sources.  gsqlc declares
 * the aggregates a query set calls itself (from the def file), so this gives
 * only the types. */
#ifndef GSQLC_COMPAT_RTS_UDAF_H
#define GSQLC_COMPAT_RTS_UDAF_H
#include "rts_external.h"
#endif
