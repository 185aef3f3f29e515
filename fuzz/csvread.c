/* csvread.c (fuzz) - CSV records (src/import/csvread.h) over any bytes.
 *
 * Every record has at least one field; records come in the order of their
 * lines, each line within the input's lines; the fields of one record never
 * hold more bytes than the input; nothing leaks whatever the quoting. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/csvread.h"
#include "base/banned.h"

static void check(int cond)
{
    if (!cond)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f)
        return 0;
    int64_t lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    struct csvread *r = csvread_from(f);
    struct csv_record rec;
    int64_t last = 0;
    int got;
    while ((got = csvread_next(r, &rec)) > 0) {
        check(rec.n >= 1);
        check(rec.line >= 1 && rec.line <= lines);
        check(rec.line >= last);
        last = rec.line;
        size_t bytes = 0;
        for (size_t i = 0; i < rec.n; i++) {
            check(strlen(rec.field[i]) == rec.len[i]);
            bytes += rec.len[i];
        }
        check(bytes <= size);
    }
    check(got == 0 || got == -1);
    csvread_free(r);
    fclose(f);
    return 0;
}
