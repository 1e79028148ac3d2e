/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SCHED_DEADLINE jobs (issue 38 item 1). A DEADLINE task's job is one
 * instance of its reservation: it is released when the kernel gives it a
 * new absolute deadline (a replenishment: a new period, or a wakeup after
 * its deadline passed), and ends whichever way the task leaves it:
 *  - it sleeps (a voluntary switch-out) and its next run is of a new
 *    instance: completed at that sleep (a sleep inside the instance is not
 *    an end);
 *  - it calls sched_yield(): dl_yielded, throttled to its next period: completed;
 *  - it runs out of runtime: dl_throttled (runtime <= 0) without yielding:
 *    an overrun, the job cut at its runtime.
 * A preemption (an earlier deadline, an IRQ thread) does not end it.
 *
 * Per job: release latency (release -> first on a CPU), execution time (its
 * on-CPU time), response (release -> end), lateness (end - absolute
 * deadline: a miss when positive). The spacing of its releases is its period.
 *
 * Clocks: dl.deadline is in the rq clock (sched_clock based), the engine's
 * times in CLOCK_MONOTONIC (bpf_ktime_get_ns); they run at the same rate but
 * from different origins (here 1.3 s apart). The stub reads this CPU's
 * rq->clock with the entity, and a deadline x becomes x + (now - rq clock).
 * The rq clock was last updated by __schedule() before it picked the task
 * (update_rq_clock), a few microseconds at most before the tracepoint: a
 * release read that way is late by that much, never early.
 *
 * The stub (rtscope.bpf.c) reads the entity only for a task whose policy is
 * SCHED_DEADLINE (one compare for every other task) into the task's state
 * (dl_view); the classic engine sees no policy and no entity, and has none
 * (its calls are under `btf`). Its switch functions are verified once
 * (RTS_VERIFIED_ONCE_CALL): inlined, they took the tp_btf on_sched_switch
 * from 74k to 221k verified instructions.
 */
#ifndef RTSCOPE_DEADLINE_BPF_H
#define RTSCOPE_DEADLINE_BPF_H

#include "task_logic.bpf.h"

#define RTS_SCHED_DEADLINE 6

/* Why a job ended. */
enum rts_dl_end {
	RTS_DL_END_SLEEP = 0,
	RTS_DL_END_YIELD,
	RTS_DL_END_THROTTLED,
};

/*
 * rts_record, not inlined: the paths of each record end at its return.
 * Inlined, the job's four records multiplied their paths (on_sched_switch
 * verified 224k instructions against 41k without them).
 */
RTS_VERIFIED_ONCE_CALL int rts_dl_record(struct rts_task_state *st, struct rts_task_stats *s, __u32 metric)
{
	if (!st)
		return 0;
	struct rts_held_sample *h = &st->dl_job.rec;
	rts_record(st, s, metric, h->value, h->start, h->end, h->cpu_start, h->cpu);
	return 0;
}

/* Records a sample of metric through rts_dl_record (five arguments at most). */
static __always_inline void rts_dl_sample(struct rts_task_state *st, struct rts_task_stats *s, __u32 metric,
					  __u64 value, __u64 start, __u64 end, __u32 cpu_start, __u32 cpu)
{
	struct rts_held_sample *h = &st->dl_job.rec;
	h->value = value;
	h->start = start;
	h->end = end;
	h->cpu_start = cpu_start;
	h->cpu = cpu;
	rts_dl_record(st, s, metric);
}

/* A job's samples into s; it ended at `end`, on cpu. */
static __always_inline void rts_dl_job_end(struct rts_task_state *st, struct rts_task_stats *s, __u64 end,
					   __u32 cpu, __u32 why)
{
	struct rts_dl_job *j = &st->dl_job;
	__u64 rel = j->release;
	j->release = 0;
	if (!s || !rel || end < rel)
		return;
	struct rts_dl_view *v = &st->dl_view;
	s->dl.runtime = v->dl_runtime;
	s->dl.deadline = v->dl_deadline;
	s->dl.period = v->dl_period;
	s->nominal_period = v->dl_period;
	s->dl.jobs++;
	if (why == RTS_DL_END_THROTTLED)
		s->dl.overruns++;
	else if (why == RTS_DL_END_YIELD)
		s->dl.yields++;
	__s64 late = (__s64)(end - j->abs_deadline);
	if (end > j->abs_deadline)
		s->dl.misses++;
	if (s->dl.jobs == 1 || late > s->dl.lateness_max) {
		s->dl.lateness_max = late;
		s->dl.lateness_max_end = end;
	}
	if (j->first >= rel)
		rts_dl_sample(st, s, RTS_M_DL_RELEASE, j->first - rel, rel, j->first, j->cpu, j->first_cpu);
	rts_dl_sample(st, s, RTS_M_DL_EXEC, j->exec, rel, end, j->cpu, cpu);
	rts_dl_sample(st, s, RTS_M_DL_RESPONSE, end - rel, rel, end, j->cpu, cpu);
	if (j->prev_release && rel > j->prev_release)
		rts_dl_sample(st, s, RTS_M_PERIOD, rel - j->prev_release, j->prev_release, rel, j->cpu, cpu);
	j->prev_release = rel;
}

/*
 * A DEADLINE task st gets the CPU at now (its entity in st->dl_view, read at
 * this switch). A wakeup ending here (at st->wake_ts) left identity_due. A new absolute
 * deadline starts a job; so does a wakeup with none open (the kernel kept
 * its deadline: the job is released by the wakeup).
 */
RTS_VERIFIED_ONCE_CALL int rts_dl_switch_in(struct rts_task_state *st, __u64 now, __u32 cpu)
{
	if (!st || !st->dl_valid)
		return 0;
	/* rts_on_switch_in marks a switch-in that ends a wakeup (btf engine). */
	bool woken = st->identity_due;
	struct rts_dl_view *v = &st->dl_view;
	struct rts_dl_job *j = &st->dl_job;
	bool fresh = v->deadline != j->deadline_rq;
	j->in = now;
	if (!fresh && !(woken && !j->release))
		return 0;
	if (j->release) {
		/* A new instance: the open job ended at its last switch-out, a
		 * sleep, else its deadline was postponed (it ran out). */
		rts_dl_job_end(st, rts_stats(st), j->last_out, j->last_out_cpu,
			       j->slept ? RTS_DL_END_SLEEP : RTS_DL_END_THROTTLED);
	}
	/* The deadline's clock to CLOCK_MONOTONIC, at this instant. */
	__u64 off = now - v->rq_now;
	__u64 rel = v->deadline - v->dl_deadline + off;
	if (woken && st->wake_ts > rel)
		rel = st->wake_ts;
	if (rel > now)
		rel = now;
	j->deadline_rq = v->deadline;
	j->abs_deadline = v->deadline + off;
	j->release = rel;
	j->first = now;
	j->first_cpu = cpu;
	j->cpu = woken ? st->wake_cpu : cpu;
	j->exec = 0;
	/* Its loop metrics (the period) count from its first job. */
	if (!st->settled) {
		st->settled = 1;
		st->settled_at = now;
	}
	return 0;
}

/*
 * A DEADLINE task st leaves the CPU at now: its run adds to the job's
 * execution time, and the job ends if it slept, yielded or was throttled.
 * A preemption leaves it open. s: its stats (0: not found).
 */
RTS_VERIFIED_ONCE_CALL int rts_dl_switch_out(struct rts_task_state *st, struct rts_task_stats *s, __u64 now,
					     __u32 cpu, __u32 voluntary)
{
	if (!st || !st->dl_valid)
		return 0;
	struct rts_dl_view *v = &st->dl_view;
	struct rts_dl_job *j = &st->dl_job;
	if (j->in && now > j->in)
		j->exec += now - j->in;
	j->in = 0;
	j->last_out = now;
	j->last_out_cpu = cpu;
	if (j->release && v->deadline != j->deadline_rq) {
		/* Replenished while it ran (its runtime ran out past its
		 * deadline, no timer to wait for): that instance overran. */
		rts_dl_job_end(st, s, now, cpu, RTS_DL_END_THROTTLED);
		j->deadline_rq = 0;
	}
	/*
	 * A sleep ends the job only if it ends the instance: woken with the
	 * same deadline (CBS kept it), it goes on (a Go thread's futex waits
	 * split 149 jobs out of 810 when each sleep ended one). The next new
	 * deadline closes it at this switch-out.
	 */
	j->slept = voluntary;
	if (voluntary)
		return 0;
	__u32 why;
	if (v->yielded)
		why = RTS_DL_END_YIELD;
	else if (v->throttled || v->runtime <= 0)
		why = RTS_DL_END_THROTTLED;
	else
		return 0;
	/* No response window spans jobs: a yielding task never sleeps. */
	st->resp_start = 0;
	if (j->release)
		rts_dl_job_end(st, s, now, cpu, why);
	return 0;
}

/*
 * The DEADLINE part of a switch, after the rest (rts_switch_body; the
 * twins' test_switch): prev's run ends (s: its stats), next's begins.
 */
static __always_inline void rts_dl_switch(struct rts_task_state *ps, struct rts_task_stats *s,
					  struct rts_task_state *ns, __u64 now, __u32 cpu, bool voluntary)
{
	rts_dl_switch_out(ps, s, now, cpu, voluntary);
	rts_dl_switch_in(ns, now, cpu);
}

#ifdef RTS_DL_READER
/*
 * st's view of t's deadline entity, when t is a DEADLINE task (the tp_btf
 * engine's stubs). Not inlined: its branches then end at its return
 * instead of doubling the paths of the switch after it. The rq clock of t's CPU, this one at a switch, is
 * reached through its cfs_rq as rts_steal_ns does (no __ksym for the
 * per-CPU runqueues: cilium/ebpf takes untyped ksyms only); without
 * CONFIG_FAIR_GROUP_SCHED there is none, and no job is measured.
 */
static __noinline int rts_dl_read(struct rts_task_state *st, struct task_struct *t)
{
	if (!st || !t)
		return 0;
	st->dl_valid = 0;
	if (t->policy != RTS_SCHED_DEADLINE || !bpf_core_field_exists(struct sched_entity, cfs_rq))
		return 0;
	struct cfs_rq *cfs = t->se.cfs_rq;
	struct rq *rq = cfs ? cfs->rq : 0;
	if (!rq)
		return 0;
	st->dl_valid = 1;
	struct rts_dl_view *v = &st->dl_view;
	v->rq_now = rq->clock;
	v->deadline = t->dl.deadline;
	v->runtime = t->dl.runtime;
	v->dl_runtime = t->dl.dl_runtime;
	v->dl_deadline = t->dl.dl_deadline;
	v->dl_period = t->dl.dl_period;
	/*
	 * dl_throttled and dl_yielded are the first two bits of the word after
	 * `flags` (since Linux 4.16; little-endian bit order on amd64 and
	 * arm64). BPF_CORE_READ_BITFIELD(_PROBED) through cilium/ebpf's
	 * relocations read `flags` instead here (6.18: throttled 1 at every
	 * switch-in, yielded never), so the word is read by its place.
	 */
	__u32 bits = 0;
	bpf_probe_read_kernel(&bits, sizeof(bits), (void *)&t->dl.flags + sizeof(t->dl.flags));
	v->throttled = bits & 1;
	v->yielded = (bits >> 1) & 1;
	return 0;
}
#endif

#endif
