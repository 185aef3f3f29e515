/* main.c - runs every unit test function in the table below, in order, and
 * reports each failing check as it happens. The last line of output is the
 * summary that scripts read: "unit: N passed, M failed", counting test
 * functions; the exit status is 1 when any failed. An argument runs only the
 * tests whose names contain it. */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test.h"

#include "base/banned.h"

/* The one list of tests: test_<name> is defined in tests/unit/test_<module>.c. */
#define TESTS(X)                                                                                   \
    X(buf_empty)                                                                                   \
    X(coop_thread)                                                                                 \
    X(coop_loop_slice)                                                                             \
    X(coop_start)                                                                                  \
    X(wake_every_send_seen)                                                                        \
    X(storeq_runs_each_once)                                                                       \
    X(storeq_bound_and_cancel)                                                                     \
    X(storeq_heavy_per_key)                                                                        \
    X(store_chunked_jobs)                                                                          \
    X(store_hurried_fold)                                                                          \
    X(store_writer_turns)                                                                          \
    X(store_writer_failures)                                                                       \
    X(sqlite_coop_vfs)                                                                             \
    X(sqlite_coop_gathered_wal)                                                                    \
    X(buf_add)                                                                                     \
    X(buf_numbers)                                                                                 \
    X(buf_printf)                                                                                  \
    X(buf_growth)                                                                                  \
    X(buf_reset_release)                                                                           \
    X(buf_detach)                                                                                  \
    X(slices)                                                                                      \
    X(jsonout_cases)                                                                               \
    X(jsonout_random)                                                                              \
    X(base62_known)                                                                                \
    X(base62_decode)                                                                               \
    X(base62_round_trip)                                                                           \
    X(scramble_half_bits)                                                                          \
    X(scramble_small_domains)                                                                      \
    X(scramble_out_of_domain)                                                                      \
    X(scramble_code_space)                                                                         \
    X(scramble_keys_differ)                                                                        \
    X(scramble_spread)                                                                             \
    X(scramble_pinned)                                                                             \
    X(code_shapes)                                                                                 \
    X(alias_rules)                                                                                 \
    X(url_table)                                                                                   \
    X(url_length)                                                                                  \
    X(url_resets_outputs)                                                                          \
    X(host_normalise)                                                                              \
    X(host_matches)                                                                                \
    X(time_clocks)                                                                                 \
    X(rfc3339_format)                                                                              \
    X(rfc3339_parse)                                                                               \
    X(rfc3339_round_trip)                                                                          \
    X(rfc3339_against_libc)                                                                        \
    X(day_functions)                                                                               \
    X(day_every_day)                                                                               \
    X(classify_ua_table)                                                                           \
    X(classify_ua_edges)                                                                           \
    X(classify_names)                                                                              \
    X(classify_in_app_bots)                                                                        \
    X(classify_agents)                                                                             \
    X(classify_cache)                                                                              \
    X(classify_fast_path)                                                                          \
    X(classify_hurried)                                                                            \
    X(classify_prefetch)                                                                           \
    X(classify_referrer)                                                                           \
    X(classify_language)                                                                           \
    X(classify_utm)                                                                                \
    X(classify_hints)                                                                              \
    X(event_round_trip)                                                                            \
    X(event_version_1)                                                                             \
    X(clamp_utf8)                                                                                  \
    X(config_example_file)                                                                         \
    X(config_sources)                                                                              \
    X(config_reload)                                                                               \
    X(doctor_healthy)                                                                              \
    X(doctor_config)                                                                               \
    X(doctor_permissions)                                                                          \
    X(doctor_journal)                                                                              \
    X(doctor_clock_behind)                                                                         \
    X(doctor_listen_taken)                                                                         \
    X(doctor_unreachable)                                                                          \
    X(doctor_geoip)                                                                                \
    X(fuzzfound_config_long_lines)                                                                 \
    X(geo_lookups)                                                                                 \
    X(geo_unknown_inputs)                                                                          \
    X(geo_threads)                                                                                 \
    X(geo_open_errors)                                                                             \
    X(geo_from_header)                                                                             \
    X(journal_round_trip)                                                                          \
    X(journal_rotation)                                                                            \
    X(journal_format)                                                                              \
    X(journal_crc_is_zlibs)                                                                        \
    X(journal_reopen)                                                                              \
    X(journal_replay_from_middle)                                                                  \
    X(journal_replay_twice)                                                                        \
    X(journal_torn_tail)                                                                           \
    X(journal_damaged_older_segment)                                                               \
    X(journal_release)                                                                             \
    X(journal_busy)                                                                                \
    X(journal_record_limits)                                                                       \
    X(journal_open_errors)                                                                         \
    X(journal_write_failure)                                                                       \
    X(journal_recovers_after_failure)                                                              \
    X(journal_skip_to)                                                                             \
    X(journal_down_and_idle)                                                                       \
    X(journal_rotate)                                                                              \
    X(events_sign)                                                                                 \
    X(events_ids)                                                                                  \
    X(events_backoff)                                                                              \
    X(events_types)                                                                                \
    X(events_bodies)                                                                               \
    X(events_journal_read)                                                                         \
    X(store_events)                                                                                \
    X(store_meta)                                                                                  \
    X(store_watch)                                                                                 \
    X(store_transactions)                                                                          \
    X(store_links)                                                                                 \
    X(csvread_records)                                                                             \
    X(progress_format)                                                                             \
    X(import_sink)                                                                                 \
    X(store_list)                                                                                  \
    X(store_sweep)                                                                                 \
    X(store_claim)                                                                                 \
    X(store_keys)                                                                                  \
    X(store_users)                                                                                 \
    X(keycache_hit_miss)                                                                           \
    X(keycache_revoked)                                                                            \
    X(keycache_bounded)                                                                            \
    X(keycache_ttl)                                                                                \
    X(keycache_threads)                                                                            \
    X(keycache_links)                                                                              \
    X(keycache_pg_revoke_notifies)                                                                 \
    X(keycache_pg_listener_back)                                                                   \
    X(store_idempotency)                                                                           \
    X(store_blocklist)                                                                             \
    X(store_analytics)                                                                             \
    X(store_appended_days)                                                                         \
    X(store_compact_stops)                                                                         \
    X(store_day_race)                                                                              \
    X(store_sites)                                                                                 \
    X(store_concurrent_counts)                                                                     \
    X(store_prune)                                                                                 \
    X(store_upgrade)                                                                               \
    X(migrations_embedded)                                                                         \
    X(migrations_run)                                                                              \
    X(sqlgen_list)                                                                                 \
    X(sqlgen_list_shapes)                                                                          \
    X(sqlgen_floor)                                                                                \
    X(sqlgen_move)                                                                                 \
    X(hosts_header)                                                                                \
    X(hosts_list)                                                                                  \
    X(store_controls)                                                                              \
    X(store_lifecycle)                                                                             \
    X(store_checkpoints)                                                                           \
    X(store_pg)                                                                                    \
    X(cache_put_get)                                                                               \
    X(cache_fill_never_overwrites)                                                                 \
    X(cache_bounds)                                                                                \
    X(cache_misses_expire)                                                                         \
    X(cache_grow_and_churn)                                                                        \
    X(cache_readers_during_writes)                                                                 \
    X(rcache_url)                                                                                  \
    X(rcache_breaker)                                                                              \
    X(rcache_round_trip)                                                                           \
    X(rcache_stalled)                                                                              \
    X(rcache_restart)                                                                              \
    X(bus_redis)                                                                                   \
    X(bus_pg)                                                                                      \
    X(clientaddr_parse)                                                                            \
    X(clientaddr_cidrs)                                                                            \
    X(clientaddr_resolve)                                                                          \
    X(ratelimit_window_math)                                                                       \
    X(ratelimit_memory)                                                                            \
    X(ratelimit_bounded)                                                                           \
    X(ratelimit_threads)                                                                           \
    X(ratelimit_reload)                                                                            \
    X(ratelimit_password)                                                                          \
    X(ratelimit_redis)                                                                             \
    X(bus_redis_killed)                                                                            \
    X(bump)                                                                                        \
    X(dayrow_tallies)                                                                              \
    X(dayrow_many_values)                                                                          \
    X(dayrow_recent)                                                                               \
    X(dayrow_visitors)                                                                             \
    X(dayrow_merge_recent)                                                                         \
    X(dayrow_old_rows)                                                                             \
    X(dayrow_bad_blobs)                                                                            \
    X(fuzzfound_dayrow_counts)                                                                     \
    X(utm_json)                                                                                    \
    X(utm_json_errors)                                                                             \
    X(utm_merge)                                                                                   \
    X(utm_merge_limit)                                                                             \
    X(variants_parse)                                                                              \
    X(variants_parse_errors)                                                                       \
    X(variants_pick)                                                                               \
    X(pwhash_valid)                                                                                \
    X(pwhash_sync)                                                                                 \
    X(pwhash_bcrypt)                                                                               \
    X(dbsrc_sqlite)                                                                                \
    X(dbsrc_pg)                                                                                    \
    X(pwhash_async)                                                                                \
    X(users_rules)                                                                                 \
    X(users_lifecycle)                                                                             \
    X(users_sessions)                                                                              \
    X(users_setup)                                                                                 \
    X(api_session_roles)                                                                           \
    X(api_session_failures)                                                                        \
    X(api_users_setup)                                                                             \
    X(api_users_admin)                                                                             \
    X(gate_page)                                                                                   \
    X(gate_escaping)                                                                               \
    X(gate_csp)                                                                                    \
    X(gate_form)                                                                                   \
    X(gate_continue)                                                                               \
    X(router_not_found)                                                                            \
    X(router_method_not_allowed)                                                                   \
    X(router_reserved)                                                                             \
    X(cors_check)                                                                                  \
    X(cors_allowed)                                                                                \
    X(cors_preflight)                                                                              \
    X(cors_answers)                                                                                \
    X(cors_default_none)                                                                           \
    X(openapi_routes)                                                                              \
    X(api_links_create)                                                                            \
    X(api_links_create_store_fails)                                                                \
    X(api_links_get)                                                                               \
    X(api_links_list)                                                                              \
    X(api_links_delete)                                                                            \
    X(api_links_idempotency)                                                                       \
    X(api_links_bulk)                                                                              \
    X(api_links_patch)                                                                             \
    X(api_links_history)                                                                           \
    X(api_links_disable_enable)                                                                    \
    X(api_links_list_filters)                                                                      \
    X(compat_bitly_shorten)                                                                        \
    X(compat_bitly_bitlinks)                                                                       \
    X(compat_bitly_clicks)                                                                         \
    X(compat_bitly_user_groups)                                                                    \
    X(compat_bitly_domain)                                                                         \
    X(compat_bitly_unserved)                                                                       \
    X(compat_shlink_create)                                                                        \
    X(compat_shlink_create_refused)                                                                \
    X(compat_shlink_keys)                                                                          \
    X(compat_shlink_one_link)                                                                      \
    X(compat_shlink_list)                                                                          \
    X(rules_create_limit)                                                                          \
    X(rules_unavailable)                                                                           \
    X(rules_owner)                                                                                 \
    X(rules_link_changed)                                                                          \
    X(redirect_plain)                                                                              \
    X(redirect_gone)                                                                               \
    X(redirect_cache)                                                                              \
    X(redirect_clicks)                                                                             \
    X(redirect_password)                                                                           \
    X(redirect_variants)                                                                           \
    X(redirect_click_limit)                                                                        \
    X(redirect_untracked)                                                                          \
    X(redirect_untracked_limit)                                                                    \
    X(redirect_accept_ch)                                                                          \
    X(redirect_utm)                                                                                \
    X(redirect_hosts)                                                                              \
    X(redirect_visitor_pages)                                                                      \
    X(redirect_fallbacks)                                                                          \
    X(redirect_robots)                                                                             \
    X(redirect_domain_fallbacks)                                                                   \
    X(api_stats_link)                                                                              \
    X(api_stats_top)                                                                               \
    X(api_stats_service)                                                                           \
    X(api_stats_export)                                                                            \
    X(api_stats_export_domain)                                                                     \
    X(api_keys_scopes)                                                                             \
    X(api_keys_manage)                                                                             \
    X(api_keys_domain)                                                                             \
    X(api_keys_roles)                                                                              \
    X(keyuse_marks)                                                                                \
    X(api_domains_add)                                                                             \
    X(api_sites)                                                                                   \
    X(sites_beacon_decode)                                                                         \
    X(sites_rules)                                                                                 \
    X(sites_map)                                                                                   \
    X(sites_fold)                                                                                  \
    X(api_domains_list)                                                                            \
    X(api_domains_delete)                                                                          \
    X(api_domains_links)                                                                           \
    X(api_admin_blocklist_add)                                                                     \
    X(api_admin_blocklist_delete)                                                                  \
    X(api_admin_blocklist_list)                                                                    \
    X(api_ops_home)                                                                                \
    X(api_ops_healthz)                                                                             \
    X(api_ops_readyz)                                                                              \
    X(api_ops_metrics)                                                                             \
    X(api_ops_health)                                                                              \
    X(api_ops_scope)                                                                               \
    X(alert_rules_confirm)                                                                         \
    X(alert_rules_repeat_and_change)                                                               \
    X(alert_rules_unknown)                                                                         \
    X(alert_rules_state_json)                                                                      \
    X(alert_message_content)                                                                       \
    X(ops_nodes)                                                                                   \
    X(api_ops_clicks_lag)                                                                          \
    X(api_ops_clicks_held)                                                                         \
    X(api_ops_clicks_on_disk)                                                                      \
    X(api_ops_backlog_not_judged)                                                                  \
    X(api_ops_clicks_compacted)                                                                    \
    X(api_qr_svg)                                                                                  \
    X(api_qr_png)                                                                                  \
    X(api_qr_errors)                                                                               \
    X(when_formats)                                                                                \
    X(mysqldump_statements)                                                                        \
    X(mysqldump_escapes)                                                                           \
    X(mysqldump_forms)                                                                             \
    X(mysqldump_damage)                                                                            \
    X(mysqldump_pieces)                                                                            \
    X(form_urlencoded)                                                                             \
    X(form_multipart)                                                                              \
    X(compat_yourls_shorturl)                                                                      \
    X(compat_yourls_bad_input)                                                                     \
    X(compat_yourls_reads)                                                                         \
    X(compat_yourls_formats)                                                                       \
    X(compat_yourls_auth)                                                                          \
    X(compat_yourls_signature_token)                                                               \
    X(compat_yourls_store_fails)                                                                   \
    X(compat_yourls_cors)                                                                          \
    X(compat_kutt_create)                                                                          \
    X(compat_kutt_bad_input)                                                                       \
    X(compat_kutt_ids)                                                                             \
    X(compat_kutt_routes)                                                                          \
    X(compat_kutt_auth_owner)                                                                      \
    X(compat_kutt_store_fails)                                                                     \
    X(compat_kutt_cors)                                                                            \
    X(compat_kutt_unserved)

#define X(name) void test_##name(void);
TESTS(X)
#undef X

static const struct {
    const char *name;
    void (*fn)(void);
} tests[] = {
#define X(name) {#name, test_##name},
    TESTS(X)
#undef X
};

int test_checks_passed;
int test_checks_failed;

bool test_check(bool ok, const char *file, int line, const char *expr)
{
    if (ok) {
        test_checks_passed++;
        return true;
    }
    test_checks_failed++;
    fprintf(stderr, "%s:%d: check failed: %s\n", file, line, expr);
    return false;
}

bool test_check_int(long long a, long long b, const char *file, int line, const char *ea,
                    const char *eb)
{
    if (a == b)
        return test_check(true, file, line, NULL);
    test_checks_failed++;
    fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n", file, line, ea, eb, a, b);
    return false;
}

bool test_check_str(const char *a, const char *b, const char *file, int line, const char *ea,
                    const char *eb)
{
    if (a && b && strcmp(a, b) == 0)
        return test_check(true, file, line, NULL);
    test_checks_failed++;
    fprintf(stderr, "%s:%d: check failed: %s == %s (\"%s\" != \"%s\")\n", file, line, ea, eb,
            a ? a : "(null)", b ? b : "(null)");
    return false;
}

void test_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("    ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int test_threads_named(const char *name, long *tid)
{
    DIR *d = opendir("/proc/self/task");
    int found = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[288], comm[32] = "";
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof(comm), f)) {
            comm[strcspn(comm, "\n")] = '\0';
            if (strcmp(comm, name) == 0) {
                found++;
                if (tid)
                    *tid = atol(e->d_name);
            }
        }
        fclose(f);
    }
    if (d)
        closedir(d);
    return found;
}

/* UNIT_SKIP: comma-separated prefixes of tests not to run (the suite under
 * ThreadSanitizer skips the slow single-threaded ones, scripts/test.sh). */
static bool skipped(const char *name)
{
    const char *p = getenv("UNIT_SKIP");
    while (p && *p) {
        size_t n = strcspn(p, ",");
        if (n && !strncmp(name, p, n))
            return true;
        p += n + (p[n] == ',');
    }
    return false;
}

/* UNIT_TIMES set: each test's wall time on stderr, to find the slow ones. */
int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (argc > 1 && !strstr(tests[i].name, argv[1]))
            continue;
        if (skipped(tests[i].name))
            continue;
        int failed_before = test_checks_failed;
        int passed_before = test_checks_passed;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        tests[i].fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (getenv("UNIT_TIMES"))
            fprintf(stderr, "time %s %.3f\n", tests[i].name,
                    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
        if (test_checks_failed == failed_before && test_checks_passed == passed_before) {
            /* A test that checked nothing proves nothing. */
            failed++;
            fprintf(stderr, "FAIL %s: no checks ran\n", tests[i].name);
        } else if (test_checks_failed == failed_before) {
            passed++;
        } else {
            failed++;
            fprintf(stderr, "FAIL %s\n", tests[i].name);
        }
    }
    printf("unit: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
