/*
 * gdat_source.c -- gdat:PATH, a file in Tigon's binary GDAT format
 * (gdat_format.h: the layout), as written by gsgdatprint, gdatcat or
 * gsqlc's own gdat output format.
 *
 * Its records are CSV records (kind GSQ_SRC_CSV), as an Arrow source's
 * are: only the value cache is filled, so the LFTAs of CSV-kind PROTOCOLs
 * (get_csv_* or Tigon's get_gdat_* fields) read it unchanged.
 *
 * At open the file's header and schema are read, and every (position,
 * type) slot the LFTAs read is given the file's field named like the
 * PROTOCOL field read there (exact name, else ignoring case).  A field the
 * file lacks, or stores as another type, fails the run before any record
 * is read, naming it.  A GDAT string (V_STR or FSTRING) feeds a string
 * field; every other type feeds only its own type.
 *
 * Record policy: an empty record (length 0) is skipped, as gdat2ascii
 * does; the tuple-kind byte after the fixed part is not read (Tigon's
 * readers ignore it and its csv2gdat leaves it unset).  A record shorter
 * than the fixed part, a string whose bytes lie outside its record, or a
 * USHORT above 65535 rejects the record (counted, the first
 * GSQ_MAX_DESCRIBED described, like malformed CSV rows); the next record
 * follows its length prefix.  A file that ends inside a record or its
 * length prefix is truncated: those bytes are counted as one rejected
 * record, described, and the input ends there (s->truncated).
 *
 * Timestamps (source_time.c): with a time field (s->has_ts) every record
 * is stamped from its decoded value.  Replay in time (run/loop.c, beside
 * other recordings): a read stops before the first record that arrived
 * after s->limit_usec (its time: GDAT has no arrival field; an unreadable
 * time is never held back); that record is held -- its decoded values
 * and stamp set aside -- and is the first of a later read, counted in
 * records_read then and in s->held_back each time a read stops at it.
 * gdat_peek reads the next record ahead the same way.  A held record is
 * never decoded or stamped again.
 *
 * The file is memory-mapped; string values point into the mapping, which
 * lives until close.  Reader state invariants: map[0..size) is the file;
 * pos (>= schema.data_start) is the offset of the next record's length
 * prefix -- or of the one after the held record, when `held`: held_vals
 * (cs.n values) and held_ts are then the next record; slot_field[k] is
 * the schema field slot cs.slot[k] reads.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "gdat_format.h"
#include "gsq_source_ops.h"

typedef struct gdat_reader {
    gsq_buf name;               /* "gdat:PATH", for messages */
    const uint8_t *map;
    size_t size;
    size_t pos;
    gsq_gdat_schema schema;
    gsq_csv_slots cs;
    uint32_t *slot_field;
    int32_t time_slot;
    uint64_t record_no;         /* records seen (1-based numbers) */
    uint32_t n_described;
    gsq_buf described;
    int peeking;                /* gdat_peek: hold the next record, whatever its time */
    int held;                   /* the next record is set aside: */
    gsq_csv_value *held_vals;   /*   its decoded values (cs.n) */
    gsq_stamp held_ts;          /*   and its stamp */
} gdat_reader;

/* ---- setup ------------------------------------------------------------ */

/* The file's field named `name`: exactly, else ignoring case; -1: none. */
static int64_t find_field(const gsq_gdat_schema *sc, const char *name)
{
    uint32_t i;
    for (i = 0; i < sc->n_fields; i++)
        if (strcmp(sc->fields[i].name, name) == 0)
            return i;
    for (i = 0; i < sc->n_fields; i++)
        if (strcasecmp(sc->fields[i].name, name) == 0)
            return i;
    return -1;
}

static void list_fields(gsq_buf *b, const gsq_gdat_schema *sc)
{
    uint32_t i;
    for (i = 0; i < sc->n_fields; i++)
        gsq_buf_printf(b, "%s%s %s", i ? ", " : "", gsq_gdat_type_name(sc->fields[i].type),
                       sc->fields[i].name);
}

static int compatible(int slot_type, int file_type)
{
    if (slot_type == GSQ_T_STRING)
        return file_type == GSQ_T_STRING || file_type == GSQ_GDAT_T_FSTRING;
    return slot_type == file_type;
}

static int match_fields(gsq_run *r, gsq_source *s, gdat_reader *rd)
{
    const gsq_gdat_schema *sc = &rd->schema;
    uint32_t k;
    for (k = 0; k < rd->cs.n; k++) {
        uint32_t pos = rd->cs.slot[k].pos;
        int type = rd->cs.slot[k].type;
        const gsq_lfta_def *d = NULL;
        const gsq_csv_field *f = gsq_source_field_at(s, pos, type, &d);
        gsq_buf m = {0};
        int64_t i;
        if (!f) {
            gsq_run_fail(r, "interface '%s' is bound to %s, but an LFTA reading it does not "
                            "name the field it reads at position %u: rebuild the query set "
                            "with this gsqlc", s->iface, gsq_buf_str(&rd->name), (unsigned)pos);
            return -1;
        }
        i = find_field(sc, f->name);
        if (i < 0) {
            list_fields(&m, sc);
            gsq_run_fail(r, "interface '%s': %s has no field '%s' (%s) of PROTOCOL %s; its "
                            "schema (STREAM %s) has: %s",
                         s->iface, gsq_buf_str(&rd->name), f->name, gsq_type_name(type),
                         d->protocol, sc->name, gsq_buf_str(&m));
            gsq_buf_free(&m);
            return -1;
        }
        if (!compatible(type, sc->fields[i].type)) {
            gsq_run_fail(r, "interface '%s': field '%s' of PROTOCOL %s is %s, but %s stores "
                            "'%s' as %s",
                         s->iface, f->name, d->protocol, gsq_type_name(type),
                         gsq_buf_str(&rd->name), sc->fields[i].name,
                         gsq_gdat_type_name(sc->fields[i].type));
            return -1;
        }
        rd->slot_field[k] = (uint32_t)i;
    }
    return 0;
}

static int gdat_open(gsq_run *r, gsq_source *s)
{
    gdat_reader *rd = calloc(1, sizeof *rd);
    struct stat st;
    char err[256];
    int fd;
    if (!rd) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    s->impl = rd;
    gsq_buf_printf(&rd->name, "gdat:%s", s->path);
    fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        gsq_run_fail(r, "cannot open %s: %s", gsq_buf_str(&rd->name), strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        gsq_run_fail(r, "%s: not a regular file (GDAT input is read from files)",
                     gsq_buf_str(&rd->name));
        return -1;
    }
    rd->size = (size_t)st.st_size;
    if (rd->size > 0) {
        void *m = mmap(NULL, rd->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            gsq_run_fail(r, "cannot map %s: %s", gsq_buf_str(&rd->name), strerror(errno));
            return -1;
        }
        rd->map = m;
        (void)posix_madvise(m, rd->size, POSIX_MADV_SEQUENTIAL);
    }
    close(fd);
    if (gsq_gdat_parse(rd->map, rd->size, &rd->schema, err, sizeof err) != 0) {
        gsq_run_fail(r, "%s: %s", gsq_buf_str(&rd->name), err);
        return -1;
    }
    rd->pos = rd->schema.data_start;
    s->bytes_read = rd->pos;
    if (gsq_csv_slots_build(&rd->cs, s) != 0 ||
        !(rd->slot_field = calloc(rd->cs.n ? rd->cs.n : 1, sizeof *rd->slot_field)) ||
        !(rd->held_vals = calloc(rd->cs.n ? rd->cs.n : 1, sizeof *rd->held_vals))) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    rd->time_slot = gsq_csv_slot_of(&rd->cs, s->time_pos, s->time_type);
    return match_fields(r, s, rd);
}

static void gdat_close(gsq_source *s)
{
    gdat_reader *rd = s->impl;
    if (!rd)
        return;
    if (rd->map)
        munmap((void *)(uintptr_t)rd->map, rd->size);
    gsq_gdat_schema_free(&rd->schema);
    gsq_csv_slots_free(&rd->cs);
    free(rd->slot_field);
    free(rd->held_vals);
    gsq_buf_free(&rd->name);
    gsq_buf_free(&rd->described);
    free(rd);
    s->impl = NULL;
}

/* ---- records ---------------------------------------------------------- */

static void reject(gsq_source *s, gdat_reader *rd, size_t at, const char *why, const char *field)
{
    gsq_buf *b = &rd->described;
    s->rows_rejected++;
    if (rd->n_described >= GSQ_MAX_DESCRIBED)
        return;
    rd->n_described++;
    gsq_buf_printf(b, "gsqlc: %s: record %llu (byte %llu): ", gsq_buf_str(&rd->name),
                   (unsigned long long)rd->record_no, (unsigned long long)at);
    if (field)
        gsq_buf_printf(b, "field '%s': ", field);
    gsq_buf_printf(b, "%s\n", why);
}

/* Decode the tuple t of len bytes into vals; NULL, or why it is rejected
 * (*bad the field). */
static const char *decode(const gdat_reader *rd, const uint8_t *t, uint32_t len,
                          gsq_csv_value *vals, const char **bad)
{
    uint32_t k;
    for (k = 0; k < rd->cs.n; k++) {
        const gsq_gdat_field *f = &rd->schema.fields[rd->slot_field[k]];
        const uint8_t *p = t + f->offset;
        gsq_csv_value *v = &vals[k];
        switch (f->type) {
        case GSQ_T_BOOL: v->u = gsq_gdat_le32(p) != 0; break;
        case GSQ_T_USHORT:
            v->u = gsq_gdat_le32(p);
            if (v->u > 0xffffu) {
                *bad = f->name;
                return "a USHORT above 65535";
            }
            break;
        case GSQ_T_UINT: case GSQ_T_IP: v->u = gsq_gdat_le32(p); break;
        case GSQ_T_INT: v->i = (int32_t)gsq_gdat_le32(p); break;
        case GSQ_T_ULLONG: v->u = gsq_gdat_le64(p); break;
        case GSQ_T_LLONG: v->i = (int64_t)gsq_gdat_le64(p); break;
        case GSQ_T_FLOAT: {
            uint64_t bits = gsq_gdat_le64(p);
            memcpy(&v->f, &bits, sizeof v->f);
            break;
        }
        case GSQ_T_IPV6: memcpy(&v->v6, p, 16); break;
        case GSQ_GDAT_T_FSTRING:
            v->s.p = (const char *)p;
            v->s.len = f->size;
            break;
        default: { /* V_STR: {length, offset, reserved} */
            uint32_t n = gsq_gdat_le32(p), off = gsq_gdat_le32(p + 4);
            if (off > len || n > len - off) {
                *bad = f->name;
                return "its string lies outside the record";
            }
            v->s.p = n ? (const char *)t + off : "";
            v->s.len = n;
            break;
        }
        }
    }
    return NULL;
}

/* Commit the decoded values at vals (a ring reservation) as the next
 * record, stamped st. */
static void commit_record(gsq_source *s, gdat_reader *rd, gsq_csv_value *vals,
                          const gsq_stamp *st)
{
    size_t vals_sz = (size_t)rd->cs.n * sizeof(gsq_csv_value);
    gsq_record *rec = gsq_ring_commit(&s->ring, vals_sz ? vals_sz : 1);
    rec->kind = GSQ_SRC_CSV;
    rec->vals = vals;
    rec->layout = &rd->cs.layout;
    rec->app_usec = st->app_usec;
    rec->arrival_usec = st->arrival_usec;
    rec->ts_unreadable = st->unreadable;
}

/* The held record, unless it is still a later round's: the first of the
 * (empty) ring's batch.  1: delivered (or none held), 0: held back, -1:
 * the run failed. */
static int release_held(gsq_run *r, gsq_source *s, gdat_reader *rd)
{
    size_t vals_sz = (size_t)rd->cs.n * sizeof(gsq_csv_value);
    gsq_csv_value *vals;
    if (!rd->held)
        return 1;
    if (!rd->held_ts.unreadable && rd->held_ts.arrival_usec > s->limit_usec) {
        s->held_back++; /* still a later round's */
        return 0;
    }
    if (!(vals = gsq_ring_reserve(&s->ring, vals_sz ? vals_sz : 1))) {
        gsq_run_fail(r, "out of memory reading %s", gsq_buf_str(&rd->name));
        return -1;
    }
    memcpy(vals, rd->held_vals, vals_sz);
    commit_record(s, rd, vals, &rd->held_ts);
    s->records_read++;
    rd->held = 0;
    return 1;
}

static int gdat_read_batch(gsq_run *r, gsq_source *s)
{
    gdat_reader *rd = s->impl;
    size_t vals_sz = (size_t)rd->cs.n * sizeof(gsq_csv_value);
    uint32_t fixed = rd->schema.fixed_size;
    int rc = release_held(r, s, rd);
    if (rc <= 0)
        return rc;
    while (!gsq_ring_batch_full(&s->ring)) {
        size_t at = rd->pos, left = rd->size - rd->pos;
        const char *why, *bad = NULL;
        gsq_csv_value *vals;
        gsq_stamp st = {0, 0, 0};
        uint32_t len;
        if (left == 0) {
            s->at_eof = 1;
            break;
        }
        rd->record_no++;
        if (left < 4 || (len = gsq_gdat_be32(rd->map + at)) > left - 4 ||
            len > GSQ_GDAT_MAX_RECORD) {
            gsq_buf m = {0};
            if (left < 4)
                gsq_buf_printf(&m, "the file ends inside a record's length (%zu trailing "
                                   "bytes)", left);
            else
                gsq_buf_printf(&m, "a record of %u bytes, but %s (truncated or corrupt: "
                                   "the input ends here)",
                               (unsigned)len,
                               len > GSQ_GDAT_MAX_RECORD ? "over the 64 MiB limit"
                                                         : "fewer bytes are left");
            reject(s, rd, at, gsq_buf_str(&m), NULL);
            gsq_buf_free(&m);
            s->truncated = 1;
            s->records_read++;
            rd->pos = rd->size;
            s->bytes_read = rd->size;
            s->at_eof = 1;
            break;
        }
        rd->pos += 4 + (size_t)len;
        s->bytes_read = rd->pos;
        if (len == 0) { /* an empty record: skipped */
            rd->record_no--;
            continue;
        }
        s->records_read++;
        if (len < fixed) {
            gsq_buf m = {0};
            gsq_buf_printf(&m, "%u bytes, shorter than the %u of the schema's fields",
                           (unsigned)len, (unsigned)fixed);
            reject(s, rd, at, gsq_buf_str(&m), NULL);
            gsq_buf_free(&m);
            continue;
        }
        vals = gsq_ring_reserve(&s->ring, vals_sz ? vals_sz : 1);
        if (!vals) {
            if (s->ring.used == 0) {
                gsq_run_fail(r, "out of memory reading %s", gsq_buf_str(&rd->name));
                return -1;
            }
            /* the batch is full: read this record again next time */
            rd->pos = at;
            rd->record_no--;
            s->records_read--;
            break;
        }
        why = decode(rd, rd->map + at + 4, len, vals, &bad);
        if (why) {
            reject(s, rd, at, why, bad);
            continue; /* the reservation is reused by the next record */
        }
        if (s->has_ts) {
            gsq_source_stamp(s, rd->time_slot >= 0 ? &vals[rd->time_slot] : NULL, NULL, &st);
            if (rd->peeking || (!st.unreadable && st.arrival_usec > s->limit_usec)) {
                if (!rd->peeking) /* the next round's */
                    s->held_back++;
                memcpy(rd->held_vals, vals, vals_sz); /* the reservation is not committed */
                rd->held_ts = st;
                rd->held = 1;
                s->records_read--; /* counted when delivered */
                break;
            }
        }
        commit_record(s, rd, vals, &st);
    }
    return 0;
}

/* The arrival instant of the next record, read ahead and held (the ring
 * is empty: peek comes between rounds); a record with an unreadable time
 * gives the last readable one.  Rejected records before it are counted
 * now, once. */
static int gdat_peek(gsq_run *r, gsq_source *s, uint64_t *ts_usec)
{
    gdat_reader *rd = s->impl;
    while (!rd->held) {
        int rc;
        if (s->at_eof)
            return 0;
        rd->peeking = 1;
        rc = gdat_read_batch(r, s);
        rd->peeking = 0;
        if (rc < 0)
            return -1;
    }
    *ts_usec = rd->held_ts.arrival_usec;
    return 1;
}

static void gdat_report(const gsq_source *s, gsq_buf *out)
{
    const gdat_reader *rd = s->impl;
    if (!rd || !s->rows_rejected)
        return;
    gsq_buf_printf(out, "gsqlc: %s: %llu of %llu records rejected as malformed%s%s\n",
                   gsq_buf_str(&rd->name), (unsigned long long)s->rows_rejected,
                   (unsigned long long)s->records_read, s->truncated ? " (the file is truncated)" : "",
                   s->rows_rejected > rd->n_described ? "; the first ones:" : ":");
    gsq_buf_add(out, rd->described.p, rd->described.len);
}

static void gdat_stats(const gsq_source *s, gsq_buf *out)
{
    const gdat_reader *rd = s->impl;
    if (rd && rd->schema.name)
        gsq_buf_printf(out, ",\"gdat_version\":%u,\"gdat_fields\":%u", rd->schema.version,
                       (unsigned)rd->schema.n_fields);
}

static void gdat_progress(const gsq_source *s, uint64_t *pos, uint64_t *total)
{
    const gdat_reader *rd = s->impl;
    *pos = s->bytes_read;
    *total = rd ? rd->size : 0;
}

const gsq_source_ops gsq_gdat_ops = {
    .name = "gdat",
    .scheme = "gdat:",
    .records_key = "records_read",
    .lfta_kind = GSQ_SRC_CSV,
    .check_lfta = gsq_source_check_lfta,
    .open = gdat_open,
    .peek = gdat_peek,
    .read_batch = gdat_read_batch,
    .close = gdat_close,
    .report = gdat_report,
    .stats = gdat_stats,
    .progress = gdat_progress,
};
