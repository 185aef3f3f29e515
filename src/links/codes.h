/* codes.h - short codes: base62, the keyed bijection that turns counter values
 * into codes, and the rules for custom aliases. Pure functions, no I/O. */
#ifndef SHORTD_CODES_H
#define SHORTD_CODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CODE_LEN 7                  /* generated codes are always 7 chars */
#define CODE_SPACE 3521614606208ULL /* 62^7 */
#define ALIAS_MIN 4
#define ALIAS_MAX 30
#define CODE_MAX ALIAS_MAX /* the longest code any link can have */
#define SCRAMBLE_KEY_BYTES 16

/* base62 over "0-9A-Za-z". 'v' must be < CODE_SPACE; out is not NUL-terminated. */
void base62_encode7(uint64_t v, char out[CODE_LEN]);
/* ERR_INVALID for a non-base62 char, empty input or overflow of 64 bits. */
int base62_decode(const char *s, size_t n, uint64_t *out);

/* A keyed pseudo-random permutation of [0, domain): a balanced Feistel network
 * (SipHash round function, libsodium) with cycle-walking. Knowing the source
 * and outputs does not reveal the order without the key. */
struct scramble {
    uint8_t key[SCRAMBLE_KEY_BYTES];
    uint64_t domain;    /* values are in [0, domain) */
    unsigned half_bits; /* each Feistel half; 2*half_bits >= log2(domain) */
};

void scramble_init(struct scramble *s, const uint8_t key[SCRAMBLE_KEY_BYTES], uint64_t domain);
uint64_t scramble_fwd(const struct scramble *s, uint64_t x); /* x < domain */
uint64_t scramble_inv(const struct scramble *s, uint64_t y); /* y < domain */

/* The 7-char code for counter value 'n' (n < CODE_SPACE). */
void code_from_counter(const struct scramble *s, uint64_t n, char out[CODE_LEN]);

/* Shapes */
bool code_is_generated_shape(const char *s, size_t n); /* exactly 7 base62 chars */
bool code_is_plausible(const char *s, size_t n);       /* 1..CODE_MAX of [0-9A-Za-z_-] */

/* Alias rules: ALIAS_MIN..ALIAS_MAX of [0-9A-Za-z_-]; not a reserved word
 * (case-insensitive; 'reserved' is a NULL-terminated list, e.g. the route
 * table's first path segments); not shaped like a generated code.
 * ERR_OK, or ERR_INVALID with a human-readable reason in *why. */
int alias_check(const char *s, size_t n, const char *const *reserved, const char **why);

#endif
