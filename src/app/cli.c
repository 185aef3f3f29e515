/* cli.c - the subcommand table of `shortd` and the commands that work on a
 * store directly (keys, users, links, backup). Commands that change links bump the
 * store's change generation so a running server drops its cache within a
 * second; revoking a key on SQLite does too, and the server then forgets the
 * keys it knew. Only this file and main.c may exit the process. */
#include "app/cli.h"

#include <errno.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "app/app.h"
#include "app/config.h"
#include "app/cli_events.h"
#include "app/doctor.h"
#include "base/err.h"
#include "links/links.h"
#include "links/pwhash.h"
#include "links/users.h"
#include "base/log.h"
#include "store/migrate_store.h"
#include "redirect/rcache.h"
#include "redirect/tiers.h"
#include "api/report.h"
#include "api/router.h"
#include "app/manpage.h"
#include "app/serve.h"
#include "store/store.h"
#include "store/store_keys.h"
#include "store/store_links.h"
#include "store/store_stats.h"
#include "base/timeutil.h"
#include "store/writer.h"
#include "base/progress.h"
#include "import/import.h"
#include "sites/sites.h"
#include "ops/opscheck.h"
#include "version.h" /* SHORTD_VERSION, SHORTD_COMMIT: made by the Makefile */
#include "base/banned.h"

#define MAX_OPTS 64

/* Parsed options of one command: --name VALUE, --name=VALUE, --flag. */
struct opts {
    const char *name[MAX_OPTS];
    const char *value[MAX_OPTS]; /* NULL for a flag */
    int n;
    const char *pos[MAX_OPTS]; /* positional arguments */
    int npos;
};

struct command {
    const char *name; /* "key create" */
    int (*fn)(struct opts *o);
    const char *flags;   /* options taking no value, space separated */
    const char *options; /* options taking a value */
    int npos;            /* positional arguments wanted; -1: all of them, as given;
                          * NPOS_ANY: any number, among options */
    const char *usage;
};

static int cmd_serve(struct opts *o);
static int cmd_key_create(struct opts *o);
static int cmd_key_list(struct opts *o);
static int cmd_key_revoke(struct opts *o);
static int cmd_key_yourls_token(struct opts *o);
static int cmd_user_create(struct opts *o);
static int cmd_user_list(struct opts *o);
static int cmd_user_set_password(struct opts *o);
static int cmd_user_disable(struct opts *o);
static int cmd_link_create(struct opts *o);
static int cmd_link_list(struct opts *o);
static int cmd_link_delete(struct opts *o);
static int cmd_backup(struct opts *o);
static int cmd_config_example(struct opts *o);
static int cmd_stats(struct opts *o);
static int cmd_export(struct opts *o);
static int cmd_prune(struct opts *o);
static int cmd_version(struct opts *o);
static int cmd_migrate(struct opts *o);
static int cmd_migrate_store(struct opts *o);
static int cmd_import(struct opts *o);
static int cmd_man(struct opts *o);
static int cmd_complete(struct opts *o);
static int cmd_doctor(struct opts *o);
static int cmd_sink_add(struct opts *o);
static int cmd_sink_list(struct opts *o);
static int cmd_sink_delete(struct opts *o);
static int cmd_sink_rotate(struct opts *o);
static int cmd_events_failed(struct opts *o);
static int cmd_site_add(struct opts *o);
static int cmd_site_list(struct opts *o);
static int cmd_site_size(struct opts *o);
static int cmd_site_usage(struct opts *o);
static int cmd_site_delete(struct opts *o);
static int cmd_ops_check(struct opts *o);

#define STORE_OPTS "db store"
#define NPOS_ANY (-2)
#define PROGRESS_HELP                                                                              \
    "A progress line on stderr is\n"                                                               \
    "  redrawn in place when stderr is a terminal (--progress auto), always, or never."

static const struct command commands[] = {
    /* name            handler             flags     options                          npos */
    {"serve", cmd_serve, "", "*", 0,
     "shortd serve [--listen ADDR:PORT] [--db PATH | --store URL] [--base-url URL]\n"
     "             [--config FILE] [--SETTING VALUE ...]\n"
     "  Serves the API and the redirects until SIGTERM or SIGINT. On SIGHUP, reads the config\n"
     "  file again and applies the settings that say so below (the others at the next start, as\n"
     "  the log says). On the first start of an empty store (no user, no key), prints the\n"
     "  URL of a one-time setup page that makes the first admin account (BASE/setup?token=,\n"
     "  valid for an hour, one use; a restart before then makes a new one); when stdout is\n"
     "  not a terminal, writes it to DB.setup-url (mode 0600) and logs that path. Scripts\n"
     "  skip it with 'shortd key create --admin' or 'shortd user create' before the start."},
    {"key create", cmd_key_create, "admin", STORE_OPTS " name scopes domain", 0,
     "shortd key create --db PATH --name NAME [--admin] [--scopes LIST] [--domain HOST]\n"
     "  Creates an API key and prints it once, as the last word of the output. --scopes\n"
     "  limits it to a comma-separated list of links:read, links:write, stats:read, admin,\n"
     "  ops (default: all but ops; admin only with --admin); --domain to links on one custom\n"
     "  domain. A key of the ops scope alone reads GET /api/ops/health and /metrics, nothing\n"
     "  else: give it to monitoring."},
    {"key list", cmd_key_list, "", STORE_OPTS, 0,
     "shortd key list --db PATH\n"
     "  Lists API keys (never the keys themselves): their scopes, domain and last use."},
    {"key revoke", cmd_key_revoke, "", STORE_OPTS, 1,
     "shortd key revoke --db PATH ID\n"
     "  Revokes an API key: running servers refuse it within a few milliseconds over the\n"
     "  invalidation bus (PostgreSQL), or within 100 ms on the same SQLite file."},
    {"key yourls-token", cmd_key_yourls_token, "", STORE_OPTS, 1,
     "shortd key yourls-token --db PATH ID\n"
     "  Prints the YOURLS signature token of a valid API key (its signature, or with a\n"
     "  timestamp md5(TIMESTAMP . TOKEN)): derived from the key, it dies when it is revoked."},
    {"user create", cmd_user_create, "", STORE_OPTS " role", 1,
     "shortd user create --db PATH NAME [--role admin|member|viewer]\n"
     "  Creates a user who signs in to the dashboard (role default: member). The password\n"
     "  is read twice from the terminal, or once from stdin when it is not one (never an\n"
     "  argument): 8 to 128 bytes. NAME is 1 to 64 of a-z 0-9 . _ - @. An admin sees and\n"
     "  changes everything, a member their own links, a viewer reads only."},
    {"user list", cmd_user_list, "", STORE_OPTS, 0,
     "shortd user list --db PATH\n  Lists users and their roles (never their passwords)."},
    {"user set-password", cmd_user_set_password, "", STORE_OPTS, 1,
     "shortd user set-password --db PATH NAME\n"
     "  Sets a user's password, read as for 'user create', and signs them out everywhere."},
    {"user disable", cmd_user_disable, "", STORE_OPTS, 1,
     "shortd user disable --db PATH NAME\n"
     "  Stops a user signing in and ends their sessions on every node; their links stay."},
    {"site add", cmd_site_add, "badge", STORE_OPTS " hosts owner", 1,
     "shortd site add --db PATH ID --hosts HOST[,HOST...] [--owner KEY_ID] [--badge]\n"
     "  Registers a site whose pages send beacons (site analytics): ID is 1 to 64 of\n"
     "  a-z 0-9 -; each host (the pages' own, without port) belongs to one site. --owner is\n"
     "  the id of the API key whose owner reads it (default: the first admin key); --badge\n"
     "  serves its all-time page views at /badge/ID.svg."},
    {"site list", cmd_site_list, "", STORE_OPTS, 0,
     "shortd site list --db PATH\n  Lists sites: owner, badge, all-time page views, hosts."},
    {"site size", cmd_site_size, "", STORE_OPTS, 1,
     "shortd site size --db PATH ID\n"
     "  What a site takes in the store: its day rows and the bytes of their tallies."},
    {"site usage", cmd_site_usage, "", STORE_OPTS " from to", 1,
     "shortd site usage --db PATH ID [--from YYYY-MM-DD] [--to YYYY-MM-DD]\n"
     "  Per UTC day (default: the last 30): page views, bot hits, and the dimension values\n"
     "  counted (what the beacons wrote)."},
    {"site delete", cmd_site_delete, "", STORE_OPTS, 1,
     "shortd site delete --db PATH ID\n"
     "  Removes a site and every row of it (hosts, read tokens, days), and nothing else."},
    {"link create", cmd_link_create, "permanent", STORE_OPTS " url alias ttl title owner base-url",
     0,
     "shortd link create --db PATH --url URL [--alias ALIAS] [--ttl SECONDS] [--title TEXT]\n"
     "                   [--permanent] [--owner KEY_ID] [--base-url URL]\n"
     "  Creates a link owned by KEY_ID (default: the first admin key); prints the code last."},
    {"link list", cmd_link_list, "all", STORE_OPTS " limit", 0,
     "shortd link list --db PATH [--limit N] [--all]\n"
     "  Lists links, newest first (--all: deleted and disabled too)."},
    {"link delete", cmd_link_delete, "", STORE_OPTS " cache", 1,
     "shortd link delete --db PATH CODE [--cache redis://HOST:PORT]\n"
     "  Deletes a link: its code answers 410 for ever and is never reused. Running servers\n"
     "  drop it from their caches within a second; with a shared Redis cache, name it too."},
    {"sink add", cmd_sink_add, "", STORE_OPTS " kind endpoint types owner domain secret options", 0,
     "shortd sink add --db PATH --kind webhook|ingest|redis-stream --endpoint URL\n"
     "                [--types LIST] [--owner KEY_ID] [--domain HOST] [--secret SECRET]\n"
     "                [--options JSON]\n"
     "  Adds a sink that events go to from now on: --types a comma-separated list of click,\n"
     "  link.created, link.updated, link.deleted, link.disabled, link.expired, link.exhausted\n"
     "  (default: all), --owner and --domain only those of one owner's links or one short\n"
     "  host. A webhook's signing secret (whsec_...) is made and printed once unless given;\n"
     "  an ingest sink's --secret is its write secret. --options for redis-stream:\n"
     "  {\"stream\":NAME,\"maxlen\":N}."},
    {"sink list", cmd_sink_list, "", STORE_OPTS, 0,
     "shortd sink list --db PATH\n  Lists the sinks (never their secrets)."},
    {"sink delete", cmd_sink_delete, "", STORE_OPTS, 1,
     "shortd sink delete --db PATH ID\n"
     "  Stops delivering to a sink; its failed batches stay in the archive."},
    {"sink rotate-secret", cmd_sink_rotate, "", STORE_OPTS, 1,
     "shortd sink rotate-secret --db PATH ID\n"
     "  Gives a sink a new signing secret, printed once; the old one stays valid (both\n"
     "  signatures are sent) until the next rotation."},
    {"events failed", cmd_events_failed, "all", STORE_OPTS " operator reason timeout-ms", NPOS_ANY,
     "shortd events failed list [--all] | inspect ID | replay ID\n"
     "                     | resolve ID --operator NAME --reason TEXT  [--db PATH]\n"
     "  The batches of events no retry delivered: list the unresolved ones (--all: every\n"
     "  one), inspect one (its body, hash, attempts, last error), replay it (the unchanged\n"
     "  bytes under the same IDs, to its sink; the outcome is recorded), resolve it (who\n"
     "  and why are kept). Nothing is ever deleted."},
    {"backup", cmd_backup, "record-only", STORE_OPTS " to progress node", 0,
     "shortd backup --db PATH --to FILE [--progress auto|always|never] [--node NAME]\n"
     "  Copies the database with SQLite's online backup; safe while serving. Records the\n"
     "  backup in the store, where the backup check (shortd ops check) reads its age. With\n"
     "  --record-only, copies nothing and records FILE, a backup made another way (pg_dump\n"
     "  of a PostgreSQL store). " PROGRESS_HELP},
    {"stats", cmd_stats, "", STORE_OPTS " from to", 1,
     "shortd stats --db PATH CODE [--from YYYY-MM-DD] [--to YYYY-MM-DD]\n"
     "  Prints a link's click analytics as JSON (default: the last 30 days)."},
    {"export", cmd_export, "", STORE_OPTS " format owner base-url progress", 0,
     "shortd export --db PATH [--format json|csv] [--owner KEY_ID] [--base-url URL]\n"
     "             [--progress auto|always|never]\n"
     "  Writes every link (or one owner's) with its daily counts to stdout. " PROGRESS_HELP},
    {"prune", cmd_prune, "", STORE_OPTS " retention-days progress", 0,
     "shortd prune --db PATH [--retention-days N] [--progress auto|always|never]\n"
     "  Removes per-day analytics older than N days (default 400) now; all-time totals stay.\n"
     "  " PROGRESS_HELP},
    {"doctor", cmd_doctor, "json", "*", 0,
     "shortd doctor [--config FILE] [--db PATH | --store URL] [--SETTING VALUE ...] [--json]\n"
     "  Checks an installation with the settings serve would use: the config, the store\n"
     "  (schema, journal mode, latency), the shared cache, the click journal folder, free\n"
     "  disk, the clock, file permissions, the listen address and the GeoIP database. One\n"
     "  line each, ok, warn or FAIL, with how to fix it; exits 1 when any check FAILs.\n"
     "  Reads only: it creates, migrates and changes nothing."},
    {"ops check", cmd_ops_check, "json", "config listen url key-file", 0,
     "shortd ops check [--config FILE] [--url http://HOST:PORT] [--key-file FILE] [--json]\n"
     "  Asks the running node (default: http://LISTEN of the config) for its operations\n"
     "  checks: the store, the shared cache, the click journal and fold, free disk, the last\n"
     "  backup, the clock. One line each: ok, warn, fail or unknown (could not be checked).\n"
     "  The API key (ops scope, or admin) comes from SHORTD_OPS_KEY or --key-file, never a\n"
     "  flag. Exits 0 when all are ok, 1 on a warning, 2 on a failure, an unknown check or a\n"
     "  node that does not answer."},
    {"config example", cmd_config_example, "", "", 0,
     "shortd config example\n  Prints an example config file with every setting's default."},
    {"man", cmd_man, "", "", 0,
     "shortd man\n"
     "  Prints this manual page as roff, made from the same tables as --help (make builds\n"
     "  shortd.1 with it)."},
    {"complete", cmd_complete, "", "", -1,
     "shortd complete [WORD ...] CURRENT\n"
     "  Prints, one a line, the words that can follow 'shortd WORD ...' and start with\n"
     "  CURRENT: the completion for bash (packaging/shortd.bash-completion) runs it."},
    {"version", cmd_version, "", "", 0,
     "shortd version\n  Prints the version and the commit it was built from (also: shortd "
     "--version)."},
    {"migrate", cmd_migrate, "", STORE_OPTS, 0,
     "shortd migrate --store postgres://USER@HOST:PORT/DB | --db PATH\n"
     "  Brings the store's schema up to this shortd's, in one transaction; safe to rerun and\n"
     "  to run from several machines at once. A PostgreSQL store must be migrated before\n"
     "  any node serves it; SQLite files migrate themselves when opened. With --db, creates\n"
     "  the file when it does not exist (the other commands refuse a missing one)."},
    {"migrate-store", cmd_migrate_store, "", "from to batch-rows progress", 0,
     "shortd migrate-store --from sqlite:PATH --to postgres://USER@HOST:PORT/DB [--batch-rows N]\n"
     "                     [--progress auto|always|never]\n"
     "  Copies a store into another that shortd migrate has prepared: links (tombstones and\n"
     "  disabled ones too), API keys, secrets, the code counter, click counts, the blocklist\n"
     "  and idempotency records; then counts both and prints the counts. Safe to rerun: a\n"
     "  rerun writes only what changed since. Run the last pass with the source stopped,\n"
     "  before any node serves the target. Each transaction writes N rows (default 2000).\n"
     "  " PROGRESS_HELP},
    {"import", cmd_import, "dry-run json",
     STORE_OPTS " owner on-conflict batch-rows progress cache", 2,
     "shortd import FORMAT SOURCE [--db PATH | --store URL] [--owner KEY_ID]\n"
     "              [--on-conflict skip|keep|fail] [--dry-run] [--batch-rows N] [--json]\n"
     "              [--progress auto|always|never] [--cache redis://HOST:PORT]\n"
     "  Takes over another shortener's links and click history (FORMAT below). Every code is\n"
     "  kept exactly, even ones shortd's alias rules refuse (they stay working as legacy\n"
     "  codes); new links belong to KEY_ID (default: the first admin key). Visits are counted\n"
     "  again through shortd's classifier (bots apart); totals no visit accounts for are kept\n"
     "  as imported clicks. A bad row is reported with its place and skipped. A code the store\n"
     "  has with the same destination is left alone, so a second run changes nothing; with\n"
     "  another destination, --on-conflict says what happens:\n"
     "    skip  the store's link stays, the row is reported (the default)\n"
     "    keep  the source's destination replaces it, recorded in the link's history (with\n"
     "          a shared Redis cache, name it with --cache, as for 'link delete')\n"
     "    fail  nothing at all is written: the conflicts are listed, the exit status is 1\n"
     "  --dry-run reports what would happen and writes nothing. Safe while a server runs on\n"
     "  the same store: each transaction of N rows (default 5000) is served at once. The\n"
     "  summary goes to stderr (--json: also as JSON on stdout). " PROGRESS_HELP "\n"
     "  FORMAT is yourls, kutt, shlink, bitly, csv or shortd; --help says what SOURCE is\n"
     "  for each."},
};
#define NCOMMANDS ((int)(sizeof(commands) / sizeof(commands[0])))

static void usage_all(FILE *f)
{
    fputs("shortd - a URL shortener with honest click analytics\n\n"
          "usage: shortd COMMAND [OPTIONS]\n\nCommands:\n",
          f);
    for (int i = 0; i < NCOMMANDS; i++) {
        const char *u = commands[i].usage;
        fprintf(f, "  %.*s\n", (int)strcspn(u, "\n"), u);
    }
    fputs("\n`shortd COMMAND --help` explains one command.\n", f);
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("shortd: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

static bool word_in(const char *list, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, " ");
        if (len == n && strncmp(p, w, n) == 0)
            return true;
        p += len;
        while (*p == ' ')
            p++;
    }
    return false;
}

static const char *opt(const struct opts *o, const char *name)
{
    const char *v = NULL;
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->name[i], name) == 0)
            v = o->value[i] ? o->value[i] : "";
    return v;
}

/* --NAME as a whole number in [lo, hi], or 'fallback' when absent; the
 * message names the option. Returns 0, or the exit status of a usage error. */
static int opt_int(const struct opts *o, const char *name, long long lo, long long hi,
                   long long fallback, long long *out)
{
    const char *v = opt(o, name);
    *out = fallback;
    if (!v)
        return 0;
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi)
        return fail("--%s must be a whole number from %lld to %lld", name, lo, hi);
    *out = x;
    return 0;
}

/* --progress as a progress.h mode (auto when absent); -1 after a usage error. */
static int opt_progress(const struct opts *o)
{
    int mode = progress_mode_parse(opt(o, "progress") ? opt(o, "progress") : "auto");
    if (mode < 0)
        fail("--progress must be auto, always or never");
    return mode;
}

static int parse_opts(const struct command *c, int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof(*o));
    if (c->npos == -1) {
        if (argc > MAX_OPTS)
            return fail("too many arguments");
        for (int i = 0; i < argc; i++)
            o->pos[o->npos++] = argv[i];
        return 0;
    }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || !a[2]) {
            if (o->npos == MAX_OPTS)
                return fail("too many arguments");
            o->pos[o->npos++] = a;
            continue;
        }
        if (o->n == MAX_OPTS)
            return fail("too many options");
        static char names[MAX_OPTS][64];
        const char *eq = strchr(a + 2, '=');
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (len >= sizeof(names[0]))
            return fail("unknown option '%s' for '%s'", a, c->name);
        memcpy(names[o->n], a + 2, len);
        names[o->n][len] = '\0';
        const char *name = names[o->n];
        bool takes_value = !strcmp(c->options, "*") ? config_is_setting(name)
                                                    : word_in(c->options, name);
        if (word_in(c->flags, name)) {
            if (eq)
                return fail("option '--%s' takes no value", name);
            o->name[o->n] = name;
            o->value[o->n++] = NULL;
        } else if (takes_value) {
            const char *v = eq ? eq + 1 : NULL;
            if (!v) {
                if (i + 1 >= argc)
                    return fail("option '--%s' needs a value", name);
                v = argv[++i];
            }
            o->name[o->n] = name;
            o->value[o->n++] = v;
        } else {
            return fail("unknown option '--%s' for '%s' (see 'shortd %s --help')", name, c->name,
                        c->name);
        }
    }
    if (c->npos != NPOS_ANY && o->npos != c->npos)
        return fail("'%s' takes %d argument%s, not %d (see 'shortd %s --help')", c->name, c->npos,
                    c->npos == 1 ? "" : "s", o->npos, c->name);
    return 0;
}

int cli_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage_all(stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version"))
        return cmd_version(NULL);
    const struct command *c = NULL;
    int used = 0;
    for (int i = 0; i < NCOMMANDS && !c; i++) {
        const char *name = commands[i].name;
        const char *sp = strchr(name, ' ');
        if (!sp && !strcmp(argv[1], name)) {
            c = &commands[i];
            used = 2;
        } else if (sp && (size_t)(sp - name) == strlen(argv[1]) &&
                   !strncmp(argv[1], name, (size_t)(sp - name)) && argc > 2 &&
                   !strcmp(argv[2], sp + 1)) {
            c = &commands[i];
            used = 3;
        }
    }
    if (!c) {
        bool help = argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"));
        FILE *f = help ? stdout : stderr;
        bool group = false;
        for (int i = 0; i < NCOMMANDS; i++) {
            size_t n = strcspn(commands[i].name, " ");
            if (commands[i].name[n] && strlen(argv[1]) == n &&
                !strncmp(commands[i].name, argv[1], n)) {
                if (!group && help)
                    fprintf(f, "usage:\n");
                else if (!group && argc > 2)
                    fprintf(f, "shortd: unknown command '%s %s'; '%s' takes:\n", argv[1], argv[2],
                            argv[1]);
                else if (!group)
                    fprintf(f, "shortd: '%s' needs a subcommand:\n", argv[1]);
                group = true;
                fprintf(f, "  %.*s\n", (int)strcspn(commands[i].usage, "\n"), commands[i].usage);
            }
        }
        if (group)
            return help ? 0 : 2;
        fprintf(stderr, "shortd: unknown command '%s'\n\n", argv[1]);
        usage_all(stderr);
        return 2;
    }
    for (int i = used; i < argc && c->npos != -1; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: %s\n", c->usage);
            if (c->fn == cmd_import) {
                printf("\nFormats and their SOURCE:\n");
                for (const struct import_format *f = import_formats; f->name; f++)
                    printf("    %-7s %s\n", f->name, f->what);
            }
            if (c->fn == cmd_serve) {
                printf("\nSettings (flag, or SHORTD_NAME in the environment, or name = value "
                       "in --config FILE):\n");
                config_print_help(stdout);
            }
            return 0;
        }
    }
    struct opts o;
    int rc = parse_opts(c, argc - used, argv + used, &o);
    if (rc)
        return rc;
    return c->fn(&o);
}

/* ---- serve ---- */

/* The configuration of `serve`: defaults, then the config file (--config or
 * SHORTD_CONFIG), the environment, the flags. At the start and on SIGHUP
 * (serve.h), so a reload reads what the start read. */
static int load_serve_config(void *arg, struct config *cfg, char *err, size_t errlen)
{
    const struct opts *o = arg;
    config_init(cfg);
    const char *file = opt(o, "config");
    if (!file)
        file = getenv("SHORTD_CONFIG");
    int rc = ERR_OK;
    if (file && *file) {
        rc = config_load_file(cfg, file, err, errlen);
        if (rc == ERR_OK)
            rc = config_set(cfg, "config", file, err, errlen);
    }
    if (rc == ERR_OK)
        rc = config_load_env(cfg, err, errlen);
    for (int i = 0; rc == ERR_OK && i < o->n; i++)
        rc = config_set(cfg, o->name[i], o->value[i] ? o->value[i] : "true", err, errlen);
    if (rc != ERR_OK)
        config_release(cfg);
    return rc;
}

static int cmd_serve(struct opts *o)
{
    struct config cfg;
    char err[512];
    if (load_serve_config(o, &cfg, err, sizeof(err)) != ERR_OK)
        return fail("%s", err);
    log_level = (enum log_level)log_level_parse(cfg.log_level);
    struct serve_reload reload = {load_serve_config, o};
    int rc = serve_run(&cfg, &reload);
    config_release(&cfg);
    return rc == ERR_OK ? 0 : 1;
}

/* ---- store commands ---- */

/* True when 'url' names a SQLite file that is not there: opening it would
 * create an empty store. 'path' gets the file's name. */
static bool sqlite_missing(const char *url, const char **path)
{
    *path = strncmp(url, "sqlite:", 7) ? url : url + 7;
    return !store_is_shared(url) && access(*path, F_OK) != 0;
}

/* The store of --store, --db, SHORTD_STORE or SHORTD_DB. An empty value is
 * no value. */
static const char *store_url(const struct opts *o)
{
    const char *url = opt(o, "store");
    if (!url)
        url = opt(o, "db");
    if (!url || !*url)
        url = getenv("SHORTD_STORE");
    if (!url || !*url)
        url = getenv("SHORTD_DB");
    if (!url || !*url)
        url = "data/shortd.db";
    return url;
}

/* Opens the store_url. Only with 'create' does a SQLite path that does not
 * exist make a new store: a mistyped --db must not look like an empty one. */
static int open_store(const struct opts *o, bool create, struct store **st)
{
    const char *url = store_url(o);
    const char *path;
    if (!create && sqlite_missing(url, &path)) {
        fail("no database at '%s' (is --db right? 'shortd serve' or 'shortd migrate' "
             "creates one)",
             path);
        return 1;
    }
    if (store_open(url, st) != ERR_OK) {
        char shown[512];
        store_redact(url, shown, sizeof(shown));
        fail("cannot open store '%s'", shown);
        return 1;
    }
    return 0;
}

static int open_links(const struct opts *o, bool create, struct store **st, struct links **l)
{
    if (open_store(o, create, st))
        return 1;
    static const char *const no_hosts[] = {NULL};
    if (links_new(*st, router_reserved(), no_hosts, l) != ERR_OK) {
        (*st)->ops->close(*st);
        fail("cannot read the store's secrets");
        return 1;
    }
    return 0;
}

/* Tells a running server that links (or keys) changed under it. */
static void bump_generation(struct store *st)
{
    if (st->ops->begin(st) == ERR_OK) {
        if (store_generation_bump(st) == ERR_OK)
            st->ops->commit(st);
        else
            st->ops->rollback(st);
    }
}

static int cmd_key_create(struct opts *o)
{
    const char *name = opt(o, "name");
    if (!name || !*name)
        return fail("'key create' needs --name NAME");
    if (strlen(name) > 100)
        return fail("--name must be at most 100 bytes");
    bool admin = opt(o, "admin") != NULL;
    struct apikey spec = {.admin = admin, .scopes = KEY_SCOPES_ALL};
    snprintf(spec.name, sizeof(spec.name), "%s", name);
    const char *scopes = opt(o, "scopes");
    if (scopes) {
        spec.scopes = 0;
        for (const char *p = scopes; *p;) {
            size_t n = strcspn(p, ",");
            unsigned bit;
            if (links_scope_parse((struct slice){p, n}, &bit) != ERR_OK)
                return fail("--scopes: '%.*s' is not one of links:read, links:write, stats:read, "
                            "admin, ops",
                            (int)n, p);
            spec.scopes |= bit;
            p += n + (p[n] == ',');
        }
        if (!spec.scopes)
            return fail("--scopes needs at least one scope");
        if ((spec.scopes & KEY_SCOPE_ADMIN) && !admin)
            return fail("--scopes: the admin scope needs --admin");
    } else if (!admin) {
        spec.scopes &= ~KEY_SCOPE_ADMIN;
    }
    const char *domain = opt(o, "domain");
    if (domain) {
        const char *why = NULL;
        if (links_domain_check(domain, strlen(domain), &why) != ERR_OK)
            return fail("--domain: '%s' %s", domain, why);
        snprintf(spec.domain, sizeof(spec.domain), "%s", domain);
    }
    struct store *st;
    struct links *l;
    if (open_links(o, false, &st, &l))
        return 1;
    char token[KEY_TOKEN_LEN + 1];
    int64_t id = 0;
    int rc = links_key_make(l, st, &spec, token, &id);
    if (rc == ERR_OK)
        printf("created %s key %lld '%s' (shown once, keep it): %s\n", admin ? "admin" : "user",
               (long long)id, name, token);
    links_free(l);
    st->ops->close(st);
    return rc == ERR_OK ? 0 : fail("cannot create the key: %s", err_str(rc));
}

static int print_key(const struct apikey *k, void *arg)
{
    (void)arg;
    char created[RFC3339_MAX], revoked[RFC3339_MAX] = "-", used[RFC3339_MAX] = "-";
    rfc3339_format(k->created_at, created);
    if (k->revoked_at)
        rfc3339_format(k->revoked_at, revoked);
    if (k->last_used_at)
        rfc3339_format(k->last_used_at, used);
    char scopes[64] = "";
    unsigned rights = links_key_rights(k);
    for (unsigned bit = 1; bit <= KEY_SCOPE_OPS; bit <<= 1)
        if (rights & bit) {
            size_t n = strlen(scopes);
            snprintf(scopes + n, sizeof(scopes) - n, "%s%s", n ? "," : "", links_scope_name(bit));
        }
    /* REVOKED_AT stays the last column: scripts read it there. */
    printf("%-6lld %-24s %-6s %-8s %-40s %-24s %-24s %-24s %s\n", (long long)k->id, k->name,
           k->admin ? "admin" : "user", k->revoked_at ? "revoked" : "valid",
           scopes[0] ? scopes : "-", k->domain[0] ? k->domain : "-", used, created,
           k->revoked_at ? revoked : "-");
    return 0;
}

static int cmd_sink_add(struct opts *o)
{
    struct cli_sink_args a = {opt(o, "kind"),   opt(o, "endpoint"), opt(o, "types"),
                              opt(o, "owner"),  opt(o, "domain"),   opt(o, "secret"),
                              opt(o, "options")};
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    int rc = cli_sink_add(st, &a);
    st->ops->close(st);
    return rc;
}

static int cmd_sink_list(struct opts *o)
{
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    int rc = cli_sink_list(st);
    st->ops->close(st);
    return rc;
}

static int cmd_sink_delete(struct opts *o)
{
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    int rc = cli_sink_delete(st, o->pos[0]);
    st->ops->close(st);
    return rc;
}

static int cmd_sink_rotate(struct opts *o)
{
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    int rc = cli_sink_rotate(st, o->pos[0]);
    st->ops->close(st);
    return rc;
}

static int cmd_events_failed(struct opts *o)
{
    long long timeout;
    int bad = opt_int(o, "timeout-ms", 100, 600000, 10000, &timeout);
    if (bad)
        return bad;
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    int rc = cli_events_failed(st, o->npos, (const char *const *)o->pos, opt(o, "all") != NULL,
                               opt(o, "operator"), opt(o, "reason"), timeout);
    st->ops->close(st);
    return rc;
}

static int cmd_key_list(struct opts *o)
{
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    printf("%-6s %-24s %-6s %-8s %-40s %-24s %-24s %-24s %s\n", "ID", "NAME", "ROLE", "STATE",
           "SCOPES", "DOMAIN", "LAST_USED", "CREATED", "REVOKED_AT");
    int rc = st->ops->key_list(st, print_key, NULL);
    st->ops->close(st);
    return rc == ERR_OK ? 0 : fail("cannot list keys");
}

static int cmd_key_revoke(struct opts *o)
{
    char *end = NULL;
    long long id = strtoll(o->pos[0], &end, 10);
    if (!*o->pos[0] || *end || id <= 0)
        return fail("key id must be a positive whole number, not '%s'", o->pos[0]);
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    int rc = st->ops->begin(st);
    if (rc == ERR_OK)
        rc = st->ops->key_revoke(st, id, now_ms());
    if (rc == ERR_OK)
        rc = st->ops->commit(st);
    else
        st->ops->rollback(st);
    /* On PostgreSQL, key_revoke told every node over the bus at commit (a
     * generation there would also empty every node's link cache for nothing).
     * A server on a SQLite file has no bus: it reads the generation. */
    if (rc == ERR_OK && !store_is_shared(store_url(o)))
        bump_generation(st);
    st->ops->close(st);
    if (rc == ERR_NOTFOUND)
        return fail("no valid key with id %lld", id);
    if (rc != ERR_OK)
        return fail("cannot revoke the key: %s", err_str(rc));
    printf("revoked key %lld\n", id);
    return 0;
}

/* ---- sites (site analytics) ---- */

#define SITE_LIST_MAX 32 /* hosts given to site add */

static int parse_day_opt(const struct opts *o, const char *name, int64_t fallback, int64_t *day);

static int site_arg(const char *id)
{
    const char *why;
    if (site_id_check(id, strlen(id), &why) != ERR_OK)
        return fail("site id '%s' %s", id, why);
    return 0;
}

/* The owner of a site added without --owner: the first valid admin key's. */
static int first_admin_owner(const struct apikey *k, void *arg)
{
    int64_t *owner = arg;
    if (k->admin && !k->revoked_at && !*owner)
        *owner = k->owner ? k->owner : k->id;
    return *owner != 0;
}

static int cmd_site_add(struct opts *o)
{
    const char *id = o->pos[0], *hosts = opt(o, "hosts"), *owner = opt(o, "owner");
    if (site_arg(id))
        return 2;
    if (!hosts || !*hosts)
        return fail("--hosts is needed: the pages' hosts, comma-separated");
    char list[SITE_LIST_MAX][HOST_NAME_MAX_LEN + 1];
    size_t n = 0;
    for (const char *p = hosts; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *why;
        if (n == SITE_LIST_MAX)
            return fail("--hosts: at most %d hosts", SITE_LIST_MAX);
        if (site_host_check(p, len, list[n], &why) != ERR_OK)
            return fail("--hosts: '%.*s' %s", (int)len, p, why);
        n++;
        p = comma ? comma + 1 : p + len;
    }
    int64_t owner_id = 0;
    if (owner) {
        char *end;
        owner_id = strtoll(owner, &end, 10);
        if (!*owner || *end || owner_id <= 0)
            return fail("--owner must be an API key id, not '%s'", owner);
    }
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    int64_t admin_id = 0;
    int rc = owner ? ERR_OK : st->ops->key_list(st, first_admin_owner, &admin_id);
    if (!owner && rc == ERR_OK)
        owner_id = admin_id;
    if (rc == ERR_OK && owner_id <= 0) {
        st->ops->close(st);
        return fail("no admin key to own the site: give --owner KEY_ID");
    }
    struct site_info s = {.owner = owner_id,
                          .badge = opt(o, "badge") != NULL,
                          .created_at = now_ms()};
    snprintf(s.id, sizeof(s.id), "%s", id);
    const char *taken = NULL;
    if (rc == ERR_OK)
        rc = st->ops->begin(st);
    if (rc == ERR_OK) {
        rc = st->ops->site_insert(st, &s);
        for (size_t i = 0; i < n && rc == ERR_OK; i++) {
            rc = st->ops->site_host_add(st, list[i], s.id);
            if (rc == ERR_EXISTS)
                taken = list[i];
        }
        if (rc == ERR_OK)
            rc = st->ops->commit(st);
        else
            st->ops->rollback(st);
    }
    if (rc == ERR_OK)
        bump_generation(st); /* a running server reads the hosts again */
    st->ops->close(st);
    if (rc == ERR_EXISTS && taken)
        return fail("host '%s' belongs to a site already", taken);
    if (rc == ERR_EXISTS)
        return fail("a site with id '%s' exists", id);
    if (rc != ERR_OK)
        return fail("cannot add the site: %s", err_str(rc));
    printf("added site '%s' (owner %lld, %zu host%s)\n", id, (long long)owner_id, n,
           n == 1 ? "" : "s");
    return 0;
}

struct site_print {
    struct store *st;
    int rc;
};

static int print_host(const char *host, const char *site, void *arg)
{
    (void)site;
    struct buf *b = arg;
    buf_printf(b, "%s%s", b->len ? "," : "", host);
    return 0;
}

static int print_site(const struct site_info *x, void *arg)
{
    struct site_print *p = arg;
    struct buf hosts = BUF_INIT;
    p->rc = p->st->ops->site_hosts_list(p->st, x->id, print_host, &hosts);
    printf("%-24s %-8lld %-6s %-12lld %s\n", x->id, (long long)x->owner, x->badge ? "yes" : "no",
           (long long)x->pv_total, hosts.len ? hosts.p : "-");
    buf_release(&hosts);
    return p->rc != ERR_OK;
}

static int cmd_site_list(struct opts *o)
{
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    printf("%-24s %-8s %-6s %-12s %s\n", "ID", "OWNER", "BADGE", "PV_TOTAL", "HOSTS");
    struct site_print p = {st, ERR_OK};
    int rc = st->ops->site_list(st, -1, print_site, &p);
    st->ops->close(st);
    return rc == ERR_OK && p.rc == ERR_OK ? 0 : fail("cannot list sites");
}

/* Opens the store and finds site pos[0]: 0, or the exit status. */
static int open_site(struct opts *o, struct store **st, struct site_info *s)
{
    if (site_arg(o->pos[0]))
        return 2;
    if (open_store(o, false, st))
        return 1;
    int rc = (*st)->ops->site_get(*st, o->pos[0], s);
    if (rc == ERR_OK)
        return 0;
    (*st)->ops->close(*st);
    if (rc == ERR_NOTFOUND)
        return fail("no site '%s' (see 'shortd site list')", o->pos[0]);
    return fail("cannot read sites: %s", err_str(rc));
}

static int cmd_site_size(struct opts *o)
{
    struct store *st;
    struct site_info s;
    int status = open_site(o, &st, &s);
    if (status)
        return status;
    struct site_size sz;
    int rc = st->ops->site_size(st, s.id, &sz);
    st->ops->close(st);
    if (rc != ERR_OK)
        return fail("cannot size the site: %s", err_str(rc));
    printf("site '%s': %lld day rows, %lld bytes of tallies\n", s.id, (long long)sz.rows,
           (long long)sz.bytes);
    return 0;
}

struct usage_day {
    int64_t day, pv, bots;
};

struct usage {
    struct usage_day *d;
    size_t n, cap;
};

static int usage_day(int64_t day, int64_t pv, int64_t uniques, int64_t bots, void *arg)
{
    (void)uniques;
    struct usage *u = arg;
    if (u->n == u->cap) {
        u->cap = u->cap ? 2 * u->cap : 32;
        u->d = realloc(u->d, u->cap * sizeof(*u->d));
        if (!u->d)
            abort();
    }
    u->d[u->n++] = (struct usage_day){day, pv, bots};
    return 0;
}

static int usage_values(int dim, const char *value, int64_t n, void *arg)
{
    (void)dim, (void)value;
    *(int64_t *)arg += n;
    return 0;
}

static int cmd_site_usage(struct opts *o)
{
    int64_t to, from;
    if (parse_day_opt(o, "to", day_number(now_ms()), &to) ||
        parse_day_opt(o, "from", to - 29, &from))
        return 2;
    if (from > to || to - from >= STATS_MAX_DAYS)
        return fail("--from must not be after --to, and a range is at most %d days",
                    STATS_MAX_DAYS);
    struct store *st;
    struct site_info s;
    int status = open_site(o, &st, &s);
    if (status)
        return status;
    struct usage u = {0};
    int rc = st->ops->site_stats_days(st, s.id, from, to, usage_day, &u);
    printf("%-10s %-12s %-8s %s\n", "DAY", "PAGE_VIEWS", "BOTS", "VALUES");
    for (size_t i = 0; i < u.n && rc == ERR_OK; i++) {
        int64_t values = 0;
        rc = st->ops->site_stats_dims(st, s.id, u.d[i].day, u.d[i].day, usage_values, &values);
        char d[11];
        day_format(u.d[i].day, d);
        printf("%-10s %-12lld %-8lld %lld\n", d, (long long)u.d[i].pv, (long long)u.d[i].bots,
               (long long)values);
    }
    free(u.d);
    st->ops->close(st);
    return rc == ERR_OK ? 0 : fail("cannot read the site's days: %s", err_str(rc));
}

static int cmd_site_delete(struct opts *o)
{
    struct store *st;
    struct site_info s;
    int status = open_site(o, &st, &s);
    if (status)
        return status;
    int rc = st->ops->begin(st);
    if (rc == ERR_OK) {
        rc = st->ops->site_delete(st, s.id);
        if (rc == ERR_OK)
            rc = st->ops->commit(st);
        else
            st->ops->rollback(st);
    }
    if (rc == ERR_OK)
        bump_generation(st);
    st->ops->close(st);
    if (rc != ERR_OK)
        return fail("cannot delete the site: %s", err_str(rc));
    printf("deleted site '%s' and every row of it\n", s.id);
    return 0;
}

/* ---- users ---- */

/* Set while the terminal's echo is off, so that an interrupt turns it back
 * on before the process ends. */
static struct termios saved_tty;
static volatile sig_atomic_t tty_saved;

static void restore_tty_and_die(int sig)
{
    if (tty_saved)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* One line of stdin into pw[0..cap) without its line end; false when there
 * is none or it is longer than cap - 1 bytes (then *n is cap). */
static bool read_line(char *pw, size_t cap, size_t *n)
{
    *n = 0;
    int c;
    while ((c = getchar()) != EOF && c != '\n') {
        if (*n + 1 >= cap) {
            *n = cap;
            while ((c = getchar()) != EOF && c != '\n')
                ;
            return true;
        }
        pw[(*n)++] = (char)c;
    }
    if (*n && pw[*n - 1] == '\r')
        (*n)--;
    pw[*n] = '\0';
    return c != EOF || *n > 0;
}

/* A prompt on stderr, then a line read with the terminal's echo off. The
 * libc has no current function for this (getpass(3) is obsolete and has a
 * 128-byte line), and a line of termios is all it takes. */
static bool read_hidden(const char *prompt, char *pw, size_t cap, size_t *n)
{
    struct termios t;
    bool hidden = tcgetattr(STDIN_FILENO, &t) == 0;
    if (hidden) {
        saved_tty = t;
        tty_saved = 1;
        signal(SIGINT, restore_tty_and_die);
        signal(SIGTERM, restore_tty_and_die);
        t.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &t);
    }
    /* Only now: what is typed after the prompt is never echoed. */
    fputs(prompt, stderr);
    fflush(stderr);
    bool ok = read_line(pw, cap, n);
    if (hidden) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
        tty_saved = 0;
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
    }
    fputc('\n', stderr);
    return ok;
}

/* A new password for 'name': typed twice on a terminal, else the first line
 * of stdin. Returns 0, or the exit status after saying what was wrong. */
static int read_password(const char *name, char pw[PWHASH_PW_MAX + 2], size_t *n)
{
    const size_t cap = PWHASH_PW_MAX + 2;
    if (!isatty(STDIN_FILENO)) {
        if (!read_line(pw, cap, n))
            return fail("no password on stdin: give it as the first line");
    } else {
        char prompt[128];
        snprintf(prompt, sizeof(prompt), "password for '%s': ", name);
        char again[PWHASH_PW_MAX + 2];
        size_t n2 = 0;
        bool ok = read_hidden(prompt, pw, cap, n) && read_hidden("again: ", again, cap, &n2);
        bool same = ok && *n == n2 && sodium_memcmp(pw, again, n2) == 0;
        sodium_memzero(again, sizeof(again));
        if (!ok)
            return fail("no password given");
        if (!same)
            return fail("the two passwords differ: nothing changed");
    }
    const char *why = "";
    if (*n >= cap - 1 || users_password_valid(pw, *n, &why) != ERR_OK)
        return fail("the password %s", *n >= cap - 1 ? "must be 8 to 128 bytes" : why);
    return 0;
}

static int cmd_user_create(struct opts *o)
{
    const char *name = o->pos[0];
    const char *why = "";
    if (users_name_valid(name, &why) != ERR_OK)
        return fail("user name '%s' %s", name, why);
    enum user_role role = USER_MEMBER;
    const char *r = opt(o, "role");
    if (r && user_role_parse(r, &role) != ERR_OK)
        return fail("--role must be admin, member or viewer, not '%s'", r);
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    struct user u;
    int rc = st->ops->user_by_name(st, name, &u);
    if (rc != ERR_NOTFOUND) {
        st->ops->close(st);
        return rc == ERR_OK ? fail("a user named '%s' exists already", name)
                            : fail("cannot read users: %s", err_str(rc));
    }
    char pw[PWHASH_PW_MAX + 2];
    size_t n = 0;
    int status = read_password(name, pw, &n);
    int64_t id = 0;
    if (!status) {
        rc = users_create(st, name, pw, n, role, now_ms(), &id, &why);
        if (rc == ERR_OK)
            printf("created %s user %lld '%s'\n", user_role_name(role), (long long)id, name);
        else if (rc == ERR_EXISTS)
            status = fail("a user named '%s' exists already", name);
        else if (rc == ERR_INVALID)
            status = fail("the password %s", why);
        else
            status = fail("cannot create the user: %s", err_str(rc));
    }
    sodium_memzero(pw, sizeof(pw));
    st->ops->close(st);
    return status;
}

static int print_user(const struct user *u, void *arg)
{
    (void)arg;
    char created[RFC3339_MAX], disabled[RFC3339_MAX] = "-";
    rfc3339_format(u->created_at, created);
    if (u->disabled_at)
        rfc3339_format(u->disabled_at, disabled);
    printf("%-6lld %-24s %-7s %-9s %-24s %-24s %lld\n", (long long)u->id, u->name,
           user_role_name(u->role), u->disabled_at ? "disabled" : "active", created, disabled,
           (long long)u->key_id);
    return 0;
}

static int cmd_user_list(struct opts *o)
{
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    printf("%-6s %-24s %-7s %-9s %-24s %-24s %s\n", "ID", "NAME", "ROLE", "STATE", "CREATED",
           "DISABLED_AT", "OWNER_KEY");
    int rc = st->ops->user_list(st, print_user, NULL);
    st->ops->close(st);
    return rc == ERR_OK ? 0 : fail("cannot list users: %s", err_str(rc));
}

static int cmd_user_set_password(struct opts *o)
{
    const char *name = o->pos[0];
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    struct user u;
    int rc = st->ops->user_by_name(st, name, &u);
    if (rc != ERR_OK) {
        st->ops->close(st);
        return rc == ERR_NOTFOUND ? fail("no user named '%s' (see 'shortd user list')", name)
                                  : fail("cannot read users: %s", err_str(rc));
    }
    char pw[PWHASH_PW_MAX + 2];
    size_t n = 0;
    const char *why = "";
    int status = read_password(name, pw, &n);
    if (!status) {
        rc = users_set_password(st, name, pw, n, &why);
        if (rc == ERR_OK)
            printf("set the password of user '%s'; their sessions ended\n", name);
        else if (rc == ERR_NOTFOUND)
            status = fail("no user named '%s' (see 'shortd user list')", name);
        else if (rc == ERR_INVALID)
            status = fail("the password %s", why);
        else
            status = fail("cannot set the password: %s", err_str(rc));
    }
    sodium_memzero(pw, sizeof(pw));
    st->ops->close(st);
    return status;
}

static int cmd_user_disable(struct opts *o)
{
    const char *name = o->pos[0];
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    struct user u;
    int rc = st->ops->user_by_name(st, name, &u);
    if (rc == ERR_OK && u.disabled_at)
        rc = ERR_EXISTS;
    if (rc == ERR_OK)
        rc = users_disable(st, name, now_ms());
    /* Their API keys are refused at once: on PostgreSQL user_disable told
     * every node over the bus; a server on a SQLite file reads the generation. */
    if (rc == ERR_OK && !store_is_shared(store_url(o)))
        bump_generation(st);
    st->ops->close(st);
    if (rc == ERR_NOTFOUND)
        return fail("no user named '%s' (see 'shortd user list')", name);
    if (rc == ERR_EXISTS)
        return fail("user '%s' is disabled already", name);
    if (rc != ERR_OK)
        return fail("cannot disable the user: %s", err_str(rc));
    printf("disabled user '%s'; their sessions ended\n", name);
    return 0;
}

struct key_find {
    int64_t id;
    bool valid;
};

static int find_valid_key(const struct apikey *k, void *arg)
{
    struct key_find *f = arg;
    f->valid = k->id == f->id && !k->revoked_at;
    return f->valid;
}

static int cmd_key_yourls_token(struct opts *o)
{
    char *end = NULL;
    long long id = strtoll(o->pos[0], &end, 10);
    if (!*o->pos[0] || *end || id <= 0)
        return fail("key id must be a positive whole number, not '%s'", o->pos[0]);
    struct store *st;
    struct links *l;
    if (open_links(o, false, &st, &l))
        return 1;
    struct key_find f = {.id = id};
    int rc = st->ops->key_list(st, find_valid_key, &f);
    char token[YOURLS_TOKEN_LEN + 1];
    if (rc == ERR_OK && f.valid) {
        links_yourls_token(l, id, token);
        printf("%s\n", token);
        sodium_memzero(token, sizeof(token));
    }
    links_free(l);
    st->ops->close(st);
    if (rc != ERR_OK)
        return fail("cannot list keys: %s", err_str(rc));
    return f.valid ? 0 : fail("no valid key with id %lld", id);
}

struct first_admin {
    int64_t id;
};

static int find_admin(const struct apikey *k, void *arg)
{
    struct first_admin *f = arg;
    if (k->admin && !k->revoked_at) {
        f->id = k->id;
        return 1;
    }
    return 0;
}

struct cli_create {
    struct wjob job;
    struct links *links;
    struct link_input in;
    int64_t owner;
    struct link link;
    int result;
};

static int cli_create_run(struct wjob *j, struct store *st)
{
    struct cli_create *c = (struct cli_create *)j;
    bool reused;
    c->result = links_create(c->links, st, &c->in, c->owner, now_ms(), &c->link, &reused);
    return c->result;
}

static void cli_create_done(struct wjob *j)
{
    struct cli_create *c = (struct cli_create *)j;
    if (j->rc != ERR_OK && c->result == ERR_OK)
        c->result = j->rc;
}

static int cmd_link_create(struct opts *o)
{
    const char *url = opt(o, "url");
    if (!url)
        return fail("'link create' needs --url URL");
    json_t *body = json_pack("{s:s}", "url", url);
    if (!body)
        return fail("--url must be UTF-8 text");
    if (opt(o, "alias"))
        json_object_set_new(body, "alias", json_string(opt(o, "alias")));
    if (opt(o, "title"))
        json_object_set_new(body, "title", json_string(opt(o, "title")));
    if (opt(o, "permanent"))
        json_object_set_new(body, "permanent", json_true());
    if (opt(o, "ttl")) {
        char *end = NULL;
        long long ttl = strtoll(opt(o, "ttl"), &end, 10);
        if (!*opt(o, "ttl") || *end) {
            json_decref(body);
            return fail("--ttl must be a whole number of seconds");
        }
        json_object_set_new(body, "ttl", json_integer(ttl));
    }
    struct store *st;
    struct links *l;
    if (open_links(o, false, &st, &l)) {
        json_decref(body);
        return 1;
    }
    int rc = 0;
    struct cli_create c = {.links = l};
    const char *field = NULL;
    char why[256];
    if (links_parse(l, body, now_ms(), &c.in, &field, why, sizeof(why)) != ERR_OK) {
        rc = fail("--%s %s", field ? field : "url", why);
        goto out;
    }
    if (opt(o, "owner")) {
        c.owner = strtoll(opt(o, "owner"), NULL, 10);
    } else {
        struct first_admin f = {0};
        st->ops->key_list(st, find_admin, &f);
        c.owner = f.id;
        if (!c.owner) {
            rc = fail("no admin key exists yet: give --owner KEY_ID");
            goto out;
        }
    }
    c.job.run = cli_create_run;
    c.job.done = cli_create_done;
    writer_run_now(st, &c.job);
    if (c.result == ERR_EXISTS) {
        rc = fail("alias '%s' is taken (or was used before)", c.in.alias);
    } else if (c.result == ERR_FORBIDDEN) {
        rc = fail("destination host is blocked");
    } else if (c.result != ERR_OK) {
        rc = fail("cannot create the link: %s", err_str(c.result));
    } else {
        bump_generation(st);
        const char *base = opt(o, "base-url") ? opt(o, "base-url") : "http://127.0.0.1:8080";
        printf("short_url: %s/%s\ncode: %s\n", base, c.link.code, c.link.code);
    }
out:
    link_release(&c.link);
    link_input_release(&c.in);
    json_decref(body);
    links_free(l);
    st->ops->close(st);
    return rc;
}

static int print_link(const struct link *l, void *arg)
{
    int64_t now = *(int64_t *)arg;
    char created[RFC3339_MAX];
    rfc3339_format(l->created_at, created);
    printf("%-12s %-9s %8lld  %-24s %s\n", l->code, link_state_name(l, now), (long long)l->clicks,
           created, l->url ? l->url : "-");
    return 0;
}

static int cmd_link_list(struct opts *o)
{
    long long limit;
    int bad = opt_int(o, "limit", 1, 1000000, 100, &limit);
    if (bad)
        return bad;
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    int64_t now = now_ms();
    struct link_query q = {.owner = -1,
                           .want_live = true,
                           .want_expired = true,
                           .want_exhausted = true,
                           .now = now,
                           .limit = (int)limit};
    if (opt(o, "all"))
        q.states = (1u << LINK_DELETED) | (1u << LINK_DISABLED);
    printf("%-12s %-9s %8s  %-24s %s\n", "CODE", "STATE", "CLICKS", "CREATED", "URL");
    int rc = st->ops->link_list(st, &q, print_link, &now);
    st->ops->close(st);
    return rc == ERR_OK ? 0 : fail("cannot list links");
}

static int cmd_link_delete(struct opts *o)
{
    const char *code = o->pos[0];
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    int rc = st->ops->begin(st);
    if (rc == ERR_OK)
        rc = st->ops->link_set_state(st, code, LINK_DELETED, now_ms());
    if (rc == ERR_OK)
        rc = st->ops->commit(st);
    else
        st->ops->rollback(st);
    if (rc == ERR_OK)
        bump_generation(st);
    /* The serving nodes' own caches follow the generation; of the tiers
     * (tiers.h) only Redis is there to tell. */
    const char *cache = opt(o, "cache") ? opt(o, "cache") : getenv("SHORTD_CACHE");
    struct link l;
    if (rc == ERR_OK && cache && st->ops->link_get(st, code, &l) == ERR_OK) {
        struct app tiers = {0};
        if (rcache_new(cache, 1000, &tiers.rcache) != ERR_OK ||
            link_changed(&tiers, &l, LINK_EDITED, now_ms()) != ERR_OK)
            fprintf(stderr,
                    "shortd: warning: could not update the shared cache; it keeps the "
                    "old state of '%s' for up to 24 h\n",
                    code);
        rcache_free(tiers.rcache);
        link_release(&l);
    }
    st->ops->close(st);
    if (rc == ERR_NOTFOUND)
        return fail("no link with code '%s'", code);
    if (rc != ERR_OK)
        return fail("cannot delete '%s': %s", code, err_str(rc));
    printf("deleted %s\n", code);
    return 0;
}

static void backup_progress(int64_t done, int64_t total, void *arg)
{
    progress_update(arg, (uint64_t)done, (uint64_t)total);
}

static int cmd_backup(struct opts *o)
{
    const char *to = opt(o, "to");
    if (!to || !*to)
        return fail("'backup' needs --to FILE");
    int mode = opt_progress(o);
    if (mode < 0)
        return 2;
    bool record_only = opt(o, "record-only") != NULL;
    struct stat sb;
    if (record_only && stat(to, &sb) != 0)
        return fail("--record-only: no backup at '%s' to record", to);
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    int rc = ERR_OK;
    if (!record_only) {
        struct progress *p = progress_new("backup", "pages", mode);
        store_set_backup_progress(backup_progress, p);
        rc = st->ops->backup(st, to);
        store_set_backup_progress(NULL, NULL);
        progress_end(p);
    }
    if (rc != ERR_OK) {
        st->ops->close(st);
        return fail("backup to '%s' failed", to);
    }
    /* Recorded for the backup check: when it ended (the file's time for a
     * backup made elsewhere), its size, and where it was made. */
    char host[256] = "";
    const char *node = opt(o, "node");
    if (!node) {
        gethostname(host, sizeof(host) - 1);
        node = host;
    }
    int64_t ended = now_ms();
    if (stat(to, &sb) == 0 && record_only)
        ended = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
    rc = st->ops->backup_note(st, ended, stat(to, &sb) == 0 ? (int64_t)sb.st_size : 0, node);
    st->ops->close(st);
    if (rc != ERR_OK)
        return fail("backed up to '%s', but could not record it in the store", to);
    printf("%s %s\n", record_only ? "recorded the backup" : "backed up to", to);
    return 0;
}

static int cmd_config_example(struct opts *o)
{
    (void)o;
    config_print_example(stdout);
    return 0;
}

static int cmd_version(struct opts *o)
{
    (void)o;
    printf("shortd %s (%s)\n", SHORTD_VERSION, SHORTD_COMMIT);
    return 0;
}

static int cmd_man(struct opts *o)
{
    (void)o;
    struct man_command cmds[NCOMMANDS];
    for (int i = 0; i < NCOMMANDS; i++)
        cmds[i] = (struct man_command){commands[i].name, commands[i].usage};
    char version[128];
    snprintf(version, sizeof(version), "%s (%s)", SHORTD_VERSION, SHORTD_COMMIT);
    manpage_write(stdout, version, cmds, NCOMMANDS);
    return 0;
}

/* ---- complete ---- */

static void candidate(const char *prefix, const char *w, size_t n)
{
    size_t p = strlen(prefix);
    if (n >= p && !strncmp(w, prefix, p))
        printf("%.*s\n", (int)n, w);
}

/* Each word of a space-separated list, as --word. */
static void option_candidates(const char *prefix, const char *list)
{
    char w[80];
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, " ");
        if (len && len + 2 < sizeof(w)) {
            snprintf(w, sizeof(w), "--%.*s", (int)len, p);
            candidate(prefix, w, strlen(w));
        }
        p += len;
        while (*p == ' ')
            p++;
    }
}

static bool takes_value(const struct command *c, const char *arg)
{
    if (strncmp(arg, "--", 2) || strchr(arg, '='))
        return false;
    if (!strcmp(c->options, "*"))
        return config_is_setting(arg + 2);
    return word_in(c->options, arg + 2);
}

/* The words of the table that can follow words[0..n-1], starting with 'cur'.
 * Nothing after an option that takes a value: the shell completes a file. */
static int cmd_complete(struct opts *o)
{
    const char *cur = o->npos ? o->pos[o->npos - 1] : "";
    const char **words = o->pos;
    int n = o->npos ? o->npos - 1 : 0;
    if (n == 0) {
        for (int i = 0; i < NCOMMANDS; i++) {
            /* A group ("key create", "key list") is one word, once. */
            size_t len = strcspn(commands[i].name, " ");
            const char *prev = i ? commands[i - 1].name : "";
            if (strcspn(prev, " ") != len || strncmp(prev, commands[i].name, len))
                candidate(cur, commands[i].name, len);
        }
        candidate(cur, "--help", 6);
        candidate(cur, "--version", 9);
        return 0;
    }
    const struct command *c = NULL;
    int used = 1;
    for (int i = 0; i < NCOMMANDS && !c; i++) {
        const char *name = commands[i].name;
        size_t len = strcspn(name, " ");
        if (strlen(words[0]) != len || strncmp(name, words[0], len))
            continue;
        if (!name[len]) {
            c = &commands[i];
        } else if (n == 1) {
            candidate(cur, name + len + 1, strlen(name + len + 1));
        } else if (!strcmp(words[1], name + len + 1)) {
            c = &commands[i];
            used = 2;
        }
    }
    if (!c || c->npos < 0 || (n > used && takes_value(c, words[n - 1])))
        return 0;
    if (*cur && *cur != '-')
        return 0;
    option_candidates(cur, c->flags);
    if (!strcmp(c->options, "*")) {
        for (size_t i = 0; i < config_count(); i++) {
            struct config_info s;
            config_info(i, &s);
            option_candidates(cur, s.name);
        }
    } else {
        option_candidates(cur, c->options);
    }
    candidate(cur, "--help", 6);
    return 0;
}

static int parse_day_opt(const struct opts *o, const char *name, int64_t fallback, int64_t *day)
{
    const char *v = opt(o, name);
    if (!v) {
        *day = fallback;
        return 0;
    }
    if (day_parse(v, strlen(v), day) != ERR_OK)
        return fail("--%s must be a day, YYYY-MM-DD", name);
    return 0;
}

static int cmd_stats(struct opts *o)
{
    int64_t to, from;
    if (parse_day_opt(o, "to", day_number(now_ms()), &to) ||
        parse_day_opt(o, "from", to - 29, &from))
        return 2;
    if (from > to || to - from >= STATS_MAX_DAYS)
        return fail("--from must not be after --to, and a range is at most %d days",
                    STATS_MAX_DAYS);
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    struct link l;
    int rc = st->ops->link_get(st, o->pos[0], &l);
    json_t *doc = NULL;
    if (rc == ERR_OK) {
        rc = report_stats(st, &l, from, to, &doc);
        link_release(&l);
    }
    st->ops->close(st);
    if (rc == ERR_NOTFOUND)
        return fail("no link with code '%s'", o->pos[0]);
    if (rc != ERR_OK)
        return fail("cannot read the stats: %s", err_str(rc));
    json_dumpf(doc, stdout, JSON_INDENT(2));
    fputc('\n', stdout);
    json_decref(doc);
    return 0;
}

static int cmd_export(struct opts *o)
{
    const char *f = opt(o, "format") ? opt(o, "format") : "json";
    enum export_format fmt;
    if (!strcmp(f, "json"))
        fmt = EXPORT_JSON;
    else if (!strcmp(f, "csv"))
        fmt = EXPORT_CSV;
    else
        return fail("--format must be json or csv");
    int64_t owner = opt(o, "owner") ? strtoll(opt(o, "owner"), NULL, 10) : -1;
    int mode = opt_progress(o);
    if (mode < 0)
        return 2;
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    /* The number of links is known without a scan only for all owners */
    int64_t total = 0;
    if (owner < 0 && st->ops->link_count(st, &total) != ERR_OK)
        total = 0;
    struct progress *p = progress_new("export", "links", mode);
    const char *base = opt(o, "base-url") ? opt(o, "base-url") : "http://127.0.0.1:8080";
    struct export *x = export_new(st, owner, fmt, base);
    struct buf piece = BUF_INIT;
    int more;
    do {
        buf_reset(&piece);
        more = export_next(x, &piece);
        fwrite(piece.p ? piece.p : "", 1, piece.len, stdout);
        progress_update(p, (uint64_t)export_count(x), (uint64_t)total);
    } while (more > 0);
    progress_end(p);
    buf_release(&piece);
    export_free(x);
    st->ops->close(st);
    return more < 0 ? fail("the export failed: the store did not answer") : 0;
}

struct prune_job {
    struct wjob job;
    int64_t before;
    int pruned;
};

static int prune_run(struct wjob *j, struct store *st)
{
    struct prune_job *p = (struct prune_job *)j;
    return st->ops->prune_days(st, p->before, 5000, &p->pruned);
}

static void prune_done(struct wjob *j) { (void)j; }

static int cmd_prune(struct opts *o)
{
    long long days;
    int bad = opt_int(o, "retention-days", 1, 36500, 400, &days);
    if (bad)
        return bad;
    int mode = opt_progress(o);
    if (mode < 0)
        return 2;
    struct store *st;
    if (open_store(o, false, &st))
        return 1;
    long long total = 0;
    struct prune_job p = {.before = day_number(now_ms()) - days};
    p.job.run = prune_run;
    p.job.done = prune_done;
    struct progress *line = progress_new("prune", "rows", mode);
    do {
        p.pruned = 0;
        writer_run_now(st, &p.job);
        total += p.pruned;
        progress_update(line, (uint64_t)total, 0);
    } while (p.job.rc == ERR_OK && p.pruned > 0);
    progress_end(line);
    int rc = p.job.rc;
    st->ops->close(st);
    if (rc != ERR_OK)
        return fail("pruning failed: %s", err_str(rc));
    printf("pruned %lld per-day rows older than %lld days\n", total, days);
    return 0;
}

/* ---- migrate ---- */

static int cmd_migrate(struct opts *o)
{
    const char *url = opt(o, "store");
    if (!url)
        url = opt(o, "db");
    if (!url)
        url = getenv("SHORTD_STORE");
    if (!url)
        url = getenv("SHORTD_DB");
    if (!url)
        return fail("'migrate' needs --store URL");
    if (!strncmp(url, "postgres://", 11) || !strncmp(url, "postgresql://", 13)) {
        /* Never print the URL: it may hold a password. */
        int from = 0, to = 0;
        if (store_pg_migrate(url, &from, &to) != ERR_OK)
            return fail("cannot migrate the postgres store (the log says why)");
        if (from == to)
            printf("schema %d is current\n", to);
        else
            printf("migrated schema %d to %d\n", from, to);
    }
    /* The store's secrets are made here, once, rather than by the first
     * nodes to start, which could race each other to write them. */
    const char *path;
    bool made = sqlite_missing(url, &path);
    struct store *st;
    struct links *l;
    if (open_links(o, true, &st, &l))
        return 1;
    links_free(l);
    st->ops->close(st);
    if (made)
        printf("created the sqlite store '%s'\n", path);
    else if (strncmp(url, "postgres://", 11) && strncmp(url, "postgresql://", 13))
        printf("sqlite store is current (it migrates itself when opened)\n");
    return 0;
}

/* ---- migrate-store ---- */

struct copy_progress {
    int64_t shown;       /* rows of the current table last reported */
    struct progress *pg; /* the progress line, NULL when not shown */
    char what[64];       /* "migrate-store: TABLE" */
};

static void copy_progress(const char *table, int64_t rows, bool done, void *arg)
{
    struct copy_progress *p = arg;
    if (p->pg && !done) {
        snprintf(p->what, sizeof(p->what), "migrate-store: %s", table);
        progress_set_what(p->pg, p->what);
        progress_update(p->pg, (uint64_t)rows, 0);
        return;
    }
    if (done) {
        progress_clear(p->pg);
        fprintf(stderr, "migrate-store: %s: %lld rows read\n", table, (long long)rows);
        p->shown = 0;
    } else if (rows - p->shown >= 100000) {
        fprintf(stderr, "migrate-store: %s: %lld rows so far\n", table, (long long)rows);
        p->shown = rows;
    }
}

static void print_count(const char *what, int64_t a, int64_t b, const char *extra)
{
    printf("%-22s %12lld %12lld %s%s\n", what, (long long)a, (long long)b, extra,
           a == b ? "ok" : "DIFFERS");
}

static int cmd_migrate_store(struct opts *o)
{
    const char *from = opt(o, "from"), *to = opt(o, "to");
    if (!from || !*from || !to || !*to)
        return fail("'migrate-store' needs --from URL and --to URL");
    /* Never print a URL as given: it may hold a password. */
    char from_shown[512], to_shown[512];
    store_redact(from, from_shown, sizeof(from_shown));
    store_redact(to, to_shown, sizeof(to_shown));
    if (!strcmp(from, to))
        return fail("--from and --to are the same store");
    long long batch = MIGRATE_BATCH_ROWS;
    if (opt(o, "batch-rows")) {
        char *end = NULL;
        batch = strtoll(opt(o, "batch-rows"), &end, 10);
        if (!*opt(o, "batch-rows") || *end || batch < 1 || batch > 100000)
            return fail("--batch-rows must be a whole number from 1 to 100000");
    }
    int mode = opt_progress(o);
    if (mode < 0)
        return 2;
    const char *path;
    if (sqlite_missing(from, &path))
        return fail("no database at '%s'", path);
    struct store *src, *dst;
    if (store_open(from, &src) != ERR_OK) {
        fail("cannot open the source store '%s'", from_shown);
        return 1;
    }
    if (store_open(to, &dst) != ERR_OK) {
        src->ops->close(src);
        fail("cannot open the target store '%s' (the log above says why): a new PostgreSQL "
             "database must be prepared first with shortd migrate --store URL",
             to_shown);
        return 1;
    }
    fprintf(stderr, "migrate-store: copying '%s' into '%s'\n", from_shown, to_shown);
    struct migrate_result r;
    struct copy_progress p = {.pg = progress_new("migrate-store", "rows", mode)};
    char why[512] = "";
    int rc = migrate_store(src, dst, (size_t)batch, copy_progress, &p, &r, why, sizeof(why));
    progress_free(p.pg);
    src->ops->close(src);
    dst->ops->close(dst);
    if (rc == ERR_INVALID) {
        fail("refusing to copy into '%s': %s", to_shown, why);
        return 1;
    }
    if (rc != ERR_OK) {
        fail("the copy stopped: %s (the log above says where); what was written stays, and "
             "running the same command again carries on",
             err_str(rc));
        return 1;
    }
    printf("%-22s %12s %12s %s\n", "TABLE", "SOURCE", "TARGET", "WRITTEN");
    for (int i = 0; i < TABLE__COUNT; i++) {
        char written[32];
        snprintf(written, sizeof(written), "%-8lld", (long long)r.t[i].written);
        print_count(store_tables[i].name, r.t[i].from.rows, r.t[i].to.rows, written);
    }
    for (int i = 0; i < TABLE__COUNT; i++) {
        for (int k = 0; k < 2; k++) {
            if (!store_tables[i].sum[k])
                continue;
            char what[64];
            snprintf(what, sizeof(what), "sum %s.%s", store_tables[i].name, store_tables[i].sum[k]);
            print_count(what, r.t[i].from.sum[k], r.t[i].to.sum[k], "");
        }
    }
    fflush(stdout);
    if (!migrate_store_verified(&r)) {
        fail("the counts differ: either the source changed during the copy (stop what writes "
             "to it and run the same command again), or the target holds links or keys that "
             "the source does not (a copy never removes those)");
        return 1;
    }
    printf("verified: the target holds every row of the source\n");
    return 0;
}

/* ---- import ---- */

struct import_tiers {
    struct app app; /* only its rcache */
    struct store *st;
    bool warned;
};

/* A link the import replaced: the shared Redis cache learns it (the serving
 * nodes' own caches follow the change generation). */
static void import_replaced(const char *code, void *arg)
{
    struct import_tiers *t = arg;
    struct link l;
    if (t->st->ops->link_get(t->st, code, &l) != ERR_OK)
        return;
    if (link_changed(&t->app, &l, LINK_EDITED, now_ms()) != ERR_OK && !t->warned) {
        fprintf(stderr, "shortd: warning: could not update the shared cache; it keeps the old "
                        "destinations of replaced links for up to 24 h\n");
        t->warned = true;
    }
    link_release(&l);
}

static int cmd_import(struct opts *o)
{
    const struct import_format *f = import_format_find(o->pos[0]);
    if (!f) {
        fprintf(stderr, "shortd: unknown import format '%s'; the formats are:\n", o->pos[0]);
        for (const struct import_format *x = import_formats; x->name; x++)
            fprintf(stderr, "  %-7s %s\n", x->name, x->what);
        return 2;
    }
    struct import_opts io = {0};
    const char *c = opt(o, "on-conflict") ? opt(o, "on-conflict") : "skip";
    if (!strcmp(c, "skip"))
        io.conflict = IMPORT_SKIP;
    else if (!strcmp(c, "keep"))
        io.conflict = IMPORT_KEEP;
    else if (!strcmp(c, "fail"))
        io.conflict = IMPORT_FAIL;
    else
        return fail("--on-conflict must be skip, keep or fail");
    int mode = opt_progress(o);
    if (mode < 0)
        return 2;
    io.progress = mode;
    long long batch;
    int bad = opt_int(o, "batch-rows", 1, 1000000, IMPORT_BATCH_ROWS, &batch);
    if (bad)
        return bad;
    io.batch_rows = (size_t)batch;
    io.dry_run = opt(o, "dry-run") != NULL;
    struct store *st;
    struct links *l;
    if (open_links(o, false, &st, &l))
        return 1;
    int rc = 0;
    if (opt(o, "owner")) {
        long long owner;
        if ((rc = opt_int(o, "owner", 1, INT64_MAX, 0, &owner)))
            goto out;
        struct key_find k = {.id = owner};
        st->ops->key_list(st, find_valid_key, &k);
        if (!k.valid) {
            rc = fail("--owner %lld is not a valid API key's id (see 'shortd key list')", owner);
            goto out;
        }
        io.owner = owner;
    } else {
        struct first_admin a = {0};
        st->ops->key_list(st, find_admin, &a);
        io.owner = a.id;
        if (!io.owner) {
            rc = fail("no admin key exists yet: give --owner KEY_ID");
            goto out;
        }
    }
    const char *cache = opt(o, "cache") ? opt(o, "cache") : getenv("SHORTD_CACHE");
    struct import_tiers tiers = {.st = st};
    if (cache && *cache && io.conflict == IMPORT_KEEP && !io.dry_run) {
        if (rcache_new(cache, 1000, &tiers.app.rcache) != ERR_OK) {
            rc = fail("cannot use the cache '%s'", cache);
            goto out;
        }
        io.replaced = import_replaced;
        io.replaced_arg = &tiers;
    }
    struct import_summary sum;
    int irc = import_run(st, l, f, o->pos[1], &io, &sum);
    rcache_free(tiers.app.rcache);
    const char *dry = io.dry_run || sum.failed_on_conflict ? " (dry run: nothing written)" : "";
    fprintf(stderr,
            "import: %s '%s'%s\n"
            "  links imported     %lld\n"
            "  already there      %lld\n"
            "  conflicts          %lld (%s)\n"
            "  refused rows       %lld\n"
            "  visits imported    %lld (bots %lld); dropped %lld (their links were there or "
            "refused)\n"
            "  tallies            %lld rows, %lld clicks\n"
            "  imported totals    %lld clicks with no visit to show\n"
            "  domains added      %lld\n",
            f->name, o->pos[1], dry, (long long)sum.links_imported, (long long)sum.links_there,
            (long long)sum.conflicts,
            io.conflict == IMPORT_KEEP   ? "replaced by the source's"
            : io.conflict == IMPORT_FAIL ? "nothing written if any"
                                         : "the store's kept",
            (long long)sum.refused, (long long)sum.visits, (long long)sum.visit_bots,
            (long long)sum.visits_dropped, (long long)sum.tallies, (long long)sum.tally_clicks,
            (long long)sum.imported_clicks, (long long)sum.domains_added);
    if (opt(o, "json")) {
        json_t *j = json_pack("{s:s,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b}",
                              "format", f->name, "dry_run", io.dry_run || sum.failed_on_conflict,
                              "links_imported", (json_int_t)sum.links_imported, "already_there",
                              (json_int_t)sum.links_there, "conflicts", (json_int_t)sum.conflicts,
                              "replaced", (json_int_t)sum.replaced, "refused",
                              (json_int_t)sum.refused, "visits", (json_int_t)sum.visits,
                              "visit_bots", (json_int_t)sum.visit_bots, "visits_dropped",
                              (json_int_t)sum.visits_dropped, "tallies", (json_int_t)sum.tallies,
                              "tally_clicks", (json_int_t)sum.tally_clicks, "imported_clicks",
                              (json_int_t)sum.imported_clicks, "domains_added",
                              (json_int_t)sum.domains_added, "ok",
                              irc == ERR_OK && !sum.failed_on_conflict);
        json_dumpf(j, stdout, JSON_COMPACT);
        fputc('\n', stdout);
        json_decref(j);
    }
    if (irc != ERR_OK)
        rc = fail("the import stopped: %s; what was committed stays, and running the same "
                  "command again carries on",
                  err_str(irc));
    else if (sum.failed_on_conflict)
        rc = fail("%lld conflict%s (listed above): nothing was written", (long long)sum.conflicts,
                  sum.conflicts == 1 ? "" : "s");
    if (rc == 2)
        rc = 1;
out:
    links_free(l);
    st->ops->close(st);
    return rc;
}

/* ---- doctor ---- */

/* The URL of the node `ops check` asks: --url, else http:// + its listen
 * address (--listen, the config file's, SHORTD_LISTEN, or the default). */
static int cmd_ops_check(struct opts *o)
{
    char err[512];
    struct buf url = BUF_INIT;
    if (opt(o, "url")) {
        buf_adds(&url, opt(o, "url"));
    } else {
        struct config cfg;
        config_init(&cfg);
        const char *file = opt(o, "config");
        if (!file)
            file = getenv("SHORTD_CONFIG");
        int rc = file && *file ? config_load_file(&cfg, file, err, sizeof(err)) : ERR_OK;
        if (rc == ERR_OK)
            rc = config_load_env(&cfg, err, sizeof(err));
        if (rc == ERR_OK && opt(o, "listen"))
            rc = config_set(&cfg, "listen", opt(o, "listen"), err, sizeof(err));
        if (rc != ERR_OK) {
            config_release(&cfg);
            return fail("%s", err);
        }
        /* A node listening on every address answers on loopback too. */
        const char *l = cfg.listen;
        if (!strncmp(l, "0.0.0.0:", 8))
            buf_printf(&url, "http://127.0.0.1%s", l + 7);
        else if (!strncmp(l, "[::]:", 5))
            buf_printf(&url, "http://[::1]%s", l + 4);
        else
            buf_printf(&url, "http://%s", l);
        config_release(&cfg);
    }
    while (url.len && url.p[url.len - 1] == '/')
        url.p[--url.len] = '\0';
    char key[256] = "";
    const char *file = opt(o, "key-file");
    if (file) {
        FILE *f = fopen(file, "r");
        if (!f || !fgets(key, sizeof(key), f)) {
            if (f)
                fclose(f);
            buf_release(&url);
            return fail("--key-file: cannot read a key from '%s'", file);
        }
        fclose(f);
        key[strcspn(key, "\r\n")] = '\0';
    } else if (getenv("SHORTD_OPS_KEY")) {
        snprintf(key, sizeof(key), "%s", getenv("SHORTD_OPS_KEY"));
    }
    if (!key[0]) {
        buf_release(&url);
        fprintf(stderr, "shortd: ops check needs an API key of the ops scope: SHORTD_OPS_KEY "
                        "or --key-file\n");
        return 2;
    }
    int rc = opscheck_run(url.p, key, opt(o, "json") != NULL, stdout, stderr);
    sodium_memzero(key, sizeof(key));
    buf_release(&url);
    return rc;
}

static int cmd_doctor(struct opts *o)
{
    const char *file = opt(o, "config");
    if (!file)
        file = getenv("SHORTD_CONFIG");
    const char *names[MAX_OPTS], *values[MAX_OPTS];
    int n = 0;
    for (int i = 0; i < o->n; i++) {
        if (!strcmp(o->name[i], "json") || !strcmp(o->name[i], "config"))
            continue;
        names[n] = o->name[i];
        values[n++] = o->value[i] ? o->value[i] : "true";
    }
    /* Every finding is printed; the modules' own log lines would repeat them. */
    log_level = LOG_OFF;
    struct doctor *d = doctor_new(file && *file ? file : NULL, n, names, values);
    doctor_run(d);
    int rc = doctor_print(d, stdout, opt(o, "json") != NULL);
    doctor_free(d);
    return rc;
}
