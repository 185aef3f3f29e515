/* formats.c - the source formats `shortd import` reads: one literal table,
 * each entry naming its reader (import_<format>.c). */
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "import/import.h"
#include "base/banned.h"

const struct import_format import_formats[] = {
    {"yourls", "a mysqldump of yourls_url and yourls_log, or CSV of those tables",
     import_read_yourls},
    {"kutt", "Kutt's SQLite database file (db/data) or a postgres:// URL of its database",
     import_read_kutt},
    {"shlink", "the CSV Shlink's web client exports, or a postgres:// URL of its database",
     import_read_shlink},
    {"bitly", "the CSV export of Bitly's web app", import_read_bitly},
    {"csv", "CSV with a header: code,url,title,tags,created_at,expires_at,clicks", import_read_csv},
    {"shortd", "the JSON of `shortd export --format json`", import_read_shortd},
    {NULL, NULL, NULL},
};

const struct import_format *import_format_find(const char *name)
{
    for (const struct import_format *f = import_formats; f->name; f++)
        if (!strcmp(f->name, name))
            return f;
    return NULL;
}

/* Readers not built yet. The helpers writing them (branches s26-yourls and
 * s26-peers) delete the stub of each reader they add, in the same commit:
 * the real definition lives in import_<format>.c. */
static int not_built(const char *name, struct import_sink *s)
{
    import_refuse(s, (struct import_where){NULL, 0}, "the %s reader is not built yet", name);
    return ERR_INVALID;
}

int import_read_yourls(const char *source, struct import_sink *s)
{
    (void)source;
    return not_built("yourls", s);
}

int import_read_kutt(const char *source, struct import_sink *s)
{
    (void)source;
    return not_built("kutt", s);
}

int import_read_shlink(const char *source, struct import_sink *s)
{
    (void)source;
    return not_built("shlink", s);
}

int import_read_bitly(const char *source, struct import_sink *s)
{
    (void)source;
    return not_built("bitly", s);
}
