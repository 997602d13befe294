/* gstypes.h -- Tigon's basic type names (README.md).  gs_p_t holds an
 * address (GS64); gs_sp_t points at an aggregate's scratchpad. */
#ifndef GSQLC_COMPAT_GSTYPES_H
#define GSQLC_COMPAT_GSTYPES_H
#include "gsconfig.h"

typedef unsigned char gs_uint8_t;
typedef char gs_int8_t;
typedef unsigned short gs_uint16_t;
typedef short gs_int16_t;
typedef unsigned int gs_uint32_t;
typedef int gs_int32_t;
typedef unsigned long long gs_uint64_t;
typedef long long gs_int64_t;
typedef gs_uint32_t gs_bool_t;
typedef double gs_float_t;
typedef gs_int32_t gs_retval_t;
typedef gs_int8_t *gs_sp_t;
typedef const gs_int8_t *gs_csp_t;
typedef gs_uint64_t gs_p_t;
typedef gs_int64_t gs_param_handle_t;
typedef gs_int32_t gs_schemahandle_t;
#endif
