/* wake.c - waking an event loop from another thread (wake.h).
 *
 * DESIGN
 * A sender queues its work, then swaps 'pending' to 1 and writes the eventfd
 * only when it was 0; the loop drains the eventfd, then swaps 'pending' back
 * to 0, then runs the callback. The two swaps are read-modify-writes of one
 * variable, so a sender that found 1 synchronises with the loop's swap that
 * reads it, and its queued work is visible to the callback that follows. The
 * drain comes first: a write after it leaves the eventfd readable (one more
 * wake), never a pending flag with nothing to wake the loop. */
#include "http/wake.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/banned.h"

static void on_readable(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    struct wake *w = p->data;
    uint64_t n;
    while (read(w->fd, &n, sizeof(n)) < 0 && errno == EINTR)
        ;
    atomic_exchange(&w->pending, 0);
    w->cb(w);
}

int wake_init(uv_loop_t *loop, struct wake *w, wake_cb cb)
{
    w->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->fd < 0)
        return -errno;
    atomic_init(&w->pending, 0);
    w->cb = cb;
    int rc = uv_poll_init(loop, &w->poll, w->fd);
    if (rc != 0) {
        wake_release(w);
        return rc;
    }
    w->poll.data = w;
    /* Should this fail, the handle is closed with the loop's others and the
     * fd released after it, as on the way out. */
    return uv_poll_start(&w->poll, UV_READABLE, on_readable);
}

void wake_send(struct wake *w)
{
    if (atomic_exchange(&w->pending, 1))
        return;
    uint64_t one = 1;
    /* EAGAIN only if the counter were near 2^64: the loop is readable then */
    while (write(w->fd, &one, sizeof(one)) < 0 && errno == EINTR)
        ;
}

uv_handle_t *wake_handle(struct wake *w) { return (uv_handle_t *)&w->poll; }

void wake_release(struct wake *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
}
