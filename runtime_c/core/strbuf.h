/*
 * strbuf.h -- a growable byte buffer, used for messages, reports and JSON.
 *
 * Invariant: p is NULL (len == cap == 0) or holds cap bytes of which the
 * first len are content and p[len] == '\0' (so p is always a C string once
 * anything was appended).  Out of memory sets `oom` and drops the append:
 * callers never check each append, they check oom (or ignore it for text).
 */
#ifndef GSQ_STRBUF_H
#define GSQ_STRBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct gsq_buf {
    char *p;
    size_t len;
    size_t cap;
    int oom;
} gsq_buf;

void gsq_buf_free(gsq_buf *b);
void gsq_buf_reset(gsq_buf *b);              /* len = 0, keeps memory */
int gsq_buf_reserve(gsq_buf *b, size_t extra); /* 0, or -1 (oom set) */
void gsq_buf_add(gsq_buf *b, const void *p, size_t n);
void gsq_buf_addc(gsq_buf *b, char c);
void gsq_buf_adds(gsq_buf *b, const char *s);
void gsq_buf_printf(gsq_buf *b, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;
const char *gsq_buf_str(const gsq_buf *b);   /* "" when empty */

/* Append text as a JSON string literal (with the quotes): ", \ and control
 * characters escaped, invalid UTF-8 bytes as \u00XX. */
void gsq_buf_json_str(gsq_buf *b, const char *p, size_t n);
/* Append a short, printable rendering of untrusted text for a message:
 * non-printable bytes as \xNN, cut after max bytes with "...". */
void gsq_buf_quote_text(gsq_buf *b, const char *p, size_t n, size_t max);

/* Own a copy of a C string (NULL on OOM). */
char *gsq_strdup(const char *s);

#endif /* GSQ_STRBUF_H */
