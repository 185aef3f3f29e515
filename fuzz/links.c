/* links.c (fuzz) - the JSON bodies of POST /api/links, PATCH
 * /api/links/:code and POST /api/links/bulk, through the code the handlers
 * run before anything is stored: links_parse, links_parse_patch and
 * links_apply_patch (links.h), link_bulk_body and link_bulk_item
 * (handlers.h).
 *
 * The first byte picks the body (0 create, 1 patch, 2 bulk); the rest is
 * the body, read with the router's jansson flags and refused unless it is
 * an object, as the router does. What is accepted must keep the rules: a
 * create's URL and host pass urlcheck again unchanged, an alias passes
 * alias_check, the text fields fit their limits; a refusal names a reason.
 * A patch is applied to a plain link, as the writer does. The links state
 * (its secrets) lives in a SQLite file in a scratch directory. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "links/codes.h"
#include "base/err.h"
#include "api/handlers.h"
#include "links/links.h"
#include "base/log.h"
#include "api/router.h"
#include "store/store.h"
#include "links/urlcheck.h"
#include "base/banned.h"

/* The router's (router.c, parse_json). */
#define BODY_FLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

static const char *const self_hosts[] = {"sho.rt", "localhost", NULL};
static struct store *st;
static struct links *lk;
static char dir[] = "/tmp/shortd-fuzz-links-XXXXXX";
static char db[sizeof(dir) + 16];
static const int64_t now = 1767225600000; /* 2026-01-01 */

static void check(int cond)
{
    if (!cond)
        abort();
}

static void cleanup(void)
{
    links_free(lk);
    if (st)
        st->ops->close(st);
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(*suffixes); i++) {
        char p[sizeof(db) + 16];
        snprintf(p, sizeof(p), "%s%s", db, suffixes[i]);
        unlink(p);
    }
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_level = LOG_OFF;
    check(mkdtemp(dir) != NULL);
    snprintf(db, sizeof(db), "%s/links.db", dir);
    atexit(cleanup);
    check(store_open(db, &st) == ERR_OK);
    check(links_new(st, router_reserved(), self_hosts, &lk) == ERR_OK);
    return 0;
}

static void check_text(const char *s, size_t max) { check(!s || strlen(s) <= max); }

static void check_url(const char *url, const char *host)
{
    const struct urlcheck_opts o = {.self_hosts = self_hosts};
    struct buf u = BUF_INIT, h = BUF_INIT;
    const char *why;
    check(url && host);
    check(urlcheck(url, strlen(url), &o, &u, &h, &why) == ERR_OK);
    check(strcmp(buf_cstr(&u), url) == 0 && strcmp(buf_cstr(&h), host) == 0);
    buf_release(&u);
    buf_release(&h);
}

static void check_input(const struct link_input *in)
{
    check_url(in->url, in->host);
    const char *why;
    if (in->alias)
        check(alias_check(in->alias, strlen(in->alias), router_reserved(), &why) == ERR_OK);
    check_text(in->title, TITLE_MAX);
    check_text(in->note, NOTE_MAX);
    check(in->expires_at >= 0 && in->max_clicks >= 0);
    if (in->tags) {
        json_t *tags = json_loads(in->tags, 0, NULL);
        check(json_is_array(tags) && json_array_size(tags) <= TAGS_MAX);
        json_decref(tags);
    }
    if (in->domain)
        check(links_domain_check(in->domain, strlen(in->domain), &why) == ERR_OK);
}

static void create(json_t *body)
{
    struct link_input in;
    const char *field = NULL;
    char why[256] = "";
    if (links_parse(lk, body, now, &in, &field, why, sizeof(why)) == ERR_OK)
        check_input(&in);
    else
        check(why[0] != '\0');
    link_input_release(&in);
}

static void patch(json_t *body)
{
    struct link_patch p;
    const char *field = NULL;
    char why[256] = "";
    if (links_parse_patch(lk, body, now, &p, &field, why, sizeof(why)) == ERR_OK) {
        if (p.fields & PATCH_URL)
            check_url(p.url, p.host);
        check_text(p.title, TITLE_MAX);
        check_text(p.note, NOTE_MAX);
        struct link l = {.code = "abcd", .owner = 1, .created_at = now - 1000};
        l.url = xstrdup("https://example.com/landing?x=1");
        l.utm = xstrdup("{\"utm_source\":\"fuzz\"}");
        bool moved = false;
        int rc = links_apply_patch(&l, &p, now, &moved);
        check(rc == ERR_OK || rc == ERR_INVALID || rc == ERR_MISMATCH);
        if (rc == ERR_OK) {
            check(l.url != NULL);
            check(!l.dest || strlen(l.dest) <= URL_MAX);
        }
        link_release(&l);
    } else {
        check(why[0] != '\0');
    }
    link_patch_release(&p);
}

static void bulk(json_t *body)
{
    json_t *links, *v;
    const char *field = NULL;
    char why[256] = "";
    if (link_bulk_body(body, &links, &field, why, sizeof(why)) != ERR_OK) {
        check(field && why[0]);
        return;
    }
    size_t i;
    json_array_foreach(links, i, v)
    {
        struct link_input in;
        json_t *error;
        int status = link_bulk_item(lk, v, now, &in, &error);
        if (status == 0) {
            check(!error);
            check_input(&in);
        } else {
            check(status == 400 && json_is_string(json_object_get(error, "message")));
        }
        link_input_release(&in);
        json_decref(error);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    json_error_t err;
    json_t *body = json_loadb((const char *)data + 1, size - 1, BODY_FLAGS, &err);
    if (!json_is_object(body)) {
        json_decref(body);
        return 0;
    }
    switch (data[0] % 3) {
    case 0: create(body); break;
    case 1: patch(body); break;
    default: bulk(body); break;
    }
    json_decref(body);
    return 0;
}
