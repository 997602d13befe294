/*
 * gdat_format.h -- Tigon SQL's GDAT file layout: the header, the schema
 * text it carries, and where each field sits in a record.  Shared by the
 * gdat: source (gdat_source.c) and the gdat output format
 * (sinks/gdat_sink.c).  libc only.
 *
 * The layout, as Tigon's gsgdatprint writes it and gdat2ascii, gdatcat and
 * the GDAT interface read it:
 *
 *   "GDAT\nVERSION:<v>\nSCHEMALENGTH:<n>\n"   ASCII; v is the schema
 *                                           parser's version (4; 1..4 read)
 *   <n bytes of schema text>               an FTA{ STREAM name { ... } ... }
 *                                           block, NUL-terminated
 *   then records, each:
 *     <u32 length, big-endian>             0: an empty record, skipped
 *     <length bytes of tuple>
 *
 * A tuple is the fields of the STREAM in declaration order, packed with no
 * padding (host byte order: little-endian for files from x86), then one
 * tuple-kind byte (0 data, 1 temporal, 2 end of file), then the bytes of
 * its strings.  Field sizes: BOOL, USHORT, UINT, INT, IP 4; ULLONG, LLONG,
 * FLOAT (a double) 8; IPV6 16 (the address in network order); V_STR 12 --
 * {u32 length, u32 offset from the tuple's start, u32 reserved};
 * TIMEVAL 16; FSTRING<k> k.  The fixed part's size is the sum.
 *
 * Invariants of a parsed gsq_gdat_schema: fields[i].offset is the sum of
 * the sizes of fields[0..i); fixed_size is the sum of all; data_start is
 * the offset of the first record in the file; name and every field name
 * are owned, NUL-terminated.
 */
#ifndef GSQ_GDAT_FORMAT_H
#define GSQ_GDAT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* Types a GDAT file may hold that gsqlc has no type for (gsq_type has
 * GSQ_T_BOOL .. GSQ_T_STRING). */
#define GSQ_GDAT_T_TIMEVAL 50
#define GSQ_GDAT_T_FSTRING 51

#define GSQ_GDAT_VERSION 4u              /* what the writer declares */
#define GSQ_GDAT_MAX_SCHEMA (1u << 20)   /* longest schema text read */
#define GSQ_GDAT_MAX_RECORD (64u << 20)  /* longest record read */
#define GSQ_GDAT_MAX_FIELDS 4096u

typedef struct gsq_gdat_field {
    char *name;
    int type;          /* GSQ_T_* or GSQ_GDAT_T_* */
    uint32_t size;     /* bytes in the fixed part */
    uint32_t offset;   /* from the tuple's start */
} gsq_gdat_field;

typedef struct gsq_gdat_schema {
    char *name;        /* the STREAM's */
    unsigned version;
    gsq_gdat_field *fields;
    uint32_t n_fields;
    uint32_t fixed_size;
    size_t data_start;
} gsq_gdat_schema;

/* Parse the header and schema at the start of a file of n bytes at p.
 * 0: *out filled (owned: gsq_gdat_schema_free); -1: not a readable GDAT
 * header, err (errsz bytes) says why. */
int gsq_gdat_parse(const uint8_t *p, size_t n, gsq_gdat_schema *out, char *err, size_t errsz);
void gsq_gdat_schema_free(gsq_gdat_schema *s);

/* The GDAT type name of a type ("UINT", "V_STR", ...). */
const char *gsq_gdat_type_name(int type);
/* Bytes a field of a gsqlc type takes in a tuple's fixed part. */
uint32_t gsq_gdat_type_size(int type);

/* Little-endian and big-endian loads and stores. */
static inline uint32_t gsq_gdat_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t gsq_gdat_le64(const uint8_t *p)
{
    return (uint64_t)gsq_gdat_le32(p) | (uint64_t)gsq_gdat_le32(p + 4) << 32;
}
static inline uint32_t gsq_gdat_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
static inline void gsq_gdat_put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline void gsq_gdat_put_le64(uint8_t *p, uint64_t v)
{
    gsq_gdat_put_le32(p, (uint32_t)v);
    gsq_gdat_put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline void gsq_gdat_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

#endif /* GSQ_GDAT_FORMAT_H */
