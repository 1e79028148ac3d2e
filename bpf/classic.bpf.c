// SPDX-License-Identifier: GPL-2.0
/*
 * rtscope's classic engine, for kernels without BTF (Raspberry Pi OS, many
 * Yocto builds): the same handler bodies (handlers.bpf.h), per-task state
 * machine (task_logic.bpf.h), maps and flight recorder as rtscope.bpf.c,
 * fed by classic tracepoints instead of tp_btf: each hook decodes its
 * record and calls its body. Nothing here reads a kernel structure: every value comes from
 * a tracepoint record, at field offsets that user space reads from tracefs
 * format files and sets before load (the off_* constants; RTS_NOFIELD where
 * the kernel lacks the field). Per-task state lives in a hash keyed by tid
 * (no task storage: its helpers take BTF task pointers).
 *
 * What the records do not carry is missing (features.engine_limits): the
 * policy (prio only; user space reads policy and affinity from the live
 * task), hypervisor steal (read from the run queue), return to user other
 * than through rseq_update, the exact threaded-handler time (fentry), and
 * the exact expiry of CLOCK_REALTIME/TAI sleeper timers (see timer_expiry).
 * The track_retry queue of maps.bpf.h is unused: hash entries need no
 * busy-prone task-storage lock.
 */
#include "headers/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "compat.bpf.h"
#include "handlers.bpf.h"
#include "ipi.bpf.h"
#include "tprecord.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Field offsets in the tracepoint records, set by the loader from tracefs. */
const volatile __u32 off_switch_prev_pid = RTS_NOFIELD;
const volatile __u32 off_switch_prev_prio = RTS_NOFIELD;
const volatile __u32 off_switch_prev_state = RTS_NOFIELD;
const volatile __u32 off_switch_next_comm = RTS_NOFIELD;
const volatile __u32 off_switch_next_pid = RTS_NOFIELD;
const volatile __u32 off_switch_next_prio = RTS_NOFIELD;
const volatile __u32 off_waking_pid = RTS_NOFIELD;
const volatile __u32 off_waking_prio = RTS_NOFIELD;
const volatile __u32 off_waking_target_cpu = RTS_NOFIELD;
const volatile __u32 off_newtask_pid = RTS_NOFIELD;
const volatile __u32 off_newtask_comm = RTS_NOFIELD;
const volatile __u32 off_newtask_clone_flags = RTS_NOFIELD;
const volatile __u32 off_exec_pid = RTS_NOFIELD;
const volatile __u32 off_exit_pid = RTS_NOFIELD;
const volatile __u32 off_exit_prio = RTS_NOFIELD;
const volatile __u32 off_migrate_pid = RTS_NOFIELD;
const volatile __u32 off_migrate_orig_cpu = RTS_NOFIELD;
const volatile __u32 off_migrate_dest_cpu = RTS_NOFIELD;
const volatile __u32 off_rename_pid = RTS_NOFIELD;
const volatile __u32 off_rename_newcomm = RTS_NOFIELD;
const volatile __u32 off_hrstart_hrtimer = RTS_NOFIELD;
const volatile __u32 off_hrstart_function = RTS_NOFIELD;
const volatile __u32 off_hrstart_softexpires = RTS_NOFIELD;
const volatile __u32 off_hrstart_expires = RTS_NOFIELD;
const volatile __u32 off_hrstart_mode = RTS_NOFIELD;
const volatile __u32 off_hrentry_hrtimer = RTS_NOFIELD;
const volatile __u32 off_hrentry_now = RTS_NOFIELD;
const volatile __u32 off_hrentry_function = RTS_NOFIELD;
const volatile __u32 off_hrexit_hrtimer = RTS_NOFIELD;
const volatile __u32 off_irq_entry_irq = RTS_NOFIELD;
const volatile __u32 off_irq_exit_irq = RTS_NOFIELD;
const volatile __u32 off_irq_exit_ret = RTS_NOFIELD;
const volatile __u32 off_softirq_vec = RTS_NOFIELD;
const volatile __u32 off_csd_queue_cpu = RTS_NOFIELD;
const volatile __u32 off_csd_queue_callsite = RTS_NOFIELD;
const volatile __u32 off_csd_queue_func = RTS_NOFIELD;
const volatile __u32 off_ipi_send_cpu = RTS_NOFIELD;
const volatile __u32 off_ipi_send_callsite = RTS_NOFIELD;
const volatile __u32 off_ipi_send_callback = RTS_NOFIELD;
const volatile __u32 off_ipi_entry_reason = RTS_NOFIELD;
const volatile __u32 off_ipi_exit_reason = RTS_NOFIELD;
const volatile __u32 off_nmi_handler = RTS_NOFIELD;
const volatile __u32 off_nmi_delta = RTS_NOFIELD;
const volatile __u32 off_nmi_handled = RTS_NOFIELD;

/*
 * sched_switch's prev_state of a preempted task: TASK_REPORT_MAX, 0x100
 * since Linux 4.14 (__trace_sched_switch_state()).
 */
#define RTS_TASK_REPORT_MAX 0x100
#define RTS_CLONE_THREAD 0x00010000

/* Tracked tasks by tid; an entry is deleted at the task's exit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct rts_task_state);
} tasks SEC(".maps");

/* What the records do not say about the current task, per CPU: kept from sched_switch. */
struct classic_cpu {
	__s32 prio;
	__u32 tid;
	char comm[RTS_COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct classic_cpu);
} classic_cpus SEC(".maps");

/* A sleeper timer as armed: its soft expiry and slack (RTS_SLACK_UNKNOWN: no hard expiry field). */
struct classic_armed {
	__s64 soft;
	__u64 slack;
};

/*
 * The sleeper timers armed by tracked tasks, by timer address:
 * hrtimer_expire_entry carries no expiry. LRU: a timer cancelled by a
 * signal never expires, and its entry ages out.
 */
struct {
	__uint(type, 9); /* BPF_MAP_TYPE_LRU_HASH (not in the trimmed vmlinux.h) */
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct classic_armed);
} armed SEC(".maps");

/* A char[16] comm field (all comm fields used here are arrays, not __data_loc). */
static __always_inline void rd_comm(void *ctx, __u32 off, char *dst)
{
	if (off != RTS_NOFIELD)
		bpf_probe_read_kernel(dst, RTS_COMM_LEN, ctx + off);
}

/*
 * The hot hooks (sched_switch, sched_waking: 89% of the engine's BPF time)
 * copy their record's bytes up to the end of the last field they use into
 * the stack with one bpf_probe_read_kernel, and take the fields from
 * there: one helper call per field (six in sched_switch) made them cost
 * 2.4x the BTF engine's. The offsets are load-time constants (frozen
 * .rodata), so the verifier sees each access at a fixed, aligned stack
 * offset; a field that does not fit the copy, or is not aligned, is read
 * on its own. (A record cannot be read in place: the verifier refuses a
 * tracepoint context pointer moved by a value that is not an instruction's
 * immediate.)
 */
#define RTS_REC_MAX 64

struct rts_rec {
	__u64 w[RTS_REC_MAX / 8];
};

/* The end of a field of size bytes at off, or end if it lies before. */
static __always_inline __u32 rec_end(__u32 end, __u32 off, __u32 size)
{
	return off != RTS_NOFIELD && off + size > end ? off + size : end;
}

/* Copy the record's first end bytes (rec_end of every field taken from r). */
static __always_inline void rec_read(struct rts_rec *r, void *ctx, __u32 end)
{
	if (end > sizeof(*r))
		end = sizeof(*r);
	bpf_probe_read_kernel(r, end, ctx);
}

static __always_inline __u32 rec_u32(const struct rts_rec *r, void *ctx, __u32 off)
{
	if (off == RTS_NOFIELD)
		return 0;
	if (off % 4 == 0 && off + 4 <= sizeof(*r))
		return *(const __u32 *)((const char *)r + off);
	return rd_u32(ctx, off);
}

/* A comm field into dst, 8-byte aligned. */
static __always_inline void rec_comm(const struct rts_rec *r, void *ctx, __u32 off, __u64 *dst)
{
	if (off == RTS_NOFIELD)
		return;
	if (off % 8 == 0 && off + RTS_COMM_LEN <= sizeof(*r)) {
		const __u64 *src = (const __u64 *)((const char *)r + off);
		dst[0] = src[0];
		dst[1] = src[1];
		return;
	}
	rd_comm(ctx, off, (char *)dst);
}

/*
 * Is the hrtimer callback starting now a hard one? The record has no
 * is_soft, and its common header's flags cannot say: the kernel overwrites
 * the record's first 8 bytes with a pt_regs pointer before it runs BPF
 * programs (perf_trace_run_bpf_submit; bpf_get_stackid_tp reads it back),
 * which made every injected hard-IRQ spin a "softirq" here. The CPU's state
 * says it: soft callbacks run one at a time in the HRTIMER softirq (in
 * ktimers/N on PREEMPT_RT too), so an entry there with no callback in
 * progress is soft, any other hard. A hard timer interrupt taken inside
 * that softirq between two soft callbacks passes for soft (a window of a
 * few instructions).
 */
#define RTS_HRTIMER_SOFTIRQ 8

static __always_inline __u32 timer_entry_hard(struct rts_cpu_state *cs)
{
	return cs->softirq_vec != RTS_HRTIMER_SOFTIRQ + 1 || cs->cb_function[0] || cs->cb_function[1];
}

/* The callback ending now: the hard one while one runs (nothing but a hard IRQ interrupts it). */
static __always_inline __u32 timer_exit_hard(struct rts_cpu_state *cs)
{
	return cs->cb_function[1] != 0;
}

static __always_inline struct rts_task_state *tracked(__u32 tid)
{
	if (!tid)
		return 0;
	return bpf_map_lookup_elem(&tasks, &tid);
}

static __always_inline struct classic_cpu *ccpu(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&classic_cpus, &zero);
}

/* Refresh what the records tell of a tracked task's identity in s, its stats (looked up by the caller). */
static __always_inline void refresh_identity_of(struct rts_task_state *st, struct rts_task_stats *s,
						__s32 prio, const char *comm, __u32 cpu)
{
	if (!s)
		return;
	s->prio = prio;
	s->policy = rts_policy_of(prio);
	s->rt_priority = prio >= 0 && prio < 100 ? 99 - prio : 0;
	s->last_cpu = cpu;
	if (comm)
		__builtin_memcpy(s->comm, comm, RTS_COMM_LEN);
}

/* refresh_identity_of, looking its stats (s) up. */
static __always_inline void refresh_identity(struct rts_task_state *st, __s32 prio, const char *comm,
					     __u32 cpu)
{
	refresh_identity_of(st, rts_stats(st), prio, comm, cpu);
}

/* handlers.bpf.h's identity: what a record tells. */
static __always_inline void rts_eng_identity(struct rts_task_state *st, struct rts_task_stats *s,
					     const struct rts_task_ref *t, __u32 cpu)
{
	refresh_identity_of(st, s, t->prio, t->comm, cpu);
}

/* handlers.bpf.h's current task. */
static __always_inline struct rts_task_state *rts_eng_current(void)
{
	return tracked(bpf_get_current_pid_tgid() & 0xffffffff);
}

/* Start tracking tid unless it already is. */
static __always_inline void track(__u32 tid, __u32 tgid, __u32 target, __u32 flags, bool sleeping,
				  __s32 prio, const char *comm, __u32 cpu)
{
	if (tid == 0) /* the idle tasks share pid 0 */
		return;
	__u32 zkey = 0;
	struct rts_task_state *zero = bpf_map_lookup_elem(&task_state_zero, &zkey);
	if (!zero)
		return;
	if (bpf_map_update_elem(&tasks, &tid, zero, BPF_NOEXIST)) {
		if (!bpf_map_lookup_elem(&tasks, &tid))
			rts_count(RTS_C_STORAGE_FAIL); /* the map is full */
		return;
	}
	struct rts_task_state *st = tracked(tid);
	if (!st)
		return;
	int r = rts_track_init(st, tid, tgid, target, flags, sleeping);
	if (r != RTS_TRACKED) {
		bpf_map_delete_elem(&tasks, &tid);
		/* No retry queue here: a passing refusal is counted as lost. */
		if (r == RTS_TRACK_RETRY)
			rts_count(RTS_C_STORAGE_FAIL);
		return;
	}
	if (comm && comm[0] == 'i' && comm[1] == 'r' && comm[2] == 'q' && comm[3] == '/')
		st->flags |= RTS_TF_IRQ_THREAD;
	st->prio = prio;
	struct rts_task_stats *s = rts_stats(st);
	refresh_identity_of(st, s, prio, comm, cpu);
	rts_track_publish(st, s);
}

/*
 * Clear a comm read from a record after its first NUL, as the keys of
 * want_comm are (user space copies the name into zeroed 16 bytes).
 */
static __always_inline void comm_pad(char *c)
{
	bool end = false;
	for (int i = 0; i < RTS_COMM_LEN; i++) {
		end = end || !c[i];
		if (end)
			c[i] = 0;
	}
}

SEC("raw_tp")
int classic_scan(__u64 *ctx)
{
	__u32 tid = ctx[0];
	__u64 comm[2] = {ctx[6], ctx[7]};
	track(tid, ctx[1], ctx[2], ctx[3], ctx[4] != 0, (__s32)ctx[5], (const char *)comm,
	      bpf_get_smp_processor_id());
	return tracked(tid) ? 0 : 1;
}

static long settle_one(void *map, __u32 *tid, struct rts_task_state *st, void *ctx)
{
	rts_settle(st, rts_stats(st));
	return 0;
}

/*
 * Settles what every tracked task holds back (rts_settle): user space runs
 * it with BPF_PROG_TEST_RUN once the programs are detached, before the
 * final statistics are read. Loaded with reapply_slo; without
 * bpf_for_each_map_elem (before 5.13) the engine loads with hold_samples
 * off instead. Returns the number of tasks visited.
 */
SEC("raw_tp")
int settle_held(void *ctx)
{
	return bpf_for_each_map_elem(&tasks, settle_one, 0, 0);
}

/*
 * Set every tracked task's SLO bounds again (rts_reapply_slo): user space
 * runs it with BPF_PROG_TEST_RUN after changing slo_by_id. Loaded on its
 * own: without bpf_for_each_map_elem (before 5.13) only new tasks get
 * changed bounds. Returns the number of tasks visited.
 */
SEC("raw_tp")
int reapply_slo(void *ctx)
{
	return rts_reapply_slo();
}

/* ---- scheduler ---- */

/*
 * sched_switch's record, per CPU (classic programs do not nest on a CPU):
 * on on_sched_switch's stack, its 64 bytes took the combined stack of its
 * deepest chain of calls to 480 bytes (TestVerifierStack; Linux 6.1
 * refuses over 512).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rts_rec);
} switch_rec SEC(".maps");

SEC("tracepoint/sched/sched_switch")
int on_sched_switch(void *ctx)
{
	struct rts_switch ev = {};
	__u64 next_comm_w[RTS_COMM_LEN / 8] = {};
	__u32 zero = 0;
	struct rts_rec *rp = bpf_map_lookup_elem(&switch_rec, &zero);
	if (!rp)
		return 0;
	{
		__u32 end = rec_end(0, off_switch_prev_pid, 4);
		end = rec_end(end, off_switch_next_pid, 4);
		end = rec_end(end, off_switch_prev_prio, 4);
		end = rec_end(end, off_switch_next_prio, 4);
		end = rec_end(end, off_switch_prev_state, 4);
		end = rec_end(end, off_switch_next_comm, RTS_COMM_LEN);
		rec_read(rp, ctx, end);
		ev.prev.tid = rec_u32(rp, ctx, off_switch_prev_pid);
		ev.next.tid = rec_u32(rp, ctx, off_switch_next_pid);
		ev.prev.prio = (__s32)rec_u32(rp, ctx, off_switch_prev_prio);
		ev.next.prio = (__s32)rec_u32(rp, ctx, off_switch_next_prio);
		/* A long; its low 32 bits on both little-endian targets. */
		ev.prev_state = rec_u32(rp, ctx, off_switch_prev_state);
		rec_comm(rp, ctx, off_switch_next_comm, next_comm_w);
	}
	ev.next.comm = (const char *)next_comm_w;
	ev.preempt = ev.prev_state & RTS_TASK_REPORT_MAX;

	struct classic_cpu *cc = ccpu();
	if (cc) {
		cc->prio = ev.next.prio;
		cc->tid = ev.next.tid;
		__builtin_memcpy(cc->comm, next_comm_w, RTS_COMM_LEN);
	}
	/* Blocking sleeps are named as by the BTF engine (sleep_reason.bpf.h). */
	rts_switch_body(ctx, &ev, tracked(ev.prev.tid), tracked(ev.next.tid), false);
	return 0;
}

SEC("tracepoint/sched/sched_waking")
int on_sched_waking(void *ctx)
{
	struct rts_cpu_state *cs = rts_cpu();
	struct classic_cpu *cc = ccpu();
	if (!cs || !cc)
		return 0;
	__u32 pid, target_cpu;
	__s32 prio;
	{
		struct rts_rec r;
		__u32 end = rec_end(0, off_waking_pid, 4);
		end = rec_end(end, off_waking_prio, 4);
		end = rec_end(end, off_waking_target_cpu, 4);
		rec_read(&r, ctx, end);
		pid = rec_u32(&r, ctx, off_waking_pid);
		prio = (__s32)rec_u32(&r, ctx, off_waking_prio);
		target_cpu = rec_u32(&r, ctx, off_waking_target_cpu);
	}

	__u32 cur_tid = bpf_get_current_pid_tgid() & 0xffffffff;
	/* The current task's prio as of its switch-in (a later change is missed). */
	__s32 cur_prio = cc->tid == cur_tid ? cc->prio : 120;
	struct rts_task_ref p = {.tid = pid, .prio = prio};
	struct rts_task_ref cur = {.tid = cur_tid, .prio = cur_prio};
	rts_waking_body(ctx, &p, &cur, target_cpu, tracked(pid), cs, false);
	return 0;
}

SEC("tracepoint/sched/sched_migrate_task")
int on_sched_migrate(void *ctx)
{
	__u32 pid = rd_u32(ctx, off_migrate_pid);
	rts_migrate_body(tracked(pid), pid, rd_u32(ctx, off_migrate_orig_cpu), rd_u32(ctx, off_migrate_dest_cpu));
	return 0;
}

/* ---- task life cycle ---- */

/* Final report of a tracked task and its removal (exit, or its tid reused). */
static __always_inline void untrack(struct rts_task_state *st, __u32 tid, __u32 cpu)
{
	rts_untrack_body(st, rts_stats(st), 0, bpf_ktime_get_ns(), cpu, false, true);
	bpf_map_delete_elem(&tasks, &tid);
}

/*
 * A new task (thread or process), in its parent's context: clone_flags
 * tells its tgid, which sched_process_fork does not.
 */
SEC("tracepoint/task/task_newtask")
int on_task_newtask(void *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 child = rd_u32(ctx, off_newtask_pid);
	__u64 clone_flags = rd_u64(ctx, off_newtask_clone_flags);
	__u64 cur = bpf_get_current_pid_tgid();
	__u32 parent = cur & 0xffffffff;
	__u32 tgid = (clone_flags & RTS_CLONE_THREAD) ? cur >> 32 : child;
	char comm[RTS_COMM_LEN] = {};
	rd_comm(ctx, off_newtask_comm, comm);
	struct classic_cpu *cc = ccpu();
	__s32 prio = cc && cc->tid == parent ? cc->prio : 120;

	/* An entry for the new tid is stale (its exit was missed): the tid is reused. */
	struct rts_task_state *old = tracked(child);
	if (old)
		untrack(old, child, cpu);

	struct rts_task_state *pst = tracked(parent);
	if (pst && (pst->flags & RTS_TF_FOLLOW)) {
		track(child, tgid, rts_follow_target(pst), pst->flags, false, prio, comm, cpu);
		return 0;
	}
	struct rts_target *w = rts_wanted_id(child, tgid, comm);
	if (w)
		track(child, tgid, w->index, w->flags, false, prio, comm, cpu);
	return 0;
}

SEC("tracepoint/sched/sched_process_exec")
int on_sched_exec(void *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 cur = bpf_get_current_pid_tgid();
	__u32 tid = cur & 0xffffffff;
	char comm[RTS_COMM_LEN] = {};
	bpf_get_current_comm(comm, sizeof(comm));
	struct classic_cpu *cc = ccpu();
	__s32 prio = cc && cc->tid == tid ? cc->prio : 120;
	struct rts_task_state *st = tracked(tid);
	if (st) {
		refresh_identity(st, prio, comm, cpu);
		return 0;
	}
	struct rts_target *w = rts_wanted_id(tid, cur >> 32, comm);
	if (w)
		track(tid, cur >> 32, w->index, w->flags, false, prio, comm, cpu);
	return 0;
}

SEC("tracepoint/task/task_rename")
int on_task_rename(void *ctx)
{
	__u32 tid = rd_u32(ctx, off_rename_pid);
	char name[RTS_COMM_LEN] = {};
	rd_comm(ctx, off_rename_newcomm, name);
	/*
	 * Unlike the other comm fields (memcpy of the NUL-padded task->comm),
	 * newcomm is strscpy()'d from the caller's buffer (strlcpy, or a
	 * memcpy of it, on older kernels): the bytes after its NUL are not
	 * written, and BPF sees what an earlier event left in the per-CPU
	 * perf trace buffer there ("control\0" then the prev_state and
	 * next_comm bytes of a sched_switch record; 6.18). Looked up as read,
	 * the name missed want_comm whenever that garbage was not zero: a
	 * thread naming itself with prctl(PR_SET_NAME) or through /proc was
	 * tracked or not by luck (the Go workload's thread was not, a bash
	 * echo to /proc/self/comm was).
	 */
	comm_pad(name);
	struct rts_task_state *st = tracked(tid);
	if (st) {
		rts_renamed(st, name);
		return 0;
	}
	struct rts_target *w = bpf_map_lookup_elem(&want_comm, name);
	if (!w)
		return 0;
	/* Renamed by itself (prctl), else through /proc: the tgid is known only in the first case. */
	__u64 cur = bpf_get_current_pid_tgid();
	__u32 tgid = (cur & 0xffffffff) == tid ? cur >> 32 : tid;
	struct classic_cpu *cc = ccpu();
	__s32 prio = cc && cc->tid == tid ? cc->prio : 120;
	track(tid, tgid, w->index, w->flags, (cur & 0xffffffff) != tid, prio, name,
	      bpf_get_smp_processor_id());
	return 0;
}

SEC("tracepoint/sched/sched_process_exit")
int on_sched_exit(void *ctx)
{
	__u32 tid = rd_u32(ctx, off_exit_pid);
	struct rts_task_state *st = tracked(tid);
	if (!st)
		return 0;
	__u32 cpu = bpf_get_smp_processor_id();
	char comm[RTS_COMM_LEN] = {};
	bpf_get_current_comm(comm, sizeof(comm));
	refresh_identity(st, (__s32)rd_u32(ctx, off_exit_prio), comm, cpu);
	untrack(st, tid, cpu);
	return 0;
}

/* ---- timers ---- */

/*
 * A timer's soft expiry in CLOCK_MONOTONIC, from its base clock's value
 * `expires` and that clock's reading `base_now` taken about `now`: a
 * monotonic base (CLOCK_MONOTONIC, and BOOTTIME without suspend) reads as
 * ktime, exactly; another base (REALTIME, TAI) is shifted by the difference
 * of the two readings, which makes the expiry late by the time from the
 * interrupt's clock reading to this callback (a few us): the timer IRQ
 * latency of such sleeps is understated by that much.
 */
static __always_inline __u64 timer_expiry(__s64 expires, __s64 base_now, __u64 now)
{
	if (base_now <= (__s64)now && (__s64)now - base_now < 1000000000LL)
		return expires;
	return expires - (base_now - (__s64)now);
}

/* A tracked task arms its sleeper timer: note the expiry, classify the sleep, end an iteration. */
SEC("tracepoint/timer/hrtimer_start")
int on_hrtimer_start(void *ctx)
{
	if (!hrtimer_wakeup_fn || rd_u64(ctx, off_hrstart_function) != hrtimer_wakeup_fn)
		return 0;
	__u32 tid = bpf_get_current_pid_tgid() & 0xffffffff;
	struct rts_task_state *st = tracked(tid);
	if (!st)
		return 0;
	__u64 timer = rd_u64(ctx, off_hrstart_hrtimer);
	struct classic_armed a = {.soft = (__s64)rd_u64(ctx, off_hrstart_softexpires), .slack = RTS_SLACK_UNKNOWN};
	/* The record's hard expiry (`expires`) is in the same clock as the soft one. */
	if (off_hrstart_expires != RTS_NOFIELD) {
		__s64 hard = (__s64)rd_u64(ctx, off_hrstart_expires);
		a.slack = hard > a.soft ? hard - a.soft : 0;
	}
	bpf_map_update_elem(&armed, &timer, &a, BPF_ANY);
	/* A monotonic expiry is near ktime; a REALTIME/TAI one is decades
	 * away, and not compared with now (no base clock reading here): its
	 * overruns count only the deadlines it skips. */
	bool wall = a.soft - (__s64)bpf_ktime_get_ns() > 1000000000000000LL;
	/* The clock as far as the record tells: REALTIME (0) or MONOTONIC (1). */
	rts_timer_start_body(st, wall ? 0 : a.soft, a.soft, a.slack, rd_u32(ctx, off_hrstart_mode), wall ? 0 : 1);
	return 0;
}

SEC("tracepoint/timer/hrtimer_expire_entry")
int on_hrtimer_expire_entry(void *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs)
		return 0;
	__u32 slot = timer_entry_hard(cs);
	__u64 timer = rd_u64(ctx, off_hrentry_hrtimer);
	__u64 expiry = 0, slack = RTS_SLACK_UNKNOWN;
	struct classic_armed *a = bpf_map_lookup_elem(&armed, &timer);
	struct classic_armed t;
	if (a) {
		expiry = timer_expiry(a->soft, (__s64)rd_u64(ctx, off_hrentry_now), now);
		slack = a->slack;
		bpf_map_delete_elem(&armed, &timer);
	} else if (!rts_hrtimer_read(timer, &t.soft, &t.slack)) {
		/* Any other timer (the tick): its due time starts its noise part. */
		expiry = timer_expiry(t.soft, (__s64)rd_u64(ctx, off_hrentry_now), now);
		slack = t.slack;
	}
	rts_timer_entry_body(ctx, cs, now, slot, rd_u64(ctx, off_hrentry_function), expiry, slack);
	return 0;
}

SEC("tracepoint/timer/hrtimer_expire_exit")
int on_hrtimer_expire_exit(void *ctx)
{
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs)
		return 0;
	rts_timer_exit_body(cs, timer_exit_hard(cs), false);
	return 0;
}

/*
 * rseq_update fires on the exit to user space that follows a context switch
 * of a thread with a registered rseq area (glibc >= 2.35): the return to
 * user of a timer sleep. Optional: the tracepoint came in Linux 4.18.
 */
SEC("tracepoint/rseq/rseq_update")
int on_rseq_update(void *ctx)
{
	return rts_user_return_body();
}

/* ---- interrupts ---- */

SEC("tracepoint/irq/irq_handler_entry")
int on_irq_entry(void *ctx)
{
	return rts_irq_entry_body(rd_u32(ctx, off_irq_entry_irq));
}

SEC("tracepoint/irq/irq_handler_exit")
int on_irq_exit(void *ctx)
{
	return rts_irq_exit_body(rd_u32(ctx, off_irq_exit_irq), rd_u32(ctx, off_irq_exit_ret));
}

/* The local timer interrupt (x86 only: feature local_timer, loaded apart). */
SEC("tracepoint/irq_vectors/local_timer_entry")
int on_local_timer_entry(void *ctx)
{
	return rts_local_timer_entry_body();
}

SEC("tracepoint/irq_vectors/local_timer_exit")
int on_local_timer_exit(void *ctx)
{
	return rts_local_timer_exit_body(false);
}

/* NMIs (x86: feature nmi). */
SEC("tracepoint/nmi/nmi_handler")
int on_nmi_handler(void *ctx)
{
	return rts_nmi_handler_body(rd_u64(ctx, off_nmi_handler), (__s64)rd_u64(ctx, off_nmi_delta),
				    (int)rd_u32(ctx, off_nmi_handled));
}

SEC("tracepoint/irq/softirq_entry")
int on_softirq_entry(void *ctx)
{
	return rts_softirq_entry_body(rd_u32(ctx, off_softirq_vec));
}

SEC("tracepoint/irq/softirq_exit")
int on_softirq_exit(void *ctx)
{
	return rts_softirq_exit_body(rd_u32(ctx, off_softirq_vec));
}

/* ---- IPIs (ipi.bpf.h; optional: watch --ipi) ---- */

SEC("tracepoint/csd/csd_queue_cpu")
int on_csd_queue_cpu(void *ctx)
{
	return rts_csd_queue_body(rd_u32(ctx, off_csd_queue_cpu), rd_u64(ctx, off_csd_queue_callsite),
				  rd_u64(ctx, off_csd_queue_func));
}

SEC("tracepoint/ipi/ipi_send_cpu")
int on_ipi_send_cpu(void *ctx)
{
	return rts_ipi_send_cpu_body(rd_u32(ctx, off_ipi_send_cpu), rd_u64(ctx, off_ipi_send_callsite),
				     rd_u64(ctx, off_ipi_send_callback));
}

RTS_IPI_RECEIVERS("tracepoint/irq_vectors/")

/* arm64's receipts (no irq_vectors): the reason string names the class. */
SEC("tracepoint/ipi/ipi_entry")
int on_ipi_entry(void *ctx)
{
	return rts_ipi_reason_entry_body((const void *)rd_u64(ctx, off_ipi_entry_reason),
					 ipi_asked ? rts_ipi_running() : 0);
}

SEC("tracepoint/ipi/ipi_exit")
int on_ipi_exit(void *ctx)
{
	return rts_ipi_reason_exit_body((const void *)rd_u64(ctx, off_ipi_exit_reason));
}
