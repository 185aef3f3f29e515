/* pwhash.h - link passwords: Argon2id hashes (libsodium), made and checked
 * either synchronously or on libuv's thread pool so that an event loop never
 * waits for one. A password itself is never stored, logged or kept longer
 * than the call that needs it. */
#ifndef SHORTD_PWHASH_H
#define SHORTD_PWHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#define PWHASH_MAX 128    /* stored string incl. NUL, >= crypto_pwhash_STRBYTES */
#define PWHASH_PW_MAX 128 /* longest password, in bytes */

/* The cost of one hash, OWASP's Argon2id setting: t = 2 passes over
 * m = 19 MiB, one lane (libsodium's only). */
#define PWHASH_OPSLIMIT 2
#define PWHASH_MEMLIMIT (19u * 1024 * 1024)

/* The API's rule for a new password: 1..PWHASH_PW_MAX bytes of valid UTF-8,
 * no NUL. ERR_OK, or ERR_INVALID and *why a reason to put after the field's
 * name ("must be 1 to 128 bytes"...; static). */
int pwhash_valid(const char *pw, size_t n, const char **why);

/* Synchronous, any thread. make: ERR_OK and the "$argon2id$..." string in
 * 'out', or ERR_NOMEM when the memory for the hash cannot be had. check:
 * true when 'pw' matches 'stored' (false for a malformed 'stored'). 'stored'
 * may also be a bcrypt hash ("$2a$", "$2b$", "$2y$": imported from Kutt),
 * checked through libcrypt; new hashes are never bcrypt. */
int pwhash_make(const char *pw, size_t n, char out[PWHASH_MAX]);
bool pwhash_check(const char *stored, const char *pw, size_t n);
/* True when 'stored' was made with other parameters than today's (always
 * for bcrypt). */
bool pwhash_needs_rehash(const char *stored);
/* True when 'stored' is a bcrypt hash ("$2a$", "$2b$" or "$2y$"). */
bool pwhash_is_bcrypt(const char *stored);

/* On libuv's thread pool (uv_queue_work on 'loop'), so an event loop never
 * waits for Argon2: 'done' runs later on the loop's thread ('hash' is valid
 * only during the call; NULL unless rc is ERR_OK). The password is copied
 * (the caller's buffer may go at once) and the copy wiped after use. Returns
 * ERR_OK when queued (then 'done' runs exactly once, with ERR_BUSY / false if
 * the work was cancelled), or ERR_BUSY when it could not be queued ('done'
 * never runs). Loop thread only. */
int pwhash_make_async(uv_loop_t *loop, const char *pw, size_t n,
                      void (*done)(int rc, const char *hash, void *arg), void *arg);
int pwhash_check_async(uv_loop_t *loop, const char *stored, const char *pw, size_t n,
                       void (*done)(bool ok, void *arg), void *arg);

#endif
