/*
 * strbuf.c -- growable byte buffer (see strbuf.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

void gsq_buf_free(gsq_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

void gsq_buf_reset(gsq_buf *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
}

int gsq_buf_reserve(gsq_buf *b, size_t extra)
{
    size_t need, ncap;
    char *np;
    if (b->oom)
        return -1;
    need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    ncap = b->cap ? b->cap : 64;
    while (ncap < need)
        ncap *= 2;
    np = realloc(b->p, ncap);
    if (!np) {
        b->oom = 1;
        return -1;
    }
    b->p = np;
    b->cap = ncap;
    return 0;
}

void gsq_buf_add(gsq_buf *b, const void *p, size_t n)
{
    if (gsq_buf_reserve(b, n) != 0)
        return;
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void gsq_buf_addc(gsq_buf *b, char c)
{
    gsq_buf_add(b, &c, 1);
}

void gsq_buf_adds(gsq_buf *b, const char *s)
{
    gsq_buf_add(b, s, strlen(s));
}

void gsq_buf_printf(gsq_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;
    char small[256];
    va_start(ap, fmt);
    n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        gsq_buf_add(b, small, (size_t)n);
        return;
    }
    if (gsq_buf_reserve(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

const char *gsq_buf_str(const gsq_buf *b)
{
    return b->p ? b->p : "";
}

/* Length of the valid UTF-8 sequence at p[0..n), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t len, i;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

void gsq_buf_json_str(gsq_buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0;
    gsq_buf_addc(b, '"');
    while (i < n) {
        unsigned c = p[i];
        size_t k;
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            i++;
            run++;
            continue;
        }
        if (c >= 0x80 && (k = utf8_seq(p + i, n - i)) > 0) {
            i += k;
            run += k;
            continue;
        }
        gsq_buf_add(b, p + i - run, run);
        run = 0;
        if (c == '"')
            gsq_buf_add(b, "\\\"", 2);
        else if (c == '\\')
            gsq_buf_add(b, "\\\\", 2);
        else
            gsq_buf_printf(b, "\\u%04x", c);
        i++;
    }
    gsq_buf_add(b, p + i - run, run);
    gsq_buf_addc(b, '"');
}

void gsq_buf_quote_text(gsq_buf *b, const char *s, size_t n, size_t max)
{
    size_t i, lim = n > max ? max : n;
    for (i = 0; i < lim; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7f || c == '\\')
            gsq_buf_printf(b, "\\x%02x", c);
        else
            gsq_buf_addc(b, (char)c);
    }
    if (n > lim)
        gsq_buf_adds(b, "...");
}

char *gsq_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}
