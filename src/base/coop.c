/* coop.c - see coop.h. */
#include "base/coop.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

#include "base/banned.h"

static bool idle_policy;            /* coop_set_idle() */
static _Thread_local bool joined;   /* coop_thread() */
static _Thread_local bool niced;    /* ... with a lower priority */
static _Thread_local int64_t since; /* ns, CLOCK_MONOTONIC */
static _Thread_local unsigned long yields;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void coop_set_idle(bool idle) { idle_policy = idle; }

void coop_thread(int nice)
{
    if (nice > 0 && setpriority(PRIO_PROCESS, (id_t)gettid(), nice) != 0)
        log_at(LOG_WARN, "cannot lower a background thread's priority: %s", strerror(errno));
    niced = nice > 0;
    if (idle_policy) {
        struct sched_param none = {0};
        if (sched_setscheduler(0, SCHED_IDLE, &none) == 0)
            niced = true;
        else
            log_at(LOG_WARN, "cannot make a background thread SCHED_IDLE: %s", strerror(errno));
    }
    joined = true;
    since = mono_ns();
}

/* sched_setattr(2): glibc 2.36 has no wrapper and <linux/sched/types.h>
 * clashes with <sched.h>, so the kernel's struct (version 1, 56 bytes) is
 * written out here. For SCHED_OTHER the kernel reads the nice value and,
 * since 6.12, sched_runtime as the thread's slice. */
struct sched_attr_v1 {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
};

void coop_loop_slice(int us)
{
    int policy = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
    if (us <= 0 || (policy != SCHED_OTHER && policy != SCHED_BATCH))
        return;
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)gettid());
    if (nice == -1 && errno)
        nice = 0;
    struct sched_attr_v1 a = {.size = sizeof(a),
                              .policy = (uint32_t)policy,
                              .nice = nice,
                              .runtime = (uint64_t)us * 1000};
    if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
        log_at(LOG_WARN, "cannot set an event loop's time slice: %s", strerror(errno));
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

struct start {
    struct coop_role role;
    void *(*fn)(void *);
    void *arg;
    sem_t ready;
};

static void *start_main(void *arg)
{
    struct start *s = arg; /* the starter's, until ready is posted */
    pthread_setname_np(pthread_self(), s->role.name);
    if (s->role.nice >= 0)
        coop_thread(s->role.nice);
    if (s->role.slice_us > 0)
        coop_loop_slice(s->role.slice_us);
    void *(*fn)(void *) = s->fn;
    void *fn_arg = s->arg;
    sem_post(&s->ready);
    return fn(fn_arg);
}

int coop_start(pthread_t *thread, struct coop_role role, void *(*fn)(void *), void *arg)
{
    struct start s = {.role = role, .fn = fn, .arg = arg};
    if (sem_init(&s.ready, 0, 0) != 0)
        return errno;
    int rc = pthread_create(thread, NULL, start_main, &s);
    if (rc == 0)
        while (sem_wait(&s.ready) != 0 && errno == EINTR)
            ;
    sem_destroy(&s.ready);
    return rc;
}

bool coop_background(void) { return joined; }

unsigned long coop_yields(void) { return yields; }
