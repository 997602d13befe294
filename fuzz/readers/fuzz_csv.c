/*
 * fuzz_csv.c -- libFuzzer harness of the CSV source (runtime_c/sources/
 * csv_source.c, with csv_layout.c, csv_held.c, source_time.c and the
 * value parsers of core/parse.c), linked with the whole runtime built from
 * its own sources (fuzz/readers/build.sh).
 *
 * The parser has no entry point of its own (its scanner, unquoting and
 * conversion are static): it is driven as the run loop drives it, through
 * gsq_csv_ops (open, peek, read_batch, report, close) on a gsq_run and a
 * gsq_source set up here, the input written to a memfd that the source
 * opens as /proc/self/fd/N (a regular file, as csv:PATH is).
 *
 * Input: a header, then the CSV bytes.
 *   h[0]  bits 0-1 separator (',' '|' '\t' ';'), bit 2 csv_strict, bit 3
 *         the time column is slot (h[2] >> 5) of the LFTA's fields (when
 *         its type may be one), bit 4 an arrival column, bit 5 replay
 *         time-aligned (peek before each batch, limit = its time + a
 *         quantum), bits 6-7 time_unit (s, ms, us, ns)
 *   h[1]  bits 0-2 batch size (records per ring batch), bits 3-4 the
 *         ring's initial bytes, bits 5-7 the quantum's scale
 *   h[2]  bits 0-3 the number of fields the LFTA declares (0..15, each a
 *         further header byte: position (b & 7) + 1, type (b >> 3) % 10
 *         + 1: bool .. string, time format (b >> 3) / 10: none, iso8601,
 *         epoch_ms, epoch_us -- a number type's, in the unit of the field's
 *         index -- and name "a" .. "h" by position), bit 4 columnar (the
 *         ring transposed into a chunk, core/chunk.c, after each batch),
 *         bit 7 (also the time slot's) the first line is a header naming
 *         the columns (option csv_header)
 *   [arrival byte when h[0] bit 4: position (b & 7) + 1, type (b >> 3) % 8]
 * After each batch every record is checked against gsq_record.h (field
 * ends, string views inside the record's text) and read through the
 * gsq_csv_get_* accessors, declared positions and others.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gsq_source_ops.h"

const gsq_queryset_def gsq_queryset = {0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, NULL};

#define CHECK(c)                  \
    do {                          \
        if (!(c))                 \
            __builtin_trap();     \
    } while (0)

static int memfd = -1;
static char path[64];

static const char seps[4] = {',', '|', '\t', ';'};
static const uint32_t batches[8] = {1, 2, 3, 5, 8, 64, 1000, 4096};
static const size_t ring_bytes[4] = {64, 512, 8192, 1u << 20};
static const uint64_t units[4] = {1000000000u, 1000000u, 1000u, 1u};

static volatile uint64_t sink;

static void touch_str(gsq_str s)
{
    uint32_t k;
    for (k = 0; k < s.len; k++)
        sink += (uint8_t)s.p[k];
}

/* Read a record as an LFTA would: every declared (pos, type), a few
 * undeclared ones (the on-the-fly conversion), and check its layout. */
static void read_record(const gsq_record *rec, const gsq_csv_field *f, uint32_t nf)
{
    uint32_t j, pos;
    CHECK(rec->kind == GSQ_SRC_CSV && rec->vals && rec->layout && rec->field_end);
    CHECK(rec->field_end[0] == 0 && rec->field_end[rec->n_fields] == rec->len);
    for (j = 0; j < rec->n_fields; j++)
        CHECK(rec->field_end[j] <= rec->field_end[j + 1]);
    if (rec->len)
        sink += rec->data[0] + rec->data[rec->len - 1];
    for (j = 0; j < nf + 3; j++) {
        int type = j < nf ? f[j].type : (int)(j - nf) * 4 + 1; /* bool, ullong, ipv6 */
        uint8_t b;
        uint16_t us;
        uint32_t u;
        int32_t i;
        uint64_t ull;
        int64_t ll;
        double d;
        gsq_ipv6 v6;
        gsq_str s;
        pos = j < nf ? f[j].pos : j - nf + 1;
        switch (type) {
        case GSQ_T_BOOL: CHECK(gsq_csv_get_bool(NULL, rec, pos, &b) == 0); sink += b; break;
        case GSQ_T_USHORT: CHECK(gsq_csv_get_ushort(NULL, rec, pos, &us) == 0); sink += us; break;
        case GSQ_T_UINT: CHECK(gsq_csv_get_uint(NULL, rec, pos, &u) == 0); sink += u; break;
        case GSQ_T_INT: CHECK(gsq_csv_get_int(NULL, rec, pos, &i) == 0); sink += (uint32_t)i; break;
        case GSQ_T_ULLONG: CHECK(gsq_csv_get_ullong(NULL, rec, pos, &ull) == 0); sink += ull; break;
        case GSQ_T_LLONG: CHECK(gsq_csv_get_llong(NULL, rec, pos, &ll) == 0); sink += (uint64_t)ll; break;
        case GSQ_T_FLOAT: CHECK(gsq_csv_get_float(NULL, rec, pos, &d) == 0); sink += d == d; break;
        case GSQ_T_IP: CHECK(gsq_csv_get_ip(NULL, rec, pos, &u) == 0); sink += u; break;
        case GSQ_T_IPV6: CHECK(gsq_csv_get_ipv6(NULL, rec, pos, &v6) == 0); sink += v6.b[15]; break;
        default:
            CHECK(gsq_csv_get_string(NULL, rec, pos, &s) == 0);
            /* a string value is a view into the record's text (or empty) */
            CHECK(s.len == 0 || ((const uint8_t *)s.p >= rec->data &&
                                 (const uint8_t *)s.p + s.len <= rec->data + rec->len));
            touch_str(s);
            break;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gsq_run run;
    gsq_source src;
    gsq_lfta_def def;
    gsq_node node, *nodes[1];
    gsq_csv_field fields[16];
    gsq_iface_time times;
    gsq_buf report = {0};
    size_t hdr;
    uint32_t nf, k, rounds = 0;
    uint64_t quantum;
    int aligned, columnar, chunk_ready = 0;

    if (size < 3)
        return 0;
    nf = data[2] & 15;
    hdr = 3 + nf + ((data[0] & 16) ? 1 : 0);
    if (size < hdr)
        return 0;
    if (memfd < 0) {
        memfd = memfd_create("fuzz_csv", 0);
        if (memfd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
    }
    if (ftruncate(memfd, 0) != 0 ||
        (size > hdr && pwrite(memfd, data + hdr, size - hdr, 0) != (ssize_t)(size - hdr)))
        abort();

    memset(&run, 0, sizeof run);
    memset(&src, 0, sizeof src);
    memset(&def, 0, sizeof def);
    memset(&node, 0, sizeof node);
    memset(&times, 0, sizeof times);
    run.csv_sep = seps[data[0] & 3];
    run.csv_strict = (data[0] >> 2) & 1;
    run.clock_mode = GSQ_CLOCK_DATA;
    for (k = 0; k < nf; k++) {
        static const char *const names[8] = {"a", "b", "c", "d", "e", "f", "g", "h"};
        static const int formats[4] = {GSQ_TF_NONE, GSQ_TF_ISO8601, GSQ_TF_EPOCH_MS,
                                       GSQ_TF_EPOCH_US};
        fields[k].pos = (uint32_t)(data[3 + k] & 7) + 1;
        fields[k].type = (data[3 + k] >> 3) % 10 + 1;
        fields[k].name = names[fields[k].pos - 1];
        fields[k].time_format = formats[(data[3 + k] >> 3) / 10];
        if (fields[k].type < GSQ_T_USHORT || fields[k].type > GSQ_T_FLOAT)
            fields[k].time_format = GSQ_TF_NONE; /* the compiler's rule */
        fields[k].time_unit_ns = fields[k].time_format ? (uint32_t)units[k & 3] : 0;
    }
    def.name = "_lfta_fuzz";
    def.iface = "fz";
    def.protocol = "FUZZ";
    def.source_kind = GSQ_SRC_CSV;
    def.n_csv_fields = nf;
    def.csv_fields = fields;
    if ((data[0] & 8) && nf) {
        const gsq_csv_field *t = &fields[(data[2] >> 5) % nf];
        def.time_pos = t->pos;
        def.time_type = t->type; /* source_time.c keeps it only if a time type */
    }
    node.run = &run;
    node.lfta = &def;
    node.name = def.name;
    nodes[0] = &node;
    times.iface = (char *)"fz";
    times.unit_ns = units[data[0] >> 6];
    times.csv_header = (data[2] >> 7) & 1;
    if (data[0] & 16) {
        uint8_t b = data[3 + nf];
        times.arrival_pos = (uint32_t)(b & 7) + 1;
        times.arrival_type = (b >> 3) % 8; /* 0: the time column's type */
    }
    run.times = &times;
    run.n_times = 1;
    run.sources = &src;
    run.n_sources = 1;
    run.batch = batches[data[1] & 7];
    quantum = (uint64_t)1 << (3 * (data[1] >> 5));
    aligned = (data[0] >> 5) & 1;
    columnar = (data[2] >> 4) & 1;

    src.iface = "fz";
    src.uri = "csv:fuzz";
    src.path = path;
    src.ops = &gsq_csv_ops;
    src.lftas = nodes;
    src.n_lftas = 1;
    src.limit_usec = UINT64_MAX;
    src.aligned = aligned;
    if (gsq_ring_init(&src.ring, ring_bytes[(data[1] >> 3) & 3], run.batch) != 0)
        abort();
    if (gsq_source_time_setup(&run, &src) != 0)
        goto done;
    if (src.ops->open(&run, &src) != 0)
        goto done;
    while (!src.at_eof && !run.failed) {
        uint64_t ts;
        int rc;
        CHECK(++rounds < 100000u); /* every round makes progress */
        if (aligned && src.has_ts) {
            /* the loop's time-aligned round: peek, then read to its time
             * plus a quantum */
            rc = src.ops->peek(&run, &src, &ts);
            CHECK(rc == 0 || rc == 1 || (rc == -1 && run.failed));
            if (rc < 0)
                break;
            if (rc == 0) {
                CHECK(src.at_eof);
                break;
            }
            src.limit_usec = ts > UINT64_MAX - quantum ? UINT64_MAX : ts + quantum;
        }
        rc = src.ops->read_batch(&run, &src);
        CHECK(rc == 0 || (rc == -1 && run.failed));
        if (rc < 0)
            break;
        CHECK(src.ring.n_recs <= src.ring.max_recs && src.ring.used <= src.ring.cap);
        for (k = 0; k < src.ring.n_recs; k++) {
            const gsq_record *rec = &src.ring.recs[k];
            read_record(rec, fields, nf);
            if (src.has_ts && !rec->ts_unreadable && aligned)
                CHECK(rec->arrival_usec <= src.limit_usec);
        }
        if (columnar && src.ring.n_recs > 0) {
            if (!chunk_ready) {
                if (gsq_chunk_init(&src.chunk, &src, src.ring.max_recs,
                                   src.ring.recs[0].layout) != 0)
                    abort();
                chunk_ready = 1;
            }
            gsq_chunk_from_ring(&src.chunk, &src.ring);
            CHECK(src.chunk.n == src.ring.n_recs);
        }
        if (aligned && !src.has_ts)
            src.limit_usec = UINT64_MAX;
        gsq_ring_release(&src.ring);
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
    if (src.ops->close)
        src.ops->close(&src);
    if (chunk_ready)
        gsq_chunk_free(&src.chunk);
    gsq_ring_free(&src.ring);
    gsq_buf_free(&report);
    gsq_buf_free(&run.error);
    return 0;
}
