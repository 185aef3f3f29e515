/* test_config.c - the settings table: defaults, precedence of the three
 * sources, bounds, and the committed shortd.conf.example agreeing with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/config.h"
#include "base/err.h"
#include "test.h"

#include "base/banned.h"

static char *slurp(FILE *f)
{
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = calloc(1, (size_t)n + 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n)
        p[0] = '\0';
    return p;
}

void test_config_example_file(void)
{
    FILE *gen = tmpfile();
    CHECK(gen != NULL);
    if (!gen)
        return;
    config_print_example(gen);
    char *want = slurp(gen);
    fclose(gen);
    FILE *f = fopen("shortd.conf.example", "r");
    CHECK(f != NULL); /* run from the repository root */
    if (f) {
        char *have = slurp(f);
        fclose(f);
        CHECK(want && have && strcmp(want, have) == 0);
        free(have);
    }
    free(want);
}

void test_config_sources(void)
{
    struct config c;
    config_init(&c);
    CHECK_EQ_STR(c.listen, "127.0.0.1:8080");
    CHECK_EQ_INT(c.max_header_bytes, 16384);
    CHECK_EQ_INT(c.max_target_bytes, 4096);
    CHECK_EQ_INT(c.max_body_bytes, 1048576);
    CHECK_EQ_INT(c.header_timeout, 10);
    CHECK_EQ_INT(c.body_timeout, 30);
    CHECK_EQ_INT(c.idle_timeout, 60);
    CHECK_EQ_INT(c.max_connections, 10000);
    CHECK_EQ_INT(c.pass_query, 1);
    CHECK(c.base_url == NULL);

    char path[] = "/tmp/shortd-config-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("# a comment\n\nbase-url = http://file.example\nidle-timeout = 5\n"
          "home = \"/x\"\npass-query = off\n",
          f);
    fclose(f);
    char err[256];
    CHECK_EQ_INT(config_load_file(&c, path, err, sizeof(err)), ERR_OK);
    CHECK_EQ_STR(c.base_url, "http://file.example");
    CHECK_EQ_INT(c.idle_timeout, 5);
    CHECK_EQ_STR(c.home, "/x");
    CHECK_EQ_INT(c.pass_query, 0);

    setenv("SHORTD_BASE_URL", "http://env.example", 1);
    setenv("SHORTD_IDLE_TIMEOUT", "7", 1);
    CHECK_EQ_INT(config_load_env(&c, err, sizeof(err)), ERR_OK);
    CHECK_EQ_STR(c.base_url, "http://env.example");
    CHECK_EQ_INT(c.idle_timeout, 7);
    unsetenv("SHORTD_BASE_URL");
    unsetenv("SHORTD_IDLE_TIMEOUT");

    CHECK_EQ_INT(config_set(&c, "base-url", "http://flag.example", err, sizeof(err)), ERR_OK);
    CHECK_EQ_STR(c.base_url, "http://flag.example");

    /* Bounds and unknown names */
    CHECK_EQ_INT(config_set(&c, "idle-timeout", "0", err, sizeof(err)), ERR_INVALID);
    CHECK(strstr(err, "idle-timeout") != NULL);
    CHECK_EQ_INT(config_set(&c, "idle-timeout", "12x", err, sizeof(err)), ERR_INVALID);
    CHECK_EQ_INT(config_set(&c, "pass-query", "maybe", err, sizeof(err)), ERR_INVALID);
    CHECK_EQ_INT(config_set(&c, "no-such", "1", err, sizeof(err)), ERR_NOTFOUND);
    CHECK(strstr(err, "no-such") != NULL);

    f = fopen(path, "w");
    fputs("idle-timeout = 5\nbogus-key = 1\n", f);
    fclose(f);
    CHECK(config_load_file(&c, path, err, sizeof(err)) != ERR_OK);
    CHECK(strstr(err, "bogus-key") != NULL && strstr(err, ":2:") != NULL);
    unlink(path);
    config_release(&c);
}

struct restarts {
    char names[256];
};

static void note_restart(const char *name, void *arg)
{
    struct restarts *r = arg;
    size_t n = strlen(r->names);
    snprintf(r->names + n, sizeof(r->names) - n, "%s%s", n ? " " : "", name);
}

/* SIGHUP's diff: live settings copied into the running configuration, the
 * others named and left alone, unchanged ones neither. */
void test_config_reload(void)
{
    struct config was, next, running;
    char err[256];
    config_init(&was);
    config_init(&next);
    CHECK_EQ_INT(config_set(&was, "threads", "2", err, sizeof(err)), ERR_OK);
    config_copy(&running, &was);
    CHECK_EQ_INT(config_set(&running, "base-url", "http://filled.in", err, sizeof(err)), ERR_OK);
    CHECK_EQ_INT(config_set(&next, "threads", "3", err, sizeof(err)), ERR_OK);
    CHECK_EQ_INT(config_set(&next, "rate-auth", "5/30", err, sizeof(err)), ERR_OK);
    CHECK_EQ_INT(config_set(&next, "log-level", "debug", err, sizeof(err)), ERR_OK);
    CHECK_EQ_INT(config_set(&next, "listen", "127.0.0.1:9", err, sizeof(err)), ERR_OK);
    CHECK_EQ_INT(config_set(&next, "retention-days", "30", err, sizeof(err)), ERR_OK);
    struct restarts r = {""};
    CHECK_EQ_INT(config_reload(&running, &was, &next, note_restart, &r), 3);
    CHECK_EQ_STR(r.names, "listen threads");
    CHECK_EQ_INT(running.rate_auth.limit, 5);
    CHECK_EQ_INT(running.rate_auth.window, 30);
    CHECK_EQ_STR(running.log_level, "debug");
    CHECK_EQ_INT(running.retention_days, 30);
    CHECK_EQ_INT(running.threads, 2);
    CHECK_EQ_STR(running.listen, "127.0.0.1:8080");
    CHECK_EQ_STR(running.base_url, "http://filled.in"); /* not in the file: kept */
    /* The same again: nothing changed. */
    r.names[0] = '\0';
    CHECK_EQ_INT(config_reload(&running, &next, &next, note_restart, &r), 0);
    CHECK_EQ_STR(r.names, "");
    /* A bad log level is refused where it is set, with the value. */
    CHECK_EQ_INT(config_set(&next, "log-level", "loud", err, sizeof(err)), ERR_INVALID);
    CHECK(strstr(err, "'loud'") != NULL);
    config_release(&was);
    config_release(&next);
    config_release(&running);
}
