/* pct.c - percent-encoding and form decoding (pct.h). */
#include "base/pct.h"

#include "base/banned.h"

int pct_hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

void pct_encode(struct buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            buf_addc(out, (char)c);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            buf_add(out, e, 3);
        }
    }
}

long pct_form_decode(const char *s, size_t n, char *out, size_t cap)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%') {
            if (n - i < 3)
                return -1;
            int h = pct_hex_value((unsigned char)s[i + 1]);
            int l = pct_hex_value((unsigned char)s[i + 2]);
            if (h < 0 || l < 0)
                return -1;
            c = (char)(h << 4 | l);
            i += 2;
        }
        if (out) {
            if (len == cap)
                return -2;
            out[len] = c;
        }
        len++;
    }
    return (long)len;
}
