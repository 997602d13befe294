/* hfta_udaf.h -- included by Tigon's HFTA aggregate sources: the types and
 * the string helpers they call (declarations come from the def file). */
#ifndef GSQLC_COMPAT_HFTA_UDAF_H
#define GSQLC_COMPAT_HFTA_UDAF_H
#include "vstring.h"
#include "host_tuple.h"
#include "gsconfig.h"
#include "gstypes.h"
#include "hfta_runtime_library.h"
#endif
