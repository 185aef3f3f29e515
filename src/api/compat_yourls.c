/* compat_yourls.c - YOURLS's API (yourls-api.php), so that its clients
 * (ShareX, browser extensions, WordPress plugins...) work against shortd
 * with nothing changed but the base URL and the signature.
 *
 * The shapes are those of YOURLS 1.10.4 (includes/functions-api.php,
 * includes/functions-shorturls.php, yourls-api.php): the actions shorturl,
 * expand, url-stats, stats, db-stats and version; the formats xml (the
 * default), json, jsonp and simple; the HTTP status is the answer's
 * statusCode or errorCode. Parameters come from the query and the body
 * (a urlencoded or multipart form), the body's first, as PHP's $_REQUEST.
 * The key is the `signature` parameter (yourls_dialect, for the router).
 * As in YOURLS, `signature` may also be a key's signature token
 * (links_yourls_token: what YOURLS derives per user), or, with `timestamp`,
 * hash(timestamp . token) or hash(token . timestamp), `hash` naming md5
 * (the default), sha1, sha256 or sha512: shortd keeps only a keyed hash of
 * each key, so these are checked against the token of every valid key
 * (yourls_prove). `username` and `password` name users shortd does not
 * have: they are refused as YOURLS refuses a failed login.
 *
 * Links made here are ordinary links: links_parse and links_create (the
 * same rules as POST /api/links, "reuse" standing for YOURLS's unique URLs),
 * the group-commit writer (apijob.h) and link_changed after the commit.
 * Where a rule of shortd's refuses what YOURLS would take (an alias, a code
 * once used), the client gets YOURLS's error for it (error:keyword). */
#include <ctype.h>
#include <openssl/evp.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "api/apijob.h"
#include "api/handlers.h"
#include "api/idem.h"
#include "api/owner.h"
#include "api/router.h"
#include "app/app.h"
#include "base/err.h"
#include "base/pct.h"
#include "http/form.h"
#include "base/timeutil.h"
#include "links/links.h"
#include "redirect/tiers.h"
#include "store/store.h"
#include "base/banned.h"

#define YOURLS_VERSION "1.10.4" /* the YOURLS whose API this speaks */
#define YOURLS_DB_VERSION "507"
#define PARAM_MAX (64 * 1024) /* bytes of one decoded parameter */
#define STATS_LIMIT_MAX 1000  /* links one `stats` answer lists */
#define STATS_SCAN_MAX 10000  /* links a `stats` sorts (its key's newest) */
#define TRIM_CHARS 60         /* yourls_trim_long_string's length */

/* ---- parameters ---- */

/* The value of parameter 'name' as PHP's $_REQUEST has it (form.h); *n is
 * its length (it may hold a NUL). */
static char *param(const struct request *r, const char *name, size_t *n)
{
    return form_param(r, name, PARAM_MAX, n);
}

/* A parameter as a C string: NULL when absent, empty, or holding a NUL. */
static char *param_str(const struct request *r, const char *name)
{
    size_t n = 0;
    char *v = param(r, name, &n);
    if (v && (!n || strlen(v) != n)) {
        free(v);
        v = NULL;
    }
    return v;
}

/* ---- the answer: a JSON object rendered in the asked format ---- */

/* The format and callback of a request, as yourls-api.php reads them. */
struct out {
    char *format;   /* NULL: xml */
    char *callback; /* callback, or jsonp; NULL: none */
};

static void out_read(const struct request *r, struct out *o)
{
    o->format = param_str(r, "format");
    size_t n = 0;
    o->callback = param(r, "callback", &n);
    if (!o->callback)
        o->callback = param(r, "jsonp", &n);
    json_t *cb = o->callback ? json_stringn(o->callback, n) : NULL;
    if (o->callback && !cb)
        o->callback[0] = '\0'; /* no UTF-8: no answer could carry it */
    json_decref(cb);
}

static void out_release(struct out *o)
{
    free(o->format);
    free(o->callback);
}

static void xml_escape(struct buf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': buf_adds(b, "&amp;"); break;
        case '<': buf_adds(b, "&lt;"); break;
        case '>': buf_adds(b, "&gt;"); break;
        case '"': buf_adds(b, "&quot;"); break;
        case '\'': buf_adds(b, "&#039;"); break;
        default:
            if (c >= 0x20 || c == '\t' || c == '\n' || c == '\r')
                buf_addc(b, (char)c); /* other control characters are dropped */
        }
    }
}

/* One element per key, nested for objects: what YOURLS's array-to-XML gives. */
static void xml_object(struct buf *b, json_t *o)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        char num[32];
        const char *text = NULL;
        if (json_is_string(v)) {
            text = json_string_value(v);
        } else if (json_is_integer(v)) {
            snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
            text = num;
        } else if (!json_is_object(v)) {
            text = "";
        }
        buf_printf(b, "<%s", k);
        if (text && !*text) {
            buf_adds(b, "/>");
            continue;
        }
        buf_addc(b, '>');
        if (text)
            xml_escape(b, text);
        else
            xml_object(b, v);
        buf_printf(b, "</%s>", k);
    }
}

/* yourls_validate_jsonp_callback: [A-Za-z0-9_$.]+ and no \uXXXX-like run. */
static bool callback_ok(const char *cb)
{
    if (!cb || !*cb)
        return false;
    for (const char *p = cb; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '$' || *p == '.'))
            return false;
        if (*p == 'u' && pct_hex_value((unsigned char)p[1]) >= 0 &&
            pct_hex_value((unsigned char)p[2]) >= 0 && pct_hex_value((unsigned char)p[3]) >= 0 &&
            pct_hex_value((unsigned char)p[4]) >= 0)
            return false;
    }
    return true;
}

/* PHP's json_encode: slashes and non-ASCII escaped. */
static void json_php(struct buf *b, json_t *doc)
{
    char *s =
        json_dumps(doc, JSON_COMPACT | JSON_ESCAPE_SLASH | JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER);
    if (!s)
        abort();
    for (char *p = s; *p; p++) {
        if (*p != '\\')
            continue;
        if (p[1] == 'u') /* PHP writes \u00e9 */
            for (int i = 2; i < 6 && p[i]; i++)
                p[i] = (char)tolower((unsigned char)p[i]);
        p++; /* the escaped character */
    }
    buf_adds(b, s);
    free(s);
}

/* yourls_api_output: writes 'doc' (stolen) in the format asked, 'simple'
 * for the simple one, with the status of its statusCode or errorCode. */
static int answer(struct request *r, const struct out *o, json_t *doc, const char *simple)
{
    const char *code = json_string_value(json_object_get(doc, "statusCode"));
    if (!code)
        code = json_string_value(json_object_get(doc, "errorCode"));
    int status = code ? atoi(code) : 200;
    if (status < 200 || status > 599)
        status = 200;
    if (o->callback)
        json_object_set_new(doc, "callback", json_string(o->callback));
    const char *fmt = o->format ? o->format : "xml";
    struct buf b = BUF_INIT;
    const char *type;
    if (strcmp(fmt, "jsonp") == 0) {
        type = "application/javascript; charset=utf-8";
        /* No callback at all is no error in YOURLS: its "(...)" is written
         * as is. One given (the login failure always gives one) must pass. */
        const char *cb = json_string_value(json_object_get(doc, "callback"));
        if (cb && !callback_ok(cb)) {
            json_decref(doc);
            doc = json_pack("{s:s,s:s}", "errorCode", "400", "error", "Invalid callback parameter");
            status = 400;
            json_php(&b, doc);
        } else {
            buf_printf(&b, "%s(", cb ? cb : "");
            json_php(&b, doc);
            buf_addc(&b, ')');
        }
    } else if (strcmp(fmt, "json") == 0) {
        type = "application/json; charset=utf-8";
        json_php(&b, doc);
    } else if (strcmp(fmt, "xml") == 0) {
        type = "application/xml; charset=utf-8";
        buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<root>");
        xml_object(&b, doc);
        buf_adds(&b, "</root>\n");
    } else { /* simple, and any other: the bare text */
        type = "text/plain; charset=utf-8";
        buf_adds(&b, simple ? simple : "");
    }
    json_decref(doc);
    http_body(r, status, type, b.p ? b.p : "", b.len);
    buf_release(&b);
    return status;
}

/* The router's refusals (yourls_dialect.error): YOURLS answers a failed
 * login 403 with "Please log in", or "Invalid username or password" when
 * those were sent; the rest keep their status. */
static int yourls_error(struct request *r, int status, const char *code, const char *message)
{
    struct out o;
    out_read(r, &o);
    char st[8];
    json_t *doc;
    if (strcmp(code, "unauthorized") == 0 || strcmp(code, "invalid_key") == 0) {
        size_t n;
        char *u = param(r, "username", &n), *p = param(r, "password", &n);
        message = u || p ? "Invalid username or password" : "Please log in";
        free(u);
        free(p);
        /* yourls-api.php's auth failure always carries the callback key */
        doc = json_pack("{s:s,s:s,s:s}", "message", message, "errorCode", "403", "callback",
                        o.callback ? o.callback : "");
    } else {
        snprintf(st, sizeof(st), "%d", status);
        doc = json_pack("{s:s,s:s}", "message", message, "errorCode", st);
    }
    status = answer(r, &o, doc, message);
    out_release(&o);
    return status;
}

/* A signature the router cannot look up itself: timestamped, or of a
 * signature token's length (a key is longer: KEY_TOKEN_LEN). */
static bool proof_form(const struct request *r, size_t sig_len)
{
    size_t n = 0;
    char *ts = param(r, "timestamp", &n);
    /* PHP's empty(): "" and "0" are no timestamp */
    bool timed = ts && n && !(n == 1 && ts[0] == '0');
    free(ts);
    return timed || sig_len == YOURLS_TOKEN_LEN;
}

/* The signature is the key; a signature token, timestamped or not, gives
 * no token (yourls_prove checks it), nor does a username. */
static bool yourls_token(const struct request *r, char *buf, size_t cap, struct slice *token)
{
    size_t n = 0;
    char *sig = param(r, "signature", &n);
    if (!sig || !n || proof_form(r, n)) {
        free(sig);
        return false;
    }
    *token = (struct slice){buf, 0};
    if (n < cap) { /* longer: no key can match (an empty token) */
        memcpy(buf, sig, n);
        token->n = n;
    }
    free(sig);
    return true;
}

/* The digest of a timestamped signature: md5 unless `hash` names another;
 * NULL for one not offered (of hash_algos(), those clients use). */
static const EVP_MD *signature_digest(const struct request *r)
{
    static const struct {
        const char *name;
        const EVP_MD *(*md)(void);
    } digests[] = {
        {"md5", EVP_md5},
        {"sha1", EVP_sha1},
        {"sha256", EVP_sha256},
        {"sha512", EVP_sha512},
    };
    size_t n = 0;
    char *h = param(r, "hash", &n);
    if (!h)
        return EVP_md5();
    const EVP_MD *md = NULL;
    for (size_t i = 0; i < sizeof(digests) / sizeof(digests[0]); i++)
        if (strlen(h) == n && strcmp(h, digests[i].name) == 0)
            md = digests[i].md();
    free(h);
    return md;
}

/* PHP's (int) of the timestamp: its leading integer, 0 without one. */
static long long php_int(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\v' || *s == '\f')
        s++;
    bool neg = *s == '-';
    if (*s == '-' || *s == '+')
        s++;
    long long v = 0;
    for (; *s >= '0' && *s <= '9' && v < 1000000000000000LL; s++)
        v = v * 10 + (*s - '0');
    return neg ? -v : v;
}

/* What a signature is checked against, for each valid key in turn. */
struct proof {
    const struct links *links;
    const char *sig; /* lowercase hex, as PHP's hash() writes it */
    size_t sig_len;
    const char *ts; /* NULL: the plain signature token */
    size_t ts_len;
    const EVP_MD *md;
    bool found;
    struct apikey key;
};

/* hex(md(a . b)) == sig, in constant time once the lengths agree. */
static bool digest_matches(const struct proof *p, const char *a, size_t an, const char *b,
                           size_t bn)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dn = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx)
        abort();
    bool ok = EVP_DigestInit_ex(ctx, p->md, NULL) && EVP_DigestUpdate(ctx, a, an) &&
              EVP_DigestUpdate(ctx, b, bn) && EVP_DigestFinal_ex(ctx, d, &dn);
    EVP_MD_CTX_free(ctx);
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    ok = ok && p->sig_len == 2 * (size_t)dn;
    if (ok) {
        sodium_bin2hex(hex, sizeof(hex), d, dn);
        ok = sodium_memcmp(hex, p->sig, p->sig_len) == 0;
    }
    sodium_memzero(d, sizeof(d));
    sodium_memzero(hex, sizeof(hex));
    return ok;
}

static int proof_check(const struct apikey *k, void *arg)
{
    struct proof *p = arg;
    if (k->revoked_at)
        return 0;
    char tok[YOURLS_TOKEN_LEN + 1];
    links_yourls_token(p->links, k->id, tok);
    bool ok;
    if (!p->ts)
        ok = p->sig_len == YOURLS_TOKEN_LEN && sodium_memcmp(tok, p->sig, YOURLS_TOKEN_LEN) == 0;
    else
        ok = digest_matches(p, p->ts, p->ts_len, tok, YOURLS_TOKEN_LEN) ||
             digest_matches(p, tok, YOURLS_TOKEN_LEN, p->ts, p->ts_len);
    sodium_memzero(tok, sizeof(tok));
    if (ok) {
        p->found = true;
        p->key = *k;
    }
    return ok;
}

/* yourls_dialect.prove: yourls_check_signature_timestamp and
 * yourls_check_signature against each valid key's signature token. A
 * timestamp further than yourls-timestamp-window from now (either way), or
 * a `hash` not offered, is refused as a wrong signature. One listing of
 * the keys per request: a store of thousands of keys costs a few ms. */
static int yourls_prove(const struct request *r, struct apikey *key)
{
    size_t sn = 0, tn = 0;
    char *sig = param(r, "signature", &sn);
    if (!sig || !sn || !proof_form(r, sn)) {
        free(sig);
        return ERR_INVALID;
    }
    char *ts = param(r, "timestamp", &tn);
    bool timed = ts && tn && !(tn == 1 && ts[0] == '0');
    struct proof p = {.links = r->app->links,
                      .sig = sig,
                      .sig_len = sn,
                      .ts = timed ? ts : NULL,
                      .ts_len = tn};
    int rc = ERR_NOTFOUND;
    if (timed) {
        long long t = strlen(ts) == tn ? php_int(ts) : 0;
        long long now = (long long)(now_ms() / 1000);
        long long off = now > t ? now - t : t - now;
        p.md = signature_digest(r);
        if (off >= r->app->cfg.yourls_timestamp_window || !p.md)
            goto out;
    }
    struct store *st = r->app->store;
    rc = st->ops->key_list(st, proof_check, &p);
    if (rc == ERR_OK)
        rc = p.found ? ERR_OK : ERR_NOTFOUND;
    if (rc == ERR_OK)
        *key = p.key;
out:
    free(sig);
    free(ts);
    return rc;
}

const struct api_dialect yourls_dialect = {
    .name = "yourls",
    .token = yourls_token,
    .token_in_body = true,
    .prove = yourls_prove,
    .error = yourls_error,
};

/* ---- what the actions share ---- */

/* A link's short URL: its own domain's when it has one. */
static void short_url(const struct app *app, const struct link *l, struct buf *out)
{
    link_short_url(out, app->cfg.base_url, l->code, l->domain);
}

/* YOURLS's "Y-m-d H:i:s" (UTC here). */
static void ymdhis(int64_t ms, char out[20])
{
    char t[RFC3339_MAX];
    rfc3339_format(ms, t); /* 2026-01-31T12:00:00Z or with .mmm */
    memcpy(out, t, 19);
    out[10] = ' ';
    out[19] = '\0';
}

/* YOURLS stores a title (the page's when none is given); shortd fetches
 * nothing, so a link without one shows its URL, as YOURLS does when the
 * page has none. */
static const char *title_of(const struct link *l)
{
    return l->title ? l->title : l->url ? l->url : "";
}

/* yourls_trim_long_string: over 60 characters, the first 55 and "[...]". */
static void trim_long(struct buf *b, const char *s)
{
    size_t chars = 0, cut = 0;
    for (size_t i = 0; s[i]; i++) {
        if (((unsigned char)s[i] & 0xC0) == 0x80)
            continue;
        if (chars == TRIM_CHARS - 5)
            cut = i;
        chars++;
    }
    if (chars <= TRIM_CHARS) {
        buf_adds(b, s);
        return;
    }
    buf_add(b, s, cut);
    buf_adds(b, "[...]");
}

/* The link object of url-stats and stats. */
static json_t *stats_link(const struct app *app, const struct link *l)
{
    struct buf su = BUF_INIT;
    short_url(app, l, &su);
    char when[20];
    ymdhis(l->created_at, when);
    json_t *o = json_pack("{s:s#,s:s,s:s,s:s,s:s,s:I}", "shorturl", su.p, su.len, "url",
                          l->url ? l->url : "", "title", title_of(l), "timestamp", when, "ip", "",
                          "clicks", (json_int_t)l->clicks);
    buf_release(&su);
    return o;
}

/* The code of a `shorturl` parameter: a code, or a short URL whose path is one. */
static bool code_param(const char *v, char code[CODE_MAX + 1])
{
    const char *s = strstr(v, "://");
    if (s) {
        s = strchr(s + 3, '/');
        if (!s)
            return false;
        v = s + 1;
    }
    size_t n = strlen(v);
    if (!code_is_plausible(v, n))
        return false;
    memcpy(code, v, n + 1);
    return true;
}

static int unavailable(struct request *r, const struct out *o)
{
    http_add_header(r, "Retry-After", "1", 1);
    json_t *doc = json_pack("{s:s,s:s}", "message", "the store is unavailable; try again",
                            "errorCode", "503");
    return answer(r, o, doc, "the store is unavailable; try again");
}

/* ---- action=shorturl ---- */

struct shorten_job {
    struct api_job base;
    struct out out;
    struct link_input in;
    int64_t owner, now;
    struct idem idem;
    struct link link;
    bool reused, created;
    bool mismatch; /* the Idempotency-Key was used with another request */
    int refused;   /* ERR_EXISTS (keyword), ERR_FORBIDDEN (blocked), or 0 */
};

static void shorten_release(struct api_job *j)
{
    struct shorten_job *s = (struct shorten_job *)j;
    out_release(&s->out);
    link_input_release(&s->in);
    link_release(&s->link);
    idem_release(&s->idem);
    free(s);
}

static json_t *shorten_doc(const struct shorten_job *s, const struct app *app, char **simple);

static int shorten_do(struct shorten_job *s, struct store *st)
{
    owner_key_domain(&s->base.r->key, &s->in.domain); /* YOURLS names no domain */
    int rc =
        links_create(s->base.r->app->links, st, &s->in, s->owner, s->now, &s->link, &s->reused);
    if (rc == ERR_EXISTS || rc == ERR_FORBIDDEN) {
        s->refused = rc;
        return ERR_OK;
    }
    s->created = rc == ERR_OK && !s->reused;
    return rc;
}

/* With an Idempotency-Key, the answer is made here and remembered with the
 * key (idem.h) as {"doc": ..., "simple": ...}, which answer() writes in the
 * format asked (the same: it is part of the fingerprint); a replay, or the
 * first answer, is then j->raw. */
static int shorten_run(struct wjob *wj, struct store *st)
{
    struct shorten_job *s = (struct shorten_job *)wj;
    struct api_job *j = &s->base;
    int rc;
    if (!idem_run_create(j, st, s->owner, &s->idem, s->now, &s->mismatch, &rc))
        return rc;
    rc = shorten_do(s, st);
    if (rc != ERR_OK || !s->idem.key)
        return rc;
    char *simple = NULL;
    json_t *doc = shorten_doc(s, j->r->app, &simple);
    const char *code = json_string_value(json_object_get(doc, "statusCode"));
    j->status = code ? atoi(code) : 200;
    json_t *rec = json_pack("{s:o,s:s}", "doc", doc, "simple", simple);
    free(simple);
    j->raw = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(rec);
    if (!j->raw)
        abort();
    return idem_finish(st, s->owner, &s->idem, s->now, j->status, j->raw);
}

static void shorten_after_commit(struct api_job *j)
{
    struct shorten_job *s = (struct shorten_job *)j;
    if (s->created)
        link_changed(j->r->app, &s->link, s->in.alias ? LINK_NEW_ALIAS : LINK_NEW, s->now);
}

/* A refused shorturl: YOURLS's failure shape. */
static json_t *fail(const char *code, const char *message, const char *status)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:s}", "status", "fail", "code", code, "message", message,
                     "errorCode", status, "statusCode", status);
}

/* The answer of a shorturl that ran, and its `simple` text (malloc'd);
 * any thread. */
static json_t *shorten_doc(const struct shorten_job *s, const struct app *app, char **simple)
{
    if (s->refused == ERR_EXISTS) {
        char msg[CODE_MAX + 64];
        snprintf(msg, sizeof(msg), "Short URL %s already exists in database or is reserved",
                 s->in.alias);
        *simple = xstrdup("");
        return fail("error:keyword", msg, "400");
    }
    if (s->refused) {
        *simple = xstrdup("");
        return fail("error:nourl", "URL is not allowed (its host is blocked)", "400");
    }
    struct buf su = BUF_INIT, msg = BUF_INIT;
    short_url(app, &s->link, &su);
    char when[20];
    ymdhis(s->link.created_at, when);
    trim_long(&msg, s->in.url);
    json_t *doc, *url;
    if (s->reused) {
        /* The quirk clients rely on: a URL the key has already is a failure
         * that carries its short URL (and `simple` prints it). */
        const char *host = strstr(su.p, "://");
        buf_printf(&msg, " already exists in database (short URL: %s)", host ? host + 3 : su.p);
        doc = fail("error:url", msg.p, "400");
        url = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I}", "keyword", s->link.code, "url", s->in.url,
                        "title", title_of(&s->link), "date", when, "ip", "", "clicks",
                        (json_int_t)s->link.clicks);
    } else {
        buf_adds(&msg, " added to database");
        doc = json_pack("{s:s,s:s,s:s,s:s,s:s}", "status", "success", "code", "", "message", msg.p,
                        "errorCode", "", "statusCode", "200");
        url = json_pack("{s:s,s:s,s:s,s:s,s:s}", "keyword", s->link.code, "url", s->in.url, "title",
                        title_of(&s->link), "date", when, "ip", "");
    }
    json_object_set_new(doc, "url", url);
    json_object_set_new(doc, "title", json_string(title_of(&s->link)));
    json_object_set_new(doc, "shorturl", json_stringn(su.p, su.len));
    *simple = buf_detach(&su, NULL);
    buf_release(&msg);
    return doc;
}

static int shorten_respond(struct api_job *j)
{
    struct shorten_job *s = (struct shorten_job *)j;
    struct request *r = j->r;
    if (j->job.rc != ERR_OK) {
        http_add_header(r, "Retry-After", "1", 1);
        return answer(r, &s->out, fail("error:db", "Error saving url to database", "503"), "");
    }
    if (s->mismatch)
        return answer(r, &s->out,
                      fail("error:idempotency",
                           "This Idempotency-Key was used with a different request", "422"),
                      "");
    if (j->replayed)
        http_add_header(r, "Idempotent-Replayed", "true", 4);
    char *simple = NULL;
    json_t *doc = NULL;
    if (j->raw) { /* remembered with its Idempotency-Key */
        json_t *rec = json_loads(j->raw, 0, NULL);
        doc = json_incref(json_object_get(rec, "doc"));
        const char *t = json_string_value(json_object_get(rec, "simple"));
        simple = xstrdup(t ? t : "");
        json_decref(rec);
    }
    if (!doc)
        doc = shorten_doc(s, r->app, &simple);
    int status = answer(r, &s->out, doc, simple);
    free(simple);
    return status;
}

/* yourls_sanitize_title, in place: PHP's strip_tags (a '<' that a blank
 * does not follow opens a tag, closed by a '>' outside quotes; "<!--"
 * opens a comment closed by "-->"), then each run of blanks as one space,
 * trimmed. Written here since it is PHP's own behaviour, which no C library
 * has; it keeps what YOURLS would store (and show) of a title. */
static void title_clean(char *t)
{
    char *o = t;
    const char *p = t;
    while (*p) {
        if (p[0] == '<' && p[1] && !isspace((unsigned char)p[1])) {
            if (!strncmp(p, "<!--", 4)) {
                const char *end = strstr(p + 4, "-->");
                p = end ? end + 3 : p + strlen(p);
                continue;
            }
            char quote = 0;
            int depth = 1;
            for (p++; *p && depth; p++) {
                if (quote) {
                    quote = *p == quote ? 0 : quote;
                } else if (*p == '"' || *p == '\'') {
                    quote = *p;
                } else if (*p == '<') {
                    depth++;
                } else if (*p == '>') {
                    depth--;
                }
            }
            continue;
        }
        *o++ = *p++;
    }
    *o = '\0';
    /* \s+ -> ' ', then trim */
    o = t;
    for (p = t; *p; p++) {
        if (isspace((unsigned char)*p)) {
            if (o > t && o[-1] != ' ')
                *o++ = ' ';
        } else {
            *o++ = *p;
        }
    }
    if (o > t && o[-1] == ' ')
        o--;
    *o = '\0';
}

/* A title longer than shortd keeps is cut at a character's start (YOURLS
 * sanitizes titles rather than refusing them). */
static void title_cut(char *t)
{
    size_t n = strlen(t);
    if (n <= TITLE_MAX)
        return;
    n = TITLE_MAX;
    while (n && ((unsigned char)t[n] & 0xC0) == 0x80)
        n--;
    t[n] = '\0';
}

/* The fingerprint of a shorturl under an Idempotency-Key: the parameters
 * that shape its answer, decoded (a multipart form's boundary differs from
 * one sending to the next; the signature of a timestamped one too). */
static void shorten_fingerprint(const struct request *r, struct idem *k)
{
    static const char *const names[] = {"action", "url",      "keyword", "title",
                                        "format", "callback", "jsonp"};
    enum { N = sizeof(names) / sizeof(names[0]) };
    char *v[N];
    struct slice parts[N];
    for (size_t i = 0; i < N; i++) {
        size_t n = 0;
        v[i] = param(r, names[i], &n);
        parts[i] = (struct slice){v[i], v[i] ? n : 0};
    }
    idem_fingerprint(k, parts, N);
    for (size_t i = 0; i < N; i++)
        free(v[i]);
}

static int action_shorturl(struct request *r, struct out *o)
{
    char *url = param_str(r, "url"), *keyword = param_str(r, "keyword");
    char *title = param_str(r, "title");
    json_t *body = json_object();
    json_object_set_new(body, "url", json_string(url ? url : "")); /* no UTF-8: no url */
    if (keyword) { /* no UTF-8: a number, which the alias rules refuse */
        json_t *a = json_string(keyword);
        json_object_set_new(body, "alias", a ? a : json_integer(0));
    }
    if (title)
        title_clean(title);
    if (title && *title) { /* nothing left: no title (shortd shows the URL) */
        title_cut(title);
        json_t *t = json_string(title); /* NULL when it is no UTF-8 */
        if (t)
            json_object_set_new(body, "title", t);
    }
    json_object_set_new(body, "reuse", json_true());
    free(url);
    free(keyword);
    free(title);

    struct shorten_job *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    s->now = now_ms();
    const char *field = NULL;
    char why[256];
    int rc = links_parse(r->app->links, body, s->now, &s->in, &field, why, sizeof(why));
    json_t *kw = json_object_get(body, "alias");
    json_t *doc = NULL;
    if (rc != ERR_OK && field && strcmp(field, "alias") == 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "Short URL %s already exists in database or is reserved",
                 json_is_string(kw) ? json_string_value(kw) : "");
        doc = fail("error:keyword", msg, "400");
    } else if (rc != ERR_OK && strstr(why, "points back at this shortener")) {
        doc = fail("error:noloop", "URL is a short URL", "400");
    } else if (rc != ERR_OK) {
        doc = fail("error:nourl", "Missing or malformed URL", "400");
    }
    json_decref(body);
    if (doc) {
        link_input_release(&s->in);
        free(s);
        return answer(r, o, doc, "");
    }
    if (idem_read(r, s->now, &s->idem) != ERR_OK) {
        link_input_release(&s->in);
        free(s);
        return answer(r, o,
                      fail("error:idempotency",
                           "Idempotency-Key must be 1 to 255 visible ASCII characters", "400"),
                      "");
    }
    if (s->idem.key) /* what the request asks, whatever its form's encoding */
        shorten_fingerprint(r, &s->idem);
    s->out = *o; /* the job owns them now */
    *o = (struct out){0};
    s->owner = r->key.owner;
    /* Without an Idempotency-Key a create writes one row: no savepoint. */
    s->base.job.single_write = !s->idem.key;
    s->base.after_commit = shorten_after_commit;
    s->base.respond = shorten_respond;
    s->base.release = shorten_release;
    return api_job_submit(r, &s->base, shorten_run);
}

/* ---- reads ---- */

/* The link of the `shorturl` parameter within the key's scope: ERR_OK,
 * ERR_NOTFOUND (no such link, another owner's, or a deleted one), or the
 * store's error. */
static int find_link(struct request *r, char code[CODE_MAX + 1], struct link *l)
{
    char *v = param_str(r, "shorturl");
    bool ok = v && code_param(v, code);
    free(v);
    if (!ok)
        return ERR_NOTFOUND;
    int rc = owner_link_get(r->app->store, code, owner_scope(r), l);
    if (rc == ERR_OK && (l->state == LINK_DELETED || !l->url)) {
        link_release(l);
        rc = ERR_NOTFOUND;
    }
    return rc;
}

static int action_expand(struct request *r, struct out *o)
{
    char code[CODE_MAX + 1] = "";
    struct link l;
    int rc = find_link(r, code, &l);
    if (rc == ERR_NOTFOUND) {
        json_t *doc = json_pack("{s:s,s:s,s:s}", "keyword", code, "message",
                                "Error: short URL not found", "errorCode", "404");
        return answer(r, o, doc, "not found");
    }
    if (rc != ERR_OK)
        return unavailable(r, o);
    struct buf su = BUF_INIT;
    short_url(r->app, &l, &su);
    json_t *doc = json_pack("{s:s,s:s#,s:s,s:s,s:s,s:s}", "keyword", l.code, "shorturl", su.p,
                            su.len, "longurl", l.url, "title", title_of(&l), "message", "success",
                            "statusCode", "200");
    int status = answer(r, o, doc, l.url);
    buf_release(&su);
    link_release(&l);
    return status;
}

#define NEED_FORMAT "Need either XML or JSON format for stats"

static int action_url_stats(struct request *r, struct out *o)
{
    char code[CODE_MAX + 1] = "";
    struct link l;
    int rc = find_link(r, code, &l);
    if (rc == ERR_NOTFOUND) {
        json_t *doc =
            json_pack("{s:s,s:s}", "statusCode", "404", "message", "Error: short URL not found");
        return answer(r, o, doc, NEED_FORMAT);
    }
    if (rc != ERR_OK)
        return unavailable(r, o);
    json_t *doc = json_pack("{s:s,s:s,s:o}", "statusCode", "200", "message", "success", "link",
                            stats_link(r->app, &l));
    link_release(&l);
    return answer(r, o, doc, NEED_FORMAT);
}

/* The key's totals, as yourls_get_db_stats gives them. */
static json_t *db_stats(struct request *r)
{
    struct totals t;
    struct store *st = r->app->store;
    if (st->ops->stats_totals(st, owner_scope(r), &t) != ERR_OK)
        return NULL;
    return json_pack("{s:I,s:I}", "total_links", (json_int_t)t.links, "total_clicks",
                     (json_int_t)t.clicks);
}

static int action_db_stats(struct request *r, struct out *o)
{
    json_t *totals = db_stats(r);
    if (!totals)
        return unavailable(r, o);
    json_t *doc =
        json_pack("{s:o,s:s,s:s}", "db-stats", totals, "statusCode", "200", "message", "success");
    return answer(r, o, doc, NEED_FORMAT);
}

/* The links a `stats` sorts: the key's newest links that have a URL. */
struct scan {
    struct link *v;
    size_t n;
    bool any;                     /* the page had a row */
    char last_code[CODE_MAX + 1]; /* the page's last row: the next page's cursor */
    int64_t last_created;
};

static int scan_one(const struct link *l, void *arg)
{
    struct scan *s = arg;
    s->any = true;
    memcpy(s->last_code, l->code, sizeof(s->last_code));
    s->last_created = l->created_at;
    if (!l->url || s->n == STATS_SCAN_MAX)
        return 0;
    struct link *c = &s->v[s->n++];
    memset(c, 0, sizeof(*c));
    memcpy(c->code, l->code, sizeof(c->code));
    c->url = xstrdup(l->url);
    c->title = l->title ? xstrdup(l->title) : NULL;
    c->domain = l->domain ? xstrdup(l->domain) : NULL;
    c->created_at = l->created_at;
    c->clicks = l->clicks;
    return 0;
}

static int by_clicks_desc(const void *a, const void *b)
{
    const struct link *x = a, *y = b;
    return x->clicks < y->clicks ? 1 : x->clicks > y->clicks ? -1 : 0;
}

static int by_clicks_asc(const void *a, const void *b) { return by_clicks_desc(b, a); }

/* PHP's intval as `stats` reads limit and start: the leading digits
 * (none: 0), at most 'max'. */
static long count_param(const struct request *r, const char *name, long max)
{
    char *v = param_str(r, name);
    long n = 0;
    for (const char *p = v ? v : ""; *p >= '0' && *p <= '9' && n < max; p++)
        n = n * 10 + (*p - '0');
    free(v);
    return n > max ? max : n;
}

/* Reads the key's newest links (STATS_SCAN_MAX at most) into s, page by
 * page: a heavy read, as a search is (router_heavy_enter). 0, or the status
 * of the answer written into r. */
static int scan_links(struct request *r, const struct out *o, struct scan *s)
{
    if (router_heavy_enter(r)) { /* its Retry-After is written: the body is YOURLS's */
        json_t *doc = json_pack("{s:s,s:s}", "message",
                                "this key already runs its share of "
                                "searches; try again",
                                "errorCode", "429");
        return answer(r, o, doc, "");
    }
    s->v = calloc(STATS_SCAN_MAX, sizeof(*s->v));
    if (!s->v)
        abort();
    char after[CODE_MAX + 1] = "";
    struct link_query q = {.owner = owner_scope(r),
                           .want_live = true,
                           .want_expired = true,
                           .want_exhausted = true,
                           .now = now_ms(),
                           .limit = 1000,
                           .after_code = after};
    struct store *st = r->app->store;
    int rc;
    for (;;) {
        s->any = false;
        rc = st->ops->link_list(st, &q, scan_one, s);
        if (rc != ERR_OK || !s->any || s->n == STATS_SCAN_MAX)
            break;
        memcpy(after, s->last_code, sizeof(after));
        q.after_created = s->last_created;
    }
    router_heavy_leave(r->app, r->key.id);
    return rc == ERR_OK ? 0 : unavailable(r, o);
}

static void scan_release(struct scan *s)
{
    for (size_t i = 0; i < s->n; i++)
        link_release(&s->v[i]);
    free(s->v);
}

static int action_stats(struct request *r, struct out *o)
{
    long limit = count_param(r, "limit", STATS_LIMIT_MAX);
    long start = count_param(r, "start", STATS_SCAN_MAX);
    struct scan s = {0};
    if (limit > 0) { /* YOURLS lists no link without a limit */
        int status = scan_links(r, o, &s);
        if (status) {
            scan_release(&s);
            return status;
        }
    }
    json_t *totals = db_stats(r);
    if (!totals) {
        scan_release(&s);
        return unavailable(r, o);
    }
    char *filter = param_str(r, "filter");
    const char *f = filter ? filter : "top";
    if (s.n < 2) {
        /* nothing to order */
    } else if (strcmp(f, "bottom") == 0) {
        qsort(s.v, s.n, sizeof(*s.v), by_clicks_asc);
    } else if (strcmp(f, "last") == 0) {
        /* the listing's order: newest first */
    } else if (strcmp(f, "rand") == 0 || strcmp(f, "random") == 0) {
        for (size_t i = s.n; i > 1; i--) {
            size_t k = randombytes_uniform((uint32_t)i);
            struct link t = s.v[i - 1];
            s.v[i - 1] = s.v[k];
            s.v[k] = t;
        }
    } else {
        qsort(s.v, s.n, sizeof(*s.v), by_clicks_desc);
    }
    free(filter);
    json_t *doc = json_object();
    if (limit > 0 && (size_t)start < s.n) {
        json_t *links = json_object();
        for (size_t i = (size_t)start, k = 1; i < s.n && (long)k <= limit; i++, k++) {
            char name[24];
            snprintf(name, sizeof(name), "link_%zu", k);
            json_object_set_new(links, name, stats_link(r->app, &s.v[i]));
        }
        json_object_set_new(doc, "links", links);
    }
    scan_release(&s);
    json_object_set_new(doc, "stats", totals);
    json_object_set_new(doc, "statusCode", json_string("200"));
    json_object_set_new(doc, "message", json_string("success"));
    return answer(r, o, doc, NEED_FORMAT);
}

static int action_version(struct request *r, struct out *o)
{
    json_t *doc = json_pack("{s:s}", "version", YOURLS_VERSION);
    char *db = param_str(r, "db");
    if (db && strcmp(db, "1") == 0)
        json_object_set_new(doc, "db_version", json_string(YOURLS_DB_VERSION));
    free(db);
    return answer(r, o, doc, YOURLS_VERSION);
}

int handle_yourls(struct request *r)
{
    /* One route of many actions: the router checked links:read; an action
     * that needs more says so here (router_need_scope). */
    static const struct {
        const char *name;
        int (*fn)(struct request *r, struct out *o);
        unsigned scope; /* KEY_SCOPE_* beyond links:read, or 0 */
    } actions[] = {
        {"shorturl", action_shorturl, KEY_SCOPE_LINKS_WRITE},
        {"expand", action_expand, 0},
        {"url-stats", action_url_stats, KEY_SCOPE_STATS_READ},
        {"stats", action_stats, KEY_SCOPE_STATS_READ},
        {"db-stats", action_db_stats, KEY_SCOPE_STATS_READ},
        {"version", action_version, 0},
    };
    struct out o;
    out_read(r, &o);
    char *action = param_str(r, "action");
    int status = 0;
    bool known = false;
    for (size_t i = 0; action && !known && i < sizeof(actions) / sizeof(actions[0]); i++) {
        known = strcmp(action, actions[i].name) == 0;
        if (known)
            status = router_need_scope(r, actions[i].scope);
        if (known && !status)
            status = actions[i].fn(r, &o);
    }
    if (!known) {
        static const char msg[] = "Unknown or missing \"action\" parameter";
        status = answer(r, &o, json_pack("{s:s,s:s}", "errorCode", "400", "message", msg), msg);
    }
    free(action);
    out_release(&o);
    return status;
}
