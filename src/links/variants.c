/* variants.c - A/B destinations: parsing, the stored form, and the choice.
 *
 * The choice must keep a visitor on one variant without storing anything
 * about them, and must not let anyone predict or steer the split: a keyed
 * BLAKE2b of (address, user agent) under a key of the link's own gives 64
 * uniform bits; multiplying by the total weight and keeping the high 64 bits
 * maps them onto [0, total) with a bias below total / 2^64, and the running
 * sum of the weights finds the variant. A new key reshuffles who sees what. */
#include "links/variants.h"

#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/banned.h"

static int fail(struct variants *out, char *err, size_t errn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct variants *out, char *err, size_t errn, const char *fmt, ...)
{
    variants_release(out);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errn, fmt, ap);
    va_end(ap);
    return ERR_INVALID;
}

/* The weight member: absent or null is 1. */
static bool read_weight(const json_t *item, unsigned *w)
{
    json_t *v = json_object_get(item, "weight");
    if (!v || json_is_null(v)) {
        *w = 1;
        return true;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 1 ||
        json_integer_value(v) > VARIANT_WEIGHT_MAX)
        return false;
    *w = (unsigned)json_integer_value(v);
    return true;
}

int variants_parse(const json_t *arr, const struct urlcheck_opts *uo, struct variants *out,
                   char *err, size_t errn)
{
    memset(out, 0, sizeof(*out));
    if (!json_is_array(arr) || json_array_size(arr) < 2 || json_array_size(arr) > VARIANTS_MAX)
        return fail(out, err, errn,
                    "variants must be an array of 2 to %d objects {\"url\", \"weight\"}",
                    VARIANTS_MAX);
    struct buf norm = BUF_INIT, host = BUF_INIT;
    size_t i;
    json_t *item;
    json_array_foreach((json_t *)arr, i, item)
    {
        if (!json_is_object(item))
            return fail(out, err, errn, "variants[%zu] must be an object {\"url\", \"weight\"}", i);
        const char *key;
        json_t *m;
        json_object_foreach(item, key, m)
        {
            if (strcmp(key, "url") != 0 && strcmp(key, "weight") != 0)
                return fail(out, err, errn,
                            "variants[%zu] has an unknown field (only url and "
                            "weight)",
                            i);
        }
        json_t *url = json_object_get(item, "url");
        if (!url || json_is_null(url))
            return fail(out, err, errn, "variants[%zu].url is required", i);
        if (!json_is_string(url))
            return fail(out, err, errn, "variants[%zu].url must be a string", i);
        const char *why = NULL;
        int rc = urlcheck(json_string_value(url), json_string_length(url), uo, &norm, &host, &why);
        if (rc != ERR_OK) {
            buf_release(&norm);
            buf_release(&host);
            return fail(out, err, errn, "variants[%zu].url %s", i,
                        why ? why : "is not a valid URL");
        }
        struct variant *v = &out->v[out->n++];
        v->url = buf_detach(&norm, NULL);
        v->host = buf_detach(&host, NULL);
        if (!read_weight(item, &v->weight))
            return fail(out, err, errn, "variants[%zu].weight must be an integer from 1 to %d", i,
                        VARIANT_WEIGHT_MAX);
    }
    return ERR_OK;
}

json_t *variants_to_json(const struct variants *v)
{
    json_t *a = json_array();
    for (int i = 0; i < v->n; i++)
        json_array_append_new(a, json_pack("{s:s,s:I}", "url", v->v[i].url, "weight",
                                           (json_int_t)v->v[i].weight));
    return a;
}

int variants_from_text(const char *json_text, struct variants *out)
{
    memset(out, 0, sizeof(*out));
    json_t *a = json_loads(json_text, 0, NULL);
    int rc = ERR_INVALID;
    if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > VARIANTS_MAX)
        goto out;
    size_t i;
    json_t *item;
    json_array_foreach(a, i, item)
    {
        json_t *url = json_object_get(item, "url");
        struct variant *v = &out->v[out->n];
        if (!json_is_string(url) || !json_string_length(url) || !read_weight(item, &v->weight))
            goto out;
        v->url = xstrdup(json_string_value(url));
        out->n++;
    }
    rc = ERR_OK;
out:
    if (rc != ERR_OK)
        variants_release(out);
    json_decref(a);
    return rc;
}

void variants_release(struct variants *v)
{
    for (int i = 0; i < v->n; i++) {
        free(v->v[i].url);
        free(v->v[i].host);
    }
    memset(v, 0, sizeof(*v));
}

int variants_pick(const struct variants *v, const uint8_t key[32], const void *addr, size_t an,
                  const char *ua, size_t un)
{
    uint64_t total = 0;
    for (int i = 0; i < v->n; i++)
        total += v->v[i].weight;
    if (v->n <= 1 || total == 0)
        return 0;
    crypto_generichash_state st;
    uint8_t h[16];
    crypto_generichash_init(&st, key, 32, sizeof(h));
    crypto_generichash_update(&st, addr, an);
    crypto_generichash_update(&st, (const unsigned char *)"", 1);
    crypto_generichash_update(&st, (const unsigned char *)ua, un);
    crypto_generichash_final(&st, h, sizeof(h));
    uint64_t x = 0;
    for (int i = 0; i < 8; i++)
        x = x << 8 | h[i];
    uint64_t r = (uint64_t)(((unsigned __int128)x * total) >> 64);
    for (int i = 0; i < v->n; i++) {
        if (r < v->v[i].weight)
            return i;
        r -= v->v[i].weight;
    }
    return v->n - 1; /* not reached: r < total */
}
