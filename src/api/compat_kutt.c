/* compat_kutt.c - Kutt's API v2 (/api/v2/...), so that its clients (ShareX,
 * the browser extensions, the npm `kutt` client and the other libraries)
 * work against shortd with nothing changed but the base URL and the key.
 *
 * The shapes are those of Kutt 3.2.3 (server/handlers/links.handler.js,
 * validators.handler.js, helpers.handler.js, users.handler.js,
 * server/utils/utils.js): the link object of utils.sanitize.link, the list's
 * {total, limit, skip, data}, the stats' lastDay/lastWeek/lastMonth/lastYear
 * with the link's fields, and every error as {"error": MESSAGE} with Kutt's
 * status (its validators answer 400; what its handlers throw without a
 * status, "Link was not found." and the like, 500, as Kutt does). The key
 * is the X-API-KEY header (kutt_dialect, for the router).
 *
 * A link's `id`: Kutt gives each link a UUID; shortd has its code. The id is
 * the code packed into 128 bits (its length, then 6 bits a character: codes
 * of up to 20 characters) and passed through a keyed 4-round Feistel
 * permutation, written as a UUID: stable, opaque, and turned back into the
 * code without a store read. A longer alias (21 to 30 characters) is
 * marked instead and carries a keyed hash of its code; such an id is found
 * by reading the key's links. The key is the install's (links_variant_key
 * of a fixed context), so ids differ between installs.
 *
 * Links made here are ordinary links: links_parse and links_create, the
 * group-commit writer (apijob.h) and link_changed after the commit. Where
 * shortd's rules refuse what Kutt would take (an alias's length, a code's
 * rename), the client gets Kutt's error shape for it. */
#include <ctype.h>
#include <llhttp.h>
#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/apijob.h"
#include "api/handlers.h"
#include "api/idem.h"
#include "api/owner.h"
#include "api/router.h"
#include "app/app.h"
#include "base/err.h"
#include "base/jsonout.h"
#include "base/timeutil.h"
#include "clicks/analytics.h"
#include "http/server.h"
#include "links/codes.h"
#include "links/links.h"
#include "links/pwhash.h"
#include "redirect/tiers.h"
#include "base/banned.h"

#define KUTT_VERSION "3.2.3" /* the Kutt whose API this speaks */
#define LIST_DEFAULT 10      /* helpers.parseQuery's */
#define LIST_MAX 50
#define LIST_SCAN_MAX 10000 /* links one list counts (its `total` stops there) */
#define TEXT_MAX 2040       /* characters of a target or a description */
#define ID_LEN 36           /* a UUID's text */
#define PACK_MAX 20         /* the longest code an id holds itself */
#define PACK_HASHED 31      /* the length field of an id that holds a hash */
#define MS_MINUTE 60000.0
#define MS_MAX (100.0 * 365 * 86400 * 1000) /* shortd's longest ttl */
#define PATH_SHOWN 128                      /* bytes of a path an error repeats */

/* ---- answers ---- */

/* A JSON answer with Express's content type (res.json adds the charset). */
static int kjson(struct request *r, int status, json_t *doc)
{
    status = http_json(r, status, doc);
    r->content_type = "application/json; charset=utf-8";
    return status;
}

/* Kutt's error: {"error": MESSAGE} with the status. */
static int kerr(struct request *r, int status, const char *message)
{
    return kjson(r, status, json_pack("{s:s}", "error", message));
}

/* The router's refusals: Kutt answers a missing or wrong key "Unauthorized."
 * (its API key strategy passes, and the JWT one refuses). A path under
 * /api/v2/ that no route serves, or not with this method, is 404 either
 * way: Kutt's Express app has no 405; what its routers lack falls through
 * to Express's 404 "Cannot PUT /path" (a GET to its HTML "not found" page).
 * shortd answers Express's words in Kutt's JSON error shape, so that API
 * clients read them as any other Kutt error (the router has set Allow for
 * a path served with other methods). */
static int kutt_error(struct request *r, int status, const char *code, const char *message)
{
    if (!strcmp(code, "not_found") || !strcmp(code, "method_not_allowed")) {
        char text[32 + PATH_SHOWN];
        int len = (int)(r->path.n < PATH_SHOWN ? r->path.n : PATH_SHOWN);
        snprintf(text, sizeof(text), "Cannot %s %.*s",
                 llhttp_method_name((llhttp_method_t)r->method), len, r->path.p);
        json_t *o = json_pack("{s:s}", "error", text);
        return kjson(r, 404, o ? o : json_pack("{s:s}", "error", "Not found."));
    }
    if (!strcmp(code, "unauthorized") || !strcmp(code, "invalid_key"))
        message = "Unauthorized.";
    return kerr(r, status, message);
}

static bool kutt_token(const struct request *r, char *buf, size_t cap, struct slice *token)
{
    (void)buf;
    (void)cap;
    struct slice k = http_header(r, "x-api-key");
    if (!k.p || !k.n)
        return false;
    *token = k;
    return true;
}

const struct api_dialect kutt_dialect = {
    .name = "kutt",
    .token = kutt_token,
    .error = kutt_error,
    .prefix = "/api/v2/",
};

static int unavailable(struct request *r)
{
    http_add_header(r, "Retry-After", "1", 1);
    return kerr(r, 503, "The store is unavailable; try again.");
}

/* The host short URLs have by default: Kutt's DEFAULT_DOMAIN. */
static void default_host(const struct app *app, char *out, size_t cap)
{
    const char *s = strstr(app->cfg.base_url, "://");
    s = s ? s + 3 : app->cfg.base_url;
    size_t n = strcspn(s, "/");
    snprintf(out, cap, "%.*s", (int)n, s);
}

/* ---- ids ---- */

static const char code_chars[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";

static void id_key(const struct app *app, uint8_t key[32])
{
    links_variant_key(app->links, "kutt-id", key);
}

static void put_bits(uint8_t b[16], unsigned *pos, unsigned v, unsigned n)
{
    for (unsigned i = 0; i < n; i++, (*pos)++)
        if (v & (1u << (n - 1 - i)))
            b[*pos / 8] |= (uint8_t)(0x80 >> (*pos % 8));
}

static unsigned get_bits(const uint8_t b[16], unsigned *pos, unsigned n)
{
    unsigned v = 0;
    for (unsigned i = 0; i < n; i++, (*pos)++)
        v = v << 1 | ((b[*pos / 8] >> (7 - *pos % 8)) & 1u);
    return v;
}

/* One Feistel round's function: 8 bytes of BLAKE2b keyed over (round, half). */
static void round_fn(const uint8_t key[32], int round, const uint8_t half[8], uint8_t out[8])
{
    uint8_t in[9];
    in[0] = (uint8_t)round;
    memcpy(in + 1, half, 8);
    crypto_generichash(out, 8, in, sizeof(in), key, 32);
}

#define ROUNDS 4

static void permute(const uint8_t key[32], uint8_t b[16], bool inverse)
{
    uint8_t *l = b, *r = b + 8, f[8], t[8];
    for (int k = 0; k < ROUNDS; k++) {
        int round = inverse ? ROUNDS - 1 - k : k;
        if (!inverse) { /* (L, R) -> (R, L ^ F(R)) */
            round_fn(key, round, r, f);
            for (int i = 0; i < 8; i++)
                t[i] = l[i] ^ f[i];
            memcpy(l, r, 8);
            memcpy(r, t, 8);
        } else { /* (L, R) -> (R ^ F(L), L) */
            round_fn(key, round, l, f);
            for (int i = 0; i < 8; i++)
                t[i] = r[i] ^ f[i];
            memcpy(r, l, 8);
            memcpy(l, t, 8);
        }
    }
}

/* The 128 bits of a long code's id before the permutation. */
static void hashed_block(const uint8_t key[32], const char *code, uint8_t b[16])
{
    uint8_t h[16];
    crypto_generichash(h, sizeof(h), (const uint8_t *)code, strlen(code), key, 32);
    memset(b, 0, 16);
    unsigned pos = 0;
    put_bits(b, &pos, PACK_HASHED, 5);
    unsigned hp = 0;
    while (pos < 128)
        put_bits(b, &pos, get_bits(h, &hp, 1), 1);
}

/* The id of a code, as a UUID's 36 characters. */
static void kutt_id(const struct app *app, const char *code, char out[ID_LEN + 1])
{
    uint8_t key[32], b[16] = {0};
    id_key(app, key);
    size_t n = strlen(code);
    if (n <= PACK_MAX) {
        unsigned pos = 0;
        put_bits(b, &pos, (unsigned)n, 5);
        for (size_t i = 0; i < n; i++)
            put_bits(b, &pos, (unsigned)(strchr(code_chars, code[i]) - code_chars), 6);
    } else {
        hashed_block(key, code, b);
    }
    permute(key, b, false);
    static const char hex[] = "0123456789abcdef";
    char *o = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *o++ = '-';
        *o++ = hex[b[i] >> 4];
        *o++ = hex[b[i] & 15];
    }
    *o = '\0';
    sodium_memzero(key, sizeof(key));
}

/* What an id names: a code (ID_CODE), a long code known by its hash
 * (ID_HASHED: the key's links must be read to find it), or nothing. */
enum id_kind { ID_NONE, ID_CODE, ID_HASHED };

static enum id_kind id_parse(const struct app *app, struct slice s, char code[CODE_MAX + 1],
                             uint8_t block[16])
{
    if (s.n != ID_LEN)
        return ID_NONE;
    uint8_t b[16];
    size_t k = 0;
    for (size_t i = 0; i < ID_LEN; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s.p[i] != '-')
                return ID_NONE;
            continue;
        }
        int c = tolower((unsigned char)s.p[i]);
        int v = isdigit(c) ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return ID_NONE;
        if (k % 2 == 0)
            b[k / 2] = (uint8_t)(v << 4);
        else
            b[k / 2] |= (uint8_t)v;
        k++;
    }
    uint8_t key[32];
    id_key(app, key);
    permute(key, b, true);
    sodium_memzero(key, sizeof(key));
    unsigned pos = 0, n = get_bits(b, &pos, 5);
    if (n == PACK_HASHED) {
        memcpy(block, b, 16);
        return ID_HASHED;
    }
    if (n < 1 || n > PACK_MAX)
        return ID_NONE;
    for (unsigned i = 0; i < n; i++)
        code[i] = code_chars[get_bits(b, &pos, 6)];
    code[n] = '\0';
    while (pos < 128)
        if (get_bits(b, &pos, 1))
            return ID_NONE; /* not an id of ours */
    return code_is_plausible(code, n) ? ID_CODE : ID_NONE;
}

/* The search for a long code's id among the key's links. */
struct id_scan {
    uint8_t key[32], want[16];
    char found[CODE_MAX + 1];
    char last_code[CODE_MAX + 1];
    int64_t last_created;
    bool any;
};

static int id_scan_one(const struct link *l, void *arg)
{
    struct id_scan *s = arg;
    s->any = true;
    memcpy(s->last_code, l->code, sizeof(s->last_code));
    s->last_created = l->created_at;
    if (strlen(l->code) <= PACK_MAX)
        return 0;
    uint8_t b[16];
    hashed_block(s->key, l->code, b);
    if (sodium_memcmp(b, s->want, 16) != 0)
        return 0;
    memcpy(s->found, l->code, sizeof(s->found));
    return 1;
}

/* The code of the path's id: 0 with 'code' set; ERR_NOTFOUND when no link
 * of the key's has it; ERR_INVALID when it is no id; or the store's error. */
static int id_code(struct request *r, char code[CODE_MAX + 1])
{
    uint8_t block[16];
    enum id_kind kind = id_parse(r->app, r->params[0], code, block);
    if (kind == ID_NONE)
        return r->params[0].n == ID_LEN ? ERR_NOTFOUND : ERR_INVALID;
    if (kind == ID_CODE)
        return ERR_OK;
    struct id_scan *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    id_key(r->app, s->key);
    memcpy(s->want, block, 16);
    char after[CODE_MAX + 1] = "";
    struct link_query q = {.owner = owner_scope(r),
                           .states = 1u << LINK_DISABLED,
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
        rc = st->ops->link_list(st, &q, id_scan_one, s);
        if (rc != ERR_OK || s->found[0] || !s->any)
            break;
        memcpy(after, s->last_code, sizeof(after));
        q.after_created = s->last_created;
    }
    if (rc == ERR_OK)
        rc = s->found[0] ? ERR_OK : ERR_NOTFOUND;
    if (rc == ERR_OK)
        memcpy(code, s->found, CODE_MAX + 1);
    sodium_memzero(s, sizeof(*s));
    free(s);
    return rc;
}

/* ---- the link object ---- */

static json_t *time_json(int64_t ms)
{
    char t[RFC3339_MAX];
    rfc3339_format(ms, t);
    return json_string(t);
}

/* utils.sanitize.link: in Kutt's order. `banned` is shortd's disabled (an
 * admin's stop), `visit_count` its human clicks, `description` its note. */
static json_t *kutt_link(const struct app *app, const struct link *l)
{
    char id[ID_LEN + 1];
    kutt_id(app, l->code, id);
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "address", json_string(l->code));
    json_object_set_new(o, "banned", json_boolean(l->state == LINK_DISABLED));
    json_object_set_new(o, "created_at", time_json(l->created_at));
    json_object_set_new(o, "updated_at",
                        time_json(l->changed_at > l->created_at ? l->changed_at : l->created_at));
    json_object_set_new(o, "password", json_boolean(l->password != NULL));
    json_object_set_new(o, "description", l->note ? json_string(l->note) : json_null());
    json_object_set_new(o, "expire_in", l->expires_at ? time_json(l->expires_at) : json_null());
    json_object_set_new(o, "target", l->url ? json_string(l->url) : json_null());
    json_object_set_new(o, "visit_count", json_integer(l->clicks));
    json_object_set_new(o, "domain", l->domain ? json_string(l->domain) : json_null());
    struct buf su = BUF_INIT;
    link_short_url(&su, app->cfg.base_url, l->code, l->domain);
    json_object_set_new(o, "link", json_stringn(su.p, su.len));
    buf_release(&su);
    return o;
}

/* ---- checking what Kutt's validators check ---- */

/* Characters (code points) of UTF-8 text: what a length rule counts. */
static size_t chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* express-validator's optional({checkFalsy}): absent, null, false, 0 or "". */
static bool falsy(const json_t *v)
{
    return !v || json_is_null(v) || json_is_false(v) ||
           (json_is_integer(v) && !json_integer_value(v)) ||
           (json_is_real(v) && json_real_value(v) == 0) ||
           (json_is_string(v) && !json_string_length(v));
}

/* A copy of a string value without the blanks around it (trim()). */
static char *trimmed(const json_t *v)
{
    const char *s = json_string_value(v);
    while (*s && isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    char *t = malloc(n + 1);
    if (!t)
        abort();
    memcpy(t, s, n);
    t[n] = '\0';
    return t;
}

/* The `ms` package's reading of a duration: a number and an optional unit
 * ("1m", "8h", "42 days", "1.5 hours"), into *ms; false when it is none. */
static bool ms_parse(const char *s, double *ms)
{
    static const struct {
        const char *name;
        double ms;
    } units[] = {
        {"years", 31557600000.0},
        {"year", 31557600000.0},
        {"yrs", 31557600000.0},
        {"yr", 31557600000.0},
        {"y", 31557600000.0},
        {"weeks", 604800000.0},
        {"week", 604800000.0},
        {"w", 604800000.0},
        {"days", 86400000.0},
        {"day", 86400000.0},
        {"d", 86400000.0},
        {"hours", 3600000.0},
        {"hour", 3600000.0},
        {"hrs", 3600000.0},
        {"hr", 3600000.0},
        {"h", 3600000.0},
        {"minutes", 60000.0},
        {"minute", 60000.0},
        {"mins", 60000.0},
        {"min", 60000.0},
        {"m", 60000.0},
        {"seconds", 1000.0},
        {"second", 1000.0},
        {"secs", 1000.0},
        {"sec", 1000.0},
        {"s", 1000.0},
        {"milliseconds", 1.0},
        {"millisecond", 1.0},
        {"msecs", 1.0},
        {"msec", 1.0},
        {"ms", 1.0},
    };
    if (strlen(s) > 100)
        return false;
    const char *p = s;
    bool neg = *p == '-';
    if (neg)
        p++;
    const char *num = p;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return false; /* the number ends with a digit */
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (p == num)
        return false;
    double v = strtod(num, NULL);
    while (*p == ' ')
        p++;
    double unit = 1.0;
    if (*p) {
        bool found = false;
        for (size_t i = 0; !found && i < sizeof(units) / sizeof(units[0]); i++) {
            if (!strcasecmp(p, units[i].name)) {
                unit = units[i].ms;
                found = true;
            }
        }
        if (!found)
            return false;
    }
    *ms = neg ? -v * unit : v * unit;
    return true;
}

/* expire_in as the validator takes it: 0 with *ttl (seconds), or 400. */
static int expire_check(struct request *r, const json_t *v, int64_t *ttl)
{
    if (!json_is_string(v))
        return kerr(r, 400, "Expire format is invalid. Valid examples: 1m, 8h, 42 days.");
    char *t = trimmed(v);
    double ms = 0;
    bool ok = ms_parse(t, &ms);
    free(t);
    if (!ok || ms == 0) /* ms() of "0" is 0: Kutt's check finds it false */
        return kerr(r, 400, "Expire format is invalid. Valid examples: 1m, 8h, 42 days.");
    if (ms < MS_MINUTE)
        return kerr(r, 400, "Expire time should be more than 1 minute.");
    if (ms > MS_MAX) /* shortd's rule: at most 100 years */
        return kerr(r, 400, "Expire time should be at most 100 years.");
    *ttl = (int64_t)ceil(ms / 1000.0);
    return 0;
}

/* A label of a host name as utils.urlRegex takes one: letters, digits,
 * '-' and '_' (any non-ASCII byte counts as a letter), neither first nor
 * last a '-' or '_'. */
static bool label_ok(const char *p, size_t n)
{
    if (!n || n > 63 || p[0] == '-' || p[0] == '_' || p[n - 1] == '-' || p[n - 1] == '_')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)p[i]) && p[i] != '-' && p[i] != '_' && !(p[i] & 0x80))
            return false;
    return true;
}

/* The host of an http(s) target as utils.urlRegex takes it: a public IPv4
 * address (not 10/8, 127/8, 169.254/16, 172.16/12 or 192.168/16; first
 * octet 1..223, last 1..254), or a name of two labels or more whose last
 * is two letters or more (or an xn-- one, which the regex misses and shortd
 * takes). No IPv6 literal, no single-label name ("notaurl", "intranet"):
 * shortd alone would take them, Kutt refuses them, and its clients count on
 * that answer. */
static bool kutt_host_ok(const char *h, size_t n)
{
    if (n && h[n - 1] == '.')
        n--;
    unsigned oct[4], parts = 0;
    const char *p = h, *end = h + n;
    while (parts < 4 && p < end && isdigit((unsigned char)*p)) {
        unsigned v = 0, digits = 0;
        for (; p < end && isdigit((unsigned char)*p) && digits < 4; p++, digits++)
            v = v * 10 + (unsigned)(*p - '0');
        oct[parts++] = v;
        if (p < end && *p == '.' && parts < 4)
            p++;
        else
            break;
    }
    if (parts == 4 && p == end) {
        if (oct[0] < 1 || oct[0] > 223 || oct[3] < 1 || oct[3] > 254 || oct[1] > 255 ||
            oct[2] > 255)
            return false;
        return !(oct[0] == 10 || oct[0] == 127 || (oct[0] == 169 && oct[1] == 254) ||
                 (oct[0] == 172 && oct[1] >= 16 && oct[1] <= 31) ||
                 (oct[0] == 192 && oct[1] == 168));
    }
    const char *dot = NULL;
    for (p = h; p < end; p++)
        if (*p == '.')
            dot = p;
    if (!dot)
        return false;
    const char *tld = dot + 1;
    size_t tn = (size_t)(end - tld);
    bool letters = tn >= 2;
    for (size_t i = 0; i < tn && letters; i++)
        letters = isalpha((unsigned char)tld[i]) || (tld[i] & 0x80);
    if (!letters && !(tn > 4 && !strncasecmp(tld, "xn--", 4) && label_ok(tld, tn)))
        return false;
    for (p = h; p < end;) {
        const char *q = memchr(p, '.', (size_t)(end - p));
        size_t ln = q ? (size_t)(q - p) : (size_t)(end - p);
        if (!label_ok(p, ln))
            return false;
        p += ln + (q ? 1 : 0);
    }
    return true;
}

/* Whether an http(s) URL's host passes kutt_host_ok; other schemes are
 * left to shortd's own check, as Kutt's regex leaves them. */
static bool kutt_url_ok(const char *u)
{
    size_t skip = !strncasecmp(u, "http://", 7) ? 7 : !strncasecmp(u, "https://", 8) ? 8 : 0;
    if (!skip)
        return true;
    const char *h = u + skip;
    size_t n = strcspn(h, "/?#");
    const char *at = NULL;
    for (size_t i = 0; i < n; i++)
        if (h[i] == '@')
            at = h + i;
    if (at) {
        n -= (size_t)(at + 1 - h);
        h = at + 1;
    }
    if (n && h[0] == '[')
        return false;
    const char *colon = memchr(h, ':', n);
    if (colon) {
        size_t pn = n - (size_t)(colon + 1 - h);
        if (pn < 2 || pn > 5 || strspn(colon + 1, "0123456789") < pn)
            return false;
        n = (size_t)(colon - h);
    }
    return kutt_host_ok(h, n);
}

/* A target as the validator takes it: a string (else express-validator's
 * "Invalid value"), trimmed, 1..2040 characters, with http:// added when it
 * names no scheme, of a host utils.urlRegex takes. 0 with *url set, or 400. */
static int target_check(struct request *r, const json_t *v, char **url)
{
    if (!json_is_string(v))
        return kerr(r, 400, "Invalid value");
    char *t = trimmed(v);
    size_t n = chars(t);
    if (n < 1 || n > TEXT_MAX) {
        free(t);
        return kerr(r, 400, "Maximum URL length is 2040.");
    }
    const char *p = t;
    while (isalnum((unsigned char)*p) || *p == '_')
        p++;
    bool scheme = (p > t && *p == ':') || !strncmp(t, "//", 2);
    if (!scheme) {
        size_t len = strlen(t);
        char *u = malloc(len + 8);
        if (!u)
            abort();
        memcpy(u, "http://", 7);
        memcpy(u + 7, t, len + 1);
        free(t);
        t = u;
    }
    if (!kutt_url_ok(t)) {
        free(t);
        return kerr(r, 400, "URL is not valid.");
    }
    *url = t;
    return 0;
}

/* A password, as the validator takes it (3 to 64 characters). */
static int password_check(struct request *r, const json_t *v)
{
    if (!json_is_string(v) || chars(json_string_value(v)) < 3 || chars(json_string_value(v)) > 64)
        return kerr(r, 400, "Password length must be between 3 and 64.");
    return 0;
}

/* A custom address: trimmed, 1..64 characters of [A-Za-z0-9_-]. 0 with
 * *alias set, or 400. */
static int address_check(struct request *r, const json_t *v, char **alias)
{
    if (!json_is_string(v))
        return kerr(r, 400, "Custom URL is not valid.");
    char *t = trimmed(v);
    size_t n = strlen(t);
    if (n < 1 || n > 64) {
        free(t);
        return kerr(r, 400, "Custom URL length must be between 1 and 64.");
    }
    for (size_t i = 0; i < n; i++) {
        if (!strchr(code_chars, t[i]) || !t[i]) {
            free(t);
            return kerr(r, 400, "Custom URL is not valid.");
        }
    }
    *alias = t;
    return 0;
}

/* The body of a POST or PATCH: a JSON object (none: an empty one). 0 with
 * r->json set, or 400. */
static int body_json(struct request *r)
{
    if (!r->body.n) {
        r->json = json_object();
        return 0;
    }
    r->json = json_loadb(r->body.p, r->body.n, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(r->json))
        return kerr(r, 400, "The body must be a JSON object.");
    return 0;
}

/* What shortd's own rules said of a field (links_parse), in Kutt's words. */
static int refused(struct request *r, const char *field, const char *why)
{
    char msg[320];
    if (!field) {
        snprintf(msg, sizeof(msg), "Request is not valid: %s.", why);
    } else if (!strcmp(field, "url")) {
        if (strstr(why, "points back at this shortener")) {
            char host[256];
            default_host(r->app, host, sizeof(host));
            snprintf(msg, sizeof(msg), "%s URLs are not allowed.", host);
        } else {
            snprintf(msg, sizeof(msg), "URL is not valid.");
        }
    } else if (!strcmp(field, "alias")) {
        if (strstr(why, "reserved"))
            snprintf(msg, sizeof(msg), "You can't use this custom URL.");
        else
            snprintf(msg, sizeof(msg), "Custom URL %s.", why);
    } else if (!strcmp(field, "note")) {
        snprintf(msg, sizeof(msg), "Description %s.", why);
    } else if (!strcmp(field, "password")) {
        snprintf(msg, sizeof(msg), "Password %s.", why);
    } else if (!strcmp(field, "domain")) {
        snprintf(msg, sizeof(msg), "You can't use this domain.");
    } else if (!strcmp(field, "ttl") || !strcmp(field, "expires_at")) {
        snprintf(msg, sizeof(msg), "Expire time %s.", why);
    } else {
        snprintf(msg, sizeof(msg), "%s %s.", field, why);
    }
    return kerr(r, 400, msg);
}

/* ---- passwords: hashed on libuv's thread pool before the writer job ---- */

struct hash_wait {
    struct task task;
    char *pw;
    size_t n;
    struct request *r;
    struct api_job *job;
    char **slot;
    int (*run)(struct wjob *, struct store *);
};

static void hash_failed(struct hash_wait *w)
{
    struct request *r = w->r;
    w->job->release(w->job);
    free(w);
    http_resume(r, unavailable(r));
}

static void hashed(int rc, const char *hash, void *arg)
{
    struct hash_wait *w = arg;
    if (rc != ERR_OK) {
        hash_failed(w);
        return;
    }
    *w->slot = xstrdup(hash);
    api_job_submit(w->r, w->job, w->run);
    free(w);
}

static void hash_start(struct task *t)
{
    struct hash_wait *w = (struct hash_wait *)t;
    int rc = pwhash_make_async(worker_loop(request_worker(w->r)), w->pw, w->n, hashed, w);
    sodium_memzero(w->pw, w->n);
    free(w->pw);
    w->pw = NULL;
    if (rc != ERR_OK)
        hash_failed(w);
}

/* Submits 'job' once 'pw' (NULL: none) is hashed into *slot. */
static int submit_hashed(struct request *r, const json_t *pw, struct api_job *job, char **slot,
                         int (*run)(struct wjob *, struct store *))
{
    if (!json_is_string(pw))
        return api_job_submit(r, job, run);
    struct hash_wait *w = calloc(1, sizeof(*w));
    if (!w)
        abort();
    *w = (struct hash_wait){.r = r, .job = job, .slot = slot, .run = run};
    w->n = json_string_length(pw);
    w->pw = malloc(w->n ? w->n : 1);
    if (!w->pw)
        abort();
    memcpy(w->pw, json_string_value(pw), w->n);
    w->task.fn = hash_start;
    worker_post(request_worker(r), &w->task);
    return HTTP_ASYNC;
}

/* ---- POST /api/v2/links ---- */

struct create_job {
    struct api_job base;
    struct link_input in;
    int64_t owner, now;
    struct idem idem;
    struct link link;
    bool reused, created;
    bool mismatch;     /* the Idempotency-Key was used with another request */
    const char *error; /* a refusal's message (static) ... */
    int error_status;  /* ... and status */
};

static void create_release(struct api_job *j)
{
    struct create_job *c = (struct create_job *)j;
    link_input_release(&c->in);
    link_release(&c->link);
    idem_release(&c->idem);
    free(c);
}

/* The answer of a create that ran, and its status (any thread). */
static json_t *create_answer(const struct create_job *c, const struct app *app, int *status)
{
    if (c->error) {
        *status = c->error_status;
        return json_pack("{s:s}", "error", c->error);
    }
    *status = c->reused ? 200 : 201;
    return kutt_link(app, &c->link);
}

static int create_do(struct create_job *c, struct store *st)
{
    struct app *app = c->base.r->app;
    if (owner_key_domain(&c->base.r->key, &c->in.domain) != ERR_OK) {
        c->error = "You can't use this domain.";
        c->error_status = 400;
        return ERR_OK;
    }
    if (c->in.domain && !c->base.r->key.domain[0]) { /* a limited key's domain is granted */
        int64_t owner = -1;
        int rc = st->ops->domain_get(st, c->in.domain, &owner);
        if (rc != ERR_OK && rc != ERR_NOTFOUND)
            return rc;
        if (rc == ERR_NOTFOUND || owner != c->owner) {
            c->error = "You can't use this domain.";
            c->error_status = 400;
            return ERR_OK;
        }
    }
    int rc = links_create(app->links, st, &c->in, c->owner, c->now, &c->link, &c->reused);
    if (rc == ERR_EXISTS) {
        /* Kutt throws this without a status: its error handler's 500 */
        c->error = "Custom URL is already in use.";
        c->error_status = 500;
        return ERR_OK;
    }
    if (rc == ERR_FORBIDDEN) {
        c->error = "URL is containing malware/scam.";
        c->error_status = 400;
        return ERR_OK;
    }
    c->created = rc == ERR_OK && !c->reused;
    return rc;
}

/* With an Idempotency-Key, the answer is made here and remembered with the
 * key (idem.h): a replay, or the first answer, is then j->raw. */
static int create_run(struct wjob *wj, struct store *st)
{
    struct create_job *c = (struct create_job *)wj;
    struct api_job *j = &c->base;
    int rc;
    if (!idem_run_create(j, st, c->owner, &c->idem, c->now, &c->mismatch, &rc))
        return rc;
    rc = create_do(c, st);
    if (rc != ERR_OK || !c->idem.key)
        return rc;
    json_t *doc = create_answer(c, j->r->app, &j->status);
    struct buf b = BUF_INIT;
    jsonout(&b, doc);
    json_decref(doc);
    rc = idem_finish(st, c->owner, &c->idem, c->now, j->status, b.p);
    j->raw = buf_detach(&b, NULL);
    return rc;
}

static void create_after_commit(struct api_job *j)
{
    struct create_job *c = (struct create_job *)j;
    if (c->created)
        link_changed(j->r->app, &c->link, c->in.alias ? LINK_NEW_ALIAS : LINK_NEW, c->now);
}

static int create_respond(struct api_job *j)
{
    struct create_job *c = (struct create_job *)j;
    if (j->job.rc != ERR_OK)
        return unavailable(j->r);
    if (c->mismatch)
        return kerr(j->r, 422, "This Idempotency-Key was used with a different request.");
    if (j->replayed)
        http_add_header(j->r, "Idempotent-Replayed", "true", 4);
    if (j->raw) { /* remembered with its Idempotency-Key */
        http_body(j->r, j->status, "application/json; charset=utf-8", j->raw, strlen(j->raw));
        return j->status;
    }
    int status;
    json_t *doc = create_answer(c, j->r->app, &status);
    return kjson(j->r, status, doc);
}

int handle_kutt_create(struct request *r)
{
    int status = body_json(r);
    if (status)
        return status;
    json_t *b = r->json;
    json_t *target = json_object_get(b, "target"), *password = json_object_get(b, "password");
    json_t *customurl = json_object_get(b, "customurl"), *reuse = json_object_get(b, "reuse");
    json_t *description = json_object_get(b, "description");
    json_t *expire = json_object_get(b, "expire_in"), *domain = json_object_get(b, "domain");
    /* The validators' order: the first refusal is the answer. */
    if (falsy(target))
        return kerr(r, 400, "Target is missing.");
    char *url = NULL, *alias = NULL;
    int64_t ttl = 0;
    bool reuse_v = false;
    json_t *body = json_object();
    status = target_check(r, target, &url);
    if (status)
        goto out;
    json_object_set_new(body, "url", json_string(url));
    if (!falsy(password)) {
        status = password_check(r, password);
        if (status)
            goto out;
        json_object_set(body, "password", password);
    }
    if (!falsy(customurl)) {
        status = address_check(r, customurl, &alias);
        if (status)
            goto out;
        json_object_set_new(body, "alias", json_string(alias));
    }
    if (reuse && !json_is_null(reuse)) {
        const char *s = json_string_value(reuse);
        if (json_is_boolean(reuse))
            reuse_v = json_is_true(reuse);
        else if (s && (!strcmp(s, "true") || !strcmp(s, "1")))
            reuse_v = true;
        else if (!s || (strcmp(s, "false") && strcmp(s, "0"))) {
            status = kerr(r, 400, "Reuse must be boolean.");
            goto out;
        }
        json_object_set_new(body, "reuse", json_boolean(reuse_v));
    }
    if (!falsy(description)) {
        char *d = json_is_string(description) ? trimmed(description) : NULL;
        if (!d || !*d || chars(d) > TEXT_MAX) {
            free(d);
            status = kerr(r, 400, "Description length must be between 1 and 2040.");
            goto out;
        }
        json_object_set_new(body, "note", json_string(d));
        free(d);
    }
    if (!falsy(expire)) {
        status = expire_check(r, expire, &ttl);
        if (status)
            goto out;
        json_object_set_new(body, "ttl", json_integer(ttl));
    }
    if (!falsy(domain)) {
        if (!json_is_string(domain)) {
            status = kerr(r, 400, "Domain should be string.");
            goto out;
        }
        char host[256], *d = xstrdup(json_string_value(domain));
        for (char *p = d; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        default_host(r->app, host, sizeof(host));
        if (strcmp(d, host) != 0) /* Kutt's default domain is no custom one */
            json_object_set_new(body, "domain", json_string(d));
        free(d);
    }

    struct create_job *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->now = now_ms();
    const char *field = NULL;
    char why[256];
    if (links_parse(r->app->links, body, c->now, &c->in, &field, why, sizeof(why)) != ERR_OK) {
        link_input_release(&c->in);
        free(c);
        status = refused(r, field, why);
        goto out;
    }
    if (idem_read(r, c->now, &c->idem) != ERR_OK) {
        link_input_release(&c->in);
        free(c);
        status = kerr(r, 400, "Idempotency-Key must be 1 to 255 visible ASCII characters.");
        goto out;
    }
    c->owner = r->key.owner;
    /* Without an Idempotency-Key a create writes one row: no savepoint. */
    c->base.job.single_write = !c->idem.key;
    c->base.after_commit = create_after_commit;
    c->base.respond = create_respond;
    c->base.release = create_release;
    status =
        submit_hashed(r, json_object_get(body, "password"), &c->base, &c->in.password, create_run);
out:
    json_decref(body);
    free(url);
    free(alias);
    return status;
}

/* ---- GET /api/v2/links ---- */

/* JavaScript's parseInt as parseQuery uses it: blanks, a sign, digits;
 * 'fallback' when there are none or it is 0 (parseInt(x) || fallback). */
static int64_t js_int(const struct request *r, const char *name, int64_t fallback)
{
    struct slice v;
    if (!http_query_param(r, name, &v))
        return fallback;
    size_t i = 0;
    while (i < v.n && (v.p[i] == ' ' || v.p[i] == '+')) /* '+' is a blank, encoded */
        i++;
    bool neg = i < v.n && v.p[i] == '-';
    if (neg || (i < v.n && v.p[i] == '+'))
        i++;
    int64_t n = 0;
    bool any = false;
    for (; i < v.n && isdigit((unsigned char)v.p[i]) && n < 1000000000000LL; i++) {
        n = n * 10 + (v.p[i] - '0');
        any = true;
    }
    n = neg ? -n : n;
    return any && n ? n : fallback;
}

struct list_ctx {
    const struct app *app;
    json_t *data;
    int64_t skip, limit, seen;
    char last_code[CODE_MAX + 1];
    int64_t last_created;
    bool any;
};

static int list_one(const struct link *l, void *arg)
{
    struct list_ctx *x = arg;
    x->any = true;
    memcpy(x->last_code, l->code, sizeof(x->last_code));
    x->last_created = l->created_at;
    if (x->seen >= x->skip && x->seen < x->skip + x->limit)
        json_array_append_new(x->data, kutt_link(x->app, l));
    x->seen++;
    return x->seen >= LIST_SCAN_MAX;
}

/* A query value decoded ('+' a blank), at most 128 bytes of UTF-8. */
static bool search_param(const struct request *r, char out[129])
{
    out[0] = '\0';
    struct slice v;
    if (!http_query_param(r, "search", &v))
        return true;
    size_t o = 0;
    for (size_t i = 0; i < v.n; i++) {
        if (o == 128)
            return false;
        char c = v.p[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%' && i + 2 < v.n && isxdigit((unsigned char)v.p[i + 1]) &&
                   isxdigit((unsigned char)v.p[i + 2])) {
            char h[3] = {v.p[i + 1], v.p[i + 2], 0};
            c = (char)strtol(h, NULL, 16);
            i += 2;
        }
        if (!c)
            return false;
        out[o++] = c;
    }
    out[o] = '\0';
    json_t *utf8 = json_string(out);
    json_decref(utf8);
    return utf8 != NULL;
}

int handle_kutt_list(struct request *r)
{
    int64_t limit = js_int(r, "limit", LIST_DEFAULT), skip = js_int(r, "skip", 0);
    if (limit > LIST_MAX)
        limit = LIST_MAX;
    if (limit < 1)
        limit = LIST_DEFAULT;
    if (skip < 0)
        skip = 0;
    char search[129];
    if (!search_param(r, search))
        return kerr(r, 400, "search query is not valid.");
    /* `all`, as Kutt 2's list took it: an admin's every link; any other
     * key lists its own whatever it says. */
    struct slice all;
    bool every = r->key.admin && http_query_param(r, "all", &all) && slice_eq(all, "true");
    if (router_heavy_enter(r)) { /* its Retry-After is written: the body is Kutt's */
        return kerr(r, 429, "This key already runs its share of searches; try again.");
    }
    char after[CODE_MAX + 1] = "";
    struct link_query q = {.owner = every ? OWNER_ANY : r->key.owner,
                           .states = 1u << LINK_DISABLED,
                           .want_live = true,
                           .want_expired = true,
                           .want_exhausted = true,
                           .now = now_ms(),
                           .limit = 1000,
                           .after_code = after,
                           .q = *search ? search : NULL};
    struct list_ctx x = {.app = r->app, .data = json_array(), .skip = skip, .limit = limit};
    struct store *st = r->app->store;
    int rc;
    for (;;) {
        x.any = false;
        rc = st->ops->link_list(st, &q, list_one, &x);
        if (rc != ERR_OK || !x.any || x.seen >= LIST_SCAN_MAX)
            break;
        memcpy(after, x.last_code, sizeof(after));
        q.after_created = x.last_created;
    }
    router_heavy_leave(r->app, r->key.id);
    if (rc != ERR_OK) {
        json_decref(x.data);
        return unavailable(r);
    }
    return kjson(r, 200,
                 json_pack("{s:I,s:I,s:I,s:o}", "total", (json_int_t)x.seen, "limit",
                           (json_int_t)limit, "skip", (json_int_t)skip, "data", x.data));
}

/* ---- one link: its id in the path ---- */

/* The path's id as a code: 0, or Kutt's answer for an id that is none
 * ('missing', its handler's words, for one no link has). */
static int path_code(struct request *r, char code[CODE_MAX + 1], const char *missing)
{
    int rc = id_code(r, code);
    if (rc == ERR_INVALID)
        return kerr(r, 400, "ID is invalid.");
    if (rc == ERR_NOTFOUND)
        return kerr(r, 500, missing);
    if (rc != ERR_OK)
        return unavailable(r);
    return 0;
}

/* ---- DELETE /api/v2/links/:id ---- */

#define DELETE_MISSING "Could not find the link."

struct delete_job {
    struct api_job base;
    char code[CODE_MAX + 1];
    int64_t owner, now;
    struct link link;
    bool found;
};

static void delete_release(struct api_job *j)
{
    struct delete_job *d = (struct delete_job *)j;
    link_release(&d->link);
    free(d);
}

static int delete_run(struct wjob *wj, struct store *st)
{
    struct delete_job *d = (struct delete_job *)wj;
    int rc = owner_link_get(st, d->code, d->owner, &d->link);
    if (rc == ERR_NOTFOUND)
        return ERR_OK;
    if (rc != ERR_OK)
        return rc;
    if (d->link.state == LINK_DELETED)
        return ERR_OK;
    rc = st->ops->link_set_state(st, d->code, LINK_DELETED, d->now);
    if (rc != ERR_OK)
        return rc;
    link_release(&d->link);
    rc = st->ops->link_get(st, d->code, &d->link);
    d->found = rc == ERR_OK;
    return rc;
}

static void delete_after_commit(struct api_job *j)
{
    struct delete_job *d = (struct delete_job *)j;
    if (d->found)
        link_changed(j->r->app, &d->link, LINK_EDITED, d->now);
}

static int delete_respond(struct api_job *j)
{
    struct delete_job *d = (struct delete_job *)j;
    if (j->job.rc != ERR_OK)
        return unavailable(j->r);
    if (!d->found)
        return kerr(j->r, 500, DELETE_MISSING);
    return kjson(j->r, 200, json_pack("{s:s}", "message", "Link has been deleted successfully."));
}

int handle_kutt_delete(struct request *r)
{
    struct delete_job *d = calloc(1, sizeof(*d));
    if (!d)
        abort();
    int status = path_code(r, d->code, DELETE_MISSING);
    if (status) {
        free(d);
        return status;
    }
    d->owner = owner_scope(r);
    d->now = now_ms();
    d->base.after_commit = delete_after_commit;
    d->base.respond = delete_respond;
    d->base.release = delete_release;
    return api_job_submit(r, &d->base, delete_run);
}

/* ---- PATCH /api/v2/links/:id ---- */

#define EDIT_MISSING "Link was not found."

struct patch_job {
    struct api_job base;
    char code[CODE_MAX + 1];
    struct link_patch p;
    bool drop_password; /* a falsy password: remove the link's */
    int64_t now, owner, key_id;
    struct link link;
    const char *error;
    int error_status;
    bool changed;
};

static void patch_release(struct api_job *j)
{
    struct patch_job *pj = (struct patch_job *)j;
    link_patch_release(&pj->p);
    link_release(&pj->link);
    free(pj);
}

static int patch_refuse(struct patch_job *pj, int status, const char *message)
{
    pj->error = message;
    pj->error_status = status;
    return ERR_OK;
}

/* links.handler's edit: a field equal to the link's is no change (an
 * expiry within a minute of the link's neither), and nothing changed is
 * refused. */
static int patch_run(struct wjob *wj, struct store *st)
{
    struct patch_job *pj = (struct patch_job *)wj;
    struct link_patch *p = &pj->p;
    int rc = owner_link_get(st, pj->code, pj->owner, &pj->link);
    if (rc == ERR_NOTFOUND)
        return patch_refuse(pj, 500, EDIT_MISSING);
    if (rc != ERR_OK)
        return rc;
    struct link *l = &pj->link;
    if (l->state == LINK_DELETED || !l->url)
        return patch_refuse(pj, 500, EDIT_MISSING);
    if ((p->fields & PATCH_URL) && !strcmp(p->url, l->url))
        p->fields &= ~PATCH_URL;
    if ((p->fields & PATCH_NOTE) && l->note && p->note && !strcmp(p->note, l->note))
        p->fields &= ~PATCH_NOTE;
    if ((p->fields & PATCH_EXPIRES) && l->expires_at &&
        llabs(p->expires_at - l->expires_at) < 60000)
        p->fields &= ~PATCH_EXPIRES;
    if (pj->drop_password && l->password)
        p->fields |= PATCH_PASSWORD; /* p->password is NULL: removed */
    if (!p->fields)
        return patch_refuse(pj, 500, "Should at least update one field.");
    if ((p->fields & PATCH_PASSWORD) && p->password && l->permanent)
        return patch_refuse(pj, 400, "Password cannot protect a permanent link.");
    const char *field = NULL;
    rc = links_edit(pj->base.r->app->links, st, l, p, pj->now, pj->key_id, &field);
    if (rc == ERR_INVALID || rc == ERR_MISMATCH)
        return patch_refuse(pj, 400, "URL is not valid.");
    if (rc == ERR_FORBIDDEN)
        return patch_refuse(pj, 400, "URL is containing malware/scam.");
    pj->changed = rc == ERR_OK;
    return rc;
}

static void patch_after_commit(struct api_job *j)
{
    struct patch_job *pj = (struct patch_job *)j;
    if (pj->changed)
        link_changed(j->r->app, &pj->link, LINK_EDITED, pj->now);
}

static int patch_respond(struct api_job *j)
{
    struct patch_job *pj = (struct patch_job *)j;
    if (j->job.rc != ERR_OK)
        return unavailable(j->r);
    if (pj->error)
        return kerr(j->r, pj->error_status, pj->error);
    return kjson(j->r, 200, kutt_link(j->r->app, &pj->link));
}

/* "•••" is how Kutt's form shows a password kept: no change. */
static bool bullets_only(const char *s)
{
    static const char bullet[] = "\xe2\x80\xa2";
    for (; *s; s += 3)
        if (strncmp(s, bullet, 3) != 0)
            return false;
    return true;
}

int handle_kutt_patch(struct request *r)
{
    int status = body_json(r);
    if (status)
        return status;
    json_t *b = r->json;
    json_t *target = json_object_get(b, "target"), *password = json_object_get(b, "password");
    json_t *address = json_object_get(b, "address");
    json_t *description = json_object_get(b, "description");
    json_t *expire = json_object_get(b, "expire_in");
    json_t *body = json_object();
    char *url = NULL, *alias = NULL;
    struct patch_job *pj = NULL;
    int64_t ttl;
    /* editLink's validators, in order */
    if (!falsy(target)) {
        status = target_check(r, target, &url);
        if (status)
            goto out;
        json_object_set_new(body, "url", json_string(url));
    }
    bool set_password = !falsy(password) &&
                        !(json_is_string(password) && bullets_only(json_string_value(password)));
    if (set_password) {
        status = password_check(r, password);
        if (status)
            goto out;
        json_object_set(body, "password", password);
    }
    if (!falsy(address)) {
        status = address_check(r, address, &alias);
        if (status)
            goto out;
    }
    if (!falsy(expire)) {
        status = expire_check(r, expire, &ttl);
        if (status)
            goto out;
        json_object_set_new(body, "ttl", json_integer(ttl));
    }
    if (!falsy(description)) {
        char *d = json_is_string(description) ? trimmed(description) : NULL;
        if (!d || chars(d) > TEXT_MAX) {
            free(d);
            status = kerr(r, 400, "Description length must be between 0 and 2040.");
            goto out;
        }
        json_object_set_new(body, "note", *d ? json_string(d) : json_null());
        free(d);
    }
    pj = calloc(1, sizeof(*pj));
    if (!pj)
        abort();
    status = path_code(r, pj->code, EDIT_MISSING);
    if (status)
        goto out;
    if (alias && strcmp(alias, pj->code) != 0) {
        /* shortd's rule: a code never changes (it may be printed already) */
        status = kerr(r, 400, "Custom URL cannot be changed: create a new link instead.");
        goto out;
    }
    pj->now = now_ms();
    const char *field = NULL;
    char why[256];
    /* (nothing to change is the job's to say, once it knows the link) */
    if (json_object_size(body) && links_parse_patch(r->app->links, body, pj->now, &pj->p, &field,
                                                    why, sizeof(why)) != ERR_OK) {
        status = refused(r, field, why);
        goto out;
    }
    pj->drop_password = password && !set_password && falsy(password);
    pj->owner = owner_scope(r);
    pj->key_id = r->key.id;
    pj->base.after_commit = patch_after_commit;
    pj->base.respond = patch_respond;
    pj->base.release = patch_release;
    status =
        submit_hashed(r, set_password ? password : NULL, &pj->base, &pj->p.password, patch_run);
    pj = NULL;
out:
    if (pj) {
        link_patch_release(&pj->p);
        free(pj);
    }
    json_decref(body);
    free(url);
    free(alias);
    return status;
}

/* ---- GET /api/v2/links/:id/stats ---- */

/* One of Kutt's periods: its views, total, and the clicks by browser, os,
 * country and referrer. */
struct period {
    const char *name;
    int nviews;
    int64_t *views;
    int64_t total;
    json_t *dims[4]; /* name -> count */
};

static const int period_dims[4] = {DIM_BROWSER, DIM_OS, DIM_COUNTRY, DIM_REFERRER};
static const char *const period_dim_names[4] = {"browser", "os", "country", "referrer"};

/* Kutt's browser and OS names (queues/visit.js, lowercased as it stores
 * them), each listed even at 0 (utils.getInitStats), in its order; shortd's
 * names map onto them, the rest to "other". */
static const char *const kutt_browsers[] = {"chrome", "edge",  "firefox", "ie",
                                            "opera",  "other", "safari"};
static const char *const kutt_oses[] = {"android", "ios", "linux", "macos", "other", "windows"};

static const char *kutt_browser(const char *v)
{
    static const char *const map[][2] = {{"Chrome", "chrome"},   {"Edge", "edge"},
                                         {"Firefox", "firefox"}, {"Internet Explorer", "ie"},
                                         {"Opera", "opera"},     {"Safari", "safari"}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(v, map[i][0]))
            return map[i][1];
    return "other";
}

static const char *kutt_os(const char *v)
{
    static const char *const map[][2] = {{"Android", "android"}, {"iOS", "ios"},
                                         {"iPadOS", "ios"},      {"Linux", "linux"},
                                         {"macOS", "macos"},     {"Windows", "windows"}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(v, map[i][0]))
            return map[i][1];
    return "other";
}

/* Kutt's name of a country or referrer value: lowercased; a referrer host
 * without its "www." and with each '.' as "[dot]" (its stats page puts the
 * dots back); shortd's unknown country "XX" is Kutt's "unknown". */
static void kutt_value(int dim, const char *v, struct buf *out)
{
    if (dim == DIM_COUNTRY && !strcmp(v, "XX"))
        v = "unknown";
    if (dim == DIM_REFERRER && !strncasecmp(v, "www.", 4))
        v += 4;
    for (; *v; v++) {
        if (dim == DIM_REFERRER && *v == '.')
            buf_adds(out, "[dot]");
        else
            buf_addc(out, (char)tolower((unsigned char)*v));
    }
}

/* Adds n to the count of 'name' in 'counts'. */
static void count_add(json_t *counts, const char *name, int64_t n)
{
    json_t *c = json_object_get(counts, name);
    json_object_set_new(counts, name, json_integer((c ? json_integer_value(c) : 0) + n));
}

static int period_dim(int dim, const char *value, int64_t n, void *arg)
{
    struct period *p = arg;
    for (int i = 0; i < 4; i++) {
        if (period_dims[i] != dim)
            continue;
        if (dim == DIM_BROWSER) {
            count_add(p->dims[i], kutt_browser(value), n);
        } else if (dim == DIM_OS) {
            count_add(p->dims[i], kutt_os(value), n);
        } else {
            struct buf b = BUF_INIT;
            kutt_value(dim, value, &b);
            count_add(p->dims[i], b.p ? b.p : "", n);
            buf_release(&b);
        }
    }
    return 0;
}

/* A period's counts before the store's: every browser and OS name at 0,
 * in Kutt's order (which its stable sort keeps among equal counts). */
static void period_start(struct period *p)
{
    for (int i = 0; i < 4; i++)
        p->dims[i] = json_object();
    for (size_t i = 0; i < sizeof(kutt_browsers) / sizeof(kutt_browsers[0]); i++)
        count_add(p->dims[0], kutt_browsers[i], 0);
    for (size_t i = 0; i < sizeof(kutt_oses) / sizeof(kutt_oses[0]); i++)
        count_add(p->dims[1], kutt_oses[i], 0);
}

/* The clicks no country or referrer was known for, as Kutt's "unknown" and
 * "direct" (shortd counts only the known ones), so that each adds up to the
 * period's total as Kutt's do. */
static void period_finish(struct period *p)
{
    static const char *const rest[4] = {NULL, NULL, "unknown", "direct"};
    for (int i = 2; i < 4; i++) {
        int64_t known = 0;
        const char *k;
        json_t *c;
        json_object_foreach(p->dims[i], k, c) known += json_integer_value(c);
        if (p->total > known)
            count_add(p->dims[i], rest[i], p->total - known);
    }
}

/* The day counts of the last year, oldest first. */
struct year_days {
    int64_t first;
    int64_t clicks[366];
};

static int year_day(int64_t day, int64_t clicks, int64_t uniques, int64_t bots, void *arg)
{
    (void)uniques;
    (void)bots;
    struct year_days *y = arg;
    if (day >= y->first && day < y->first + 366)
        y->clicks[day - y->first] += clicks;
    return 0;
}

/* An entry of a stats array and its place among its counts. */
struct dim_entry {
    json_t *o;
    json_int_t value;
    size_t at;
};

/* Most first; equal counts in their order (JavaScript's sort is stable). */
static int cmp_value_desc(const void *a, const void *b)
{
    const struct dim_entry *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? 1 : -1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* utils.statsObjectToArray: [{name, value}], most first. */
static json_t *dim_array(json_t *counts)
{
    size_t n = json_object_size(counts), i = 0;
    struct dim_entry *v = calloc(n ? n : 1, sizeof(*v));
    if (!v)
        abort();
    const char *k;
    json_t *c;
    json_object_foreach(counts, k, c)
    {
        v[i] = (struct dim_entry){json_pack("{s:s,s:O}", "name", k, "value", c),
                                  json_integer_value(c), i};
        i++;
    }
    qsort(v, n, sizeof(*v), cmp_value_desc);
    json_t *a = json_array();
    for (i = 0; i < n; i++)
        json_array_append_new(a, v[i].o);
    free(v);
    return a;
}

static int month_of(int64_t day)
{
    char d[11];
    day_format(day, d);
    return atoi(d) * 12 + atoi(d + 5) - 1;
}

/* shortd counts clicks by day: lastDay's 24 hourly views hold today's
 * count in the last hour, so that they add up to its total. */
int handle_kutt_stats(struct request *r)
{
    char code[CODE_MAX + 1];
    int status = path_code(r, code, "Link could not be found.");
    if (status)
        return status;
    struct store *st = r->app->store;
    struct link l;
    int rc = owner_link_get(st, code, owner_scope(r), &l);
    if (rc == ERR_NOTFOUND)
        return kerr(r, 500, "Link could not be found.");
    if (rc != ERR_OK)
        return unavailable(r);
    if (l.state == LINK_DELETED || !l.url) {
        link_release(&l);
        return kerr(r, 500, "Link could not be found.");
    }
    int64_t today = day_number(now_ms());
    struct year_days *y = calloc(1, sizeof(*y));
    if (!y)
        abort();
    y->first = today - 365;
    rc = st->ops->stats_days(st, code, y->first, today, year_day, y);
    int64_t views_day[24] = {0}, views_week[7] = {0}, views_month[30] = {0}, views_year[12] = {0};
    struct period ps[4] = {{"lastDay", 24, views_day, 0, {0}},
                           {"lastWeek", 7, views_week, 0, {0}},
                           {"lastMonth", 30, views_month, 0, {0}},
                           {"lastYear", 12, views_year, 0, {0}}};
    const int64_t span[4] = {1, 7, 30, 366};
    int this_month = month_of(today);
    for (int64_t d = y->first; d <= today; d++) {
        int64_t n = y->clicks[d - y->first], ago = today - d;
        if (!n)
            continue;
        if (ago == 0) {
            views_day[23] += n;
            ps[0].total += n;
        }
        if (ago < 7) {
            views_week[6 - ago] += n;
            ps[1].total += n;
        }
        if (ago < 30) {
            views_month[29 - ago] += n;
            ps[2].total += n;
        }
        int months = this_month - month_of(d);
        if (months >= 0 && months < 12) {
            views_year[11 - months] += n;
            ps[3].total += n;
        }
    }
    free(y);
    for (int p = 0; p < 4; p++) {
        period_start(&ps[p]);
        if (rc == ERR_OK)
            rc = st->ops->stats_dims(st, code, today - span[p] + 1, today, period_dim, &ps[p]);
        period_finish(&ps[p]);
    }
    json_t *o = NULL;
    if (rc == ERR_OK) {
        o = json_object();
        static const int order[4] = {3, 0, 2, 1}; /* Kutt's: year, day, month, week */
        for (int k = 0; k < 4; k++) {
            struct period *p = &ps[order[k]];
            json_t *stats = json_object(), *views = json_array();
            for (int i = 0; i < 4; i++)
                json_object_set_new(stats, period_dim_names[i], dim_array(p->dims[i]));
            for (int i = 0; i < p->nviews; i++)
                json_array_append_new(views, json_integer(p->views[i]));
            json_object_set_new(o, p->name,
                                json_pack("{s:o,s:o,s:I}", "stats", stats, "views", views, "total",
                                          (json_int_t)p->total));
        }
        json_object_set_new(o, "updatedAt", time_json(now_ms()));
        json_t *link = kutt_link(r->app, &l);
        json_object_update(o, link);
        json_decref(link);
    }
    for (int p = 0; p < 4; p++)
        for (int i = 0; i < 4; i++)
            json_decref(ps[p].dims[i]);
    link_release(&l);
    if (!o)
        return unavailable(r);
    return kjson(r, 200, o);
}

/* ---- GET /api/v2/users, GET /api/v2/health ---- */

struct domains_ctx {
    const struct app *app;
    json_t *arr;
};

/* A domain's id: a keyed hash of its host, as a UUID (stable, and found
 * again among the key's domains by DELETE /domains/:id). */
static void domain_id(const struct app *app, const char *host, char id[ID_LEN + 1])
{
    uint8_t key[32], h[16];
    id_key(app, key);
    crypto_generichash(h, sizeof(h), (const uint8_t *)host, strlen(host), key, 32);
    sodium_memzero(key, sizeof(key));
    char *o = id;
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *o++ = '-';
        *o++ = hex[h[i] >> 4];
        *o++ = hex[h[i] & 15];
    }
    *o = '\0';
}

/* utils.sanitize.domain, in Kutt's order; the homepage is Kutt's default
 * (its DEFAULT_DOMAIN: shortd's host), a custom domain's root being shortd's. */
static json_t *kutt_domain(const struct app *app, const char *host, int64_t created_at)
{
    char id[ID_LEN + 1], home[256];
    domain_id(app, host, id);
    default_host(app, home, sizeof(home));
    return json_pack("{s:s,s:b,s:s,s:s,s:o,s:o}", "id", id, "banned", 0, "address", host,
                     "homepage", home, "created_at", time_json(created_at), "updated_at",
                     time_json(created_at));
}

static int domain_one(const char *host, int64_t owner, int64_t created_at, void *arg)
{
    (void)owner;
    struct domains_ctx *x = arg;
    json_array_append_new(x->arr, kutt_domain(x->app, host, created_at));
    return 0;
}

/* users.handler's get: the key (as sent), its name for the email Kutt's
 * users have, and the custom domains it registered. */
int handle_kutt_user(struct request *r)
{
    struct domains_ctx x = {.app = r->app, .arr = json_array()};
    struct store *st = r->app->store;
    if (st->ops->domain_list(st, r->key.owner, domain_one, &x) != ERR_OK) {
        json_decref(x.arr);
        return unavailable(r);
    }
    struct slice key = http_header(r, "x-api-key");
    return kjson(r, 200,
                 json_pack("{s:s#,s:s,s:o}", "apikey", key.p, key.n, "email", r->key.name,
                           "domains", x.arr));
}

/* ---- POST /api/v2/domains, DELETE /api/v2/domains/:id ---- */

struct domain_job {
    struct api_job base;
    char *host;          /* add: the host; delete: the one found */
    char id[ID_LEN + 1]; /* delete: the id asked */
    int64_t owner, now;
    bool add;
    const char *error; /* a refusal's message (static), 400 */
};

static void domain_release(struct api_job *j)
{
    struct domain_job *d = (struct domain_job *)j;
    free(d->host);
    free(d);
}

/* The key's domain whose id is d->id, into d->host. */
static int domain_find_one(const char *host, int64_t owner, int64_t created_at, void *arg)
{
    (void)owner;
    (void)created_at;
    struct domain_job *d = arg;
    char id[ID_LEN + 1];
    domain_id(d->base.r->app, host, id);
    if (strcmp(id, d->id) != 0)
        return 0;
    d->host = xstrdup(host);
    return 1;
}

static int domain_run(struct wjob *wj, struct store *st)
{
    struct domain_job *d = (struct domain_job *)wj;
    int rc;
    if (!d->add) {
        rc = st->ops->domain_list(st, d->owner, domain_find_one, d);
        if (rc == ERR_OK && d->host)
            rc = st->ops->domain_del(st, d->host, d->owner);
        if (rc == ERR_NOTFOUND || (rc == ERR_OK && !d->host)) {
            d->error = "Could not delete the domain.";
            return ERR_OK;
        }
        return rc;
    }
    /* Kutt refuses a domain any user has, its own caller included. */
    int64_t owner = -1;
    rc = st->ops->domain_get(st, d->host, &owner);
    if (rc == ERR_NOTFOUND)
        rc = st->ops->domain_add(st, d->host, d->owner, d->now);
    else if (rc == ERR_OK)
        rc = ERR_EXISTS;
    if (rc == ERR_EXISTS) { /* (or another node's owner came first) */
        d->error = "You can't add this domain.";
        return ERR_OK;
    }
    return rc;
}

/* Links may not point at a registered domain (it is shortd): as
 * api_domains.c, every node counts them again. */
static void domain_after_commit(struct api_job *j)
{
    struct domain_job *d = (struct domain_job *)j;
    if (!d->error)
        blocklist_changed(j->r->app);
}

static int domain_respond(struct api_job *j)
{
    struct domain_job *d = (struct domain_job *)j;
    if (j->job.rc != ERR_OK)
        return unavailable(j->r);
    if (d->error)
        return kerr(j->r, 400, d->error);
    if (!d->add)
        return kjson(j->r, 200, json_pack("{s:s}", "message", "Domain deleted successfully"));
    return kjson(j->r, 200, kutt_domain(j->r->app, d->host, d->now));
}

static int domain_submit(struct request *r, struct domain_job *d)
{
    d->owner = r->key.owner;
    d->now = now_ms();
    d->base.job.single_write = !d->add; /* adding reads, then inserts */
    d->base.after_commit = domain_after_commit;
    d->base.respond = domain_respond;
    d->base.release = domain_release;
    return api_job_submit(r, &d->base, domain_run);
}

/* validators.addDomain: an address of 3 to 64 characters that Kutt's URL
 * pattern takes as a host (with http:// added), without its www.; not
 * shortd's own host; a host shortd's custom domains take. shortd keeps no
 * homepage of a domain (its root is shortd's): one given is refused. */
int handle_kutt_domain_add(struct request *r)
{
    int status = body_json(r);
    if (status)
        return status;
    json_t *address = json_object_get(r->json, "address");
    json_t *homepage = json_object_get(r->json, "homepage");
    if (falsy(address) || !json_is_string(address))
        return kerr(r, 400, "Domain is not valid.");
    size_t n = chars(json_string_value(address));
    if (n < 3 || n > 64)
        return kerr(r, 400, "Domain length must be between 3 and 64.");
    char *t = trimmed(address);
    struct buf u = BUF_INIT;
    const char *sep = strstr(t, "://");
    if (!sep)
        buf_adds(&u, "http://");
    buf_adds(&u, t);
    free(t);
    bool ok = kutt_url_ok(u.p) &&
              (!strncasecmp(u.p, "http://", 7) || !strncasecmp(u.p, "https://", 8));
    char *host = NULL;
    if (ok) {
        const char *h = strstr(u.p, "://") + 3;
        size_t hn = strcspn(h, "/?#");
        const char *at = memchr(h, '@', hn);
        while (at) { /* userinfo: the last '@' ends it */
            hn -= (size_t)(at + 1 - h);
            h = at + 1;
            at = memchr(h, '@', hn);
        }
        hn = strcspn(h, ":/?#") < hn ? strcspn(h, ":/?#") : hn;
        if (hn > 4 && !strncasecmp(h, "www.", 4)) {
            h += 4;
            hn -= 4;
        }
        host = malloc(hn + 1);
        if (!host)
            abort();
        for (size_t i = 0; i < hn; i++)
            host[i] = (char)tolower((unsigned char)h[i]);
        host[hn] = '\0';
        if (hn && host[hn - 1] == '.')
            host[hn - 1] = '\0';
    }
    buf_release(&u);
    const char *why = NULL;
    if (!ok || links_domain_check(host, strlen(host), &why) != ERR_OK) {
        free(host);
        return kerr(r, 400, "Domain is not valid.");
    }
    char home[256];
    default_host(r->app, home, sizeof(home));
    home[strcspn(home, ":")] = '\0';
    if (!strcmp(host, home)) {
        free(host);
        return kerr(r, 400, "You can't use the default domain.");
    }
    if (!falsy(homepage)) {
        free(host);
        return kerr(r, 400, "Homepage is not supported: a custom domain's root is shortd's own.");
    }
    struct domain_job *d = calloc(1, sizeof(*d));
    if (!d)
        abort();
    d->host = host;
    d->add = true;
    return domain_submit(r, d);
}

/* validators.removeDomain: an id of 36 characters; one the key has none of
 * is Kutt's 400 "Could not delete the domain.". */
int handle_kutt_domain_delete(struct request *r)
{
    struct slice id = r->params[0];
    if (id.n != ID_LEN)
        return kerr(r, 400, "ID is invalid.");
    struct domain_job *d = calloc(1, sizeof(*d));
    if (!d)
        abort();
    memcpy(d->id, id.p, ID_LEN);
    for (int i = 0; i < ID_LEN; i++)
        d->id[i] = (char)tolower((unsigned char)d->id[i]);
    return domain_submit(r, d);
}

int handle_kutt_health(struct request *r)
{
    return http_body(r, 200, "text/html; charset=utf-8", "OK", 2);
}
