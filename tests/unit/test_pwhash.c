/* test_pwhash.c - link passwords: the API's rule for a new one, Argon2id
 * hashes with the stated cost made and checked synchronously, and the same
 * on libuv's thread pool with a real loop, the callbacks on the loop's
 * thread and the caller's password buffer free to go at once. */
#include <crypt.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "base/err.h"
#include "links/pwhash.h"
#include "test.h"

#include "base/banned.h"

#define PW(s) s, sizeof(s) - 1

void test_pwhash_valid(void)
{
    static const struct {
        const char *pw;
        size_t n;
        const char *why; /* NULL: valid */
    } cases[] = {
        {PW("a"), NULL},
        {PW("correct horse battery staple"), NULL},
        {PW("p\xc3\xa4ssw\xc3\xb6rd \xe2\x82\xac \xf0\x9f\x94\x91"), NULL},
        {PW("tab\there"), NULL},
        {PW(""), "must be 1 to 128 bytes"},
        {PW("a\0b"), "must not contain NUL characters"},
        {PW("\xff"), "must be valid UTF-8"},
        {PW("ab\xc3"), "must be valid UTF-8"},           /* cut short */
        {PW("\xc0\xaf"), "must be valid UTF-8"},         /* overlong '/' */
        {PW("\xe0\x80\xaf"), "must be valid UTF-8"},     /* overlong */
        {PW("\xed\xa0\x80"), "must be valid UTF-8"},     /* a surrogate */
        {PW("\xf4\x90\x80\x80"), "must be valid UTF-8"}, /* past U+10FFFF */
        {PW("\x80x"), "must be valid UTF-8"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *why = NULL;
        int rc = pwhash_valid(cases[i].pw, cases[i].n, &why);
        bool ok = cases[i].why ? CHECK_EQ_INT(rc, ERR_INVALID) && CHECK_EQ_STR(why, cases[i].why)
                               : CHECK_EQ_INT(rc, ERR_OK);
        if (!ok)
            test_note("case %zu", i);
    }
    /* 128 bytes (a 4-byte character at the very end) is the limit */
    char pw[PWHASH_PW_MAX + 1];
    memset(pw, 'x', sizeof(pw));
    memcpy(pw + PWHASH_PW_MAX - 4, "\xf0\x9f\x94\x91", 4);
    const char *why = NULL;
    CHECK_EQ_INT(pwhash_valid(pw, PWHASH_PW_MAX, &why), ERR_OK);
    CHECK_EQ_INT(pwhash_valid(pw, PWHASH_PW_MAX + 1, &why), ERR_INVALID);
    CHECK_EQ_STR(why, "must be 1 to 128 bytes");
}

void test_pwhash_sync(void)
{
    char h[PWHASH_MAX], h2[PWHASH_MAX];
    CHECK_EQ_INT(pwhash_make(PW("s3cret pw"), h), ERR_OK);
    /* Argon2id with the stated cost: 19 MiB, 2 passes, one lane */
    CHECK(strncmp(h, "$argon2id$v=19$m=19456,t=2,p=1$", 31) == 0);
    CHECK(strlen(h) < PWHASH_MAX);
    CHECK(!pwhash_needs_rehash(h));
    CHECK(pwhash_check(h, PW("s3cret pw")));
    CHECK(!pwhash_check(h, PW("s3cret pW")));
    CHECK(!pwhash_check(h, PW("s3cret pw ")));
    CHECK(!pwhash_check(h, PW("s3cret")));
    CHECK(!pwhash_check(h, PW("")));
    /* The length counts, not a NUL */
    CHECK(!pwhash_check(h, "s3cret pw\0x", 11));
    /* Salted: the same password hashes differently, both check */
    CHECK_EQ_INT(pwhash_make(PW("s3cret pw"), h2), ERR_OK);
    CHECK(strcmp(h, h2) != 0);
    CHECK(pwhash_check(h2, PW("s3cret pw")));
    /* Malformed or foreign stored strings never match */
    CHECK(!pwhash_check("", PW("s3cret pw")));
    CHECK(!pwhash_check("s3cret pw", PW("s3cret pw")));
    CHECK(!pwhash_check(NULL, PW("s3cret pw")));
    h2[strlen(h2) - 2] ^= 1;
    CHECK(!pwhash_check(h2, PW("s3cret pw")));
    /* A weaker (older) setting still checks, and asks for a rehash */
    char weak[crypto_pwhash_STRBYTES];
    CHECK_EQ_INT(crypto_pwhash_str_alg(weak, PW("old"), 1, 8192, crypto_pwhash_ALG_ARGON2ID13), 0);
    CHECK(pwhash_check(weak, PW("old")));
    CHECK(pwhash_needs_rehash(weak));
}

/* bcrypt hashes, as Kutt keeps them (imported links): made here by crypt_r
 * with each prefix, and one published test vector of crypt_blowfish, so a
 * hash from another implementation checks too. */
void test_pwhash_bcrypt(void)
{
    static const char *const prefixes[] = {"$2b$", "$2a$", "$2y$"};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        char salt[CRYPT_GENSALT_OUTPUT_SIZE];
        struct crypt_data cd;
        memset(&cd, 0, sizeof(cd));
        if (!CHECK(crypt_gensalt_rn(prefixes[i], 4, NULL, 0, salt, sizeof(salt)) != NULL))
            return;
        const char *made = crypt_r("kutt pass", salt, &cd);
        if (!CHECK(made && made[0] == '$'))
            return;
        char h[PWHASH_MAX];
        if (!CHECK(strlen(made) < sizeof(h)))
            return;
        memcpy(h, made, strlen(made) + 1);
        CHECK(strncmp(h, prefixes[i], 4) == 0);
        CHECK(pwhash_is_bcrypt(h));
        CHECK(pwhash_check(h, PW("kutt pass")));
        CHECK(!pwhash_check(h, PW("kutt Pass")));
        CHECK(!pwhash_check(h, PW("kutt pas")));
        CHECK(!pwhash_check(h, PW("")));
        CHECK(!pwhash_check(h, "kutt pass\0x", 11));
        /* always moved to Argon2id when it can be */
        CHECK(pwhash_needs_rehash(h));
        h[strlen(h) - 3] ^= 1;
        CHECK(!pwhash_check(h, PW("kutt pass")));
    }
    static const char vector[] = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW";
    CHECK(pwhash_check(vector, PW("U*U")));
    CHECK(!pwhash_check(vector, PW("U*V")));
    /* Malformed bcrypt strings never match */
    CHECK(!pwhash_check("$2b$", PW("")));
    CHECK(!pwhash_check("$2b$04$short", PW("x")));
    CHECK(!pwhash_check("$2x$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW", PW("U*U")));
    CHECK(!pwhash_is_bcrypt("$argon2id$v=19$"));
    CHECK(!pwhash_is_bcrypt(NULL));
}

struct async_state {
    uv_thread_t loop_thread;
    int made, checked;
    bool made_on_loop, checked_on_loop;
    int rc;
    char hash[PWHASH_MAX];
    bool ok[3];
};

static void made(int rc, const char *hash, void *arg)
{
    struct async_state *s = arg;
    uv_thread_t self = uv_thread_self();
    s->made_on_loop = uv_thread_equal(&self, &s->loop_thread);
    s->made++;
    s->rc = rc;
    if (rc == ERR_OK && hash)
        snprintf(s->hash, sizeof(s->hash), "%s", hash);
}

struct check_ctx {
    struct async_state *s;
    int i;
};

static void checked(bool ok, void *arg)
{
    struct check_ctx *c = arg;
    uv_thread_t self = uv_thread_self();
    c->s->checked_on_loop = uv_thread_equal(&self, &c->s->loop_thread);
    c->s->checked++;
    c->s->ok[c->i] = ok;
}

void test_pwhash_async(void)
{
    uv_loop_t loop;
    CHECK_EQ_INT(uv_loop_init(&loop), 0);
    struct async_state s = {.loop_thread = uv_thread_self()};

    char pw[32];
    snprintf(pw, sizeof(pw), "%s", "on the pool");
    CHECK_EQ_INT(pwhash_make_async(&loop, pw, strlen("on the pool"), made, &s), ERR_OK);
    memset(pw, 'X', sizeof(pw)); /* the caller's buffer may go at once */
    CHECK_EQ_INT(s.made, 0);     /* nothing ran yet: the loop has not */
    CHECK_EQ_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
    CHECK_EQ_INT(s.made, 1);
    CHECK(s.made_on_loop);
    CHECK_EQ_INT(s.rc, ERR_OK);
    CHECK(pwhash_check(s.hash, PW("on the pool")));

    /* Three checks at once: right, wrong, and a broken stored hash */
    struct check_ctx c[3] = {{&s, 0}, {&s, 1}, {&s, 2}};
    snprintf(pw, sizeof(pw), "%s", "on the pool");
    CHECK_EQ_INT(pwhash_check_async(&loop, s.hash, pw, strlen(pw), checked, &c[0]), ERR_OK);
    CHECK_EQ_INT(pwhash_check_async(&loop, s.hash, PW("on the poo1"), checked, &c[1]), ERR_OK);
    CHECK_EQ_INT(pwhash_check_async(&loop, "$argon2id$nonsense", pw, strlen(pw), checked, &c[2]),
                 ERR_OK);
    memset(pw, 0, sizeof(pw));
    s.ok[1] = s.ok[2] = true;
    CHECK_EQ_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
    CHECK_EQ_INT(s.checked, 3);
    CHECK(s.checked_on_loop);
    CHECK(s.ok[0]);
    CHECK(!s.ok[1]);
    CHECK(!s.ok[2]);
    CHECK_EQ_INT(uv_loop_close(&loop), 0);
}
