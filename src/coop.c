/* coop.c - see coop.h. */
#include "coop.h"

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#include "banned.h"

static _Thread_local bool joined;      /* coop_thread() */
static _Thread_local bool niced;       /* ... with a lower priority */
static _Thread_local int64_t since;     /* ns, CLOCK_MONOTONIC */
static _Thread_local unsigned long yields;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void coop_thread(int nice)
{
    if (nice > 0 && setpriority(PRIO_PROCESS, (id_t)gettid(), nice) != 0)
        log_at(LOG_WARN, "cannot lower a background thread's priority: %s", strerror(errno));
    niced = nice > 0;
    joined = true;
    since = mono_ns();
}

void coop_point(void)
{
    if (!joined)
        return;
    int64_t now = mono_ns();
    if (now - since < (int64_t)COOP_SLICE_US * 1000)
        return;
    if (niced) {
        sched_yield();
    } else {
        struct timespec pause = {0, COOP_PAUSE_US * 1000};
        nanosleep(&pause, NULL);
    }
    yields++;
    since = mono_ns();
}

void coop_rest(void)
{
    if (joined)
        since = mono_ns();
}

bool coop_background(void)
{
    return joined;
}

unsigned long coop_yields(void)
{
    return yields;
}
