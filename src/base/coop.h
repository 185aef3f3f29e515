/* coop.h - threads off the hot path hand the core back often.
 *
 * This kernel (PREEMPT_NONE, HZ=250) lets a thread that computes keep its
 * core until the next scheduler tick, 4 ms, even when an event loop with
 * requests waiting has woken on that core: with the click threads at their
 * default priority, p99 at half load was several milliseconds, every long
 * wait one of them running through a tick (perf sched timehist). A thread
 * that folds or stores clicks calls coop_point() in its loops; once it has
 * run COOP_SLICE_US since its last yield, coop_point() yields, so a woken
 * event loop runs within that time.
 *
 * A sched_yield() only hands the core to a thread that the scheduler finds
 * owed it, so background threads also run at a lower priority (setting
 * 'background-nice', 19 by default), and then carry straight on when nothing
 * else wants the core; at nice 0 they pause COOP_PAUSE_US instead, which
 * makes the scheduler run someone else. Creates are foreground work: they
 * have a writer thread of their own (writer.h). With both, p99 at half load
 * fell below a millisecond (bench/HISTORY.md, "Figures once quoted in code
 * comments", and docs/performance.md for the figures since).
 *
 * The event loops ask for the other half: a short time slice
 * (coop_loop_slice). This kernel's scheduler (EEVDF) lets a thread run on
 * through the slice it was given before a woken one of the same priority
 * takes the core, 1.4 ms by default, and the journal thread (nice 0, so
 * that clicks reach the disk within 20 ms) runs in bursts of that order. A
 * thread with a shorter slice has an earlier deadline, so the kernel hands
 * it the core as soon as it wakes, which lowered p99 at half load (measured:
 * bench/HISTORY.md, "Up to commit 69fe67d").
 *
 * coop_point() costs one vDSO clock read a call; call it per unit of work
 * worth more than about a microsecond. Each thread keeps its own clock, of
 * wall time (a thread's CPU clock costs a system call), so a thread calls
 * coop_rest() after it sleeps. */
#ifndef SHORTD_COOP_H
#define SHORTD_COOP_H

#include <pthread.h>
#include <stdbool.h>

#define COOP_SLICE_US 200
#define COOP_PAUSE_US 50

/* Makes the calling thread a background one for good: its nice value goes
 * up by 'nice' (0..19; a thread may always lower its own priority), and
 * coop_point() yields in it (by sched_yield once niced, else by a pause). In
 * any other thread (an event loop, say, reading through a VFS that calls
 * it), coop_point() and coop_rest() do nothing. */
void coop_thread(int nice);
/* Whether coop_thread() also gives the thread the SCHED_IDLE policy: it then
 * runs only on a core that no other thread, of any process, wants, and any
 * thread that wakes takes the core from it at once. Off by default: beside
 * CPU-bound processes SCHED_IDLE threads all but stop storing clicks
 * (bench/contention.sh), and no thread can leave SCHED_IDLE without
 * CAP_SYS_NICE; what it gained for redirects is within this VM's spread
 * (bench/HISTORY.md, "after commit 99165c3"). Process-wide; set before
 * the first coop_thread(). */
void coop_set_idle(bool idle);
/* Asks the scheduler for time slices of 'us' microseconds for the calling
 * thread (an event loop), its policy and priority unchanged; 0 does
 * nothing, and so does a thread the operator made real-time. Kernels from
 * 6.12 take 100 to 100,000 (clamped); older ones ignore it. */
void coop_loop_slice(int us);
void coop_point(void);
/* Starts the slice afresh: call after the thread has slept (a condition
 * wait, an fsync), so time asleep is not taken for time computing. */
void coop_rest(void);
/* What a thread started by coop_start() is. */
struct coop_role {
    const char *name; /* as ps and /proc show it: 15 bytes at most */
    int nice;         /* >= 0: a background thread, coop_thread(nice); < 0: not */
    int slice_us;     /* > 0: an event loop, coop_loop_slice(slice_us) */
};
/* Starts fn(arg) on a new thread that first takes 'role', and returns once
 * it has: from then on, whoever looks at the process's threads (ps, top,
 * /proc) sees each with the name, priority and policy it keeps. Without the
 * wait, a server busy starting could answer requests while a background
 * thread still ran at the event loops' priority. 0, or pthread_create's
 * error. */
int coop_start(pthread_t *thread, struct coop_role role, void *(*fn)(void *), void *arg);
/* Whether the calling thread has called coop_thread(). */
bool coop_background(void);
/* How many times the calling thread has yielded. */
unsigned long coop_yields(void);

#endif
