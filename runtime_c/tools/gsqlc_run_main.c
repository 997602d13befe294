/*
 * gsqlc-run -- the stand-alone runner built beside every query-set library.
 *
 *   gsqlc-run --source NAME=URI [...] --output QUERY [...] [--format pipe|csv|jsonl|gdat]
 *             [--clock auto|wall|data|fixed:T] [--csv-separator C] [--csv-strict]
 *             [--param NAME=VALUE] [--member SET=IFACE] [--option KEY=VALUE] [--stats]
 *
 * Interface sets, as the Python CLI: a NAME given to several --source
 * options is a set of members NAME.0, NAME.1, ...; --member SET=IFACE makes
 * interface IFACE (bound by its own --source) a member of SET.  The sets of
 * the --interfaces file given to `gsqlc compile` (gsqlc_run_sets, generated
 * runner_sets.c) apply to a set the command line does not define.
 *
 * --option sets any runtime option of gsqlc_set_option (gsq_runtime.h),
 * e.g. --option out_of_order:eth0=2, --option hb_estimate=adaptive,
 * --option time_unit:a=ms or --option arrival:a=4:ullong.
 *
 * It drives the library through the same exported ABI as the Python CLI
 * (gsqlc_create ... gsqlc_run), so a compiled query set runs without Python,
 * e.g. under a debugger or the sanitizers.  Exit status: 0 ok, 2 usage
 * error, 1 run-time failure.
 *
 * Signals are the program's business, not the library's: SIGINT and SIGTERM
 * end the run gracefully through gsqlc_cancel (groups flushed, output
 * written), and a second one acts as usual (SA_RESETHAND).
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsq_runtime.h"

/* Default interface sets (generated runner_sets.c): pairs of set and member
 * names, then NULL. */
extern const char *const gsqlc_run_sets[];

#define MAX_ARGS 256

/* The run a signal cancels: set once before gsqlc_run, read by the handler
 * (gsqlc_cancel is async-signal-safe). */
static gsq_run *volatile the_run;

static void on_stop_signal(int sig)
{
    (void)sig;
    if (the_run)
        gsqlc_cancel(the_run);
}

static void handle_stop_signals(gsq_run *r)
{
    struct sigaction sa;
    the_run = r;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = (int)SA_RESETHAND;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static int usage(const char *msg)
{
    fprintf(stderr, "gsqlc-run: %s\n"
                    "usage: gsqlc-run --source NAME=URI [...] --output QUERY [...] "
                    "[--format pipe|csv|jsonl|gdat] [--clock auto|wall|data|fixed:T] "
                    "[--csv-separator C] [--csv-strict] [--param NAME=VALUE] "
                    "[--member SET=IFACE] [--option KEY=VALUE] [--stats]\n",
            msg);
    return 2;
}

/* Splits "NAME=VALUE" in place; NULL when there is no '='. */
static char *split_eq(char *arg)
{
    char *eq = strchr(arg, '=');
    if (!eq)
        return NULL;
    *eq = '\0';
    return eq + 1;
}

/* The sources and memberships of the command line, then the default sets.
 * 0, or 2 after printing the error. */
static int bind_all(gsq_run *r, char **names, char **uris, int n, char **sets, char **members,
                    int n_members)
{
    char member[512];
    int i, j;
    for (i = 0; i < n; i++) {
        int k = 0, idx = 0;
        for (j = 0; j < n; j++) {
            if (strcmp(names[j], names[i]) == 0) {
                if (j < i)
                    idx++;
                k++;
            }
        }
        if (k > 1) {
            snprintf(member, sizeof member, "%s.%d", names[i], idx);
            if (gsqlc_bind_source(r, member, uris[i]) || gsqlc_add_set_member(r, names[i], member))
                goto fail;
        } else if (gsqlc_bind_source(r, names[i], uris[i])) {
            goto fail;
        }
    }
    for (i = 0; i < n_members; i++)
        if (gsqlc_add_set_member(r, sets[i], members[i]))
            goto fail;
    for (i = 0; gsqlc_run_sets[i] && gsqlc_run_sets[i + 1]; i += 2) {
        const char *set = gsqlc_run_sets[i];
        int defined = 0;
        for (j = 0; j < n_members; j++)
            defined |= strcmp(sets[j], set) == 0;
        for (j = 0; j < n; j++) /* a repeated --source NAME defines set NAME */
            defined |= strcmp(names[j], set) == 0;
        if (!defined && gsqlc_add_set_member(r, set, gsqlc_run_sets[i + 1]))
            goto fail;
    }
    return 0;
fail:
    fprintf(stderr, "gsqlc-run: %s\n", gsqlc_error(r));
    return 2;
}

int main(int argc, char **argv)
{
    char *src_names[MAX_ARGS], *src_uris[MAX_ARGS], *sets[MAX_ARGS], *members[MAX_ARGS];
    int n_src = 0, n_members = 0;
    gsq_run *r = gsqlc_create();
    const char *format = "pipe";
    const char *outputs[64];
    int n_outputs = 0, stats = 0, rc;

    if (!r) {
        fprintf(stderr, "gsqlc-run: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--stats")) {
            stats = 1;
            continue;
        }
        if (!strcmp(a, "--csv-strict")) {
            gsqlc_set_option(r, "csv_strict", "1");
            continue;
        }
        if (!v) {
            rc = usage("missing value after an option");
            goto out;
        }
        i++;
        if (!strcmp(a, "--option")) {
            char *key = argv[i];
            char *val = split_eq(key);
            if (!val) {
                rc = usage("expected --option KEY=VALUE");
                goto out;
            }
            if (gsqlc_set_option(r, key, val)) {
                fprintf(stderr, "gsqlc-run: %s\n", gsqlc_error(r));
                rc = 2;
                goto out;
            }
        } else if (!strcmp(a, "--source") || !strcmp(a, "--param") || !strcmp(a, "--member")) {
            char *name = argv[i];
            char *val = split_eq(name);
            if (!val) {
                rc = usage("expected NAME=VALUE");
                goto out;
            }
            if (a[2] != 'p' && (n_src == MAX_ARGS || n_members == MAX_ARGS)) {
                rc = usage("too many --source or --member options");
                goto out;
            }
            if (a[2] == 's') {
                src_names[n_src] = name;
                src_uris[n_src++] = val;
            } else if (a[2] == 'm') {
                sets[n_members] = name;
                members[n_members++] = val;
            } else if (gsqlc_set_param(r, name, val)) {
                fprintf(stderr, "gsqlc-run: %s\n", gsqlc_error(r));
                rc = 2;
                goto out;
            }
        } else if (!strcmp(a, "--output")) {
            if (n_outputs == 64) {
                rc = usage("too many --output options");
                goto out;
            }
            outputs[n_outputs++] = v;
        } else if (!strcmp(a, "--format")) {
            format = v;
        } else if (!strcmp(a, "--clock") || !strcmp(a, "--csv-separator")) {
            if (gsqlc_set_option(r, a[2] == 'c' && a[3] == 'l' ? "clock" : "csv_separator", v)) {
                fprintf(stderr, "gsqlc-run: %s\n", gsqlc_error(r));
                rc = 2;
                goto out;
            }
        } else {
            rc = usage("unknown option");
            goto out;
        }
    }
    if (n_outputs == 0) {
        rc = usage("no --output query given");
        goto out;
    }
    rc = bind_all(r, src_names, src_uris, n_src, sets, members, n_members);
    if (rc)
        goto out;
    for (int i = 0; i < n_outputs; i++) {
        if (gsqlc_add_sink(r, outputs[i], format, NULL)) {
            fprintf(stderr, "gsqlc-run: %s\n", gsqlc_error(r));
            rc = 2;
            goto out;
        }
    }
    handle_stop_signals(r);
    rc = gsqlc_run(r) ? 1 : 0;
    the_run = NULL; /* a late signal must not reach a destroyed run */
    fputs(gsqlc_report(r), stderr);
    if (rc)
        fprintf(stderr, "gsqlc-run: error: %s\n", gsqlc_error(r));
    if (stats)
        fprintf(stderr, "%s\n", gsqlc_stats_json(r));
out:
    gsqlc_destroy(r);
    return rc;
}
