/* beacon.c (fuzz) - the page beacon's payload decoder (sites/beacon.h) on
 * any bytes: taken as the 'v' value itself (first byte even), or as the
 * JSON text it carries, base64url-encoded first (odd), so that the
 * tokenizer sees every shape of JSON and not-JSON.
 *
 * A decode must never read or write past its buffers; when it succeeds,
 * every field is NUL-terminated within its bounds, the clamped ones valid
 * UTF-8 without control characters (clamp_utf8 leaves them as they are),
 * the referrer without control characters; when it fails, the struct is
 * left empty. */
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "clicks/classify.h"
#include "sites/beacon.h"
#include "base/banned.h"

static void check(int cond)
{
    if (!cond)
        abort();
}

static void clamped(const char *f)
{
    size_t n = strnlen(f, DIM_MAX + 1);
    check(n <= DIM_MAX);
    char again[DIM_MAX + 1];
    check(clamp_utf8(f, n, again) == n && memcmp(again, f, n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    struct beacon b;
    int rc;
    if (data[0] % 2 == 0) {
        rc = beacon_decode((const char *)data + 1, size - 1, &b);
    } else {
        size_t cap = sodium_base64_ENCODED_LEN(size, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        char *v = malloc(cap);
        if (!v)
            abort();
        sodium_bin2base64(v, cap, data + 1, size - 1, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        rc = beacon_decode(v, strlen(v), &b);
        free(v);
    }
    check(rc == ERR_OK || rc == ERR_INVALID || rc == ERR_TOOBIG);
    const char *fields[] = {b.p, b.h, b.l, b.tz, b.us, b.um, b.uc, b.ev, b.et};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (rc != ERR_OK)
            check(fields[i][0] == '\0');
        clamped(fields[i]);
    }
    size_t rn = strnlen(b.r, BEACON_REF_MAX + 1);
    check(rn <= BEACON_REF_MAX);
    for (size_t i = 0; i < rn; i++)
        check((unsigned char)b.r[i] >= 0x20);
    check(b.w >= -1);
    if (rc != ERR_OK)
        check(b.w == -1 && !b.uv && !b.ss && !b.bo && !b.r[0]);
    return 0;
}
