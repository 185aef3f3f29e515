/* http.c - reading a request and writing its answer: the helpers handlers
 * use, independent of how the server moves bytes. */
#include "http/http.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/jsonout.h"

#include "base/banned.h"

struct slice http_header(const struct request *r, const char *name)
{
    for (int i = 0; i < r->nheaders; i++)
        if (slice_ieq(r->headers[i].name, name))
            return r->headers[i].value;
    return (struct slice){NULL, 0};
}

bool http_query_param(const struct request *r, const char *name, struct slice *value)
{
    size_t n = strlen(name);
    const char *p = r->query.p, *end = r->query.p + r->query.n;
    while (p && p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(stop - p));
        const char *kend = eq ? eq : stop;
        if ((size_t)(kend - p) == n && memcmp(p, name, n) == 0) {
            value->p = eq ? eq + 1 : stop;
            value->n = (size_t)(stop - value->p);
            return true;
        }
        p = amp ? amp + 1 : NULL;
    }
    return false;
}

void http_add_header(struct request *r, const char *name, const char *value, size_t n)
{
    buf_adds(&r->resp_headers, name);
    buf_add(&r->resp_headers, ": ", 2);
    buf_add(&r->resp_headers, value, n);
    buf_add(&r->resp_headers, "\r\n", 2);
}

int http_body(struct request *r, int status, const char *content_type, const char *body, size_t n)
{
    r->content_type = content_type;
    buf_reset(&r->resp_body);
    buf_add(&r->resp_body, body, n);
    return status;
}

int http_json(struct request *r, int status, json_t *doc)
{
    buf_reset(&r->resp_body);
    jsonout(&r->resp_body, doc);
    json_decref(doc);
    r->content_type = "application/json";
    return status;
}

int http_error(struct request *r, int status, const char *code, const char *field, const char *fmt,
               ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *doc =
        json_pack("{s:{s:s,s:s,s:s?}}", "error", "code", code, "message", msg, "field", field);
    if (!doc) /* the message was not valid UTF-8: say less */
        doc = json_pack("{s:{s:s,s:s,s:n}}", "error", "code", code, "message", "invalid input",
                        "field");
    return http_json(r, status, doc);
}

int http_unavailable(struct request *r, const char *message)
{
    http_add_header(r, "Retry-After", "1", 1);
    return http_error(r, 503, "unavailable", NULL, "%s",
                      message ? message : "the store is unavailable; try again");
}

int http_unavailable_text(struct request *r)
{
    static const char msg[] = "Service Unavailable: try again\n";
    http_add_header(r, "Retry-After", "1", 1);
    http_add_header(r, "Cache-Control", "no-store", 8);
    return http_body(r, 503, "text/plain; charset=utf-8", msg, sizeof(msg) - 1);
}

const char *http_reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}
