/*
 * gsqlc-run -- the stand-alone runner built beside every query-set library.
 *
 *   gsqlc-run [--source NAME=URI ...] [--output QUERY ...] [OPTION ...]
 *
 * It takes the options of `gsqlc run` that concern running, from the one
 * table both read (run_flags.h: --help is made from it), and decides what
 * `gsqlc run` decides without them: the output is every query no other
 * reads (generated gsqlc_run_outputs), a URI given alone binds the default
 * interface, and a single interface NAME bound is the one the queries'
 * default interface reads.  It also takes its own: --member SET=IFACE
 * makes interface IFACE (bound by its own --source) a member of SET, and
 * --option KEY=VALUE sets any runtime option of gsqlc_set_option
 * (gsq_runtime.h), e.g. --option arrival:a=4:ullong.
 *
 * Interface sets, as the Python CLI: a NAME given to several --source
 * options is a set of members NAME.0, NAME.1, ...  The sets of the
 * --interfaces file given to `gsqlc compile` (gsqlc_run_sets, generated
 * runner_defaults.c) apply to a set the command line does not define.
 *
 * It drives the library through the same exported ABI as the Python CLI
 * (gsqlc_create ... gsqlc_run), so a compiled query set runs without Python,
 * e.g. under a debugger or the sanitizers.  Exit status, as `gsqlc run`'s:
 * 0 ok, 2 usage error, 1 run-time failure, 141 when the output's reader
 * went away (quietly).
 *
 * Signals are the program's business, not the library's: SIGINT and SIGTERM
 * end the run gracefully through gsqlc_cancel (groups flushed, output
 * written), and a second one acts as usual (SA_RESETHAND).  With
 * --param-file, SIGHUP has the file read again, as daemons do: a thread of
 * the runner waits for it (sigwait, the signal blocked elsewhere) and hands
 * each value that changed to gsqlc_change_param.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gsq_runtime.h"

/* What the generated runner_defaults.c says of its query set: the default
 * interface sets (pairs of set and member names, then NULL), the queries no
 * other reads (then NULL), and whether a query reads the default interface. */
extern const char *const gsqlc_run_sets[];
extern const char *const gsqlc_run_outputs[];
extern const int gsqlc_run_reads_default;

#define MAX_ARGS 256
#define EXIT_OUTPUT_CLOSED (128 + 13) /* SIGPIPE's number, as the shell reports it */
#define MAX_OUTPUTS 64
#define DEFAULT_IFACE "default"

/* ---- the flags (run_flags.h) ------------------------------------------- */

enum { ARG_NONE, ARG_VALUE, ARG_CHOICES };
enum { ACT_OPTION, ACT_SWITCH, ACT_KEYED, ACT_OWN };
enum {
    OWN_NONE,
    OWN_SOURCE,
    OWN_MEMBER,
    OWN_PARAM,
    OWN_PARAM_FILE,
    OWN_OUTPUT,
    OWN_OUTPUT_FILE,
    OWN_FORMAT,
    OWN_STATS,
    OWN_CSV_HEADER,
    OWN_HELP
};

typedef struct run_flag {
    const char *names; /* "--quiet -q" */
    int arg;
    const char *metavar;
    const char *const *choices;
    int action;
    const char *key;   /* the option, or a KEYED flag's prefix */
    const char *value; /* a SWITCH's */
    int own;
    int both; /* also a flag of `gsqlc run` */
    const char *help;
} run_flag;

#define VALUE(metavar) ARG_VALUE, metavar, NULL
#define CHOICES(...) ARG_CHOICES, NULL, (const char *const[]){__VA_ARGS__, NULL}
#define NO_ARG ARG_NONE, NULL, NULL
#define OPTION(key) ACT_OPTION, key, NULL, OWN_NONE
#define SWITCH(key, value) ACT_SWITCH, key, value, OWN_NONE
#define KEYED(prefix) ACT_KEYED, prefix, NULL, OWN_NONE
#define OWN(what) ACT_OWN, NULL, NULL, OWN_##what
#define BOTH 1
#define RUNNER 0
#define GSQ_RUN_FLAG(names, arg, action, faces, help) {names, arg, action, faces, help},
static const run_flag flags[] = {
#include "run_flags.h"
};
#undef GSQ_RUN_FLAG
#undef RUNNER
#undef BOTH
#undef OWN
#undef KEYED
#undef SWITCH
#undef OPTION
#undef NO_ARG
#undef CHOICES
#undef VALUE

#define N_FLAGS (sizeof flags / sizeof flags[0])

/* Whether `name` (n bytes) is one of the flag's names. */
static int flag_named(const run_flag *f, const char *name, size_t n)
{
    const char *p = f->names;
    while (*p) {
        size_t len = strcspn(p, " ");
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p += len;
        p += strspn(p, " ");
    }
    return 0;
}

static const run_flag *find_flag(const char *name, size_t n)
{
    for (size_t i = 0; i < N_FLAGS; i++)
        if (flag_named(&flags[i], name, n))
            return &flags[i];
    return NULL;
}

/* The flag's long name (its first), n bytes of it. */
static int long_name_len(const run_flag *f)
{
    return (int)strcspn(f->names, " ");
}

/* ---- help --------------------------------------------------------------- */

#define HELP_WIDTH 79
#define HELP_INDENT 26

/* `text` wrapped at HELP_WIDTH, `col` columns of the line already written
 * (at least `indent`), each further line indented by `indent`. */
static void print_wrapped(FILE *out, const char *text, int col, int indent)
{
    const char *p = text;
    while (*p) {
        size_t word = strcspn(p, " ");
        if (col > indent && col + 1 + (int)word > HELP_WIDTH) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fwrite(p, 1, word, out);
        col += (int)word;
        p += word;
        p += strspn(p, " ");
    }
    fputc('\n', out);
}

/* The flag's synopsis: "--format pipe|csv|jsonl|gdat", "--quiet, -q". */
static int print_synopsis(FILE *out, const run_flag *f)
{
    int col = 0;
    const char *p = f->names;
    while (*p) {
        int len = (int)strcspn(p, " ");
        col += fprintf(out, "%s%.*s", col ? ", " : "  ", len, p);
        p += len;
        p += strspn(p, " ");
    }
    if (f->arg == ARG_VALUE) {
        col += fprintf(out, " %s", f->metavar);
    } else if (f->arg == ARG_CHOICES) {
        for (int i = 0; f->choices[i]; i++)
            col += fprintf(out, "%c%s", i ? '|' : ' ', f->choices[i]);
    }
    return col;
}

static void print_help(FILE *out)
{
    fputs("usage: gsqlc-run [--source NAME=URI ...] [--output QUERY ...] [OPTION ...]\n\n", out);
    print_wrapped(out,
                  "Run the query set this program was built with (gsqlc compile --build), "
                  "without Python. It takes the options of gsqlc run that concern running, "
                  "and two of its own (--member, --option). Without --output it prints every "
                  "query no other reads; a --source URI given without a NAME binds the "
                  "default interface.",
                  0, 0);
    fputs("\noptions:\n", out);
    for (size_t i = 0; i < N_FLAGS; i++) {
        int col = print_synopsis(out, &flags[i]);
        if (col + 2 > HELP_INDENT)
            fprintf(out, "\n%*s", HELP_INDENT, "");
        else
            fprintf(out, "%*s", HELP_INDENT - col, "");
        print_wrapped(out, flags[i].help, HELP_INDENT, HELP_INDENT);
    }
    fputs("\n", out);
    print_wrapped(out,
                  "Exit status: 0 when the run ends (also when stopped by SIGINT or SIGTERM: "
                  "what was read is processed and flushed), 1 for a run-time failure, 2 for a "
                  "usage error, 141 when the output's reader went away (gsqlc-run ... | head).",
                  0, 0);
}

#ifdef __GNUC__
__attribute__((format(printf, 1, 2)))
#endif
static int usage(const char *fmt, ...)
{
    va_list ap;
    fputs("gsqlc-run: error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nusage: gsqlc-run [--source NAME=URI ...] [--output QUERY ...] [OPTION ...]"
          " (gsqlc-run --help lists the options)\n",
          stderr);
    return 2;
}

/* ---- signals ------------------------------------------------------------ */

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

/* ---- sources ------------------------------------------------------------ */

static const char *const uri_schemes[] = {"csv", "csvtcp", "gdat", "pcap", "pcap-live", NULL};

/* Whether text starts with a URI scheme and its ':'. */
static int has_scheme(const char *text)
{
    size_t n = strcspn(text, ":");
    if (!text[n])
        return 0;
    for (int i = 0; uri_schemes[i]; i++)
        if (strlen(uri_schemes[i]) == n && strncmp(text, uri_schemes[i], n) == 0)
            return 1;
    return 0;
}

/* A bound value as `gsqlc run` reads it: a URI as it is; "-" CSV on
 * standard input; a path a capture (pcap or pcapng magic number) or a GDAT
 * file by its first bytes, else CSV.  Written into buf (size n). */
static const char *source_uri(const char *value, char *buf, size_t n)
{
    static const unsigned char magic[][4] = {{0xd4, 0xc3, 0xb2, 0xa1}, {0xa1, 0xb2, 0xc3, 0xd4},
                                             {0x4d, 0x3c, 0xb2, 0xa1}, {0xa1, 0xb2, 0x3c, 0x4d},
                                             {0x0a, 0x0d, 0x0d, 0x0a}};
    unsigned char head[5] = {0};
    const char *scheme = "csv:";
    FILE *f;
    if (has_scheme(value))
        return value;
    if (strcmp(value, "-") == 0)
        return "csv:-";
    f = fopen(value, "rb");
    if (f) {
        size_t got = fread(head, 1, sizeof head, f);
        fclose(f);
        for (size_t i = 0; got >= 4 && i < sizeof magic / sizeof magic[0]; i++)
            if (memcmp(head, magic[i], 4) == 0)
                scheme = "pcap:";
        if (got == 5 && memcmp(head, "GDAT\n", 5) == 0)
            scheme = "gdat:";
    }
    snprintf(buf, n, "%s%s", scheme, value);
    return buf;
}

/* N of a live interface's URI option fanout=N (pcap-live:eth0?fanout=4):
 * 0 when it has none or N is no number from 2 to 64 (the option's own
 * check then refuses the value). */
static int uri_fanout(const char *uri)
{
    const char *q = strncmp(uri, "pcap-live:", 10) == 0 ? strchr(uri, '?') : NULL;
    while (q) {
        char *end;
        long v;
        q++;
        if (strncmp(q, "fanout=", 7) == 0) {
            v = strtol(q + 7, &end, 10);
            return (*end == '\0' || *end == '&') && v >= 2 && v <= 64 ? (int)v : 0;
        }
        q = strchr(q, '&');
    }
    return 0;
}

/* The command line's bindings. */
typedef struct bindings {
    char *names[MAX_ARGS], *uris[MAX_ARGS];
    int n;
    char *sets[MAX_ARGS], *members[MAX_ARGS];
    int n_members;
    int csv_header; /* --csv-header: every CSV source's first line names its columns */
} bindings;

static int defines_set(const bindings *b, const char *set)
{
    for (int j = 0; j < b->n_members; j++)
        if (strcmp(b->sets[j], set) == 0)
            return 1;
    for (int j = 0; j < b->n; j++) /* a repeated --source NAME defines set NAME */
        if (strcmp(b->names[j], set) == 0)
            return 1;
    return 0;
}

/* The member name of source i: NAME, or NAME.K when NAME is given K+1 or
 * more times (*count: how many). */
static const char *member_name(const bindings *b, int i, char *buf, size_t n, int *count)
{
    int k = 0, idx = 0;
    for (int j = 0; j < b->n; j++) {
        if (strcmp(b->names[j], b->names[i]) == 0) {
            if (j < i)
                idx++;
            k++;
        }
    }
    *count = k;
    if (k == 1)
        return b->names[i];
    snprintf(buf, n, "%s.%d", b->names[i], idx);
    return buf;
}

/* A CSV source's URI options (csv:PATH?header=1, csvtcp:HOST:PORT?header=0,
 * as compiler/gsqlc/runtime/bindings.py's uri_options reads them): the URI
 * without them in buf, *header 1 or 0 (-1: not given).  A csv: file whose
 * name holds the '?' is that file; other URIs have no options.  0, or 2
 * after printing the error. */
static int csv_uri_options(const char *uri, char *buf, size_t n, int *header)
{
    const char *colon = strchr(uri, ':'), *q;
    *header = -1;
    snprintf(buf, n, "%s", uri);
    if (!colon || !(q = strrchr(colon, '?')))
        return 0;
    int csv = (size_t)(colon - uri) == 3 && strncmp(uri, "csv", 3) == 0;
    int tcp = (size_t)(colon - uri) == 6 && strncmp(uri, "csvtcp", 6) == 0;
    if (!csv && !tcp)
        return 0;
    if (csv && access(colon + 1, F_OK) == 0)
        return 0;
    const char *opt = q + 1;
    if (strncmp(opt, "header=", 7) != 0) {
        fprintf(stderr, "gsqlc-run: error: --source %s: unknown source option '%s' after '?' "
                        "(a CSV source takes header=1)\n", uri, opt);
        return 2;
    }
    const char *v = opt + 7;
    if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"))
        *header = 1;
    else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no"))
        *header = 0;
    else {
        fprintf(stderr, "gsqlc-run: error: --source %s: header=%s: expected header=1 or "
                        "header=0\n", uri, v);
        return 2;
    }
    if ((size_t)(q - uri) < n)
        buf[q - uri] = '\0';
    return 0;
}

/* A live interface's URI options (pcap-live:IFACE?blocks=16&snaplen=128,
 * as bindings.py's live_uri_options reads them): each KEY=VALUE set as
 * option live_KEY:NAME of interface m; the URI in buf is cut before
 * them (any other URI is left as it is).  0, or 2 after printing the error. */
static int live_uri_options(gsq_run *r, const char *m, char *buf)
{
    char *q, *item, *save = NULL;
    if (strncmp(buf, "pcap-live:", 10) != 0 || !(q = strchr(buf, '?')))
        return 0;
    *q = '\0';
    for (item = strtok_r(q + 1, "&", &save); item; item = strtok_r(NULL, "&", &save)) {
        char key[600];
        char *eq = strchr(item, '=');
        if (!eq || (size_t)(eq - item) > 64) {
            fprintf(stderr, "gsqlc-run: error: --source %s: unknown source option '%s' after "
                            "'?' (a live interface takes snaplen=, promisc=, block_size=, "
                            "blocks=, block_timeout=, kernel_filter=, fanout=, xdp=, "
                            "xdp_drop=)\n", buf, item);
            return 2;
        }
        *eq = '\0';
        snprintf(key, sizeof key, "live_%s:%s", item, m);
        if (strcmp(item, "snaplen") && strcmp(item, "promisc") && strcmp(item, "block_size") &&
            strcmp(item, "blocks") && strcmp(item, "block_timeout") &&
            strcmp(item, "kernel_filter") && strcmp(item, "fanout") && strcmp(item, "xdp") &&
            strcmp(item, "xdp_drop")) {
            fprintf(stderr, "gsqlc-run: error: --source %s: unknown source option '%s' after "
                            "'?' (a live interface takes snaplen=, promisc=, block_size=, "
                            "blocks=, block_timeout=, kernel_filter=, fanout=, xdp=, "
                            "xdp_drop=)\n", buf, item);
            return 2;
        }
        if (gsqlc_set_option(r, key, eq + 1)) {
            fprintf(stderr, "gsqlc-run: error: --source %s: %s\n", buf, gsqlc_error(r));
            return 2;
        }
    }
    return 0;
}

/* The sources and memberships of the command line, then the default sets,
 * then -- as `gsqlc run` does -- the one interface NAME bound read as the
 * default interface.  0, or 2 after printing the error. */
static int bind_all(gsq_run *r, const bindings *b)
{
    char member[512];
    int i, count, names = 0;
    for (i = 0; i < b->n; i++) {
        const char *m = member_name(b, i, member, sizeof member, &count);
        char uri[4096], key[600];
        int header;
        if (csv_uri_options(b->uris[i], uri, sizeof uri, &header) ||
            live_uri_options(r, m, uri))
            return 2;
        if (gsqlc_bind_source(r, m, uri))
            goto fail;
        if (header < 0 && b->csv_header && strncmp(uri, "csv", 3) == 0)
            header = 1;
        snprintf(key, sizeof key, "csv_header:%s", m);
        if (header > 0 && gsqlc_set_option(r, key, "1"))
            goto fail;
        if (count > 1 && gsqlc_add_set_member(r, b->names[i], m))
            goto fail;
    }
    for (i = 0; i < b->n_members; i++)
        if (gsqlc_add_set_member(r, b->sets[i], b->members[i]))
            goto fail;
    for (i = 0; gsqlc_run_sets[i] && gsqlc_run_sets[i + 1]; i += 2)
        if (!defines_set(b, gsqlc_run_sets[i]) &&
            gsqlc_add_set_member(r, gsqlc_run_sets[i], gsqlc_run_sets[i + 1]))
            goto fail;
    /* the interface names given: one, not the default interface, not a set
     * of --member or of the compiled-in sets */
    for (i = 0; i < b->n; i++) {
        int first = 1;
        for (int j = 0; j < i; j++)
            first &= strcmp(b->names[j], b->names[i]) != 0;
        names += first;
    }
    if (gsqlc_run_reads_default && names == 1 && strcmp(b->names[0], DEFAULT_IFACE) != 0 &&
        !defines_set(b, DEFAULT_IFACE)) {
        int defined = 0;
        for (i = 0; gsqlc_run_sets[i] && gsqlc_run_sets[i + 1]; i += 2)
            defined |= strcmp(gsqlc_run_sets[i], DEFAULT_IFACE) == 0;
        for (i = 0; !defined && i < b->n; i++) {
            const char *m = member_name(b, i, member, sizeof member, &count);
            if (gsqlc_add_set_member(r, DEFAULT_IFACE, m))
                goto fail;
        }
    }
    return 0;
fail:
    fprintf(stderr, "gsqlc-run: error: %s\n", gsqlc_error(r));
    return 2;
}

/* ---- the command line --------------------------------------------------- */

/* ---- the parameter file (--param-file) ---------------------------------- */

#define MAX_PARAMS 256

/* The values a parameter file gave, the last time it was read: names and
 * values owned; n of them.  Read at the start (each set as --param) and on
 * SIGHUP (each that changed handed to gsqlc_change_param). */
typedef struct param_file {
    const char *path;
    char *names[MAX_PARAMS];
    char *values[MAX_PARAMS];
    int n;
    const char *kept; /* said after an error of the file read again (on SIGHUP) */
} param_file;

static char *trim(char *s)
{
    char *e;
    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
        *--e = '\0';
    return s;
}

/* The value pf holds for name, NULL when none. */
static const char *param_value(const param_file *pf, const char *name)
{
    for (int i = 0; i < pf->n; i++)
        if (strcmp(pf->names[i], name) == 0)
            return pf->values[i];
    return NULL;
}

/* Keep name=value in pf (a copy); 0, or -1 out of memory or room. */
static int param_keep(param_file *pf, const char *name, const char *value)
{
    char *v = strdup(value);
    if (!v)
        return -1;
    for (int i = 0; i < pf->n; i++)
        if (strcmp(pf->names[i], name) == 0) {
            free(pf->values[i]);
            pf->values[i] = v;
            return 0;
        }
    if (pf->n == MAX_PARAMS || !(pf->names[pf->n] = strdup(name))) {
        free(v);
        return -1;
    }
    pf->values[pf->n++] = v;
    return 0;
}

static void param_file_free(param_file *pf)
{
    for (int i = 0; i < pf->n; i++) {
        free(pf->names[i]);
        free(pf->values[i]);
    }
    pf->n = 0;
}

/* Read pf->path: each NAME=VALUE line given to take(r, pf, name, value,
 * line), which returns nonzero to stop -- once every line is known to be
 * NAME=VALUE, a comment or blank: a file with another line changes nothing.
 * 0, 2 when the file cannot be read or a line is not NAME=VALUE (said on
 * stderr), or take's nonzero. */
static int param_file_read(gsq_run *r, param_file *pf,
                           int (*take)(gsq_run *, param_file *, const char *, const char *,
                                       int))
{
    FILE *f = fopen(pf->path, "r");
    char line[4096];
    int no, rc = 0;
    if (!f) {
        fprintf(stderr, "gsqlc-run: error: --param-file %s: %s%s\n", pf->path, strerror(errno),
                pf->kept ? pf->kept : "");
        return 2;
    }
    for (int pass = 0; pass < 2 && rc == 0; pass++) { /* checked, then taken */
        rewind(f);
        no = 0;
        while (rc == 0 && fgets(line, sizeof line, f)) {
            char *s, *eq;
            no++;
            s = line;
            s[strcspn(s, "#")] = '\0';
            s = trim(s);
            if (!*s)
                continue;
            eq = strchr(s, '=');
            if (!eq || eq == s) {
                fprintf(stderr, "gsqlc-run: error: %s:%d: expected NAME=VALUE, got '%s'%s\n",
                        pf->path, no, s, pf->kept ? pf->kept : "");
                rc = 2;
                break;
            }
            *eq = '\0';
            if (pass == 1)
                rc = take(r, pf, trim(s), trim(eq + 1), no);
        }
    }
    fclose(f);
    return rc;
}

/* At the start: each value set as --param sets it. */
static int param_take_first(gsq_run *r, param_file *pf, const char *name, const char *value,
                            int line)
{
    if (gsqlc_set_param(r, name, value)) {
        fprintf(stderr, "gsqlc-run: error: %s:%d: parameter %s: %s\n", pf->path, line, name,
                gsqlc_error(r));
        return 2;
    }
    return param_keep(pf, name, value) ? (fputs("gsqlc-run: error: out of memory\n", stderr), 1)
                                       : 0;
}

/* On SIGHUP: a value that changed goes to the run; one it refuses is said
 * and the old one stays (and is asked again at the next SIGHUP). */
static int param_take_again(gsq_run *r, param_file *pf, const char *name, const char *value,
                            int line)
{
    const char *old = param_value(pf, name);
    char err[512];
    if (old && strcmp(old, value) == 0)
        return 0;
    if (gsqlc_change_param(r, name, value, err, sizeof err)) {
        fprintf(stderr, "gsqlc-run: error: %s:%d: %s; the run keeps %s%s%s\n", pf->path, line, err,
                old ? "'" : "its value", old ? old : "", old ? "'" : "");
        return 0;
    }
    fprintf(stderr, "gsqlc-run: parameter $%s: '%s' from %s (from the next round of the run)\n",
            name, value, pf->path);
    if (param_keep(pf, name, value))
        fputs("gsqlc-run: error: out of memory\n", stderr);
    return 0;
}

/* The thread that reads the file again on each SIGHUP, until `done`. */
typedef struct hup_waiter {
    gsq_run *r;
    param_file *pf;
    sigset_t set;
    volatile sig_atomic_t done;
    pthread_t thread;
} hup_waiter;

static void *wait_for_hup(void *arg)
{
    hup_waiter *w = (hup_waiter *)arg;
    for (;;) {
        int sig = 0;
        if (sigwait(&w->set, &sig) != 0 || w->done)
            break;
        (void)param_file_read(w->r, w->pf, param_take_again);
    }
    return NULL;
}

/* SIGHUP blocked in this thread (and so in the run's), waited for by its
 * own: 0, or -1 when the thread cannot start (then SIGHUP is left alone). */
static int start_hup_waiter(hup_waiter *w, gsq_run *r, param_file *pf)
{
    w->r = r;
    w->pf = pf;
    w->done = 0;
    pf->kept = "; the run keeps its parameters";
    sigemptyset(&w->set);
    sigaddset(&w->set, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &w->set, NULL) != 0)
        return -1;
    if (pthread_create(&w->thread, NULL, wait_for_hup, w) != 0) {
        pthread_sigmask(SIG_UNBLOCK, &w->set, NULL);
        return -1;
    }
    return 0;
}

static void stop_hup_waiter(hup_waiter *w)
{
    w->done = 1;
    pthread_kill(w->thread, SIGHUP);
    pthread_join(w->thread, NULL);
}

typedef struct command {
    bindings b;
    const char *outputs[MAX_OUTPUTS];
    int n_outputs;
    const char *format;
    const char *output_file;
    int stats;
    param_file params; /* --param-file's, when params.path */
    char *param_names[MAX_ARGS], *param_values[MAX_ARGS]; /* each --param, set over it */
    int n_params;
    char *owned[MAX_ARGS]; /* the URIs made of paths */
    int n_owned;
} command;

/* Splits "NAME=VALUE" in place; NULL when there is no '=' or no NAME. */
static char *split_eq(char *arg)
{
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return NULL;
    *eq = '\0';
    return eq + 1;
}

static int option_failed(gsq_run *r, const run_flag *f, const char *value)
{
    fprintf(stderr, "gsqlc-run: error: %.*s %s: %s\n", long_name_len(f), f->names, value,
            gsqlc_error(r));
    return 2;
}

/* Apply flag f with its value (NULL for a switch): 0, or the exit status
 * after printing the error. */
static int apply(gsq_run *r, command *c, const run_flag *f, char *value)
{
    char key[512];
    char *rest;
    int n = long_name_len(f);
    if (f->arg == ARG_CHOICES) {
        int ok = 0;
        for (int i = 0; f->choices[i]; i++)
            ok |= strcmp(f->choices[i], value) == 0;
        if (!ok) {
            char words[256] = "";
            for (int i = 0; f->choices[i]; i++) {
                size_t len = strlen(words);
                snprintf(words + len, sizeof words - len, "%s%s",
                         i == 0 ? "" : f->choices[i + 1] ? ", " : " or ", f->choices[i]);
            }
            fprintf(stderr, "gsqlc-run: error: %.*s must be %s, got '%s'\n", n, f->names, words,
                    value);
            return 2;
        }
    }
    switch (f->action) {
    case ACT_OPTION:
        return gsqlc_set_option(r, f->key, value) ? option_failed(r, f, value) : 0;
    case ACT_SWITCH:
        return gsqlc_set_option(r, f->key, f->value) ? option_failed(r, f, f->value) : 0;
    case ACT_KEYED:
        rest = split_eq(value);
        if (!rest) {
            fprintf(stderr, "gsqlc-run: error: %.*s '%s': expected %s\n", n, f->names, value,
                    f->metavar);
            return 2;
        }
        snprintf(key, sizeof key, "%s%s", f->key, value);
        if (gsqlc_set_option(r, key, rest)) {
            fprintf(stderr, "gsqlc-run: error: %.*s %s=%s: %s\n", n, f->names, value, rest,
                    gsqlc_error(r));
            return 2;
        }
        return 0;
    default:
        break;
    }
    switch (f->own) {
    case OWN_SOURCE: {
        char *name = value, *uri;
        if (c->b.n == MAX_ARGS)
            return usage("too many --source options (at most %d)", MAX_ARGS);
        if (has_scheme(value) && (!strchr(value, '=') || strchr(value, ':') < strchr(value, '='))) {
            name = (char *)DEFAULT_IFACE;
            uri = value;
        } else if (!(uri = split_eq(value))) {
            return usage("--source '%s': expected NAME=URI, or a URI (csv:PATH, pcap:PATH, ...) "
                         "for the default interface",
                         value);
        }
        /* fanout=N: the interface is a set of N sockets sharing its frames
         * (NAME.0 ... NAME.N-1), as gsqlc run binds it: N bindings of NAME */
        int fanout = uri_fanout(uri), copies = fanout >= 2 ? fanout : 1;
        for (int j = 0; j < c->b.n; j++)
            if (strcmp(c->b.names[j], name) == 0 && (fanout >= 2 || uri_fanout(c->b.uris[j]) >= 2))
                return usage("--source %s=%s: fanout makes %s a set of sockets, and it is bound "
                             "more than once (sets do not nest): bind it once, with fanout",
                             name, uri, name);
        if (c->b.n + copies > MAX_ARGS)
            return usage("too many --source options (at most %d)", MAX_ARGS);
        for (int k = 0; k < copies; k++) {
            c->b.names[c->b.n] = name;
            c->b.uris[c->b.n++] = uri;
        }
        return 0;
    }
    case OWN_MEMBER: {
        char *member = split_eq(value);
        if (!member || !*member)
            return usage("--member '%s': expected SET=IFACE", value);
        if (c->b.n_members == MAX_ARGS)
            return usage("too many --member options (at most %d)", MAX_ARGS);
        c->b.sets[c->b.n_members] = value;
        c->b.members[c->b.n_members++] = member;
        return 0;
    }
    case OWN_PARAM:
        rest = split_eq(value);
        if (!rest)
            return usage("--param '%s': expected NAME=VALUE", value);
        if (gsqlc_set_param(r, value, rest)) {
            fprintf(stderr, "gsqlc-run: error: --param %s: %s\n", value, gsqlc_error(r));
            return 2;
        }
        if (c->n_params == MAX_ARGS)
            return usage("too many --param options (at most %d)", MAX_ARGS);
        c->param_names[c->n_params] = value;
        c->param_values[c->n_params++] = rest;
        return 0;
    case OWN_PARAM_FILE: /* read once every flag is parsed: --param wins */
        c->params.path = value;
        return 0;
    case OWN_OUTPUT:
        if (c->n_outputs == MAX_OUTPUTS)
            return usage("too many --output options (at most %d)", MAX_OUTPUTS);
        c->outputs[c->n_outputs++] = value;
        return 0;
    case OWN_OUTPUT_FILE:
        c->output_file = value;
        return 0;
    case OWN_FORMAT:
        c->format = value;
        return 0;
    case OWN_CSV_HEADER:
        c->b.csv_header = 1;
        return 0;
    case OWN_STATS:
        c->stats = 1;
        return 0;
    default:
        return 0;
    }
}

/* --help anywhere on the command line (before a lone "--"), even where a
 * value was due: answered at once, whatever else is there.  1 when
 * answered. */
static int answer_at_once(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const run_flag *f = find_flag(argv[i], strlen(argv[i]));
        if (f && f->action == ACT_OWN && f->own == OWN_HELP) {
            print_help(stdout);
            return 1;
        }
    }
    return 0;
}

static int parse(gsq_run *r, command *c, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        char *a = argv[i], *value = NULL;
        size_t n = strlen(a);
        const run_flag *f;
        int rc;
        if (a[0] != '-' || !a[1] || strcmp(a, "--") == 0)
            return usage("unexpected argument '%s': gsqlc-run takes options only (its "
                         "queries are built in)",
                         strcmp(a, "--") == 0 && i + 1 < argc ? argv[i + 1] : a);
        if (a[1] == '-' && strchr(a, '=')) /* --flag=value */
            n = (size_t)(strchr(a, '=') - a);
        f = find_flag(a, n);
        if (!f)
            return usage("unknown option '%.*s'", (int)n, a);
        if (f->arg == ARG_NONE) {
            if (n != strlen(a))
                return usage("%.*s takes no value", long_name_len(f), f->names);
        } else if (n != strlen(a)) {
            value = a + n + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            fprintf(stderr, "gsqlc-run: error: %.*s needs a value (", long_name_len(f), f->names);
            if (f->arg == ARG_VALUE) {
                fputs(f->metavar, stderr);
            } else {
                for (int k = 0; f->choices[k]; k++)
                    fprintf(stderr, "%s%s", k ? "|" : "", f->choices[k]);
            }
            fputs(")\n", stderr);
            return 2;
        }
        rc = apply(r, c, f, value);
        if (rc)
            return rc;
    }
    if (c->params.path) { /* the file's values, then each --param over them, as gsqlc run */
        int rc = param_file_read(r, &c->params, param_take_first);
        for (int k = 0; rc == 0 && k < c->n_params; k++)
            if (gsqlc_set_param(r, c->param_names[k], c->param_values[k])) {
                fprintf(stderr, "gsqlc-run: error: --param %s: %s\n", c->param_names[k],
                        gsqlc_error(r));
                rc = 2;
            }
        return rc;
    }
    return 0;
}

int main(int argc, char **argv)
{
    command c;
    gsq_run *r;
    int rc;

    memset(&c, 0, sizeof c);
    c.format = "pipe";
    if (answer_at_once(argc, argv))
        return 0;
    r = gsqlc_create();
    if (!r) {
        fprintf(stderr, "gsqlc-run: error: out of memory\n");
        return 1;
    }
    rc = parse(r, &c, argc, argv);
    if (rc)
        goto out;
    if (c.params.path) { /* a SIGHUP from now on waits for the thread that reads the file */
        sigset_t hup;
        sigemptyset(&hup);
        sigaddset(&hup, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &hup, NULL);
    }
    if (c.n_outputs == 0) /* every query no other reads */
        while (gsqlc_run_outputs[c.n_outputs] && c.n_outputs < MAX_OUTPUTS) {
            c.outputs[c.n_outputs] = gsqlc_run_outputs[c.n_outputs];
            c.n_outputs++;
        }
    if (strcmp(c.format, "gdat") == 0 && c.n_outputs > 1) {
        fprintf(stderr,
                "gsqlc-run: error: --format gdat writes one query's output (a GDAT file has "
                "one schema), but %d are chosen (",
                c.n_outputs);
        for (int i = 0; i < c.n_outputs; i++)
            fprintf(stderr, "%s%s", i ? ", " : "", c.outputs[i]);
        fputs("): name one with --output\n", stderr);
        rc = 2;
        goto out;
    }
    for (int i = 0; i < c.b.n; i++) { /* a path becomes a URI, as gsqlc run reads it */
        char buf[4096];
        const char *uri = source_uri(c.b.uris[i], buf, sizeof buf);
        if (uri == buf) {
            c.b.uris[i] = c.owned[c.n_owned++] = strdup(buf);
            if (!c.b.uris[i]) {
                fprintf(stderr, "gsqlc-run: error: out of memory\n");
                rc = 1;
                goto out;
            }
        } else {
            c.b.uris[i] = (char *)uri;
        }
    }
    rc = bind_all(r, &c.b);
    if (rc)
        goto out;
    for (int i = 0; i < c.n_outputs; i++) {
        if (gsqlc_add_sink(r, c.outputs[i], c.format, c.output_file)) {
            fprintf(stderr, "gsqlc-run: error: %s\n", gsqlc_error(r));
            rc = 2;
            goto out;
        }
    }
    handle_stop_signals(r);
    {
        hup_waiter hup;
        int waiting = c.params.path && start_hup_waiter(&hup, r, &c.params) == 0;
        if (c.params.path && !waiting)
            fputs("gsqlc-run: warning: cannot wait for SIGHUP: --param-file is read once\n",
                  stderr);
        rc = gsqlc_run(r) ? 1 : 0;
        if (waiting)
            stop_hup_waiter(&hup);
    }
    the_run = NULL; /* a late signal must not reach a destroyed run */
    fputs(gsqlc_report(r), stderr);
    if (c.stats)
        fprintf(stderr, "%s\n", gsqlc_stats_json(r));
    if (rc && strstr(gsqlc_stats_json(r), "\"output_closed\":true")) {
        /* the reader of the output went away (gsqlc-run ... | head): stop
         * as a tool killed by SIGPIPE does, without a message */
        rc = EXIT_OUTPUT_CLOSED;
    } else if (rc) {
        fprintf(stderr, "gsqlc-run: error: %s\n", gsqlc_error(r));
    }
out:
    gsqlc_destroy(r);
    param_file_free(&c.params);
    for (int i = 0; i < c.n_owned; i++)
        free(c.owned[i]);
    return rc;
}
