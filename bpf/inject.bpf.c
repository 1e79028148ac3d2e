// SPDX-License-Identifier: GPL-2.0
/*
 * rtscope fault injectors, without kernel modules:
 *
 * irq_noise: a tp_btf program on hrtimer_expire_entry recognises the sleeper
 * timer of one injector thread (function == hrtimer_wakeup, sleeper task ==
 * injector tid, on the target CPU) and busy-waits there: inside the hard-IRQ
 * timer interrupt, interrupts off. Every timer of that CPU due during the
 * spin (a victim's wakeup) is handled only when it ends.
 *
 * preempt_off: a raw_tp program run by BPF_PROG_TEST_RUN from a thread pinned
 * to the target CPU. The kernel runs raw_tp test runs between get_cpu() and
 * put_cpu() (net/bpf/test_run.c), i.e. preemption disabled, interrupts
 * enabled: a victim woken during the spin runs only when it ends.
 *
 * Both spins are capped here as well as in user space: each at
 * INJ_MAX_SPIN_NS, and together at about half of every second of their CPU
 * (INJ_BUDGET_NS of INJ_WINDOW_NS), so that no injector can take a CPU
 * whatever user space asks.
 */
#include "headers/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

#define INJ_MAX_SPIN_NS (20ULL * 1000 * 1000)
/* The duty budget: at most INJ_BUDGET_NS of spinning in each INJ_WINDOW_NS,
 * half of it (inject.MaxDuty) plus one spin of slack: user space allows 50%,
 * and a stall of the machine stretches the spins it asked for. A spin that
 * would pass the budget is refused. */
#define INJ_WINDOW_NS (1000ULL * 1000 * 1000)
#define INJ_BUDGET_NS (INJ_WINDOW_NS / 2 + INJ_MAX_SPIN_NS)

enum inj_kind {
	INJ_IRQ = 0,
	INJ_PREEMPT = 1,
	INJ_KINDS
};

struct inj_stats {
	__u64 count;    /* spins done */
	__u64 total_ns; /* time spent spinning */
	__u64 max_ns;
	__u64 wrong_cpu;    /* runs refused because they were not on the target CPU */
	__u64 min_ns;       /* shortest spin: a stall of the machine only lengthens one */
	__u64 over_budget;  /* spins refused by the duty budget */
	__u64 window_start; /* the budget's current window */
	__u64 window_ns;    /* spun in it */
};

const volatile __u64 hrtimer_wakeup_fn = 0;
const volatile __u32 injector_tid = 0;
const volatile __u32 target_cpu = 0;
const volatile __u64 irq_spin_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, INJ_KINDS);
	__type(key, __u32);
	__type(value, struct inj_stats);
} stats SEC(".maps");

struct spin_ctx {
	__u64 end;
};

static long spin_step(__u64 i, void *data)
{
	struct spin_ctx *c = data;
	return bpf_ktime_get_ns() >= c->end; /* 1 stops bpf_loop */
}

/* Busy-wait ns (capped, within the duty budget) and account it under
 * kind. One injector spins on one CPU at a time (its timer interrupt, or its
 * one pinned thread), so the stats need no lock. */
static __always_inline void spin(__u64 ns, __u32 kind)
{
	struct inj_stats *s = bpf_map_lookup_elem(&stats, &kind);
	if (!s)
		return;
	if (ns > INJ_MAX_SPIN_NS)
		ns = INJ_MAX_SPIN_NS;
	__u64 start = bpf_ktime_get_ns();
	if (start - s->window_start >= INJ_WINDOW_NS) {
		s->window_start = start;
		s->window_ns = 0;
	}
	if (s->window_ns + ns > INJ_BUDGET_NS) {
		s->over_budget++;
		return;
	}
	struct spin_ctx c = {.end = start + ns};
	/* bpf_loop runs at most 2^23 steps a call: a few calls cover 20 ms
	 * even with a clock read of a few ns. */
	for (int i = 0; i < 8; i++) {
		if (bpf_ktime_get_ns() >= c.end)
			break;
		bpf_loop(1 << 23, spin_step, &c, 0);
	}
	__u64 took = bpf_ktime_get_ns() - start;
	s->window_ns += took;
	s->count++;
	s->total_ns += took;
	if (took > s->max_ns)
		s->max_ns = took;
	if (!s->min_ns || took < s->min_ns)
		s->min_ns = took;
}

static __always_inline void wrong_cpu(__u32 kind)
{
	struct inj_stats *s = bpf_map_lookup_elem(&stats, &kind);
	if (s)
		__sync_fetch_and_add(&s->wrong_cpu, 1);
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(irq_noise, struct hrtimer *timer, ktime_t *now)
{
	if (!hrtimer_wakeup_fn || (__u64)BPF_CORE_READ(timer, function) != hrtimer_wakeup_fn)
		return 0;
	struct hrtimer_sleeper *sl =
		(void *)timer - bpf_core_field_offset(struct hrtimer_sleeper, timer);
	struct task_struct *task = BPF_CORE_READ(sl, task);
	if (!task || BPF_CORE_READ(task, pid) != injector_tid)
		return 0;
	if (bpf_get_smp_processor_id() != target_cpu) {
		wrong_cpu(INJ_IRQ);
		return 0;
	}
	spin(irq_spin_ns, INJ_IRQ);
	return 0;
}

/* Argument: spin length, ns. */
SEC("raw_tp")
int BPF_PROG(preempt_off, __u64 spin_ns)
{
	if (bpf_get_smp_processor_id() != target_cpu) {
		wrong_cpu(INJ_PREEMPT);
		return 1;
	}
	spin(spin_ns, INJ_PREEMPT);
	return 0;
}
