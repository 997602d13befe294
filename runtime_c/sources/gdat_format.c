/*
 * gdat_format.c -- parsing a GDAT file's header and the STREAM declaration
 * of its schema text (gdat_format.h has the layout).
 *
 * The schema text is Tigon's FTA{ ... } block; only its first STREAM (or
 * TABLE/PROTOCOL) declaration is read: "STREAM name [( ... )] { TYPE name
 * [accessor] [( modifiers )]; ... }".  Comments (// and -- to the end of
 * the line) are skipped; the DEFINE, PARAM and query parts are not read.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gdat_format.h"
#include "gsq_types.h"

static void say(char *err, size_t errsz, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsz, fmt, ap);
    va_end(ap);
}

const char *gsq_gdat_type_name(int type)
{
    switch (type) {
    case GSQ_T_BOOL: return "BOOL";
    case GSQ_T_USHORT: return "USHORT";
    case GSQ_T_UINT: return "UINT";
    case GSQ_T_INT: return "INT";
    case GSQ_T_ULLONG: return "ULLONG";
    case GSQ_T_LLONG: return "LLONG";
    case GSQ_T_FLOAT: return "FLOAT";
    case GSQ_T_IP: return "IP";
    case GSQ_T_IPV6: return "IPV6";
    case GSQ_T_STRING: return "V_STR";
    case GSQ_GDAT_T_TIMEVAL: return "TIMEVAL";
    case GSQ_GDAT_T_FSTRING: return "FSTRING";
    default: return "?";
    }
}

uint32_t gsq_gdat_type_size(int type)
{
    switch (type) {
    case GSQ_T_ULLONG: case GSQ_T_LLONG: case GSQ_T_FLOAT: return 8;
    case GSQ_T_IPV6: case GSQ_GDAT_T_TIMEVAL: return 16;
    case GSQ_T_STRING: return 12;
    default: return 4;
    }
}

/* The type of a schema type name (Tigon's spellings, any case); for
 * FSTRING<k>, *size = k.  -1: unknown. */
static int type_of(const char *t, uint32_t *size)
{
    static const struct { const char *name; int type; } names[] = {
        {"bool", GSQ_T_BOOL}, {"ushort", GSQ_T_USHORT}, {"uint", GSQ_T_UINT},
        {"int", GSQ_T_INT}, {"ullong", GSQ_T_ULLONG}, {"llong", GSQ_T_LLONG},
        {"float", GSQ_T_FLOAT}, {"string", GSQ_T_STRING}, {"v_str", GSQ_T_STRING},
        {"ip", GSQ_T_IP}, {"ipv6", GSQ_T_IPV6}, {"timeval", GSQ_GDAT_T_TIMEVAL},
    };
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(t, names[i].name) == 0) {
            *size = gsq_gdat_type_size(names[i].type);
            return names[i].type;
        }
    if (strncasecmp(t, "fstring", 7) == 0 && t[7] >= '1' && t[7] <= '9') {
        char *end;
        unsigned long k = strtoul(t + 7, &end, 10);
        if (*end == '\0' && k <= 65536) {
            *size = (uint32_t)k;
            return GSQ_GDAT_T_FSTRING;
        }
    }
    return -1;
}

/* ---- the schema text's tokens ------------------------------------------ */

typedef struct lexer {
    const char *p, *end;
    char tok[256];   /* the current token ("" at the end) */
    int too_long;
} lexer;

static int ident_char(int c)
{
    return isalnum(c) || c == '_' || c == '.' || c == '$';
}

static void next(lexer *lx)
{
    size_t n = 0;
    for (;;) {
        while (lx->p < lx->end && isspace((unsigned char)*lx->p))
            lx->p++;
        if (lx->p + 1 < lx->end && ((lx->p[0] == '/' && lx->p[1] == '/') ||
                                    (lx->p[0] == '-' && lx->p[1] == '-'))) {
            while (lx->p < lx->end && *lx->p != '\n')
                lx->p++;
            continue;
        }
        break;
    }
    if (lx->p >= lx->end) {
        lx->tok[0] = '\0';
        return;
    }
    if (*lx->p == '\'') { /* a quoted value: one token, quotes kept out */
        lx->p++;
        while (lx->p < lx->end && *lx->p != '\'') {
            if (n + 1 < sizeof lx->tok)
                lx->tok[n++] = *lx->p;
            lx->p++;
        }
        if (lx->p < lx->end)
            lx->p++;
    } else if (ident_char((unsigned char)*lx->p)) {
        while (lx->p < lx->end && ident_char((unsigned char)*lx->p)) {
            if (n + 1 < sizeof lx->tok)
                lx->tok[n++] = *lx->p;
            else
                lx->too_long = 1;
            lx->p++;
        }
    } else {
        lx->tok[n++] = *lx->p++;
    }
    lx->tok[n] = '\0';
}

static int is(const lexer *lx, const char *word)
{
    return strcasecmp(lx->tok, word) == 0;
}

static char *copy(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c)
        memcpy(c, s, n);
    return c;
}

/* Parse "name [( ... )] { fields }" after the STREAM keyword. */
static int parse_stream(lexer *lx, gsq_gdat_schema *out, char *err, size_t errsz)
{
    uint32_t cap = 0, offset = 0;
    next(lx);
    if (!lx->tok[0] || !ident_char((unsigned char)lx->tok[0])) {
        say(err, errsz, "the schema's STREAM has no name");
        return -1;
    }
    if (!(out->name = copy(lx->tok)))
        goto oom;
    next(lx);
    if (is(lx, "(")) { /* base tables */
        while (lx->tok[0] && !is(lx, ")"))
            next(lx);
        next(lx);
    }
    if (!is(lx, "{")) {
        say(err, errsz, "the schema's STREAM %s has no '{'", out->name);
        return -1;
    }
    next(lx);
    while (!is(lx, "}")) {
        char type_tok[256];
        int type, depth = 0;
        uint32_t size = 0;
        gsq_gdat_field *f;
        if (!lx->tok[0]) {
            say(err, errsz, "the schema's STREAM %s is not closed by '}'", out->name);
            return -1;
        }
        if (is(lx, ";")) { /* an empty declaration */
            next(lx);
            continue;
        }
        memcpy(type_tok, lx->tok, sizeof type_tok);
        type = type_of(type_tok, &size);
        if (type < 0) {
            say(err, errsz, "the schema's STREAM %s has a field of unknown type '%s'",
                out->name, type_tok);
            return -1;
        }
        next(lx);
        if (!lx->tok[0] || !ident_char((unsigned char)lx->tok[0])) {
            say(err, errsz, "the schema's STREAM %s has a %s field with no name", out->name,
                type_tok);
            return -1;
        }
        if (out->n_fields >= GSQ_GDAT_MAX_FIELDS || size > GSQ_GDAT_MAX_RECORD - offset) {
            say(err, errsz, "the schema's STREAM %s has too many fields", out->name);
            return -1;
        }
        if (out->n_fields == cap) {
            uint32_t nc = cap ? cap * 2 : 16;
            gsq_gdat_field *nf = realloc(out->fields, nc * sizeof *nf);
            if (!nf)
                goto oom;
            out->fields = nf;
            cap = nc;
        }
        f = &out->fields[out->n_fields];
        if (!(f->name = copy(lx->tok)))
            goto oom;
        out->n_fields++;
        f->type = type;
        f->size = size;
        f->offset = offset;
        offset += size;
        /* the accessor and modifiers, up to the ';' */
        for (next(lx); lx->tok[0] && (depth > 0 || !is(lx, ";")); next(lx)) {
            if (is(lx, "("))
                depth++;
            else if (is(lx, ")"))
                depth--;
            else if (depth == 0 && is(lx, "}"))
                break;
        }
        if (is(lx, ";"))
            next(lx);
    }
    if (lx->too_long) {
        say(err, errsz, "the schema has a name longer than 255 bytes");
        return -1;
    }
    if (out->n_fields == 0) {
        say(err, errsz, "the schema's STREAM %s has no fields", out->name);
        return -1;
    }
    out->fixed_size = offset;
    return 0;
oom:
    say(err, errsz, "out of memory");
    return -1;
}

/* "<key><digits>\n" at *p (< end): the number in *v, *p past the line. */
static int header_line(const uint8_t **p, const uint8_t *end, const char *key, unsigned long *v)
{
    size_t k = strlen(key);
    unsigned long x = 0;
    const uint8_t *q = *p;
    if ((size_t)(end - q) < k || memcmp(q, key, k) != 0)
        return -1;
    q += k;
    if (q >= end || !isdigit(*q))
        return -1;
    while (q < end && isdigit(*q)) {
        if (x > 100000000ul)
            return -1;
        x = x * 10 + (unsigned long)(*q++ - '0');
    }
    if (q >= end || *q != '\n')
        return -1;
    *p = q + 1;
    *v = x;
    return 0;
}

int gsq_gdat_parse(const uint8_t *p, size_t n, gsq_gdat_schema *out, char *err, size_t errsz)
{
    const uint8_t *q = p, *end = p + n;
    unsigned long version, len;
    lexer lx;
    memset(out, 0, sizeof *out);
    if (n < 5 || memcmp(p, "GDAT\n", 5) != 0) {
        say(err, errsz, "not a GDAT file (it does not start with \"GDAT\" and a line break)");
        return -1;
    }
    q += 5;
    if (header_line(&q, end, "VERSION:", &version) != 0) {
        say(err, errsz, "the GDAT header has no VERSION:<number> line");
        return -1;
    }
    if (version < 1 || version > 4) {
        say(err, errsz, "GDAT version %lu is not one Tigon's schema parser reads (1 to 4)",
            version);
        return -1;
    }
    if (header_line(&q, end, "SCHEMALENGTH:", &len) != 0) {
        say(err, errsz, "the GDAT header has no SCHEMALENGTH:<number> line");
        return -1;
    }
    if (len == 0 || len > GSQ_GDAT_MAX_SCHEMA) {
        say(err, errsz, "the GDAT header's schema length %lu is not from 1 to %u bytes", len,
            GSQ_GDAT_MAX_SCHEMA);
        return -1;
    }
    if ((size_t)(end - q) < len) {
        say(err, errsz, "the file ends inside its schema (%lu bytes declared, %zu present)", len,
            (size_t)(end - q));
        return -1;
    }
    out->version = (unsigned)version;
    out->data_start = (size_t)(q - p) + len;
    memset(&lx, 0, sizeof lx);
    lx.p = (const char *)q;
    lx.end = (const char *)q + len;
    { /* the text ends at its NUL */
        const char *nul = memchr(lx.p, '\0', len);
        if (nul)
            lx.end = nul;
    }
    for (next(&lx); lx.tok[0]; next(&lx))
        if (is(&lx, "STREAM") || is(&lx, "TABLE") || is(&lx, "PROTOCOL")) {
            if (parse_stream(&lx, out, err, errsz) != 0) {
                gsq_gdat_schema_free(out);
                return -1;
            }
            return 0;
        }
    say(err, errsz, "the GDAT schema declares no STREAM");
    return -1;
}

void gsq_gdat_schema_free(gsq_gdat_schema *s)
{
    uint32_t i;
    for (i = 0; i < s->n_fields; i++)
        free(s->fields[i].name);
    free(s->fields);
    free(s->name);
    s->fields = NULL;
    s->name = NULL;
    s->n_fields = 0;
}
