// Hand-written HFTA (C++17) over csv_all: for each tuple, the first match of
// [0-9]+ in column s; at end of input a summary tuple ("END", the count),
// then EOF.
#include <cstddef>
#include <cstring>
#include <new>

#include "gsq_funcs.h"
#include "qs_csv.h"

namespace {

struct csv_regex_op {
    gsq_regex re;
    uint32_t n = 0;
};

void *create(gsq_node *node)
{
    csv_regex_op *op = new (std::nothrow) csv_regex_op();
    char err[128];
    if (!op) {
        gsq_node_fail(node, "out of memory");
        return nullptr;
    }
    if (gsq_regex_compile(&op->re, "[0-9]+", 6, err, sizeof err) != 0) {
        gsq_node_fail(node, "bad regex: %s", err);
        gsq_regex_free(&op->re);
        delete op;
        return nullptr;
    }
    return op;
}

void emit(gsq_node *node, uint32_t n, gsq_str m, uint8_t matched)
{
    csv_regex_t t;
    std::memset(&t, 0, sizeof t);
    t.n = n;
    t.matched = matched;
    gsq_str_field sf[1];
    sf[0].field_off = (uint32_t)offsetof(csv_regex_t, m);
    sf[0].s = m;
    gsq_emit(node, GSQ_DATA, &t, sizeof t, sf, 1);
}

void accept(void *p, gsq_node *node, int input, int kind, const void *tup, uint32_t len)
{
    csv_regex_op *op = static_cast<csv_regex_op *>(p);
    (void)input;
    (void)len;
    if (kind == GSQ_EOF) {
        emit(node, op->n, gsq_str_lit("END", 3), 0);
        gsq_emit(node, GSQ_EOF, nullptr, 0, nullptr, 0);
        return;
    }
    if (kind != GSQ_DATA)
        return;
    const csv_all_t *in = static_cast<const csv_all_t *>(tup);
    gsq_str s = gsq_tuple_str(tup, in->s);
    op->n++;
    emit(node, op->n, gsq_fn_str_extract_regex(&op->re, s), gsq_fn_str_regex_match(&op->re, s));
}

void destroy(void *p)
{
    csv_regex_op *op = static_cast<csv_regex_op *>(p);
    gsq_regex_free(&op->re);
    delete op;
}

const int inputs[] = {ST_CSV_ALL};

} // namespace

extern "C" const gsq_hfta_def hfta_csv_regex = {
    "csv_regex", 1, inputs, ST_CSV_REGEX, create, accept, destroy,
    nullptr, // no prefetch hints
    nullptr, // no params
    nullptr, // no runs of data tuples: accept() each
    GSQ_PROMISES_NONE,
    nullptr, // reads no parameter
};
