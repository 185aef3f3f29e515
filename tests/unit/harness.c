/* harness.c - the in-process harness of harness.h: an app assembled as
 * serve.c assembles one (store, links, cache, writer; no listener, no click
 * pipeline, no rate limits), and a fault-injecting wrapper around the
 * store's ops table. */
#include "harness.h"

#include <dirent.h>
#include <llhttp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/app.h"
#include "redirect/cache.h"
#include "app/config.h"
#include "base/err.h"
#include "http/http.h"
#include "links/links.h"
#include "api/router.h"
#include "http/server.h"
#include "store/store.h"
#include "store/store_keys.h"
#include "store/store_links.h"
#include "test.h"
#include "store/writer.h"
#include "base/banned.h"

/* The ops the fault can be put on, each wrapped below. */
#define FAULT_OPS(X)                                                                               \
    X(begin) X(commit) X(link_get) X(link_insert) X(link_list) X(key_by_hash) X(block_list)

enum {
#define X(op) FOP_##op,
    FAULT_OPS(X)
#undef X
    FOP__COUNT
};

struct fault {
    bool on;
    int nth;        /* 0: every call */
    int calls;      /* since hx_fault */
};

struct hx {
    char dir[64];
    char url[96];
    struct app app;
    struct worker *w;
    const struct store_ops *real;   /* the backend's own table */
    struct store_ops ops;           /* the same with the wrappers */
    struct fault faults[FOP__COUNT];
    char token[KEY_TOKEN_LEN + 1];
};

/* The store's ops table is shared by every store of its backend; the
 * wrappers find the harness through this (one harness at a time). */
static struct hx *current;

/* Whether this call of 'op' is to fail. Called from the writer thread too:
 * a test sets its fault only while no write is in flight. */
static bool fails(int op)
{
    struct fault *f = &current->faults[op];
    if (!f->on)
        return false;
    f->calls++;
    if (f->nth == 0)
        return true;
    if (f->calls == f->nth) {
        f->on = false;
        return true;
    }
    return false;
}

static int w_begin(struct store *st)
{
    return fails(FOP_begin) ? ERR_STORAGE : current->real->begin(st);
}

static int w_commit(struct store *st)
{
    return fails(FOP_commit) ? ERR_STORAGE : current->real->commit(st);
}

static int w_link_get(struct store *st, const char *code, struct link *out)
{
    return fails(FOP_link_get) ? ERR_STORAGE : current->real->link_get(st, code, out);
}

static int w_link_insert(struct store *st, const struct link *l)
{
    return fails(FOP_link_insert) ? ERR_STORAGE : current->real->link_insert(st, l);
}

static int w_link_list(struct store *st, const struct link_query *q, link_cb cb, void *arg)
{
    return fails(FOP_link_list) ? ERR_STORAGE : current->real->link_list(st, q, cb, arg);
}

static int w_key_by_hash(struct store *st, const uint8_t hash[32], struct apikey *out)
{
    return fails(FOP_key_by_hash) ? ERR_STORAGE : current->real->key_by_hash(st, hash, out);
}

static int w_block_list(struct store *st, host_cb cb, void *arg)
{
    return fails(FOP_block_list) ? ERR_STORAGE : current->real->block_list(st, cb, arg);
}

void hx_fault(struct hx *h, const char *op, int nth)
{
    static const char *const names[] = {
#define X(op) #op,
        FAULT_OPS(X)
#undef X
    };
    for (int i = 0; i < FOP__COUNT; i++)
        if (!strcmp(names[i], op)) {
            h->faults[i] = (struct fault){.on = true, .nth = nth};
            return;
        }
    CHECK(!"hx_fault: an op the harness does not wrap");
    test_note("op '%s'", op);
}

void hx_fault_clear(struct hx *h)
{
    memset(h->faults, 0, sizeof(h->faults));
}

struct hx *hx_new(void)
{
    struct hx *h = calloc(1, sizeof(*h));
    if (!h)
        abort();
    snprintf(h->dir, sizeof(h->dir), "/tmp/shortd-hx-XXXXXX");
    if (!CHECK(mkdtemp(h->dir) != NULL)) {
        free(h);
        return NULL;
    }
    snprintf(h->url, sizeof(h->url), "sqlite:%s/db", h->dir);
    struct app *app = &h->app;
    config_init(&app->cfg);
    app->cfg.base_url = xstrdup("http://sho.rt");
    atomic_store(&app->links_counted, -1);
    static const char *const self[] = {"sho.rt", NULL};  /* links keeps it */
    if (!CHECK_EQ_INT(store_open(h->url, &app->store), ERR_OK) ||
        !CHECK_EQ_INT(links_new(app->store, router_reserved(), self, &app->links), ERR_OK)) {
        hx_free(h);
        return NULL;
    }
    h->real = app->store->ops;
    h->ops = *h->real;
#define X(op) h->ops.op = w_##op;
    FAULT_OPS(X)
#undef X
    app->store->ops = &h->ops;
    current = h;
    app->cache = cache_new((size_t)app->cfg.cache_size, app->cfg.miss_ttl);
    cache_thread_register();
    app->writer = writer_new(app->store, (int)app->cfg.commit_batch);
    if (!CHECK_EQ_INT(writer_start(app->writer, 0), ERR_OK)) {
        hx_free(h);
        return NULL;
    }
    h->w = server_inproc_new(&router_entry);
    return h;
}

/* The temporary folder holds files only (the database, its WAL and index). */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        char path[sizeof(((struct hx *)0)->dir) + 256 + 2];
        for (struct dirent *e = readdir(d); e; e = readdir(d)) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    if (rmdir(dir) != 0)
        test_note("could not remove %s", dir);
}

void hx_free(struct hx *h)
{
    if (!h)
        return;
    struct app *app = &h->app;
    hx_fault_clear(h);
    if (app->writer) {
        writer_drain(app->writer);
        server_inproc_free(h->w);   /* runs what the writer posted last */
        writer_free(app->writer);
    }
    if (app->cache) {
        cache_free(app->cache);
        cache_thread_unregister();
    }
    links_free(app->links);
    if (app->store) {
        app->store->ops = h->real;
        app->store->ops->close(app->store);
    }
    config_release(&app->cfg);
    remove_dir(h->dir);
    if (current == h)
        current = NULL;
    free(h);
}

struct app *hx_app(struct hx *h)
{
    return &h->app;
}

const char *hx_key(struct hx *h, bool admin)
{
    int64_t id = 0;
    if (!CHECK_EQ_INT(links_key_create(h->app.links, h->app.store, admin ? "admin" : "user",
                                       admin, h->token, &id),
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
        r.headers[r.nheaders++] = (struct header){{headers[i], (size_t)(colon - headers[i])},
                                                  {v, strlen(v)}};
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
    resp->body = copy_buf(&r.resp_body);
    resp->json = json_loads(resp->body, 0, NULL);
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
    static char value[256];
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

const char *hx_json_str(const struct hx_resp *resp, const char *path)
{
    json_t *o = resp->json;
    char key[64];
    while (o && *path) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof(key), "%.*s", (int)n, path);
        o = json_object_get(o, key);
        path += n + (path[n] == '.');
    }
    return json_string_value(o);
}
