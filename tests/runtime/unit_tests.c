/* Unit tests of the runtime's pure functions: text parsing, value
 * formatting, JSON escaping, the built-in scalar functions, the ring buffer
 * and the tuple queue.  Linked with the runtime objects and an empty query
 * set; prints one line per failure and exits 1 if any. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "column_compress.h"
#include "format.h"
#include "gsq_funcs.h"
#include "ring_buffer.h"
#include "strbuf.h"
#include "tuple_queue.h"

const gsq_queryset_def gsq_queryset = {0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, NULL};

static int failures;

#define CHECK(cond)                                                               \
    do {                                                                          \
        if (!(cond)) {                                                            \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                \
            failures++;                                                           \
        }                                                                         \
    } while (0)

#define S(lit) lit, sizeof(lit) - 1

static void test_parse_ints(void)
{
    uint32_t u;
    int32_t i;
    uint16_t us;
    uint64_t ull;
    int64_t ll;

    CHECK(gsq_parse_uint(S("42"), &u) == 0 && u == 42);
    CHECK(gsq_parse_uint(S("  42 "), &u) == 0 && u == 42);
    CHECK(gsq_parse_uint(S("+7"), &u) == 0 && u == 7);
    CHECK(gsq_parse_uint(S("0x1F"), &u) == 0 && u == 31);
    CHECK(gsq_parse_uint(S("4294967295"), &u) == 0 && u == 4294967295u);
    CHECK(gsq_parse_uint(S("4294967296"), &u) == 1 && u == 4294967295u);
    CHECK(gsq_parse_uint(S("135.197.192.237"), &u) == 1 && u == 135);
    CHECK(gsq_parse_uint(S("TRUE"), &u) == 1 && u == 0);
    CHECK(gsq_parse_uint(S(""), &u) == 1 && u == 0);
    CHECK(gsq_parse_uint(S("   "), &u) == 1 && u == 0);
    CHECK(gsq_parse_uint(S("-1"), &u) == 1 && u == 0);
    CHECK(gsq_parse_uint(S("12abc"), &u) == 1 && u == 12);
    CHECK(gsq_parse_uint(S("0x"), &u) == 1 && u == 0);
    /* not NUL-terminated: the length bounds the parse */
    CHECK(gsq_parse_uint("123456", 3, &u) == 0 && u == 123);

    CHECK(gsq_parse_int(S("-2147483648"), &i) == 0 && i == INT32_MIN);
    CHECK(gsq_parse_int(S("2147483647"), &i) == 0 && i == INT32_MAX);
    CHECK(gsq_parse_int(S("2147483648"), &i) == 1 && i == INT32_MAX);
    CHECK(gsq_parse_int(S("-2147483649"), &i) == 1 && i == INT32_MIN);
    CHECK(gsq_parse_int(S(" -15 "), &i) == 0 && i == -15);
    CHECK(gsq_parse_int(S("-0x10"), &i) == 0 && i == -16);
    CHECK(gsq_parse_int(S("x"), &i) == 1 && i == 0);

    CHECK(gsq_parse_ushort(S("65535"), &us) == 0 && us == 65535);
    CHECK(gsq_parse_ushort(S("65536"), &us) == 1 && us == 65535);

    CHECK(gsq_parse_ullong(S("18446744073709551615"), &ull) == 0 && ull == UINT64_MAX);
    CHECK(gsq_parse_ullong(S("18446744073709551616"), &ull) == 1 && ull == UINT64_MAX);
    CHECK(gsq_parse_llong(S("-9223372036854775808"), &ll) == 0 && ll == INT64_MIN);
    CHECK(gsq_parse_llong(S("9223372036854775807"), &ll) == 0 && ll == INT64_MAX);
    CHECK(gsq_parse_llong(S("9223372036854775808"), &ll) == 1 && ll == INT64_MAX);
}

static void test_parse_other(void)
{
    double f;
    uint8_t b;
    uint32_t ip;
    gsq_ipv6 v6;
    static const uint8_t want6[16] = {0x20, 0x02, 0x87, 0xc5, 0xc0, 0xe4, 0, 0,
                                      0,    0,    0,    0,    0x87, 0xc5, 0xc0, 0xe4};

    CHECK(gsq_parse_float(S("1.5"), &f) == 0 && f == 1.5);
    CHECK(gsq_parse_float(S(" -2e3 "), &f) == 0 && f == -2000.0);
    CHECK(gsq_parse_float(S("3.5kg"), &f) == 1 && f == 3.5);
    CHECK(gsq_parse_float(S("abc"), &f) == 1 && f == 0.0);
    CHECK(gsq_parse_float(S(""), &f) == 1 && f == 0.0);
    CHECK(gsq_parse_float(S("nan"), &f) == 0 && isnan(f));
    CHECK(gsq_parse_float("1.25e1", 4, &f) == 0 && f == 1.25);

    CHECK(gsq_parse_bool(S("TRUE"), &b) == 0 && b == 1);
    CHECK(gsq_parse_bool(S("true"), &b) == 0 && b == 1);
    CHECK(gsq_parse_bool(S("True"), &b) == 0 && b == 1);
    CHECK(gsq_parse_bool(S("1"), &b) == 0 && b == 1);
    CHECK(gsq_parse_bool(S("FALSE"), &b) == 0 && b == 0);
    CHECK(gsq_parse_bool(S("false"), &b) == 0 && b == 0);
    CHECK(gsq_parse_bool(S("0"), &b) == 0 && b == 0);
    CHECK(gsq_parse_bool(S(""), &b) == 1 && b == 0);
    CHECK(gsq_parse_bool(S("yes"), &b) == -1 && b == 0);
    CHECK(gsq_parse_bool(S("TRUEX"), &b) == -1 && b == 0);

    CHECK(gsq_parse_ip(S("10.0.0.1"), &ip) == 0 && ip == 0x0A000001u);
    CHECK(gsq_parse_ip(S("255.255.255.255"), &ip) == 0 && ip == 0xffffffffu);
    CHECK(gsq_parse_ip(S(" 1.2.3.4 "), &ip) == 0 && ip == 0x01020304u);
    CHECK(gsq_parse_ip(S("256.0.0.1"), &ip) == -1 && ip == 0);
    CHECK(gsq_parse_ip(S("1.2.3"), &ip) == -1 && ip == 0);
    CHECK(gsq_parse_ip(S("1.2.3.4.5"), &ip) == -1 && ip == 0);
    CHECK(gsq_parse_ip(S("1..3.4"), &ip) == -1);
    CHECK(gsq_parse_ip(S("0001.2.3.4"), &ip) == -1);
    CHECK(gsq_parse_ip(S(""), &ip) == 1 && ip == 0);

    CHECK(gsq_parse_ipv6(S("2002:87c5:c0e4:0000:0000:0000:87c5:c0e4"), &v6) == 0 &&
          memcmp(v6.b, want6, 16) == 0);
    CHECK(gsq_parse_ipv6(S("2002:87c5:c0e4::87c5:c0e4"), &v6) == 0 &&
          memcmp(v6.b, want6, 16) == 0);
    CHECK(gsq_parse_ipv6(S("::1"), &v6) == 0 && v6.b[15] == 1 && v6.b[0] == 0);
    CHECK(gsq_parse_ipv6(S("::ffff:1.2.3.4"), &v6) == 0 && v6.b[10] == 0xff && v6.b[15] == 4);
    CHECK(gsq_parse_ipv6(S("1:2:3"), &v6) == -1 && v6.b[0] == 0);
    CHECK(gsq_parse_ipv6(S("zz::1"), &v6) == -1);
    CHECK(gsq_parse_ipv6(S(""), &v6) == 1);
}

static void test_format(void)
{
    char ip[16], ip6[40];
    gsq_ipv6 a;
    gsq_buf b = {0};
    gsq_val v;
    int k;
    for (k = 0; k < 16; k++)
        a.b[k] = (uint8_t)(k * 17);
    CHECK(gsq_fmt_ip(ip, 0x87C5C0EDu) == 15);
    CHECK(strcmp(ip, "135.197.192.237") == 0);
    CHECK(gsq_fmt_ip(ip, 0) == 7 && strcmp(ip, "0.0.0.0") == 0);
    /* every octet value in every position, against printf */
    for (k = 0; k < 256; k++) {
        char want[16];
        uint32_t o = (uint32_t)k, o2 = (uint32_t)(255 - k), o3 = (uint32_t)((k * 7) & 255);
        int n = snprintf(want, sizeof want, "%u.%u.%u.%u", o, o2, o3, o % 10u);
        CHECK(gsq_fmt_ip(ip, o << 24 | o2 << 16 | o3 << 8 | (o % 10u)) == (size_t)n);
        CHECK(strcmp(ip, want) == 0);
    }
    /* integers at and around every power of ten, and the extremes, against printf */
    {
        uint64_t p10 = 1;
        for (k = 0; k < 20; k++, p10 *= 10) {
            uint64_t cases[3] = {p10 - 1, p10, p10 + 1};
            for (int c = 0; c < 3; c++) {
                char want[24];
                size_t n;
                gsq_buf_reset(&b);
                v.u = cases[c];
                gsq_fmt_text(&b, GSQ_T_ULLONG, &v);
                snprintf(want, sizeof want, "%llu", (unsigned long long)cases[c]);
                CHECK(strcmp(gsq_buf_str(&b), want) == 0);
                char raw[24];
                n = gsq_fmt_text_raw(raw, GSQ_T_ULLONG, &v);
                CHECK(n == strlen(want) && memcmp(raw, want, n) == 0);
            }
        }
        v.u = UINT64_MAX;
        gsq_buf_reset(&b);
        gsq_fmt_text(&b, GSQ_T_ULLONG, &v);
        CHECK(strcmp(gsq_buf_str(&b), "18446744073709551615") == 0);
        v.i = INT64_MIN;
        gsq_buf_reset(&b);
        gsq_fmt_text(&b, GSQ_T_LLONG, &v);
        CHECK(strcmp(gsq_buf_str(&b), "-9223372036854775808") == 0);
        gsq_buf_reset(&b);
    }
    gsq_fmt_ipv6(ip6, &a);
    CHECK(strcmp(ip6, "0011:2233:4455:6677:8899:aabb:ccdd:eeff") == 0);

    v.f = 1.0 / 3.0;
    gsq_fmt_text(&b, GSQ_T_FLOAT, &v);
    CHECK(strcmp(gsq_buf_str(&b), "0.333333") == 0);
    gsq_buf_reset(&b);
    gsq_fmt_json(&b, GSQ_T_FLOAT, &v);
    CHECK(strcmp(gsq_buf_str(&b), "0.3333333333333333") == 0); /* shortest round trip */
    gsq_buf_reset(&b);
    v.f = 433.02;
    gsq_fmt_json(&b, GSQ_T_FLOAT, &v);
    CHECK(strcmp(gsq_buf_str(&b), "433.02") == 0);
    gsq_buf_reset(&b);
    v.f = 0.1 + 0.2; /* needs all 17 digits to read back */
    gsq_fmt_json(&b, GSQ_T_FLOAT, &v);
    CHECK(strcmp(gsq_buf_str(&b), "0.30000000000000004") == 0);
    gsq_buf_reset(&b);
    v.f = INFINITY;
    gsq_fmt_json(&b, GSQ_T_FLOAT, &v);
    CHECK(strcmp(gsq_buf_str(&b), "null") == 0);
    gsq_buf_reset(&b);
    v.i = -5;
    gsq_fmt_text(&b, GSQ_T_LLONG, &v);
    v.u = 1;
    gsq_fmt_text(&b, GSQ_T_BOOL, &v);
    v.u = 0;
    gsq_fmt_json(&b, GSQ_T_BOOL, &v);
    CHECK(strcmp(gsq_buf_str(&b), "-5TRUEfalse") == 0);
    gsq_buf_reset(&b);

    /* JSON strings: quote, backslash, control, valid and invalid UTF-8 */
    gsq_buf_json_str(&b, S("a\"b\\c\x01\n\xc3\xa9\xff\xed\xa0\x80z"));
    CHECK(strcmp(gsq_buf_str(&b),
                 "\"a\\\"b\\\\c\\u0001\\u000a\xc3\xa9\\u00ff\\u00ed\\u00a0\\u0080z\"") == 0);
    gsq_buf_free(&b);
}

static gsq_str lit(const char *s)
{
    return gsq_str_lit(s, (uint32_t)strlen(s));
}

static void test_funcs(void)
{
    gsq_regex re;
    char err[128];
    gsq_str m;
    const char subj[] = "ab\0cd123ef45";
    gsq_str nul_subject = gsq_str_lit(subj, sizeof subj - 1);

    CHECK(gsq_fn_str_match_start(lit("GET /"), lit("GET")) == 1);
    CHECK(gsq_fn_str_match_start(lit("GE"), lit("GET")) == 0);
    CHECK(gsq_fn_str_match_start(lit("x"), lit("")) == 1);
    CHECK(gsq_fn_str_exists_substr(lit("hello world"), lit("o w")) == 1);
    CHECK(gsq_fn_str_exists_substr(lit("hello world"), lit("wold")) == 0);
    CHECK(gsq_fn_str_exists_substr(lit("aaab"), lit("aab")) == 1);
    CHECK(gsq_fn_str_exists_substr(lit(""), lit("")) == 1);
    CHECK(gsq_fn_str_exists_substr(lit("abc"), lit("")) == 1);
    CHECK(gsq_fn_str_exists_substr(lit("ab"), lit("abc")) == 0);
    CHECK(gsq_fn_str_match_offset(2, lit("xxGET"), lit("GET")) == 1);
    CHECK(gsq_fn_str_match_offset(1, lit("xxGET"), lit("GET")) == 0);
    CHECK(gsq_fn_str_match_offset(4, lit("xxGET"), lit("GET")) == 0);
    CHECK(gsq_fn_str_match_offset(9, lit("xxGET"), lit("")) == 0);
    CHECK(gsq_fn_str_truncate(lit("abcdef"), 3).len == 3);
    CHECK(gsq_fn_str_truncate(lit("ab"), 3).len == 2);
    CHECK(gsq_fn_str_length(lit("abcd")) == 4);
    CHECK(gsq_fn_strtoi(lit("123abc")) == 123);
    CHECK(gsq_fn_strtoi(lit("  42")) == 42);
    CHECK(gsq_fn_strtoi(lit("x")) == 0);
    CHECK(gsq_fn_strtoi(lit("-1")) == 4294967295u);
    CHECK(gsq_fn_strtoip(lit("10.1.2.3")) == 0x0A010203u);
    CHECK(gsq_fn_strtoip(lit("10.1.2")) == 0);
    CHECK(gsq_fn_umin_uu(3, 9) == 3 && gsq_fn_umax_uu(3, 9) == 9);
    /* the def-file families: exact comparisons, edge values */
    CHECK(gsq_fn_lmin_su(-1, 4294967295u) == -1);
    CHECK(gsq_fn_ullmax_su(INT64_MIN, 0) == 0);
    CHECK(gsq_fn_ullmax_fu(1e300, 1) == UINT64_MAX);
    CHECK(gsq_fn_ullmin_fu(-1e300, 1) == 0);
    CHECK(gsq_fn_lmax_fs(NAN, 5) == 0);              /* NaN first: kept, as 0 */
    CHECK(gsq_fn_lmax_sf(5, NAN) == 5);
    CHECK(gsq_fn_ge_fu(9007199254740992.0, 9007199254740993ull) == 0);
    CHECK(gsq_fn_le_fu(9007199254740992.0, 9007199254740993ull) == 1);
    CHECK(gsq_fn_eq_ff(NAN, NAN) == 0 && gsq_fn_geq_sf(-1, -1.5) == 1);
    CHECK(gsq_fn_lmin_uu(4294967295u, 4294967295u) == -1);
    CHECK(gsq_f2i32(-2147483648.9) == INT32_MIN && gsq_f2i32(3e9) == INT32_MAX);
    CHECK(gsq_f2u32(-0.5) == 0 && gsq_f2i64(-1e30) == INT64_MIN);
    CHECK(gsq_fn_endian_swap_ui(0x01020304u) == 0x04030201u);
    CHECK(gsq_fn_str_compare(lit("ab"), lit("ab")) == 1);
    CHECK(gsq_fn_str_compare(lit("ab"), lit("abc")) == 0);
    CHECK(gsq_fn_byte_match_offset(1, 'b', lit("ab")) == 1);
    CHECK(gsq_fn_byte_match_offset(2, 'b', lit("ab")) == 0);
    CHECK(gsq_fn_byte_match_offset(UINT32_MAX, 0, lit("")) == 0);
    CHECK(gsq_fn_str_suffix(lit("abcdef"), 2).len == 2);
    CHECK(gsq_fn_str_suffix(lit(""), UINT32_MAX).len == 0);
    m = gsq_fn_get_list_entry(lit("a,bb,,c"), lit(","), 1);
    CHECK(m.len == 2 && memcmp(m.p, "bb", 2) == 0);
    CHECK(gsq_fn_get_list_entry(lit("a,bb,,c"), lit(","), 2).len == 0);
    CHECK(gsq_fn_get_list_entry(lit("a,bb,,c"), lit(","), UINT32_MAX).len == 0);
    CHECK(gsq_fn_get_list_entry(lit(""), lit(""), 0).len == 0);
    CHECK(gsq_fn_sum_uint_in_list(lit("34|45|56"), lit("|")) == 135);
    CHECK(gsq_fn_sum_uint_in_list(lit("18446744073709551615|1"), lit("|")) == 4294967296LL);
    CHECK(gsq_fn_string_hash(lit("")) == 2166136261u && gsq_fn_string_hash(lit("a")) == 0xe40c292cu);
    CHECK(gsq_fn_string_hash_long(lit("a")) == 0xaf63dc4c8601ec8cull);
    CHECK(gsq_fn_to_llong(lit(" -9223372036854775808")) == INT64_MIN);
    CHECK(gsq_fn_to_llong(lit("99999999999999999999")) == INT64_MAX);
    CHECK(gsq_fn_to_llong(lit("-x")) == 0);

    CHECK(gsq_regex_compile(&re, "[0-9]+", 6, err, sizeof err) == 0);
    m = gsq_fn_str_extract_regex(&re, nul_subject);
    CHECK(m.len == 3 && memcmp(m.p, "123", 3) == 0 && m.p == subj + 5);
    CHECK(gsq_fn_str_regex_match(&re, nul_subject) == 1);
    CHECK(gsq_fn_str_regex_match(&re, lit("none here")) == 0);
    m = gsq_fn_str_extract_regex(&re, lit("none here"));
    CHECK(m.len == 0);
    /* a long subject grows the scratch buffer */
    {
        static char big[10000];
        memset(big, 'x', sizeof big);
        memcpy(big + 9990, "777", 3);
        m = gsq_fn_str_extract_regex(&re, gsq_str_lit(big, sizeof big));
        CHECK(m.len == 3 && m.p == big + 9990);
    }
    gsq_regex_free(&re);
    CHECK(gsq_regex_compile(&re, "a(b", 3, err, sizeof err) != 0 && err[0] != '\0');
    gsq_regex_free(&re);
    /* pattern given by length, not NUL-terminated */
    CHECK(gsq_regex_compile(&re, "^GETXXX", 4, err, sizeof err) == 0);
    CHECK(gsq_fn_str_regex_match(&re, lit("GET /")) == 1);
    CHECK(gsq_fn_str_regex_match(&re, lit(" GET")) == 0);
    gsq_regex_free(&re);
}

static void test_ring_and_queue(void)
{
    gsq_ring r;
    gsq_tuple_queue q;
    void *p;
    int kind, i, n;
    const void *tup;
    uint32_t len;

    CHECK(gsq_ring_init(&r, 64, 3) == 0);
    p = gsq_ring_reserve(&r, 20);
    CHECK(p != NULL && ((uintptr_t)p & 7) == 0);
    gsq_ring_commit(&r, 20);
    p = gsq_ring_reserve(&r, 48); /* 24 + 48 > 64 */
    CHECK(p == NULL);
    p = gsq_ring_reserve(&r, 30);
    CHECK(p != NULL);
    gsq_ring_commit(&r, 10);
    CHECK(r.n_recs == 2 && r.used == 40);
    gsq_ring_release(&r);
    p = gsq_ring_reserve(&r, 1000); /* empty ring: grows */
    CHECK(p != NULL && r.cap >= 1000);
    gsq_ring_commit(&r, 1000);
    CHECK(r.high_water >= 1000);
    gsq_ring_free(&r);

    gsq_tq_init(&q);
    for (i = 0; i < 5000; i++) {
        uint8_t *t = gsq_tq_reserve(&q, (uint32_t)(i % 37));
        CHECK(t != NULL && ((uintptr_t)t & 7) == 0);
        memset(t, i & 255, (size_t)(i % 37));
        gsq_tq_commit(&q, i % 3, (uint32_t)(i % 37));
        if (i % 100 == 99) { /* pop half, then keep pushing: compaction */
            for (n = 0; n < 50; n++)
                CHECK(gsq_tq_pop(&q, &kind, &tup, &len) == 1);
        }
    }
    n = 0;
    while (gsq_tq_pop(&q, &kind, &tup, &len))
        n++;
    CHECK(n == 5000 - 50 * 50);
    CHECK(q.hw_entries >= 2500 && q.pushed == 5000 && q.head == 0 && q.tail == 0);
    gsq_tq_free(&q);
}

/* gsq_compress_columns and each instruction set's kernel the CPU has,
 * against packing by gsq_keep_to_sel: every column size, row counts around
 * the 64-row groups and the 1024-row pieces, outputs that start unaligned,
 * with a guard byte right after the kept values (a kernel writing past
 * them changes it). */
static void test_column_compress(void)
{
    enum { MAXN = 3000 };
    static uint8_t keep[MAXN], src[3][MAXN * 8], out[3][MAXN * 8 + 80], want[3][MAXN * 8];
    static uint32_t sel[MAXN];
    const uint32_t sizes[3] = {2, 4, 8};
    const uint32_t counts[] = {0, 1, 63, 64, 65, 1000, 1024, 1025, 2047, MAXN};
    const int isas[3] = {GSQ_COMPRESS_AVX512 | GSQ_COMPRESS_AVX2, GSQ_COMPRESS_AVX512,
                         GSQ_COMPRESS_AVX2};
    uint32_t seed = 12345u, ci, c, j, density, shift, ii;
    int ran[3] = {0, 0, 0};
    for (c = 0; c < 3; c++)
        for (j = 0; j < MAXN * 8; j++) {
            seed = seed * 1103515245u + 12345u;
            src[c][j] = (uint8_t)(seed >> 16);
        }
    for (density = 0; density <= 4; density++)
        for (ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
            for (shift = 0; shift < 2; shift++) {
                uint32_t n = counts[ci], m;
                void *dst[3];
                const void *srcs[3];
                int64_t got;
                for (j = 0; j < n; j++) {
                    seed = seed * 1103515245u + 12345u;
                    keep[j] = (uint8_t)((seed >> 16) % 4 < density); /* 0: none .. 4: all */
                }
                m = gsq_keep_to_sel(keep, n, 0, sel);
                for (j = 0, got = 0; j < n; j++)
                    got += keep[j];
                CHECK((int64_t)m == got);
                for (c = 0; c < 3; c++) {
                    for (j = 0; j < m; j++)
                        memcpy(want[c] + (size_t)j * sizes[c], src[c] + (size_t)sel[j] * sizes[c],
                               sizes[c]);
                    dst[c] = out[c] + shift * sizes[c]; /* unaligned starts too */
                    srcs[c] = src[c];
                }
                for (ii = 0; ii < 3; ii++) {
                    for (c = 0; c < 3; c++)
                        memset(out[c], 0xAB, sizeof out[c]);
                    got = gsq_compress_columns(isas[ii], dst, srcs, sizes, 3, keep, n);
                    if (got < 0) /* the CPU lacks it: the caller gathers */
                        continue;
                    ran[ii]++;
                    CHECK(got == (int64_t)m);
                    for (c = 0; c < 3; c++) {
                        CHECK(memcmp(dst[c], want[c], (size_t)m * sizes[c]) == 0);
                        CHECK(((uint8_t *)dst[c])[(size_t)m * sizes[c]] == 0xAB);
                        CHECK(shift == 0 || out[c][0] == 0xAB);
                    }
                }
            }
    printf("column compress: %d / %d / %d kernel runs (chosen / AVX-512 / AVX2)\n", ran[0],
           ran[1], ran[2]);
}

int main(void)
{
    test_parse_ints();
    test_parse_other();
    test_format();
    test_funcs();
    test_ring_and_queue();
    test_column_compress();
    if (failures) {
        printf("%d failures\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
