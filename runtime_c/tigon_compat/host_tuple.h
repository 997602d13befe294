/* host_tuple.h -- included by Tigon's HFTA sources; the types they use. */
#ifndef GSQLC_COMPAT_HOST_TUPLE_H
#define GSQLC_COMPAT_HOST_TUPLE_H
#include "gstypes.h"
#include "vstring.h"
#endif
