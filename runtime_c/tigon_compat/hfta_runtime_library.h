/* hfta_runtime_library.h -- the vstring helpers Tigon's HFTA functions and
 * aggregates call, under Tigon's names (vstring.h says who owns a string). */
#ifndef GSQLC_COMPAT_HFTA_RUNTIME_LIBRARY_H
#define GSQLC_COMPAT_HFTA_RUNTIME_LIBRARY_H
#include <stdlib.h>
#include <string.h>
#include "gslog.h"
#include "gstypes.h"
#include "vstring.h"

/* A copy of C string `str`, owned by tmp (INTERNAL). */
static inline gs_retval_t Vstring_Constructor(vstring *tmp, gs_csp_t str)
{
    size_t n = strlen(str);
    char *p = (char *)malloc(n ? n : 1);
    if (!p)
        return 1;
    memcpy(p, str, n);
    tmp->length = (gs_int32_t)n;
    tmp->offset = (gs_p_t)p;
    tmp->reserved = INTERNAL;
    return 0;
}

static inline void hfta_vstr_init(vstring *str)
{
    str->length = 0;
    str->offset = 0;
    str->reserved = SHALLOW_COPY;
}

/* Frees what str owns; str is then empty. */
static inline void hfta_vstr_destroy(vstring *str)
{
    if (str->reserved == INTERNAL && str->offset)
        free((void *)str->offset);
    str->length = 0;
    str->offset = 0;
    str->reserved = SHALLOW_COPY;
}

static inline gs_retval_t hfta_vstr_length(vstring *str) { return str->length; }

/* dst (empty) becomes an owned copy of src. */
static inline void hfta_vstr_assign_with_copy(vstring *dst, vstring *src)
{
    dst->length = 0;
    dst->offset = 0;
    dst->reserved = SHALLOW_COPY;
    if (src->length > 0) {
        char *p = (char *)malloc((size_t)src->length);
        if (!p)
            return;
        memcpy(p, (const void *)src->offset, (size_t)src->length);
        dst->length = src->length;
        dst->offset = (gs_p_t)p;
        dst->reserved = INTERNAL;
    }
}

/* dst's old value freed, then an owned copy of src. */
static inline void hfta_vstr_replace(vstring *dst, vstring *src)
{
    hfta_vstr_destroy(dst);
    hfta_vstr_assign_with_copy(dst, src);
}

/* <0, 0, >0 as memcmp over the common prefix, then the shorter first. */
static inline gs_retval_t hfta_vstr_compare(const vstring *a, const vstring *b)
{
    gs_int32_t n = a->length < b->length ? a->length : b->length;
    int c = n > 0 ? memcmp((const void *)a->offset, (const void *)b->offset, (size_t)n) : 0;
    if (c != 0)
        return c;
    return a->length - b->length;
}

static inline gs_uint32_t hfta_vstr_hashfunc(const vstring *s)
{
    gs_uint32_t h = 2166136261u;   /* FNV-1a */
    const unsigned char *p = (const unsigned char *)s->offset;
    for (gs_int32_t i = 0; i < s->length; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}
#endif
