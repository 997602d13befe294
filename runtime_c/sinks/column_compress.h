/*
 * column_compress.h -- columns' kept values, packed: the step a selection
 * over columns ends with (the values of the rows whose keep byte is 1, in
 * order, written contiguously to each column's output).
 *
 * gsq_compress_columns uses the CPU's AVX-512 compress instructions
 * (vpcompressd/q with AVX512F and AVX512BW, the 16-bit form with
 * AVX512_VBMI2), else AVX2 (a permutation per group of 8 rows, looked up
 * by its keep bits), and says when the CPU has neither for the columns
 * given: the caller then gathers by row index (gsq_keep_to_sel).  Generated
 * code and the runtime are built for the baseline x86-64 (or any other
 * target): the kernel carries its own target attribute and runs only when
 * the CPU said it has the instructions.
 *
 * Contract: column c's output dst[c] has room for the kept values and
 * nothing is written past them (the kernel packs into a stack stage with
 * whole-register stores and copies out exactly the kept bytes); keep[j] is
 * 0 or 1.
 */
#ifndef GSQ_COLUMN_COMPRESS_H
#define GSQ_COLUMN_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

enum { GSQ_COMPRESS_MAX_COLS = 64 };

/* The instruction sets a kernel may use (bits of gsq_compress_columns'
 * isas; the runtime drops those GSQLC_DISABLE_CPU_FEATURES names). */
enum { GSQ_COMPRESS_AVX512 = 1, GSQ_COMPRESS_AVX2 = 2 };

/* For rows j < n with keep[j], column c's value (size[c] bytes: 2, 4 or 8;
 * src[c] the column's row 0) appended to dst[c], ncols <= 64 columns, by
 * the kernel of the first of isas (AVX-512, then AVX2) the CPU has.
 * Returns how many rows were kept, or -1 (nothing written) when the CPU
 * lacks an instruction a column needs. */
int64_t gsq_compress_columns(int isas, void *const *dst, const void *const *src,
                             const uint32_t *size, uint32_t ncols, const uint8_t *keep,
                             uint32_t n);

/* The kept rows' indices, first + j for each j with keep[j] (branchless;
 * any CPU); returns how many. */
uint32_t gsq_keep_to_sel(const uint8_t *keep, uint32_t n, uint32_t first, uint32_t *sel);

#endif
