/* gslog.h -- Tigon's logging call, to standard error (syslog's levels). */
#ifndef GSQLC_COMPAT_GSLOG_H
#define GSQLC_COMPAT_GSLOG_H
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

static inline void gslog(int level, const char *fmt, ...)
{
    va_list ap;
    (void)level;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}
#endif
