/* jsonout.c - compact JSON text of a jansson value (see jsonout.h for why
 * not json_dump_callback). */
#include "base/jsonout.h"

#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

/* What a byte of a string becomes: 0 as itself, 'u' as \u00XX, else \ and
 * that letter. jansson's strings are valid UTF-8, so bytes past 0x7f pass. */
static const char escape[256] = {
    ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', ['\f'] = 'f',  ['\r'] = 'r', [0x00] = 'u',
    [0x01] = 'u', [0x02] = 'u', [0x03] = 'u', [0x04] = 'u',  [0x05] = 'u', [0x06] = 'u',
    [0x07] = 'u', [0x0b] = 'u', [0x0e] = 'u', [0x0f] = 'u',  [0x10] = 'u', [0x11] = 'u',
    [0x12] = 'u', [0x13] = 'u', [0x14] = 'u', [0x15] = 'u',  [0x16] = 'u', [0x17] = 'u',
    [0x18] = 'u', [0x19] = 'u', [0x1a] = 'u', [0x1b] = 'u',  [0x1c] = 'u', [0x1d] = 'u',
    [0x1e] = 'u', [0x1f] = 'u', ['"'] = '"',  ['\\'] = '\\',
};

static void string_out(struct buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    buf_reserve(b, 6 * n + 2); /* every byte as \u00XX at worst, and the quotes */
    char *o = b->p + b->len;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char e = escape[c];
        if (!e) {
            *o++ = (char)c;
        } else if (e == 'u') {
            memcpy(o, "\\u00", 4);
            o[4] = hex[c >> 4];
            o[5] = hex[c & 15];
            o += 6;
        } else {
            o[0] = '\\';
            o[1] = e;
            o += 2;
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->p);
    b->p[b->len] = '\0';
}

void jsonout(struct buf *b, const json_t *v)
{
    if (!v)
        return;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        size_t key_len;
        json_t *item;
        char sep = '{';
        json_object_keylen_foreach((json_t *)v, key, key_len, item)
        {
            buf_addc(b, sep);
            sep = ',';
            string_out(b, key, key_len);
            buf_addc(b, ':');
            jsonout(b, item);
        }
        if (sep == '{')
            buf_addc(b, '{');
        buf_addc(b, '}');
        break;
    }
    case JSON_ARRAY: {
        buf_addc(b, '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                buf_addc(b, ',');
            jsonout(b, json_array_get(v, i));
        }
        buf_addc(b, ']');
        break;
    }
    case JSON_STRING: string_out(b, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: buf_add_i64(b, json_integer_value(v)); break;
    case JSON_REAL: {
        /* Rare (rates in reports); jansson's own text keeps its precision rules. */
        char *s = json_dumps(v, JSON_ENCODE_ANY);
        buf_adds(b, s ? s : "null");
        free(s);
        break;
    }
    case JSON_TRUE: buf_add(b, "true", 4); break;
    case JSON_FALSE: buf_add(b, "false", 5); break;
    case JSON_NULL: buf_add(b, "null", 4); break;
    }
}
