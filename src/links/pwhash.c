/* pwhash.c - Argon2id password hashes for protected links.
 *
 * DESIGN
 * One hash costs tens of milliseconds and 19 MiB, far too long for an event
 * loop that answers redirects in microseconds, so the server only uses the
 * _async forms: the work (with its own copy of the password) goes to libuv's
 * thread pool, and the callback comes back on the loop thread that asked.
 * The pool has UV_THREADPOOL_SIZE threads (4 by default), which also bounds
 * the memory that hashing can take at once; a burst of attempts waits in the
 * pool's queue, which is why attempts are rate limited before they get here.
 * The copy is wiped with sodium_memzero before it is freed, on the loop
 * thread, whether the work ran or was cancelled.
 *
 * Imported links (Kutt's) keep the bcrypt hashes their source made, so that
 * their passwords go on working: a stored "$2a$", "$2b$" or "$2y$" string is
 * checked through libxcrypt's crypt_r, which implements bcrypt. New hashes
 * are always Argon2id, and a bcrypt hash always "needs a rehash". */
#include "links/pwhash.h"

#include <crypt.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/banned.h"

_Static_assert(PWHASH_MAX >= crypto_pwhash_STRBYTES, "PWHASH_MAX too small for libsodium");

/* Length of the valid UTF-8 sequence at s[0..n), or 0 (overlong forms,
 * surrogates and code points past U+10FFFF are not valid). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return 1;
    size_t len;
    unsigned cp;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        len = 2;
        cp = s[0] & 0x1f;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        len = 3;
        cp = s[0] & 0x0f;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        len = 4;
        cp = s[0] & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

int pwhash_valid(const char *pw, size_t n, const char **why)
{
    if (n < 1 || n > PWHASH_PW_MAX) {
        *why = "must be 1 to 128 bytes";
        return ERR_INVALID;
    }
    const unsigned char *s = (const unsigned char *)pw;
    for (size_t i = 0; i < n;) {
        if (s[i] == 0) {
            *why = "must not contain NUL characters";
            return ERR_INVALID;
        }
        size_t len = utf8_seq(s + i, n - i);
        if (!len) {
            *why = "must be valid UTF-8";
            return ERR_INVALID;
        }
        i += len;
    }
    return ERR_OK;
}

int pwhash_make(const char *pw, size_t n, char out[PWHASH_MAX])
{
    if (crypto_pwhash_str_alg(out, pw, n, PWHASH_OPSLIMIT, PWHASH_MEMLIMIT,
                              crypto_pwhash_ALG_ARGON2ID13) != 0)
        return ERR_NOMEM;
    return ERR_OK;
}

bool pwhash_is_bcrypt(const char *stored)
{
    return stored && stored[0] == '$' && stored[1] == '2' &&
           (stored[2] == 'a' || stored[2] == 'b' || stored[2] == 'y') && stored[3] == '$';
}

/* crypt_r wants a NUL-terminated password, so one with a NUL in it can never
 * match (it would be cut short there); its state (struct crypt_data, tens of
 * kilobytes) is on the heap, not on a thread pool thread's stack, and wiped. */
static bool bcrypt_check(const char *stored, const char *pw, size_t n)
{
    if (n > PWHASH_PW_MAX || memchr(pw, '\0', n))
        return false;
    struct crypt_data *cd = calloc(1, sizeof(*cd));
    char *z = malloc(n + 1);
    if (!cd || !z)
        abort();
    memcpy(z, pw, n);
    z[n] = '\0';
    const char *out = crypt_r(z, stored, cd);
    size_t len = strlen(stored);
    /* crypt_r answers a string starting with '*' (or NULL) when 'stored' is
     * not a hash it can use; a valid answer is the whole hash again. */
    bool ok = out && out[0] != '*' && strlen(out) == len && sodium_memcmp(out, stored, len) == 0;
    sodium_memzero(z, n + 1);
    sodium_memzero(cd, sizeof(*cd));
    free(z);
    free(cd);
    return ok;
}

bool pwhash_check(const char *stored, const char *pw, size_t n)
{
    if (!stored || !memchr(stored, '\0', PWHASH_MAX))
        return false;
    if (pwhash_is_bcrypt(stored))
        return bcrypt_check(stored, pw, n);
    return crypto_pwhash_str_verify(stored, pw, n) == 0;
}

bool pwhash_needs_rehash(const char *stored)
{
    if (pwhash_is_bcrypt(stored))
        return true;
    return crypto_pwhash_str_needs_rehash(stored, PWHASH_OPSLIMIT, PWHASH_MEMLIMIT) != 0;
}

/* ---- on the thread pool ---- */

struct pw_work {
    uv_work_t req;
    char *pw; /* the copy, wiped before it is freed */
    size_t n;
    char hash[PWHASH_MAX]; /* make: the result; check: the stored hash */
    int rc;                /* make */
    bool ok;               /* check */
    void (*made)(int rc, const char *hash, void *arg);
    void (*checked)(bool ok, void *arg);
    void *arg;
};

static struct pw_work *work_new(const char *pw, size_t n)
{
    struct pw_work *w = calloc(1, sizeof(*w));
    if (!w)
        abort();
    w->pw = malloc(n ? n : 1);
    if (!w->pw)
        abort();
    memcpy(w->pw, pw, n);
    w->n = n;
    return w;
}

static void work_free(struct pw_work *w)
{
    sodium_memzero(w->pw, w->n);
    free(w->pw);
    sodium_memzero(w, sizeof(*w));
    free(w);
}

static void make_work(uv_work_t *req)
{
    struct pw_work *w = req->data;
    w->rc = pwhash_make(w->pw, w->n, w->hash);
}

static void make_after(uv_work_t *req, int status)
{
    struct pw_work *w = req->data;
    int rc = status == 0 ? w->rc : ERR_BUSY;
    w->made(rc, rc == ERR_OK ? w->hash : NULL, w->arg);
    work_free(w);
}

static void check_work(uv_work_t *req)
{
    struct pw_work *w = req->data;
    w->ok = pwhash_check(w->hash, w->pw, w->n);
}

static void check_after(uv_work_t *req, int status)
{
    struct pw_work *w = req->data;
    w->checked(status == 0 && w->ok, w->arg);
    work_free(w);
}

int pwhash_make_async(uv_loop_t *loop, const char *pw, size_t n,
                      void (*done)(int rc, const char *hash, void *arg), void *arg)
{
    struct pw_work *w = work_new(pw, n);
    w->made = done;
    w->arg = arg;
    w->req.data = w;
    if (uv_queue_work(loop, &w->req, make_work, make_after) != 0) {
        work_free(w);
        return ERR_BUSY;
    }
    return ERR_OK;
}

int pwhash_check_async(uv_loop_t *loop, const char *stored, const char *pw, size_t n,
                       void (*done)(bool ok, void *arg), void *arg)
{
    struct pw_work *w = work_new(pw, n);
    /* A stored hash too long to be ours can never match: keep it invalid. */
    if (stored && strlen(stored) < sizeof(w->hash))
        memcpy(w->hash, stored, strlen(stored) + 1);
    w->checked = done;
    w->arg = arg;
    w->req.data = w;
    if (uv_queue_work(loop, &w->req, check_work, check_after) != 0) {
        work_free(w);
        return ERR_BUSY;
    }
    return ERR_OK;
}
