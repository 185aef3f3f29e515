/* api_stats.c - reading click analytics: one link's stats over a range of
 * days, the top links of a day, service-wide totals, and the export. Reads run on the
 * event-loop thread against its own store connection; what the pipeline has
 * not stored yet (at most click-flush-ms old) is not in them. */
#include <stdlib.h>
#include <string.h>

#include "clicks/analytics.h"
#include "app/app.h"
#include "base/err.h"
#include "api/router.h"
#include "api/handlers.h"
#include "links/links.h"
#include "api/owner.h"
#include "api/report.h"
#include "store/store_links.h"
#include "store/store_stats.h"
#include "base/timeutil.h"
#include "base/banned.h"

#define DEFAULT_DAYS 30
#define TOP_LIMIT 10

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
    if (to - from >= STATS_MAX_DAYS)
        return http_error(r, 400, "invalid_field", "from", "a range is at most 1000 days");
    char code[CODE_MAX + 1];
    struct link l;
    int status = owner_link(r, code, &l);
    if (status)
        return status;

    json_t *o = NULL;
    int rc = report_stats(st, &l, from, to, &o);
    /* The all-time totals are read again after the days: they only grow, so
     * they can never be below what the days just read add up to, even when a
     * click flush commits between the reads. */
    struct link now_l;
    if (rc == ERR_OK && st->ops->link_get(st, l.code, &now_l) == ERR_OK) {
        json_object_set_new(o, "total_clicks", json_integer(now_l.clicks));
        json_object_set_new(o, "total_bot_clicks", json_integer(now_l.bot_clicks));
        link_release(&now_l);
    }
    link_release(&l);
    if (rc != ERR_OK)
        return http_unavailable(r, NULL);
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
    if (top_links(r, owner_scope(r), day, &arr) != ERR_OK)
        return http_unavailable(r, NULL);
    return http_json(r, 200, arr);
}

int handle_stats(struct request *r)
{
    struct store *st = r->app->store;
    struct totals all;
    int64_t today = day_number(now_ms());
    int64_t to, from;
    if (!day_param(r, "to", today, &to))
        return http_error(r, 400, "invalid_field", "to", "to must be a day, YYYY-MM-DD");
    if (!day_param(r, "from", to - (DEFAULT_DAYS - 1), &from))
        return http_error(r, 400, "invalid_field", "from", "from must be a day, YYYY-MM-DD");
    if (from > to)
        return http_error(r, 400, "invalid_field", "from", "from must not be after to");
    if (to - from >= STATS_MAX_DAYS)
        return http_error(r, 400, "invalid_field", "from", "a range is at most 1000 days");
    json_t *top, *range = NULL;
    if (st->ops->stats_totals(st, -1, &all) != ERR_OK ||
        top_links(r, owner_scope(r), today, &top) != ERR_OK)
        return http_unavailable(r, NULL);
    /* Every link's dimensions of the range are read: a heavy request. */
    int status = router_heavy_enter(r);
    if (status) {
        json_decref(top);
        return status;
    }
    int rc = report_service(st, owner_scope(r), from, to, &range);
    router_heavy_leave(r->app, r->key.id);
    if (rc != ERR_OK) {
        json_decref(top);
        return http_unavailable(r, NULL);
    }
    char d[11];
    day_format(today, d);
    json_t *o = json_pack("{s:I,s:I,s:I,s:s,s:o,s:o}", "links", (json_int_t)all.links, "clicks",
                          (json_int_t)all.clicks, "bot_clicks", (json_int_t)all.bot_clicks, "day",
                          d, "top_today", top, "range", range);
    return http_json(r, 200, o);
}

/* ---- export ---- */

/* An export, streamed: one heavy read of its key until it ends. */
struct export_run {
    struct export *x;
    struct app *app;
    int64_t key_id;
};

static int export_piece(struct request *r, struct buf *out, void *state)
{
    (void)r;
    struct export_run *e = state;
    return export_next(e->x, out);
}

static void export_done(void *state)
{
    struct export_run *e = state;
    export_free(e->x);
    router_heavy_leave(e->app, e->key_id);
    free(e);
}

int handle_export(struct request *r)
{
    struct slice f = SLICE_LIT("json");
    http_query_param(r, "format", &f);
    enum export_format fmt;
    if (slice_eq(f, "json"))
        fmt = EXPORT_JSON;
    else if (slice_eq(f, "csv"))
        fmt = EXPORT_CSV;
    else
        return http_error(r, 400, "invalid_field", "format", "format must be csv or json");
    int status = router_heavy_enter(r);
    if (status)
        return status;
    struct export_run *e = calloc(1, sizeof(*e));
    if (!e)
        abort();
    e->app = r->app;
    e->key_id = r->key.id;
    e->x = export_new(r->app->store, owner_scope(r), fmt, r->app->cfg.base_url);
    const char *name = fmt == EXPORT_CSV ? "attachment; filename=\"shortd-export.csv\""
                                         : "attachment; filename=\"shortd-export.json\"";
    http_add_header(r, "Content-Disposition", name, strlen(name));
    struct http_stream st = {export_piece, export_done, e, .offload = true};
    return http_stream(r, 200, fmt == EXPORT_CSV ? "text/csv; charset=utf-8" : "application/json",
                       &st);
}
