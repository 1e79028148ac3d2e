// SPDX-License-Identifier: GPL-2.0
/*
 * Test twin of rtscope isolation's classic stubs: isolation_classic.bpf.c,
 * included whole, run on synthetic tracepoint records with
 * BPF_PROG_TEST_RUN (which runs raw_tp programs, not tracepoint ones), as
 * classic_test.bpf.c does for the watch engine. The record is the test
 * run's context (80 bytes), followed by a word that selects the hook; the
 * stubs read it at the offsets the loader sets (internal/isolation
 * classic_twin_test.go).
 */
#include "headers/vmlinux.h"
#include <bpf/bpf_helpers.h>
#undef SEC
#pragma clang diagnostic ignored "-Wignored-attributes" /* on maps and the license */
#define SEC(name) __attribute__((section(name), used, always_inline))
#include "isolation_classic.bpf.c"

/* ctx[0..9] is the record, ctx[10] selects the hook. */
SEC("raw_tp")
int twin_record(__u64 *ctx)
{
	switch (ctx[10]) {
	case 0:
		return on_iso_irq_entry(ctx);
	case 1:
		return on_iso_irq_exit(ctx);
	case 2:
		return on_iso_softirq_entry(ctx);
	case 3:
		return on_iso_softirq_exit(ctx);
	case 4:
		return on_iso_softirq_raise(ctx);
	case 5:
		return on_iso_queue_work(ctx);
	case 6:
		return on_iso_work_start(ctx);
	case 7:
		return on_iso_work_end(ctx);
	case 8:
		return on_iso_switch(ctx);
	case 9:
		return on_iso_tick_stop(ctx);
	case 10:
		return on_csd_queue_cpu(ctx);
	case 11:
		return on_ipi_send_cpu(ctx);
	case 12:
		return on_ipi_call_function_single_entry(ctx);
	case 13:
		return on_ipi_call_function_single_exit(ctx);
	case 14:
		return on_ipi_reschedule_entry(ctx);
	case 15:
		return on_ipi_reschedule_exit(ctx);
	case 16:
		return on_iso_timer_start(ctx);
	case 17:
		return on_iso_timer_entry(ctx);
	case 18:
		return on_iso_timer_exit(ctx);
	case 19:
		return on_iso_hrtimer_entry(ctx);
	case 20:
		return on_iso_hrtimer_exit(ctx);
	}
	return -1;
}
