/* cli_events.c - the sink and failed-archive commands (cli_events.h).
 * Writes run in a transaction of their own on the CLI's thread; a serving
 * node reads the sinks again within a second. Nothing here deletes a
 * failed batch: replay records its outcome, resolve who and why. */
#include "app/cli_events.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/timeutil.h"
#include "events/events.h"
#include "events/sign.h"
#include "store/store.h"
#include "base/banned.h"

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

static bool parse_id(const char *s, int64_t *id)
{
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v <= 0)
        return false;
    *id = v;
    return true;
}

int cli_sink_add(struct store *st, const struct cli_sink_args *a)
{
    if (!a->kind || !a->endpoint)
        return fail("sink add needs --kind webhook|ingest|redis-stream and --endpoint URL");
    struct sink s = {
        .kind = (char *)a->kind,
        .endpoint = (char *)a->endpoint,
        .types = (char *)(a->types ? a->types : ""),
        .owner = -1,
        .domain = (char *)a->domain,
        .secret = (char *)a->secret,
        .options = (char *)(a->options ? a->options : "{}"),
    };
    if (a->owner && !parse_id(a->owner, &s.owner))
        return fail("--owner must be a key id (a positive whole number), not '%s'", a->owner);
    char why[256] = "";
    int rc = st->ops->begin(st);
    if (rc == ERR_OK)
        rc = events_sink_create(st, &s, now_ms(), why, sizeof(why));
    if (rc == ERR_OK)
        rc = st->ops->commit(st);
    else
        st->ops->rollback(st);
    if (rc == ERR_INVALID)
        return fail("%s", why);
    if (rc != ERR_OK)
        return fail("cannot store the sink: %s", err_str(rc));
    printf("created sink %" PRId64 " (%s to %s)\n", s.id, s.kind, s.endpoint);
    if (!a->secret || !*a->secret)
        printf("secret (shown once, keep it): %s\n", s.secret);
    if (s.secret != a->secret)
        free(s.secret);
    return 0;
}

static int print_sink(const struct sink *s, void *arg)
{
    (void)arg;
    char created[RFC3339_MAX];
    rfc3339_format(s->created_at, created);
    printf("%-4" PRId64 " %-12s %-40s %-24s %-6s %-20s %-24s %s\n", s->id, s->kind, s->endpoint,
           *s->types ? s->types : "all", s->owner >= 0 ? "" : "any", s->domain ? s->domain : "any",
           created, s->secret_old ? "rotating" : "");
    if (s->owner >= 0)
        printf("     owner %" PRId64 "\n", s->owner);
    return 0;
}

int cli_sink_list(struct store *st)
{
    printf("%-4s %-12s %-40s %-24s %-6s %-20s %-24s %s\n", "ID", "KIND", "ENDPOINT", "TYPES",
           "OWNER", "DOMAIN", "CREATED", "SECRET");
    int rc = st->ops->sink_list(st, print_sink, NULL);
    return rc == ERR_OK ? 0 : fail("cannot list sinks");
}

int cli_sink_delete(struct store *st, const char *arg)
{
    int64_t id;
    if (!parse_id(arg, &id))
        return fail("sink id must be a positive whole number, not '%s'", arg);
    int rc = st->ops->begin(st);
    if (rc == ERR_OK)
        rc = st->ops->sink_del(st, id, now_ms());
    if (rc == ERR_OK)
        rc = st->ops->commit(st);
    else
        st->ops->rollback(st);
    if (rc == ERR_NOTFOUND)
        return fail("no sink %" PRId64, id);
    if (rc != ERR_OK)
        return fail("cannot delete sink %" PRId64 ": %s", id, err_str(rc));
    printf("deleted sink %" PRId64 " (its failed batches stay in the archive)\n", id);
    return 0;
}

int cli_sink_rotate(struct store *st, const char *arg)
{
    int64_t id;
    if (!parse_id(arg, &id))
        return fail("sink id must be a positive whole number, not '%s'", arg);
    struct sink s;
    int rc = st->ops->sink_get(st, id, &s);
    if (rc == ERR_NOTFOUND)
        return fail("no sink %" PRId64, id);
    if (rc != ERR_OK)
        return fail("cannot read sink %" PRId64, id);
    struct buf secret = BUF_INIT;
    sign_secret_new(&secret);
    rc = st->ops->begin(st);
    /* The current secret stays valid beside the new one until the next rotation. */
    if (rc == ERR_OK)
        rc = st->ops->sink_secret(st, id, buf_cstr(&secret), s.secret);
    if (rc == ERR_OK)
        rc = st->ops->commit(st);
    else
        st->ops->rollback(st);
    sink_release(&s);
    if (rc != ERR_OK) {
        buf_release(&secret);
        return fail("cannot rotate the secret of sink %" PRId64 ": %s", id, err_str(rc));
    }
    printf("sink %" PRId64 " signs with both secrets until the next rotation\n", id);
    printf("new secret (shown once, keep it): %s\n", buf_cstr(&secret));
    buf_release(&secret);
    return 0;
}

static int print_failed(const struct failed_batch *f, void *arg)
{
    (void)arg;
    char at[RFC3339_MAX];
    rfc3339_format(f->archived_at, at);
    printf("%-6" PRId64 " %-5" PRId64 " %-44s %-7" PRId64 " %-8" PRId64 " %-24s %-10s %s\n", f->id,
           f->sink, f->source, f->events, f->attempts, at, f->resolved_at ? "resolved" : "open",
           f->last_error);
    return 0;
}

static void print_time(const char *name, int64_t ms)
{
    char t[RFC3339_MAX];
    if (!ms) {
        printf("%-18s -\n", name);
        return;
    }
    rfc3339_format(ms, t);
    printf("%-18s %s\n", name, t);
}

static int inspect(struct store *st, int64_t id)
{
    struct failed_batch f;
    int rc = st->ops->failed_get(st, id, &f);
    if (rc == ERR_NOTFOUND)
        return fail("no failed batch %" PRId64, id);
    if (rc != ERR_OK)
        return fail("cannot read failed batch %" PRId64, id);
    printf("%-18s %" PRId64 "\n", "batch", f.id);
    printf("%-18s %" PRId64 "\n", "sink", f.sink);
    printf("%-18s %s (positions %" PRId64 " to %" PRId64 ")\n", "source", f.source, f.first_pos,
           f.last_pos);
    printf("%-18s %" PRId64 "\n", "events", f.events);
    printf("%-18s %" PRId64 "\n", "attempts", f.attempts);
    printf("%-18s %s\n", "last error", f.last_error);
    print_time("first failed", f.first_failed_at);
    print_time("archived", f.archived_at);
    printf("%-18s %" PRId64 "\n", "replays", f.replays);
    print_time("last replay", f.last_replay_at);
    printf("%-18s %s\n", "last replay result", *f.last_replay_result ? f.last_replay_result : "-");
    print_time("resolved", f.resolved_at);
    if (f.resolved_at)
        printf("%-18s %s: %s\n", "resolved by", f.resolved_by, f.resolved_reason);
    printf("%-18s %s\n", "sha256", f.sha256);
    printf("%-18s %zu bytes\n", "body", strlen(f.body));
    printf("%s\n", f.body);
    failed_release(&f);
    return 0;
}

static int resolve(struct store *st, int64_t id, const char *who, const char *reason)
{
    if (!who || !*who)
        return fail("resolve needs --operator NAME: who decided");
    if (!reason || strlen(reason) < 10)
        return fail("resolve needs --reason TEXT of 10 characters or more: why it is resolved");
    int rc = st->ops->begin(st);
    if (rc == ERR_OK)
        rc = st->ops->failed_resolve(st, id, now_ms(), who, reason);
    if (rc == ERR_OK)
        rc = st->ops->commit(st);
    else
        st->ops->rollback(st);
    if (rc == ERR_NOTFOUND)
        return fail("no failed batch %" PRId64, id);
    if (rc == ERR_EXISTS)
        return fail("failed batch %" PRId64 " is resolved already (inspect shows by whom)", id);
    if (rc != ERR_OK)
        return fail("cannot resolve failed batch %" PRId64 ": %s", id, err_str(rc));
    printf("resolved failed batch %" PRId64 " (kept in the archive with its body)\n", id);
    return 0;
}

int cli_events_failed(struct store *st, int npos, const char *const *pos, bool all,
                      const char *operator_name, const char *reason, int64_t timeout_ms)
{
    const char *verb = npos > 0 ? pos[0] : "";
    if (!strcmp(verb, "list")) {
        if (npos != 1)
            return fail("events failed list takes no argument");
        printf("%-6s %-5s %-44s %-7s %-8s %-24s %-10s %s\n", "ID", "SINK", "SOURCE", "EVENTS",
               "ATTEMPTS", "ARCHIVED", "STATE", "LAST_ERROR");
        return st->ops->failed_list(st, all, print_failed, NULL) == ERR_OK
                   ? 0
                   : fail("cannot list failed batches");
    }
    if (strcmp(verb, "inspect") && strcmp(verb, "replay") && strcmp(verb, "resolve"))
        return fail("events failed wants list, inspect ID, replay ID or resolve ID, not '%s'",
                    verb);
    int64_t id;
    if (npos != 2 || !parse_id(pos[1], &id))
        return fail("events failed %s wants one batch id (a positive whole number)", verb);
    if (!strcmp(verb, "inspect"))
        return inspect(st, id);
    if (!strcmp(verb, "resolve"))
        return resolve(st, id, operator_name, reason);
    char why[300] = "";
    int rc = events_replay(st, id, timeout_ms, why, sizeof(why));
    if (rc != ERR_OK)
        return fail("replay of failed batch %" PRId64 " did not deliver: %s", id, why);
    printf("replayed failed batch %" PRId64 ": delivered (it stays in the archive; resolve it "
           "once checked)\n",
           id);
    return 0;
}
