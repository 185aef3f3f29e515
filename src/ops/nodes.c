/* nodes.c - the nodes heard on the bus (nodes.h): a small table under a
 * mutex, written by the bus's listener threads, read by the checks. */
#include "ops/nodes.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/checks.h"
#include "store/bus.h"
#include "base/banned.h"

#define NODES_MAX 64
#define NAME_MAX_LEN 48
#define VERSION_MAX_LEN 32

struct node {
    char name[NAME_MAX_LEN + 1];
    char version[VERSION_MAX_LEN + 1];
    int64_t seen;
};

struct ops_nodes {
    char self[NAME_MAX_LEN + 1];
    char version[VERSION_MAX_LEN + 1];
    int64_t started;
    pthread_mutex_t mu;
    struct node n[NODES_MAX];
    int count;
};

/* Copies 's' as [0-9A-Za-z._-], anything else as '_', at most 'cap' bytes. */
static void bus_safe(char *out, const char *s, size_t cap)
{
    size_t i = 0;
    for (; s && s[i] && i < cap; i++) {
        char c = s[i];
        out[i] = isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_' ? c : '_';
    }
    out[i] = '\0';
}

struct ops_nodes *ops_nodes_new(const char *self, const char *version, int64_t now)
{
    struct ops_nodes *n = calloc(1, sizeof(*n));
    if (!n)
        abort();
    n->started = now;
    bus_safe(n->self, self, NAME_MAX_LEN);
    bus_safe(n->version, version, VERSION_MAX_LEN);
    pthread_mutex_init(&n->mu, NULL);
    return n;
}

void ops_nodes_free(struct ops_nodes *n)
{
    if (!n)
        return;
    pthread_mutex_destroy(&n->mu);
    free(n);
}

size_t ops_nodes_message(const struct ops_nodes *n, char *out)
{
    int len = snprintf(out, BUS_MSG_MAX + 1, "%s%s:%s", BUS_NODE, n->self, n->version);
    return len < 0 ? 0 : (size_t)len > BUS_MSG_MAX ? BUS_MSG_MAX : (size_t)len;
}

void ops_nodes_heard(struct ops_nodes *n, const char *msg, size_t len, int64_t now)
{
    if (!bus_is_node(msg, len))
        return;
    const char *name = msg + BUS_NODE_LEN, *end = msg + len;
    const char *colon = memchr(name, ':', (size_t)(end - name));
    size_t nn = (size_t)(colon - name), vn = (size_t)(end - colon - 1);
    if (!nn || nn > NAME_MAX_LEN || vn > VERSION_MAX_LEN)
        return;
    pthread_mutex_lock(&n->mu);
    struct node *slot = NULL, *oldest = &n->n[0];
    for (int i = 0; i < n->count && !slot; i++) {
        if (strlen(n->n[i].name) == nn && !memcmp(n->n[i].name, name, nn))
            slot = &n->n[i];
        else if (n->n[i].seen < oldest->seen)
            oldest = &n->n[i];
    }
    if (!slot)
        slot = n->count < NODES_MAX ? &n->n[n->count++] : oldest; /* the table is full: the
                                                                   * longest unheard goes */
    snprintf(slot->name, sizeof(slot->name), "%.*s", (int)nn, name);
    snprintf(slot->version, sizeof(slot->version), "%.*s", (int)vn, colon + 1);
    slot->seen = now;
    pthread_mutex_unlock(&n->mu);
}

void ops_nodes_judge(struct ops_nodes *n, int64_t now, int64_t window_ms, struct check_result *r)
{
    char list[160] = ""; /* what fits in a measured text with its words */
    size_t used = 0;
    int seen = 0;
    bool self = false, mixed = false;
    const char *first_version = NULL;
    pthread_mutex_lock(&n->mu);
    for (int i = 0; i < n->count; i++) {
        const struct node *x = &n->n[i];
        if (now - x->seen > window_ms)
            continue;
        seen++;
        self = self || !strcmp(x->name, n->self);
        if (!first_version)
            first_version = x->version;
        else
            mixed = mixed || strcmp(first_version, x->version) != 0;
        int w = snprintf(list + used, sizeof(list) - used, "%s%s (%s)", used ? ", " : "", x->name,
                         x->version);
        if (w > 0 && (size_t)w < sizeof(list) - used)
            used += (size_t)w;
    }
    pthread_mutex_unlock(&n->mu);
    r->value = seen;
    r->has_value = true;
    r->unit = "nodes";
    bool early = now - n->started < window_ms; /* its first announcement may be on its way */
    r->state = (!self && !early) || mixed ? CHECK_WARN : CHECK_OK;
    if (!self && early)
        snprintf(r->measured, sizeof(r->measured),
                 "started: waiting to hear this node's own announcement on the bus; %d node%s "
                 "heard: %s",
                 seen, seen == 1 ? "" : "s", seen ? list : "none");
    else if (!self)
        snprintf(r->measured, sizeof(r->measured),
                 "this node did not hear its own announcement on the bus in the last %lld s; "
                 "%d node%s heard: %s",
                 (long long)(window_ms / 1000), seen, seen == 1 ? "" : "s", seen ? list : "none");
    else
        snprintf(r->measured, sizeof(r->measured), "%d node%s heard on the bus%s: %s", seen,
                 seen == 1 ? "" : "s", mixed ? ", running different versions" : "", list);
}
