/* alias.c (fuzz) - the alias rules and code shapes (codes.h) on any bytes,
 * with the route table's reserved words as the server uses them.
 *
 * An accepted alias must be ALIAS_MIN..ALIAS_MAX characters of
 * [0-9A-Za-z_-], plausible as a code, not shaped like a generated one and
 * no reserved word in any case; base62_decode of the same bytes must, when
 * it succeeds, encode back to them for a 7-character code. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "links/codes.h"
#include "base/err.h"
#include "api/router.h"
#include "base/banned.h"

static void check(int cond)
{
    if (!cond)
        abort();
}

static bool is_alias_char(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
           c == '-';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    const char *const *reserved = router_reserved();
    const char *why = NULL;
    if (alias_check(s, size, reserved, &why) == ERR_OK) {
        check(size >= ALIAS_MIN && size <= ALIAS_MAX);
        for (size_t i = 0; i < size; i++)
            check(is_alias_char(data[i]));
        check(code_is_plausible(s, size));
        check(!code_is_generated_shape(s, size));
        for (const char *const *w = reserved; *w; w++)
            check(strlen(*w) != size || strncasecmp(*w, s, size) != 0);
    } else {
        check(why != NULL);
    }
    if (code_is_generated_shape(s, size))
        check(code_is_plausible(s, size) && size == CODE_LEN);

    uint64_t v;
    if (base62_decode(s, size, &v) == ERR_OK && size == CODE_LEN && v < CODE_SPACE) {
        char out[CODE_LEN];
        base62_encode7(v, out);
        check(memcmp(out, s, CODE_LEN) == 0);
    }
    return 0;
}
