/* harness.c - the in-process harness of harness.h: an app assembled as
 * serve.c assembles one (store, links, cache, writer, store threads, the
 * click pipeline, rate limits, metrics; no listener, no Redis, no bus), and
 * a fault-injecting wrapper around the store's ops table. */
#include "harness.h"

#include <dirent.h>
#include <llhttp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/router.h"
#include "app/app.h"
#include "app/config.h"
#include "base/err.h"
#include "base/timeutil.h"
#include "clicks/aggregate.h"
#include "clicks/classify.h"
#include "clicks/clicks.h"
#include "http/http.h"
#include "http/metrics.h"
#include "ops/checks.h"
#include "http/ratelimit.h"
#include "http/server.h"
#include "links/links.h"
#include "redirect/cache.h"
#include "redirect/notfound.h"
#include "sites/sites.h"
#include "store/store.h"
#include "store/store_keys.h"
#include "store/store_links.h"
#include "store/storeq.h"
#include "store/writer.h"
#include "test.h"
#include "base/banned.h"

#define CLICK_FLUSH_MS 10 /* the pipeline stores this often: settling is quick */
#define JOURNAL_SYNC_MS 5
#define SETTLE_MS 10000

/* The ops a fault can be put on: X(op, parameters, arguments). */
#define FAULT_OPS(X)                                                                               \
    X(begin, (struct store * st), (st))                                                            \
    X(commit, (struct store * st), (st))                                                           \
    X(ping, (struct store * st), (st))                                                             \
    X(link_get, (struct store * st, const char *code, struct link *out), (st, code, out))          \
    X(link_insert, (struct store * st, const struct link *l), (st, l))                             \
    X(link_list, (struct store * st, const struct link_query *q, link_cb cb, void *arg),           \
      (st, q, cb, arg))                                                                            \
    X(link_update, (struct store * st, const struct link *l), (st, l))                             \
    X(link_reserve, (struct store * st, const char *code, int64_t *used), (st, code, used))        \
    X(history_list, (struct store * st, const char *code, int limit, change_cb cb, void *arg),     \
      (st, code, limit, cb, arg))                                                                  \
    X(domain_get, (struct store * st, const char *host, int64_t *owner), (st, host, owner))        \
    X(domain_list, (struct store * st, int64_t owner, domain_cb cb, void *arg),                    \
      (st, owner, cb, arg))                                                                        \
    X(domain_redirects_list, (struct store * st, int64_t owner, redirects_cb cb, void *arg),       \
      (st, owner, cb, arg))                                                                        \
    X(block_list, (struct store * st, host_cb cb, void *arg), (st, cb, arg))                       \
    X(stats_days,                                                                                  \
      (struct store * st, const char *code, int64_t from, int64_t to, day_cb cb, void *arg),       \
      (st, code, from, to, cb, arg))                                                               \
    X(stats_totals, (struct store * st, int64_t owner, struct totals * out), (st, owner, out))     \
    X(agg_days, (struct store * st, const struct day_delta *d, size_t n), (st, d, n))              \
    X(days_append, (struct store * st, int64_t batch, const struct day_delta *d, size_t n),        \
      (st, batch, d, n))                                                                           \
    X(stats_all_days,                                                                              \
      (struct store * st, int64_t owner, int64_t from, int64_t to, day_cb cb, void *arg),          \
      (st, owner, from, to, cb, arg))                                                              \
    X(stats_top, (struct store * st, int64_t owner, int64_t day, int limit, top_cb cb, void *arg), \
      (st, owner, day, limit, cb, arg))                                                            \
    X(key_by_hash, (struct store * st, const uint8_t hash[32], struct apikey *out),                \
      (st, hash, out))                                                                             \
    X(key_list, (struct store * st, key_cb cb, void *arg), (st, cb, arg))                          \
    X(user_by_name, (struct store * st, const char *name, struct user *out), (st, name, out))      \
    X(user_list, (struct store * st, user_cb cb, void *arg), (st, cb, arg))                        \
    X(user_count, (struct store * st, int64_t * n), (st, n))                                       \
    X(session_get, (struct store * st, const uint8_t hash[32], int64_t now, struct session *out),  \
      (st, hash, now, out))                                                                        \
    X(site_get, (struct store * st, const char *id, struct site_info *out), (st, id, out))         \
    X(site_list, (struct store * st, int64_t owner, site_cb cb, void *arg), (st, owner, cb, arg))  \
    X(site_stats_days,                                                                             \
      (struct store * st, const char *site, int64_t from, int64_t to, day_cb cb, void *arg),       \
      (st, site, from, to, cb, arg))                                                               \
    X(site_token_find, (struct store * st, const uint8_t hash[32], char site[SITE_ID_MAX + 1]),    \
      (st, hash, site))

enum {
#define X(op, params, args) FOP_##op,
    FAULT_OPS(X)
#undef X
        FOP__COUNT
};

struct fault {
    bool on;
    int nth;   /* 0: every call */
    int calls; /* since hx_fault */
};

struct hx {
    char dir[64];
    char url[96];
    char journal[96];
    struct app app;
    struct worker *w;
    const struct store_ops *real; /* the backend's own table */
    struct store_ops ops;         /* the same with the wrappers */
    pthread_mutex_t faults_mu;    /* the ops are called from every thread */
    struct fault faults[FOP__COUNT];
    char token[KEY_TOKEN_LEN + 1];
};

/* The store's ops table is shared by every store of its backend; the
 * wrappers find the harness through this (one harness at a time). */
static struct hx *current;

/* Whether this call of 'op' is to fail. */
static bool fails(int op)
{
    pthread_mutex_lock(&current->faults_mu);
    struct fault *f = &current->faults[op];
    bool fail = false;
    if (f->on) {
        f->calls++;
        fail = f->nth == 0 || f->calls == f->nth;
        if (f->nth && fail)
            f->on = false;
    }
    pthread_mutex_unlock(&current->faults_mu);
    return fail;
}

#define X(op, params, args)                                                                        \
    static int w_##op params { return fails(FOP_##op) ? ERR_STORAGE : current->real->op args; }
FAULT_OPS(X)
#undef X

void hx_fault(struct hx *h, const char *op, int nth)
{
    static const char *const names[] = {
#define X(op, params, args) #op,
        FAULT_OPS(X)
#undef X
    };
    for (int i = 0; i < FOP__COUNT; i++)
        if (!strcmp(names[i], op)) {
            pthread_mutex_lock(&h->faults_mu);
            h->faults[i] = (struct fault){.on = true, .nth = nth};
            pthread_mutex_unlock(&h->faults_mu);
            return;
        }
    CHECK(!"hx_fault: an op the harness does not wrap");
    test_note("op '%s'", op);
}

void hx_fault_clear(struct hx *h)
{
    pthread_mutex_lock(&h->faults_mu);
    memset(h->faults, 0, sizeof(h->faults));
    pthread_mutex_unlock(&h->faults_mu);
}

/* What serve.c builds around the store, in its order; false when a part
 * cannot be made. */
static bool assemble(struct hx *h)
{
    struct app *app = &h->app;
    static const char *const self[] = {"sho.rt", NULL}; /* links keeps it */
    if (!CHECK_EQ_INT(links_new(app->store, router_reserved(), self, &app->links), ERR_OK) ||
        !CHECK_EQ_INT(classify_new((size_t)app->cfg.ua_cache, &app->classify), ERR_OK))
        return false;
    app->fallbacks = fallbacks_new();
    if (!CHECK_EQ_INT(fallbacks_load(app->fallbacks, app->store), ERR_OK))
        return false;
    app->sites = sitemap_new();
    if (!CHECK_EQ_INT(sitemap_load(app->sites, app->store), ERR_OK))
        return false;
    app->aggregate = aggregate_new(app->classify, self);
    int nroutes = 0;
    const char *const *names = router_route_names(&nroutes);
    app->metrics = metrics_new(names, nroutes);
    app->cache = cache_new((size_t)app->cfg.cache_size, app->cfg.miss_ttl);
    cache_thread_register();
    app->writer = writer_new(app->store, (int)app->cfg.commit_batch);
    if (!CHECK_EQ_INT(writer_start(app->writer, 0), ERR_OK))
        return false;
    /* The worker first: store threads hand their answers to it. */
    h->w = server_inproc_new(&router_entry);
    if (!CHECK_EQ_INT(storeq_new(app, (int)app->cfg.store_threads, (int)app->cfg.store_queue,
                                 app->cfg.store_timeout_ms, (int)app->cfg.heavy_reads_per_key, 0, 0,
                                 &app->storeq),
                      ERR_OK))
        return false;
    uint8_t secret[RL_SECRET_BYTES];
    if (!CHECK_EQ_INT(ratelimit_secret(app->store, secret), ERR_OK))
        return false;
    struct config_rate limits[RL_NCLASSES];
    ratelimit_limits(&app->cfg, limits);
    app->ratelimit = ratelimit_new(limits, secret, NULL);
    app->clicks = clicks_new(app->store, app->writer, app->aggregate, 1);
    /* As a node listening on loopback: /metrics needs no key. */
    app->metrics_open = true;
    struct checks_env env = {.store = app->store,
                             .clicks = app->clicks,
                             .db_path = h->url,
                             .journal_dir = h->dir,
                             .lag_warn_s = 300};
    app->checks = checks_new(&env);
    return CHECK_EQ_INT(clicks_rotate_salts(app->clicks, now_ms()), ERR_OK) &&
           CHECK_EQ_INT(clicks_start(app->clicks, h->journal, CLICK_FLUSH_MS, JOURNAL_SYNC_MS, 0),
                        ERR_OK);
}

struct hx *hx_new(void)
{
    struct hx *h = calloc(1, sizeof(*h));
    if (!h)
        abort();
    pthread_mutex_init(&h->faults_mu, NULL);
    snprintf(h->dir, sizeof(h->dir), "/tmp/shortd-hx-XXXXXX");
    if (!CHECK(mkdtemp(h->dir) != NULL)) {
        pthread_mutex_destroy(&h->faults_mu);
        free(h);
        return NULL;
    }
    snprintf(h->url, sizeof(h->url), "sqlite:%s/db", h->dir);
    snprintf(h->journal, sizeof(h->journal), "%s/clicks", h->dir);
    struct app *app = &h->app;
    config_init(&app->cfg);
    app->cfg.base_url = xstrdup("http://sho.rt");
    app->cfg.node_id = xstrdup("hx");
    app->cfg.click_flush_ms = CLICK_FLUSH_MS;
    app->cfg.journal_sync_ms = JOURNAL_SYNC_MS;
    atomic_store(&app->links_counted, -1);
    if (!CHECK_EQ_INT(store_open(h->url, &app->store), ERR_OK)) {
        hx_free(h);
        return NULL;
    }
    h->real = app->store->ops;
    h->ops = *h->real;
#define X(op, params, args) h->ops.op = w_##op;
    FAULT_OPS(X)
#undef X
    app->store->ops = &h->ops;
    current = h;
    if (!assemble(h)) {
        hx_free(h);
        return NULL;
    }
    return h;
}

struct app *hx_app(struct hx *h) { return &h->app; }

/* The temporary folder holds the database, its WAL and index, and the
 * journal's folder of files. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        char path[sizeof(((struct hx *)0)->journal) + 256 + 2];
        for (struct dirent *e = readdir(d); e; e = readdir(d)) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            if (unlink(path) != 0)
                remove_dir(path);
        }
        closedir(d);
    }
    if (rmdir(dir) != 0)
        test_note("could not remove %s", dir);
}

/* serve.c's shutdown, in its order: nothing acknowledged is lost, every
 * click is stored, then everything is freed. */
void hx_free(struct hx *h)
{
    if (!h)
        return;
    struct app *app = &h->app;
    hx_fault_clear(h);
    storeq_drain(app->storeq);
    if (app->writer)
        writer_drain(app->writer);
    if (h->w) {
        if (app->clicks)
            clicks_flush(app->clicks, 0);
        server_inproc_free(h->w); /* runs what was posted to it last */
    }
    storeq_free(app->storeq);
    clicks_stop(app->clicks);
    if (app->writer) {
        writer_drain(app->writer);
        writer_free(app->writer);
    }
    clicks_free(app->clicks);
    checks_free(app->checks);
    ratelimit_free(app->ratelimit);
    aggregate_free(app->aggregate);
    classify_free(app->classify);
    if (app->cache) {
        cache_free(app->cache);
        cache_thread_unregister();
    }
    metrics_free(app->metrics);
    links_free(app->links);
    fallbacks_free(app->fallbacks);
    sitemap_free(app->sites);
    if (app->store) {
        app->store->ops = h->real;
        app->store->ops->close(app->store);
    }
    config_release(&app->cfg);
    remove_dir(h->dir);
    if (current == h)
        current = NULL;
    pthread_mutex_destroy(&h->faults_mu);
    free(h);
}

bool hx_clicks_settle(struct hx *h)
{
    struct clicks *c = h->app.clicks;
    clicks_flush(c, 0);
    for (int ms = 0; ms < SETTLE_MS; ms++) {
        if (!clicks_pending(c))
            return true;
        struct timespec pause = {0, 1000000L};
        nanosleep(&pause, NULL);
    }
    CHECK(!"hx_clicks_settle: clicks are still pending");
    test_note("%llu clicks pending", (unsigned long long)clicks_pending(c));
    return false;
}

const char *hx_key(struct hx *h, bool admin)
{
    int64_t id = 0;
    if (!CHECK_EQ_INT(links_key_create(h->app.links, h->app.store, admin ? "admin" : "user", admin,
                                       h->token, &id),
                      ERR_OK))
        return "";
    return h->token;
}

static int method_of(const char *name)
{
    for (int m = 0; m < 64; m++) {
        const char *n = llhttp_method_name((llhttp_method_t)m);
        if (n && !strcmp(n, name))
            return m;
    }
    CHECK(!"hx_request: an unknown method");
    return HTTP_GET;
}

static char *copy_buf(const struct buf *b)
{
    char *s = malloc(b->len + 1);
    if (!s)
        abort();
    if (b->len)
        memcpy(s, b->p, b->len);
    s[b->len] = '\0';
    return s;
}

int hx_request(struct hx *h, const char *method, const char *target, const char *const *headers,
               const char *body, struct hx_resp *resp)
{
    struct request r;
    memset(&r, 0, sizeof(r));
    r.method = method_of(method);
    r.target = (struct slice){target, strlen(target)};
    const char *q = strchr(target, '?');
    r.path = (struct slice){target, q ? (size_t)(q - target) : strlen(target)};
    r.query = q ? (struct slice){q + 1, strlen(q + 1)} : (struct slice){"", 0};
    r.host = (struct slice){"sho.rt", 6};
    for (int i = 0; headers && headers[i] && i < HTTP_MAX_HEADERS; i++) {
        const char *colon = strchr(headers[i], ':');
        if (!CHECK(colon != NULL))
            continue;
        const char *v = colon + 1;
        while (*v == ' ')
            v++;
        r.headers[r.nheaders++] =
            (struct header){{headers[i], (size_t)(colon - headers[i])}, {v, strlen(v)}};
        if (slice_ieq(r.headers[r.nheaders - 1].name, "host"))
            r.host = r.headers[r.nheaders - 1].value;
    }
    r.body = body ? (struct slice){body, strlen(body)} : (struct slice){"", 0};
    struct sockaddr_storage peer;
    memset(&peer, 0, sizeof(peer));
    struct sockaddr_in *in = (struct sockaddr_in *)&peer;
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    r.peer = &peer;
    r.app = &h->app;
    buf_init(&r.resp_headers);
    buf_init(&r.resp_body);

    int status = server_inproc_run(h->w, &r);
    memset(resp, 0, sizeof(*resp));
    resp->status = status;
    resp->headers = copy_buf(&r.resp_headers);
    resp->content_type = r.content_type ? xstrdup(r.content_type) : NULL;
    if (r.method == HTTP_HEAD)
        buf_reset(&r.resp_body); /* a client gets the head only */
    resp->body = copy_buf(&r.resp_body);
    resp->body_len = r.resp_body.len;
    resp->json = json_loadb(resp->body, resp->body_len, 0, NULL);
    if (r.json)
        json_decref(r.json);
    buf_release(&r.resp_headers);
    buf_release(&r.resp_body);
    return status;
}

void hx_resp_release(struct hx_resp *resp)
{
    free(resp->headers);
    free(resp->content_type);
    free(resp->body);
    if (resp->json)
        json_decref(resp->json);
    memset(resp, 0, sizeof(*resp));
}

const char *hx_header(const struct hx_resp *resp, const char *name)
{
    static char value[1024];
    size_t n = strlen(name);
    for (const char *line = resp->headers; line && *line;) {
        const char *end = strstr(line, "\r\n");
        if (!end)
            break;
        if ((size_t)(end - line) > n && line[n] == ':' && !strncasecmp(line, name, n)) {
            const char *v = line + n + 1;
            while (*v == ' ')
                v++;
            snprintf(value, sizeof(value), "%.*s", (int)(end - v), v);
            return value;
        }
        line = end + 2;
    }
    return NULL;
}

/* resp->json's value at "a.b", or NULL. */
static json_t *json_at(const struct hx_resp *resp, const char *path)
{
    json_t *o = resp->json;
    char key[64];
    while (o && *path) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof(key), "%.*s", (int)n, path);
        o = json_is_array(o) ? json_array_get(o, strtoul(key, NULL, 10)) : json_object_get(o, key);
        path += n + (path[n] == '.');
    }
    return o;
}

const char *hx_json_str(const struct hx_resp *resp, const char *path)
{
    return json_string_value(json_at(resp, path));
}

long long hx_json_int(const struct hx_resp *resp, const char *path)
{
    json_t *v = json_at(resp, path);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

const char *hx_auth(struct hx *h, bool admin, char line[HX_AUTH_MAX])
{
    snprintf(line, HX_AUTH_MAX, "Authorization: Bearer %s", hx_key(h, admin));
    return line;
}

int hx_create(struct hx *h, const char *auth, const char *body, char code[HX_CODE_MAX])
{
    const char *headers[] = {auth, NULL};
    struct hx_resp resp;
    int status = hx_request(h, "POST", "/api/links", auth ? headers : NULL, body, &resp);
    const char *c = hx_json_str(&resp, "code");
    snprintf(code, HX_CODE_MAX, "%s", c ? c : "");
    if (status != 201)
        test_note("POST /api/links %s: %d %s", body, status, resp.body);
    hx_resp_release(&resp);
    return status;
}

bool hx_unavailable(struct hx *h, const char *op, int nth, const char *method, const char *target,
                    const char *const *headers, const char *body)
{
    hx_fault(h, op, nth);
    struct hx_resp resp;
    bool ok = CHECK_EQ_INT(hx_request(h, method, target, headers, body, &resp), 503);
    ok = CHECK_EQ_STR(hx_header(&resp, "Retry-After"), "1") && ok;
    if (resp.json)
        ok = CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "unavailable") && ok;
    else if (strcmp(method, "HEAD") != 0)
        ok = CHECK(!strncmp(resp.body, "Service Unavailable", 19)) && ok;
    if (!ok)
        test_note("%s %s with '%s' failing: %s", method, target, op, resp.body);
    hx_resp_release(&resp);
    hx_fault_clear(h);
    return ok;
}
