/*
 * sets.c -- interface sets at run time, and the run's nodes.
 *
 * gsqlc_add_set_member records (set, member) pairs.  gsq_build_nodes lays
 * out run->nodes (gsq_internal.h): an LFTA whose interface is a set of
 * k >= 2 members becomes k instances "<lfta>@<member>" (own state, own
 * member's source, max_skew and out_of_order) feeding one set merge named after the LFTA
 * (its definition's set_merge, the runtime's order-preserving merge on the
 * LFTA's temporal column, gsq_merge.h) whose output is the LFTA's stream; a set of one
 * member is that member under the LFTA's own name.  The plan of the query
 * set stays what the compiler made: which interfaces make up a set is a
 * binding, decided here.  A setting given for a set holds for each of its
 * members that has none of its own (expand_set_settings).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsq_run_steps.h"

GSQ_EXPORT int gsqlc_add_set_member(gsq_run *r, const char *set, const char *member)
{
    gsq_set_member *nm;
    uint32_t i;
    if (!set || !member) {
        gsq_set_error(r, "interface set and member names must not be NULL");
        return -1;
    }
    if (r->started) {
        gsq_set_error(r, "interface set member added after the run started");
        return -1;
    }
    if (!*set)
        set = GSQ_DEFAULT_IFACE;
    if (!*member)
        member = GSQ_DEFAULT_IFACE;
    for (i = 0; i < r->n_members; i++)
        if (strcmp(r->members[i].set, set) == 0 && strcmp(r->members[i].member, member) == 0) {
            gsq_set_error(r, "interface '%s' is already a member of interface set '%s'", member,
                          set);
            return -1;
        }
    if (strcmp(set, member) == 0) {
        gsq_set_error(r, "interface set '%s' cannot be a member of itself", set);
        return -1;
    }
    nm = realloc(r->members, (r->n_members + 1) * sizeof *nm);
    if (!nm) {
        gsq_set_error(r, "out of memory");
        return -1;
    }
    r->members = nm;
    nm[r->n_members].set = gsq_strdup(set);
    nm[r->n_members].member = gsq_strdup(member);
    if (!nm[r->n_members].set || !nm[r->n_members].member) {
        free(nm[r->n_members].set);
        free(nm[r->n_members].member);
        gsq_set_error(r, "out of memory");
        return -1;
    }
    r->n_members++;
    return 0;
}

/* The first member of `set` (members are appended in call order, so the
 * others follow among the later entries of run->members). */
const gsq_set_member *gsq_set_members(const gsq_run *r, const char *set, uint32_t *n)
{
    const gsq_set_member *first = NULL;
    uint32_t i;
    *n = 0;
    for (i = 0; set && i < r->n_members; i++)
        if (strcmp(r->members[i].set, set) == 0) {
            if (!first)
                first = &r->members[i];
            (*n)++;
        }
    return first;
}

/* The i-th member of `set` (i < its count). */
static const char *member_at(const gsq_run *r, const char *set, uint32_t i)
{
    uint32_t j;
    for (j = 0; j < r->n_members; j++)
        if (strcmp(r->members[j].set, set) == 0 && i-- == 0)
            return r->members[j].member;
    return NULL;
}

int gsq_iface_read(const gsq_run *r, const char *name)
{
    uint32_t i, j;
    for (i = 0; i < r->qs->n_lftas; i++) {
        const char *f = r->qs->lftas[i]->iface;
        if (!f)
            continue;
        if (strcmp(f, name) == 0)
            return 1;
        for (j = 0; j < r->n_members; j++)
            if (strcmp(r->members[j].set, f) == 0 && strcmp(r->members[j].member, name) == 0)
                return 1;
    }
    return 0;
}

static void set_skew(gsq_run *r, gsq_node *n)
{
    uint32_t k;
    for (k = 0; k < r->n_skews; k++)
        if (n->iface && strcmp(r->skews[k].iface, n->iface) == 0) {
            n->has_skew = 1;
            n->skew_usec = r->skews[k].usec;
        }
    for (k = 0; k < r->n_ooos; k++)
        if (n->iface && strcmp(r->ooos[k].iface, n->iface) == 0) {
            n->has_ooo = 1;
            n->ooo_usec = r->ooos[k].usec;
        }
    n->unit_ns = 1000000000u; /* seconds unless time_unit says otherwise */
    for (k = 0; k < r->n_times; k++)
        if (n->iface && r->times[k].unit_ns && strcmp(r->times[k].iface, n->iface) == 0)
            n->unit_ns = r->times[k].unit_ns;
}

/* ---- a set's bounds hold for each member ---------------------------------
 * A per-interface setting given for an interface set (max_skew, out_of_order,
 * latency, time_unit, arrival, recording, and skew:A:B with A or B a set)
 * holds for each of its members that has none of its own: the settings are
 * copied to the members before the nodes and sources are made, so every
 * later lookup is by member, as the command line's expansion does. */

static int copy_seconds(gsq_skew **arr, uint32_t *n, const gsq_run *r)
{
    uint32_t i, m, k, n0 = *n;
    for (i = 0; i < n0; i++) {
        const char *set = (*arr)[i].iface;
        gsq_set_members(r, set, &k);
        for (m = 0; m < k; m++) {
            const char *mem = member_at(r, set, m);
            uint32_t j;
            gsq_skew *na;
            for (j = 0; j < *n && strcmp((*arr)[j].iface, mem) != 0; j++)
                ;
            if (j < *n)
                continue; /* the member's own */
            na = realloc(*arr, (*n + 1) * sizeof *na);
            if (!na)
                return -1;
            *arr = na;
            na[*n].iface = gsq_strdup(mem);
            if (!na[*n].iface)
                return -1;
            na[*n].usec = (*arr)[i].usec;
            (*n)++;
        }
    }
    return 0;
}

static gsq_iface_time *member_times(gsq_run *r, const char *mem)
{
    uint32_t j;
    gsq_iface_time *nt;
    for (j = 0; j < r->n_times; j++)
        if (strcmp(r->times[j].iface, mem) == 0)
            return &r->times[j];
    nt = realloc(r->times, (r->n_times + 1) * sizeof *nt);
    if (!nt)
        return NULL;
    r->times = nt;
    nt = &r->times[r->n_times];
    memset(nt, 0, sizeof *nt);
    nt->iface = gsq_strdup(mem);
    if (!nt->iface)
        return NULL;
    r->n_times++;
    return nt;
}

static int copy_times(gsq_run *r)
{
    uint32_t i, m, k, n0 = r->n_times;
    for (i = 0; i < n0; i++) {
        gsq_set_members(r, r->times[i].iface, &k);
        for (m = 0; m < k; m++) {
            /* member_times may move r->times: index, do not hold pointers */
            gsq_iface_time *t = member_times(r, member_at(r, r->times[i].iface, m));
            const gsq_iface_time *set = &r->times[i];
            if (!t)
                return -1;
            if (!t->unit_ns)
                t->unit_ns = set->unit_ns;
            if (!t->arrival_pos && set->arrival_pos) {
                t->arrival_pos = set->arrival_pos;
                t->arrival_type = set->arrival_type;
                t->arrival_format = set->arrival_format;
                if (set->arrival_name && !(t->arrival_name = gsq_strdup(set->arrival_name)))
                    return -1;
            }
            if (!t->recording)
                t->recording = set->recording;
            if (!t->csv_header)
                t->csv_header = set->csv_header;
        }
    }
    return 0;
}

static int has_skew_decl(const gsq_run *r, const char *from, const char *to)
{
    uint32_t j;
    for (j = 0; j < r->n_skew_decls; j++)
        if (strcmp(r->skew_decls[j].from, from) == 0 && strcmp(r->skew_decls[j].to, to) == 0)
            return 1;
    return 0;
}

/* skew:A:B with A or B a set: the pair for every (member of A, member of B). */
static int copy_skew_decls(gsq_run *r)
{
    uint32_t i, a, b, ka, kb, n0 = r->n_skew_decls;
    for (i = 0; i < n0; i++) {
        gsq_set_members(r, r->skew_decls[i].from, &ka);
        gsq_set_members(r, r->skew_decls[i].to, &kb);
        if (!ka && !kb)
            continue;
        for (a = 0; a < (ka ? ka : 1); a++)
            for (b = 0; b < (kb ? kb : 1); b++) {
                const gsq_skew_decl *d = &r->skew_decls[i];
                const char *from = ka ? member_at(r, d->from, a) : d->from;
                const char *to = kb ? member_at(r, d->to, b) : d->to;
                gsq_skew_decl *nd;
                uint32_t p;
                if (strcmp(from, to) == 0 || has_skew_decl(r, from, to))
                    continue;
                nd = realloc(r->skew_decls, (r->n_skew_decls + 1) * sizeof *nd);
                if (!nd)
                    return -1;
                r->skew_decls = nd;
                d = &r->skew_decls[i];
                nd = &r->skew_decls[r->n_skew_decls];
                memset(nd, 0, sizeof *nd);
                r->n_skew_decls++; /* freed whole by teardown, even half made */
                nd->from = gsq_strdup(from);
                nd->to = gsq_strdup(to);
                if (!nd->from || !nd->to)
                    return -1;
                for (p = 0; p < d->set.n; p++)
                    if (gsq_bound_set_add(&nd->set, d->set.p[p].t_usec, d->set.p[p].delta_usec) != 0)
                        return -1;
            }
    }
    return 0;
}

static int expand_set_settings(gsq_run *r)
{
    if (!r->n_members)
        return 0;
    return copy_seconds(&r->skews, &r->n_skews, r) != 0 ||
                   copy_seconds(&r->ooos, &r->n_ooos, r) != 0 ||
                   copy_seconds(&r->latencies, &r->n_latencies, r) != 0 || copy_times(r) != 0 ||
                   copy_skew_decls(r) != 0
               ? -1
               : 0;
}

static char *instance_name(const char *lfta, const char *member)
{
    size_t len = strlen(lfta) + strlen(member) + 2;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, "%s@%s", lfta, member);
    return s;
}

static int fail_oom(gsq_run *r)
{
    gsq_run_fail(r, "out of memory");
    return -1;
}

int gsq_build_nodes(gsq_run *r)
{
    const gsq_queryset_def *qs = r->qs;
    uint32_t i, m, n_inst = 0, n_merges = 0, at, mat;

    if (expand_set_settings(r) != 0)
        return fail_oom(r);

    for (i = 0; i < qs->n_lftas; i++) {
        const gsq_lfta_def *d = qs->lftas[i];
        uint32_t k;
        gsq_set_members(r, d->iface, &k);
        if (k >= 2 && !d->set_merge) {
            gsq_run_fail(r,
                         "query %s reads the interface set [%s], whose members' outputs are "
                         "merged in temporal order, but its LFTA outputs no temporal column to "
                         "merge on",
                         d->name, d->iface);
            return -1;
        }
        n_inst += k ? k : 1;
        n_merges += k >= 2;
    }
    r->n_lfta_nodes = n_inst;
    r->hfta_base = n_inst + n_merges;
    r->n_nodes = r->hfta_base + qs->n_hftas;
    r->nodes = calloc(r->n_nodes ? r->n_nodes : 1, sizeof *r->nodes);
    if (!r->nodes)
        return fail_oom(r);
    at = 0;
    mat = n_inst;
    for (i = 0; i < qs->n_lftas; i++) {
        const gsq_lfta_def *d = qs->lftas[i];
        gsq_node *merge = NULL;
        uint32_t k;
        gsq_set_members(r, d->iface, &k);
        if (k >= 2) {
            merge = &r->nodes[mat++];
            merge->run = r;
            merge->hfta = d->set_merge;
            merge->name = d->name;
            merge->def_index = i;
            merge->n_inputs = (int)k;
            merge->out_stream = d->out_stream;
        }
        for (m = 0; m < (k ? k : 1); m++) {
            gsq_node *n = &r->nodes[at++];
            n->run = r;
            n->lfta = d;
            n->def_index = i;
            n->name = d->name;
            n->iface = k ? member_at(r, d->iface, m) : d->iface;
            n->out_stream = d->out_stream;
            gsq_tq_init(&n->queue);
            if (merge) {
                n->own_name = instance_name(d->name, n->iface);
                if (!n->own_name)
                    return fail_oom(r);
                n->name = n->own_name;
                n->out_name = n->own_name;
                n->merge = merge;
                n->merge_input = (int)m;
            }
            set_skew(r, n);
        }
    }
    for (i = 0; i < qs->n_hftas; i++) {
        gsq_node *n = &r->nodes[r->hfta_base + i];
        n->run = r;
        n->hfta = qs->hftas[i];
        n->def_index = i;
        n->name = n->hfta->name;
        n->n_inputs = n->hfta->n_inputs;
        n->out_stream = n->hfta->out_stream;
    }
    return 0;
}

void gsq_free_nodes(gsq_run *r)
{
    uint32_t i;
    for (i = 0; r->nodes && i < r->n_nodes; i++) {
        free(r->nodes[i].own_name);
        free(r->nodes[i].xdp_why_not);
    }
    free(r->nodes);
    r->nodes = NULL;
    for (i = 0; i < r->n_members; i++) {
        free(r->members[i].set);
        free(r->members[i].member);
    }
    free(r->members);
    r->members = NULL;
    r->n_members = 0;
}

int gsq_node_n_inputs(gsq_node *node)
{
    return node->hfta ? node->n_inputs : 0;
}

const void *gsq_node_params(gsq_node *node)
{
    return node->hfta ? node->hfta->params : NULL;
}
