/* store.c - picks a storage backend by the scheme of its URL; what the
 * backends share beyond their SQL. */
#include "store/store.h"
#include "store/store_links.h"
#include "store/store_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clicks/dayrow.h"
#include "base/err.h"
#include "base/log.h"
#include "base/banned.h"

static _Thread_local int64_t thread_deadline;

void store_set_deadline(int64_t mono_ms) { thread_deadline = mono_ms; }
int64_t store_deadline(void) { return thread_deadline; }

static _Thread_local bool thread_bulk;

void store_set_bulk(bool bulk) { thread_bulk = bulk; }
bool store_bulk(void) { return thread_bulk; }

static _Thread_local store_backup_cb backup_cb;
static _Thread_local void *backup_arg;

void store_set_backup_progress(store_backup_cb cb, void *arg)
{
    backup_cb = cb;
    backup_arg = arg;
}

void store_backup_progress(int64_t done, int64_t total)
{
    if (backup_cb)
        backup_cb(done, total, backup_arg);
}

void link_release(struct link *l)
{
    free(l->url);
    free(l->title);
    free(l->note);
    free(l->tags);
    free(l->password);
    free(l->domain);
    free(l->variants);
    free(l->utm);
    free(l->dest);
    l->url = l->title = l->note = l->tags = NULL;
    l->password = l->domain = l->variants = l->utm = l->dest = NULL;
}

void sink_release(struct sink *s)
{
    free(s->kind);
    free(s->endpoint);
    free(s->types);
    free(s->domain);
    free(s->secret);
    free(s->secret_old);
    free(s->options);
    s->kind = s->endpoint = s->types = s->domain = NULL;
    s->secret = s->secret_old = s->options = NULL;
}

void failed_release(struct failed_batch *f)
{
    free(f->source);
    free(f->body);
    free(f->sha256);
    free(f->last_error);
    free(f->last_replay_result);
    free(f->resolved_by);
    free(f->resolved_reason);
    f->source = f->body = f->sha256 = f->last_error = NULL;
    f->last_replay_result = f->resolved_by = f->resolved_reason = NULL;
}

static const char *const role_names[] = {
    [USER_ADMIN] = "admin",
    [USER_MEMBER] = "member",
    [USER_VIEWER] = "viewer",
};

const char *user_role_name(enum user_role r)
{
    return (unsigned)r < sizeof(role_names) / sizeof(role_names[0]) ? role_names[r] : "?";
}

int user_role_parse(const char *s, enum user_role *out)
{
    for (size_t i = 0; i < sizeof(role_names) / sizeof(role_names[0]); i++) {
        if (s && strcmp(s, role_names[i]) == 0) {
            *out = (enum user_role)i;
            return ERR_OK;
        }
    }
    return ERR_INVALID;
}

bool link_controlled(const struct link *l)
{
    return l->password || l->variants || l->max_clicks > 0;
}

struct recent_fwd {
    recent_cb cb;
    void *arg;
};

static int recent_fwd(const struct recent_rec *c, void *arg)
{
    struct recent_fwd *f = arg;
    struct recent_click r = {c->ts, c->text[0], c->text[1], c->text[2], c->text[3]};
    return f->cb(&r, f->arg);
}

int store_each_recent(const struct dayrow *r, int limit, recent_cb cb, void *arg)
{
    struct recent_fwd f = {cb, arg};
    return dayrow_each_recent(r, limit, recent_fwd, &f);
}

struct day_sum *store_day_sum(struct day_sums *s, int64_t day)
{
    for (size_t i = s->n; i-- > 0;) /* rows come in day order, or nearly */
        if (s->v[i].day == day)
            return &s->v[i];
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->v = realloc(s->v, s->cap * sizeof(*s->v));
        if (!s->v)
            abort();
    }
    s->v[s->n] = (struct day_sum){day, 0, 0, 0};
    return &s->v[s->n++];
}

static int by_day(const void *a, const void *b)
{
    int64_t x = ((const struct day_sum *)a)->day, y = ((const struct day_sum *)b)->day;
    return (x > y) - (x < y);
}

void store_day_sums_each(struct day_sums *s, day_cb cb, void *arg)
{
    if (s->n)
        qsort(s->v, s->n, sizeof(*s->v), by_day);
    for (size_t i = 0; i < s->n; i++)
        if (cb(s->v[i].day, s->v[i].clicks, s->v[i].uniques, s->v[i].bots, arg))
            break;
}

int store_generation(struct store *st, int64_t *g)
{
    struct buf v = BUF_INIT;
    *g = 0;
    int rc = st->ops->meta_get(st, "generation", &v);
    if (rc == ERR_OK && v.len == sizeof(*g))
        memcpy(g, v.p, sizeof(*g));
    buf_release(&v);
    return rc == ERR_NOTFOUND ? ERR_OK : rc;
}

int store_generation_bump(struct store *st)
{
    int64_t g;
    int rc = store_generation(st, &g);
    if (rc != ERR_OK)
        return rc;
    g++;
    return st->ops->meta_put(st, "generation", &g, sizeof(g));
}

int store_open(const char *url, struct store **out)
{
    *out = NULL;
    if (strncmp(url, "sqlite:", 7) == 0)
        return store_sqlite_ops.open(url + 7, out);
    /* libpq takes the whole URL as its connection string. */
    if (strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0)
        return store_pg_ops.open(url, out);
    if (strstr(url, "://"))
        return log_fail(ERR_INVALID,
                        "unsupported store scheme '%.*s://' (this build knows "
                        "sqlite:PATH and postgres://...)",
                        (int)(strstr(url, "://") - url), url);
    return store_sqlite_ops.open(url, out);
}

int store_inspect(const char *url, int timeout_s, struct store_health *out)
{
    memset(out, 0, sizeof(*out));
    out->newest_day = -1;
    if (store_is_shared(url))
        return store_pg_inspect(url, timeout_s, out);
    return store_sqlite_inspect(strncmp(url, "sqlite:", 7) ? url : url + 7, out);
}

bool store_is_shared(const char *url)
{
    return strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0;
}

void store_redact(const char *url, char *out, size_t n)
{
    snprintf(out, n, "%s", url);
    char *scheme = strstr(out, "://");
    if (!scheme)
        return;
    char *user = scheme + 3;
    char *at = strchr(user, '@');
    char *colon = at ? memchr(user, ':', (size_t)(at - user)) : NULL;
    if (!colon)
        return;
    char rest[1024];
    snprintf(rest, sizeof(rest), "%s", at);
    snprintf(colon, n - (size_t)(colon - out), ":***%s", rest);
}
