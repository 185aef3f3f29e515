/* opscheck.c - `shortd ops check` (opscheck.h): one GET through libcurl,
 * then the report printed one check a line. */
#include "ops/opscheck.h"

#include <curl/curl.h>
#include <jansson.h>
#include <string.h>

#include "base/buf.h"
#include "ops/checks.h"
#include "base/banned.h"

#define TIMEOUT_S 20L

static size_t collect(char *p, size_t size, size_t nmemb, void *arg)
{
    buf_add(arg, p, size * nmemb);
    return size * nmemb;
}

int opscheck_run(const char *base_url, const char *key, bool json, FILE *out, FILE *err)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct buf url = BUF_INIT, auth = BUF_INIT, body = BUF_INIT;
    buf_printf(&url, "%s/api/ops/health", base_url);
    buf_printf(&auth, "Authorization: Bearer %s", key);
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, auth.p);
    curl_easy_setopt(c, CURLOPT_URL, url.p);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    int rc = 2;
    json_t *j = NULL;
    if (cc != CURLE_OK) {
        fprintf(err, "shortd: the node at %s does not answer (%s)\n", base_url,
                curl_easy_strerror(cc));
        goto out;
    }
    if (status == 401 || status == 403) {
        fprintf(err,
                "shortd: the node refused the key (HTTP %ld): give SHORTD_OPS_KEY a key of "
                "the ops scope ('shortd key create --scopes ops')\n",
                status);
        goto out;
    }
    j = json_loadb(body.p ? body.p : "", body.len, 0, NULL);
    const char *worst = json_string_value(json_object_get(j, "status"));
    enum check_state ws;
    if (status != 200 || !worst || !check_state_parse(worst, &ws)) {
        fprintf(err, "shortd: the node answered HTTP %ld without a report\n", status);
        goto out;
    }
    rc = checks_exit_status(ws);
    if (json) {
        json_dumpf(j, out, JSON_INDENT(2));
        fputc('\n', out);
        goto out;
    }
    fprintf(out, "node %s, checked %s: %s\n", json_string_value(json_object_get(j, "node")),
            json_string_value(json_object_get(j, "checked_at")), worst);
    size_t i;
    json_t *ch;
    json_array_foreach(json_object_get(j, "checks"), i, ch)
    {
        fprintf(out, "%-8s %-13s %s (since %s)\n", json_string_value(json_object_get(ch, "state")),
                json_string_value(json_object_get(ch, "code")),
                json_string_value(json_object_get(ch, "measured")),
                json_string_value(json_object_get(ch, "since")));
    }
out:
    json_decref(j);
    buf_release(&url);
    buf_release(&auth);
    buf_release(&body);
    curl_global_cleanup();
    return rc;
}
