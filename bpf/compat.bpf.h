/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel-version differences, resolved by CO-RE at load time, and the
 * workarounds they need: each cites the kernel commit (or version) that
 * made it necessary.
 */
#ifndef RTSCOPE_COMPAT_BPF_H
#define RTSCOPE_COMPAT_BPF_H

#include <bpf/bpf_core_read.h>

/*
 * task_struct::state was renamed __state in Linux 5.14, commit 2f064a59a11f
 * ("sched: Change task_struct::state").
 */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline unsigned int rts_task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return (unsigned int)BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/*
 * rts_storage_busy: a task-storage creation can fail although memory is plentiful:
 * bpf_task_storage_get() creates only when it takes the per-CPU
 * bpf_task_storage_busy counter (kernel/bpf/bpf_task_storage.c: the
 * counter since Linux 5.11, commit bc235cdb423a "bpf: Prevent deadlock
 * from recursive bpf_task_storage_[get|delete]"; bpf_task_storage_trylock()
 * and the _recur helpers since Linux 6.2, "bpf: Avoid taking spinlock in
 * bpf_task_storage_get if potential deadlock is detected"). With
 * CONFIG_PREEMPTION (PREEMPT, PREEMPT_RT) BPF programs run under
 * migrate_disable() only, so a program preempted inside a task-storage call
 * makes every creation on that CPU fail until it resumes (the kernel's own
 * selftest task_storage_nodeadlock counts these failures). Seen in the
 * emulated PREEMPT_RT guest: a thread of a launched command was never
 * tracked. track() (rtscope.bpf.c) queues such a task in track_retry.
 */
#define RTS_STORAGE_BUSY_RETRY 1 /* see track_retry in maps.bpf.h */

/*
 * RTS_E2BIG: the statistics hash refuses an insertion with -E2BIG only when
 * it holds max_entries (kernel/bpf/hashtab.c, alloc_htab_elem()). Its other
 * refusals pass: -ENOMEM when the per-CPU cache of a map without
 * preallocation is empty (bpf_mem_alloc, Linux 6.1, commit fba1a1c6c912
 * "bpf: Convert hash map to bpf_mem_alloc."), refilled by an irq_work that
 * PREEMPT_RT runs in a thread real-time tasks can starve; -EBUSY while the
 * CPU's map_locked slot is held (htab_lock_bucket(), since Linux 5.12,
 * commit 20b6cc34ea74 "bpf: Avoid hashtab deadlock with map_locked"). Seen
 * in the emulated PREEMPT_RT guest: 8 threads of a launched scenario never
 * tracked. rts_track_init() returns RTS_TRACK_RETRY for those; track()
 * queues the task in track_retry, as for a busy task storage.
 */
#define RTS_E2BIG 7

/*
 * bpf_map_lookup_percpu_elem() (another CPU's slot of a per-CPU map) came in
 * Linux 5.19, commit 07343110b293 ("bpf: add bpf_map_lookup_percpu_elem for
 * percpu map"). rtscope uses it only to mark, on the CPU a tracked task waits
 * for, that its timer interrupts should sample what runs instead. The loader
 * probes for it and clears waiter_stacks where it is missing; the verifier
 * then drops the calls as dead code (the constant is known at load), and the
 * blocking thread's stack is not sampled (features.waiter_stacks says so).
 * The check is in rts_mark_waiting/rts_clear_waiting (task_logic.bpf.h).
 */

/*
 * Global BPF functions (non-static, __noinline) are verified once, on
 * their own, whatever the number of calls; a static subprogram is verified
 * again at each call, under each caller state. rts_settle_one
 * (task_logic.bpf.h) is global: inlined at the 14 calls of
 * on_sched_switch, the held-sample settle of commit 20f5549 took its
 * verification from 116k to 138k instructions and 0.36 s, and added 20k
 * instructions (30-50 ms) to each of on_sched_exit, on_hrtimer_start,
 * settle_held and untrack_existing (rts_settle around it is inlined again
 * since the histogram bucket lost its branches: 5k instructions). rts_sleep_reason_of
 * (sleep_reason.bpf.h) too: its walk of 16 frames took 16k of the 52k
 * instructions left in on_sched_switch (internal/engine's
 * TestVerifierCost keeps each engine's total under a budget). A global function may take pointers to
 * memory of a fixed size (a map value: the task state, the stats) since
 * Linux 5.12, commit e5069b9c23b3 ("bpf: Support pointers in global func
 * args"); each such pointer may be NULL there, and is checked. Before it
 * a global function's arguments may only be scalars or the context, and
 * the verifier refuses the whole program, so the functions taking
 * pointers are declared RTS_VERIFIED_ONCE: global by default, static
 * __always_inline in the object's inlined variant, built with
 * -DRTS_INLINE_SUBPROGS (internal/engine/gen.go);
 * RTS_VERIFIED_ONCE_CALL is static __noinline there instead, a call whose
 * paths end at its return (rts_settle_one: inlined, the classic
 * on_sched_switch passed the verifier's million instructions). The loader
 * probes the kernel and picks the variant (features.go, global_ptr_args):
 * the same programs, verified again at every call below 5.12 (loaded in
 * 0.8 s instead of 0.34 s by the tp_btf engine, 1.5 s instead of 0.14 s
 * by the classic one, on a 2-vCPU VM). Global functions with only scalar
 * arguments (rts_sleep_fn_class) load since 5.6 and stay global.
 */
#ifdef RTS_INLINE_SUBPROGS
#define RTS_VERIFIED_ONCE static __always_inline
#define RTS_VERIFIED_ONCE_CALL static __noinline
#else
#define RTS_VERIFIED_ONCE __noinline
#define RTS_VERIFIED_ONCE_CALL __noinline
#endif

/*
 * rts_timer_expiry: an hrtimer's soft expiry in CLOCK_MONOTONIC ns, the clock
 * of bpf_ktime_get_ns(). _softexpires is in the clock of the timer's base
 * (MONOTONIC, REALTIME, BOOTTIME, TAI); hrtimer_clock_base.offset is "the
 * offset of this clock to the monotonic base" (include/linux/hrtimer*.h,
 * there since the high-resolution timers of Linux 2.6.21, commit
 * 54cdfdb47f73 "hrtimers: add high resolution timer support"), refreshed
 * by hrtimer_update_base() at every hrtimer interrupt and clock_was_set()
 * (kernel/time/hrtimer.c): 0 for MONOTONIC, offs_real/offs_boot/offs_tai
 * for the others. A clock step between two interrupts leaves it stale for
 * one expiry at most. Relative REALTIME timers are MONOTONIC ones
 * (__hrtimer_init), so only absolute wall-clock sleeps need the offset.
 * The classic engine has no task structures to read and converts at expiry
 * from the tracepoint's `now` instead (classic.bpf.c, timer_expiry).
 */
static __always_inline __u64 rts_timer_expiry(struct hrtimer *timer)
{
	/* timer is a tp_btf argument: plain loads, no bpf_probe_read_kernel calls. */
	return timer->_softexpires - timer->base->offset;
}

/*
 * rts_timer_slack: the range past its soft expiry in which the kernel may
 * fire an hrtimer, its hard expiry (node.expires) minus its soft one
 * (_softexpires), both in its base's clock: hrtimer_set_expires_range_ns()
 * sets them (range timers since Linux 2.6.28, "hrtimer: turn hrtimers
 * into range timers"), and an interrupt runs every timer whose
 * soft expiry has passed. 0 for a real-time task's sleep.
 */
static __always_inline __u64 rts_timer_slack(struct hrtimer *timer)
{
	__s64 d = timer->node.expires - timer->_softexpires;
	return d > 0 ? d : 0;
}

/* Kernel prio as a byte for the flight recorder: deadline (-1) becomes 255. */
static __always_inline __u8 rts_prio_byte(int prio)
{
	return prio < 0 ? 255 : (__u8)prio;
}

/* Copy a task's 16-byte comm from a BTF pointer: two plain 8-byte loads. */
static __always_inline void rts_copy_comm(char *dst, const char *src)
{
	((__u64 *)dst)[0] = ((const __u64 *)src)[0];
	((__u64 *)dst)[1] = ((const __u64 *)src)[1];
}

/*
 * The soft expiry and slack (hard minus soft expiry) of the struct hrtimer
 * at address timer, in its base's clock, for the classic engine (no BTF):
 * struct hrtimer begins with struct timerqueue_node {struct rb_node (three
 * longs); ktime_t expires;} then ktime_t _softexpires, on every 64-bit
 * kernel since Linux 2.6.37 (commit 998adc3dc9dd "hrtimers: Convert
 * hrtimers to use timerlist infrastructure"). Returns 0 when both read and
 * are ordered, else -1.
 */
static __always_inline int rts_hrtimer_read(__u64 timer, __s64 *soft, __u64 *slack)
{
	__s64 ex[2]; /* node.expires, _softexpires */
	if (!timer || bpf_probe_read_kernel(ex, sizeof(ex), (void *)(timer + 3 * sizeof(long))))
		return -1;
	if (ex[1] <= 0 || ex[0] < ex[1])
		return -1;
	*soft = ex[1];
	*slack = ex[0] - ex[1];
	return 0;
}

/*
 * Hypervisor steal time of the CPU t is on (cumulative ns), as the scheduler
 * accounted it at its last clock update: rq->prev_steal_time_rq, kept by
 * update_rq_clock_task() with CONFIG_PARAVIRT_TIME_ACCOUNTING (both since
 * Linux 3.1, commit 095c0aa83e52 "sched: adjust scheduler cpu power for
 * stolen time"); it matched
 * /proc/stat's steal column to the jiffy on a KVM guest. Reached through a
 * task's cfs_rq (CONFIG_FAIR_GROUP_SCHED) because the per-CPU `runqueues`
 * and KVM's `steal_time` are data symbols that a __ksym cannot resolve
 * without CONFIG_KALLSYMS_ALL ("ldimm64 failed to find the address"). Read
 * at a context switch, where __schedule() has just updated the clock.
 * Returns 0 where the kernel has neither field (no steal clock readable).
 */
static __always_inline __u64 rts_steal_ns(struct task_struct *t)
{
	if (!bpf_core_field_exists(struct rq, prev_steal_time_rq) ||
	    !bpf_core_field_exists(struct sched_entity, cfs_rq))
		return 0;
	struct cfs_rq *cfs = t->se.cfs_rq;
	if (!cfs)
		return 0;
	struct rq *rq = cfs->rq;
	if (!rq)
		return 0;
	return rq->prev_steal_time_rq;
}

#endif
