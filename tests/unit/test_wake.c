/* test_wake.c - waking an event loop from other threads (http/wake.h):
 * every piece of work queued before a wake_send is seen by a callback, from
 * senders at the loop's priority and at a lower one, with no wake lost. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <unistd.h>
#include <uv.h>

#include "http/wake.h"
#include "test.h"

#include "base/banned.h"

#define SENDERS 4
#define SENDS 20000

struct fx {
    struct wake wake;
    uv_timer_t guard;
    atomic_long queued; /* the senders' "work" */
    long seen;          /* what the callbacks saw queued, on the loop's thread */
    long callbacks;
    bool timed_out;
};

static void on_wake(struct wake *w)
{
    struct fx *f = w->data;
    f->seen = atomic_load(&f->queued);
    f->callbacks++;
}

static void on_guard(uv_timer_t *t)
{
    struct fx *f = t->data;
    f->timed_out = true;
}

struct sender {
    struct fx *f;
    int nice;
};

static void *send_main(void *arg)
{
    struct sender *s = arg;
    if (s->nice)
        (void)setpriority(PRIO_PROCESS, (id_t)gettid(), s->nice);
    for (int i = 0; i < SENDS; i++) {
        atomic_fetch_add(&s->f->queued, 1);
        wake_send(&s->f->wake);
        if (i % 1000 == 999)
            sched_yield();
    }
    return NULL;
}

void test_wake_every_send_seen(void)
{
    uv_loop_t loop;
    CHECK_EQ_INT(uv_loop_init(&loop), 0);
    struct fx f = {.seen = 0};
    atomic_init(&f.queued, 0);
    if (!CHECK_EQ_INT(wake_init(&loop, &f.wake, on_wake), 0))
        return;
    f.wake.data = &f;
    uv_timer_init(&loop, &f.guard);
    f.guard.data = &f;
    /* a lost wake-up leaves the loop asleep with work queued: the guard
     * ends the wait, and the checks below fail */
    uv_timer_start(&f.guard, on_guard, 20000, 0);

    pthread_t t[SENDERS];
    struct sender s[SENDERS];
    for (int i = 0; i < SENDERS; i++) {
        s[i] = (struct sender){&f, i % 2 ? 19 : 0};
        CHECK_EQ_INT(pthread_create(&t[i], NULL, send_main, &s[i]), 0);
    }
    while (f.seen < (long)SENDERS * SENDS && !f.timed_out)
        uv_run(&loop, UV_RUN_ONCE);
    for (int i = 0; i < SENDERS; i++)
        pthread_join(t[i], NULL);

    CHECK(!f.timed_out);
    CHECK_EQ_INT(f.seen, (long)SENDERS * SENDS);
    CHECK(f.callbacks >= 1);
    CHECK(f.callbacks <= (long)SENDERS * SENDS);

    /* quiet again: one more send, one more callback */
    long before = f.callbacks;
    atomic_fetch_add(&f.queued, 1);
    wake_send(&f.wake);
    while (f.callbacks == before && !f.timed_out)
        uv_run(&loop, UV_RUN_ONCE);
    CHECK_EQ_INT(f.callbacks, before + 1);
    CHECK_EQ_INT(f.seen, (long)SENDERS * SENDS + 1);

    uv_close(wake_handle(&f.wake), NULL);
    uv_close((uv_handle_t *)&f.guard, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_EQ_INT(uv_loop_close(&loop), 0);
    wake_release(&f.wake);
    CHECK_EQ_INT(f.wake.fd, -1);
}
