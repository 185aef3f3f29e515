/* codes.c - short codes: base62 text, the keyed permutation that turns the
 * link counter into unguessable 7-char codes, and the rules for custom
 * aliases. A counter value n becomes base62(scramble(n)): scramble is a
 * balanced Feistel network over the smallest even number of bits that holds
 * the domain, with SipHash-2-4 (libsodium's crypto_shorthash) keyed by the
 * server's secret as its round function, and cycle-walking to stay inside
 * [0, domain). Being a bijection, distinct counters can never collide, so
 * generated codes need no uniqueness retry; without the key, the codes reveal
 * neither the counter nor the order links were made in. Pure: no I/O, no
 * global state, safe from any thread. The mapping is part of the stored data:
 * changing the round function, round count or bit layout would make new
 * counters land on codes already handed out, so tests pin known outputs. */
#include "links/codes.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

#include "base/banned.h"

#define STR_(x) #x
#define STR(x) STR_(x)

#define SCRAMBLE_ROUNDS 8 /* 4 is the Luby-Rackoff minimum for a strong PRP; 8 is margin */

static const char base62_alphabet[] =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/* The value of base62 digit 'c', or -1. */
static int base62_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'Z')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 36;
    return -1;
}

static bool is_code_char(unsigned char c) { return base62_digit(c) >= 0 || c == '_' || c == '-'; }

/* base62 */

void base62_encode7(uint64_t v, char out[CODE_LEN])
{
    for (int i = CODE_LEN - 1; i >= 0; i--) {
        out[i] = base62_alphabet[v % 62];
        v /= 62;
    }
}

int base62_decode(const char *s, size_t n, uint64_t *out)
{
    if (n == 0)
        return ERR_INVALID;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = base62_digit((unsigned char)s[i]);
        if (d < 0)
            return ERR_INVALID;
        if (v > (UINT64_MAX - (uint64_t)d) / 62)
            return ERR_INVALID;
        v = v * 62 + (uint64_t)d;
    }
    *out = v;
    return ERR_OK;
}

/* scramble */

/* The number of bits needed to write v: 0 for 0, 1 for 1, 2 for 2..3, ... */
static unsigned bit_length(uint64_t v)
{
    unsigned bits = 0;
    while (v) {
        bits++;
        v >>= 1;
    }
    return bits;
}

void scramble_init(struct scramble *s, const uint8_t key[SCRAMBLE_KEY_BYTES], uint64_t domain)
{
    /* libsodium asks for this before any other call; it is idempotent and
     * thread-safe, and fails only where the process could not run at all. */
    if (sodium_init() < 0)
        abort();
    memcpy(s->key, key, SCRAMBLE_KEY_BYTES);
    s->domain = domain;
    unsigned bits = domain ? bit_length(domain - 1) : 0;
    s->half_bits = bits < 2 ? 1 : (bits + 1) / 2;
}

/* The round function: SipHash-2-4 under the key of (round, half), cut to
 * half_bits. The round number makes every round a different function. */
static uint64_t feistel_f(const struct scramble *s, unsigned round, uint64_t half)
{
    unsigned char msg[9];
    msg[0] = (unsigned char)round;
    for (int i = 0; i < 8; i++)
        msg[1 + i] = (unsigned char)(half >> (8 * i));

    unsigned char h[crypto_shorthash_BYTES];
    crypto_shorthash(h, msg, sizeof(msg), s->key);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)h[i] << (8 * i);
    return v & ((UINT64_C(1) << s->half_bits) - 1);
}

/* One pass of the network over [0, 2^(2*half_bits)). */
static uint64_t feistel_fwd(const struct scramble *s, uint64_t x)
{
    uint64_t mask = (UINT64_C(1) << s->half_bits) - 1;
    uint64_t left = x >> s->half_bits;
    uint64_t right = x & mask;
    for (unsigned r = 0; r < SCRAMBLE_ROUNDS; r++) {
        uint64_t next = left ^ feistel_f(s, r, right);
        left = right;
        right = next;
    }
    return (left << s->half_bits) | right;
}

static uint64_t feistel_inv(const struct scramble *s, uint64_t y)
{
    uint64_t mask = (UINT64_C(1) << s->half_bits) - 1;
    uint64_t left = y >> s->half_bits;
    uint64_t right = y & mask;
    for (unsigned r = SCRAMBLE_ROUNDS; r-- > 0;) {
        uint64_t prev = right ^ feistel_f(s, r, left);
        right = left;
        left = prev;
    }
    return (left << s->half_bits) | right;
}

/* Cycle-walking: apply the network until the value falls back inside the
 * domain. It terminates because x's cycle in the permutation of the larger
 * set returns to x itself; the domain is more than a quarter of that set, so
 * the expected number of passes is below 4 (about 1.25 for CODE_SPACE).
 * A value outside the domain is returned unchanged, which keeps the function
 * a bijection of all uint64_t and never loops forever on a caller's mistake. */
uint64_t scramble_fwd(const struct scramble *s, uint64_t x)
{
    if (x >= s->domain)
        return x;
    do {
        x = feistel_fwd(s, x);
    } while (x >= s->domain);
    return x;
}

uint64_t scramble_inv(const struct scramble *s, uint64_t y)
{
    if (y >= s->domain)
        return y;
    do {
        y = feistel_inv(s, y);
    } while (y >= s->domain);
    return y;
}

void code_from_counter(const struct scramble *s, uint64_t n, char out[CODE_LEN])
{
    base62_encode7(scramble_fwd(s, n), out);
}

/* Shapes */

bool code_is_generated_shape(const char *s, size_t n)
{
    if (n != CODE_LEN)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (base62_digit((unsigned char)s[i]) < 0)
            return false;
    }
    return true;
}

bool code_is_plausible(const char *s, size_t n)
{
    if (n < 1 || n > CODE_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!is_code_char((unsigned char)s[i]))
            return false;
    }
    return true;
}

/* Alias rules */

static unsigned char ascii_lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* True when the whole of s[0..n) equals 'word', ignoring ASCII case. */
static bool equals_word_nocase(const char *s, size_t n, const char *word)
{
    if (strlen(word) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (ascii_lower((unsigned char)s[i]) != ascii_lower((unsigned char)word[i]))
            return false;
    }
    return true;
}

_Static_assert(CODE_LEN == 7, "why_shape below spells out CODE_LEN");
static const char why_shape[] =
    "looks like a generated code (7 letters and digits); add '-' or '_' or change its length";

/* The checks run in the order a user fixes things: length, then characters,
 * then the words taken by routes, then the shape reserved for generated
 * codes (an alias of that shape could later collide with a counter's code). */
int alias_check(const char *s, size_t n, const char *const *reserved, const char **why)
{
    const char *reason = NULL;

    if (n < ALIAS_MIN || n > ALIAS_MAX) {
        reason = "must be " STR(ALIAS_MIN) " to " STR(ALIAS_MAX) " characters";
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (!is_code_char((unsigned char)s[i])) {
            reason = "may contain only letters, digits, '_' and '-'";
            goto out;
        }
    }
    for (size_t i = 0; reserved && reserved[i]; i++) {
        if (equals_word_nocase(s, n, reserved[i])) {
            reason = "is a reserved word";
            goto out;
        }
    }
    if (code_is_generated_shape(s, n))
        reason = why_shape;
out:
    if (why)
        *why = reason;
    return reason ? ERR_INVALID : ERR_OK;
}
