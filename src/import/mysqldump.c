/* mysqldump.c - the rows of a mysqldump file's INSERT statements, streamed.
 *
 * Written by hand because no library reads mysqldump output: it is SQL, but
 * only a sliver of it matters here (INSERT ... VALUES with literals), and a
 * SQL parser would still leave the MySQL string escapes to us.
 *
 * DESIGN
 * Two layers over a byte loop that can stop anywhere (a push parser): the
 * tokenizer keeps its state between feeds (in a word, in a `name`, in a
 * 'string', after a backslash) and hands each finished token to the grammar,
 * a small state machine over INSERT [modifiers] INTO name [(columns)] VALUES
 * (row), (row) ... ; with the tail of ON DUPLICATE KEY UPDATE skipped. At
 * the top level only the first word of each line is read: a line that does
 * not start with INSERT or REPLACE is skipped to its end without looking at
 * its quotes, which is how mysqldump writes (every statement starts a line;
 * newlines inside strings are escaped). A statement that cannot be read is
 * reported and the rest of its line skipped, so one damaged line costs the
 * rows after the damage on that line and nothing else. */
#include "import/mysqldump.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"

#include "base/banned.h"

enum lex {
    L_LINE,      /* at a line start, top level: blanks before the first word */
    L_HEAD,      /* the first word of a line */
    L_SKIPLINE,  /* the rest of a line that starts no INSERT, or a bad one */
    L_STMT,      /* in an INSERT, between tokens */
    L_WORD,      /* a bare word: keyword, number, NULL */
    L_IDENT,     /* `name` */
    L_IDENT_END, /* a backtick in a name: its end, or `` */
    L_STR,       /* 'string' or "string" */
    L_STR_ESC,   /* after a backslash in a string */
    L_STR_END,   /* a quote in a string: its end, or a doubled quote */
};

enum gram {
    G_VERB,       /* after INSERT/REPLACE: modifiers, INTO, then the table */
    G_AFTER_NAME, /* '.' (a database prefix), '(' columns, or VALUES */
    G_COLUMN,     /* a column name */
    G_COLUMN_SEP, /* ',' or ')' */
    G_VALUES,     /* VALUES after the column list */
    G_ROW_OPEN,   /* '(' */
    G_VALUE,      /* a value, or ')' of an empty row */
    G_WORD_AFTER, /* after a bare word: a string (for _charset or X), ',' or ')' */
    G_VALUE_SEP,  /* ',' or ')' */
    G_ROW_SEP,    /* ',' another row, ';' the end, ON/AS the tail */
    G_TAIL,       /* anything up to ';' */
};

enum token { T_WORD = 256, T_IDENT, T_STRING };

struct span {
    size_t off, n;
    bool null, string;
};

struct mysqldump {
    struct mysqldump_calls calls;
    enum lex lex;
    enum gram gram;
    char quote;   /* the quote of the string being read */
    bool skip;    /* the statement's table is not wanted: copy nothing */
    bool stopped; /* a row callback stopped the parse */
    int64_t line; /* 1-based */
    int64_t row_line;
    int64_t index;  /* rows of the statement so far */
    struct buf tok; /* the token being read */
    struct buf table;
    struct buf cols; /* column names, each NUL-terminated */
    size_t *col_off;
    size_t ncols;
    struct buf vals; /* the row's values, each NUL-terminated */
    struct span *spans;
    size_t nvals;
    struct mysql_value *out; /* the row as handed over */
    const char **colp;
    size_t pending; /* the bare word waiting for what follows it, in tok */
};

struct mysqldump *mysqldump_new(const struct mysqldump_calls *calls)
{
    struct mysqldump *d = calloc(1, sizeof(*d));
    if (!d)
        abort();
    d->calls = *calls;
    d->line = 1;
    d->col_off = malloc(MYSQLDUMP_VALUES_MAX * sizeof(*d->col_off));
    d->spans = malloc(MYSQLDUMP_VALUES_MAX * sizeof(*d->spans));
    d->out = malloc(MYSQLDUMP_VALUES_MAX * sizeof(*d->out));
    d->colp = malloc(MYSQLDUMP_VALUES_MAX * sizeof(*d->colp));
    if (!d->col_off || !d->spans || !d->out || !d->colp)
        abort();
    return d;
}

void mysqldump_free(struct mysqldump *d)
{
    if (!d)
        return;
    buf_release(&d->tok);
    buf_release(&d->table);
    buf_release(&d->cols);
    buf_release(&d->vals);
    free(d->col_off);
    free(d->spans);
    free(d->out);
    free(d->colp);
    free(d);
}

int64_t mysqldump_line(const struct mysqldump *d) { return d->line; }

/* The statement cannot be read: say where and why, skip the rest of its line. */
static void bad(struct mysqldump *d, const char *why)
{
    if (d->calls.bad)
        d->calls.bad(d->calls.ctx, d->line, why);
    d->lex = L_SKIPLINE;
}

static const char *token_name(int t)
{
    switch (t) {
    case T_WORD: return "a word";
    case T_IDENT: return "a `name`";
    case T_STRING: return "a string";
    case '(': return "'('";
    case ')': return "')'";
    case ',': return "','";
    case ';': return "';'";
    case '.': return "'.'";
    default: return "a stray character";
    }
}

static void unexpected(struct mysqldump *d, int t, const char *wanted)
{
    struct buf why = BUF_INIT;
    buf_printf(&why, "expected %s, found %s", wanted, token_name(t));
    bad(d, buf_cstr(&why));
    buf_release(&why);
}

static bool tok_is(const struct mysqldump *d, const char *kw)
{
    return slice_ieq((struct slice){d->tok.p ? d->tok.p : "", d->tok.len}, kw);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Adds a value to the row: 'p' raw, or hex digits to decode. */
static bool add_value(struct mysqldump *d, const char *p, size_t n, bool null, bool string,
                      bool hex)
{
    if (d->skip)
        return true;
    if (d->nvals == MYSQLDUMP_VALUES_MAX) {
        bad(d, "a row with more values than shortd reads");
        return false;
    }
    struct span *s = &d->spans[d->nvals++];
    s->off = d->vals.len;
    s->null = null;
    s->string = string;
    if (hex) {
        if (n % 2) {
            bad(d, "a hex literal with an odd number of digits");
            return false;
        }
        for (size_t i = 0; i < n; i += 2) {
            int hi = hexval(p[i]), lo = hexval(p[i + 1]);
            if (hi < 0 || lo < 0) {
                bad(d, "a hex literal with a character that is no hex digit");
                return false;
            }
            buf_addc(&d->vals, (char)(hi << 4 | lo));
        }
    } else {
        buf_add(&d->vals, p, n);
    }
    s->n = d->vals.len - s->off;
    buf_addc(&d->vals, '\0');
    return true;
}

/* The bare word in tok (from d->pending) as a value. */
static bool word_value(struct mysqldump *d)
{
    const char *w = d->tok.p ? d->tok.p : "";
    size_t n = d->tok.len;
    if (tok_is(d, "NULL"))
        return add_value(d, "", 0, true, false, false);
    if (n > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X'))
        return add_value(d, w + 2, n - 2, false, true, true);
    return add_value(d, w, n, false, false, false);
}

static int deliver_row(struct mysqldump *d)
{
    if (d->skip)
        return ERR_OK;
    for (size_t i = 0; i < d->nvals; i++) {
        const struct span *s = &d->spans[i];
        d->out[i] = (struct mysql_value){d->vals.p + s->off, s->n, s->null, s->string};
    }
    for (size_t i = 0; i < d->ncols; i++)
        d->colp[i] = d->cols.p + d->col_off[i];
    struct mysql_row row = {
        .table = buf_cstr(&d->table),
        .columns = d->ncols ? d->colp : NULL,
        .ncolumns = d->ncols,
        .values = d->out,
        .nvalues = d->nvals,
        .line = d->row_line,
        .index = d->index,
    };
    return d->calls.row(d->calls.ctx, &row);
}

static void end_statement(struct mysqldump *d)
{
    d->lex = L_SKIPLINE; /* what follows ';' on its line is not read */
    d->skip = false;
}

/* One finished token (text in tok for words, names and strings) in the
 * grammar. Returns what a row callback returned. */
static int token(struct mysqldump *d, int t)
{
    switch (d->gram) {
    case G_VERB:
        if (t == T_WORD && (tok_is(d, "INTO") || tok_is(d, "IGNORE") || tok_is(d, "LOW_PRIORITY") ||
                            tok_is(d, "DELAYED") || tok_is(d, "HIGH_PRIORITY")))
            return ERR_OK;
        if (t != T_WORD && t != T_IDENT && t != T_STRING)
            return unexpected(d, t, "a table name"), ERR_OK;
        {
            /* db.t written bare: the table is what follows the last dot */
            const char *name = buf_cstr(&d->tok);
            const char *dot = t == T_WORD ? strrchr(name, '.') : NULL;
            buf_reset(&d->table);
            buf_adds(&d->table, dot ? dot + 1 : name);
        }
        d->gram = G_AFTER_NAME;
        return ERR_OK;
    case G_AFTER_NAME:
        if (t == '.') {
            d->gram = G_VERB;
        } else if (t == '(') {
            d->gram = G_COLUMN;
        } else if (t == T_WORD && (tok_is(d, "VALUES") || tok_is(d, "VALUE"))) {
            d->skip = d->calls.want && !d->calls.want(d->calls.ctx, buf_cstr(&d->table));
            d->gram = G_ROW_OPEN;
        } else {
            unexpected(d, t, "a column list or VALUES");
        }
        return ERR_OK;
    case G_COLUMN:
        if (t != T_WORD && t != T_IDENT && t != T_STRING)
            return unexpected(d, t, "a column name"), ERR_OK;
        if (d->ncols == MYSQLDUMP_VALUES_MAX)
            return bad(d, "more columns than shortd reads"), ERR_OK;
        d->col_off[d->ncols++] = d->cols.len;
        buf_add(&d->cols, buf_cstr(&d->tok), d->tok.len);
        buf_addc(&d->cols, '\0');
        d->gram = G_COLUMN_SEP;
        return ERR_OK;
    case G_COLUMN_SEP:
        if (t == ',')
            d->gram = G_COLUMN;
        else if (t == ')')
            d->gram = G_VALUES;
        else
            unexpected(d, t, "',' or ')' in the column list");
        return ERR_OK;
    case G_VALUES:
        if (t == T_WORD && (tok_is(d, "VALUES") || tok_is(d, "VALUE"))) {
            d->skip = d->calls.want && !d->calls.want(d->calls.ctx, buf_cstr(&d->table));
            d->gram = G_ROW_OPEN;
        } else {
            unexpected(d, t, "VALUES");
        }
        return ERR_OK;
    case G_ROW_OPEN:
        if (t != '(')
            return unexpected(d, t, "'(' opening a row"), ERR_OK;
        d->index++;
        d->row_line = d->line;
        d->nvals = 0;
        buf_reset(&d->vals);
        d->gram = G_VALUE;
        return ERR_OK;
    case G_VALUE:
        if (t == ')' && d->nvals == 0) {
            d->gram = G_ROW_SEP;
            return deliver_row(d);
        }
        if (t == T_STRING) {
            if (add_value(d, buf_cstr(&d->tok), d->tok.len, false, true, false))
                d->gram = G_VALUE_SEP;
        } else if (t == T_WORD) {
            d->pending = d->tok.len;
            d->gram = G_WORD_AFTER;
        } else {
            unexpected(d, t, "a value");
        }
        return ERR_OK;
    case G_WORD_AFTER:
        if (t == T_STRING) {
            /* _binary 'x', _utf8mb4'x' (a character set introducer) or X'4142' */
            const char *w = d->tok.p; /* the word, then the string, in tok */
            size_t wn = d->pending;
            bool hex = wn == 1 && (w[0] == 'x' || w[0] == 'X');
            if (!hex && w[0] != '_')
                return unexpected(d, t, "',' or ')' after a value"), ERR_OK;
            if (add_value(d, w + wn, d->tok.len - wn, false, true, hex))
                d->gram = G_VALUE_SEP;
            return ERR_OK;
        }
        if (t != ',' && t != ')')
            return unexpected(d, t, "',' or ')' after a value"), ERR_OK;
        if (!word_value(d))
            return ERR_OK;
        d->gram = G_VALUE_SEP;
        return token(d, t);
    case G_VALUE_SEP:
        if (t == ',') {
            d->gram = G_VALUE;
            return ERR_OK;
        }
        if (t != ')')
            return unexpected(d, t, "',' or ')' after a value"), ERR_OK;
        d->gram = G_ROW_SEP;
        return deliver_row(d);
    case G_ROW_SEP:
        if (t == ',')
            d->gram = G_ROW_OPEN;
        else if (t == ';')
            end_statement(d);
        else if (t == T_WORD && (tok_is(d, "ON") || tok_is(d, "AS")))
            d->gram = G_TAIL;
        else
            unexpected(d, t, "',' or ';' after a row");
        return ERR_OK;
    case G_TAIL:
        if (t == ';')
            end_statement(d);
        return ERR_OK;
    }
    return ERR_OK;
}

static bool word_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c == '.' || c == '+' || c == '-' || c >= 0x80;
}

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* Text of a token: kept unless the statement is skipped, where only words
 * (short) are, the grammar needing them. */
static bool tok_add(struct mysqldump *d, const char *p, size_t n)
{
    if (d->skip && d->lex != L_WORD)
        return true;
    if (d->tok.len + n > MYSQLDUMP_VALUE_MAX) {
        bad(d, "a value longer than shortd reads (16 MiB)");
        return false;
    }
    buf_add(&d->tok, p, n);
    return true;
}

/* Where the string escapes MySQL writes lead (mysqldump's own and the rest
 * MySQL reads): \0 \b \n \r \t \Z, and \% \_ kept with their backslash. */
static bool unescape(struct mysqldump *d, char c)
{
    switch (c) {
    case '0': return tok_add(d, "\0", 1);
    case 'b': return tok_add(d, "\b", 1);
    case 'n': return tok_add(d, "\n", 1);
    case 'r': return tok_add(d, "\r", 1);
    case 't': return tok_add(d, "\t", 1);
    case 'Z': return tok_add(d, "\032", 1);
    case '%': return tok_add(d, "\\%", 2);
    case '_': return tok_add(d, "\\_", 2);
    default: return tok_add(d, &c, 1);
    }
}

int mysqldump_feed(struct mysqldump *d, const char *p, size_t n)
{
    if (d->stopped)
        return ERR_INVALID;
    size_t i = 0;
    while (i < n) {
        char c = p[i];
        int rc = ERR_OK;
        switch (d->lex) {
        case L_LINE:
            if (c == '\n') {
                d->line++;
            } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
                buf_reset(&d->tok);
                d->lex = L_HEAD;
                continue;
            } else if (!blank(c)) {
                d->lex = L_SKIPLINE;
                continue;
            }
            i++;
            break;
        case L_HEAD:
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
                if (d->tok.len < 16)
                    buf_addc(&d->tok, c);
                i++;
                break;
            }
            if (blank(c) && (tok_is(d, "INSERT") || tok_is(d, "REPLACE"))) {
                d->lex = L_STMT;
                d->gram = G_VERB;
                d->skip = false;
                d->index = 0;
                d->ncols = 0;
                buf_reset(&d->cols);
            } else {
                d->lex = L_SKIPLINE;
            }
            break;
        case L_SKIPLINE: {
            const char *nl = memchr(p + i, '\n', n - i);
            if (!nl) {
                i = n;
                break;
            }
            i = (size_t)(nl - p) + 1;
            d->line++;
            d->lex = L_LINE;
            break;
        }
        case L_STMT:
            i++;
            if (blank(c)) {
                if (c == '\n')
                    d->line++;
            } else if (c == '`') {
                buf_reset(&d->tok);
                d->lex = L_IDENT;
            } else if (c == '\'' || c == '"') {
                if (d->gram != G_WORD_AFTER)
                    buf_reset(&d->tok);
                else
                    buf_truncate(&d->tok, d->pending);
                d->quote = c;
                d->lex = L_STR;
            } else if (word_char((unsigned char)c) && c != '.') {
                buf_reset(&d->tok);
                d->lex = L_WORD;
                i--;
            } else {
                rc = token(d, (unsigned char)c);
            }
            break;
        case L_WORD:
            if (word_char((unsigned char)c)) {
                size_t j = i;
                while (j < n && word_char((unsigned char)p[j]))
                    j++;
                if (tok_add(d, p + i, j - i))
                    i = j;
                break;
            }
            d->lex = L_STMT;
            rc = token(d, T_WORD);
            break;
        case L_IDENT:
            i++;
            if (c == '`')
                d->lex = L_IDENT_END;
            else
                tok_add(d, &c, 1);
            if (c == '\n')
                d->line++;
            break;
        case L_IDENT_END:
            if (c == '`') { /* `` is one backtick */
                tok_add(d, &c, 1);
                d->lex = L_IDENT;
                i++;
                break;
            }
            d->lex = L_STMT;
            rc = token(d, T_IDENT);
            break;
        case L_STR: {
            /* the bulk of a dump: runs of plain bytes, copied at once */
            size_t j = i;
            char q = d->quote;
            while (j < n && p[j] != q && p[j] != '\\' && p[j] != '\n')
                j++;
            if (j > i && !tok_add(d, p + i, j - i))
                break;
            i = j;
            if (i == n)
                break;
            c = p[i++];
            if (c == '\\') {
                d->lex = L_STR_ESC;
            } else if (c == q) {
                d->lex = L_STR_END;
            } else {
                d->line++;
                tok_add(d, &c, 1);
            }
            break;
        }
        case L_STR_ESC:
            i++;
            if (c == '\n')
                d->line++;
            if (unescape(d, c))
                d->lex = L_STR;
            break;
        case L_STR_END:
            if (c == d->quote) { /* '' is one quote */
                i++;
                if (tok_add(d, &c, 1))
                    d->lex = L_STR;
                break;
            }
            d->lex = L_STMT;
            rc = token(d, T_STRING);
            break;
        }
        if (rc != ERR_OK) {
            d->stopped = true;
            return rc;
        }
    }
    return ERR_OK;
}

void mysqldump_finish(struct mysqldump *d)
{
    if (d->stopped)
        return;
    switch (d->lex) {
    case L_LINE:
    case L_HEAD:
    case L_SKIPLINE: return;
    case L_WORD:
    case L_IDENT_END:
    case L_STR_END:
    case L_STMT: bad(d, "the file ends inside an INSERT statement (no ';')"); return;
    case L_IDENT:
    case L_STR:
    case L_STR_ESC: bad(d, "the file ends inside a quoted string"); return;
    }
}
