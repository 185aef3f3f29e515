/* wake.h - waking an event loop from another thread.
 *
 * What uv_async_t does, without its wait: in Debian 12's libuv (1.44) the
 * woken loop spins until the sending thread has finished uv_async_send, and
 * a sender at a lower priority (the store threads, coop.h) preempted in
 * between keeps the loop spinning on the core it needs (libuv 1.46 removed
 * the spin; bench/HISTORY.md, "A loop spinning on a store thread"). Here a
 * sender sets a flag and, when it was clear, writes an eventfd; the loop
 * waits for nothing.
 *
 * The callback runs on the loop's thread after the flag is cleared, so work
 * queued before a wake_send is seen by the callback it causes or by a later
 * one: queue first, then wake_send. */
#ifndef SHORTD_WAKE_H
#define SHORTD_WAKE_H

#include <stdatomic.h>
#include <uv.h>

struct wake;
typedef void (*wake_cb)(struct wake *w);

struct wake {
    uv_poll_t poll; /* on 'fd', readable */
    int fd;         /* an eventfd */
    atomic_int pending;
    wake_cb cb;
    void *data; /* the caller's */
};

/* 0, or a negative errno (no eventfd, or libuv refused it). */
int wake_init(uv_loop_t *loop, struct wake *w, wake_cb cb);
/* From any thread: the callback runs soon on the loop's. */
void wake_send(struct wake *w);
/* The handle to uv_close with the loop's others. */
uv_handle_t *wake_handle(struct wake *w);
/* Once that handle is closed (the loop ran its close callbacks): the fd. */
void wake_release(struct wake *w);

#endif
