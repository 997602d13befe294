/*
 * source_ops.c -- what the source kinds share: finding a kind by its URI
 * scheme, the plain check that an LFTA reads the records a kind delivers,
 * and the PROTOCOL field read at a CSV position, for the kinds that match
 * their columns or fields by name (gsq_source_ops.h).
 */
#include <string.h>

#include "gsq_source_ops.h"

/* The kinds bound by URI (gsqlc_bind_source), in the order they are tried. */
static const gsq_source_ops *const uri_kinds[] = {&gsq_csv_ops, &gsq_csvtcp_ops, &gsq_gdat_ops,
                                                  &gsq_pcap_ops, &gsq_pcap_live_ops};

const gsq_source_ops *gsq_source_ops_for_uri(const char *uri, const char **path)
{
    size_t i;
    for (i = 0; i < sizeof uri_kinds / sizeof uri_kinds[0]; i++) {
        size_t n = strlen(uri_kinds[i]->scheme);
        if (strncmp(uri, uri_kinds[i]->scheme, n) == 0 && uri[n]) {
            *path = uri + n;
            return uri_kinds[i];
        }
    }
    return NULL;
}

static const char *kind_name(int kind)
{
    return kind == GSQ_SRC_CSV ? "CSV" : kind == GSQ_SRC_PCAP ? "pcap" : "?";
}

int gsq_source_check_lfta(gsq_run *r, const gsq_source *s, const gsq_lfta_def *d)
{
    if (s->ops->lfta_kind == d->source_kind)
        return 0;
    gsq_run_fail(r,
                 "LFTA %s reads PROTOCOL %s from %s records, but interface '%s' is "
                 "bound to %s",
                 d->name, d->protocol, kind_name(d->source_kind), d->iface, s->uri);
    return -1;
}

const gsq_csv_field *gsq_source_field_at(const gsq_source *s, uint32_t pos, int type,
                                         const gsq_lfta_def **lfta)
{
    const gsq_csv_field *any = NULL;
    uint32_t i, j;
    for (i = 0; i < s->n_lftas; i++) {
        const gsq_lfta_def *d = s->lftas[i]->lfta;
        for (j = 0; j < d->n_csv_fields; j++) {
            const gsq_csv_field *f = &d->csv_fields[j];
            if (f->pos != pos || !f->name)
                continue;
            if (f->type == type) {
                *lfta = d;
                return f;
            }
            if (!any) {
                any = f;
                *lfta = d;
            }
        }
    }
    return any;
}
