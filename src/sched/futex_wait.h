/* SPDX-License-Identifier: MIT */
/* The waiting protocol shared by the channel (chan.c) and the byte budget
 * (budget.c): a tiny spinlock guards the state (critical sections are a
 * few stores), and a side that must block sleeps on a futex word.  The
 * pause and the time-bounded poll step are also the pool's and the parse
 * stage's, which poll before they sleep.
 *
 * The protocol is the classic futex one: read the sequence word, check the
 * condition under the lock, and sleep on the word only if the condition is
 * still false; every change bumps the word before waking, so a wake between
 * the check and the sleep makes the sleep return at once.  Waits and wakes
 * go through core/sys.h, so every futex the pipeline makes is counted
 * (pthread condition variables would make uncounted ones), and a wake is
 * made only when someone sleeps. */
#ifndef INGEST_SCHED_FUTEX_WAIT_H
#define INGEST_SCHED_FUTEX_WAIT_H

#include "core/clock.h"
#include "core/sys.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* One step of a poll bounded in time: a pause, then whether `ns` have
 * passed since t0 (*step counts the steps, from 0).  The clock (vDSO,
 * ~20 ns) is read every 16 pauses: a pause costs 10 to 150 cycles
 * depending on the CPU, so time is counted, not pauses. */
static inline bool spin_step_expired(unsigned *step, uint64_t t0, uint64_t ns)
{
	spin_pause();
	return ++*step % 16 == 0 && clock_now_ns() - t0 >= ns;
}

static inline void spin_lock(atomic_flag *l)
{
	while (atomic_flag_test_and_set_explicit(l, memory_order_acquire))
		spin_pause();
}

static inline void spin_unlock(atomic_flag *l)
{
	atomic_flag_clear_explicit(l, memory_order_release);
}

/* Sleeps while *seq is still `seen`, or until ns have passed (0: no
 * limit); adds the time slept to *waited. */
static inline void futex_sleep_for(_Atomic uint32_t *seq, atomic_uint *waiters, uint32_t seen,
                                   _Atomic uint64_t *waited, uint64_t ns)
{
	uint64_t t0 = clock_now_ns();
	atomic_fetch_add_explicit(waiters, 1, memory_order_seq_cst);
	if (atomic_load_explicit(seq, memory_order_seq_cst) == seen)
		sys_futex_wait_for((uint32_t *)(uintptr_t)seq, seen, ns);
	atomic_fetch_sub_explicit(waiters, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(waited, clock_now_ns() - t0, memory_order_relaxed);
}

/* Sleeps while *seq is still `seen`; adds the time slept to *waited. */
static inline void futex_sleep(_Atomic uint32_t *seq, atomic_uint *waiters, uint32_t seen,
                               _Atomic uint64_t *waited)
{
	futex_sleep_for(seq, waiters, seen, waited, 0);
}

/* Bumps *seq and wakes up to n sleepers, with a syscall only if any sleep. */
static inline void futex_notify(_Atomic uint32_t *seq, atomic_uint *waiters, int n)
{
	atomic_fetch_add_explicit(seq, 1, memory_order_seq_cst);
	if (atomic_load_explicit(waiters, memory_order_seq_cst))
		sys_futex_wake((uint32_t *)(uintptr_t)seq, n);
}

#endif
