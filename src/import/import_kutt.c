/* import_kutt.c - the `kutt` reader: Kutt 3's database, its SQLite file
 * (Kutt calls it db/data) or its PostgreSQL database.
 *
 * The tables and columns are Kutt v3.2.3's (github.com/thedevs-network/kutt,
 * commit e75d4b2bac8758c1b8be837b42a0902529024127): server/models/
 * link.model.js, visit.model.js and domain.model.js, which its knex
 * migrations (server/migrations/) create. What is read:
 *   links   address (the code, case kept), target, description (the title),
 *           created_at, expire_in (an absolute time since Kutt 3), domain_id
 *           (→ domains.address, the custom host), visit_count (the total),
 *           password (a bcrypt hash, which pwhash.c checks), banned (→ the
 *           link comes in disabled);
 *   visits  one row a link and hour (server/queries/visit.queries.js): total,
 *           br_<browser> and os_<os> counts, and the JSON objects countries
 *           ({"us": 3, "unknown": 1}) and referrers ({"example[dot]com": 2,
 *           "direct": 5}, hosts without "www." and with '.' spelled
 *           "[dot]", server/queues/visit.js): each row is one import_tally.
 * Kutt writes dates as UTC text "YYYY-MM-DD HH:MM:SS" in SQLite and as
 * timestamptz in PostgreSQL; each database turns them into unix seconds
 * itself. Kutt records no visits of bots (it checks isbot first), so a
 * tally holds people only. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "clicks/classify.h"
#include "import/dbsrc.h"
#include "import/import.h"

#include "base/banned.h"

/* A date column as unix seconds, NULL when NULL or not a date: SQLite holds
 * Kutt's text (or, written by knex from a Date, milliseconds). */
#define SQ_EPOCH(c)                                                                                \
    "(CASE WHEN typeof(" c ") IN ('integer', 'real') THEN CAST(" c " / 1000 AS INTEGER) "          \
    "ELSE CAST(strftime('%s', " c ") AS INTEGER) END)"
#define PG_EPOCH(c) "floor(extract(epoch FROM " c "))::bigint"

/* clang-format off */
#define LINKS_SQL(EPOCH)                                                                           \
    "SELECT l.id, l.address, l.target, l.description, " EPOCH("l.created_at") ", "                 \
    EPOCH("l.expire_in") ", l.expire_in, d.address, l.visit_count, l.password, l.banned "          \
    "FROM links l LEFT JOIN domains d ON d.id = l.domain_id ORDER BY l.id"
/* clang-format on */

enum {
    L_ID,
    L_ADDRESS,
    L_TARGET,
    L_DESCRIPTION,
    L_CREATED,
    L_EXPIRE,
    L_EXPIRE_RAW,
    L_DOMAIN,
    L_VISIT_COUNT,
    L_PASSWORD,
    L_BANNED,
    L__COUNT
};

/* Kutt's per-browser and per-OS columns and the names classify.h gives the
 * same browsers and systems. */
static const struct {
    const char *column;
    enum dim dim;
    const char *value;
} counted[] = {
    {"br_chrome", DIM_BROWSER, "Chrome"},
    {"br_edge", DIM_BROWSER, "Edge"},
    {"br_firefox", DIM_BROWSER, "Firefox"},
    {"br_ie", DIM_BROWSER, "Internet Explorer"},
    {"br_opera", DIM_BROWSER, "Opera"},
    {"br_safari", DIM_BROWSER, "Safari"},
    {"br_other", DIM_BROWSER, "Other"},
    {"os_android", DIM_OS, "Android"},
    {"os_ios", DIM_OS, "iOS"},
    {"os_linux", DIM_OS, "Linux"},
    {"os_macos", DIM_OS, "macOS"},
    {"os_windows", DIM_OS, "Windows"},
    {"os_other", DIM_OS, "Other"},
};
#define NCOUNTED (sizeof(counted) / sizeof(counted[0]))

#define COUNTED_COLS                                                                               \
    "v.br_chrome, v.br_edge, v.br_firefox, v.br_ie, v.br_opera, v.br_safari, v.br_other, "         \
    "v.os_android, v.os_ios, v.os_linux, v.os_macos, v.os_windows, v.os_other"

/* 1 when the visits row's link is not the first with its address: Kutt
 * keeps an address once a domain, shortd a code once, so the sink takes the
 * first and refuses the others, whose rows must not count for the first. */
#define SHADOWED                                                                                   \
    "(CASE WHEN l.id = (SELECT min(l2.id) FROM links l2 WHERE l2.address = l.address) "            \
    "THEN 0 ELSE 1 END)"

/* clang-format off */
#define VISITS_SQL(EPOCH)                                                                          \
    "SELECT v.id, l.address, d.address, " EPOCH("v.created_at") ", v.created_at, v.total, "        \
    "v.countries, v.referrers, " COUNTED_COLS ", " SHADOWED " "                                    \
    "FROM visits v LEFT JOIN links l ON l.id = v.link_id "                                         \
    "LEFT JOIN domains d ON d.id = l.domain_id ORDER BY v.id"
/* clang-format on */

enum {
    V_ID,
    V_ADDRESS,
    V_DOMAIN,
    V_CREATED,
    V_CREATED_RAW,
    V_TOTAL,
    V_COUNTRIES,
    V_REFERRERS,
    V_COUNTED,
    V_SHADOWED = V_COUNTED + NCOUNTED
};

#define COUNT_SQL "SELECT (SELECT count(*) FROM links) + (SELECT count(*) FROM visits)"

struct kutt {
    struct import_sink *sink;
    uint64_t rows, total; /* progress */
    int64_t shadowed;     /* visits rows of links with an earlier link's address */
};

static void progress(struct kutt *k)
{
    k->rows++;
    if (k->rows % 1024 == 0)
        import_progress(k->sink, k->rows, k->total);
}

static int link_row(void *arg, const char *const *c, int n)
{
    struct kutt *k = arg;
    (void)n;
    progress(k);
    struct import_link l = {0};
    int64_t id = 0;
    (void)dbsrc_int(c[L_ID], &id);
    l.where = (struct import_where){"links", id};
    if (!c[L_ADDRESS] || !*c[L_ADDRESS]) {
        import_refuse(k->sink, l.where, "the link has no address");
        return ERR_OK;
    }
    if (!c[L_TARGET] || !*c[L_TARGET]) {
        import_refuse(k->sink, l.where, "link '%s' has no target", c[L_ADDRESS]);
        return ERR_OK;
    }
    if (c[L_EXPIRE_RAW] && !dbsrc_int(c[L_EXPIRE], &l.expires_at)) {
        import_refuse(k->sink, l.where, "link '%s': expire_in '%s' is not a date", c[L_ADDRESS],
                      c[L_EXPIRE_RAW]);
        return ERR_OK;
    }
    l.code = c[L_ADDRESS];
    l.url = c[L_TARGET];
    l.title = c[L_DESCRIPTION] && *c[L_DESCRIPTION] ? c[L_DESCRIPTION] : NULL;
    l.domain = c[L_DOMAIN] && *c[L_DOMAIN] ? c[L_DOMAIN] : NULL;
    l.password = c[L_PASSWORD] && *c[L_PASSWORD] ? c[L_PASSWORD] : NULL;
    (void)dbsrc_int(c[L_CREATED], &l.created_at);
    (void)dbsrc_int(c[L_VISIT_COUNT], &l.clicks);
    l.disabled = dbsrc_bool(c[L_BANNED]);
    return import_link(k->sink, &l);
}

/* The values of one visits row, and the text they point into. */
struct tally_values {
    struct import_tally_value *v;
    size_t n, cap;
    char *text; /* cap slots of DIM_MAX + 1 bytes */
};

/* A new value of 'count' in 'dim': its text is written into the slot
 * returned, which tv_finish points the value at (slots move as they grow). */
static char *tv_add(struct tally_values *t, enum dim dim, int64_t count)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->v = realloc(t->v, t->cap * sizeof(*t->v));
        t->text = realloc(t->text, t->cap * (DIM_MAX + 1));
        if (!t->v || !t->text)
            abort();
    }
    char *slot = t->text + t->n * (DIM_MAX + 1);
    slot[0] = '\0';
    t->v[t->n++] = (struct import_tally_value){dim, NULL, count};
    return slot;
}

static void tv_finish(struct tally_values *t)
{
    for (size_t i = 0; i < t->n; i++)
        t->v[i].value = t->text + i * (DIM_MAX + 1);
}

/* A JSON object of counts (Kutt's countries or referrers column): NULL and
 * SQL NULL are an empty one. */
static json_t *counts_object(const char *text, const char **why)
{
    if (!text)
        return json_object();
    json_error_t e;
    json_t *o = json_loads(text, JSON_DECODE_ANY, &e);
    if (!json_is_object(o)) {
        json_decref(o);
        *why = "is not a JSON object";
        return NULL;
    }
    const char *key;
    json_t *val;
    json_object_foreach(o, key, val)
    {
        if (!json_is_integer(val) || json_integer_value(val) < 0) {
            json_decref(o);
            *why = "has a count that is not a whole number";
            return NULL;
        }
    }
    return o;
}

/* countries: lower-case ISO codes → shortd's upper-case ones; "unknown"
 * (and anything that is not two letters) counts for no country. */
static void add_countries(struct tally_values *t, json_t *o)
{
    const char *key;
    json_t *val;
    json_object_foreach(o, key, val)
    {
        int64_t n = json_integer_value(val);
        if (n <= 0 || strlen(key) != 2 || !((key[0] | 0x20) >= 'a' && (key[0] | 0x20) <= 'z') ||
            !((key[1] | 0x20) >= 'a' && (key[1] | 0x20) <= 'z'))
            continue;
        char *s = tv_add(t, DIM_COUNTRY, n);
        s[0] = (char)(key[0] & ~0x20);
        s[1] = (char)(key[1] & ~0x20);
        s[2] = '\0';
    }
}

/* referrers: "direct" → the direct group; a host (with "[dot]" for '.') →
 * itself and its group as classify.h judges it. */
static void add_referrers(struct tally_values *t, json_t *o)
{
    int64_t groups[REF_REFERRAL + 1] = {0};
    const char *key;
    json_t *val;
    json_object_foreach(o, key, val)
    {
        int64_t n = json_integer_value(val);
        if (n <= 0)
            continue;
        if (strcmp(key, "direct") == 0) {
            groups[REF_DIRECT] += n;
            continue;
        }
        char url[8 + DIM_MAX + 2] = "https://";
        size_t len = 8;
        for (const char *p = key; *p && len < sizeof(url) - 2;) {
            if (strncmp(p, "[dot]", 5) == 0) {
                url[len++] = '.';
                p += 5;
            } else {
                url[len++] = *p++;
            }
        }
        url[len++] = '/';
        url[len] = '\0';
        char host[DIM_MAX + 1];
        enum ref_group g;
        classify_referrer(url, len, NULL, host, &g);
        groups[g] += n;
        if (host[0]) {
            char *s = tv_add(t, DIM_REFERRER, n);
            memcpy(s, host, strlen(host) + 1);
        }
    }
    for (int g = REF_DIRECT; g <= REF_REFERRAL; g++) {
        if (groups[g]) {
            const char *name = ref_group_name((enum ref_group)g);
            memcpy(tv_add(t, DIM_REF_GROUP, groups[g]), name, strlen(name) + 1);
        }
    }
}

/* A row counts one hour: its clicks are that UTC hour's ("HH") and that
 * weekday's hour's ("D-HH", ISO weekday), as aggregate.c counts a click. */
static void add_hour(struct tally_values *t, int64_t at, int64_t clicks)
{
    if (clicks <= 0)
        return;
    int64_t day = at >= 0 ? at / 86400 : -((-at + 86399) / 86400);
    int hour = (int)((at - day * 86400) / 3600);
    int dow = (int)((day % 7 + 7 + 3) % 7) + 1; /* 1970-01-01 was a Thursday (4) */
    char *hh = tv_add(t, DIM_HOUR, clicks);
    hh[0] = (char)('0' + hour / 10);
    hh[1] = (char)('0' + hour % 10);
    hh[2] = '\0';
    char *dh = tv_add(t, DIM_DOWHOUR, clicks);
    dh[0] = (char)('0' + dow);
    dh[1] = '-';
    dh[2] = (char)('0' + hour / 10);
    dh[3] = (char)('0' + hour % 10);
    dh[4] = '\0';
}

struct visits {
    struct kutt *k;
    struct tally_values tv;
};

static int visit_row(void *arg, const char *const *c, int n)
{
    struct visits *vs = arg;
    struct kutt *k = vs->k;
    (void)n;
    progress(k);
    struct import_tally t = {0};
    int64_t id = 0;
    (void)dbsrc_int(c[V_ID], &id);
    t.where = (struct import_where){"visits", id};
    if (!c[V_ADDRESS]) {
        import_refuse(k->sink, t.where, "the visits row is of no link");
        return ERR_OK;
    }
    if (dbsrc_bool(c[V_SHADOWED])) {
        k->shadowed++;
        return ERR_OK;
    }
    if (!dbsrc_int(c[V_CREATED], &t.at)) {
        import_refuse(k->sink, t.where, "created_at '%s' is not a date",
                      c[V_CREATED_RAW] ? c[V_CREATED_RAW] : "NULL");
        return ERR_OK;
    }
    if (!dbsrc_int(c[V_TOTAL], &t.clicks) || t.clicks < 0) {
        import_refuse(k->sink, t.where, "total '%s' is not a count",
                      c[V_TOTAL] ? c[V_TOTAL] : "NULL");
        return ERR_OK;
    }
    vs->tv.n = 0;
    for (size_t i = 0; i < NCOUNTED; i++) {
        int64_t cnt;
        if (!dbsrc_int(c[V_COUNTED + i], &cnt) || cnt < 0) {
            import_refuse(k->sink, t.where, "%s '%s' is not a count", counted[i].column,
                          c[V_COUNTED + i] ? c[V_COUNTED + i] : "NULL");
            return ERR_OK;
        }
        if (cnt)
            memcpy(tv_add(&vs->tv, counted[i].dim, cnt), counted[i].value,
                   strlen(counted[i].value) + 1);
    }
    const char *why = NULL;
    json_t *countries = counts_object(c[V_COUNTRIES], &why);
    if (!countries) {
        import_refuse(k->sink, t.where, "countries %s", why);
        return ERR_OK;
    }
    json_t *referrers = counts_object(c[V_REFERRERS], &why);
    if (!referrers) {
        json_decref(countries);
        import_refuse(k->sink, t.where, "referrers %s", why);
        return ERR_OK;
    }
    add_hour(&vs->tv, t.at, t.clicks);
    add_countries(&vs->tv, countries);
    add_referrers(&vs->tv, referrers);
    json_decref(countries);
    json_decref(referrers);
    t.code = c[V_ADDRESS];
    t.domain = c[V_DOMAIN] && *c[V_DOMAIN] ? c[V_DOMAIN] : NULL;
    tv_finish(&vs->tv);
    t.values = vs->tv.v;
    t.nvalues = vs->tv.n;
    return import_tally(k->sink, &t);
}

static int count_row(void *arg, const char *const *c, int n)
{
    struct kutt *k = arg;
    int64_t total = 0;
    if (n > 0 && dbsrc_int(c[0], &total) && total > 0)
        k->total = (uint64_t)total;
    return ERR_OK;
}

int import_read_kutt(const char *source, struct import_sink *s)
{
    struct dbsrc *db = NULL;
    int rc = dbsrc_open(source, &db);
    if (rc != ERR_OK)
        return rc;
    bool pg = dbsrc_is_pg(db);
    struct kutt k = {.sink = s};
    struct visits vs = {.k = &k};
    rc = dbsrc_query(db, "links", COUNT_SQL, count_row, &k);
    if (rc == ERR_OK)
        rc = dbsrc_query(db, "links", pg ? LINKS_SQL(PG_EPOCH) : LINKS_SQL(SQ_EPOCH), link_row, &k);
    /* Every link before any tally of it (import.h): a second pass. */
    if (rc == ERR_OK)
        rc = dbsrc_query(db, "visits", pg ? VISITS_SQL(PG_EPOCH) : VISITS_SQL(SQ_EPOCH), visit_row,
                         &vs);
    if (rc == ERR_OK)
        import_progress(s, k.rows, k.total);
    /* The sink's summary has no line for them (it knows only codes). */
    if (rc == ERR_OK && k.shadowed)
        log_at(LOG_INFO,
               "import: %lld visits rows dropped: their links were refused, their address being an "
               "earlier link's (on another domain)",
               (long long)k.shadowed);
    free(vs.tv.v);
    free(vs.tv.text);
    dbsrc_close(db);
    return rc;
}
