// SPDX-License-Identifier: GPL-2.0
/*
 * Test twins of the engine: raw_tp programs that run the state machine of
 * task_logic.bpf.h on synthetic events, driven from Go tests with
 * BPF_PROG_TEST_RUN. Tasks are keyed by tid in a hash here, where the
 * engine uses task storage; everything else is the engine's own code.
 */
#include "headers/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "task_logic.bpf.h"

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

/* Start tracking tid; a reused tid gets a fresh state and a new id. */
SEC("raw_tp")
int BPF_PROG(test_track, __u64 tid, __u64 pid, __u64 sleeping, __u64 irq_thread)
{
	struct rts_task_state zero = {};
	__u32 t = tid;
	bpf_map_update_elem(&test_tasks, &t, &zero, BPF_ANY);
	struct rts_task_state *st = task(t);
	if (!st)
		return -1;
	int err = rts_track_init(st, t, pid, 0, 0, sleeping != 0);
	if (!err && irq_thread)
		st->flags |= RTS_TF_IRQ_THREAD;
	return err;
}

/* A task exits: its state is dropped (the engine deletes its task storage). */
SEC("raw_tp")
int BPF_PROG(test_exit, __u64 tid)
{
	__u32 t = tid;
	return bpf_map_delete_elem(&test_tasks, &t);
}

/* irq_ns: the CPU's accumulated hard IRQ + softirq time at this switch. */
SEC("raw_tp")
int BPF_PROG(test_switch, __u64 now, __u64 cpu, __u64 prev_tid, __u64 next_tid, __u64 voluntary,
	     __u64 irq_ns)
{
	struct rts_task_state *ps = task(prev_tid);
	struct rts_task_state *ns = task(next_tid);
	if (ps)
		rts_on_switch_out(ps, now, cpu, voluntary != 0, irq_ns);
	if (ns)
		rts_on_switch_in(ns, now, cpu, irq_ns);
	return 0;
}

SEC("raw_tp")
int BPF_PROG(test_wakeup, __u64 now, __u64 cpu, __u64 tid, __u64 timer_expiry, __u64 cb_entry)
{
	struct rts_task_state *st = task(tid);
	if (st)
		rts_on_wakeup(st, now, cpu, timer_expiry, cb_entry);
	return 0;
}

/* tid arms its sleeper timer at now: expiry in CLOCK_MONOTONIC (0: unknown clock), key in its own clock. */
SEC("raw_tp")
int BPF_PROG(test_timer_arm, __u64 now, __u64 cpu, __u64 tid, __u64 expiry, __u64 key)
{
	struct rts_task_state *st = task(tid);
	if (st)
		rts_on_timer_arm(st, rts_stats(st), now, cpu, expiry, key);
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
