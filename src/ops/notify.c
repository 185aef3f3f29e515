/* notify.c - e-mail and webhook channels (notify.h), through libcurl: it
 * speaks SMTP with STARTTLS and authentication, and HTTPS, which no small
 * hand-written client should. */
#include "ops/notify.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/config.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/log.h"
#include "base/banned.h"

#define CONNECT_TIMEOUT_S 5L
#define SEND_TIMEOUT_S 10L
#define PASSWORD_MAX 512

struct notify {
    char *smtp_url; /* smtp://HOST:PORT */
    bool starttls;
    char *from;
    struct curl_slist *rcpt;
    char *to_header; /* the recipients as the To: line lists them */
    char *user;
    char password[PASSWORD_MAX]; /* "" when none; wiped in notify_free */
    char *webhook_url;
    bool slack;
    int channels;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

static char *dup_or_null(const char *s) { return s && *s ? xstrdup(s) : NULL; }

/* The password: SHORTD_SMTP_PASSWORD, else the first line of the file. */
static int read_password(const struct config *cfg, char *out, char *err, size_t errlen)
{
    out[0] = '\0';
    const char *env = getenv("SHORTD_SMTP_PASSWORD");
    if (env && *env) {
        if (strlen(env) >= PASSWORD_MAX) {
            snprintf(err, errlen, "SHORTD_SMTP_PASSWORD is longer than %d bytes", PASSWORD_MAX - 1);
            return ERR_INVALID;
        }
        snprintf(out, PASSWORD_MAX, "%s", env);
        return ERR_OK;
    }
    if (!cfg->smtp_password_file)
        return ERR_OK;
    FILE *f = fopen(cfg->smtp_password_file, "r");
    if (!f) {
        snprintf(err, errlen, "smtp-password-file '%s': cannot open it (%s)",
                 cfg->smtp_password_file, strerror(errno));
        return ERR_INVALID;
    }
    bool ok = fgets(out, PASSWORD_MAX, f) != NULL;
    fclose(f);
    if (!ok) {
        snprintf(err, errlen, "smtp-password-file '%s' is empty", cfg->smtp_password_file);
        return ERR_INVALID;
    }
    out[strcspn(out, "\r\n")] = '\0';
    return ERR_OK;
}

int notify_new(const struct config *cfg, struct notify **out, char *err, size_t errlen)
{
    *out = NULL;
    pthread_once(&curl_once, curl_init);
    struct notify *n = calloc(1, sizeof(*n));
    if (!n)
        abort();
    int rc = ERR_INVALID;
    if (cfg->webhook_format && strcmp(cfg->webhook_format, "alertmanager") != 0 &&
        strcmp(cfg->webhook_format, "slack") != 0) {
        snprintf(err, errlen, "webhook-format '%s' is neither alertmanager nor slack",
                 cfg->webhook_format);
        goto out;
    }
    if (cfg->webhook_url && *cfg->webhook_url) {
        if (strncmp(cfg->webhook_url, "http://", 7) != 0 &&
            strncmp(cfg->webhook_url, "https://", 8) != 0) {
            snprintf(err, errlen, "webhook-url must start with http:// or https://");
            goto out;
        }
        n->webhook_url = xstrdup(cfg->webhook_url);
        n->slack = cfg->webhook_format && !strcmp(cfg->webhook_format, "slack");
        n->channels++;
    }
    if (cfg->smtp_host && *cfg->smtp_host) {
        if (!cfg->smtp_from || !*cfg->smtp_from || !cfg->smtp_to || !*cfg->smtp_to) {
            snprintf(err, errlen, "smtp-host is set: smtp-from and smtp-to must be too");
            goto out;
        }
        struct buf u = BUF_INIT;
        buf_printf(&u, "smtp://%s:%lld", cfg->smtp_host, (long long)cfg->smtp_port);
        n->smtp_url = buf_detach(&u, NULL);
        n->starttls = cfg->smtp_starttls != 0;
        n->from = xstrdup(cfg->smtp_from);
        n->to_header = xstrdup(cfg->smtp_to);
        /* Recipients: comma separated, spaces around ignored. */
        const char *p = cfg->smtp_to;
        while (*p) {
            p += strspn(p, " ,");
            size_t len = strcspn(p, ",");
            while (len && p[len - 1] == ' ')
                len--;
            if (len) {
                char addr[320];
                snprintf(addr, sizeof(addr), "<%.*s>", (int)len, p);
                n->rcpt = curl_slist_append(n->rcpt, addr);
            }
            p += strcspn(p, ",");
        }
        if (!n->rcpt) {
            snprintf(err, errlen, "smtp-to names no recipient");
            goto out;
        }
        n->user = dup_or_null(cfg->smtp_user);
        if (read_password(cfg, n->password, err, errlen) != ERR_OK)
            goto out;
        n->channels++;
    }
    *out = n;
    n = NULL;
    rc = ERR_OK;
out:
    notify_free(n);
    return rc;
}

void notify_free(struct notify *n)
{
    if (!n)
        return;
    sodium_memzero(n->password, sizeof(n->password));
    free(n->smtp_url);
    free(n->from);
    free(n->to_header);
    free(n->user);
    free(n->webhook_url);
    curl_slist_free_all(n->rcpt);
    free(n);
}

int notify_channels(const struct notify *n) { return n ? n->channels : 0; }

/* ---- SMTP ---- */

struct reader {
    const char *p;
    size_t left;
};

static size_t read_cb(char *dst, size_t size, size_t nmemb, void *arg)
{
    struct reader *r = arg;
    size_t n = size * nmemb < r->left ? size * nmemb : r->left;
    memcpy(dst, r->p, n);
    r->p += n;
    r->left -= n;
    return n;
}

static size_t discard_cb(char *p, size_t size, size_t nmemb, void *arg)
{
    (void)p;
    (void)arg;
    return size * nmemb;
}

/* The message as RFC 5322 text: headers, then the body with CRLF line ends
 * and a dot at the start of a line doubled (curl does that too, but a lone
 * "." must never end the data early). */
static void mail_text(const struct notify *n, const struct alert_message *m, int64_t now,
                      struct buf *out)
{
    char date[64];
    time_t t = (time_t)(now / 1000);
    struct tm u;
    gmtime_r(&t, &u);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S +0000", &u);
    uint8_t rnd[12];
    randombytes_buf(rnd, sizeof(rnd));
    char id[25];
    sodium_bin2hex(id, sizeof(id), rnd, sizeof(rnd));
    const char *at = strchr(n->from, '@');
    buf_printf(out,
               "Date: %s\r\nFrom: %s\r\nTo: %s\r\nSubject: %s\r\nMessage-ID: <%s%s>\r\n"
               "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n"
               "Content-Transfer-Encoding: 8bit\r\n\r\n",
               date, n->from, n->to_header, m->subject.p ? m->subject.p : "", id,
               at ? at : "@shortd");
    const char *p = m->text.p ? m->text.p : "";
    while (*p) {
        size_t len = strcspn(p, "\n");
        if (*p == '.')
            buf_addc(out, '.');
        buf_add(out, p, len);
        buf_adds(out, "\r\n");
        p += len;
        if (*p == '\n')
            p++;
    }
}

static int send_mail(struct notify *n, const struct alert_message *m, int64_t now)
{
    CURL *c = curl_easy_init();
    if (!c)
        return log_fail(ERR_IO, "alert e-mail not sent: cannot start a transfer");
    struct buf text = BUF_INIT;
    mail_text(n, m, now, &text);
    struct reader rd = {text.p, text.len};
    char from[320];
    snprintf(from, sizeof(from), "<%s>", n->from);
    curl_easy_setopt(c, CURLOPT_URL, n->smtp_url);
    curl_easy_setopt(c, CURLOPT_USE_SSL,
                     n->starttls ? (long)CURLUSESSL_ALL : (long)CURLUSESSL_NONE);
    curl_easy_setopt(c, CURLOPT_MAIL_FROM, from);
    curl_easy_setopt(c, CURLOPT_MAIL_RCPT, n->rcpt);
    if (n->user) {
        curl_easy_setopt(c, CURLOPT_USERNAME, n->user);
        curl_easy_setopt(c, CURLOPT_PASSWORD, n->password);
    }
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_cb);
    curl_easy_setopt(c, CURLOPT_READDATA, &rd);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, SEND_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode cc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    buf_release(&text);
    if (cc != CURLE_OK)
        return log_fail(ERR_IO,
                        "alert e-mail not sent: the mail server refused or failed "
                        "(curl code %d, SMTP reply %ld)",
                        (int)cc, code);
    return ERR_OK;
}

/* ---- webhook ---- */

static int send_webhook(struct notify *n, const struct alert_message *m,
                        const struct alert_decision *d, const char *node, int64_t now)
{
    json_t *body = n->slack ? alert_message_slack(m) : alert_message_alertmanager(m, d, node, now);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    CURL *c = curl_easy_init();
    if (!c || !text) {
        free(text);
        if (c)
            curl_easy_cleanup(c);
        return log_fail(ERR_IO, "alert webhook not sent: cannot start a transfer");
    }
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, n->webhook_url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_cb);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, SEND_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    free(text);
    if (cc != CURLE_OK)
        return log_fail(ERR_IO, "alert webhook not sent: no answer (curl code %d)", (int)cc);
    if (status < 200 || status > 299)
        return log_fail(ERR_IO, "alert webhook not sent: it answered HTTP %ld", status);
    return ERR_OK;
}

int notify_send(struct notify *n, const struct alert_message *m, const struct alert_decision *d,
                const char *node, int64_t now)
{
    if (!n || !n->channels)
        return ERR_OK;
    int ok = 0;
    if (n->smtp_url && send_mail(n, m, now) == ERR_OK)
        ok++;
    if (n->webhook_url && send_webhook(n, m, d, node, now) == ERR_OK)
        ok++;
    return ok ? ERR_OK : ERR_IO;
}
