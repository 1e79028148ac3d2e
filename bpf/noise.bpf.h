/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Noise: every interval in which a tracked task wanted its CPU and did not
 * have it (RTS_M_NOISE). Its parts are the hard IRQs, hard-IRQ timer
 * callbacks and softirqs its CPU served while it was current, the time it
 * spent off its CPU while runnable (preempted, or throttled: left for a
 * lower class or priority), and the hypervisor steal its CPU's clock grew by
 * while it ran. Parts closer together than RTS_NOISE_MERGE_NS are one
 * interval: a polling loop sees one gap for an IRQ, the softirqs at its
 * exit, a preemption at its return and the way back to user space.
 *
 * The interval being built lives in per-CPU state while its task is current
 * (noise_cpus), and in the task's state while it is off its CPU; it is
 * recorded when it can no longer grow: at the start of the next part that
 * comes later than the merge gap, or when the task sleeps or ends. Each
 * hook pays one per-CPU lookup and a compare when no tracked task is
 * current there.
 *
 * Included by handlers.bpf.h after the engine's rts_eng_current
 * declaration and rts_throttled; not re-entrant with itself on one CPU except through IRQ
 * nesting, which the depth counter follows.
 */
#ifndef RTSCOPE_NOISE_BPF_H
#define RTSCOPE_NOISE_BPF_H

#include "task_logic.bpf.h"

/*
 * Parts closer than this are one interval. Measured against a busy loop
 * that records its own gaps (TestNoiseAgreesWithLoop, this 2-vCPU VM):
 * inside one gap of the loop, the spaces between two recorded parts (the
 * kernel's own path from a switch-in back to user space before the next
 * interruption, irq_exit to a softirq) were 2.0-7.0 us for 90% of them
 * (median 6.1 us, 2606 gaps) with 2 us as the gap: the loop never ran in
 * them. 10 us bridges those; two gaps of the loop that it merges make one
 * interval at most 10 us longer than the longer of them.
 */
#define RTS_NOISE_MERGE_NS 10000ULL

/*
 * A softirq, or a preemption, that begins after a hard IRQ part ended and
 * nothing else happened is that interrupt's own exit (irq_exit runs the
 * softirqs, its return preempts): one interval when it comes within this.
 * The interrupt's tail after its last hard timer callback (reprogramming the
 * clock event) took 10-31 us on this VM at quiet times, more than the merge
 * gap, and no event shows it.
 */
#define RTS_NOISE_TAIL_NS 100000ULL

/* Levels of nested interruptions whose own time is kept apart (a softirq, the local timer interrupt in it, a callback in that). */
#define RTS_NOISE_LEVELS 4

/* Per-CPU noise state: the tracked task current here and its open interval. */
struct rts_noise_cpu {
	__u64 id; /* tracking id of the tracked task current here, 0: none */
	__u32 tid;
	__u32 depth;      /* interruptions in progress (hard IRQ, hard timer callback, softirq; nested) */
	__u64 steal_base; /* steal clock at the last reading while it was current (0: none yet) */
	__u64 quiet_from; /* what came before is recorded, or not its (its switch-in, its last recorded end) */
	__u64 irq_tail;   /* when the last hard IRQ part ended, nothing since (0: none) */
	/* By level (depth - 1) of the part in progress there: the time of the parts that nested in it, and how many were timer interruptions */
	__u64 nest_ns[RTS_NOISE_LEVELS];
	__u8 nest_timers[RTS_NOISE_LEVELS];
	/*
	 * The time this CPU ran tasks below the real-time classes (SCHED_OTHER,
	 * idle), summed at each switch since switch_at, the last one; and the
	 * last real-time task to get it back from them (rts_noise_low).
	 */
	__u64 low_ns;
	__u64 switch_at;
	__u32 rt_back_tid;
	__u32 pad_low;
	struct rts_noise_iv iv;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rts_noise_cpu);
} noise_cpus SEC(".maps");

static __always_inline struct rts_noise_cpu *rts_noise_cpu(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&noise_cpus, &zero);
}

/* A part of cause `cause` (who: its irq, vector or task) that lasted ns. */
static __always_inline void rts_noise_part(struct rts_noise_iv *iv, __u8 cause, __u32 who, __u64 ns)
{
	iv->mask |= 1 << (cause & 15);
	if (ns >= iv->top_ns) {
		iv->top_ns = ns;
		iv->top_cause = cause;
		iv->top_who = who;
	}
}

/* Add parts (a difference: may be negative) of cause, taking ns of their own time, to iv's sums. */
static __always_inline void rts_noise_sum(struct rts_noise_iv *iv, __u8 cause, __s32 parts, __u64 ns)
{
	__u32 i = cause - 1;
	if (i >= RTS_NOISE_CAUSES)
		return;
	_Static_assert(RTS_NOISE_CAUSES <= 8, "rts_noise_iv.sums: a bit a cause");
	__u8 bit = 1 << i;
	__u32 p = iv->sums & bit ? iv->cause_parts[i] : 0;
	iv->cause_parts[i] = parts < 0 && p < (__u32)-parts ? 0 : p + parts;
	iv->cause_ns[i] = (iv->sums & bit ? iv->cause_ns[i] : 0) + ns;
	iv->sums |= bit;
}

/*
 * *dst = *src, the sums only when it has any: a preempted task's interval
 * is carried off its CPU and back at every preemption (44% of the switches
 * of stress-ng --switch), most with no part yet.
 */
static __always_inline void rts_noise_copy(struct rts_noise_iv *dst, const struct rts_noise_iv *src)
{
	dst->start = src->start;
	dst->end = src->end;
	dst->top_ns = src->top_ns;
	dst->top_who = src->top_who;
	dst->cpu_start = src->cpu_start;
	dst->top_cause = src->top_cause;
	dst->mask = src->mask;
	dst->sums = src->sums;
	if (!src->sums)
		return;
	__builtin_memcpy(dst->cause_ns, src->cause_ns, sizeof(dst->cause_ns));
	__builtin_memcpy(dst->cause_parts, src->cause_parts, sizeof(dst->cause_parts));
}

/* Begin an interval at `at` on cpu, unless one is open. */
static __always_inline void rts_noise_open(struct rts_noise_iv *iv, __u64 at, __u32 cpu)
{
	if (iv->start)
		return;
	iv->start = at;
	iv->end = at;
	iv->top_ns = 0;
	iv->top_who = 0;
	iv->top_cause = RTS_NC_NONE;
	iv->mask = 0;
	iv->cpu_start = cpu;
	iv->sums = 0;
}

/* Can the interval no longer grow by a part starting at `at`? */
static __always_inline bool rts_noise_over(const struct rts_noise_iv *iv, __u64 at)
{
	return iv->start && at > iv->end + RTS_NOISE_MERGE_NS;
}

/* Is a part starting at `at` the exit of the hard IRQ that ended last (a softirq, a preemption)? */
static __always_inline bool rts_noise_irq_tail(const struct rts_noise_cpu *n, __u64 at)
{
	return n->irq_tail && at <= n->irq_tail + RTS_NOISE_TAIL_NS;
}

/*
 * Record st's interval iv, ending on cpu, as a sample and a flight event;
 * iv is closed. A global function, verified once (RTS_VERIFIED_ONCE, as
 * rts_settle): inlined at its five calls it made on_sched_switch's
 * verification 60k instructions longer.
 */
RTS_VERIFIED_ONCE int rts_noise_record(struct rts_task_state *st, struct rts_noise_iv *iv, __u32 cpu, __u64 now)
{
	if (!st || !iv)
		return 0;
	__u64 start = iv->start, end = iv->end;
	iv->start = 0;
	if (!start || end <= start)
		return 0;
	struct rts_task_stats *s = rts_stats(st);
	rts_record(st, s, RTS_M_NOISE, end - start, start, end, iv->cpu_start, cpu);
	if (s) {
		for (int i = 0; i < RTS_NOISE_CAUSES; i++) {
			if (!(iv->sums & (1 << i)))
				continue;
			s->noise_ns[i] += iv->cause_ns[i];
			s->noise_parts[i] += iv->cause_parts[i];
		}
	}
	/* Its wall time runs to here at least: a poller's switch-outs, which
	 * account it, can be seconds apart (oslat: 4.7 of 8 s accounted, the
	 * noise per second read 999 ms/s). */
	if (s && st->sched_since && end > st->sched_since && end - st->sched_since > s->sched_open_ns)
		s->sched_open_ns = end - st->sched_since;
	struct rts_event *e = rts_flight(rts_cpu(), cpu, now, RTS_EV_NOISE);
	if (e) {
		e->a = st->tid;
		e->b = iv->top_who;
		e->flags = iv->top_cause;
		e->c = iv->mask; /* 16 bits: a bit a cause, RTS_NC_NMI is bit 8 */
		e->x = start;
		e->y = end; /* no own number: like faults, context for its windows, not one of its own events */
	}
	return 0;
}

/* Record n's interval, when the current task is still the one it is of. */
static __always_inline void rts_noise_flush_current(struct rts_noise_cpu *n, __u32 cpu, __u64 now)
{
	struct rts_task_state *st = rts_eng_current();
	if (st && st->id == n->id) {
		rts_noise_record(st, &n->iv, cpu, now);
		n->quiet_from = n->iv.end;
	}
	n->iv.start = 0;
}

/*
 * A hard IRQ, hard timer callback or softirq begins on this CPU at now;
 * from: when the CPU was due to take it (a timer's hard expiry: its
 * interrupt's delivery and entry took the CPU from then, 35-100 us on this
 * VM, which no event shows), else now; a due time before the task's
 * switch-in or the end of its last part is not taken. tail: a softirq,
 * which the exit of the hard IRQ that ended last runs (RTS_NOISE_TAIL_NS). busy: the CPU's state said one was
 * in progress before it; when not, a depth left by a lost exit (classic
 * programs do not nest: an exit that fires while another of them runs is
 * skipped) is dropped.
 */
static __always_inline void rts_noise_enter(__u64 now, __u64 from, bool busy, bool tail)
{
	struct rts_noise_cpu *n = rts_noise_cpu();
	if (!n || !n->id)
		return;
	if (!busy)
		n->depth = 0;
	__u32 lv = n->depth & (RTS_NOISE_LEVELS - 1);
	n->nest_ns[lv] = 0;
	n->nest_timers[lv] = 0;
	if (n->depth++) {
		/* Inside the local timer interrupt (feature local_timer): the
		 * callback's due time is when that interrupt took the CPU. */
		if (from && from < now && from >= n->quiet_from && n->iv.start && from < n->iv.start)
			n->iv.start = from;
		return;
	}
	/* Due before what is known of the CPU (its task's switch-in, the last
	 * interval's end): something else held the interrupt; from now. */
	__u64 known = n->iv.start ? n->iv.end : n->quiet_from;
	__u64 at = from && from < now && from >= known ? from : now;
	__u32 cpu = bpf_get_smp_processor_id();
	if (rts_noise_over(&n->iv, at) && !(tail && rts_noise_irq_tail(n, at)))
		rts_noise_flush_current(n, cpu, now);
	n->irq_tail = 0;
	rts_noise_open(&n->iv, at, cpu);
}

/* st becomes this CPU's current tracked task at now, its steal clock read as steal (0: none yet): nothing of it before now is noise. */
static __always_inline void rts_noise_own(struct rts_noise_cpu *n, const struct rts_task_state *st, __u64 now,
					  __u64 steal)
{
	n->id = st->id;
	n->tid = st->tid;
	n->steal_base = steal;
	n->quiet_from = now;
}

/*
 * A tracked task current here that no switch-in showed (tracked while it
 * ran: at its rename, a scan, a policy change) is taken as this CPU's at
 * the tick (now), which calls this: a FIFO busy loop tracked as it ran
 * was switched in again only when throttled, and its IPIs until then
 * (half of them in a 3 s run of TestNoiseIPIsOfLoop) were nobody's. One
 * lookup of the current task a tick on a CPU with no tracked task current.
 */
static __always_inline void rts_noise_adopt(__u64 now)
{
	struct rts_noise_cpu *n = rts_noise_cpu();
	if (!n || n->id)
		return;
	struct rts_task_state *st = rts_eng_current();
	if (!st)
		return;
	n->depth = 0;
	n->irq_tail = 0;
	n->iv.start = 0;
	rts_noise_own(n, st, now, 0);
}

/* The hypervisor steal since the last reading, as a part ending at `at` (steal: the clock now; 0: none). */
static __always_inline void rts_noise_steal(struct rts_noise_cpu *n, __u64 at, __u64 steal, __u32 cpu)
{
	__u64 base = n->steal_base;
	if (!steal)
		return;
	n->steal_base = steal;
	if (!base || steal <= base)
		return;
	__u64 d = steal - base;
	__u64 start = at > d ? at - d : 0;
	if (start < n->quiet_from)
		start = n->quiet_from;
	if (n->iv.start && start < n->iv.start)
		n->iv.start = start; /* the stall came before the interrupt that saw it */
	rts_noise_open(&n->iv, start, cpu);
	rts_noise_part(&n->iv, RTS_NC_STEAL, 0, d);
	rts_noise_sum(&n->iv, RTS_NC_STEAL, 1, d);
	if (at > n->iv.end)
		n->iv.end = at;
}

/*
 * The sums of n's part of cause, ns long, that ends at level lv (depth -
 * 1): its own time is ns less the parts nested in it, so that the causes'
 * times add up to the interval's. A hard IRQ or timer interrupt that
 * ran hard timer callbacks (the local timer interrupt; arm64's arch_timer
 * IRQ) is one timer interruption, however many callbacks it ran: counted
 * once (as rtla osnoise counts it), all of its time the timer's. A
 * softirq is its own part, whatever interrupted it.
 */
static __always_inline void rts_noise_nest(struct rts_noise_cpu *n, __u32 lv, __u8 cause, __u64 ns)
{
	lv &= RTS_NOISE_LEVELS - 1;
	__u64 inner = n->nest_ns[lv];
	__u32 timers = n->nest_timers[lv];
	__u64 own = ns > inner ? ns - inner : 0;
	if (cause != RTS_NC_SOFTIRQ && timers) {
		cause = RTS_NC_TIMER;
		rts_noise_sum(&n->iv, cause, 1 - (__s32)timers, own);
	} else {
		rts_noise_sum(&n->iv, cause, 1, own);
	}
	if (!lv)
		return;
	n->nest_ns[(lv - 1) & (RTS_NOISE_LEVELS - 1)] += ns;
	if (cause == RTS_NC_TIMER)
		n->nest_timers[(lv - 1) & (RTS_NOISE_LEVELS - 1)]++;
}

/*
 * The part that began at `since` ends (cause, who). Returns the CPU's
 * noise state when this ended the last part in progress of a tracked task's
 * interruption (the caller may add the steal the tick just read), else 0.
 */
static __always_inline struct rts_noise_cpu *rts_noise_leave(__u64 now, __u64 since, __u8 cause, __u32 who)
{
	struct rts_noise_cpu *n = rts_noise_cpu();
	if (!n || !n->id || !n->depth)
		return 0;
	__u64 ns = now > since ? now - since : 0;
	rts_noise_part(&n->iv, cause, who, ns);
	rts_noise_nest(n, n->depth - 1, cause, ns);
	if (--n->depth)
		return 0;
	n->iv.end = now;
	n->irq_tail = cause == RTS_NC_IRQ || cause == RTS_NC_TIMER || cause == RTS_NC_IPI ? now : 0;
	return n;
}

/*
 * An NMI handler that took ns ends at now (nmi:nmi_handler fires after
 * each handler of an NMI; handled: it claimed it, a part is counted then;
 * the time of one that did not is the NMI's too). No depth: an NMI comes
 * and goes inside whatever part is in progress, whose own time it leaves
 * (the nest sum of that level); with none in progress it is a part of its
 * own, ending now. An NMI is not held off by a BPF program of the BTF
 * engine in progress on this CPU (a tp_btf program only keeps itself from
 * recursing): one landing inside another hook's update of this state
 * can misplace that interval's part; they are rare (perf sampling,
 * watchdog, backtraces) and the update is a few instructions wide.
 */
static __always_inline void rts_noise_nmi(__u64 now, __u64 ns, bool handled)
{
	struct rts_noise_cpu *n = rts_noise_cpu();
	if (!n || !n->id || !ns)
		return;
	__u64 start = now > ns ? now - ns : 0;
	__u32 parts = handled ? 1 : 0;
	if (n->depth) {
		n->nest_ns[(n->depth - 1) & (RTS_NOISE_LEVELS - 1)] += ns;
		rts_noise_part(&n->iv, RTS_NC_NMI, 0, ns);
		rts_noise_sum(&n->iv, RTS_NC_NMI, parts, ns);
		return;
	}
	if (start < n->quiet_from)
		start = n->quiet_from;
	if (rts_noise_over(&n->iv, start))
		rts_noise_flush_current(n, bpf_get_smp_processor_id(), now);
	rts_noise_open(&n->iv, start, bpf_get_smp_processor_id());
	rts_noise_part(&n->iv, RTS_NC_NMI, 0, ns);
	rts_noise_sum(&n->iv, RTS_NC_NMI, parts, ns);
	if (now > n->iv.end)
		n->iv.end = now;
}

/* Does prev (ps) stay runnable? A DEADLINE job's end leaves it runnable, waiting for its next period (rts_dl_waits). */
static __always_inline bool rts_noise_runnable(const struct rts_switch *ev, const struct rts_task_state *ps)
{
	return (ev->preempt || ev->prev_state == 0) && !rts_dl_waits(ev, ps);
}

/*
 * Every switch on this CPU: the run that ends, when of a task below the
 * real-time classes (prio >= 100: SCHED_OTHER, idle), adds to low_ns, so
 * that a real-time task's time off its CPU can be split into the CPU's
 * time below its class (throttling: sched_rt_runtime_us, the fair server)
 * and the rest (real-time peers). A switch from such a task to a real-time
 * one names the task that took the CPU back (back: next is a tracked task
 * coming back with its interval, not one that took the CPU from it).
 */
static __always_inline void rts_noise_low(struct rts_noise_cpu *n, const struct rts_switch *ev, __u64 now,
					  bool back)
{
	if ((__u32)(ev->prev.prio + 1) >= 101) { /* DEADLINE 0, RT 1..100 */
		if (n->switch_at && now > n->switch_at)
			n->low_ns += now - n->switch_at;
		if ((__u32)(ev->next.prio + 1) < 101 && !back)
			n->rt_back_tid = ev->next.tid;
	}
	n->switch_at = now;
}

/* prev (ps), runnable, leaves its CPU at now: its interval, opened at now if none is, goes with it. */
static __always_inline void rts_noise_carry_off(const struct rts_switch *ev, struct rts_task_state *ps,
						struct rts_noise_cpu *n, __u64 now, __u32 cpu)
{
	rts_noise_open(&n->iv, now, cpu);
	rts_noise_copy(&ps->nz, &n->iv);
	ps->nz_off = now;
	ps->nz_who = ev->next.tid;
	/* The throttling rule of rts_throttled: a lower class, not a lower RT priority. */
	ps->nz_cause = rts_throttled(ev) ? RTS_NC_THROTTLE : RTS_NC_PREEMPT;
	ps->nz_cpu = cpu;
	ps->nz_low = n->low_ns;
}

/*
 * next (ns) gets this CPU at now: the interval it carries, if any, goes on
 * here with its time off the CPU as parts. rt: next is a real-time task
 * (not DEADLINE). A real-time task back on the CPU it left had its time off
 * split by what the CPU ran (rts_noise_low): below its class, throttling;
 * the rest, its real-time peers. A FIFO loop left for the fair server and
 * then held off by a FIFO spinner of higher priority read 1.68 s of
 * "throttling" in 6 s, where throttling takes at most 5% of a CPU. Moved to
 * another CPU, the cause at its switch-out names the whole.
 */
static __always_inline void rts_noise_take_on(struct rts_noise_cpu *n, struct rts_task_state *ns, __u64 now,
					      __u64 steal, __u32 cpu, bool rt)
{
	rts_noise_own(n, ns, now, steal);
	if (!ns->nz_off)
		return;
	rts_noise_copy(&n->iv, &ns->nz);
	__u64 off = now > ns->nz_off ? now - ns->nz_off : 0;
	bool throttled = ns->nz_cause == RTS_NC_THROTTLE;
	__u64 low = throttled ? off : 0;
	if (rt && ns->nz_cpu == cpu) {
		low = n->low_ns > ns->nz_low ? n->low_ns - ns->nz_low : 0;
		low = low < off ? low : off;
	}
	if (low || throttled) {
		rts_noise_part(&n->iv, RTS_NC_THROTTLE, throttled ? ns->nz_who : 0, low);
		rts_noise_sum(&n->iv, RTS_NC_THROTTLE, 1, low);
	}
	if (off > low || !throttled) {
		rts_noise_part(&n->iv, RTS_NC_PREEMPT, throttled ? n->rt_back_tid : ns->nz_who, off - low);
		rts_noise_sum(&n->iv, RTS_NC_PREEMPT, 1, off - low);
	}
	n->iv.end = now;
	ns->nz_off = 0;
}

/* The CPU's noise state ends prev's turn; next (ns, when tracked) begins its own (rts_noise_take_on). */
static __always_inline void rts_noise_hand_on(const struct rts_switch *ev, struct rts_noise_cpu *n,
					      struct rts_task_state *ns, __u64 now, __u64 steal)
{
	n->id = 0;
	n->iv.start = 0;
	n->irq_tail = 0;
	if (ns)
		rts_noise_take_on(n, ns, now, steal, bpf_get_smp_processor_id(), (__u32)ev->next.prio < 100);
}

/*
 * The switch from ev->prev (ps when tracked) to ev->next (ns) at now on
 * this CPU; steal: the CPU's steal clock (0: not readable). prev's interval is
 * recorded when it sleeps, or carried off its CPU in its task state when it
 * stays runnable; next's continues on this CPU. A global function, verified
 * once: inlined, its branches multiplied the paths of on_sched_switch
 * (118k instructions verified against 40k before it).
 */
RTS_VERIFIED_ONCE int rts_noise_switch(const struct rts_switch *ev, struct rts_task_state *ps,
				       struct rts_task_state *ns, __u64 now, __u64 steal)
{
	struct rts_noise_cpu *n = rts_noise_cpu();
	if (!n || !ev)
		return 0;
	n->depth = 0; /* no switch in IRQ context: a lost exit ends here */
	if (ps && n->id == ps->id) {
		/* The CPU and runnable are asked again after rts_noise_record: kept
		 * across it, they took this function's stack from 32 to 40 bytes,
		 * a 32-byte step more in on_sched_switch's chain (TestVerifierStack). */
		rts_noise_steal(n, now, steal, bpf_get_smp_processor_id());
		bool runnable = rts_noise_runnable(ev, ps);
		if ((rts_noise_over(&n->iv, now) && !(runnable && rts_noise_irq_tail(n, now))) ||
		    (!runnable && n->iv.start))
			rts_noise_record(ps, &n->iv, bpf_get_smp_processor_id(), now);
		if (rts_noise_runnable(ev, ps))
			rts_noise_carry_off(ev, ps, n, now, bpf_get_smp_processor_id());
	}
	rts_noise_hand_on(ev, n, ns, now, steal);
	return 0;
}

/*
 * rts_noise_switch where it has something to do: a switch with no tracked
 * task current here (n->id 0: iv.start and irq_tail are 0 then, and depth
 * is read only under an id) and no tracked next changes nothing, and
 * returns at one per-CPU load instead of a call (a global function, and a
 * return through the SRSO return thunk on this CPU). A switch that only
 * hands the CPU on is done inline too: prev, when tracked and current
 * here, has no interval open and no steal to add (it sleeps, or is
 * preempted and carries a new one off), whatever next carries. That is
 * every switch of stress-ng --switch 2 with its tasks tracked but the few
 * after an interruption; the call costs them 20 ns, inline 5-9
 * (BenchmarkTrackedPathCost's noise part), with on_sched_switch's
 * verification unchanged (0.24-0.26 s of system time for `rtscope watch
 * -q -d 0.2s --tid 1`, before and after). Not "!ps && !ns": clang makes
 * it one OR of the two pointers, which the verifier refuses.
 */
static __always_inline void rts_noise_switch_at(const struct rts_switch *ev, struct rts_task_state *ps,
						struct rts_task_state *ns, __u64 now, __u64 steal)
{
	struct rts_noise_cpu *n = rts_noise_cpu();
	if (!n)
		return;
	rts_noise_low(n, ev, now, ns && ns->nz_off);
	bool mine = ps && n->id == ps->id;
	if (!mine && !ns && !n->id)
		return;
	bool quiet = mine ? !n->iv.start && steal == n->steal_base : !n->id;
	if (!quiet) {
		rts_noise_switch(ev, ps, ns, now, steal);
		return;
	}
	n->depth = 0;
	if (mine && rts_noise_runnable(ev, ps))
		rts_noise_carry_off(ev, ps, n, now, bpf_get_smp_processor_id());
	rts_noise_hand_on(ev, n, ns, now, steal);
}

/* Tracked task st ends (exits or is untracked) on this CPU: its interval is recorded. */
static __always_inline void rts_noise_end(struct rts_task_state *st, __u64 now)
{
	struct rts_noise_cpu *n = rts_noise_cpu();
	st->nz_off = 0;
	if (!n || n->id != st->id)
		return;
	if (!n->depth)
		rts_noise_record(st, &n->iv, bpf_get_smp_processor_id(), now);
	n->id = 0;
	n->iv.start = 0;
}

#endif
