/* handlers.h - every HTTP handler, one group per resource file. A handler
 * checks its input, writes the answer and returns the status (or HTTP_ASYNC). */
#ifndef SHORTD_HANDLERS_H
#define SHORTD_HANDLERS_H

#include "http/http.h"

/* redirect.c - GET|HEAD /<code>, the hot path */
int handle_redirect(struct request *r, struct slice code);
/* controlled.c - POST /<code>: the password form of a protected link */
int handle_gate_post(struct request *r, struct slice code);

/* api_links.c */
struct app;
struct link;
json_t *link_json(const struct app *app, const struct link *l, int64_t now); /* the link object */
int handle_link_create(struct request *r);
int handle_link_bulk(struct request *r);
/* A bulk create's body, checked as handle_link_bulk does before anything is
 * stored: link_bulk_body finds its "links" array (ERR_INVALID with the
 * offending field and a reason for a body refused whole); link_bulk_item
 * parses one item into 'in' (0) or refuses it, 400 with its error object. */
struct links;
struct link_input;
int link_bulk_body(json_t *body, json_t **links, const char **field, char *why, size_t whylen);
int link_bulk_item(struct links *l, json_t *item, int64_t now, struct link_input *in,
                   json_t **error);
int handle_link_list(struct request *r);
int handle_link_get(struct request *r);
int handle_link_delete(struct request *r);
int handle_link_disable(struct request *r);
int handle_link_enable(struct request *r);
int handle_link_patch(struct request *r);
int handle_link_history(struct request *r);

/* api_domains.c */
int handle_domain_add(struct request *r);
int handle_domain_list(struct request *r);
int handle_domain_patch(struct request *r); /* its not-found redirects */
int handle_domain_delete(struct request *r);

/* api_sites.c - sites (sites.h), their tokens and stats, the badge */
int handle_site_create(struct request *r);
int handle_site_list(struct request *r);
int handle_site_get(struct request *r);
int handle_site_patch(struct request *r);
int handle_site_delete(struct request *r);
int handle_site_token_create(struct request *r);
int handle_site_token_delete(struct request *r);
int handle_site_stats(struct request *r);
int handle_site_badge(struct request *r);
/* A site read token in ?token= or a Bearer "st_...": true with *token. */
bool site_token_in(const struct request *r, struct slice *token);
/* collect.c - GET|POST /e: a site's page beacon, on the event loop */
int handle_beacon(struct request *r);

/* api_keys.c */
int handle_sink_create(struct request *r); /* api_sinks.c */
int handle_sink_list(struct request *r);
int handle_sink_get(struct request *r);
int handle_sink_patch(struct request *r);
int handle_sink_delete(struct request *r);
int handle_sink_rotate(struct request *r);
int handle_key_create(struct request *r);
int handle_key_list(struct request *r);
int handle_key_delete(struct request *r);

/* api_stats.c */
int handle_link_stats(struct request *r);
int handle_link_top(struct request *r);
int handle_stats(struct request *r);
int handle_export(struct request *r);

/* compat_bitly.c - Bitly's API v4 (bitly_dialect) */
int handle_bitly_shorten(struct request *r);
int handle_bitly_create(struct request *r);
int handle_bitly_get(struct request *r);
int handle_bitly_patch(struct request *r);
int handle_bitly_expand(struct request *r);
int handle_bitly_clicks(struct request *r);
int handle_bitly_clicks_summary(struct request *r);
int handle_bitly_countries(struct request *r);
int handle_bitly_referrers(struct request *r);
int handle_bitly_user(struct request *r);
int handle_bitly_groups(struct request *r);
int handle_bitly_group_bitlinks(struct request *r);
struct api_dialect;
extern const struct api_dialect bitly_dialect;

/* api_qr.c */
int handle_link_qr(struct request *r);

/* api_admin.c */
int handle_blocklist_list(struct request *r);
int handle_blocklist_add(struct request *r);
int handle_blocklist_delete(struct request *r);
int handle_session_create(struct request *r);
int handle_session_get(struct request *r);
int handle_session_delete(struct request *r);
int handle_setup_get(struct request *r);
int handle_setup_create(struct request *r);
int handle_user_list(struct request *r);
int handle_user_create(struct request *r);
int handle_user_patch(struct request *r);

/* notfound.c: a path nothing serves: 302 to `regular-404-redirect` for a
 * GET or HEAD outside /api/ when it is set, else 404 "no such path". */
int handle_no_route(struct request *r);
/* GET /: 302 to the domain's base URL redirect, else to `home` */
int handle_home(struct request *r);

/* api_ops.c */
int handle_robots(struct request *r); /* GET /robots.txt: `robots-txt`, or the default */
int handle_healthz(struct request *r);
int handle_readyz(struct request *r);
int handle_metrics(struct request *r);
int handle_ops_health(struct request *r);

/* compat_yourls.c - YOURLS's yourls-api.php; its dialect is the router's */
struct api_dialect;
extern const struct api_dialect yourls_dialect;
int handle_yourls(struct request *r);

/* compat_shlink.c - Shlink's REST API v3 under /rest; its dialect is the router's */
struct api_dialect;
extern const struct api_dialect shlink_dialect;
int handle_shlink_create(struct request *r);
int handle_shlink_list(struct request *r);
int handle_shlink_get(struct request *r);
int handle_shlink_edit(struct request *r);
int handle_shlink_delete(struct request *r);
int handle_shlink_visits(struct request *r);
int handle_shlink_visits_summary(struct request *r);
int handle_shlink_tags(struct request *r);
int handle_shlink_health(struct request *r);

/* dashboard.c - the web dashboard, compiled in from web/ */
int handle_dashboard(struct request *r);
int handle_static(struct request *r);
int handle_site_script(struct request *r); /* GET /s.js, the page script of sites */
int handle_openapi(struct request *r);

/* compat_kutt.c - Kutt's API v2 under /api/v2 (its key in X-API-KEY) */
struct api_dialect;
extern const struct api_dialect kutt_dialect;
int handle_kutt_create(struct request *r);
int handle_kutt_list(struct request *r);
int handle_kutt_patch(struct request *r);
int handle_kutt_delete(struct request *r);
int handle_kutt_stats(struct request *r);
int handle_kutt_user(struct request *r);
int handle_kutt_domain_add(struct request *r);
int handle_kutt_domain_delete(struct request *r);
int handle_kutt_health(struct request *r);

#endif
