/* coop.h - threads off the hot path hand the core back often.
 *
 * This kernel (PREEMPT_NONE, HZ=250) lets a thread that computes keep its
 * core until the next scheduler tick, 4 ms, even when an event loop with
 * requests waiting has woken on that core: with the click threads at their
 * default priority, p99 at half load was 4.1 ms, every long wait one of them
 * running through a tick (perf sched timehist). A thread that folds or
 * stores clicks calls coop_point() in its loops; once it has run COOP_SLICE_US
 * since its last yield, coop_point() yields (sched_yield), so a woken event
 * loop runs within that time, and the caller carries straight on when nothing
 * else wants the core. A yield only hands the core to a thread that the
 * scheduler finds owed it, so background threads also run at a lower
 * priority (setting 'background-nice', 19 by default): with both, p99 at
 * half load fell from 4.1 ms to about 0.5 ms (bench/README.md). The cost:
 * when the event loops keep every core busy, folding clicks and commits
 * (creates too) get what is left over, about 1.5 % of a core each; the
 * journal, which keeps answered clicks safe, keeps the normal priority.
 *
 * Costs one vDSO clock read a call; call it per unit of work worth more than
 * about a microsecond. Each thread keeps its own clock, of wall time (a
 * thread's CPU clock costs a system call), so a thread calls coop_rest()
 * after it sleeps. */
#ifndef SHORTD_COOP_H
#define SHORTD_COOP_H

#define COOP_SLICE_US 200

/* Makes the calling thread a background one: its nice value goes up by
 * 'nice' (0..19; a thread may always lower its own priority), and
 * coop_point() and coop_rest() act in it; they do nothing in any other (an
 * event loop, say, reading through a VFS that calls them). */
void coop_thread(int nice);
void coop_point(void);
/* Starts the slice afresh: call after the thread has slept (a condition
 * wait, an fsync), so time asleep is not taken for time computing. */
void coop_rest(void);
/* How many times the calling thread has yielded. */
unsigned long coop_yields(void);

#endif
