/* fta.h -- Tigon's FTA header: gsqlc has no struct FTA to show, only its name. */
#ifndef GSQLC_COMPAT_FTA_H
#define GSQLC_COMPAT_FTA_H
#include "gstypes.h"
#include "rts_string.h"
#endif
