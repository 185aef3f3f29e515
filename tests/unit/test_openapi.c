/* test_openapi.c - the OpenAPI document compiled into the binary
 * (web/openapi.json, served at /api/openapi.json) against the route table:
 * every route is in it under its method, and it has no operation that no
 * route serves. tests/e2e/openapi.test.mjs checks real answers against it. */
#include <ctype.h>
#include <string.h>

#include <jansson.h>

#include "api/dashboard.h"
#include "api/router.h"
#include "test.h"

#include "base/banned.h"

static const char *const methods[] = {"get",   "put",  "post",    "delete",
                                      "patch", "head", "options", "trace"};

/* "GET /api/links/:code" as the document names it: "get", "/api/links/{code}". */
static bool route_as_operation(const char *name, char *method, size_t mcap, char *path, size_t pcap)
{
    const char *sp = strchr(name, ' ');
    if (!sp || (size_t)(sp - name) >= mcap)
        return false;
    for (size_t i = 0; name + i < sp; i++)
        method[i] = (char)tolower((unsigned char)name[i]);
    method[sp - name] = '\0';
    size_t n = 0;
    for (const char *p = sp + 1; *p; p++) {
        bool param = *p == ':';
        if (param) {
            p++;
            size_t len = strcspn(p, "/");
            if (!len || n + len + 3 > pcap)
                return false;
            path[n++] = '{';
            memcpy(path + n, p, len);
            n += len;
            path[n++] = '}';
            p += len - 1;
        } else {
            if (n + 2 > pcap)
                return false;
            path[n++] = *p;
        }
    }
    path[n] = '\0';
    return true;
}

/* Whether the route table has METHOD PATH (the document's spelling). */
static bool routed(const char *method, const char *path)
{
    int n;
    const char *const *names = router_route_names(&n);
    for (int i = ROUTE_ID_REDIRECT + 1; i < n; i++) {
        char m[16], p[256];
        if (route_as_operation(names[i], m, sizeof(m), p, sizeof(p)) && !strcmp(m, method) &&
            !strcmp(p, path))
            return true;
    }
    return false;
}

void test_openapi_routes(void)
{
    const struct web_asset *a = dashboard_asset(SLICE_LIT("openapi.json"));
    if (!CHECK(a != NULL))
        return;
    json_error_t err;
    json_t *doc = json_loadb(a->data, a->len, JSON_REJECT_DUPLICATES, &err);
    if (!CHECK(doc != NULL)) {
        test_note("web/openapi.json: %s (line %d)", err.text, err.line);
        return;
    }
    CHECK_EQ_STR(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
    json_t *paths = json_object_get(doc, "paths");
    CHECK(json_is_object(paths));

    /* Every route of the table is documented... */
    int n;
    const char *const *names = router_route_names(&n);
    for (int i = ROUTE_ID_REDIRECT + 1; i < n; i++) {
        char m[16], p[256];
        if (!CHECK(route_as_operation(names[i], m, sizeof(m), p, sizeof(p))))
            continue;
        json_t *op = json_object_get(json_object_get(paths, p), m);
        if (!CHECK(json_is_object(op) && json_is_object(json_object_get(op, "responses"))))
            test_note("route '%s' is not in web/openapi.json as paths[\"%s\"].%s", names[i], p, m);
    }
    /* ... and nothing else is. */
    const char *path;
    json_t *item;
    json_object_foreach(paths, path, item)
    {
        bool any = false;
        for (size_t k = 0; k < sizeof(methods) / sizeof(methods[0]); k++) {
            if (!json_object_get(item, methods[k]))
                continue;
            any = true;
            if (!CHECK(routed(methods[k], path)))
                test_note("web/openapi.json has %s %s, which no route serves", methods[k], path);
        }
        if (!CHECK(any))
            test_note("web/openapi.json: %s has no operation", path);
    }
    json_decref(doc);
}
