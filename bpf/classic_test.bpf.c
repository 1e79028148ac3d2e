// SPDX-License-Identifier: GPL-2.0
/*
 * Test twin of the classic engine: its own programs (classic.bpf.c, included
 * whole) run on synthetic tracepoint records, driven from Go tests with
 * BPF_PROG_TEST_RUN, which runs raw_tp programs but not tracepoint ones.
 * The record is the test run's context (80 bytes), followed by a word that
 * selects the hook; the hooks read it at the offsets the loader sets, as
 * they read the kernel's. The hooks are inlined into the twin (SEC gets
 * always_inline here): called as global functions, the verifier would take
 * their void *ctx for memory of unknown size and refuse the call.
 */
#include "headers/vmlinux.h"
#include <bpf/bpf_helpers.h>
#undef SEC
#pragma clang diagnostic ignored "-Wignored-attributes" /* on maps and the license */
#define SEC(name) __attribute__((section(name), used, always_inline))
#include "classic.bpf.c"

/* ctx[0..9] is the record, ctx[10] selects the hook. */
SEC("raw_tp")
int twin_record(__u64 *ctx)
{
	switch (ctx[10]) {
	case 0:
		return on_sched_switch(ctx);
	case 1:
		return on_sched_waking(ctx);
	case 2:
		return on_task_newtask(ctx);
	case 3:
		return on_sched_exit(ctx);
	case 4:
		return on_hrtimer_expire_entry(ctx);
	case 5:
		return on_hrtimer_expire_exit(ctx);
	case 6:
		return on_softirq_entry(ctx);
	case 7:
		return on_softirq_exit(ctx);
	case 8:
		return on_task_rename(ctx);
	case 9:
		return on_irq_entry(ctx);
	case 10:
		return on_irq_exit(ctx);
	case 11:
		return on_hrtimer_start(ctx);
	case 12:
		return on_csd_queue_cpu(ctx);
	case 13:
		return on_ipi_send_cpu(ctx);
	case 14:
		return on_ipi_call_function_single_entry(ctx);
	case 15:
		return on_ipi_call_function_single_exit(ctx);
	case 16:
		return on_ipi_reschedule_entry(ctx);
	case 17:
		return on_ipi_reschedule_exit(ctx);
	}
	return -1;
}
