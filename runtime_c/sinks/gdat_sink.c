/*
 * gdat_sink.c -- writing a stream as a GDAT file (gdat_sink.h; the layout
 * is sources/gdat_format.h's).
 */
#include <string.h>

#include "format.h"
#include "gdat_format.h"
#include "gdat_sink.h"

void gsq_gdat_header(gsq_buf *b, const gsq_stream_desc *d)
{
    gsq_buf schema = {0};
    uint32_t i;
    gsq_buf_printf(&schema, "FTA{\n\nSTREAM %s {\n", d->name);
    for (i = 0; i < d->n_cols; i++)
        gsq_buf_printf(&schema, "\t%s %s ;\n", gsq_gdat_type_name(d->cols[i].type),
                       d->cols[i].name);
    gsq_buf_printf(&schema, "}\n\nDEFINE{\n\tquery_name '%s';\n}\n\nPARAM{\n}\nSelect", d->name);
    for (i = 0; i < d->n_cols; i++)
        gsq_buf_printf(&schema, "%s %s", i ? "," : "", d->cols[i].name);
    gsq_buf_printf(&schema, "\nFrom %s\n}\n\n", d->name);
    gsq_buf_printf(b, "GDAT\nVERSION:%u\nSCHEMALENGTH:%zu\n", GSQ_GDAT_VERSION, schema.len + 1);
    gsq_buf_add(b, schema.p ? schema.p : "", schema.len);
    gsq_buf_addc(b, '\0');
    gsq_buf_free(&schema);
}

int gsq_gdat_row(gsq_buf *b, const gsq_stream_desc *d, const void *tup, uint32_t len)
{
    size_t fixed = 0, strings = 0, total, off;
    uint32_t i;
    uint8_t *rec, *p;
    gsq_val v;
    for (i = 0; i < d->n_cols; i++) {
        const gsq_column *c = &d->cols[i];
        fixed += gsq_gdat_type_size(c->type);
        if (c->type == GSQ_T_STRING) {
            if (gsq_read_col(tup, len, c, &v) != 0)
                return -2;
            strings += v.s.len;
        }
    }
    total = fixed + 1 + strings;
    if (total > UINT32_MAX || gsq_buf_reserve(b, 4 + total) != 0)
        return -1;
    rec = (uint8_t *)b->p + b->len;
    gsq_gdat_put_be32(rec, (uint32_t)total);
    p = rec + 4;
    off = fixed + 1; /* where the next string's bytes go */
    for (i = 0; i < d->n_cols; i++) {
        const gsq_column *c = &d->cols[i];
        if (gsq_read_col(tup, len, c, &v) != 0)
            return -2;
        switch (c->type) {
        case GSQ_T_BOOL: gsq_gdat_put_le32(p, v.u != 0); p += 4; break;
        case GSQ_T_USHORT: case GSQ_T_UINT: case GSQ_T_IP:
            gsq_gdat_put_le32(p, (uint32_t)v.u);
            p += 4;
            break;
        case GSQ_T_INT: gsq_gdat_put_le32(p, (uint32_t)v.i); p += 4; break;
        case GSQ_T_ULLONG: gsq_gdat_put_le64(p, v.u); p += 8; break;
        case GSQ_T_LLONG: gsq_gdat_put_le64(p, (uint64_t)v.i); p += 8; break;
        case GSQ_T_FLOAT: {
            uint64_t bits;
            memcpy(&bits, &v.f, sizeof bits);
            gsq_gdat_put_le64(p, bits);
            p += 8;
            break;
        }
        case GSQ_T_IPV6: memcpy(p, &v.v6, 16); p += 16; break;
        default: /* string: {length, offset, reserved 0 (Tigon's PACKED)} */
            gsq_gdat_put_le32(p, (uint32_t)v.s.len);
            gsq_gdat_put_le32(p + 4, (uint32_t)off);
            gsq_gdat_put_le32(p + 8, 0);
            if (v.s.len)
                memcpy(rec + 4 + off, v.s.p, v.s.len);
            off += v.s.len;
            p += 12;
            break;
        }
    }
    *p = 0; /* REGULAR_TUPLE */
    b->len += 4 + total;
    b->p[b->len] = '\0';
    return 0;
}
