/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sleep reasons: why a tracked task blocks, named at every blocking sleep
 * without a stack map. The loader resolves a fixed list of kernel functions
 * (internal/engine/sleepreason.go) to address ranges once, from kallsyms,
 * and writes them here sorted; at a sleep the programs walk RTS_SLEEP_FRAMES
 * kernel frames into a buffer (bpf_get_stack: no hashing, no stack map
 * slot) and look each return address up by binary search. Classifying a
 * call site is thus done once per kernel function, at load, and costs a
 * few compares per frame at run time.
 */
#ifndef RTSCOPE_SLEEP_REASON_BPF_H
#define RTSCOPE_SLEEP_REASON_BPF_H

#include "task_logic.bpf.h"

/* [sleep_fn_lo[i], sleep_fn_hi[i]) is a kernel function of class sleep_fn_class[i], sorted by lo. */
const volatile __u32 sleep_fn_count = 0;
const volatile __u64 sleep_fn_lo[RTS_SLEEP_FNS];
const volatile __u64 sleep_fn_hi[RTS_SLEEP_FNS];
const volatile __u8 sleep_fn_class[RTS_SLEEP_FNS];

/*
 * The class of the table function containing addr, RTS_SR_NONE when none
 * does. A global (not static) function: the verifier checks it once, on its
 * own, instead of every path of the search at each of the frames.
 */
__attribute__((noinline)) __u32 rts_sleep_fn_class(__u64 addr)
{
	__u32 lo = 0, hi = sleep_fn_count;
	if (hi > RTS_SLEEP_FNS)
		hi = RTS_SLEEP_FNS;
	/* lo ends as the number of entries starting at or below addr: 8 steps cover 128. */
	for (int k = 0; k < 8; k++) {
		if (lo >= hi)
			break;
		__u32 mid = (lo + hi) / 2;
		if (sleep_fn_lo[mid & (RTS_SLEEP_FNS - 1)] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return RTS_SR_NONE;
	__u32 i = (lo - 1) & (RTS_SLEEP_FNS - 1);
	return addr < sleep_fn_hi[i] ? sleep_fn_class[i] : RTS_SR_NONE;
}

/* Classes that a page fault further down the stack explains better. */
static __always_inline bool rts_sleep_weak(__u32 c)
{
	return c == RTS_SR_IO || c == RTS_SR_RWSEM || c == RTS_SR_MUTEX;
}

/*
 * Classify a sleep from its kernel frames (innermost first, n of them).
 * Frames before the first scheduling primitive (the BPF program and the
 * tracepoint) are skipped; the first frame past the primitives that has a
 * class gives the reason, a page fault deeper down overriding an I/O or lock
 * wait. *site is the return address that told (for RTS_SR_OTHER: the first
 * frame past the primitives, which user space names). A global function,
 * verified once: inlined, the walk's states at each of the 16 frames made
 * about 30,000 of on_sched_switch's 52,000 verified instructions (0.1 s of
 * each engine's start-up). Its pointers may be NULL there (compat.bpf.h);
 * frames is a struct: a pointer argument is to memory of its type's size.
 */
struct rts_sleep_frames {
	__u64 f[RTS_SLEEP_FRAMES];
};

/*
 * The frames of the sleep being classified, per CPU (sched_switch does not
 * nest on a CPU): on on_sched_switch's stack, their 128 bytes took the
 * combined stack of its deepest chain of calls past Linux 6.1's 512
 * (TestVerifierStack).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rts_sleep_frames);
} sleep_frames SEC(".maps");

RTS_VERIFIED_ONCE __u32 rts_sleep_reason_of(const struct rts_sleep_frames *frames, int n, __u64 *site)
{
	if (!frames || !site)
		return RTS_SR_NONE;
	bool past = false;
	__u32 found = RTS_SR_NONE;
	*site = 0;
	for (int i = 0; i < RTS_SLEEP_FRAMES; i++) {
		if (i >= n)
			break;
		__u64 a = frames->f[i];
		__u32 c = rts_sleep_fn_class(a);
		if (c == RTS_SR_WAIT) {
			past = true;
			continue;
		}
		if (!past)
			continue;
		if (c == RTS_SR_PAGE_FAULT && (found == RTS_SR_NONE || rts_sleep_weak(found))) {
			*site = a;
			return c;
		}
		if (c != RTS_SR_NONE && found == RTS_SR_NONE) {
			found = c;
			*site = a;
			if (!rts_sleep_weak(c))
				return c;
		}
		if (!*site)
			*site = a;
	}
	if (found != RTS_SR_NONE)
		return found;
	return past ? RTS_SR_OTHER : RTS_SR_NONE;
}

/*
 * Name the reason of a sleep that starts now into its RTS_EV_SLEEP event
 * (flags = enum rts_sleep_reason, y = the telling return address). Nothing
 * is done when the table is empty (kallsyms hidden).
 *
 * Cost (BenchmarkSleepReasonCost, BPF_PROG_TEST_RUN on this 2-vCPU VM,
 * medians): about 2.0-2.9 us per blocking sleep, as much as the full stack
 * sample (bpf_get_stackid, 2.5-2.8 us) that used to be rate-limited to one a
 * ms. The unwinder's set-up dominates: a 4-frame walk alone costs 1.3-2.1
 * us, the 16 table searches 0.25-0.45 us (fewer in practice: the walk stops
 * at the first reason, 5-7 frames from the tracepoint). Only blocking
 * sleeps pay it, once per activation of the task; timer sleeps, the
 * periodic loop's usual path, pay nothing. A cache keyed by call site could
 * not skip the walk, which is what finds the call site. Watching the
 * pipe-write scenario (330 blocking writes a second), on_sched_switch
 * averaged 725-839 ns a run against 539-660 ns before (bpf_stats).
 */
static __always_inline void rts_sleep_classify(void *ctx, struct rts_event *e)
{
	__u32 zero = 0;
	if (!sleep_fn_count)
		return;
	struct rts_sleep_frames *frames = bpf_map_lookup_elem(&sleep_frames, &zero);
	if (!frames)
		return;
	long n = bpf_get_stack(ctx, frames->f, sizeof(frames->f), 0);
	if (n <= 0)
		return;
	__u64 site = 0;
	e->flags = (__u8)rts_sleep_reason_of(frames, (int)(n / 8), &site);
	e->y = site;
}

/* A task that is not real-time has at most one sleep walked, and one stack taken, a ms. */
#define RTS_SLEEP_WALK_GAP_NS 1000000ULL

/*
 * Is a blocking sleep of st at now worth its walk (its reason, and the
 * stack sample)? The analysis reads a task's sleeps only inside its
 * windows and just before one: the sleep before a real-time task's wakeup
 * window names the owner of the PI futex it waited for (every sleep of a
 * real-time task is walked), and the windows that span sleeps (cycle,
 * period, jitter, iteration) begin at a timer release or at the arming of
 * the task's own sleeper timer (cycle_start, arm_ts). Another task is
 * walked only once one of these began, at most once a ms: a SCHED_OTHER
 * task at a high switch rate (a load's pipe or futex ping-pong, which may
 * have slept on a timer once, at its start) would otherwise pay 2-3 us a
 * sleep (see rts_sleep_classify); measured under stress-ng --switch with
 * its tasks tracked, the first version of this rule (any timer event,
 * then every sleep) left sched_switch at 995 ns a run against 1145.
 */
static __always_inline bool rts_sleep_named(struct rts_task_state *st, __u64 now)
{
	if (st->prio < 100)
		return true;
	return (st->cycle_start || st->arm_ts) && now - st->last_stack > RTS_SLEEP_WALK_GAP_NS;
}

/*
 * A sleep of st is walked at now: says whether a stack sample is due too
 * (at most one a ms), and restarts the clock of both limits.
 */
static __always_inline bool rts_sleep_walked(struct rts_task_state *st, __u64 now)
{
	if (now - st->last_stack <= RTS_SLEEP_WALK_GAP_NS)
		return false;
	st->last_stack = now;
	return true;
}

/*
 * A tracked task leaves the CPU voluntarily at now (prev_state: its state):
 * its RTS_EV_SLEEP event, with, for a blocking sleep (no timer armed: a
 * timer sleep's reason is known) that rts_sleep_named keeps, its reason
 * and, at most once a ms, its kernel stack (a stack walk costs 1-20 us).
 * Both engines' switch hooks call it.
 */
/*
 * Is a sleep of this reason a wait for a lock the waker releases: a PI
 * futex, a kernel mutex or rt_mutex, an rw semaphore, a PREEMPT_RT
 * sleeping lock? A plain futex is left out: a condition variable or a
 * semaphore (a producer's wakeup) sleeps there too. With priority
 * inheritance, the waker of a PI lock's waiter is its owner, deboosted
 * just before the wakeup: a lower priority by then (pi_stress counted
 * 206051 of them in 2 s, each a correct hand-over).
 */
static __always_inline bool rts_sleep_on_lock(__u8 reason)
{
	return reason == RTS_SR_FUTEX_PI || reason == RTS_SR_MUTEX || reason == RTS_SR_RWSEM ||
	       reason == RTS_SR_RTLOCK;
}

static __always_inline void rts_on_sleep(void *ctx, struct rts_cpu_state *cs,
					 struct rts_task_state *st, __u32 cpu, __u64 now,
					 __u32 prev_state)
{
	/* Named from its stack below; unnamed (no flight recorder): not a lock. */
	st->lock_sleep = 0;
	/* Called at sched_switch only, IRQs off: no atomic (rts_flight_slot). */
	struct rts_event *e = rts_flight_slot(cs, cpu, now, RTS_EV_SLEEP, true);
	if (!e)
		return;
	long sid = -1;
	e->a = st->tid;
	e->c = prev_state;
	e->own = rts_own_seq(st);
	e->x = st->armed_expiry;
	e->y = 0;
	if (!st->armed_expiry && rts_sleep_named(st, now)) {
		if (rts_sleep_walked(st, now) && sleep_stacks) {
			sid = bpf_get_stackid(ctx, &stacks, BPF_F_REUSE_STACKID);
			if (sid < 0)
				rts_count(RTS_C_STACK_LOST);
		}
		rts_sleep_classify(ctx, e);
	}
	e->b = (__u32)sid;
	st->lock_sleep = rts_sleep_on_lock(e->flags);
}

#endif
