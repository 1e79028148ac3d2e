// SPDX-License-Identifier: GPL-2.0
/*
 * Test twins of rtscope isolation's hooks: raw_tp programs that call the
 * bodies of isolation.bpf.h with synthetic arguments (CPU, time, irq...),
 * driven from Go with BPF_PROG_TEST_RUN (internal/isolation twin_test.go).
 * The IPI bodies have their twins in the engine's (rtscope_test.bpf.c).
 */
#include "headers/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "compat.bpf.h"
#include "isolation.bpf.h"

char LICENSE[] SEC("license") = "GPL";

SEC("raw_tp")
int BPF_PROG(test_irq_entry, __u64 cpu, __u64 irq, __u64 now)
{
	return iso_irq_entry_body(cpu, irq, now);
}

SEC("raw_tp")
int BPF_PROG(test_irq_exit, __u64 cpu, __u64 irq, __u64 now)
{
	return iso_irq_exit_body(cpu, irq, now);
}

SEC("raw_tp")
int BPF_PROG(test_softirq_entry, __u64 cpu, __u64 vec, __u64 now)
{
	return iso_softirq_entry_body(cpu, vec, now);
}

SEC("raw_tp")
int BPF_PROG(test_softirq_exit, __u64 cpu, __u64 vec, __u64 now)
{
	return iso_softirq_exit_body(cpu, vec, now);
}

SEC("raw_tp")
int BPF_PROG(test_softirq_raise, __u64 cpu, __u64 vec)
{
	return iso_softirq_raise_body(cpu, vec);
}

SEC("raw_tp")
int BPF_PROG(test_queue_work, __u64 cpu, __s64 target, __u64 fn)
{
	return iso_queue_work_body(cpu, target, fn, bpf_get_current_pid_tgid());
}

SEC("raw_tp")
int BPF_PROG(test_work_start, __u64 cpu, __u64 fn, __u64 now)
{
	return iso_work_start_body(cpu, fn, now);
}

SEC("raw_tp")
int BPF_PROG(test_work_end, __u64 cpu, __u64 fn, __u64 now)
{
	return iso_work_end_body(cpu, fn, now);
}

/* A switch on cpu away from tid (comm "twin-<tid % 10>"). */
SEC("raw_tp")
int BPF_PROG(test_switch, __u64 cpu, __u64 tid, __u64 kthread, __u64 nr_cpus, __u64 now)
{
	char comm[RTS_COMM_LEN] = "twin-0";
	comm[5] = '0' + tid % 10;
	return iso_switch_body(cpu, tid, tid, comm, kthread, nr_cpus, now);
}

SEC("raw_tp")
int BPF_PROG(test_tick_stop, __u64 cpu, __u64 success, __u64 dependency)
{
	return iso_tick_stop_body(cpu, success, dependency);
}

SEC("raw_tp")
int BPF_PROG(test_timer_start, __u64 cpu, __u64 target, __u64 fn, __u64 kind)
{
	return iso_timer_start_body(cpu, target, fn, kind, bpf_get_current_pid_tgid());
}

SEC("raw_tp")
int BPF_PROG(test_timer_entry, __u64 cpu, __u64 ptr, __u64 fn, __u64 kind, __u64 base, __u64 now)
{
	return iso_timer_entry_body(cpu, ptr, fn, kind, base, now);
}

SEC("raw_tp")
int BPF_PROG(test_timer_exit, __u64 cpu, __u64 ptr, __u64 wheel, __u64 now)
{
	return iso_timer_exit_body(cpu, ptr, wheel, now);
}
