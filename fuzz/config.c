/* config.c (fuzz) - the config file reader (config.h) on any file content.
 *
 * The input is written to an in-memory file (memfd) that config_load_file
 * reads by its /proc/self/fd path, over the defaults, as `shortd serve
 * --config` does. Whatever it says, loading must end with ERR_OK or an
 * error whose message names the file, and the config must release cleanly.
 * Loading the same file twice must give the same verdict, and the file with
 * every line commented out ('#' put before each) must load as no settings. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "app/config.h"
#include "base/err.h"
#include "base/log.h"
#include "base/banned.h"

static int fd = -1;
static char path[64];

static void check(int cond)
{
    if (!cond)
        abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_level = LOG_OFF;
    fd = memfd_create("shortd-fuzz-config", 0);
    check(fd >= 0);
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    return 0;
}

static void put(const uint8_t *data, size_t size)
{
    check(ftruncate(fd, 0) == 0);
    check(pwrite(fd, data, size, 0) == (ssize_t)size);
}

/* The file with '#' before every line. */
static uint8_t *commented(const uint8_t *data, size_t size, size_t *n)
{
    uint8_t *out = malloc(2 * size + 1);
    check(out != NULL);
    size_t k = 0;
    bool start = true;
    for (size_t i = 0; i < size; i++) {
        if (start)
            out[k++] = '#';
        out[k++] = data[i];
        start = data[i] == '\n';
    }
    *n = k;
    return out;
}

static int load(char *err, size_t errlen)
{
    struct config c;
    config_init(&c);
    err[0] = '\0';
    int rc = config_load_file(&c, path, err, errlen);
    config_release(&c);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    put(data, size);
    char err[512], err2[512];
    int rc = load(err, sizeof(err));
    if (rc != ERR_OK) {
        check(rc == ERR_INVALID || rc == ERR_NOTFOUND);
        check(strncmp(err, path, strlen(path)) == 0);
    }
    check(load(err2, sizeof(err2)) == rc);
    check(rc == ERR_OK || strcmp(err, err2) == 0);

    size_t n;
    uint8_t *hidden = commented(data, size, &n);
    put(hidden, n);
    free(hidden);
    check(load(err, sizeof(err)) == ERR_OK);
    return 0;
}
