/* formats.c - the source formats `shortd import` reads: one literal table,
 * each entry naming its reader (import_<format>.c). */
#include <string.h>

#include "import/import.h"
#include "base/banned.h"

const struct import_format import_formats[] = {
    {"yourls",
     "a mysqldump (.sql or .sql.gz) of yourls_url and yourls_log, any table prefix,\n"
     "            or their CSV as phpMyAdmin exports it (a header row): a folder holding\n"
     "            yourls_url.csv [and yourls_log.csv], or URL.csv[,LOG.csv]. Times\n"
     "            without a zone are UTC, as YOURLS writes them",
     import_read_yourls},
    {"kutt", "Kutt's SQLite database file (db/data) or a postgres:// URL of its database",
     import_read_kutt},
    {"shlink", "the CSV Shlink's web client exports, or a postgres:// URL of its database",
     import_read_shlink},
    {"bitly",
     "the CSV export of Bitly's web app: columns by name in any order (Bitlink or\n"
     "            Link, Long URL or Destination URL, Title, Created, Tags, Custom\n"
     "            Bitlinks, Clicks or Engagements); a custom domain's links keep it",
     import_read_bitly},
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
