/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The per-task state machine: every metric of a tracked task is computed
 * here, from plain scalars (time, CPU, flags), so the same code serves the
 * tp_btf/fentry programs, a future classic-tracepoint variant for kernels
 * without BTF, and the raw_tp twins that tests drive with BPF_PROG_TEST_RUN.
 *
 * Each task's metrics are updated by one context at a time: at its own
 * switch-in/out and syscall return (it runs on one CPU at a time) or by the
 * one waker that wins try_to_wake_up() while it sleeps. So plain updates
 * suffice; nothing here takes a lock or an atomic.
 */
#ifndef RTSCOPE_TASK_LOGIC_BPF_H
#define RTSCOPE_TASK_LOGIC_BPF_H

#include "maps.bpf.h"
#include "compat.bpf.h"

enum rts_task_run_state {
	RTS_TS_RUNNABLE = 0, /* on a run queue but not woken by us: new or preempted */
	RTS_TS_RUNNING,      /* on CPU */
	RTS_TS_SLEEPING,     /* switched out voluntarily */
	RTS_TS_WOKEN,        /* woken from a sleep, waiting for a CPU */
};

/* Largest spacing of timer expiries still taken as a loop's period. */
#define RTS_MAX_PERIOD (10ULL * 1000 * 1000 * 1000)

/*
 * One step of a binary search for the top bit of x (x < 2^(2k)): k when x
 * has a bit at or above 2^k (x then shifted down by k), else 0. ALU only:
 * (x >> k) + 2^k - 1 reaches 2^k exactly when x >> k is not 0. The same
 * search with a branch per step gave the verifier 2^6 paths through each
 * rts_record it walks (on_sched_switch: 91,720 instructions verified in
 * 318 ms, 50k of them in the bucket and the histogram lines after it).
 */
static __always_inline __u32 rts_msb_step(__u64 *x, __u32 k)
{
	__u64 t = ((*x >> k) + ((1ULL << k) - 1)) >> k; /* 0 or 1 */
	__u32 s = (__u32)t * k;
	*x >>= s;
	return s;
}

static __always_inline __u32 rts_hist_bucket(__u64 v)
{
	if (v < (1ULL << RTS_HIST_MIN_SHIFT))
		return (__u32)(v >> (RTS_HIST_MIN_SHIFT - RTS_HIST_SUB_BITS));
	__u64 x = v;
	__u32 msb = rts_msb_step(&x, 32);
	msb += rts_msb_step(&x, 16);
	msb += rts_msb_step(&x, 8);
	msb += rts_msb_step(&x, 4);
	msb += rts_msb_step(&x, 2);
	msb += (__u32)(x >> 1); /* x < 4 */
	if (msb >= RTS_HIST_MAX_SHIFT)
		return RTS_HIST_BUCKETS - 1;
	return (msb - RTS_HIST_MIN_SHIFT + 1) * RTS_HIST_SUB +
	       (__u32)((v >> (msb - RTS_HIST_SUB_BITS)) & (RTS_HIST_SUB - 1));
}

/* Queue a notice; false when the ring is full (counted as a lost notice). */
static __always_inline bool rts_notice_flags(__u32 type, __u32 metric, __u64 id, __u32 tid,
					     __u64 value, __u64 start, __u64 end,
					     __u32 cpu_start, __u32 cpu, __u32 flags)
{
	struct rts_notice *n = bpf_ringbuf_reserve(&notices, sizeof(*n), 0);
	if (!n) {
		rts_count(RTS_C_NOTICE_LOST);
		return false;
	}
	n->type = type;
	n->metric = metric;
	n->id = id;
	n->tid = tid;
	n->cpu = cpu;
	n->value = value;
	n->start = start;
	n->end = end;
	n->cpu_start = cpu_start;
	n->flags = flags;
	/* No wakeup: user space polls, so no irq_work lands on a traced CPU. */
	bpf_ringbuf_submit(n, BPF_RB_NO_WAKEUP);
	return true;
}

static __always_inline void rts_notice(__u32 type, __u32 metric, __u64 id, __u32 tid,
				       __u64 value, __u64 start, __u64 end,
				       __u32 cpu_start, __u32 cpu)
{
	rts_notice_flags(type, metric, id, tid, value, start, end, cpu_start, cpu, 0);
}

/*
 * Send the carry of bucket b of a metric's 16-bit histogram, which just
 * wrapped: 65536 samples for user space to add (RTS_N_HIST_CARRY), sent
 * whether tracing is on or not; counted in hist_lost when the ring is
 * full. Not inlined: the programs keep one copy instead of one per
 * rts_record (on_sched_switch took 383 more instructions inlined).
 */
static __noinline void rts_hist_carry(struct rts_metric_stats *m, __u64 id, __u32 tid,
				      __u32 metric, __u32 b)
{
	if (!rts_notice_flags(RTS_N_HIST_CARRY, metric, id, tid, b, 0, 0, 0, 0, 0))
		m->hist_lost++;
}

/*
 * Count a sample in bucket b (< RTS_HIST_BUCKETS) of a metric's 16-bit
 * histogram; a bucket that wraps sends its carry, once in 65536 samples of
 * one bucket, so the notice ring's load does not change.
 */
static __always_inline void rts_hist_add(struct rts_task_state *st, struct rts_metric_stats *m,
					 __u32 metric, __u32 b)
{
	if (!++m->hist[b & 255])
		rts_hist_carry(m, st->id, st->tid, metric, b);
}

/* The metrics of a loop's iterations, which its start-up leaves out until its period settles. */
#define RTS_LOOP_METRICS \
	((1U << RTS_M_CYCLE) | (1U << RTS_M_PERIOD) | (1U << RTS_M_JITTER) | (1U << RTS_M_ITERATION))

/*
 * Is a sample of metric ending at `end` in st's start-up? With --warm-up
 * (warm_up_ns set) every sample before its end; else the loop metrics until
 * the task settled (rts_period_seen): a 5 ms loop's first iteration took
 * 45.5 ms (it slept until its first deadline) and was its worst.
 */
static __always_inline bool rts_startup(struct rts_task_state *st, __u32 metric, __u64 end)
{
	if (warm_up_ns != RTS_WARM_UP_DETECT)
		return end < st->warm_until;
	return !st->settled && ((1U << metric) & RTS_LOOP_METRICS);
}

/*
 * Add one sample of a metric; a new maximum asks user space to keep its
 * window. False when it was not counted: a start-up sample (rts_startup),
 * which counts in startup_iterations when it is an iteration of the loop.
 */
static __always_inline bool rts_record(struct rts_task_state *st, struct rts_task_stats *s,
				       __u32 metric, __u64 value, __u64 start, __u64 end,
				       __u32 cpu_start, __u32 cpu)
{
	if (metric >= RTS_M_COUNT || !s)
		return false;
	if (rts_startup(st, metric, end)) {
		if (metric == RTS_M_ITERATION || (metric == RTS_M_CYCLE && !st->arm_ts))
			s->startup_iterations++;
		return false;
	}
	struct rts_metric_stats *m = &s->m[metric];
	m->count++;
	m->sum += value;
	m->last = value;
	m->last_end = end;
	if (m->count == 1 || value < m->min)
		m->min = value;
	__u32 flags = 0;
	if (m->slo && value > m->slo) {
		m->violations++;
		flags = RTS_NF_SLO_VIOLATED;
	}
	__u32 b = rts_hist_bucket(value);
	/* Keep the bounds check on the register used for the access: older
	 * verifiers (Linux 6.1) lose the bound when clang rearranges them. */
	asm volatile(""
		     : "+r"(b));
	if (b < RTS_HIST_BUCKETS)
		rts_hist_add(st, m, metric, b);
	if (m->count == 1 || value > m->max) {
		m->max = value;
		m->max_start = start;
		m->max_end = end;
		if (trace_enabled) {
			/* Its notice says a violation too (flags). */
			rts_notice_flags(RTS_N_NEW_MAX, metric, st->id, st->tid, value, start, end,
					 cpu_start, cpu, flags);
			if (flags)
				st->viol_notice_ts = end;
			return true;
		}
	}
	if (flags && violation_notices && end - st->viol_notice_ts >= RTS_VIOL_NOTICE_GAP_NS) {
		/* Every violation is noticed, not only the worst (rate-limited). */
		st->viol_notice_ts = end;
		rts_notice_flags(RTS_N_SLO_VIOLATION, metric, st->id, st->tid, value, start, end,
				 cpu_start, cpu, flags);
	}
	return true;
}

/*
 * The key is copied to the stack: in a global function (rts_noise_record,
 * rts_dl_switch_in) st is PTR_TO_MEM, which verifiers before 6.4 refuse
 * as a map key ("R2 type=mem expected=fp, ..."; Linux 6.1 in the QEMU
 * guests). A stack key is accepted by all.
 */
static __always_inline struct rts_task_stats *rts_stats(struct rts_task_state *st)
{
	__u64 id = st->id;
	return bpf_map_lookup_elem(&stats, &id);
}

/*
 * rts_hold keeps a sample of metric (a constant below RTS_HELD_MAX, not
 * RTS_M_RESPONSE) in st until rts_settle records it into the task's stats
 * (hold_samples): the samples of a task's way to its CPU (wakeup,
 * switch-in, return to user space) cost it a few stores to its own state
 * there, and the statistics lookup and histogram lines move to its
 * switch-out, after its work. Without hold_samples it is recorded at once.
 * Each metric is held at most once between two settles: a wakeup's
 * samples need the sleeping state, which only a voluntary switch-out
 * (a settle) sets, and the user sample a pending release, which it ends.
 */
static __always_inline void rts_hold(struct rts_task_state *st, __u32 metric, __u64 value,
				     __u64 start, __u64 end, __u32 cpu_start, __u32 cpu)
{
	if (!hold_samples) {
		rts_record(st, rts_stats(st), metric, value, start, end, cpu_start, cpu);
		return;
	}
	if (metric >= RTS_HELD_MAX)
		return;
	struct rts_held_sample *h = &st->held_samples[metric];
	h->value = value;
	h->start = start;
	h->end = end;
	h->cpu_start = cpu_start;
	h->cpu = cpu;
	st->held_mask |= 1U << metric;
}

/*
 * Records st's held sample of metric into s. Not inlined: the paths of a
 * record end at its return, so the seven of a settle cost the verifier
 * seven records, where inlined they multiplied (the classic
 * on_sched_switch passed the million instructions it allows). Global:
 * verified once (compat.bpf.h); st and s may be NULL there.
 */
RTS_VERIFIED_ONCE_CALL int rts_settle_one(struct rts_task_state *st, struct rts_task_stats *s, __u32 metric)
{
	if (!st || metric >= RTS_HELD_MAX)
		return 0;
	struct rts_held_sample *h = &st->held_samples[metric];
	rts_record(st, s, metric, h->value, h->start, h->end, h->cpu_start, h->cpu);
	return 0;
}

/* The start-up's length goes to its stats (startup_us), once it is over. */
static __always_inline void rts_startup_over(struct rts_task_state *st, struct rts_task_stats *s)
{
	if (!st->settled_at)
		return;
	/* (Twins' synthetic times precede their tracking: over, in 1 us.) */
	__u64 us = st->settled_at > st->tracked_at ? (st->settled_at - st->tracked_at) / 1000 : 0;
	s->startup_us = us > 0xfffffffeULL ? 0xffffffffU : (__u32)us + !us; /* 0 means "not over" */
}

/*
 * rts_settle adds to s (its stats, 0: not found, and what st holds is
 * dropped) what st holds back: its held samples and counts. Called where
 * the stats are looked up anyway: its switch-out and timer arming, its
 * exit or untracking, and at the end of a run for every task still
 * tracked (settle_held, after the detach). The metrics are constants: a
 * loop over the held samples took on_sched_switch past the million
 * instructions the verifier allows. Inlined: each record is a call
 * (rts_settle_one), and since the histogram bucket has no branches
 * (rts_msb_step) inlining it costs on_sched_switch 5,339 verified
 * instructions (45,155 to 50,494), where as a global function it cost
 * every tracked switch-out one more call and return (a return thunk on
 * this CPU: SRSO safe RET).
 */
static __always_inline int rts_settle(struct rts_task_state *st, struct rts_task_stats *s)
{
	if (!st)
		return 0;
	__u32 mask = st->held_mask;
	st->held_mask = 0;
	if (s) {
		/* Only what is held: most switch-outs settle one wakeup, or none. */
		if (st->held_wakeups)
			s->wakeups += st->held_wakeups;
		if (st->held_releases) {
			s->timer_releases += st->held_releases;
			s->nominal_period = st->nominal_period;
			if (!s->startup_us)
				rts_startup_over(st, s);
		}
		if (st->held_overruns)
			s->overruns += st->held_overruns;
		if (st->held_lower_waker)
			s->hygiene[RTS_H_LOWER_PRIO_WAKER] += st->held_lower_waker;
		if (mask) {
			/* In the order they are taken: timer release, switch-in, return to user. */
			if (mask & (1U << RTS_M_TIMER_IRQ))
				rts_settle_one(st, s, RTS_M_TIMER_IRQ);
			if (mask & (1U << RTS_M_CYCLE))
				rts_settle_one(st, s, RTS_M_CYCLE);
			if (mask & (1U << RTS_M_PERIOD))
				rts_settle_one(st, s, RTS_M_PERIOD);
			if (mask & (1U << RTS_M_JITTER))
				rts_settle_one(st, s, RTS_M_JITTER);
			if (mask & (1U << RTS_M_LATENCY))
				rts_settle_one(st, s, RTS_M_LATENCY);
			if (mask & (1U << RTS_M_TIMER_THREAD))
				rts_settle_one(st, s, RTS_M_TIMER_THREAD);
			if (mask & (1U << RTS_M_TIMER_USER))
				rts_settle_one(st, s, RTS_M_TIMER_USER);
		}
	}
	st->held_wakeups = 0;
	st->held_releases = 0;
	st->held_overruns = 0;
	st->held_lower_waker = 0;
	return 0;
}

/* Regular release spacings in a row that make a task periodic, irregular ones that unmake it. */
#define RTS_PERIOD_CONFIRM 4
#define RTS_PERIOD_LOSE 8
/*
 * The releases a period is of: the deadlines the task arms itself
 * (clock_nanosleep), or the expiries of a timer it does not arm (timerfd),
 * as long as it arms none (rts_wakeup_core).
 */
enum rts_period_src {
	RTS_PSRC_NONE = 0,
	RTS_PSRC_ARM,
	RTS_PSRC_TIMER,
};

/* Spacings after which a task that found no period ends its start-up anyway (event-driven). */
#define RTS_STARTUP_SPACINGS 16

/*
 * Is spacing x within 1/32 of p? Absolute-time loops repeat their spacing
 * exactly; 1/32 leaves room for relative sleeps and wakeup jitter, and
 * random (event-driven) gaps hardly ever fall 4 times in a row within it.
 */
static __always_inline bool rts_near(__u64 x, __u64 p)
{
	__u64 d = x > p ? x - p : p - x;
	return d <= p >> 5;
}

/* Is x near a multiple of p of at least 2 (a loop that skipped deadlines)? */
static __always_inline bool rts_multiple(__u64 x, __u64 p)
{
	if (!p || x < p + p / 2)
		return false;
	__u64 r = x % p;
	return r <= p >> 5 || p - r <= p >> 5;
}

/*
 * A spacing x of two consecutive releases (its own deadlines armed, or its
 * timer's expiries) at `now`. The candidate period is the mean of the
 * spacings near it since it began; it becomes the nominal period once
 * RTS_PERIOD_CONFIRM spacings in a row were near it, and converges on the
 * true period from there (the mean of every regular spacing: a 5.333333 ms
 * loop with jitter is within 0.1%, where the smallest spacing seen twice
 * said 5297.6 us). A periodic loop that skips deadlines (multiples of the
 * period) stays periodic; RTS_PERIOD_LOSE irregular spacings in a row make
 * it event-driven again, and a new candidate starts. The start-up ends when
 * the period settles, or after RTS_STARTUP_SPACINGS spacings without one.
 */
static __always_inline void rts_period_seen(struct rts_task_state *st, struct rts_task_stats *s,
					    __u64 x, __u64 now, __u8 src)
{
	if (src == RTS_PSRC_ARM && st->per_src == RTS_PSRC_TIMER)
		return;
	if (src != st->per_src) { /* a timer's releases take over from armings */
		st->per_src = src;
		st->per_n = 0;
		st->nominal_period = 0;
	}
	__u64 cand = st->per_n ? st->per_sum / st->per_n : 0;
	if (cand && rts_near(x, cand)) {
		st->per_sum += x;
		st->per_n++;
		st->per_miss = 0;
		if (st->per_streak < 255)
			st->per_streak++;
		if (st->per_streak >= RTS_PERIOD_CONFIRM)
			st->nominal_period = st->per_sum / st->per_n;
	} else if (rts_multiple(x, cand)) {
		/* Deadlines skipped: regular, not a new period (a loop late at
		 * every other deadline, from its start, too). */
		st->per_miss = 0;
	} else if (st->nominal_period && ++st->per_miss < RTS_PERIOD_LOSE) {
		/* one late or early release of a periodic task */
	} else {
		st->nominal_period = 0;
		st->per_sum = x;
		st->per_n = 1;
		st->per_streak = 1;
		st->per_miss = 0;
	}
	if (!st->settled && warm_up_ns == RTS_WARM_UP_DETECT) {
		if (st->per_seen < 255)
			st->per_seen++;
		if (st->nominal_period || st->per_seen >= RTS_STARTUP_SPACINGS) {
			st->settled = 1;
			st->settled_at = now; /* to its stats at its next settle, when s is 0 */
			if (s)
				rts_startup_over(st, s);
		}
	}
	if (s)
		s->nominal_period = st->nominal_period;
}

/*
 * The task became runnable after a sleep at `now`. timer_expiry != 0 when the
 * wakeup ran inside an hrtimer callback: a timer release, whose callback
 * started at cb_entry on cpu. Its samples and counts are held (rts_hold):
 * this runs on the task's way to its CPU.
 */
static __always_inline void rts_wakeup_core(struct rts_task_state *st, __u64 now, __u32 cpu,
					    __u64 timer_expiry, __u64 cb_entry)
{
	st->state = RTS_TS_WOKEN;
	st->wake_ts = now;
	st->wake_cpu = cpu;
	st->resp_start = now;
	st->release_pending = 0;
	st->held_wakeups++;
	if (!timer_expiry)
		return;

	/* A timer release: the sleep that just ended was a timer sleep. */
	st->held_releases++;
	__u64 irq_lat = cb_entry > timer_expiry ? cb_entry - timer_expiry : 0;
	rts_hold(st, RTS_M_TIMER_IRQ, irq_lat, timer_expiry, cb_entry, cpu, cpu);
	st->release_pending = 1;
	st->release_expiry = timer_expiry;
	st->release_cpu = cpu;

	__u64 spacing = 0;
	if (st->cycle_start && st->last_expiry && timer_expiry > st->last_expiry &&
	    timer_expiry - st->last_expiry < RTS_MAX_PERIOD) {
		spacing = timer_expiry - st->last_expiry;
		/* A loop arming its own deadlines has its period from them
		 * (rts_on_timer_arm): its timer releases are the same deadlines,
		 * and a stale one (a past deadline's timer firing after the loop
		 * re-armed) would read as another timer's. */
		if (!st->arm_ts)
			rts_period_seen(st, 0, spacing, now, RTS_PSRC_TIMER);
	}

	if (st->cycle_start && st->sleep_ts > st->cycle_start) {
		__u64 cycle = st->sleep_ts - st->cycle_start;
		rts_hold(st, RTS_M_CYCLE, cycle, st->cycle_start, st->sleep_ts, st->cycle_cpu, st->cpu);
		/* A loop that arms its own sleeper timer has its overruns counted
		 * at the arming (rts_on_timer_arm), once each; a start-up cycle
		 * is no overrun (its sample is left out too). */
		if (st->per_src == RTS_PSRC_TIMER && st->nominal_period && cycle > st->nominal_period &&
		    !rts_startup(st, RTS_M_CYCLE, st->sleep_ts))
			st->held_overruns++;
	}
	if (spacing) {
		__u64 period = now - st->cycle_start;
		__u64 jitter = period > spacing ? period - spacing : spacing - period;
		rts_hold(st, RTS_M_PERIOD, period, st->cycle_start, now, st->cycle_cpu, cpu);
		rts_hold(st, RTS_M_JITTER, jitter, st->cycle_start, now, st->cycle_cpu, cpu);
	}
	st->cycle_start = now;
	st->cycle_cpu = cpu;
	st->last_expiry = timer_expiry;
}

/*
 * The task arms its own sleeper timer (hrtimer_start of hrtimer_wakeup:
 * clock_nanosleep, nanosleep, timed waits) at `now`: one iteration of its
 * loop ends and the next begins, whether a sleep follows or not. A loop
 * that overran arms a deadline already past and does not sleep:
 * clock_nanosleep(TIMER_ABSTIME) returns at once (the timer fires about
 * 20 us later, measured on this VM, while the task runs on), so no
 * wakeup, switch or cycle marks its iterations; the arming does.
 *
 * expiry: the soft expiry in CLOCK_MONOTONIC ns, 0 when its clock cannot be
 * converted (compat.bpf.h, rts_timer_expiry). slack: the range the kernel
 * granted the timer past it (RTS_SLACK_UNKNOWN: not known), carried in the
 * event for the analysis. key: the same expiry in the
 * timer's own clock: do_nanosleep() re-arms the same deadline after a
 * spurious wakeup, which is not a new iteration, and spacings of a
 * REALTIME/TAI loop's deadlines are exact in its own clock.
 *
 * s: its stats (rts_stats), looked up once by the caller's hook.
 * Overruns are counted here, one an iteration at most, and only for a task
 * with a nominal period past its start-up (with its iteration counted):
 * a deadline at or before now (armed too late), or deadlines skipped to
 * catch up (an armed expiry a multiple of the period after the previous one).
 * A Go runtime thread once had 24764864 "overruns" in 3383 iterations: a
 * 77.7 us "period", and every skipped one counted.
 */
static __always_inline void rts_on_timer_arm(struct rts_task_state *st, struct rts_task_stats *s,
					     __u64 now, __u32 cpu, __u64 expiry, __u64 key, __u64 slack)
{
	/* It runs: its work since its wakeup is done, and its stats are at hand. */
	rts_settle(st, s);
	/* The only event of a loop that never sleeps: it tells the analysis
	 * the task runs, where its past deadline's wakeup would say it slept. */
	struct rts_event *e = rts_flight(rts_cpu(), cpu, now, RTS_EV_TIMER_ARM);
	if (e) {
		e->a = st->tid;
		e->own = rts_own_seq(st);
		e->flags = expiry && expiry <= now;
		e->x = expiry;
		e->y = 0;
		if (slack != RTS_SLACK_UNKNOWN) {
			e->flags |= RTS_EVF_SLACK;
			e->y = slack;
		}
	}
	/* A wakeup seen while it ran ended an earlier sleep, or was the
	 * expiry of a deadline already past: it must not end the coming one. */
	st->pending_ts = 0;
	if (st->arm_ts && key == st->arm_key)
		return;
	bool missed = false;
	if (st->arm_ts && key > st->arm_key && key - st->arm_key < RTS_MAX_PERIOD) {
		__u64 spacing = key - st->arm_key;
		rts_period_seen(st, s, spacing, now, RTS_PSRC_ARM);
		/* Skipped deadlines are whole periods: a relative sleep that
		 * grew (a Go runtime thread's backoff) skips none. */
		missed = st->per_src == RTS_PSRC_ARM && st->nominal_period &&
			 rts_multiple(spacing, st->nominal_period);
	}
	if (expiry && expiry <= now && st->per_src == RTS_PSRC_ARM)
		missed = true;
	if (st->arm_ts && now > st->arm_ts && now - st->arm_ts < RTS_MAX_PERIOD &&
	    rts_record(st, s, RTS_M_ITERATION, now - st->arm_ts, st->arm_ts, now, st->arm_cpu, cpu) &&
	    missed && st->nominal_period && s)
		s->overruns++;
	st->arm_ts = now;
	st->arm_key = key;
	st->arm_cpu = cpu;
}

/* When the current wait of a woken task began: its timer's expiry for a timer release. */
static __always_inline __u64 rts_wait_start(struct rts_task_state *st)
{
	return st->release_pending ? st->release_expiry : st->wake_ts;
}

/*
 * The task no longer waits where it was marked (it runs, or moved). Both
 * engines' hooks call it. waiter_stacks is false on kernels without
 * bpf_map_lookup_percpu_elem (compat.bpf.h): the calls are then dead code.
 */
static __always_inline void rts_clear_waiting(struct rts_task_state *st)
{
	if (!waiter_stacks || st->waiting_cpu < 0)
		return;
	struct rts_cpu_state *cs = bpf_map_lookup_percpu_elem(&cpus, &(__u32){0}, st->waiting_cpu);
	if (cs && cs->waiting_tid == st->tid)
		cs->waiting_tid = 0;
	st->waiting_cpu = -1;
}

/*
 * rts_clear_waiting at a switch-in on `cpu`, whose state the caller holds
 * (here): a woken task usually runs where it waited, and this CPU's slot
 * needs no bpf_map_lookup_percpu_elem call.
 */
static __always_inline void rts_clear_waiting_at(struct rts_task_state *st,
						 struct rts_cpu_state *here, __u32 cpu)
{
	if (st->waiting_cpu < 0)
		return;
	if (here && st->waiting_cpu == (__s32)cpu) {
		if (here->waiting_tid == st->tid)
			here->waiting_tid = 0;
		st->waiting_cpu = -1;
		return;
	}
	rts_clear_waiting(st);
}

/*
 * Remember that a tracked task waits for `cpu`: timer interrupts there then
 * sample the kernel stack of whatever runs instead (the blocking thread).
 * here: the state of here_cpu, the CPU this runs on (0: not at hand); a
 * timer release usually wakes its task on its own CPU, which then needs
 * no bpf_map_lookup_percpu_elem call.
 */
static __always_inline void rts_mark_waiting(struct rts_task_state *st, __u32 cpu,
					     struct rts_cpu_state *here, __u32 here_cpu)
{
	if (!trace_enabled || !sleep_stacks || !waiter_stacks)
		return;
	rts_clear_waiting_at(st, here, here_cpu);
	struct rts_cpu_state *cs = here && cpu == here_cpu
					   ? here
					   : bpf_map_lookup_percpu_elem(&cpus, &(__u32){0}, cpu);
	if (cs) {
		cs->waiting_tid = st->tid;
		cs->waiting_since = rts_wait_start(st);
		st->waiting_cpu = cpu;
	}
}

/* Is a stack of what keeps a task waiting since `since` worth its cost at `now`? */
static __always_inline bool rts_stack_due(__u64 now, __u64 since)
{
	return now >= since && now - since >= stack_min_wait_ns;
}

/*
 * sched_waking of a tracked task, in the waker's context on `cpu`.
 * lower_waker: a task of lower priority wakes this real-time task (a
 * hygiene count, unless it slept on a lock: its owner hands it over). It touches the task's state alone: its samples and
 * counts are held until it leaves the CPU (rts_hold).
 */
static __always_inline void rts_on_wakeup(struct rts_task_state *st, __u64 now, __u32 cpu,
					  __u64 timer_expiry, __u64 cb_entry, bool lower_waker)
{
	if (lower_waker && !st->lock_sleep)
		st->held_lower_waker++;
	switch (st->state) {
	case RTS_TS_SLEEPING:
		rts_wakeup_core(st, now, cpu, timer_expiry, cb_entry);
		break;
	case RTS_TS_RUNNING:
		/*
		 * Either a wakeup of a running task (no sample), or the waker
		 * raced with the task's own switch-out: remember it, and use it
		 * if the task is next seen switching in from a sleep.
		 */
		st->pending_ts = now;
		st->pending_expiry = timer_expiry;
		st->pending_cb_entry = cb_entry;
		st->pending_cpu = cpu;
		break;
	default:
		/* Already runnable (preempted, new, or woken): no new sample. */
		break;
	}
}

/*
 * A tracked task asleep since its last switch-out is seen on its CPU (its
 * switch-in, or its switch-out): the kernel did not report its wakeup.
 * This project's VM fires no tracepoint while its PID 1 threads run, and
 * classic programs do not nest. The cycle it ends would span two
 * activations (cyclictest's FIFO loop: 2019.4 us of a 1000 us period; its
 * main thread's 10 ms sleep read as "blocked 10616.7 us in a timer sleep,
 * not woken within the window"): none is taken, and it is counted.
 */
static __always_inline void rts_unseen_wakeup(struct rts_task_state *st)
{
	rts_count(RTS_C_UNSEEN_WAKEUPS);
	st->cycle_start = 0;
}

/*
 * The task leaves the CPU. voluntary: it blocks or sleeps (not preempted);
 * throttled: preempted for a lower class (rts_throttled).
 * What it held on its way to the CPU is settled first (rts_settle); it
 * returns its stats (0: not found), for the hook's identity refresh.
 */
static __always_inline struct rts_task_stats *rts_on_switch_out(struct rts_task_state *st, __u64 now,
								__u32 cpu, bool voluntary,
								__u64 irq_ns, __u32 throttled)
{
	/* Asleep since its last switch-out, and leaving its CPU: neither its
	 * wakeup nor its switch-in was reported (rts_unseen_wakeup). */
	if (st->state == RTS_TS_SLEEPING && st->sleep_ts)
		rts_unseen_wakeup(st);
	struct rts_task_stats *s = rts_stats(st);
	rts_settle(st, s);
	if (st->run_start && now > st->run_start) {
		__u64 ran = now - st->run_start;
		__u64 stolen = irq_ns > st->run_irq_ns ? irq_ns - st->run_irq_ns : 0;
		st->oncpu += ran > stolen ? ran - stolen : 0;
	}
	st->run_start = 0;
	if (s && st->sched_since && now > st->sched_since)
		s->sched_open_ns = now - st->sched_since;
	if (!voluntary) {
		st->state = RTS_TS_RUNNABLE;
		if (s) {
			s->switches_preempted++;
			s->throttled += throttled; /* rts_throttled: 1 when preempted for a lower class */
		}
		return s;
	}
	if (s)
		s->switches_voluntary++;
	if (st->resp_start && now >= st->resp_start) {
		rts_record(st, s, RTS_M_RESPONSE, now - st->resp_start, st->resp_start, now,
			   st->wake_cpu, cpu);
		/*
		 * An IRQ thread's activation is one run of its handler(s): without
		 * fentry on the threaded handler, its on-CPU time is the handler time.
		 */
		if ((st->flags & RTS_TF_IRQ_THREAD) && !st->fentry_seen)
			rts_record(st, s, RTS_M_HANDLER, st->oncpu, st->resp_start, now, st->wake_cpu, cpu);
	}
	st->oncpu = 0;
	st->resp_start = 0;
	st->release_pending = 0;
	st->sleep_ts = now;
	st->state = RTS_TS_SLEEPING;
	return s;
}

/*
 * The task gets the CPU. Returns true when this ends a wakeup latency
 * window. Its samples are held (rts_hold), and its identity is refreshed
 * at its switch-out (identity_due): nothing here looks its stats up, on
 * the path its latency is measured on.
 */
static __always_inline bool rts_on_switch_in(struct rts_task_state *st, __u64 now, __u32 cpu,
					     __u64 irq_ns)
{
	bool woken = false;

	st->run_start = now;
	st->run_irq_ns = irq_ns;

	if (st->state == RTS_TS_SLEEPING && st->pending_ts) {
		/* The wakeup raced with the switch-out: it counts from the sleep. */
		__u64 ts = st->pending_ts > st->sleep_ts ? st->pending_ts : st->sleep_ts;
		rts_wakeup_core(st, ts, st->pending_cpu, st->pending_expiry, st->pending_cb_entry);
	} else if (st->state == RTS_TS_SLEEPING && st->sleep_ts) {
		rts_unseen_wakeup(st);
	}
	st->pending_ts = 0;

	if (st->state == RTS_TS_WOKEN) {
		woken = true;
		if (now >= st->wake_ts)
			rts_hold(st, RTS_M_LATENCY, now - st->wake_ts, st->wake_ts, now, st->wake_cpu, cpu);
		if (st->release_pending && now >= st->release_expiry)
			rts_hold(st, RTS_M_TIMER_THREAD, now - st->release_expiry, st->release_expiry,
				 now, st->release_cpu, cpu);
		st->identity_due = 1;
		/* Nothing settles at the end without hold_samples: its counts now. */
		if (!hold_samples)
			rts_settle(st, rts_stats(st));
	}
	st->state = RTS_TS_RUNNING;
	st->cpu = cpu;
	return woken;
}

/* The task returns from its timer sleep towards user space. */
static __always_inline void rts_on_user_return(struct rts_task_state *st, __u64 now, __u32 cpu)
{
	if (!st->release_pending)
		return;
	st->release_pending = 0;
	if (now >= st->release_expiry)
		rts_hold(st, RTS_M_TIMER_USER, now - st->release_expiry, st->release_expiry, now,
			 st->release_cpu, cpu);
}

/* Threaded IRQ handler of an irq/N-name thread. irq_ns: the CPU's IRQ+softirq time so far. */
static __always_inline void rts_on_handler_entry(struct rts_task_state *st, __u64 now,
						 __u32 irq, __u64 irq_ns)
{
	st->in_handler = 1;
	st->fentry_seen = 1;
	st->handler_start = now;
	st->handler_irq = irq;
	st->handler_irq_ns = irq_ns;
}

static __always_inline void rts_on_handler_exit(struct rts_task_state *st, __u64 now, __u32 cpu,
						__u64 irq_ns)
{
	if (!st->in_handler)
		return;
	st->in_handler = 0;
	if (now < st->handler_start)
		return;
	__u64 wall = now - st->handler_start;
	/* Hard IRQs and softirqs (e.g. run by the closing local_bh_enable()) are not the handler's. */
	__u64 stolen = irq_ns > st->handler_irq_ns ? irq_ns - st->handler_irq_ns : 0;
	__u64 v = wall > stolen ? wall - stolen : 0;
	struct rts_task_stats *s = rts_stats(st);
	rts_record(st, s, RTS_M_HANDLER, v, st->handler_start, now, cpu, cpu);
}

/*
 * Set the SLO bounds of a task's statistics: its tid's, else its pid's,
 * else the run-time default (slo_by_id key RTS_SLO_DEFAULT_KEY, written by
 * rtscope ctl), else the load-time slo_default. Called when tracking starts
 * and by rts_reapply_slo; the hot path reads only s->m[i].slo.
 */
static __always_inline void rts_apply_slo(struct rts_task_stats *s, __u32 tid, __u32 pid)
{
	__u32 def = RTS_SLO_DEFAULT_KEY;
	struct rts_slo *slo = bpf_map_lookup_elem(&slo_by_id, &tid);
	if (!slo)
		slo = bpf_map_lookup_elem(&slo_by_id, &pid);
	if (!slo)
		slo = bpf_map_lookup_elem(&slo_by_id, &def);
	for (int i = 0; i < RTS_M_COUNT; i++)
		s->m[i].slo = slo ? slo->bound[i] : slo_default[i];
}

static long rts_reapply_one(void *map, __u64 *id, struct rts_task_stats *s, void *ctx)
{
	rts_apply_slo(s, s->tid, s->pid);
	return 0;
}

/*
 * Set the SLO bounds of every tracked task again from slo_by_id, after user
 * space changed them (rtscope ctl, SIGHUP): counts and violations so far are
 * kept, later samples are judged by the new bounds. Each 64-bit bound is
 * one store, so a sample recorded meanwhile sees the old or the new bound.
 * Returns the number of tasks visited. bpf_for_each_map_elem: Linux 5.13.
 */
static __always_inline long rts_reapply_slo(void)
{
	return bpf_for_each_map_elem(&stats, rts_reapply_one, 0, 0);
}

/*
 * Page faults of the run ending at `now` on cpu (a switch-out, or the task's
 * exit): min_flt and maj_flt are the task's own counters, which the kernel
 * raises only for faults the task itself takes (mm_account_fault: remote
 * accesses have no regs and are not counted), so their growth since its
 * previous switch-out happened in this run. The totals go to its hygiene
 * counters, kept after it exits; a run with faults leaves an RTS_EV_FAULTS
 * event, so a window's analysis can count them. Their time is not measured:
 * there is no fault-exit tracepoint, and fentry/fexit may be refused.
 */
static __always_inline void rts_on_faults(struct rts_task_state *st, struct rts_cpu_state *cs,
					  __u64 now, __u32 cpu, __u64 min_flt, __u64 maj_flt)
{
	__u64 dmin = min_flt > st->flt_min ? min_flt - st->flt_min : 0;
	__u64 dmaj = maj_flt > st->flt_maj ? maj_flt - st->flt_maj : 0;
	st->flt_min = min_flt;
	st->flt_maj = maj_flt;
	if (!dmin && !dmaj)
		return;
	struct rts_task_stats *s = rts_stats(st);
	if (s) {
		s->hygiene[RTS_H_MINOR_FAULTS] += dmin;
		s->hygiene[RTS_H_MAJOR_FAULTS] += dmaj;
	}
	struct rts_event *e = rts_flight(cs, cpu, now, RTS_EV_FAULTS);
	if (e) {
		e->a = st->tid;
		e->b = dmin > 0xffffffffULL ? 0xffffffffU : (__u32)dmin;
		e->x = st->run_start;
		e->y = dmaj;
	}
}

/* Faults count from tracking: the first run is not charged with the task's past. */
static __always_inline void rts_faults_base(struct rts_task_state *st, __u64 min_flt, __u64 maj_flt)
{
	st->flt_min = min_flt;
	st->flt_maj = maj_flt;
}

/* Memory locking of a task's mm, as last read (rts_task_state.mem_state). */
enum rts_mem_state {
	RTS_MEM_UNKNOWN = 0, /* not read (no mm: a kernel thread) */
	RTS_MEM_LOCKED,      /* mlockall(MCL_FUTURE), or some pages locked (VmLck > 0) */
	RTS_MEM_NOT_LOCKED,
};

/* The task's memory locking was read: keep it in its hygiene when it changed. */
static __always_inline void rts_on_mem(struct rts_task_state *st, bool locked)
{
	__u8 v = locked ? RTS_MEM_LOCKED : RTS_MEM_NOT_LOCKED;
	if (v == st->mem_state)
		return;
	st->mem_state = v;
	struct rts_task_stats *s = rts_stats(st);
	if (s)
		s->hygiene[RTS_H_MEM_NOT_LOCKED] = !locked;
}

/*
 * Start tracking: fill the state and create the stats entry. Called with a
 * freshly created (zeroed) task storage entry. Returns 0 on success.
 */
/*
 * The identity a task runs with, as one nonzero word: policy and normal
 * priority (a priority-inheritance boost is not the task's own identity).
 */
static __always_inline __u32 rts_sched_key(__u32 policy, int normal_prio)
{
	return 1U << 31 | (policy & 0xff) << 8 | (normal_prio < 0 ? 255U : (__u32)normal_prio & 0xff);
}

/*
 * The task is seen with identity key (at tracking, or at a switch-in where
 * it differs from the last one): count a change and keep the first
 * RTS_SCHED_SEEN distinct identities. It says whether key is new to st.
 */
static __always_inline bool rts_sched_seen(struct rts_task_state *st, struct rts_task_stats *s,
					   __u32 key)
{
	if (st->sched_key == key)
		return false;
	bool changed = st->sched_key != 0;
	st->sched_key = key;
	if (!s)
		return true;
	/* Read only at a change: the time it held the identity it leaves. */
	__u64 now = bpf_ktime_get_ns();
	if (changed) {
		s->sched_changes++;
		__u32 cur = s->sched_cur;
		if (cur < RTS_SCHED_SEEN && st->sched_since && now > st->sched_since)
			s->sched_ms[cur] += (now - st->sched_since) / 1000000;
	}
	st->sched_since = now;
	s->sched_open_ns = 0;
	s->sched_cur = RTS_SCHED_SEEN;
	for (int i = 0; i < RTS_SCHED_SEEN; i++) {
		if (s->sched_seen[i] == key) {
			s->sched_cur = i;
			break;
		}
		if (!s->sched_seen[i]) {
			s->sched_seen[i] = key;
			s->sched_cur = i;
			break;
		}
	}
	return true;
}

/* What rts_track_init() did; the caller drops the task's state unless tracked. */
enum rts_track_result {
	RTS_TRACKED = 0,
	RTS_TRACK_LOST,  /* counted: the statistics map is full */
	RTS_TRACK_RETRY, /* a passing refusal of the statistics hash (RTS_E2BIG) */
};

/*
 * rts_track_init creates st's statistics entry, unpublished: its id field
 * stays 0, which user space reads as "not there yet", until the caller has
 * written the task's identity and calls rts_track_publish. A reader between
 * the two saw a tracked task without a name or policy (TestTrackedAtRenameByNewName
 * failed in CI with "tracked at its rename as \"\"": a hypervisor stall in
 * that window, on a 6% steal VM).
 */
static __always_inline int rts_track_init(struct rts_task_state *st, __u32 tid, __u32 pid,
					  __u32 target, __u32 flags, bool sleeping)
{
	__u64 id = __sync_fetch_and_add(&next_id, 1) + 1;
	__u32 zero = 0;
	struct rts_task_stats *z = bpf_map_lookup_elem(&stats_zero, &zero);
	if (!z)
		return RTS_TRACK_LOST;
	long err;
	if (test_stats_nomem && __sync_fetch_and_add(&test_stats_nomem_done, 1) < test_stats_nomem)
		err = -12; /* tests only: -ENOMEM */
	else
		err = bpf_map_update_elem(&stats, &id, z, BPF_NOEXIST);
	if (err == -RTS_E2BIG) {
		rts_count(RTS_C_STATS_FULL);
		return RTS_TRACK_LOST;
	}
	if (err)
		return RTS_TRACK_RETRY;
	struct rts_task_stats *s = bpf_map_lookup_elem(&stats, &id);
	if (!s)
		return RTS_TRACK_LOST;
	s->tid = tid;
	s->pid = pid;
	s->target = target;
	st->tracked_at = bpf_ktime_get_ns();
	s->sched_cur = RTS_SCHED_SEEN;
	if (warm_up_ns != RTS_WARM_UP_DETECT && warm_up_ns) {
		st->warm_until = st->tracked_at + warm_up_ns;
		st->settled_at = st->warm_until;
		rts_startup_over(st, s);
	}

	rts_apply_slo(s, tid, pid);

	st->id = id;
	st->tid = tid;
	st->flags = flags & RTS_TF_FOLLOW;
	st->state = sleeping ? RTS_TS_SLEEPING : RTS_TS_RUNNABLE;
	st->waiting_cpu = -1; /* marked nowhere (rts_mark_waiting) */
	return 0;
}

/*
 * rts_track_publish makes st's statistics entry s (looked up by the caller
 * to write the task's identity) visible to user space: its id is stored
 * last, by an exchange (a fetching atomic, fully ordered on every JIT; plain
 * stores are not ordered on arm64), then the task's start is noticed.
 */
static __always_inline void rts_track_publish(struct rts_task_state *st, struct rts_task_stats *s)
{
	if (!s)
		return;
	__sync_lock_test_and_set(&s->id, st->id);
	rts_notice(RTS_N_TASK_START, 0, st->id, st->tid, 0, 0, 0, 0, 0);
}

#endif
