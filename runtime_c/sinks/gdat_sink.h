/*
 * gdat_sink.h -- the gdat output format: a stream's tuples as a file in
 * Tigon's GDAT layout (sources/gdat_format.h), which gsqlc's gdat: source,
 * Tigon's gdat2ascii, gdatcat and GDAT interfaces read.
 *
 * The header declares the stream as Tigon's translate_fta declares a
 * query's output (an FTA{ STREAM ... DEFINE{ query_name ...} PARAM{}
 * SELECT ... } block, NUL-terminated); each data tuple is a record: its
 * length (big-endian), the fields packed in column order (little-endian),
 * the tuple-kind byte 0, then its strings' bytes.  Only data tuples are
 * written (as gsgdatprint does).
 */
#ifndef GSQ_GDAT_SINK_H
#define GSQ_GDAT_SINK_H

#include "gsq_runtime.h"
#include "strbuf.h"

/* Append the header and schema of stream d to b. */
void gsq_gdat_header(gsq_buf *b, const gsq_stream_desc *d);
/* Append tuple tup (len bytes) of stream d as a record: 0, -1 out of
 * memory, -2 a column lies outside the tuple (a broken tuple). */
int gsq_gdat_row(gsq_buf *b, const gsq_stream_desc *d, const void *tup, uint32_t len);

#endif /* GSQ_GDAT_SINK_H */
