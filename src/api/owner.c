/* owner.c - the owner rule of owner.h. */
#include "api/owner.h"

#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "base/err.h"
#include "base/banned.h"

/* A key limited to a domain sees its own links only, an admin key's too. */
int64_t owner_scope(const struct request *r)
{
    return r->key.admin && !r->key.domain[0] ? OWNER_ANY : r->key.owner;
}

int owner_not_found(struct request *r)
{
    return http_error(r, 404, "not_found", NULL, OWNER_NOT_FOUND);
}

int owner_code(struct request *r, char code[CODE_MAX + 1])
{
    struct slice s = r->params[0];
    if (!code_is_plausible(s.p, s.n))
        return owner_not_found(r);
    memcpy(code, s.p, s.n);
    code[s.n] = '\0';
    return 0;
}

int owner_key_domain(const struct apikey *k, char **domain)
{
    if (!k->domain[0])
        return ERR_OK;
    if (!*domain) {
        *domain = strdup(k->domain);
        if (!*domain)
            abort();
        return ERR_OK;
    }
    return strcmp(*domain, k->domain) == 0 ? ERR_OK : ERR_FORBIDDEN;
}

int owner_link_get(struct store *st, const char *code, int64_t scope, struct link *l)
{
    int rc = st->ops->link_get(st, code, l);
    if (rc == ERR_OK && scope != OWNER_ANY && l->owner != scope) {
        link_release(l);
        rc = ERR_NOTFOUND;
    }
    return rc;
}

int owner_link(struct request *r, char code[CODE_MAX + 1], struct link *l)
{
    int status = owner_code(r, code);
    if (status)
        return status;
    int rc = owner_link_get(r->app->store, code, owner_scope(r), l);
    if (rc == ERR_NOTFOUND)
        return owner_not_found(r);
    if (rc != ERR_OK)
        return http_unavailable(r, NULL);
    return 0;
}
