/* api_stats.c - reading click analytics: one link's stats over a range of
 * days, the top links of a day, and service-wide totals. Reads run on the
 * event-loop thread against its own store connection; what the pipeline has
 * not stored yet (at most click-flush-ms old) is not in them. */
#include <stdlib.h>
#include <string.h>

#include "analytics.h"
#include "app.h"
#include "err.h"
#include "handlers.h"
#include "links.h"
#include "store.h"
#include "timeutil.h"
#include "banned.h"

#define DEFAULT_DAYS 30
#define MAX_DAYS 1000
#define TOP_LIMIT 10

static int unavailable(struct request *r)
{
    http_add_header(r, "Retry-After", "1", 1);
    return http_error(r, 503, "unavailable", NULL, "the store is unavailable; try again");
}

/* ?NAME=YYYY-MM-DD, or 'fallback' when absent. */
static bool day_param(struct request *r, const char *name, int64_t fallback, int64_t *day)
{
    struct slice v;
    if (!http_query_param(r, name, &v)) {
        *day = fallback;
        return true;
    }
    return day_parse(v.p, v.n, day) == ERR_OK;
}

/* The link named by the path, if the caller may see it: 0, or the status. */
static int load_owned(struct request *r, struct link *l)
{
    struct store *st = r->app->store;
    struct slice s = r->params[0];
    char code[CODE_MAX + 1];
    if (!code_is_plausible(s.p, s.n))
        return http_error(r, 404, "not_found", NULL, "no link with this code");
    memcpy(code, s.p, s.n);
    code[s.n] = '\0';
    int rc = st->ops->link_get(st, code, l);
    if (rc == ERR_NOTFOUND)
        return http_error(r, 404, "not_found", NULL, "no link with this code");
    if (rc != ERR_OK)
        return unavailable(r);
    if (!r->key.admin && l->owner != r->key.id) {
        link_release(l);
        return http_error(r, 404, "not_found", NULL, "no link with this code");
    }
    return 0;
}

struct days_ctx {
    json_t *days;
    int64_t from, next;
    int64_t clicks, uniques, bots;
};

static json_t *day_obj(int64_t day, int64_t clicks, int64_t uniques, int64_t bots)
{
    char d[11];
    day_format(day, d);
    return json_pack("{s:s,s:I,s:I,s:I}", "day", d, "clicks", (json_int_t)clicks,
                     "unique_visitors", (json_int_t)uniques, "bot_clicks", (json_int_t)bots);
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
    json_t *o = arg;
    if (dim < 0 || dim >= DIM__COUNT)
        return 0;
    json_object_set_new(json_object_get(o, dim_names[dim]), value, json_integer(n));
    return 0;
}

static int recent_row(const struct recent_click *c, void *arg)
{
    char ts[RFC3339_MAX];
    rfc3339_format(c->ts, ts);
    json_array_append_new(arg, json_pack("{s:s,s:s,s:s,s:s,s:s}", "time", ts, "referrer",
                                         c->referrer, "country", c->country, "device",
                                         c->device, "browser", c->browser));
    return 0;
}

int handle_link_stats(struct request *r)
{
    struct app *app = r->app;
    struct store *st = app->store;
    int64_t today = day_number(now_ms());
    int64_t to, from;
    if (!day_param(r, "to", today, &to))
        return http_error(r, 400, "invalid_field", "to", "to must be a day, YYYY-MM-DD");
    if (!day_param(r, "from", to - (DEFAULT_DAYS - 1), &from))
        return http_error(r, 400, "invalid_field", "from", "from must be a day, YYYY-MM-DD");
    if (from > to)
        return http_error(r, 400, "invalid_field", "from", "from must not be after to");
    if (to - from >= MAX_DAYS)
        return http_error(r, 400, "invalid_field", "from", "a range is at most 1000 days");
    struct link l;
    int status = load_owned(r, &l);
    if (status)
        return status;

    json_t *o = json_object();
    struct days_ctx x = {.days = json_array(), .from = from, .next = from};
    for (int d = 0; d < DIM__COUNT; d++)
        json_object_set_new(o, dim_names[d], json_object());
    json_t *recent = json_array();
    int rc = st->ops->stats_days(st, l.code, from, to, day_row, &x);
    if (rc == ERR_OK)
        rc = st->ops->stats_dims(st, l.code, from, to, dim_row, o);
    if (rc == ERR_OK)
        rc = st->ops->stats_recent(st, l.code, RECENT_KEEP, recent_row, recent);
    if (rc != ERR_OK) {
        json_decref(o);
        json_decref(x.days);
        json_decref(recent);
        link_release(&l);
        return unavailable(r);
    }
    for (; x.next <= to; x.next++)
        json_array_append_new(x.days, day_obj(x.next, 0, 0, 0));
    char f[11], t[11];
    day_format(from, f);
    day_format(to, t);
    json_object_set_new(o, "code", json_string(l.code));
    json_object_set_new(o, "from", json_string(f));
    json_object_set_new(o, "to", json_string(t));
    json_object_set_new(o, "clicks", json_integer(x.clicks));
    json_object_set_new(o, "bot_clicks", json_integer(x.bots));
    json_object_set_new(o, "unique_visitors", json_integer(x.uniques));
    json_object_set_new(o, "total_clicks", json_integer(l.clicks));
    json_object_set_new(o, "total_bot_clicks", json_integer(l.bot_clicks));
    json_object_set_new(o, "days", x.days);
    json_object_set_new(o, "recent", recent);
    link_release(&l);
    return http_json(r, 200, o);
}

struct top_ctx {
    struct app *app;
    json_t *arr;
};

static int top_row(const char *code, int64_t clicks, void *arg)
{
    struct top_ctx *x = arg;
    struct buf su = BUF_INIT;
    buf_printf(&su, "%s/%s", x->app->cfg.base_url, code);
    json_array_append_new(x->arr, json_pack("{s:s,s:s,s:I}", "code", code, "short_url", su.p,
                                            "clicks", (json_int_t)clicks));
    buf_release(&su);
    return 0;
}

static int top_links(struct request *r, int64_t owner, int64_t day, json_t **out)
{
    struct top_ctx x = {r->app, json_array()};
    int rc = r->app->store->ops->stats_top(r->app->store, owner, day, TOP_LIMIT, top_row, &x);
    if (rc != ERR_OK) {
        json_decref(x.arr);
        return rc;
    }
    *out = x.arr;
    return ERR_OK;
}

int handle_link_top(struct request *r)
{
    int64_t day;
    if (!day_param(r, "day", day_number(now_ms()), &day))
        return http_error(r, 400, "invalid_field", "day", "day must be YYYY-MM-DD");
    json_t *arr;
    if (top_links(r, r->key.admin ? -1 : r->key.id, day, &arr) != ERR_OK)
        return unavailable(r);
    return http_json(r, 200, arr);
}

int handle_stats(struct request *r)
{
    struct store *st = r->app->store;
    struct totals all;
    int64_t today = day_number(now_ms());
    json_t *top;
    if (st->ops->stats_totals(st, -1, &all) != ERR_OK ||
        top_links(r, r->key.admin ? -1 : r->key.id, today, &top) != ERR_OK)
        return unavailable(r);
    char d[11];
    day_format(today, d);
    json_t *o = json_pack("{s:I,s:I,s:I,s:s,s:o}", "links", (json_int_t)all.links, "clicks",
                          (json_int_t)all.clicks, "bot_clicks", (json_int_t)all.bot_clicks, "day",
                          d, "top_today", top);
    return http_json(r, 200, o);
}
