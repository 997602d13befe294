/*
 * arrow_in.h -- reading Arrow record batches (struct arrays) into GSQL
 * values: the column formats understood, matching columns by name, checks
 * of each batch, and the conversion of one value.  Shared by Arrow sources
 * (arrow_source.c) and Arrow-fed streams (arrow_inject.c).
 *
 * A gsq_arrow_col describes one column (a child of the batch's struct
 * schema) by its format; it borrows the schema's format string, so it is
 * valid while the schema is.  Values are read from a child array that
 * gsq_arrow_check_batch accepted for the columns in use: every such child
 * exists, covers the struct's rows and has its data buffers.
 */
#ifndef GSQ_ARROW_IN_H
#define GSQ_ARROW_IN_H

#include "arrow_abi.h"
#include "gsq_internal.h"

enum gsq_arrow_cat {
    GSQ_AC_NONE = 0, /* a format gsqlc does not read */
    GSQ_AC_DICT,     /* dictionary-encoded (not read) */
    GSQ_AC_BOOL,     /* "b", bit-packed */
    GSQ_AC_INT,      /* "c" "s" "i" "l" */
    GSQ_AC_UINT,     /* "C" "S" "I" "L" */
    GSQ_AC_F32,      /* "f" */
    GSQ_AC_F64,      /* "g" */
    GSQ_AC_UTF8,     /* "u" "U" */
    GSQ_AC_BIN,      /* "z" "Z" */
    GSQ_AC_FSB16     /* "w:16" */
};

typedef struct gsq_arrow_col {
    int cat;             /* enum gsq_arrow_cat */
    int width;           /* value bytes (ints, floats), offset bytes (4 or 8
                          * for strings), 16 for "w:16" */
    const char *format;  /* the schema's, for messages */
} gsq_arrow_col;

/* Classify a column's schema (never fails: unknown formats are NONE). */
void gsq_arrow_classify(const struct ArrowSchema *s, gsq_arrow_col *c);

/* Whether a column can be read as GSQL type `type`. */
int gsq_arrow_compatible(int type, const gsq_arrow_col *c);

/* Append "'FMT' (name)" for a format, and what a GSQL type accepts. */
void gsq_arrow_describe_format(gsq_buf *b, const char *format);
const char *gsq_arrow_expected(int type);

/* The index of the child of a struct schema named `name`: an exact match,
 * else the first that matches ignoring ASCII case; -1 if none. */
int64_t gsq_arrow_find(const struct ArrowSchema *schema, const char *name);

/* Append the children's names, comma-separated (at most ~40). */
void gsq_arrow_list_columns(gsq_buf *b, const struct ArrowSchema *schema);

/* Check that a record batch is a struct array that matches the schema (as
 * many children) and that every child with used[i] set is readable as
 * cols[i].  0, or -1 with a message in msg. */
int gsq_arrow_check_batch(const struct ArrowArray *a, const struct ArrowSchema *schema,
                          const gsq_arrow_col *cols, const uint8_t *used, char *msg,
                          size_t msg_size);

/* Whether row `row` (0-based, before the array's offset) of a struct array
 * is null as a whole. */
int gsq_arrow_row_null(const struct ArrowArray *a, int64_t row);

enum gsq_arrow_value_rc {
    GSQ_AV_OK = 0,
    GSQ_AV_NULL,     /* the value is null (*v is the zero value) */
    GSQ_AV_RANGE,    /* a number outside the GSQL type's range */
    GSQ_AV_TEXT,     /* text that is not a valid IP / IPV6 address (IPV6 binary: not 16 bytes) */
    GSQ_AV_LONG,     /* a string of 4 GiB or more */
    GSQ_AV_BROKEN    /* inconsistent offsets or a missing buffer */
};

/* Read element idx (the struct's offset + row) of child array ch, which is
 * column c, as GSQL type `type` into v.  Strings are views into the array's
 * buffers.  Returns an enum gsq_arrow_value_rc. */
int gsq_arrow_value(const struct ArrowArray *ch, const gsq_arrow_col *c, int64_t idx, int type,
                    gsq_csv_value *v);

/* Convert elements [idx, idx + m) of ch (column c) as GSQL type `type`, as
 * gsq_arrow_value does one: element j's value goes to vals + j * stride and
 * its validity (1, or 0 for null) to valid[j * vstride]; a conversion that
 * fails sets rc[j] to its gsq_arrow_value_rc unless rc[j] is already set
 * (GSQ_AV_BROKEN always wins), leaving the value zeroed.  Returns the
 * GSQ_AVS_* flags of what was seen.  The loops for integers and strings are
 * specialised by width: this is the row source's hot path. */
enum { GSQ_AVS_NULL = 1, GSQ_AVS_FAILED = 2 };
int gsq_arrow_values(const struct ArrowArray *ch, const gsq_arrow_col *c, int64_t idx, int64_t m,
                     int type, uint8_t *vals, size_t stride, uint8_t *valid, size_t vstride,
                     uint8_t *rc);

/* Append a short rendering of element idx of ch for a message. */
void gsq_arrow_describe_value(gsq_buf *b, const struct ArrowArray *ch, const gsq_arrow_col *c,
                              int64_t idx);

/* Bytes of the values rows [off, off+n) of a used column occupy (data and
 * string bytes), for the bytes_read statistic. */
uint64_t gsq_arrow_bytes(const struct ArrowArray *ch, const gsq_arrow_col *c, int64_t off,
                         int64_t n);

/* The text of the stream's last error, or a fallback for rc. */
const char *gsq_arrow_stream_error(struct ArrowArrayStream *st, int rc);

/* Open a reader's side of an Arrow stream (both readers: an interface's
 * source and an injected stream): check the stream is live, read its
 * schema into *schema (owned by the caller from then on: release it) and
 * check it describes record batches, then allocate *cols and *used with one
 * zeroed entry per column (owned by the caller).  `who` starts every
 * message ("interface 'x'", "stream y").  0, or -1 with the run failed. */
int gsq_arrow_open_schema(gsq_run *r, const char *who, struct ArrowArrayStream *st,
                          struct ArrowSchema *schema, gsq_arrow_col **cols, uint8_t **used);

#endif /* GSQ_ARROW_IN_H */
