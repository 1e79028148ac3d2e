// SPDX-License-Identifier: GPL-2.0
/*
 * rtscope engine: scheduler, IRQ and timer hooks on tp_btf. Each hook is a
 * stub: it reads its arguments (BTF pointers: plain loads), looks the tasks
 * up (one task-storage lookup, O(1) whatever the number of tracked tasks)
 * and calls its body in handlers.bpf.h, shared with the classic engine,
 * which records the event in this CPU's flight recorder ring and, for a
 * tracked task, runs the per-task state machine of task_logic.bpf.h. What
 * is the tp_btf engine's own stays here: tracking (task storage, the retry
 * queue, cgroup targets), identity, the task iterators, and the threaded
 * IRQ handlers (fentry/fexit).
 */
#include "headers/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "compat.bpf.h"
#define RTS_DL_READER
#include "handlers.bpf.h"
#include "ipi.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct rts_task_state);
} tasks SEC(".maps");

/* want_cgroups counts want_cgroup's entries (user space sets it), so that
 * fork and exec pay one load while there are none. */
__u32 want_cgroups = 0;

/* Deeper cgroups are matched on their 16 nearest levels (a Kubernetes pod's
 * containers sit about 5 below the root, a systemd unit's 2 to 4). */
#define RTS_CGROUP_DEPTH 16

/* Is cgrp, or one of its ancestors, a wanted cgroup? */
static __always_inline struct rts_target *wanted_cgroup(struct cgroup *cgrp)
{
	for (int i = 0; i < RTS_CGROUP_DEPTH && cgrp; i++) {
		__u64 id = BPF_CORE_READ(cgrp, kn, id);
		struct rts_target *w = bpf_map_lookup_elem(&want_cgroup, &id);
		if (w)
			return w;
		struct cgroup_subsys_state *parent = BPF_CORE_READ(cgrp, self.parent);
		if (!parent)
			break;
		/* cgroup::self is a css: the parent css is the parent cgroup's. */
		cgrp = (void *)parent - bpf_core_field_offset(struct cgroup, self);
	}
	return 0;
}

/*
 * t's state if it is tracked. A task without any BPF task storage (every
 * task no program stores anything for: on most machines all but the tracked
 * ones) is answered by one load of a task_struct field, without the helper
 * call: most events of the machine are of untracked tasks.
 */
static __always_inline struct rts_task_state *tracked(struct task_struct *t)
{
	if (bpf_core_field_exists(t->bpf_storage) && !t->bpf_storage)
		return 0;
	return bpf_task_storage_get(&tasks, t, 0, 0);
}

/*
 * Is t's memory locked: mlockall(MCL_FUTURE) (VM_LOCKED in its mm's
 * def_flags: every new page is locked) or some pages locked (locked_vm,
 * /proc's VmLck)? Read from the mm, so it is known after the task exits.
 * No mm (a kernel thread, or past exit_mm()): nothing read.
 */
static __always_inline void read_mem(struct rts_task_state *st, struct task_struct *t)
{
	struct mm_struct *mm = BPF_CORE_READ(t, mm);
	if (!mm)
		return;
	rts_on_mem(st, (BPF_CORE_READ(mm, def_flags) & RTS_VM_LOCKED) || BPF_CORE_READ(mm, locked_vm));
}

/*
 * Refresh the identity of a tracked task in s, its stats (policy,
 * priority, affinity, name): s as the caller already looked it up.
 */
static __always_inline void refresh_identity_of(struct rts_task_state *st, struct rts_task_stats *s,
						struct task_struct *t, __u32 cpu)
{
	if (!s)
		return;
	s->policy = t->policy;
	s->prio = t->normal_prio; /* its own, not a priority-inheritance boost */
	s->rt_priority = t->rt_priority;
	rts_sched_seen(st, s, rts_sched_key(t->policy, t->normal_prio));
	s->cpus_mask = t->cpus_mask.bits[0];
	s->nr_cpus_allowed = t->nr_cpus_allowed;
	s->last_cpu = cpu;
	s->start_time = t->start_time;
	rts_copy_comm(s->comm, t->comm);
}

/* refresh_identity_of, looking its stats up. */
static __always_inline void refresh_identity(struct rts_task_state *st, struct task_struct *t,
					     __u32 cpu)
{
	refresh_identity_of(st, rts_stats(st), t, cpu);
}

/* handlers.bpf.h's identity: read from the task itself. */
static __always_inline void rts_eng_identity(struct rts_task_state *st, struct rts_task_stats *s,
					     const struct rts_task_ref *t, __u32 cpu)
{
	refresh_identity_of(st, s, t->task, cpu);
}

/* handlers.bpf.h's current task. */
static __always_inline struct rts_task_state *rts_eng_current(void)
{
	return tracked(bpf_get_current_task_btf());
}

/* A task as handlers.bpf.h takes it: plain loads through a BTF pointer. */
static __always_inline void task_ref(struct rts_task_ref *r, struct task_struct *t)
{
	r->task = t;
	r->comm = t->comm;
	r->tid = t->pid;
	r->prio = t->prio;
	r->policy = t->policy;
}

/* IRQ threads are named irq/N-name (irq/N-s-name for secondary handlers). */
static __always_inline bool is_irq_thread(struct task_struct *t)
{
	char c[4] = {};
	bpf_probe_read_kernel(c, sizeof(c), t->comm);
	return c[0] == 'i' && c[1] == 'r' && c[2] == 'q' && c[3] == '/';
}

/* Tests only (test_storage_busy): this creation fails as if busy. */
static __always_inline bool storage_busy_for_test(void)
{
	return test_storage_busy && __sync_fetch_and_add(&test_storage_busy_done, 1) < test_storage_busy;
}

/*
 * The task storage of t could not be created (rts_storage_busy in
 * compat.bpf.h): queue it, to be tracked when it is next switched in.
 */
static __always_inline void defer_track(__u32 tid, __u32 target, __u32 flags)
{
	struct rts_target r = {.index = target, .flags = flags};
	if (bpf_map_update_elem(&track_retry, &tid, &r, BPF_NOEXIST) == 0) {
		__sync_fetch_and_add(&track_retry_pending, 1);
		rts_count(RTS_C_TRACK_DEFERRED);
	} else if (!bpf_map_lookup_elem(&track_retry, &tid)) {
		rts_count(RTS_C_STORAGE_FAIL); /* the queue is full */
	}
}

/*
 * Start tracking t unless it already is: its state, NULL if not tracked now
 * (deferred, lost). name, when not NULL, is the name its statistics start
 * with instead of t->comm (task_rename: the new one is not copied yet).
 */
static __always_inline struct rts_task_state *track_named(struct task_struct *t, __u32 target,
							  __u32 flags, const char *name)
{
	__u32 tid = BPF_CORE_READ(t, pid);
	if (tid == 0) /* the idle tasks share pid 0 */
		return NULL;
	struct rts_task_state *st = NULL;
	if (!storage_busy_for_test())
		st = bpf_task_storage_get(&tasks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		defer_track(tid, target, flags);
		return NULL;
	}
	if (st->id)
		return st;
	bool sleeping = rts_task_state(t) != 0 && !BPF_CORE_READ(t, on_cpu);
	int r = rts_track_init(st, tid, BPF_CORE_READ(t, tgid), target, flags, sleeping);
	if (r != RTS_TRACKED) {
		bpf_task_storage_delete(&tasks, t);
		if (r == RTS_TRACK_RETRY)
			defer_track(tid, target, flags);
		return NULL;
	}
	if (is_irq_thread(t))
		st->flags |= RTS_TF_IRQ_THREAD;
	st->prio = BPF_CORE_READ(t, prio);
	rts_faults_base(st, BPF_CORE_READ(t, min_flt), BPF_CORE_READ(t, maj_flt));
	read_mem(st, t);
	struct rts_task_stats *s = rts_stats(st);
	refresh_identity_of(st, s, t, BPF_CORE_READ(t, thread_info.cpu));
	if (s && name)
		__builtin_memcpy(s->comm, name, RTS_COMM_LEN);
	rts_track_publish(st, s);
	return st;
}

/* track_named under the task's own name. */
static __always_inline struct rts_task_state *track(struct task_struct *t, __u32 target, __u32 flags)
{
	return track_named(t, target, flags, NULL);
}

/*
 * Track t now if its tracking was deferred (defer_track). Called at its
 * switch-in: it starts being measured from its next event.
 */
static __noinline int retry_track(struct task_struct *t)
{
	if (!t)
		return 0;
	__u32 tid = BPF_CORE_READ(t, pid);
	struct rts_target *r = bpf_map_lookup_elem(&track_retry, &tid);
	if (!r)
		return 0;
	struct rts_target w = *r;
	/* Dequeue first: a second failure queues it again. */
	if (bpf_map_delete_elem(&track_retry, &tid) == 0)
		__sync_fetch_and_sub(&track_retry_pending, 1);
	track(t, w.index, w.flags);
	return 0;
}

/* A task queued for tracking exits: drop it (its tid may be reused). */
static __always_inline void drop_retry(struct task_struct *t)
{
	__u32 tid = BPF_CORE_READ(t, pid);
	if (bpf_map_delete_elem(&track_retry, &tid) == 0)
		__sync_fetch_and_sub(&track_retry_pending, 1);
}

/* Is t wanted by a --tid, --pid or --comm target? */
static __always_inline struct rts_target *wanted(struct task_struct *t)
{
	char comm[RTS_COMM_LEN] = {};
	bpf_probe_read_kernel_str(comm, sizeof(comm), t->comm);
	struct rts_target *w = rts_wanted_id(BPF_CORE_READ(t, pid), BPF_CORE_READ(t, tgid), comm);
	if (!w && want_cgroups)
		w = wanted_cgroup(BPF_CORE_READ(t, cgroups, dfl_cgrp));
	return w;
}

/* ---- scheduler ---- */

static __always_inline int on_switch(void *ctx, bool preempt, struct task_struct *prev,
				     struct task_struct *next, unsigned int prev_state)
{
	/* The idle tasks (pid 0) are never tracked (track): switches to and
	 * from idle, most of them on a lightly loaded CPU, skip the lookup. */
	struct rts_task_state *ps = prev->pid ? tracked(prev) : 0;
	struct rts_task_state *ns = next->pid ? tracked(next) : 0;
	if (!ns && next->pid && track_retry_pending)
		retry_track(next); /* measured from its next event on */
	struct rts_switch ev = {.prev_state = prev_state, .preempt = preempt};
	task_ref(&ev.prev, prev);
	task_ref(&ev.next, next);
	/* The entity is read for a DEADLINE task (or one that was): the call
	 * only clears dl_valid for any other. */
	if (ps && (ps->dl_valid || prev->policy == RTS_SCHED_DEADLINE))
		rts_dl_read(ps, prev);
	if (ns) {
		ev.next_sched_key = rts_sched_key(next->policy, next->normal_prio);
		if (ns->dl_valid || next->policy == RTS_SCHED_DEADLINE)
			rts_dl_read(ns, next);
	}
	rts_switch_body(ctx, &ev, ps, ns, true);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_switch(ctx, preempt, prev, next, prev_state);
}

/*
 * Kernels before 5.18 pass no prev_state: read it from the task (the
 * argument came with commit fa2c3254d7cf, "sched/tracing: Don't re-read
 * p->state when emitting sched_switch event").
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch_legacy, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch(ctx, preempt, prev, next, rts_task_state(prev));
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_sched_waking, struct task_struct *p)
{
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs)
		return 0;
	struct rts_task_ref pr, cur;
	task_ref(&pr, p);
	task_ref(&cur, bpf_get_current_task_btf());
	rts_waking_body(ctx, &pr, &cur, p->thread_info.cpu, tracked(p), cs, true);
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(on_sched_migrate, struct task_struct *p, int dest_cpu)
{
	rts_migrate_body(tracked(p), p->pid, p->thread_info.cpu, dest_cpu);
	return 0;
}

/* ---- task life cycle: which tasks are tracked ---- */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_sched_fork, struct task_struct *parent, struct task_struct *child)
{
	struct rts_task_state *pst = tracked(parent);
	if (pst && (pst->flags & RTS_TF_FOLLOW)) {
		track(child, rts_follow_target(pst), pst->flags);
		return 0;
	}
	if (!pst && track_retry_pending) {
		/* A parent whose tracking is deferred still has its children followed. */
		__u32 ptid = BPF_CORE_READ(parent, pid);
		struct rts_target *r = bpf_map_lookup_elem(&track_retry, &ptid);
		if (r && (r->flags & RTS_TF_FOLLOW)) {
			track(child, r->index, r->flags);
			return 0;
		}
	}
	struct rts_target *w = wanted(child);
	if (w)
		track(child, w->index, w->flags);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_sched_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct rts_task_state *st = tracked(p);
	if (st) {
		refresh_identity(st, p, bpf_get_smp_processor_id());
		return 0;
	}
	struct rts_target *w = wanted(p);
	if (w)
		track(p, w->index, w->flags);
	return 0;
}

SEC("tp_btf/task_rename")
int BPF_PROG(on_task_rename, struct task_struct *t, const char *comm)
{
	char name[RTS_COMM_LEN] = {};
	bpf_probe_read_kernel_str(name, sizeof(name), comm);
	struct rts_task_state *st = tracked(t);
	if (st) {
		rts_renamed(st, name);
		return 0;
	}
	struct rts_target *w = bpf_map_lookup_elem(&want_comm, name);
	if (!w)
		return 0;
	/*
	 * Under the new name: t->comm is still the old one, the kernel copies
	 * the new one after this tracepoint (__set_task_comm), and a thread
	 * naming itself with prctl kept the old one in its statistics until
	 * its next switch-in (TestTrackedAtRenameByNewName). A deferred track
	 * reads the comm at its switch-in, the new one by then.
	 */
	track_named(t, w->index, w->flags, name);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_sched_exit, struct task_struct *p)
{
	struct rts_task_state *st = tracked(p);
	if (!st) {
		if (track_retry_pending)
			drop_retry(p);
		return 0;
	}
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 now = bpf_ktime_get_ns();
	/* Its last run's faults (exit_mm() has run: the mm is gone, its locking was read before). */
	rts_on_faults(st, rts_cpu(), now, cpu, p->min_flt, p->maj_flt);
	struct rts_task_ref t = {.task = p};
	rts_untrack_body(st, rts_stats(st), &t, now, cpu, true, true);
	bpf_task_storage_delete(&tasks, p);
	return 0;
}

/*
 * A task, or a whole process (threadgroup), moved into a cgroup: tracked
 * at once when the cgroup (or one above it) is wanted. The other threads of a process are
 * tracked by the scan user space runs on the notice (no thread iterator
 * before 6.7). Off the scheduler path: cgroup moves are rare.
 */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(on_cgroup_attach_task, struct cgroup *dst, const char *path, struct task_struct *task,
	     bool threadgroup)
{
	if (!want_cgroups)
		return 0;
	/*
	 * The task's cgroup v2, not dst: dst may be a cgroup v1 (hybrid
	 * hosts), whose ids are another hierarchy's and may equal a wanted v2
	 * id. The task has moved when this fires.
	 */
	struct rts_target *w = wanted_cgroup(BPF_CORE_READ(task, cgroups, dfl_cgrp));
	if (!w)
		return 0;
	track(task, w->index, w->flags);
	if (threadgroup)
		rts_notice(RTS_N_CGROUP_ATTACH, 0, 0, BPF_CORE_READ(task, pid), 0, 0, 0, 0, 0);
	return 0;
}

/*
 * Registers the tasks that exist when watching starts (user space runs it
 * once). It writes one byte a task tracked, so that user space can read the
 * iterator in short reads and poll between them (engine.Engine.ScanWith):
 * a task tracked early in a long scan has its first windows cut before the
 * flight recorder wraps.
 */
SEC("iter/task")
int track_existing(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	if (!t)
		return 0;
	struct rts_target *w = wanted(t);
	if (w && track(t, w->index, w->flags)) {
		char c = 't';
		bpf_seq_write(ctx->meta->seq, &c, 1);
	}
	return 0;
}

/*
 * Settles what every tracked task holds back (rts_settle): user space runs
 * it once the programs are detached, before the final statistics are read,
 * so that the samples of tasks still running (woken, not yet switched out)
 * are in them. As track_existing, over every task.
 */
SEC("iter/task")
int settle_held(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	if (!t)
		return 0;
	struct rts_task_state *st = tracked(t);
	if (!st)
		return 0;
	struct rts_task_stats *s = rts_stats(st);
	rts_settle(st, s);
	if (st->identity_due) {
		st->identity_due = 0;
		refresh_identity_of(st, s, t, BPF_CORE_READ(t, thread_info.cpu));
	}
	return 0;
}

/* The target whose tasks untrack_existing stops tracking (user space sets it). */
__u32 untrack_target = 0xffffffff;

/*
 * Stops tracking the tasks that target untrack_target selected, once user
 * space removed it from the want_* maps (rtscope ctl remove, reload): each
 * ends as at its exit (its final statistics stay for user space, which the
 * exit notice tells to report and forget them). A task another target
 * still wants stays tracked, now under that target. User space runs it
 * over every task, as track_existing.
 */
SEC("iter/task")
int untrack_existing(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	if (!t)
		return 0;
	struct rts_task_state *st = tracked(t);
	if (!st)
		return 0;
	struct rts_task_stats *s = rts_stats(st);
	if (!s || s->target != untrack_target)
		return 0;
	struct rts_target *w = wanted(t);
	if (w) {
		s->target = w->index;
		return 0;
	}
	struct rts_task_ref r = {.task = t};
	rts_untrack_body(st, s, &r, bpf_ktime_get_ns(), BPF_CORE_READ(t, thread_info.cpu), true, false);
	bpf_task_storage_delete(&tasks, t);
	return 0;
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

/* ---- timers ---- */

/* A tracked task arms its sleeper timer: note the expiry, classify the sleep, end an iteration. */
SEC("tp_btf/hrtimer_start")
int BPF_PROG(on_hrtimer_start, struct hrtimer *timer, int mode)
{
	/* Every hrtimer armed on the machine passes here: plain loads through
	 * the BTF pointer, and a compare, for all that are not a sleeper's. */
	if (!hrtimer_wakeup_fn || (__u64)timer->function != hrtimer_wakeup_fn)
		return 0;
	struct rts_task_state *st = tracked(bpf_get_current_task_btf());
	if (!st)
		return 0;
	rts_timer_start_body(st, rts_timer_expiry(timer), timer->_softexpires, rts_timer_slack(timer), mode,
			     timer->base->clockid);
	return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(on_hrtimer_expire_entry, struct hrtimer *timer, ktime_t *now_base)
{
	__u64 now = bpf_ktime_get_ns();
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs)
		return 0;
	/* Soft timers run in softirq context; the others in hard IRQ context. */
	rts_timer_entry_body(ctx, cs, now, timer->is_soft ? 0 : 1, (__u64)timer->function, rts_timer_expiry(timer),
			     rts_timer_slack(timer));
	return 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(on_hrtimer_expire_exit, struct hrtimer *timer)
{
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs)
		return 0;
	rts_timer_exit_body(cs, timer->is_soft ? 0 : 1, true);
	return 0;
}

/* Return from nanosleep/clock_nanosleep (where fexit is allowed). */
SEC("fexit/hrtimer_nanosleep")
int BPF_PROG(on_nanosleep_exit)
{
	return rts_user_return_body();
}

/*
 * rseq_update fires on the exit to user space that follows a context switch
 * of a thread with a registered rseq area (glibc >= 2.35 registers every
 * thread): a tracepoint-only "return to user" for any timer sleep.
 */
SEC("tp_btf/rseq_update")
int BPF_PROG(on_rseq_update)
{
	return rts_user_return_body();
}

/* ---- interrupts ---- */

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(on_irq_entry, int irq)
{
	return rts_irq_entry_body(irq);
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(on_irq_exit, int irq, struct irqaction *action, int ret)
{
	return rts_irq_exit_body(irq, ret);
}

/* The local timer interrupt (x86 only: feature local_timer, loaded apart). */
SEC("tp_btf/local_timer_entry")
int BPF_PROG(on_local_timer_entry, int vector)
{
	return rts_local_timer_entry_body();
}

SEC("tp_btf/local_timer_exit")
int BPF_PROG(on_local_timer_exit, int vector)
{
	return rts_local_timer_exit_body(true);
}

/* NMIs (x86: feature nmi, loaded apart). */
SEC("tp_btf/nmi_handler")
int BPF_PROG(on_nmi_handler, void *handler, s64 delta_ns, int handled)
{
	return rts_nmi_handler_body((__u64)handler, delta_ns, handled);
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(on_softirq_entry, unsigned int vec)
{
	return rts_softirq_entry_body(vec);
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(on_softirq_exit, unsigned int vec)
{
	return rts_softirq_exit_body(vec);
}

/* Threaded IRQ handlers (irq/N-name threads), no kernel patch needed. */
static __always_inline int handler_entry(struct irqaction *action)
{
	struct rts_task_state *st = tracked(bpf_get_current_task_btf());
	if (!st)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs)
		return 0;
	__u32 irq = BPF_CORE_READ(action, irq);
	struct rts_event *e = rts_flight(cs, cpu, now, RTS_EV_HANDLER_ENTRY);
	if (e) {
		e->a = st->tid;
		e->b = irq;
		e->own = rts_own_seq(st);
	}
	rts_on_handler_entry(st, now, irq, cs->irq_ns + cs->softirq_ns);
	return 0;
}

static __always_inline int handler_exit(void)
{
	struct rts_task_state *st = tracked(bpf_get_current_task_btf());
	if (!st)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	struct rts_cpu_state *cs = rts_cpu();
	if (!cs)
		return 0;
	struct rts_event *e = rts_flight(cs, cpu, now, RTS_EV_HANDLER_EXIT);
	if (e) {
		e->a = st->tid;
		e->b = st->handler_irq;
		e->own = rts_own_seq(st);
	}
	rts_on_handler_exit(st, now, cpu, cs->irq_ns + cs->softirq_ns);
	return 0;
}

SEC("fentry/irq_thread_fn")
int BPF_PROG(on_irq_thread_fn, struct irq_desc *desc, struct irqaction *action)
{
	return handler_entry(action);
}

SEC("fexit/irq_thread_fn")
int BPF_PROG(on_irq_thread_fn_exit)
{
	return handler_exit();
}

SEC("fentry/irq_forced_thread_fn")
int BPF_PROG(on_irq_forced_thread_fn, struct irq_desc *desc, struct irqaction *action)
{
	return handler_entry(action);
}

SEC("fexit/irq_forced_thread_fn")
int BPF_PROG(on_irq_forced_thread_fn_exit)
{
	return handler_exit();
}

/* ---- IPIs (ipi.bpf.h; optional: watch --ipi) ---- */

/*
 * func is a function pointer, which the verifier does not let a tp_btf
 * program load from its context ("arg2 type FUNC_PROTO is not a struct"):
 * it is read as a plain word.
 */
SEC("tp_btf/csd_queue_cpu")
int on_csd_queue_cpu(__u64 *ctx)
{
	__u64 func = 0;
	bpf_probe_read_kernel(&func, sizeof(func), &ctx[2]);
	return rts_csd_queue_body((__u32)ctx[0], ctx[1], func);
}

SEC("tp_btf/ipi_send_cpu")
int BPF_PROG(on_ipi_send_cpu, unsigned int cpu, unsigned long callsite, void *callback)
{
	return rts_ipi_send_cpu_body(cpu, callsite, (__u64)callback);
}

RTS_IPI_RECEIVERS("tp_btf/")

/* arm64's receipts (no irq_vectors): the reason string names the class. */
SEC("tp_btf/ipi_entry")
int BPF_PROG(on_ipi_entry, const char *reason)
{
	return rts_ipi_reason_entry_body(reason, ipi_asked ? rts_ipi_running() : 0);
}

SEC("tp_btf/ipi_exit")
int BPF_PROG(on_ipi_exit, const char *reason)
{
	return rts_ipi_reason_exit_body(reason);
}

/* Emit BTF for the types user space decodes but no program names directly. */
struct rts_notice *rts_btf_notice __attribute__((unused));
struct rts_event *rts_btf_event __attribute__((unused));
struct rts_target *rts_btf_target __attribute__((unused));
/* The enums user space mirrors: generated into Go (engine/gen.go -type), and
 * their enumerators checked against the Go names (TestVocabulary). */
enum rts_metric *rts_btf_metric __attribute__((unused));
enum rts_hygiene *rts_btf_hygiene __attribute__((unused));
enum rts_event_type *rts_btf_event_type __attribute__((unused));
enum rts_waker_ctx *rts_btf_waker_ctx __attribute__((unused));
enum rts_notice_type *rts_btf_notice_type __attribute__((unused));
enum rts_counter *rts_btf_counter __attribute__((unused));
enum rts_sleep_reason *rts_btf_sleep_reason __attribute__((unused));
enum rts_noise_cause *rts_btf_noise_cause __attribute__((unused));
enum rts_ipi_kind *rts_btf_ipi_kind __attribute__((unused));
