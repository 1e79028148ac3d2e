/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The handlers' bodies, once for both engines: rtscope.bpf.c (tp_btf) and
 * classic.bpf.c (classic tracepoints). An engine's SEC stub decodes its
 * context (tp_btf arguments, or a tracepoint record at the off_* offsets)
 * into the small structs below, looks the tasks up in its own store (task
 * storage, or a hash by tid), and calls the body. What only the tp_btf
 * engine sees (page faults, memory locking, hypervisor steal, a policy set
 * by the task itself) is taken under the flag `btf`, a constant at each
 * call: the compiler drops the other engine's side.
 *
 * The including engine defines, after this header:
 *  - rts_eng_identity(st, s, t, cpu): a tracked task's identity into s, its
 *    stats (the engine's refresh_identity_of), from what t holds;
 *  - rts_eng_current(): the current task's state when it is tracked.
 */
#ifndef RTSCOPE_HANDLERS_BPF_H
#define RTSCOPE_HANDLERS_BPF_H

#include "compat.bpf.h"
#include "task_logic.bpf.h"
#include "sleep_reason.bpf.h"
#include "deadline.bpf.h"

/* A task as an engine's stub saw it. */
struct rts_task_ref {
	struct task_struct *task; /* tp_btf: the task (a BTF pointer); classic: 0 */
	const char *comm;         /* its 16-byte name, 8-byte aligned; 0: the current task's */
	__u32 tid;
	__s32 prio;  /* kernel prio: -1 deadline, < 100 real-time */
	__u8 policy; /* btf only: the classic records carry none */
};

static __always_inline void rts_eng_identity(struct rts_task_state *st, struct rts_task_stats *s,
					     const struct rts_task_ref *t, __u32 cpu);
static __always_inline struct rts_task_state *rts_eng_current(void);

/* The policy a kernel prio implies: FIFO for RT prios (RR looks the same), DEADLINE for -1. */
static __always_inline __u8 rts_policy_of(__s32 prio)
{
	if (prio < 0)
		return 6;
	return prio < 100 ? 1 : 0;
}

/*
 * t's policy for a flight record: its own (btf), else the one its prio
 * implies, computed here, where it is stored: a policy taken before
 * rts_on_sleep (a constant on each of three paths) multiplied the paths
 * the verifier walks through it.
 */
static __always_inline __u8 rts_ref_policy(const struct rts_task_ref *t, bool btf)
{
	return btf ? t->policy : rts_policy_of(t->prio);
}

/* A task's name into a flight record: t's, or the current task's (no name at hand). */
static __always_inline void rts_ref_comm(char *dst, const struct rts_task_ref *t)
{
	if (t->comm)
		rts_copy_comm(dst, t->comm);
	else
		bpf_get_current_comm(dst, RTS_COMM_LEN);
}

/* Kernel stack of the current task (cur_tid, interrupted by a timer) while tracked task `waiting` waits. */
static __always_inline void rts_stack_event(void *ctx, struct rts_cpu_state *cs, __u32 cpu, __u64 now,
					    __u32 cur_tid, __u32 waiting)
{
	long sid = bpf_get_stackid(ctx, &stacks, BPF_F_REUSE_STACKID);
	struct rts_event *se = rts_flight(cs, cpu, now, RTS_EV_STACK);
	if (se) {
		se->a = cur_tid;
		se->b = waiting;
		se->c = sid < 0 ? 0xffff : (__u16)sid;
		bpf_get_current_comm(se->comm, sizeof(se->comm));
	}
	if (sid < 0)
		rts_count(RTS_C_STACK_LOST);
}

/* ---- scheduler ---- */

/* sched_switch, decoded. */
struct rts_switch {
	struct rts_task_ref prev, next;
	__u32 prev_state;
	bool preempt;
	__u32 next_sched_key; /* btf: rts_sched_key of next, when it is tracked */
};

#define RTS_VM_LOCKED 0x00002000UL /* include/linux/mm.h, unchanged since Linux 2.6 */

/*
 * 1 for a switch from a real-time or DEADLINE task to a lower class (idle and
 * SCHED_OTHER have prio >= 100; below DEADLINE, anything that is not
 * DEADLINE): on a preempted switch-out, the scheduler passes over a queued
 * task of a higher class only when that class is throttled. ALU only, no
 * branch: a branch here multiplied the paths the verifier walks through
 * rts_switch_tasks, and the classic engine's inlined on_sched_switch went
 * past the 1M-instruction limit.
 */
static __always_inline __u32 rts_throttled(const struct rts_switch *ev)
{
	__u64 p = (__u32)(ev->prev.prio + 1), n = (__u32)(ev->next.prio + 1); /* DEADLINE 0, RT 1..100 */
	__u64 rt = (p - 101) >> 63;                                           /* p < 101: RT or DEADLINE */
	__u64 dl = (p - 1) >> 63;                                             /* p == 0: DEADLINE */
	__u64 next_fair = 1 - ((n - 101) >> 63);                              /* n >= 101: SCHED_OTHER, idle */
	__u64 next_not_dl = 1 - ((n - 1) >> 63);                              /* n >= 1 */
	return rt & (next_fair | (dl & next_not_dl));
}

/*
 * rts_dl_waits: prev (ps, tracked), a DEADLINE task leaving its CPU
 * runnable, ended its job: it yielded or used up its runtime (dl_yielded,
 * dl_throttled, read by the tp_btf stubs into dl_view), and waits for its
 * next period: neither throttled by a lower class nor interrupted. The
 * classic engine reads no entity (dl_valid 0) and cannot tell: there a
 * DEADLINE task's runnable switch-out is never counted. cyclicdeadline
 * yields at the end of every job: before this, 460 "RT-throttled"
 * intervals in 5 s, and its waits for the next period 40 ms of noise.
 * Branch-free, as rts_throttled (the classic inlined variant's verifier).
 */
static __always_inline __u32 rts_dl_waits(const struct rts_switch *ev, const struct rts_task_state *ps)
{
	__u64 p = (__u32)(ev->prev.prio + 1);
	__u64 dl = (p - 1) >> 63; /* p == 0: DEADLINE */
	__u64 ended = (__u64)((ps->dl_valid ^ 1) | ps->dl_view.yielded | ps->dl_view.throttled) & 1;
	return (__u32)(dl & ended);
}

#include "noise.bpf.h"

/*
 * The tracked tasks of a switch: prev's run ends (its held samples are
 * settled), next's begins. Returns prev's stats as rts_on_switch_out hands
 * them back. The tp_btf engine refreshes an identity off the way to the
 * CPU (prev's, due after an activation) and at a switch-in only when the
 * task changed its own policy (two loads and a compare: sched_setattr in a
 * thread that never sleeps again is seen only there); the classic engine
 * takes it from the record at the switch-in that ends a wakeup (its name
 * too: the record has next's, not prev's).
 */
static __always_inline struct rts_task_stats *rts_switch_tasks(const struct rts_switch *ev, struct rts_task_state *ps,
							       struct rts_task_state *ns, struct rts_cpu_state *cs,
							       __u64 now, __u32 cpu, bool voluntary, __u64 irq_ns, bool btf)
{
	struct rts_task_stats *s = 0;
	if (ps) {
		s = rts_on_switch_out(ps, now, cpu, voluntary, irq_ns, rts_throttled(ev) & (rts_dl_waits(ev, ps) ^ 1));
		ps->armed_expiry = 0;
		if (btf && ps->identity_due) {
			ps->identity_due = 0;
			rts_eng_identity(ps, s, &ev->prev, cpu);
		}
	}
	if (ns) {
		rts_clear_waiting_at(ns, cs, cpu);
		ns->prio = ev->next.prio;
		bool woken = rts_on_switch_in(ns, now, cpu, irq_ns);
		if (!btf && woken) {
			ns->identity_due = 0;
			rts_eng_identity(ns, rts_stats(ns), &ev->next, cpu);
		} else if (btf && !woken && ns->sched_key != ev->next_sched_key) {
			rts_eng_identity(ns, rts_stats(ns), &ev->next, cpu);
		}
	}
	return s;
}

static __always_inline void rts_switch_body(void *ctx, const struct rts_switch *ev, struct rts_task_state *ps,
					    struct rts_task_state *ns, bool btf)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	struct rts_cpu_state *cs = rts_cpu();
	/*
	 * Classic tracepoint programs do not nest: an event that fires while
	 * another of them runs on this CPU is skipped (bpf_prog_active; the
	 * programs' recursion misses count them). A lost irq_handler_exit or
	 * hrtimer_expire_exit would leave this CPU "in hard IRQ" for good; no
	 * switch happens in hard IRQ context, so a switch ends any.
	 */
	if (!btf && cs) {
		cs->irq_depth = 0;
		cs->cb_function[1] = 0;
	}
	/*
	 * btf: the tasks are BTF pointers, read with plain loads here, where
	 * they are used: a value read before rts_on_sleep (a constant on some
	 * paths) multiplied the paths the verifier walks through it.
	 */
	struct task_struct *prev = ev->prev.task, *next = ev->next.task;
	if (btf && ps) {
		/* Its run ends: page faults taken in it, and its memory locking (mlockall may come late). */
		rts_on_faults(ps, cs, now, cpu, prev->min_flt, prev->maj_flt);
		struct mm_struct *mm = prev->mm;
		if (mm)
			rts_on_mem(ps, (mm->def_flags & RTS_VM_LOCKED) || mm->locked_vm);
	}
	if (ps && !ev->preempt && ev->prev_state != 0) /* a voluntary switch-out */
		rts_on_sleep(ctx, cs, ps, cpu, now, ev->prev_state);
	/* Steal first: the time it covers ends before this switch. */
	__u64 steal = btf ? rts_steal_ns(next) : 0;
	if (btf)
		rts_steal_update(cs, cpu, now, steal);

	/* IRQs are off in __schedule(): the slot needs no atomic (rts_flight_slot). */
	struct rts_event *e = rts_flight_slot(cs, cpu, now, RTS_EV_SWITCH, true);
	if (e) {
		e->a = ev->prev.tid;
		e->b = ev->next.tid;
		e->c = ev->prev_state;
		e->flags = ev->preempt;
		e->prio_a = rts_prio_byte(ev->prev.prio);
		e->prio_b = rts_prio_byte(ev->next.prio);
		e->pol_a = rts_ref_policy(&ev->prev, btf);
		e->pol_b = rts_ref_policy(&ev->next, btf);
		rts_copy_comm(e->comm, ev->next.comm);
		if (ns)
			e->own = rts_own_seq(ns);
	}

	__u64 irq_ns = cs ? cs->irq_ns + cs->softirq_ns : 0;
	/*
	 * Voluntary is taken from ev at each use: kept in a variable across
	 * rts_on_sleep, it made clang copy rts_switch_tasks for each of its
	 * values (on_sched_switch 5515 instructions against 3337).
	 */
	struct rts_task_stats *s =
		rts_switch_tasks(ev, ps, ns, cs, now, cpu, !ev->preempt && ev->prev_state != 0, irq_ns, btf);
	/* A switch between untracked tasks pays one per-CPU load here. */
	rts_noise_switch_at(ev, ps, ns, now, steal);
	if (cs)
		cs->user_pending = ns && ns->release_pending;
	/* Last, where few paths go on: inside rts_switch_tasks they took
	 * on_sched_switch from 41k to 221k verified instructions. Called
	 * for a DEADLINE task alone (dl_valid: its entity was read). */
	if (btf && ((ps && ps->dl_valid) || (ns && ns->dl_valid)))
		rts_dl_switch(ps, s, ns, now, cpu, !ev->preempt && ev->prev_state != 0);
}

/* Who wakes a task: a timer callback, a hard IRQ, a softirq, or the current task. */
struct rts_waker {
	__u64 timer_fn, expiry, cb_entry; /* a timer callback's */
	__u32 who;                        /* tid, IRQ number or softirq vector */
	__u8 ctxk;                        /* enum rts_waker_ctx */
};

static __always_inline void rts_waker_of(const struct rts_cpu_state *cs, __u32 cur_tid, struct rts_waker *w)
{
	w->ctxk = RTS_WAKER_TASK;
	w->who = cur_tid;
	w->timer_fn = 0;
	w->expiry = 0;
	w->cb_entry = 0;
	if (cs->cb_function[1]) {
		w->ctxk = RTS_WAKER_TIMER;
		w->timer_fn = cs->cb_function[1];
		w->expiry = cs->cb_expiry[1];
		w->cb_entry = cs->cb_entry[1];
	} else if (cs->irq_depth) {
		w->ctxk = RTS_WAKER_HARDIRQ;
		w->who = cs->irq_nr;
	} else if (cs->cb_function[0] && cs->cb_soft_tid == cur_tid) {
		w->ctxk = RTS_WAKER_TIMER;
		w->timer_fn = cs->cb_function[0];
		w->expiry = cs->cb_expiry[0];
		w->cb_entry = cs->cb_entry[0];
	} else if (cs->softirq_vec && cs->softirq_tid == cur_tid) {
		w->ctxk = RTS_WAKER_SOFTIRQ;
		w->who = cs->softirq_vec - 1;
	}
}

/*
 * The tracked task st is woken by w (a task of kernel prio waker_prio) for
 * target_cpu. Returns whether the stack of what the timer interrupted is
 * due: a timer releases a tracked task late on a busy CPU, and the stack of
 * the task its interrupt stopped is rtla's "blocking thread" evidence (what
 * kept interrupts off). An on-time release skips it: the task is about to
 * run, and would wait for the walk.
 */
static __always_inline bool rts_waking_task(struct rts_task_state *st, const struct rts_waker *w, __s32 waker_prio,
					    __u32 target_cpu, struct rts_cpu_state *cs, __u64 now, __u32 cpu)
{
	rts_on_wakeup(st, now, cpu, w->expiry, w->cb_entry,
		      w->ctxk == RTS_WAKER_TASK && st->prio < 100 && waker_prio > st->prio);
	if (st->state != RTS_TS_WOKEN)
		return false;
	rts_mark_waiting(st, target_cpu, cs, cpu);
	return w->ctxk == RTS_WAKER_TIMER && sleep_stacks && rts_stack_due(now, w->expiry);
}

/* sched_waking of p (st: its state when tracked), woken by the current task cur for target_cpu. */
static __always_inline void rts_waking_body(void *ctx, const struct rts_task_ref *p, const struct rts_task_ref *cur,
					    __u32 target_cpu, struct rts_task_state *st, struct rts_cpu_state *cs,
					    bool btf)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	struct rts_waker w;
	rts_waker_of(cs, cur->tid, &w);
	/*
	 * Waking another task, try_to_wake_up() holds its pi_lock with IRQs
	 * off; waking itself (p == current), it takes no lock (rts_flight_slot).
	 */
	struct rts_event *e = rts_flight_slot(cs, cpu, now, RTS_EV_WAKEUP, p->tid != cur->tid);
	if (e) {
		e->a = p->tid;
		e->b = w.who;
		e->c = target_cpu;
		e->flags = w.ctxk;
		e->prio_a = rts_prio_byte(p->prio);
		e->prio_b = rts_prio_byte(cur->prio);
		e->pol_a = rts_ref_policy(p, btf);
		e->pol_b = rts_ref_policy(cur, btf);
		if (w.ctxk == RTS_WAKER_TIMER) {
			e->x = w.timer_fn;
			e->y = w.expiry;
		} else {
			rts_ref_comm(e->comm, cur);
		}
		if (st)
			e->own = rts_own_seq(st);
	}
	if (st && rts_waking_task(st, &w, cur->prio, target_cpu, cs, now, cpu) && cur->tid != 0 &&
	    cur->tid != st->tid)
		rts_stack_event(ctx, cs, cpu, now, cur->tid, st->tid);
}

/* sched_migrate_task of tid (st: its state when tracked) from orig to dest. */
static __always_inline void rts_migrate_body(struct rts_task_state *st, __u32 tid, __u32 orig, __u32 dest)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct rts_cpu_state *cs = rts_cpu();
	struct rts_event *e = rts_flight(cs, cpu, bpf_ktime_get_ns(), RTS_EV_MIGRATE);
	if (e) {
		e->a = tid;
		e->b = orig;
		e->c = dest;
		if (st)
			e->own = rts_own_seq(st);
	}
	if (st && st->state == RTS_TS_WOKEN)
		rts_mark_waiting(st, dest, cs, cpu);
	if (st && orig != dest) {
		struct rts_task_stats *s = rts_stats(st);
		if (s)
			s->hygiene[RTS_H_MIGRATION]++;
	}
}

/* ---- task life cycle ---- */

/* Is a task wanted by a --tid, --pid or --comm target (comm: 16 bytes, zero-padded)? */
static __always_inline struct rts_target *rts_wanted_id(__u32 tid, __u32 tgid, const char *comm)
{
	struct rts_target *w = bpf_map_lookup_elem(&want_tid, &tid);
	if (!w)
		w = bpf_map_lookup_elem(&want_tgid, &tgid);
	if (!w)
		w = bpf_map_lookup_elem(&want_comm, comm);
	return w;
}

/* The target a followed task's child is tracked under. */
static __always_inline __u32 rts_follow_target(struct rts_task_state *parent)
{
	struct rts_task_stats *s = rts_stats(parent);
	return s ? s->target : 0;
}

/* A tracked task renames itself: its statistics take the new name. */
static __always_inline void rts_renamed(struct rts_task_state *st, const char *name)
{
	struct rts_task_stats *s = rts_stats(st);
	if (s)
		__builtin_memcpy(s->comm, name, RTS_COMM_LEN);
}

/*
 * The end of a tracked task at now (its exit, or its tracking stopped; s:
 * its stats): what it holds is settled, its identity refreshed from t on
 * last_cpu (identity; else only that CPU), and the notice queued that
 * tells user space to report its final statistics, in the map. flight: an
 * RTS_EV_EXIT event too. The engine removes its state.
 */
static __always_inline void rts_untrack_body(struct rts_task_state *st, struct rts_task_stats *s,
					     const struct rts_task_ref *t, __u64 now, __u32 last_cpu, bool identity,
					     bool flight)
{
	__u32 cpu = bpf_get_smp_processor_id();
	rts_settle(st, s);
	rts_noise_end(st, now);
	if (s) {
		if (identity)
			rts_eng_identity(st, s, t, last_cpu);
		else
			s->last_cpu = last_cpu;
		s->exited = 1;
	}
	rts_clear_waiting(st);
	struct rts_event *e = flight ? rts_flight(rts_cpu(), cpu, now, RTS_EV_EXIT) : 0;
	if (e) {
		e->a = st->tid;
		e->own = rts_own_seq(st);
	}
	rts_notice(RTS_N_TASK_EXIT, 0, st->id, st->tid, 0, 0, now, cpu, cpu);
}

/* ---- timers ---- */

/*
 * A lost local timer exit (a classic program skipped while another BPF
 * program ran) must not leave the CPU busy for good: an entry older than
 * this is over. The longest local timer interrupt seen here was 0.6 ms.
 */
#define RTS_LT_OPEN_NS 2000000ULL

/* Is an interruption in progress on this CPU (the noise parts nest in it)? */
static __always_inline bool rts_cpu_busy(const struct rts_cpu_state *cs, __u64 now)
{
	return cs->irq_depth || cs->softirq_vec || cs->cb_function[1] ||
	       (cs->lt_entry && now - cs->lt_entry < RTS_LT_OPEN_NS);
}

/*
 * A tracked task arms its sleeper timer (soft expiry `soft` in the clock of
 * its base, clockid; `expiry` in CLOCK_MONOTONIC, 0: not known; `slack`
 * its hard expiry minus its soft one, RTS_SLACK_UNKNOWN: not known): note
 * the expiry, classify the sleep, end an iteration. The clock is compared
 * last: a flag computed before rts_on_timer_arm doubled the paths the
 * verifier walks through it (5840 instructions to 10817).
 */
static __always_inline void rts_timer_start_body(struct rts_task_state *st, __u64 expiry, __u64 soft, __u64 slack,
						 __u32 mode, int clockid)
{
	__u64 now = bpf_ktime_get_ns();
	st->armed_expiry = expiry;
	struct rts_task_stats *s = rts_stats(st);
	rts_on_timer_arm(st, s, now, bpf_get_smp_processor_id(), st->armed_expiry, soft, slack);
	if (!s)
		return;
	if (mode & 1) /* HRTIMER_MODE_REL */
		s->hygiene[RTS_H_REL_TIMER]++;
	if (clockid == 0 || clockid == 11) /* CLOCK_REALTIME, CLOCK_TAI */
		s->hygiene[RTS_H_REALTIME_CLOCK]++;
}

/*
 * An hrtimer callback fn starts: slot 1 hard IRQ context, 0 softirq; expiry
 * (soft) in CLOCK_MONOTONIC; slack: the timer's hard expiry minus its soft
 * one (RTS_SLACK_UNKNOWN: not known), which tells the analysis a callback
 * that ran inside its timer's own range from one that came late.
 */
static __always_inline void rts_timer_entry_body(void *ctx, struct rts_cpu_state *cs, __u64 now, __u32 slot,
						 __u64 fn, __u64 expiry, __u64 slack)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (slot == 1)
		rts_noise_adopt(now); /* arm64's tick (x86's: rts_local_timer_entry_body) */
	/* Its interrupt was due at its hard expiry: the noise it makes starts there. */
	if (slot == 1)
		rts_noise_enter(now, slack != RTS_SLACK_UNKNOWN ? expiry + slack : 0,
				rts_cpu_busy(cs, now), false);
	cs->cb_function[slot & 1] = fn;
	cs->cb_expiry[slot & 1] = expiry;
	cs->cb_entry[slot & 1] = now;
	if (!slot)
		cs->cb_soft_tid = bpf_get_current_pid_tgid() & 0xffffffff;
	struct rts_event *e = rts_flight(cs, cpu, now, RTS_EV_TIMER_ENTRY);
	if (e) {
		e->flags = slot;
		e->x = fn;
		e->y = expiry;
		e->a = 0;
		if (slack != RTS_SLACK_UNKNOWN) {
			e->flags |= RTS_EVF_SLACK;
			e->a = slack > 0xffffffffULL ? 0xffffffff : (__u32)slack;
		}
	}
	/* A tracked task has waited here a while: whose kernel code does this interrupt stop? */
	if (slot == 1 && cs->waiting_tid && sleep_stacks && rts_stack_due(now, cs->waiting_since)) {
		__u32 tid = bpf_get_current_pid_tgid() & 0xffffffff;
		if (tid != 0 && tid != cs->waiting_tid)
			rts_stack_event(ctx, cs, cpu, now, tid, cs->waiting_tid);
	}
}

/* An hrtimer callback ends; btf: the steal clock is readable (the tick just updated it). */
static __always_inline void rts_timer_exit_body(struct rts_cpu_state *cs, __u32 slot, bool btf)
{
	__u64 fn = cs->cb_function[slot & 1];
	__u64 now = bpf_ktime_get_ns();
	cs->cb_function[slot & 1] = 0;
	/* The tick just updated the steal clock: growth since the last reading came before this interrupt. */
	struct rts_noise_cpu *n = slot == 1 ? rts_noise_leave(now, cs->cb_entry[1], RTS_NC_TIMER, 0) : 0;
	if (btf && n)
		rts_noise_steal(n, cs->cb_entry[1], rts_steal_ns(bpf_get_current_task_btf()), bpf_get_smp_processor_id());
	struct rts_event *e = rts_flight(cs, bpf_get_smp_processor_id(), now, RTS_EV_TIMER_EXIT);
	if (e) {
		e->flags = slot;
		e->x = fn;
	}
}

/* The "user" part of a timer release: the current task is back in user space. */
static __always_inline int rts_user_return_body(void)
{
	/* Almost every return to user has nothing pending: one per-CPU load
	 * decides it, before the task lookup (rseq_update was 22.5% of
	 * rtscope's BPF time, 75 ns a run against a 50 ns floor). */
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs || !cs->user_pending)
		return 0;
	cs->user_pending = 0;
	struct rts_task_state *st = rts_eng_current();
	if (!st || !st->release_pending)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	struct rts_event *e = rts_flight(cs, cpu, now, RTS_EV_USER_RETURN);
	if (e) {
		e->a = st->tid;
		e->own = rts_own_seq(st);
	}
	rts_on_user_return(st, now, cpu);
	return 0;
}

/* ---- interrupts ---- */

/*
 * The local timer interrupt (x86's irq_vectors:local_timer_entry/exit,
 * feature local_timer) as one noise part: its hard timer callbacks nest in
 * it, and its tail after the last one, reprogramming the clock event (a
 * trapped MSR write on a VM: the loop of TestNoiseAgreesWithLoop lost
 * 20-90 us there after the last callback's exit), is in it too.
 */
static __always_inline int rts_local_timer_entry_body(void)
{
	__u64 now = bpf_ktime_get_ns();
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs)
		return 0;
	rts_noise_adopt(now);
	rts_noise_enter(now, 0, cs->irq_depth || cs->softirq_vec || cs->cb_function[1], false);
	cs->lt_entry = now;
	return 0;
}

/* The local timer interrupt ends; btf: the steal clock is readable (the tick just updated it). */
static __always_inline int rts_local_timer_exit_body(bool btf)
{
	__u64 now = bpf_ktime_get_ns(), since;
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs || !(since = cs->lt_entry))
		return 0;
	cs->lt_entry = 0;
	struct rts_noise_cpu *n = rts_noise_leave(now, since, RTS_NC_TIMER, 0);
	if (btf && n)
		rts_noise_steal(n, since, rts_steal_ns(bpf_get_current_task_btf()), bpf_get_smp_processor_id());
	return 0;
}

static __always_inline int rts_irq_entry_body(__u32 irq)
{
	__u64 now = bpf_ktime_get_ns();
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs)
		return 0;
	rts_noise_enter(now, 0, rts_cpu_busy(cs, now), false);
	if (cs->irq_depth++ == 0)
		cs->irq_entry = now;
	cs->irq_nr = irq;
	struct rts_event *e = rts_flight(cs, bpf_get_smp_processor_id(), now, RTS_EV_IRQ_ENTRY);
	if (e)
		e->a = irq;
	return 0;
}

static __always_inline int rts_irq_exit_body(__u32 irq, __u32 ret)
{
	__u64 now = bpf_ktime_get_ns();
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs)
		return 0;
	rts_noise_leave(now, cs->irq_entry, RTS_NC_IRQ, irq);
	if (cs->irq_depth && --cs->irq_depth == 0 && now > cs->irq_entry)
		cs->irq_ns += now - cs->irq_entry;
	struct rts_event *e = rts_flight(cs, bpf_get_smp_processor_id(), now, RTS_EV_IRQ_EXIT);
	if (e) {
		e->a = irq;
		e->c = ret;
	}
	return 0;
}

/*
 * nmi:nmi_handler (x86): the NMI handler fn took delta ns, ending now;
 * handled: it claimed the NMI. A noise part, and a flight event for the
 * windows (NMIs are rare: perf sampling, the watchdog, backtraces).
 */
static __always_inline int rts_nmi_handler_body(__u64 fn, __s64 delta, int handled)
{
	__u64 now = bpf_ktime_get_ns(), ns = delta > 0 ? delta : 0;
	rts_noise_nmi(now, ns, handled != 0);
	struct rts_event *e = rts_flight(rts_cpu(), bpf_get_smp_processor_id(), now, RTS_EV_NMI);
	if (e) {
		e->flags = handled != 0;
		e->x = fn;
		e->y = now > ns ? now - ns : 0;
	}
	return 0;
}

static __always_inline int rts_softirq_entry_body(__u32 vec)
{
	__u64 now = bpf_ktime_get_ns();
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs)
		return 0;
	rts_noise_enter(now, 0, rts_cpu_busy(cs, now), true);
	cs->softirq_vec = vec + 1;
	cs->softirq_tid = bpf_get_current_pid_tgid() & 0xffffffff;
	cs->softirq_entry = now;
	struct rts_event *e = rts_flight(cs, bpf_get_smp_processor_id(), now, RTS_EV_SOFTIRQ_ENTRY);
	if (e)
		e->a = vec;
	return 0;
}

static __always_inline int rts_softirq_exit_body(__u32 vec)
{
	__u64 now = bpf_ktime_get_ns();
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs)
		return 0;
	if (cs->softirq_vec)
		rts_noise_leave(now, cs->softirq_entry, RTS_NC_SOFTIRQ, vec);
	if (cs->softirq_vec && now > cs->softirq_entry)
		cs->softirq_ns += now - cs->softirq_entry;
	cs->softirq_vec = 0;
	struct rts_event *e = rts_flight(cs, bpf_get_smp_processor_id(), now, RTS_EV_SOFTIRQ_EXIT);
	if (e)
		e->a = vec;
	return 0;
}

#endif
