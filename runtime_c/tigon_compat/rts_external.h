/* rts_external.h -- what Tigon's LFTA functions see of the run-time system:
 * the type names, struct gs_string, and gslog. */
#ifndef GSQLC_COMPAT_RTS_EXTERNAL_H
#define GSQLC_COMPAT_RTS_EXTERNAL_H
#include "gsconfig.h"
#include "gstypes.h"
#include "rts_string.h"
#include "gslog.h"
#endif
