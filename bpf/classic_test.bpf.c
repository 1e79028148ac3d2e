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

/* The reasons of ipi:ipi_entry/exit records (arm64's strings), in kernel memory. */
const char twin_ipi_reasons[][40] = {"Function call interrupts", "Rescheduling interrupts", "Timer broadcast interrupts"};

/*
 * ipi_entry (entry) or ipi_exit: the record ctx[0..9] on the stack, with
 * the reason field (at the loader's offset) pointing at twin_ipi_reasons[ctx[11]].
 */
static __always_inline int twin_ipi_reason(__u64 *ctx, int entry)
{
	__u64 rec[10];
	__u32 off = entry ? off_ipi_entry_reason : off_ipi_exit_reason, r = ctx[11];
	for (int i = 0; i < 10; i++)
		rec[i] = ctx[i];
	if (off >= sizeof(rec) || off % 8 || r >= sizeof(twin_ipi_reasons) / sizeof(twin_ipi_reasons[0]))
		return -1;
	rec[off / 8] = (__u64)twin_ipi_reasons[r];
	return entry ? on_ipi_entry(rec) : on_ipi_exit(rec);
}

/* ctx[0..9] is the record, ctx[10] selects the hook (ctx[11]: the IPI reason). */
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
	case 18:
		return twin_ipi_reason(ctx, 1);
	case 19:
		return twin_ipi_reason(ctx, 0);
	case 20:
		return on_nmi_handler(ctx);
	}
	return -1;
}
