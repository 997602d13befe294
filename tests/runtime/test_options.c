/* Unit tests of the run options' table and dispatch (runtime_c/run/options.c,
 * option_table.h): for each kind of value -- bool, words, integer in a
 * range, seconds, real, character, text, a form of its own, per-interface
 * keys -- a value accepted is stored where the run reads it, and one
 * refused leaves the run as it was with the refusal's message; unknown
 * keys and a missing interface name are refused.  Linked with the runtime
 * objects; prints one line per failure and "N passed, M failed". */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gsq_internal.h"
#include "unit_check.h"

const gsq_queryset_def gsq_queryset = {0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, NULL};

/* key=value is accepted */
static int ok(gsq_run *r, const char *key, const char *value)
{
    int rc = gsqlc_set_option(r, key, value);
    if (rc != 0)
        printf("  %s=%s refused: %s\n", key, value, gsqlc_error(r));
    return rc == 0;
}

/* key=value is refused with exactly `message` */
static int refused(gsq_run *r, const char *key, const char *value, const char *message)
{
    int rc = gsqlc_set_option(r, key, value);
    const char *e = gsqlc_error(r);
    if (rc == 0 || !e || strcmp(e, message) != 0)
        printf("  %s=%s: rc %d, error '%s', expected '%s'\n", key, value, rc, e ? e : "",
               message);
    return rc != 0 && e && strcmp(e, message) == 0;
}

/* refused, with an error that starts with `start` */
static int refused_with(gsq_run *r, const char *key, const char *value, const char *start)
{
    int rc = gsqlc_set_option(r, key, value);
    const char *e = gsqlc_error(r);
    int good = rc != 0 && e && strncmp(e, start, strlen(start)) == 0;
    if (!good)
        printf("  %s=%s: rc %d, error '%s', expected '%s...'\n", key, value, rc, e ? e : "",
               start);
    return good;
}

static void test_bool(gsq_run *r)
{
    CHECK(ok(r, "csv_strict", "1") && r->csv_strict == 1);
    CHECK(ok(r, "csv_strict", "false") && r->csv_strict == 0);
    CHECK(ok(r, "arrow_flush", " TRUE ") && r->arrow_flush == 1);
    CHECK(refused(r, "arrow_flush", "yes", "arrow_flush must be 0 or 1, got 'yes'"));
    CHECK(r->arrow_flush == 1);
    CHECK(refused(r, "final_heartbeat", "", "final_heartbeat must be 0 or 1, got ''"));
}

static void test_words(gsq_run *r)
{
    CHECK(ok(r, "columnar", "off") && r->columnar == 0);
    CHECK(ok(r, "columnar", "auto") && r->columnar == 1);
    CHECK(refused(r, "columnar", "on", "columnar must be auto or off, got 'on'"));
    CHECK(refused(r, "columnar", "AUTO", "columnar must be auto or off, got 'AUTO'"));
    CHECK(ok(r, "hb_estimate", "adaptive") && r->hb_estimate == GSQ_EST_ADAPTIVE);
    CHECK(ok(r, "pcap_reader", "libpcap") && r->pcap_reader == GSQ_PCAP_READER_LIBPCAP);
    CHECK(ok(r, "ip_format", "int") && r->ip_int == 1);
    CHECK(refused(r, "ip_format", "hex", "ip_format must be text or int, got 'hex'"));
    CHECK(r->ip_int == 1);
    /* clock: its words, or fixed:SECONDS */
    CHECK(ok(r, "clock", "data") && r->clock_mode == GSQ_CLOCK_DATA);
    CHECK(ok(r, "clock", "fixed:42") && r->clock_mode == GSQ_CLOCK_FIXED && r->clock_fixed == 42);
    CHECK(refused(r, "clock", "fixed:SECONDS",
                  "clock must be auto, wall, data or fixed:SECONDS, got 'fixed:SECONDS'"));
    CHECK(refused(r, "clock", "fixed:4294967296",
                  "clock must be auto, wall, data or fixed:SECONDS, got 'fixed:4294967296'"));
    CHECK(r->clock_mode == GSQ_CLOCK_FIXED && r->clock_fixed == 42);
}

static void test_uint(gsq_run *r)
{
    CHECK(ok(r, "batch", "1048576") && r->batch == 1048576 && r->batch_given);
    CHECK(refused(r, "batch", "1048577", "batch must be an integer from 1 to 1048576, got '1048577'"));
    CHECK(refused(r, "batch", "0", "batch must be an integer from 1 to 1048576, got '0'"));
    CHECK(r->batch == 1048576);
    CHECK(ok(r, "stall_intervals", "0x10") && r->stall_intervals == 16);
    CHECK(refused(r, "stall_intervals", "-1",
                  "stall_intervals must be an integer from 1 to 1000000, got '-1'"));
    CHECK(ok(r, "hb_window", "4294967295") && r->hb_window == 4294967295u);
    CHECK(refused(r, "hb_window", "4294967296",
                  "hb_window must be an integer >= 1 (records), got '4294967296'"));
    /* a 64-bit member */
    CHECK(ok(r, "max_groups", "18446744073709551615") && r->max_groups == UINT64_MAX);
    CHECK(refused(r, "max_groups", "18446744073709551616",
                  "max_groups must be a positive integer, got '18446744073709551616'"));
    CHECK(refused(r, "max_groups", "", "max_groups must be a positive integer, got ''"));
}

static void test_seconds(gsq_run *r)
{
    CHECK(ok(r, "hb_horizon", "2.5") && r->hb_horizon_usec == 2500000);
    CHECK(refused(r, "hb_horizon", "0.0000001",
                  "hb_horizon must be a number of seconds > 0 (at most 1000000000), got '0.0000001'"));
    CHECK(ok(r, "hb_timeout", "0.0000001") && r->hb_timeout_usec == 0);
    CHECK(ok(r, "hb_timeout", "1e3") && r->hb_timeout_usec == 1000000000u);
    CHECK(refused(r, "hb_timeout", "1e10", "hb_timeout must be a number of seconds >= 0 (0: none) "
                                          "(at most 1000000000), got '1e10'"));
    CHECK(r->hb_timeout_usec == 1000000000u);
    CHECK(ok(r, "heartbeat_interval", "off") && r->hb_interval_usec == 0);
    CHECK(ok(r, "heartbeat_interval", "0.25") && r->hb_interval_usec == 250000);
    CHECK(refused(r, "heartbeat_interval", "-1", "heartbeat_interval must not be negative, got "
                                                "'-1' (0 or off disables heartbeats)"));
    CHECK(r->hb_interval_usec == 250000);
}

static void test_real(gsq_run *r)
{
    CHECK(ok(r, "hb_alpha", "0.25") && fabs(r->hb_alpha - 0.25) < 1e-12);
    CHECK(ok(r, "hb_alpha", "1") && r->hb_alpha == 1.0);
    CHECK(refused(r, "hb_alpha", "1.5", "hb_alpha must be a number from 0 to 1, got '1.5'"));
    CHECK(refused(r, "hb_alpha", "-0.5", "hb_alpha must be a number from 0 to 1, got '-0.5'"));
    CHECK(r->hb_alpha == 1.0);
}

static void test_char_and_text(gsq_run *r)
{
    CHECK(ok(r, "csv_separator", "tab") && r->csv_sep == '\t');
    CHECK(ok(r, "csv_separator", ";") && r->csv_sep == ';');
    CHECK(refused(r, "csv_separator", "ab", "csv_separator must be one character, got 'ab'"));
    CHECK(refused(r, "csv_separator", "\"", "csv_separator cannot be a quote or a line break"));
    CHECK(r->csv_sep == ';');
    CHECK(refused(r, "trace", "", "trace needs a file path"));
    CHECK(ok(r, "trace", "/tmp/x.jsonl") && strcmp(r->trace_path, "/tmp/x.jsonl") == 0);
}

static void test_per_interface(gsq_run *r)
{
    const gsq_iface_time *t;
    CHECK(ok(r, "max_skew:a", "0.5") && r->n_skews == 1 && r->skews[0].usec == 500000);
    CHECK(ok(r, "max_skew:a", "2") && r->n_skews == 1 && r->skews[0].usec == 2000000);
    CHECK(refused(r, "max_skew:", "1", "max_skew needs an interface name: max_skew:NAME"));
    CHECK(refused(r, "latency:a", "-1",
                  "latency:a must be a number of seconds >= 0 (e.g. 2 or 0.5), got '-1'"));
    CHECK(refused(r, "out_of_order:a", "1e10",
                  "out_of_order:a '1e10' is too large (at most 1000000000 seconds)"));
    CHECK(ok(r, "time_unit:a", "ms") && ok(r, "recording:a", "1") && ok(r, "arrival:a", "3:ullong") &&
          ok(r, "pcap_range:a", "24:2400"));
    t = gsq_iface_settings(r, "a");
    CHECK(t && t->unit_ns == 1000000 && t->recording == 1 && t->arrival_pos == 3 &&
          t->arrival_type == GSQ_T_ULLONG && t->has_range && t->range_end == 2400);
    CHECK(refused(r, "time_unit:a", "min", "time_unit:a must be s, ms, us or ns, got 'min'"));
    CHECK(refused(r, "recording:", "1", "recording needs an interface name: recording:NAME"));
    CHECK(refused(r, "arrival:a", "0", "arrival:a must be a CSV position, optionally with a "
                                      "numeric type, time format and field name (e.g. 3, "
                                      "3:ullong or 3:ullong:iso8601:recv), got '0'"));
    /* with the field's time format and name; a form of three parts, an
     * unknown format or an empty name is refused and changes nothing */
    CHECK(ok(r, "arrival:a", "4:llong:epoch_ms:recv") && t->arrival_pos == 4 &&
          t->arrival_type == GSQ_T_LLONG && t->arrival_format == GSQ_TF_EPOCH_MS &&
          t->arrival_name && strcmp(t->arrival_name, "recv") == 0);
    CHECK(ok(r, "arrival:a", "5:uint:none:r2") && t->arrival_format == GSQ_TF_NONE &&
          strcmp(t->arrival_name, "r2") == 0);
    CHECK(refused_with(r, "arrival:a", "5:uint:iso8601", "arrival:a must be a CSV position"));
    CHECK(refused_with(r, "arrival:a", "5:uint:weekly:r", "arrival:a must be a CSV position"));
    CHECK(refused_with(r, "arrival:a", "5:uint:iso8601:", "arrival:a must be a CSV position"));
    CHECK(t->arrival_pos == 5 && strcmp(t->arrival_name, "r2") == 0);
    CHECK(ok(r, "arrival:a", "3:ullong") && t->arrival_name == NULL);
    /* csv_header:NAME, a boolean per interface */
    CHECK(ok(r, "csv_header:a", "1") && t->csv_header == 1);
    CHECK(ok(r, "csv_header:a", "false") && t->csv_header == 0);
    CHECK(refused(r, "csv_header:a", "maybe", "csv_header:a must be 0 or 1, got 'maybe'"));
    CHECK(refused(r, "csv_header:", "1", "csv_header needs an interface name: csv_header:NAME"));
    CHECK(refused(r, "pcap_range:a", "9:3",
                  "pcap_range:a must be START:END (byte offsets, START <= END), got '9:3'"));
    CHECK(t->unit_ns == 1000000 && t->range_end == 2400);
    CHECK(ok(r, "skew:a:b", "1,2;3,0.5") && r->n_skew_decls == 1);
    CHECK(refused(r, "skew:a", "1,2", "skew needs two interface names: skew:FROM:TO, got 'skew:a'"));
    CHECK(refused(r, "skew:a:b", "1", "skew:a:b must be AFTER,BOUND seconds >= 0 (wall-clock "
                                     "delay, application-time bound), several separated by "
                                     "';', got '1'"));
    CHECK(ok(r, "prop:a:Dir", "in"));
    CHECK(refused(r, "prop:x", "1", "option 'prop:x': expected prop:INTERFACE:PROPERTY"));
}

static void test_keys(gsq_run *r)
{
    /* a plain name matches whole; a per-interface prefix only with its ':'.
     * The refusal lists the table's names in its order, keys in their form. */
    const char *e;
    CHECK(gsqlc_set_option(r, "clock:x", "wall") != 0);
    e = gsqlc_error(r);
    CHECK(strncmp(e, "unknown option 'clock:x' (known: csv_separator, csv_strict, clock, batch, ",
                  74) == 0);
    CHECK(strstr(e, ", max_skew:NAME, out_of_order:NAME, latency:NAME, skew:FROM:TO, ") != NULL);
    CHECK(strlen(e) > 37 &&
          strcmp(e + strlen(e) - 37, ", prop:NAME:PROPERTY, recording:NAME)") == 0);
    CHECK(gsqlc_set_option(r, "max_skew", "1") != 0 &&
          strncmp(gsqlc_error(r), "unknown option 'max_skew' (known: ", 34) == 0);
    CHECK(gsqlc_set_option(r, "csv_strict", NULL) != 0 &&
          strcmp(gsqlc_error(r), "option name and value must not be NULL") == 0);
}

int main(void)
{
    gsq_run *r = gsqlc_create();
    if (!r)
        return 2;
    test_bool(r);
    test_words(r);
    test_uint(r);
    test_seconds(r);
    test_real(r);
    test_char_and_text(r);
    test_per_interface(r);
    test_keys(r);
    gsqlc_destroy(r);
    return check_report();
}
