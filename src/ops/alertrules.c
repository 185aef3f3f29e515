/* alertrules.c - the alert rules of alertrules.h: a pure function over
 * small fixed arrays, kept apart from any I/O so the unit tests can walk it
 * through time. */
#include "ops/alertrules.h"

#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/banned.h"

static const struct alert_item *find(const struct alert_item *items, int n, const char *code)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(items[i].code, code))
            return &items[i];
    return NULL;
}

static bool is_problem(enum check_state s) { return s == CHECK_WARN || s == CHECK_FAIL; }

/* Whether two sets hold the same codes in the same states. */
static bool same_set(const struct alert_item *a, int na, const struct alert_item *b, int nb)
{
    if (na != nb)
        return false;
    for (int i = 0; i < na; i++) {
        const struct alert_item *x = find(b, nb, a[i].code);
        if (!x || x->state != a[i].state)
            return false;
    }
    return true;
}

void alert_decide(const struct alert_state *prev, const struct check_report *rep, int64_t now,
                  const struct alert_rules *rules, struct alert_state *next,
                  struct alert_decision *out)
{
    memset(next, 0, sizeof(*next));
    memset(out, 0, sizeof(*out));
    bool all_ok = true;
    /* The problems found now: a problem keeps its first_seen while it lasts
     * (a warning become a failure too); an unknown check keeps what it had. */
    for (int i = 0; i < rep->n && next->nseen < CHECKS_MAX; i++) {
        const struct check_result *r = &rep->r[i];
        const struct alert_item *was = find(prev->seen, prev->nseen, r->code);
        if (r->state != CHECK_OK)
            all_ok = false;
        if (r->state == CHECK_UNKNOWN) {
            if (was)
                next->seen[next->nseen++] = *was;
            continue;
        }
        if (!is_problem(r->state))
            continue;
        struct alert_item *it = &next->seen[next->nseen++];
        snprintf(it->code, sizeof(it->code), "%s", r->code);
        it->state = r->state;
        it->first_seen = was ? was->first_seen : now;
    }
    /* Confirmed: found at least confirm_ms after it was first found, or
     * sent already (its confirmation was done). */
    struct alert_item confirmed[CHECKS_MAX];
    int nconf = 0;
    int64_t earliest = now;
    for (int i = 0; i < next->nseen; i++) {
        const struct alert_item *it = &next->seen[i];
        bool ok = rules->state_lost || now - it->first_seen >= rules->confirm_ms ||
                  find(prev->sent, prev->nsent, it->code);
        if (!ok)
            continue;
        confirmed[nconf++] = *it;
        if (it->first_seen < earliest)
            earliest = it->first_seen;
    }
    /* By default the sent state carries over unchanged. */
    memcpy(next->sent, prev->sent, sizeof(next->sent));
    next->nsent = prev->nsent;
    next->sent_at = prev->sent_at;
    next->since = prev->since;

    if (nconf) {
        if (same_set(confirmed, nconf, prev->sent, prev->nsent)) {
            if (now - prev->sent_at < rules->repeat_ms)
                return;
            out->kind = ALERT_REMINDER;
        } else {
            out->kind = prev->nsent ? ALERT_CHANGED : ALERT_NEW;
            for (int i = 0; i < prev->nsent; i++)
                if (!find(confirmed, nconf, prev->sent[i].code))
                    out->fixed[out->nfixed++] = prev->sent[i];
            if (!prev->nsent)
                next->since = earliest;
        }
        memcpy(next->sent, confirmed, sizeof(confirmed[0]) * (size_t)nconf);
        next->nsent = nconf;
        next->sent_at = now;
        memcpy(out->problems, confirmed, sizeof(confirmed[0]) * (size_t)nconf);
        out->nproblems = nconf;
        out->since = next->since;
        return;
    }
    /* Nothing confirmed: an all-clear once every check is ok, if problems
     * were sent; a blip that never was sent clears silently. */
    if (prev->nsent && all_ok) {
        out->kind = ALERT_CLEAR;
        memcpy(out->fixed, prev->sent, sizeof(prev->sent[0]) * (size_t)prev->nsent);
        out->nfixed = prev->nsent;
        out->since = prev->since;
        next->nsent = 0;
        next->sent_at = now;
        next->since = 0;
    }
}

void alert_state_unsent(struct alert_state *next, const struct alert_state *prev)
{
    memcpy(next->sent, prev->sent, sizeof(next->sent));
    next->nsent = prev->nsent;
    next->sent_at = prev->sent_at;
    next->since = prev->since;
}

const char *alert_kind_name(enum alert_kind k)
{
    static const char *const names[] = {"none", "new", "changed", "reminder", "clear"};
    return names[k];
}

static json_t *items_json(const struct alert_item *items, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:s, s:s, s:I}", "code", items[i].code, "state",
                                           check_state_name(items[i].state), "first_seen",
                                           (json_int_t)items[i].first_seen));
    return a;
}

json_t *alert_state_json(const struct alert_state *s)
{
    return json_pack("{s:i, s:o, s:o, s:I, s:I}", "version", 1, "seen",
                     items_json(s->seen, s->nseen), "sent", items_json(s->sent, s->nsent),
                     "sent_at", (json_int_t)s->sent_at, "since", (json_int_t)s->since);
}

static bool items_parse(const json_t *a, struct alert_item *items, int *n)
{
    *n = 0;
    if (!json_is_array(a) || json_array_size(a) > CHECKS_MAX)
        return false;
    size_t i;
    const json_t *v;
    json_array_foreach(a, i, v)
    {
        const char *code = json_string_value(json_object_get(v, "code"));
        const char *state = json_string_value(json_object_get(v, "state"));
        const json_t *first = json_object_get(v, "first_seen");
        struct alert_item *it = &items[*n];
        if (!code || strlen(code) >= sizeof(it->code) || !state ||
            !check_state_parse(state, &it->state) || !is_problem(it->state) ||
            !json_is_integer(first))
            return false;
        snprintf(it->code, sizeof(it->code), "%s", code);
        it->first_seen = json_integer_value(first);
        (*n)++;
    }
    return true;
}

int alert_state_parse(const json_t *j, struct alert_state *out)
{
    memset(out, 0, sizeof(*out));
    const json_t *at = json_object_get(j, "sent_at"), *since = json_object_get(j, "since");
    if (!json_is_object(j) || json_integer_value(json_object_get(j, "version")) != 1 ||
        !items_parse(json_object_get(j, "seen"), out->seen, &out->nseen) ||
        !items_parse(json_object_get(j, "sent"), out->sent, &out->nsent) || !json_is_integer(at) ||
        !json_is_integer(since)) {
        memset(out, 0, sizeof(*out));
        return ERR_INVALID;
    }
    out->sent_at = json_integer_value(at);
    out->since = json_integer_value(since);
    return ERR_OK;
}
