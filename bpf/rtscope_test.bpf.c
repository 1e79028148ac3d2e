// SPDX-License-Identifier: GPL-2.0
/*
 * Test twins of the engine: raw_tp programs that run the state machine of
 * task_logic.bpf.h, and the tracked-task part of the handlers' bodies
 * (handlers.bpf.h: rts_switch_tasks, rts_waking_task) as the tp_btf engine
 * calls them, on synthetic events, driven from Go tests with
 * BPF_PROG_TEST_RUN. Tasks are keyed by tid in a hash here, where the
 * engine uses task storage; everything else is the engine's own code.
 */
#include "headers/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "handlers.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct rts_task_state);
} test_tasks SEC(".maps");

static __always_inline struct rts_task_state *task(__u32 tid)
{
	return bpf_map_lookup_elem(&test_tasks, &tid);
}

/* A fresh state for tid (a reused tid's is reset). */
static __always_inline struct rts_task_state *fresh_task(__u32 tid)
{
	__u32 zkey = 0;
	struct rts_task_state *zero = bpf_map_lookup_elem(&task_state_zero, &zkey);
	if (!zero)
		return 0;
	bpf_map_update_elem(&test_tasks, &tid, zero, BPF_ANY);
	return task(tid);
}

/* Start tracking tid; a reused tid gets a fresh state and a new id. */
SEC("raw_tp")
int BPF_PROG(test_track, __u64 tid, __u64 pid, __u64 sleeping, __u64 irq_thread)
{
	struct rts_task_state *st = fresh_task(tid);
	if (!st)
		return -1;
	int err = rts_track_init(st, tid, pid, 0, 0, sleeping != 0);
	if (!err && irq_thread)
		st->flags |= RTS_TF_IRQ_THREAD;
	if (!err)
		rts_track_publish(st, rts_stats(st));
	return err;
}

/* rts_track_init alone: tid's statistics created, not yet published. */
SEC("raw_tp")
int BPF_PROG(test_track_unpublished, __u64 tid, __u64 pid)
{
	struct rts_task_state *st = fresh_task(tid);
	if (!st)
		return -1;
	return rts_track_init(st, tid, pid, 0, 0, true);
}

/* rts_track_publish of tid (test_track_unpublished). */
SEC("raw_tp")
int BPF_PROG(test_track_publish, __u64 tid)
{
	struct rts_task_state *st = task(tid);
	if (!st)
		return -1;
	rts_track_publish(st, rts_stats(st));
	return 0;
}

/* A task exits: its state is dropped (the engine deletes its task storage). */
SEC("raw_tp")
int BPF_PROG(test_exit, __u64 tid)
{
	__u32 t = tid;
	struct rts_task_state *st = task(t);
	if (st)
		rts_settle(st, rts_stats(st)); /* as the engines' exit hooks */
	return bpf_map_delete_elem(&test_tasks, &t);
}

/* handlers.bpf.h's identity: the twin keeps the CPU (the tasks are synthetic). */
static __always_inline void rts_eng_identity(struct rts_task_state *st, struct rts_task_stats *s,
					     const struct rts_task_ref *t, __u32 cpu)
{
	if (s)
		s->last_cpu = cpu;
}

/* The task the noise twins say is current (0: none). */
__u32 twin_current_tid = 0;

/* handlers.bpf.h's current task: twin_current_tid's (the other twins run none). */
static __always_inline struct rts_task_state *rts_eng_current(void)
{
	return twin_current_tid ? task(twin_current_tid) : 0;
}

/*
 * irq_ns: the CPU's accumulated hard IRQ + softirq time at this switch.
 * The tracked-task part of the tp_btf engine's switch (rts_switch_tasks).
 */
SEC("raw_tp")
int BPF_PROG(test_switch, __u64 now, __u64 cpu, __u64 prev_tid, __u64 next_tid, __u64 voluntary,
	     __u64 irq_ns)
{
	struct rts_task_state *ps = task(prev_tid);
	struct rts_task_state *ns = task(next_tid);
	struct rts_switch ev = {.prev = {.tid = prev_tid}, .next = {.tid = next_tid}};
	if (ns)
		ev.next_sched_key = ns->sched_key; /* its policy unchanged */
	struct rts_task_stats *s = rts_switch_tasks(&ev, ps, ns, rts_cpu(), now, cpu, voluntary != 0, irq_ns, true);
	if (ps && s != rts_stats(ps))
		return -1;                                  /* the stats handed back are not the task's */
	rts_dl_switch(ps, s, ns, now, cpu, voluntary != 0); /* as rts_switch_body ends */
	return 0;
}

/*
 * tid's deadline entity as the tp_btf stub reads it at its next switch
 * (deadline.bpf.h): rq_now the rq clock, deadline absolute (rq clock),
 * flags 1: throttled, 2: yielded, 4: not a DEADLINE task; its reservation
 * is runtime/rel_deadline/period.
 */
SEC("raw_tp")
int BPF_PROG(test_dl_view, __u64 tid, __u64 rq_now, __u64 deadline, __u64 runtime, __u64 flags,
	     __u64 rel_deadline, __u64 period, __u64 dl_runtime)
{
	struct rts_task_state *st = task(tid);
	if (!st)
		return -1;
	st->dl_valid = !(flags & 4);
	st->dl_view.rq_now = rq_now;
	st->dl_view.deadline = deadline;
	st->dl_view.runtime = (__s64)runtime;
	st->dl_view.throttled = flags & 1;
	st->dl_view.yielded = (flags & 2) != 0;
	st->dl_view.dl_runtime = dl_runtime;
	st->dl_view.dl_deadline = rel_deadline;
	st->dl_view.dl_period = period;
	return 0;
}

/* A preempted switch prev -> next with their kernel prios (rts_throttled's evidence). */
SEC("raw_tp")
int BPF_PROG(test_switch_prio, __u64 now, __u64 cpu, __u64 prev_tid, __u64 next_tid, __s64 prev_prio,
	     __s64 next_prio)
{
	struct rts_task_state *ps = task(prev_tid);
	struct rts_task_state *ns = task(next_tid);
	struct rts_switch ev = {.prev = {.tid = prev_tid, .prio = prev_prio},
				.next = {.tid = next_tid, .prio = next_prio},
				.preempt = true};
	if (ns)
		ev.next_sched_key = ns->sched_key;
	rts_switch_tasks(&ev, ps, ns, rts_cpu(), now, cpu, false, 0, true);
	return 0;
}

static long settle_one(void *map, __u32 *tid, struct rts_task_state *st, void *ctx)
{
	rts_settle(st, rts_stats(st));
	return 0;
}

/* Settle what every task holds, as the engines do at the end of a run (settle_held). */
SEC("raw_tp")
int test_settle_all(void *ctx)
{
	return bpf_for_each_map_elem(&test_tasks, settle_one, 0, 0);
}

/*
 * The tracked-task part of sched_waking (rts_waking_task), on `cpu`: a timer
 * callback wakes tid when timer_expiry is set, else a task; lower_waker: a
 * task of lower priority than real-time tid (a hygiene count).
 */
SEC("raw_tp")
int BPF_PROG(test_wakeup, __u64 now, __u64 cpu, __u64 tid, __u64 timer_expiry, __u64 cb_entry,
	     __u64 lower_waker)
{
	struct rts_task_state *st = task(tid);
	if (!st)
		return 0;
	struct rts_waker w = {.expiry = timer_expiry, .cb_entry = cb_entry};
	w.ctxk = timer_expiry && !lower_waker ? RTS_WAKER_TIMER : RTS_WAKER_TASK;
	/* A waker prio above the task's is a lower priority (-1: none is). */
	__s32 waker_prio = lower_waker ? st->prio + 1 : -1;
	if (lower_waker && st->prio >= 100)
		return -1; /* lower_waker is of a real-time task */
	rts_waking_task(st, &w, waker_prio, cpu, 0, now, cpu);
	return 0;
}

/* tid's last sleep was on a lock (on_lock), as rts_on_sleep names it from its stack. */
SEC("raw_tp")
int BPF_PROG(test_lock_sleep, __u64 tid, __u64 on_lock)
{
	struct rts_task_state *st = task(tid);
	if (!st)
		return -1;
	st->lock_sleep = rts_sleep_on_lock(on_lock ? RTS_SR_FUTEX_PI : RTS_SR_FUTEX);
	return 0;
}

/*
 * tid waits for `cpu` (rts_mark_waiting), or runs (clear: rts_clear_waiting_at),
 * on the CPU this runs on, with that CPU's state at hand when `here`.
 * Returns the CPU its mark is on, -1: none.
 */
SEC("raw_tp")
int BPF_PROG(test_waiting, __u64 tid, __u64 cpu, __u64 here, __u64 clear)
{
	struct rts_task_state *st = task(tid);
	if (!st)
		return -2;
	struct rts_cpu_state *cs = here ? rts_cpu() : 0;
	__u32 this_cpu = bpf_get_smp_processor_id();
	if (clear)
		rts_clear_waiting_at(st, cs, this_cpu);
	else
		rts_mark_waiting(st, cpu, cs, this_cpu);
	return st->waiting_cpu;
}

/*
 * 1 if a blocking sleep of tid at now, running at kernel priority prio, is
 * walked (rts_sleep_named; then rts_sleep_walked, as rts_on_sleep does).
 */
SEC("raw_tp")
int BPF_PROG(test_sleep_named, __u64 tid, __s64 prio, __u64 now)
{
	struct rts_task_state *st = task(tid);
	if (!st)
		return -1;
	st->prio = prio;
	if (!rts_sleep_named(st, now))
		return 0;
	rts_sleep_walked(st, now);
	return 1;
}

/*
 * tid arms its sleeper timer at now: expiry in CLOCK_MONOTONIC (0: unknown
 * clock), key in its own clock, slack its range (RTS_SLACK_UNKNOWN: none known).
 */
SEC("raw_tp")
int BPF_PROG(test_timer_arm, __u64 now, __u64 cpu, __u64 tid, __u64 expiry, __u64 key, __u64 slack)
{
	struct rts_task_state *st = task(tid);
	if (st)
		rts_on_timer_arm(st, rts_stats(st), now, cpu, expiry, key, slack);
	return 0;
}

SEC("raw_tp")
int BPF_PROG(test_user_return, __u64 now, __u64 cpu, __u64 tid)
{
	struct rts_task_state *st = task(tid);
	if (st)
		rts_on_user_return(st, now, cpu);
	return 0;
}

SEC("raw_tp")
int BPF_PROG(test_handler, __u64 now, __u64 cpu, __u64 tid, __u64 entry, __u64 irq_ns)
{
	struct rts_task_state *st = task(tid);
	if (!st)
		return 0;
	if (entry)
		rts_on_handler_entry(st, now, 42, irq_ns);
	else
		rts_on_handler_exit(st, now, cpu, irq_ns);
	return 0;
}

/* The tracking id of tid, for the test to read its stats. */
SEC("raw_tp")
int BPF_PROG(test_id, __u64 tid)
{
	struct rts_task_state *st = task(tid);
	return st ? (int)st->id : 0;
}

/* The histogram bucket of a value (rts_hist_bucket), against metric.Bucket. */
SEC("raw_tp")
int BPF_PROG(test_hist_bucket, __u64 v)
{
	return (int)rts_hist_bucket(v);
}

/* 1 if a stack of what keeps woken tid waiting would be taken at now. */
SEC("raw_tp")
int BPF_PROG(test_stack_due, __u64 now, __u64 tid)
{
	struct rts_task_state *st = task(tid);
	return st && rts_stack_due(now, rts_wait_start(st));
}

/* A context switch reads the CPU's cumulative steal: rts_steal_update on CPU 0's state. */
SEC("raw_tp")
int BPF_PROG(test_steal, __u64 now, __u64 steal)
{
	struct rts_cpu_state *cs = rts_cpu();
	rts_steal_update(cs, 0, now, steal);
	return 0;
}

/* tid is seen running with this policy and normal priority (at a switch-in). */
SEC("raw_tp")
int BPF_PROG(test_sched, __u64 tid, __u64 policy, __u64 normal_prio)
{
	struct rts_task_state *st = task(tid);
	if (!st)
		return 0;
	return rts_sched_seen(st, rts_stats(st), rts_sched_key(policy, (int)normal_prio));
}

/* The engine's reapply_slo. */
SEC("raw_tp")
int test_reapply_slo(void *ctx)
{
	return rts_reapply_slo();
}

/* tid's run ends at now on cpu with these fault counters (rts_on_faults, at a switch-out). */
SEC("raw_tp")
int BPF_PROG(test_faults, __u64 now, __u64 cpu, __u64 tid, __u64 min_flt, __u64 maj_flt)
{
	struct rts_task_state *st = task(tid);
	if (st)
		rts_on_faults(st, rts_cpu(), now, cpu, min_flt, maj_flt);
	return 0;
}

/* tid is tracked with these fault counters (rts_faults_base, in track()). */
SEC("raw_tp")
int BPF_PROG(test_faults_base, __u64 tid, __u64 min_flt, __u64 maj_flt)
{
	struct rts_task_state *st = task(tid);
	if (st)
		rts_faults_base(st, min_flt, maj_flt);
	return 0;
}

/* tid's memory locking is read (rts_on_mem). */
SEC("raw_tp")
int BPF_PROG(test_mem, __u64 tid, __u64 locked)
{
	struct rts_task_state *st = task(tid);
	if (st)
		rts_on_mem(st, locked != 0);
	return 0;
}

/* The site rts_sleep_reason_of returned with the last test_sleep_reason run. */
__u64 test_sleep_site = 0;

/* Classify a sleep from up to 10 synthetic frames (innermost first). */
SEC("raw_tp")
int BPF_PROG(test_sleep_reason, __u64 n, __u64 f0, __u64 f1, __u64 f2, __u64 f3, __u64 f4, __u64 f5,
	     __u64 f6, __u64 f7, __u64 f8, __u64 f9)
{
	struct rts_sleep_frames frames = {{f0, f1, f2, f3, f4, f5, f6, f7, f8, f9}};
	__u64 site = 0;
	int r = rts_sleep_reason_of(&frames, n > 10 ? 10 : (int)n, &site);
	test_sleep_site = site;
	return r;
}

/*
 * Cost of naming a sleep, for BenchmarkSleepReasonCost: `variant` 0 does
 * nothing, 1 what a blocking sleep pays (rts_sleep_classify), 2 the full
 * stack sample (bpf_get_stackid) the engine takes at most once a ms, 3 a
 * 4-frame walk alone, 4 sixteen table searches alone; test_cost_ns sums
 * the time each took.
 */
__u64 test_cost_ns = 0;

SEC("raw_tp")
int BPF_PROG(test_sleep_cost, __u64 variant)
{
	struct rts_event e = {};
	__u64 t0 = bpf_ktime_get_ns();
	if (variant == 1)
		rts_sleep_classify(ctx, &e);
	else if (variant == 2)
		e.b = bpf_get_stackid(ctx, &stacks, BPF_F_REUSE_STACKID);
	else if (variant == 3) {
		__u64 frames[4]; /* the walk's fixed part: 4 frames */
		e.b = bpf_get_stack(ctx, frames, sizeof(frames), 0);
		e.x = frames[0];
	} else if (variant == 4) {
		for (int i = 0; i < RTS_SLEEP_FRAMES; i++)
			e.y += rts_sleep_fn_class(0xffffffff81000000ULL + i * 4096);
	}
	test_cost_ns += bpf_ktime_get_ns() - t0;
	return e.flags;
}

/*
 * The tracked path's parts, for BenchmarkTrackedPathCost: each variant
 * times one part between two clock reads into test_path_ns[variant], the
 * way a ping-pong of two tracked tasks a (running) and b (sleeping) on CPU
 * 0 takes them at `now`: 0 nothing, 1 a clock read, 2 the statistics
 * lookup (rts_stats), 3 a flight record (a switch event, filled), 4 b's
 * wakeup (rts_waking_task), 5 the sleep event of a's switch-out
 * (rts_on_sleep), 6 the switch's task logic (rts_switch_tasks: a's
 * switch-out with its settle, b's switch-in), 7 its noise part
 * (rts_noise_switch_at).
 */
__u64 test_path_ns[8] = {};

SEC("raw_tp")
int BPF_PROG(test_path_cost, __u64 variant, __u64 a, __u64 b, __u64 now)
{
	struct rts_task_state *as = task(a), *bs = task(b);
	struct rts_cpu_state *cs = rts_cpu();
	if (!as || !bs || !cs)
		return -1;
	struct rts_switch ev = {.prev = {.tid = a}, .next = {.tid = b}, .prev_state = 1};
	struct rts_waker w = {.ctxk = RTS_WAKER_TASK, .who = a};
	struct rts_event *e;
	__u64 name[2] = {0x6e2d737365727473ULL, 0x67}; /* "stress-ng" */
	ev.next_sched_key = bs->sched_key;
	__u64 t0 = bpf_ktime_get_ns();
	if (variant == 1) {
		w.expiry = bpf_ktime_get_ns();
	} else if (variant == 2) {
		w.expiry = (__u64)rts_stats(as);
	} else if (variant == 3) {
		e = rts_flight_slot(cs, 0, now, RTS_EV_SWITCH, true);
		if (e) {
			e->a = a;
			e->b = b;
			e->c = 1;
			e->prio_a = 120;
			e->prio_b = 120;
			rts_copy_comm(e->comm, (const char *)name);
			e->own = rts_own_seq(bs);
		}
	} else if (variant == 4) {
		rts_waking_task(bs, &w, 120, 0, cs, now, 0);
	} else if (variant == 5) {
		rts_on_sleep(ctx, cs, as, 0, now, 1);
	} else if (variant == 6) {
		rts_switch_tasks(&ev, as, bs, cs, now, 0, true, 0, true);
	} else if (variant == 7) {
		twin_current_tid = b;
		rts_noise_switch_at(&ev, as, bs, now, 0);
	}
	test_path_ns[variant & 7] += bpf_ktime_get_ns() - t0;
	return (int)w.expiry & 0;
}

/* tid's next own number (rts_own_seq), its last one set to last first when set. */
SEC("raw_tp")
int BPF_PROG(test_own_seq, __u64 tid, __u64 set, __u64 last)
{
	struct rts_task_state *st = task(tid);
	if (!st)
		return -1;
	if (set)
		st->own_seq = last;
	return rts_own_seq(st);
}

/*
 * Noise (noise.bpf.h): the switch from prev to next at now (prev_state 0:
 * runnable; kernel prios), with the CPU's steal clock; next becomes the
 * current task of rts_eng_current.
 */
SEC("raw_tp")
int BPF_PROG(test_noise_switch, __u64 now, __u64 prev_tid, __u64 next_tid, __u64 preempt, __u64 prev_state,
	     __s64 prev_prio, __s64 next_prio, __u64 steal)
{
	struct rts_switch ev = {.prev = {.tid = prev_tid, .prio = prev_prio},
				.next = {.tid = next_tid, .prio = next_prio},
				.prev_state = prev_state,
				.preempt = preempt != 0};
	twin_current_tid = next_tid;
	rts_noise_switch_at(&ev, task(prev_tid), task(next_tid), now, steal);
	return 0;
}

/*
 * Noise: an interruption part on this CPU. leave 0: it begins at now, due
 * since (0: now; busy 1: another was in progress, 2: a softirq, the tail of
 * the last hard IRQ); else it ends at now, begun
 * at since, with the steal clock read then (0: none).
 */
SEC("raw_tp")
int BPF_PROG(test_noise_irq, __u64 now, __u64 leave, __u64 busy, __u64 cause, __u64 who, __u64 since,
	     __u64 steal)
{
	if (!leave) {
		rts_noise_enter(now, since, busy & 1, busy & 2);
		return 0;
	}
	struct rts_noise_cpu *n = rts_noise_leave(now, since, cause, who);
	if (n && steal)
		rts_noise_steal(n, since, steal, bpf_get_smp_processor_id());
	return 0;
}

/* Noise: an NMI handler that took ns ends at now (handled: it claimed the NMI). */
SEC("raw_tp")
int BPF_PROG(test_noise_nmi, __u64 now, __u64 ns, __u64 handled)
{
	rts_noise_nmi(now, ns, handled != 0);
	return 0;
}

/* Noise: the tick at now while tid (tracked or not) is current, with no switch-in seen. */
SEC("raw_tp")
int BPF_PROG(test_noise_adopt, __u64 now, __u64 tid)
{
	twin_current_tid = tid;
	rts_noise_adopt(now);
	return 0;
}

/* Noise: tracked task tid ends (exit) while current here. */
SEC("raw_tp")
int BPF_PROG(test_noise_end, __u64 now, __u64 tid)
{
	struct rts_task_state *st = task(tid);
	if (!st)
		return -1;
	rts_noise_end(st, now);
	return 0;
}

/* ---- IPIs (ipi.bpf.h): the bodies as the stubs call them ---- */
#include "ipi.bpf.h"

/* The current task queues fn for target (csd_queue_cpu). */
SEC("raw_tp")
int BPF_PROG(test_csd_queue, __u64 target, __u64 callsite, __u64 fn)
{
	return rts_csd_queue_body(target, callsite, fn);
}

/* ipi_send_cpu: a reschedule (callback 0), an irq_work, or the generic handler. */
SEC("raw_tp")
int BPF_PROG(test_ipi_send_cpu, __u64 target, __u64 callsite, __u64 callback)
{
	return rts_ipi_send_cpu_body(target, callsite, callback);
}

/* A vector (who, for its noise part) of class slot begins at now, tracked task running (0: none) on the CPU. */
SEC("raw_tp")
int BPF_PROG(test_ipi_entry, __u64 slot, __u64 running, __u64 now, __u64 who)
{
	return rts_ipi_entry_body(slot, who, running, now);
}

SEC("raw_tp")
int BPF_PROG(test_ipi_exit, __u64 now)
{
	return rts_ipi_exit_body(now);
}

/*
 * ipi:ipi_entry/ipi_exit's reasons as arm64's ipi_types[] and arm's have
 * them, in kernel memory (this object's .rodata) for the bodies' read.
 */
const char twin_ipi_reasons[][40] = {
	"Function call interrupts",
	"Single function call interrupts",
	"Rescheduling interrupts",
	"IRQ work interrupts",
	"Timer broadcast interrupts",
	"CPU stop interrupts",
	"CPU backtrace interrupts",
	"KGDB roundup interrupts",
};

/* ipi_entry with reason number reason, tracked task running (0: none). */
SEC("raw_tp")
int BPF_PROG(test_ipi_reason_entry, __u64 reason, __u64 running)
{
	if (reason >= sizeof(twin_ipi_reasons) / sizeof(twin_ipi_reasons[0]))
		return -1;
	return rts_ipi_reason_entry_body(twin_ipi_reasons[reason], running);
}

SEC("raw_tp")
int BPF_PROG(test_ipi_reason_exit, __u64 reason)
{
	if (reason >= sizeof(twin_ipi_reasons) / sizeof(twin_ipi_reasons[0]))
		return -1;
	return rts_ipi_reason_exit_body(twin_ipi_reasons[reason]);
}

/* A tracked task waits on this CPU (rts_cpu_state.waiting_tid), 0: none. */
SEC("raw_tp")
int BPF_PROG(test_set_waiting, __u64 tid)
{
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs)
		return -1;
	cs->waiting_tid = tid;
	return 0;
}
