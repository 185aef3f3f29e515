/* report.c - the stats object and the export of report.h. */
#include "api/report.h"

#include <stdlib.h>
#include <string.h>

#include "clicks/analytics.h"
#include "base/err.h"
#include "base/jsonout.h"
#include "links/links.h"
#include "base/timeutil.h"
#include "base/banned.h"

#define EXPORT_BATCH 200

/* ---- stats ---- */

struct days_ctx {
    json_t *days;
    int64_t next;
    int64_t clicks, uniques, bots;
};

static json_t *day_obj(int64_t day, int64_t clicks, int64_t uniques, int64_t bots)
{
    char d[11];
    day_format(day, d);
    return json_pack("{s:s,s:I,s:I,s:I}", "day", d, "clicks", (json_int_t)clicks, "unique_visitors",
                     (json_int_t)uniques, "bot_clicks", (json_int_t)bots);
}

/* Rows come in day order; the days without clicks between them are zeros. */
static int day_row(int64_t day, int64_t clicks, int64_t uniques, int64_t bots, void *arg)
{
    struct days_ctx *x = arg;
    for (; x->next < day; x->next++)
        json_array_append_new(x->days, day_obj(x->next, 0, 0, 0));
    json_array_append_new(x->days, day_obj(day, clicks, uniques, bots));
    x->next = day + 1;
    x->clicks += clicks;
    x->uniques += uniques;
    x->bots += bots;
    return 0;
}

static int dim_row(int dim, const char *value, int64_t n, void *arg)
{
    if (dim >= 0 && dim < DIM_LINK_COUNT)
        json_object_set_new(json_object_get(arg, dim_names[dim]), value, json_integer(n));
    return 0;
}

static int recent_row(const struct recent_click *c, void *arg)
{
    char ts[RFC3339_MAX];
    rfc3339_format(c->ts, ts);
    json_array_append_new(arg, json_pack("{s:s,s:s,s:s,s:s,s:s}", "time", ts, "referrer",
                                         c->referrer, "country", c->country, "device", c->device,
                                         "browser", c->browser));
    return 0;
}

int report_stats(struct store *st, const struct link *l, int64_t from, int64_t to, json_t **out)
{
    json_t *o = json_object();
    struct days_ctx x = {.days = json_array(), .next = from};
    /* Keys in reading order: jansson keeps insertion order. */
    const char *head[] = {"code",
                          "from",
                          "to",
                          "clicks",
                          "bot_clicks",
                          "unique_visitors",
                          "total_clicks",
                          "total_bot_clicks",
                          "imported_clicks"};
    for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
        json_object_set_new(o, head[i], json_null());
    for (int d = 0; d < DIM_LINK_COUNT; d++)
        json_object_set_new(o, dim_names[d], json_object());
    json_t *recent = json_array();
    int rc = st->ops->stats_days(st, l->code, from, to, day_row, &x);
    if (rc == ERR_OK)
        rc = st->ops->stats_dims(st, l->code, from, to, dim_row, o);
    if (rc == ERR_OK)
        rc = st->ops->stats_recent(st, l->code, RECENT_KEEP, recent_row, recent);
    if (rc != ERR_OK) {
        json_decref(o);
        json_decref(x.days);
        json_decref(recent);
        return rc;
    }
    for (; x.next <= to; x.next++)
        json_array_append_new(x.days, day_obj(x.next, 0, 0, 0));
    char f[11], t[11];
    day_format(from, f);
    day_format(to, t);
    json_object_set_new(o, "code", json_string(l->code));
    json_object_set_new(o, "from", json_string(f));
    json_object_set_new(o, "to", json_string(t));
    json_object_set_new(o, "clicks", json_integer(x.clicks));
    json_object_set_new(o, "bot_clicks", json_integer(x.bots));
    json_object_set_new(o, "unique_visitors", json_integer(x.uniques));
    json_object_set_new(o, "total_clicks", json_integer(l->clicks));
    json_object_set_new(o, "total_bot_clicks", json_integer(l->bot_clicks));
    json_object_set_new(o, "imported_clicks", json_integer(l->imported));
    json_object_set_new(o, "days", x.days);
    json_object_set_new(o, "recent", recent);
    *out = o;
    return ERR_OK;
}

int report_service(struct store *st, int64_t owner, int64_t from, int64_t to, json_t **out)
{
    json_t *o = json_object();
    struct days_ctx x = {.days = json_array(), .next = from};
    const char *head[] = {"from", "to", "clicks", "bot_clicks", "unique_visitors"};
    for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
        json_object_set_new(o, head[i], json_null());
    for (int d = 0; d < DIM_LINK_COUNT; d++)
        json_object_set_new(o, dim_names[d], json_object());
    int rc = st->ops->stats_all_days(st, owner, from, to, day_row, &x);
    if (rc == ERR_OK)
        rc = st->ops->stats_all_dims(st, owner, from, to, dim_row, o);
    if (rc != ERR_OK) {
        json_decref(o);
        json_decref(x.days);
        return rc;
    }
    for (; x.next <= to; x.next++)
        json_array_append_new(x.days, day_obj(x.next, 0, 0, 0));
    char f[11], t[11];
    day_format(from, f);
    day_format(to, t);
    json_object_set_new(o, "from", json_string(f));
    json_object_set_new(o, "to", json_string(t));
    json_object_set_new(o, "clicks", json_integer(x.clicks));
    json_object_set_new(o, "bot_clicks", json_integer(x.bots));
    json_object_set_new(o, "unique_visitors", json_integer(x.uniques));
    json_object_set_new(o, "days", x.days);
    *out = o;
    return ERR_OK;
}

/* ---- export ---- */

struct export
{
    struct store *st;
    struct link_query q;
    char after_code[CODE_MAX + 1];
    /* The last link listed: the cursor moves there once a page is read, not
     * while the store still reads with after_code bound (a backend may read
     * the bound text as it steps, and a longer code would then be cut). */
    char last_code[CODE_MAX + 1];
    int64_t last_created;
    enum export_format format;
    const char *base_url;
    bool started, done;
    int64_t now;
    int64_t links; /* written so far */
};

struct export *export_new(struct store *st, int64_t owner, enum export_format f,
                          const char *base_url)
{
    struct export *x = calloc(1, sizeof(*x));
    if (!x)
        abort();
    x->st = st;
    x->format = f;
    x->base_url = base_url;
    x->now = now_ms();
    x->q = (struct link_query){.owner = owner,
                               .states = (1u << LINK_DELETED) | (1u << LINK_DISABLED),
                               .want_live = true,
                               .want_expired = true,
                               .want_exhausted = true,
                               .now = x->now,
                               .after_code = x->after_code,
                               .limit = EXPORT_BATCH};
    return x;
}

void export_free(struct export *x) { free(x); }

/* RFC 4180: quoted when it holds a comma, quote or line break. */
static void csv_field(struct buf *out, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\r\n")) {
        buf_adds(out, s);
        return;
    }
    buf_addc(out, '"');
    for (; *s; s++) {
        if (*s == '"')
            buf_addc(out, '"');
        buf_addc(out, *s);
    }
    buf_addc(out, '"');
}

struct link_ctx {
    struct export *x;
    struct buf *out;
    json_t *days;
    const struct link *l;
    int rows;
};

static void csv_row(struct link_ctx *c, const char *day, int64_t clicks, int64_t uniques,
                    int64_t bots)
{
    const struct link *l = c->l;
    char created[RFC3339_MAX];
    rfc3339_format(l->created_at, created);
    csv_field(c->out, l->code);
    buf_addc(c->out, ',');
    link_short_url(c->out, c->x->base_url, l->code, l->domain);
    buf_addc(c->out, ',');
    csv_field(c->out, l->url);
    buf_printf(c->out, ",%s,%s,%s,%lld,%lld,%lld\r\n", created, link_state_name(l, c->x->now), day,
               (long long)clicks, (long long)uniques, (long long)bots);
}

static int export_day(int64_t day, int64_t clicks, int64_t uniques, int64_t bots, void *arg)
{
    struct link_ctx *c = arg;
    char d[11];
    day_format(day, d);
    if (c->x->format == EXPORT_CSV)
        csv_row(c, d, clicks, uniques, bots);
    else
        json_array_append_new(c->days,
                              json_pack("{s:s,s:I,s:I,s:I}", "day", d, "clicks", (json_int_t)clicks,
                                        "unique_visitors", (json_int_t)uniques, "bot_clicks",
                                        (json_int_t)bots));
    c->rows++;
    return 0;
}

static int export_link(const struct link *l, void *arg)
{
    struct link_ctx *c = arg;
    struct export *x = c->x;
    c->l = l;
    c->rows = 0;
    c->days = x->format == EXPORT_JSON ? json_array() : NULL;
    int rc = x->st->ops->stats_days(x->st, l->code, 0, INT64_MAX / 2, export_day, c);
    if (rc == ERR_OK && x->format == EXPORT_CSV && !c->rows)
        csv_row(c, "", 0, 0, 0);
    /* JSON carries the link's all-time dimensions too (the ones with counts). */
    json_t *dims = NULL;
    if (rc == ERR_OK && x->format == EXPORT_JSON) {
        dims = json_object();
        for (int d = 0; d < DIM_LINK_COUNT; d++)
            json_object_set_new(dims, dim_names[d], json_object());
        rc = x->st->ops->stats_dims(x->st, l->code, 0, INT64_MAX / 2, dim_row, dims);
        for (int d = 0; d < DIM_LINK_COUNT; d++)
            if (!json_object_size(json_object_get(dims, dim_names[d])))
                json_object_del(dims, dim_names[d]);
    }
    if (rc == ERR_OK && x->format == EXPORT_JSON) {
        char created[RFC3339_MAX], expires[RFC3339_MAX];
        rfc3339_format(l->created_at, created);
        if (l->expires_at)
            rfc3339_format(l->expires_at, expires);
        struct buf su = BUF_INIT;
        link_short_url(&su, x->base_url, l->code, l->domain);
        json_t *o = json_pack("{s:s,s:s,s:s?,s:s?,s:s,s:s?,s:s,s:I,s:I,s:o}", "code", l->code,
                              "short_url", su.p, "url", l->url, "title", l->title, "created_at",
                              created, "expires_at", l->expires_at ? expires : NULL, "state",
                              link_state_name(l, x->now), "clicks", (json_int_t)l->clicks,
                              "bot_clicks", (json_int_t)l->bot_clicks, "days", c->days);
        /* What `shortd import shortd` needs to make the same link again */
        json_t *tags = l->tags ? json_loads(l->tags, 0, NULL) : NULL;
        if (o) {
            json_object_set_new(o, "tags", tags ? tags : json_null());
            json_object_set_new(o, "permanent", json_boolean(l->permanent));
            json_object_set_new(o, "track", json_boolean(!l->untracked));
            json_object_set_new(o, "domain", l->domain ? json_string(l->domain) : json_null());
            json_object_set_new(o, "max_clicks", json_integer(l->max_clicks));
            json_object_set_new(o, "dimensions", dims);
        } else {
            json_decref(tags);
            json_decref(dims);
        }
        dims = NULL;
        c->days = NULL;
        buf_release(&su);
        if (o) {
            buf_adds(c->out, x->started ? ",\n" : "\n");
            jsonout(c->out, o);
            json_decref(o);
        }
    }
    json_decref(c->days);
    json_decref(dims);
    x->started = true;
    x->links++;
    x->last_created = l->created_at;
    memcpy(x->last_code, l->code, sizeof(x->last_code));
    return rc == ERR_OK ? 0 : -1;
}

int64_t export_count(const struct export *x) { return x->links; }

int export_next(struct export *x, struct buf *out)
{
    if (x->done)
        return 0;
    bool first = !x->started;
    if (first)
        buf_adds(out, x->format == EXPORT_CSV
                          ? "code,short_url,url,created_at,state,day,clicks,unique_visitors,"
                            "bot_clicks\r\n"
                          : "[");
    struct link_ctx c = {.x = x, .out = out};
    size_t before = out->len;
    char was[CODE_MAX + 1];
    memcpy(was, x->after_code, sizeof(was));
    int64_t was_created = x->q.after_created;
    memcpy(x->last_code, x->after_code, sizeof(x->last_code));
    x->last_created = x->q.after_created;
    if (x->st->ops->link_list(x->st, &x->q, export_link, &c) != ERR_OK)
        return -1;
    x->q.after_created = x->last_created;
    memcpy(x->after_code, x->last_code, sizeof(x->after_code));
    bool moved = was_created != x->q.after_created || strcmp(was, x->after_code) != 0;
    if (!moved || out->len == before) {
        x->done = true;
        if (x->format == EXPORT_JSON)
            buf_adds(out, x->started ? "\n]\n" : "]\n");
        return 0;
    }
    return 1;
}
