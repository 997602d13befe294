/*
 * fuzz_arrow.c -- libFuzzer harness of the Arrow C data interface import
 * (runtime_c/sources/arrow_in.c through the Arrow source,
 * runtime_c/sources/arrow_source.c), linked with the whole runtime built
 * from its own sources (fuzz/readers/build.sh).
 *
 * The input describes an ArrowArrayStream of record batches: a struct
 * schema ("+s") whose columns have the formats gsqlc reads (b c C s S i I
 * l L f g u U z Z w:16), an LFTA reading one field per column (by the
 * column's name, sometimes in another case) as a GSQL type the column can
 * give, and up to 7 batches whose struct and child arrays have offsets,
 * lengths, null counts, validity bitmaps, values and string offsets from
 * the input.  Buffer SIZES are always what the C data interface requires
 * for the declared offset + length (each buffer an exactly-sized heap
 * block, so AddressSanitizer sees any read past it; a string column's data
 * buffer is as long as its last offset says), while their CONTENTS are
 * arbitrary: string offsets may decrease, be negative or point past the
 * data.  A child may also be shorter than the struct (which the import
 * must refuse), and rarely the struct's own offset and length are extreme
 * (a struct array without validity bitmap has no buffer they size).
 *
 * The stream is bound to a source (gsq_arrow_ops: open, read_batch or
 * read_cols, report, close) set up here as the run does; every record (or
 * chunk column) delivered is then read as the LFTAs read it: the
 * gsq_csv_get_* accessors, string bytes touched.
 *
 * Input layout: h[0] bits 0-2 columns - 1, bit 3 columnar (read_cols),
 * bit 4 batch given, bit 5 arrow_flush, bit 6 a time column, bit 7 several
 * sources (so a columnar chunk is the ring's size); h[1] bits 0-2 batch
 * size, bits 3-5 the number of batches, bits 6-7 time_unit; then 2 bytes
 * per column (format; GSQL type among those compatible, name case); then
 * the batches (see make_batch).  Bytes past the end read as 0.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow_in.h"
#include "format.h"
#include "gsq_source_ops.h"

const gsq_queryset_def gsq_queryset = {0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, NULL};

#define CHECK(c)                  \
    do {                          \
        if (!(c))                 \
            __builtin_trap();     \
    } while (0)

#define MAX_COLS 8
#define MAX_BATCHES 7

static volatile uint64_t sink;

/* ---- input ------------------------------------------------------------ */

typedef struct in {
    const uint8_t *p;
    size_t n, at;
} in;

static uint8_t byte(in *f)
{
    return f->at < f->n ? f->p[f->at++] : 0;
}

static uint64_t u64(in *f)
{
    uint64_t v = 0;
    int i;
    for (i = 0; i < 8; i++)
        v |= (uint64_t)byte(f) << (8 * i);
    return v;
}

static void bytes(in *f, uint8_t *out, size_t n)
{
    size_t k = f->n - f->at < n ? f->n - f->at : n;
    if (k)
        memcpy(out, f->p + f->at, k);
    if (n > k)
        memset(out + k, 0, n - k);
    f->at += k;
}

/* ---- every allocation of one input, freed at its end ------------------ */

static void **arena;
static size_t n_arena, cap_arena;

static void *alloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    if (n_arena == cap_arena) {
        cap_arena = cap_arena ? 2 * cap_arena : 64;
        arena = realloc(arena, cap_arena * sizeof *arena);
        if (!arena)
            abort();
    }
    arena[n_arena++] = p;
    return p;
}

static void arena_free(void)
{
    while (n_arena)
        free(arena[--n_arena]);
}

/* ---- schema and batches ------------------------------------------------ */

static const char *const formats[16] = {"b", "c", "C", "s", "S", "i", "I", "l",
                                        "L", "f", "g", "u", "U", "z", "Z", "w:16"};
static const char *const names[MAX_COLS] = {"alpha", "beta", "gamma", "delta",
                                            "eps", "zeta", "eta", "theta"};
static const char *const names_uc[MAX_COLS] = {"ALPHA", "Beta", "gAmma", "DELTA",
                                               "Eps", "ZETA", "eTa", "THETA"};
static const uint32_t batches[8] = {1, 2, 3, 5, 8, 64, 1000, 4096};
static const uint64_t units[4] = {1000000000u, 1000000u, 1000u, 1u};

static void release_schema(struct ArrowSchema *s)
{
    s->release = NULL; /* the memory is the arena's */
}

static void release_array(struct ArrowArray *a)
{
    a->release = NULL;
}

typedef struct stream_state {
    struct ArrowSchema schema;
    struct ArrowArray batch[MAX_BATCHES];
    int n_batches, next;
} stream_state;

static int st_get_schema(struct ArrowArrayStream *st, struct ArrowSchema *out)
{
    stream_state *ss = st->private_data;
    *out = ss->schema;
    return 0;
}

static int st_get_next(struct ArrowArrayStream *st, struct ArrowArray *out)
{
    stream_state *ss = st->private_data;
    if (ss->next >= ss->n_batches) {
        memset(out, 0, sizeof *out); /* end of stream */
        return 0;
    }
    *out = ss->batch[ss->next++];
    return 0;
}

static const char *st_last_error(struct ArrowArrayStream *st)
{
    (void)st;
    return "fuzz";
}

static void st_release(struct ArrowArrayStream *st)
{
    st->release = NULL;
}

/* A validity bitmap for `bits` elements (the input's bytes), or NULL. */
static const void *bitmap(in *f, int64_t bits)
{
    size_t n = (size_t)((bits + 7) / 8);
    uint8_t *b = alloc(n);
    bytes(f, b, n);
    return b;
}

/* The buffers of child column (format cat/width), elems elements
 * (its offset + length): sized as the C data interface requires. */
static void child_buffers(in *f, const gsq_arrow_col *c, struct ArrowArray *ch, int64_t elems)
{
    const void **bufs = alloc(3 * sizeof *bufs);
    bufs[0] = bufs[1] = bufs[2] = NULL;
    ch->buffers = bufs;
    if (c->cat == GSQ_AC_UTF8 || c->cat == GSQ_AC_BIN) {
        /* offsets: mostly small steps, sometimes anything; the last one
         * is the data buffer's size */
        size_t w = (size_t)c->width, k, data_len = byte(f);
        uint8_t *offs = alloc((size_t)(elems + 1) * w);
        int64_t prev = 0;
        char *data;
        for (k = 0; k < (size_t)elems; k++) {
            uint8_t b = byte(f);
            int64_t o;
            if (b == 0x80)
                o = (int64_t)u64(f);
            else
                o = (int64_t)((uint64_t)prev + (uint64_t)(int64_t)(int8_t)b); /* wraps */
            if (w == 4) {
                int32_t x = (int32_t)o;
                memcpy(offs + k * 4, &x, 4);
            } else {
                memcpy(offs + k * 8, &o, 8);
            }
            prev = o;
        }
        if (w == 4) {
            int32_t x = (int32_t)data_len;
            memcpy(offs + (size_t)elems * 4, &x, 4);
        } else {
            int64_t x = (int64_t)data_len;
            memcpy(offs + (size_t)elems * 8, &x, 8);
        }
        data = alloc(data_len);
        bytes(f, (uint8_t *)data, data_len);
        bufs[1] = offs;
        bufs[2] = data_len || byte(f) & 1 ? data : NULL;
        ch->n_buffers = 3;
    } else if (c->cat == GSQ_AC_BOOL) {
        bufs[1] = bitmap(f, elems);
        ch->n_buffers = 2;
    } else {
        size_t n = (size_t)elems * (size_t)c->width;
        uint8_t *d = alloc(n);
        bytes(f, d, n);
        bufs[1] = d;
        ch->n_buffers = 2;
    }
}

/* One record batch:
 *   b0: struct length (bits 0-5; bit 6 set: times 16), offset bit 7 (0 or 3)
 *   b1: bits 0-1 struct nulls (0: none; 1: -1 and a bitmap; 2: 1 and a
 *       bitmap; 3: 0 and a bitmap), bits 2-3 == 3: extreme offset/length
 *       (no bitmap); bits 4-7 (== 15): a wrong n_buffers
 *   per child, c0: offset (bits 0-2), extra length (bits 3-4), bit 5 one
 *       element short, bits 6-7 nulls as the struct's; then its bitmap and
 *       buffers (child_buffers). */
static void make_batch(in *f, struct ArrowArray *a, const gsq_arrow_col *cols, int nc)
{
    uint8_t b0 = byte(f), b1 = byte(f);
    int64_t len = (int64_t)(b0 & 63) * ((b0 & 64) ? 16 : 1), off = (b0 & 128) ? 3 : 0;
    const void **sb = alloc(sizeof *sb);
    struct ArrowArray **children = alloc((size_t)nc * sizeof *children);
    int i;
    memset(a, 0, sizeof *a);
    a->length = len;
    a->offset = off;
    a->n_buffers = (b1 >> 4) == 15 ? 0 : 1;
    a->buffers = sb;
    sb[0] = NULL;
    switch (b1 & 3) {
    case 1: a->null_count = -1; sb[0] = bitmap(f, off + len); break;
    case 2: a->null_count = 1; sb[0] = bitmap(f, off + len); break;
    case 3: a->null_count = 0; sb[0] = bitmap(f, off + len); break;
    default: a->null_count = 0; break;
    }
    a->n_children = nc;
    a->children = children;
    a->release = release_array;
    for (i = 0; i < nc; i++) {
        struct ArrowArray *ch = alloc(sizeof *ch);
        uint8_t c0 = byte(f);
        int64_t coff = c0 & 7, clen = off + len + ((c0 >> 3) & 3) - ((c0 >> 5) & 1);
        memset(ch, 0, sizeof *ch);
        if (clen < 0)
            clen = 0;
        ch->length = clen;
        ch->offset = coff;
        ch->release = release_array;
        child_buffers(f, &cols[i], ch, coff + clen);
        switch (c0 >> 6) {
        case 1: ch->null_count = -1; ch->buffers[0] = bitmap(f, coff + clen); break;
        case 2: ch->null_count = 1; ch->buffers[0] = bitmap(f, coff + clen); break;
        case 3: ch->null_count = 0; ch->buffers[0] = bitmap(f, coff + clen); break;
        default: ch->null_count = 0; break;
        }
        children[i] = ch;
    }
    if (((b1 >> 2) & 3) == 3 && !sb[0]) {
        /* a producer's struct offset and length, beyond any child */
        a->offset = (int64_t)(u64(f) >> 1);
        a->length = (int64_t)(u64(f) >> 1);
    }
}

/* ---- reading what the source delivers --------------------------------- */

static void touch(const void *p, size_t n)
{
    size_t k;
    for (k = 0; k < n; k++)
        sink += ((const uint8_t *)p)[k];
}

static void read_record(const gsq_record *rec, const gsq_csv_field *fl, int nf)
{
    int j;
    CHECK(rec->kind == GSQ_SRC_CSV && rec->vals && rec->layout && rec->n_fields == 0);
    for (j = 0; j < nf; j++) {
        uint32_t pos = fl[j].pos, u;
        uint16_t us;
        int32_t i;
        uint64_t ull;
        int64_t ll;
        double d;
        uint8_t b;
        gsq_ipv6 v6;
        gsq_str s;
        int rc = 0;
        switch (fl[j].type) {
        case GSQ_T_BOOL: rc = gsq_csv_get_bool(NULL, rec, pos, &b); if (!rc) CHECK(b <= 1); break;
        case GSQ_T_USHORT: rc = gsq_csv_get_ushort(NULL, rec, pos, &us); sink += us; break;
        case GSQ_T_UINT: rc = gsq_csv_get_uint(NULL, rec, pos, &u); sink += u; break;
        case GSQ_T_INT: rc = gsq_csv_get_int(NULL, rec, pos, &i); sink += (uint32_t)i; break;
        case GSQ_T_ULLONG: rc = gsq_csv_get_ullong(NULL, rec, pos, &ull); sink += ull; break;
        case GSQ_T_LLONG: rc = gsq_csv_get_llong(NULL, rec, pos, &ll); sink += (uint64_t)ll; break;
        case GSQ_T_FLOAT: rc = gsq_csv_get_float(NULL, rec, pos, &d); sink += d == d; break;
        case GSQ_T_IP: rc = gsq_csv_get_ip(NULL, rec, pos, &u); sink += u; break;
        case GSQ_T_IPV6: rc = gsq_csv_get_ipv6(NULL, rec, pos, &v6); sink += v6.b[0]; break;
        default:
            rc = gsq_csv_get_string(NULL, rec, pos, &s);
            if (!rc)
                touch(s.p, s.len); /* as an LFTA reads it */
            break;
        }
        CHECK(rc == 0 || rc == 1);
    }
}

static void read_chunk(const gsq_chunk *ch, const gsq_source *s)
{
    uint32_t k, i, j;
    const gsq_lfta_def *d = s->lftas[0]->lfta;
    CHECK(ch->n <= ch->cap);
    for (j = 0; j < d->n_csv_fields; j++) {
        const gsq_col *c = ch->lfta_cols[0][j];
        int type = d->csv_fields[j].type;
        CHECK(c != NULL);
        for (i = 0; i < ch->n; i++) {
            if (ch->any_skipped && !ch->row_ok[i])
                continue;
            if (c->raw) {
                touch((const uint8_t *)c->raw + (size_t)i * gsq_type_size(type),
                      gsq_type_size(type));
                continue;
            }
            if (c->valid && !c->valid[i])
                continue;
            if (type == GSQ_T_STRING)
                touch(c->vals[i].s.p, c->vals[i].s.len);
            else
                sink += c->vals[i].u;
        }
    }
    for (k = 0; k < ch->n_slots; k++)
        (void)ch->slot_cols[k];
}

/* ---- the input -------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    in f = {data, size, 0};
    uint8_t h0, h1;
    int nc, i, columnar;
    struct ArrowSchema *kids[MAX_COLS];
    gsq_arrow_col cols[MAX_COLS];
    gsq_csv_field fields[MAX_COLS];
    stream_state ss;
    struct ArrowArrayStream stream;
    gsq_run run;
    gsq_source src;
    gsq_lfta_def def;
    gsq_node node, *nodes[1];
    gsq_iface_time times;
    gsq_buf report = {0};
    uint32_t rounds = 0, k;

    if (size < 2)
        return 0;
    h0 = byte(&f);
    h1 = byte(&f);
    nc = (h0 & 7) + 1;
    columnar = (h0 >> 3) & 1;
    memset(&ss, 0, sizeof ss);
    memset(&def, 0, sizeof def);
    for (i = 0; i < nc; i++) {
        uint8_t c0 = byte(&f), c1 = byte(&f);
        struct ArrowSchema *cs = alloc(sizeof *cs);
        int t, compat[GSQ_T_STRING + 1], n_compat = 0;
        memset(cs, 0, sizeof *cs);
        cs->format = formats[c0 & 15];
        cs->name = names[i];
        cs->flags = ARROW_FLAG_NULLABLE;
        cs->release = release_schema;
        kids[i] = cs;
        gsq_arrow_classify(cs, &cols[i]);
        for (t = GSQ_T_BOOL; t <= GSQ_T_STRING; t++)
            if (gsq_arrow_compatible(t, &cols[i]))
                compat[n_compat++] = t;
        CHECK(n_compat > 0);
        fields[i].pos = (uint32_t)i + 1;
        fields[i].type = compat[(c1 & 15) % n_compat];
        fields[i].name = (c1 & 16) ? names_uc[i] : names[i];
        fields[i].time_format = GSQ_TF_NONE; /* a CSV text's: Arrow values are typed */
        fields[i].time_unit_ns = 0;
        if ((h0 & 64) && !def.time_pos && fields[i].type >= GSQ_T_USHORT &&
            fields[i].type <= GSQ_T_IP) {
            def.time_pos = fields[i].pos;
            def.time_type = fields[i].type;
        }
    }
    ss.schema.format = "+s";
    ss.schema.name = "";
    ss.schema.n_children = nc;
    ss.schema.children = kids;
    ss.schema.release = release_schema;
    ss.n_batches = (h1 >> 3) & 7;
    for (i = 0; i < ss.n_batches; i++)
        make_batch(&f, &ss.batch[i], cols, nc);
    memset(&stream, 0, sizeof stream);
    stream.get_schema = st_get_schema;
    stream.get_next = st_get_next;
    stream.get_last_error = st_last_error;
    stream.release = st_release;
    stream.private_data = &ss;

    memset(&run, 0, sizeof run);
    memset(&src, 0, sizeof src);
    memset(&node, 0, sizeof node);
    memset(&times, 0, sizeof times);
    def.name = "_lfta_fuzz";
    def.iface = "fz";
    def.protocol = "FUZZ";
    def.source_kind = GSQ_SRC_CSV;
    def.n_csv_fields = (uint32_t)nc;
    def.csv_fields = fields;
    node.run = &run;
    node.lfta = &def;
    node.name = def.name;
    nodes[0] = &node;
    times.iface = (char *)"fz";
    times.unit_ns = units[h1 >> 6];
    run.times = &times;
    run.n_times = 1;
    run.batch = batches[h1 & 7];
    run.batch_given = (h0 >> 4) & 1;
    run.arrow_flush = (h0 >> 5) & 1;
    run.clock_mode = GSQ_CLOCK_DATA;
    run.columnar = columnar;
    run.n_sources = (h0 & 128) ? 2 : 1;
    run.sources = &src;

    src.iface = "fz";
    src.uri = "arrow";
    src.path = "";
    src.ops = &gsq_arrow_ops;
    src.arrow = &stream;
    src.lftas = nodes;
    src.n_lftas = 1;
    src.limit_usec = UINT64_MAX;
    src.columnar = columnar;
    if (gsq_ring_init(&src.ring, 4096, run.batch) != 0)
        abort();
    if (gsq_source_time_setup(&run, &src) != 0)
        goto done;
    if (src.ops->open(&run, &src) != 0)
        goto done;
    while (!src.at_eof && !run.failed) {
        int rc;
        CHECK(++rounds < 1000000u);
        if (columnar) {
            rc = src.ops->read_cols(&run, &src);
            CHECK(rc == 0 || (rc == -1 && run.failed));
            if (rc < 0)
                break;
            read_chunk(&src.chunk, &src);
        } else {
            rc = src.ops->read_batch(&run, &src);
            CHECK(rc == 0 || (rc == -1 && run.failed));
            if (rc < 0)
                break;
            CHECK(src.ring.n_recs <= src.ring.max_recs);
            for (k = 0; k < src.ring.n_recs; k++)
                read_record(&src.ring.recs[k], fields, nc);
            gsq_ring_release(&src.ring);
        }
        src.input_done = 0;
    }
    CHECK(src.rows_rejected <= src.records_read);
    src.ops->report(&src, &report);
    if (report.len)
        sink += (uint8_t)report.p[report.len - 1];
done:
#ifdef FUZZ_DEBUG /* -DFUZZ_DEBUG: what an input did, for writing seeds */
    fprintf(stderr, "rows %llu rejected %llu coerced %llu has_ts %d failed %d %s\n%s",
            (unsigned long long)src.records_read, (unsigned long long)src.rows_rejected,
            (unsigned long long)src.values_coerced, src.has_ts, run.failed,
            run.failed ? gsq_buf_str(&run.error) : "", report.len ? gsq_buf_str(&report) : "");
#endif
    src.ops->close(&src);
    CHECK(src.arrow == NULL && stream.release == NULL); /* the run released the stream */
    gsq_chunk_free(&src.chunk);
    gsq_ring_free(&src.ring);
    gsq_buf_free(&report);
    gsq_buf_free(&run.error);
    arena_free();
    return 0;
}
