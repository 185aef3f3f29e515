/* nodes.h - the nodes of a cluster as the bus tells them: each node's
 * alert thread announces "!node:NAME:VERSION" (bus.h) every check-every,
 * and every node, itself included, notes each announcement it hears. The
 * `nodes` check (checks.h) lists those seen lately with their versions, and
 * warns when they run different versions or this node does not hear its
 * own announcement (then invalidations may not reach the others either). */
#ifndef SHORTD_NODES_H
#define SHORTD_NODES_H

#include <stddef.h>
#include <stdint.h>

struct check_result;
struct ops_nodes;

/* 'self' and 'version' name this node (copied, made bus-safe); 'now' is
 * when it starts announcing: until a window later, not having heard itself
 * yet is no warning. */
struct ops_nodes *ops_nodes_new(const char *self, const char *version, int64_t now);
void ops_nodes_free(struct ops_nodes *n); /* NULL is fine */

/* This node's announcement, into 'out' (BUS_MSG_MAX + 1 bytes); its length. */
size_t ops_nodes_message(const struct ops_nodes *n, char *out);
/* An announcement heard on the bus at wall clock 'now'. Any thread. */
void ops_nodes_heard(struct ops_nodes *n, const char *msg, size_t len, int64_t now);
/* The `nodes` check: those heard within 'window_ms' of 'now'. */
void ops_nodes_judge(struct ops_nodes *n, int64_t now, int64_t window_ms, struct check_result *r);

#endif
