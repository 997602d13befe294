/* gsconfig.h -- Tigon's configuration header, as gsqlc compiles user
 * functions: a 64-bit host (README.md). */
#ifndef GSQLC_COMPAT_GSCONFIG_H
#define GSQLC_COMPAT_GSCONFIG_H
#ifndef GS64
#define GS64
#endif
#endif
