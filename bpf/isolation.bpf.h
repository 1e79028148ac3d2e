/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What intrudes into watched CPUs (rtscope isolation, docs/isolation.md):
 * the hook bodies, shared by the object (isolation.bpf.c) and its test
 * twins (isolation_test.bpf.c). IPIs are ipi.bpf.h's. Every body is O(1),
 * writes only per-CPU maps (the writing CPU's slot), and returns at once
 * on a CPU not watched, but for the queueing of work, which is counted on
 * the queueing CPU when its target is watched.
 */
#ifndef RTS_ISOLATION_BPF_H
#define RTS_ISOLATION_BPF_H

#include "rtscope.h"

#define ISO_MAX_CPUS 1024
#define ISO_SOFTIRQS 10 /* NR_SOFTIRQS */
#define ISO_TICK_DEPS 8 /* bits of the tick_stop dependency mask */

/* The watched CPUs, a bit each (set by user space before load). */
const volatile __u64 iso_cpus[ISO_MAX_CPUS / 64];

/* A count, a total and a worst time. */
struct iso_time {
	__u64 count;
	__u64 ns;
	__u64 max_ns;
};

/* A timer callback running since entry (ptr 0: none). */
struct iso_tslot {
	__u64 ptr;
	__u64 fn;
	__u64 entry;
	__u32 kind; /* enum iso_timer_kind */
	__u32 base; /* the CPU of the timer's base */
};

/* Per watched CPU state and counts (iso_cpus_state). */
struct iso_cpu {
	__u64 irq_entry; /* hard IRQ handler running since, 0: none */
	__u64 softirq_entry;
	__u64 work_entry;
	__u64 work_fn;
	__u64 run_since; /* the current task's switch-in (0: not seen) */
	__u32 irq;
	__u32 softirq;
	struct iso_time softirqs[ISO_SOFTIRQS];
	__u64 softirq_raised[ISO_SOFTIRQS];
	__u64 tick_stopped;
	__u64 tick_kept;                /* tick_stop failures */
	__u64 tick_deps[ISO_TICK_DEPS]; /* failures by dependency bit */
	__u64 lost;                     /* a hash full */
	struct iso_tslot hrtimers[2];   /* hrtimer callbacks running: hard, soft (a hard one may nest) */
	struct iso_tslot wheel;         /* the timer-wheel callback running */
	struct iso_time tick;           /* the tick's own hrtimer: the tick section, not an intrusion */
};

/* A task that ran on a watched CPU (iso_tasks, per CPU, key: tid). */
struct iso_task {
	struct iso_time run;
	char comm[RTS_COMM_LEN];
	__u32 tgid;
	__u32 kthread; /* PF_KTHREAD */
	__u32 nr_cpus; /* CPUs allowed: 1 for a per-CPU thread */
	__u32 pad;
};

/* Work queued onto a watched CPU (iso_queue, per queueing CPU). */
struct iso_queue_key {
	__u64 fn;
	__u32 tid; /* the queueing task */
	__u32 cpu; /* the target CPU */
};

struct iso_queued {
	__u64 count;
	char comm[RTS_COMM_LEN];
	__u32 tgid;
	__u32 from_cpu;
};

/* The kinds of timer (iso_timer_key.kind). */
enum iso_timer_kind {
	ISO_HRTIMER = 0,      /* expires in the timer interrupt */
	ISO_HRTIMER_SOFT = 1, /* expires in the HRTIMER softirq */
	ISO_WHEEL = 2,        /* timer_list: expires in the TIMER softirq */
};

/*
 * A timer armed for a watched CPU (iso_timer_arms, per arming CPU), or
 * one expired there (iso_timer_exps, per watched CPU; tid 0, from_cpu:
 * the CPU whose wheel base it was on, other than the CPU it ran on when
 * timer migration expired it for an idle CPU).
 */
struct iso_timer_key {
	__u64 fn;
	__u32 tid; /* the arming task */
	__u16 cpu; /* the target CPU */
	__u16 kind;
	__u32 from_cpu; /* the arming CPU (expiries: the timer's base CPU) */
	__u32 pad;
};

struct iso_timer_armed {
	__u64 count;
	char comm[RTS_COMM_LEN];
	__u32 tgid;
	__u32 pad;
};

/* The tick's own hrtimer functions (set by user space; 0: absent). */
const volatile __u64 iso_fn_tick = 0;
const volatile __u64 iso_fn_tick_old = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iso_cpu);
} iso_cpus_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct iso_timer_key);
	__type(value, struct iso_timer_armed);
} iso_timer_arms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct iso_timer_key);
	__type(value, struct iso_time);
} iso_timer_exps SEC(".maps");

/* Hard IRQs handled on a watched CPU, by irq number. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct iso_time);
} iso_irqs SEC(".maps");

/* Work items run on a watched CPU, by function. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct iso_time);
} iso_works SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct iso_queue_key);
	__type(value, struct iso_queued);
} iso_queue SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct iso_task);
} iso_tasks SEC(".maps");

static __always_inline bool iso_watched(__u32 cpu)
{
	__u64 word = cpu >> 6;
	/* opaque to clang, which otherwise drops the check the verifier needs */
	asm volatile(""
		     : "+r"(word));
	if (word >= ISO_MAX_CPUS / 64)
		return false;
	return (iso_cpus[word] >> (cpu & 63)) & 1;
}

/* This CPU's state when it is watched. */
static __always_inline struct iso_cpu *iso_here(__u32 cpu)
{
	__u32 zero = 0;
	if (!iso_watched(cpu))
		return 0;
	return bpf_map_lookup_elem(&iso_cpus_state, &zero);
}

static __always_inline void iso_add(struct iso_time *t, __u64 d)
{
	t->count++;
	t->ns += d;
	if (d > t->max_ns)
		t->max_ns = d;
}

/* d ns more under key in a per-CPU hash of iso_time (no atomics: this CPU's copy). */
static __always_inline void iso_add_keyed(void *map, void *key, __u64 d, struct iso_cpu *c)
{
	struct iso_time *t = bpf_map_lookup_elem(map, key);
	if (!t) {
		struct iso_time fresh = {};
		bpf_map_update_elem(map, key, &fresh, BPF_NOEXIST);
		t = bpf_map_lookup_elem(map, key);
		if (!t) {
			c->lost++;
			return;
		}
	}
	iso_add(t, d);
}

/* irq_handler_entry / _exit: a device handler on cpu. */
static __always_inline int iso_irq_entry_body(__u32 cpu, __u32 irq, __u64 now)
{
	struct iso_cpu *c = iso_here(cpu);
	if (c) {
		c->irq_entry = now;
		c->irq = irq;
	}
	return 0;
}

static __always_inline int iso_irq_exit_body(__u32 cpu, __u32 irq, __u64 now)
{
	struct iso_cpu *c = iso_here(cpu);
	if (!c || !c->irq_entry || c->irq != irq)
		return 0;
	__u64 d = now > c->irq_entry ? now - c->irq_entry : 0;
	c->irq_entry = 0;
	iso_add_keyed(&iso_irqs, &irq, d, c);
	return 0;
}

/* softirq_entry / _exit / _raise, by vector. */
static __always_inline int iso_softirq_entry_body(__u32 cpu, __u32 vec, __u64 now)
{
	struct iso_cpu *c = iso_here(cpu);
	if (c) {
		c->softirq_entry = now;
		c->softirq = vec;
	}
	return 0;
}

static __always_inline int iso_softirq_exit_body(__u32 cpu, __u32 vec, __u64 now)
{
	struct iso_cpu *c = iso_here(cpu);
	if (!c || !c->softirq_entry || c->softirq != vec || vec >= ISO_SOFTIRQS)
		return 0;
	__u64 d = now > c->softirq_entry ? now - c->softirq_entry : 0;
	c->softirq_entry = 0;
	iso_add(&c->softirqs[vec], d);
	return 0;
}

static __always_inline int iso_softirq_raise_body(__u32 cpu, __u32 vec)
{
	struct iso_cpu *c = iso_here(cpu);
	if (c && vec < ISO_SOFTIRQS)
		c->softirq_raised[vec]++;
	return 0;
}

/*
 * workqueue_queue_work: fn queued for target (-1: an unbound pool, any
 * CPU of the unbound mask) by the current task on cpu. Counted on the
 * queueing CPU, the key naming the target.
 */
static __always_inline int iso_queue_work_body(__u32 cpu, __s32 target, __u64 fn, __u64 pid_tgid)
{
	if (target < 0 || !iso_watched(target))
		return 0;
	struct iso_queue_key k = {.fn = fn, .tid = (__u32)pid_tgid, .cpu = target};
	struct iso_queued *q = bpf_map_lookup_elem(&iso_queue, &k);
	if (!q) {
		struct iso_queued fresh = {.tgid = pid_tgid >> 32, .from_cpu = cpu};
		bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
		bpf_map_update_elem(&iso_queue, &k, &fresh, BPF_NOEXIST);
		q = bpf_map_lookup_elem(&iso_queue, &k);
		if (!q)
			return 0;
	}
	q->count++;
	return 0;
}

/* workqueue_execute_start / _end: a work item run on cpu. */
static __always_inline int iso_work_start_body(__u32 cpu, __u64 fn, __u64 now)
{
	struct iso_cpu *c = iso_here(cpu);
	if (c) {
		c->work_entry = now;
		c->work_fn = fn;
	}
	return 0;
}

static __always_inline int iso_work_end_body(__u32 cpu, __u64 fn, __u64 now)
{
	struct iso_cpu *c = iso_here(cpu);
	if (!c || !c->work_entry || c->work_fn != fn)
		return 0;
	__u64 d = now > c->work_entry ? now - c->work_entry : 0;
	c->work_entry = 0;
	iso_add_keyed(&iso_works, &fn, d, c);
	return 0;
}

/*
 * sched_switch on cpu: prev (tid, not the idle task) ran from the last
 * switch-in to now; its comm and kind are kept at its first one.
 */
static __always_inline int iso_switch_body(__u32 cpu, __u32 tid, __u32 tgid, const char *comm, __u32 kthread,
					   __u32 nr_cpus, __u64 now)
{
	struct iso_cpu *c = iso_here(cpu);
	if (!c)
		return 0;
	__u64 since = c->run_since;
	c->run_since = now;
	if (!tid || !since || since > now)
		return 0;
	struct iso_task *t = bpf_map_lookup_elem(&iso_tasks, &tid);
	if (!t) {
		struct iso_task fresh = {.tgid = tgid, .kthread = kthread, .nr_cpus = nr_cpus};
		rts_copy_comm(fresh.comm, comm);
		bpf_map_update_elem(&iso_tasks, &tid, &fresh, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&iso_tasks, &tid);
		if (!t) {
			c->lost++;
			return 0;
		}
	}
	iso_add(&t->run, now - since);
	return 0;
}

/* tick_stop on cpu: the tick stopped, or dependency kept it. */
static __always_inline int iso_tick_stop_body(__u32 cpu, __u32 success, __u32 dependency)
{
	struct iso_cpu *c = iso_here(cpu);
	if (!c)
		return 0;
	if (success) {
		c->tick_stopped++;
		return 0;
	}
	c->tick_kept++;
	for (int i = 0; i < ISO_TICK_DEPS; i++)
		if (dependency & (1u << i))
			c->tick_deps[i]++;
	return 0;
}

static __always_inline bool iso_is_tick(__u64 fn)
{
	return fn && (fn == iso_fn_tick || fn == iso_fn_tick_old);
}

/*
 * hrtimer_start / timer_start: fn armed on cpu by the current task for the
 * target CPU's base. Counted, on the arming CPU, when the target is
 * watched: from another CPU (a remote arming) or on it (the workload's own
 * timers, and foreign tasks', told apart in user space). The tick's own
 * hrtimer is left out: always armed on its CPU, reported in the tick
 * section.
 */
static __always_inline int iso_timer_start_body(__u32 cpu, __u32 target, __u64 fn, __u32 kind, __u64 pid_tgid)
{
	if (!iso_watched(target) || iso_is_tick(fn))
		return 0;
	/*
	 * On the watched CPU, inside a handler, a softirq or a timer callback
	 * (a periodic timer re-armed in its own), the current task is only
	 * the one interrupted: counted with no task (tid 0).
	 */
	struct iso_cpu *c = target == cpu ? iso_here(cpu) : 0;
	if (c && (c->irq_entry || c->softirq_entry || c->wheel.ptr || c->hrtimers[0].ptr || c->hrtimers[1].ptr))
		pid_tgid = 0;
	struct iso_timer_key k = {.fn = fn, .tid = (__u32)pid_tgid, .cpu = target, .kind = kind, .from_cpu = cpu};
	struct iso_timer_armed *a = bpf_map_lookup_elem(&iso_timer_arms, &k);
	if (!a) {
		struct iso_timer_armed fresh = {.tgid = pid_tgid >> 32};
		if (pid_tgid)
			bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
		bpf_map_update_elem(&iso_timer_arms, &k, &fresh, BPF_NOEXIST);
		a = bpf_map_lookup_elem(&iso_timer_arms, &k);
		if (!a)
			return 0;
	}
	a->count++;
	return 0;
}

/*
 * The slot of a running callback, by kind: hard hrtimers run in the timer
 * interrupt, soft ones and the wheel's in their softirqs, one at a time
 * each, and a hard one may nest in a softirq's. An entry takes its kind's
 * slot whatever it held: an exit missed (the hooks attached while a
 * callback ran) must not leave it stale (an on-stack timer expiring again
 * 516 ms later at the same address was timed from the first entry).
 */
static __always_inline struct iso_tslot *iso_tslot_of(struct iso_cpu *c, __u32 kind)
{
	if (kind == ISO_WHEEL)
		return &c->wheel;
	return kind == ISO_HRTIMER_SOFT ? &c->hrtimers[1] : &c->hrtimers[0];
}

/*
 * hrtimer_expire_entry / timer_expire_entry: ptr's callback fn starts on
 * cpu; base is the CPU of the timer's base (a wheel timer expired here for
 * an idle CPU by timer migration has another), read now: a callback may
 * free its timer.
 */
static __always_inline int iso_timer_entry_body(__u32 cpu, __u64 ptr, __u64 fn, __u32 kind, __u32 base, __u64 now)
{
	struct iso_cpu *c = iso_here(cpu);
	if (!c || !ptr)
		return 0;
	struct iso_tslot *s = iso_tslot_of(c, kind);
	s->ptr = ptr;
	s->fn = fn;
	s->entry = now;
	s->kind = kind;
	s->base = base;
	return 0;
}

/*
 * hrtimer_expire_exit / timer_expire_exit: ptr's callback ended on cpu.
 * The tick's own hrtimer counts apart (iso_cpu.tick).
 */
static __always_inline int iso_timer_exit_body(__u32 cpu, __u64 ptr, bool wheel, __u64 now)
{
	struct iso_cpu *c = iso_here(cpu);
	if (!c || !ptr)
		return 0;
	struct iso_tslot *s = &c->wheel;
	if (!wheel)
		s = c->hrtimers[1].ptr == ptr ? &c->hrtimers[1] : &c->hrtimers[0];
	if (s->ptr != ptr)
		return 0;
	__u64 d = now > s->entry ? now - s->entry : 0;
	s->ptr = 0;
	if (iso_is_tick(s->fn)) {
		iso_add(&c->tick, d);
		return 0;
	}
	struct iso_timer_key k = {.fn = s->fn, .cpu = cpu, .kind = s->kind, .from_cpu = s->base};
	iso_add_keyed(&iso_timer_exps, &k, d, c);
	return 0;
}

#endif
