// SPDX-License-Identifier: GPL-2.0
/*
 * rtscope isolation on kernels without BTF (docs/isolation.md, engines):
 * the bodies of isolation.bpf.h and isolation_ipi.bpf.h, fed by classic
 * tracepoints instead of tp_btf. Each stub reads its record at the field
 * offsets user space takes from tracefs and sets before load (the off_*
 * constants; RTS_NOFIELD: the kernel's record lacks the field), as the
 * watch engine's classic.bpf.c does. Nothing here reads a kernel structure.
 *
 * What the records do not carry: sched_switch has prev's comm and tid but
 * not its tgid (taken from the current task, which is prev), its
 * PF_KTHREAD flag nor its CPU count: the stub passes 0 for both and user
 * space reads them from /proc for the tasks still alive. x86's irq_work
 * vector is not hooked: the kernel refuses a perf event on irq_work_exit
 * (TRACE_EVENT_PERF_PERM), through which a classic program attaches
 * (arm64's ipi_entry/ipi_exit, below, count irq_work).
 *
 * Timers: timer_start's record has the flags, hence the target CPU of a
 * wheel timer; hrtimer_start's has no base CPU: not hooked, remote hrtimer
 * armings are not seen. The expiries carry no base CPU either (the CPU
 * that runs them is passed) nor, for hrtimers, is_soft (told from the
 * CPU's softirq state, as classic.bpf.c does). A hook added to
 * isolation.bpf.c needs its stub here too, or it is missing from classic
 * runs.
 */
#include "headers/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "compat.bpf.h"
#include "maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* No tracked task (ipi.bpf.h's rts_ipi_running, unused here, needs it). */
static __always_inline struct rts_task_state *rts_eng_current(void)
{
	return 0;
}

#include "ipi.bpf.h"
#include "isolation.bpf.h"
#include "isolation_ipi.bpf.h"
#include "tprecord.bpf.h"

/* Field offsets in the tracepoint records, set by the loader from tracefs. */
const volatile __u32 off_irq_entry_irq = RTS_NOFIELD;
const volatile __u32 off_irq_exit_irq = RTS_NOFIELD;
const volatile __u32 off_softirq_entry_vec = RTS_NOFIELD;
const volatile __u32 off_softirq_exit_vec = RTS_NOFIELD;
const volatile __u32 off_softirq_raise_vec = RTS_NOFIELD;
const volatile __u32 off_queue_work_function = RTS_NOFIELD;
const volatile __u32 off_queue_work_cpu = RTS_NOFIELD;
const volatile __u32 off_work_start_function = RTS_NOFIELD;
const volatile __u32 off_work_end_function = RTS_NOFIELD;
const volatile __u32 off_switch_prev_comm = RTS_NOFIELD;
const volatile __u32 off_switch_prev_pid = RTS_NOFIELD;
const volatile __u32 off_tick_stop_success = RTS_NOFIELD;
const volatile __u32 off_tick_stop_dependency = RTS_NOFIELD;
const volatile __u32 off_csd_queue_cpu = RTS_NOFIELD;
const volatile __u32 off_csd_queue_callsite = RTS_NOFIELD;
const volatile __u32 off_csd_queue_func = RTS_NOFIELD;
const volatile __u32 off_ipi_send_cpu = RTS_NOFIELD;
const volatile __u32 off_ipi_send_callsite = RTS_NOFIELD;
const volatile __u32 off_ipi_send_callback = RTS_NOFIELD;
const volatile __u32 off_timer_start_timer = RTS_NOFIELD;
const volatile __u32 off_timer_start_function = RTS_NOFIELD;
const volatile __u32 off_timer_start_flags = RTS_NOFIELD;
const volatile __u32 off_timer_entry_timer = RTS_NOFIELD;
const volatile __u32 off_timer_entry_function = RTS_NOFIELD;
const volatile __u32 off_timer_exit_timer = RTS_NOFIELD;
const volatile __u32 off_hrtimer_entry_hrtimer = RTS_NOFIELD;
const volatile __u32 off_hrtimer_entry_function = RTS_NOFIELD;
const volatile __u32 off_hrtimer_exit_hrtimer = RTS_NOFIELD;
const volatile __u32 off_ipi_entry_reason = RTS_NOFIELD;
const volatile __u32 off_ipi_exit_reason = RTS_NOFIELD;

SEC("tracepoint/irq/irq_handler_entry")
int on_iso_irq_entry(void *ctx)
{
	return iso_irq_entry_body(bpf_get_smp_processor_id(), rd_u32(ctx, off_irq_entry_irq), bpf_ktime_get_ns());
}

SEC("tracepoint/irq/irq_handler_exit")
int on_iso_irq_exit(void *ctx)
{
	return iso_irq_exit_body(bpf_get_smp_processor_id(), rd_u32(ctx, off_irq_exit_irq), bpf_ktime_get_ns());
}

SEC("tracepoint/irq/softirq_entry")
int on_iso_softirq_entry(void *ctx)
{
	return iso_softirq_entry_body(bpf_get_smp_processor_id(), rd_u32(ctx, off_softirq_entry_vec),
				      bpf_ktime_get_ns());
}

SEC("tracepoint/irq/softirq_exit")
int on_iso_softirq_exit(void *ctx)
{
	return iso_softirq_exit_body(bpf_get_smp_processor_id(), rd_u32(ctx, off_softirq_exit_vec),
				     bpf_ktime_get_ns());
}

SEC("tracepoint/irq/softirq_raise")
int on_iso_softirq_raise(void *ctx)
{
	return iso_softirq_raise_body(bpf_get_smp_processor_id(), rd_u32(ctx, off_softirq_raise_vec));
}

/* The record's cpu is the target pool's (pwq->pool->cpu), -1 for an unbound pool. */
SEC("tracepoint/workqueue/workqueue_queue_work")
int on_iso_queue_work(void *ctx)
{
	return iso_queue_work_body(bpf_get_smp_processor_id(), (__s32)rd_u32(ctx, off_queue_work_cpu),
				   rd_u64(ctx, off_queue_work_function), bpf_get_current_pid_tgid());
}

SEC("tracepoint/workqueue/workqueue_execute_start")
int on_iso_work_start(void *ctx)
{
	return iso_work_start_body(bpf_get_smp_processor_id(), rd_u64(ctx, off_work_start_function),
				   bpf_ktime_get_ns());
}

SEC("tracepoint/workqueue/workqueue_execute_end")
int on_iso_work_end(void *ctx)
{
	return iso_work_end_body(bpf_get_smp_processor_id(), rd_u64(ctx, off_work_end_function), bpf_ktime_get_ns());
}

/*
 * sched_switch fires in prev's context: the current task's tgid is prev's.
 * Not kthread nor nr_cpus (0: unknown, read from /proc by user space). A
 * CPU not watched returns before the record is read: this is the hottest
 * hook, and the body would return there anyway.
 */
SEC("tracepoint/sched/sched_switch")
int on_iso_switch(void *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (!iso_watched(cpu))
		return 0;
	char comm[RTS_COMM_LEN] = {};
	if (off_switch_prev_comm != RTS_NOFIELD)
		bpf_probe_read_kernel(comm, sizeof(comm), ctx + off_switch_prev_comm);
	__u32 tid = rd_u32(ctx, off_switch_prev_pid);
	__u64 cur = bpf_get_current_pid_tgid();
	__u32 tgid = (__u32)cur == tid ? cur >> 32 : 0;
	return iso_switch_body(cpu, tid, tgid, comm, 0, 0, bpf_ktime_get_ns());
}

SEC("tracepoint/timer/tick_stop")
int on_iso_tick_stop(void *ctx)
{
	return iso_tick_stop_body(bpf_get_smp_processor_id(), rd_u32(ctx, off_tick_stop_success),
				  rd_u32(ctx, off_tick_stop_dependency));
}

#define ISO_TIMER_CPUMASK 0x0003FFFF /* include/linux/timer.h */

SEC("tracepoint/timer/timer_start")
int on_iso_timer_start(void *ctx)
{
	return iso_timer_start_body(bpf_get_smp_processor_id(), rd_u32(ctx, off_timer_start_flags) & ISO_TIMER_CPUMASK,
				    rd_u64(ctx, off_timer_start_function), ISO_WHEEL, bpf_get_current_pid_tgid());
}

SEC("tracepoint/timer/timer_expire_entry")
int on_iso_timer_entry(void *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id();
	return iso_timer_entry_body(cpu, rd_u64(ctx, off_timer_entry_timer), rd_u64(ctx, off_timer_entry_function),
				    ISO_WHEEL, cpu, bpf_ktime_get_ns());
}

SEC("tracepoint/timer/timer_expire_exit")
int on_iso_timer_exit(void *ctx)
{
	return iso_timer_exit_body(bpf_get_smp_processor_id(), rd_u64(ctx, off_timer_exit_timer), true,
				   bpf_ktime_get_ns());
}

#define ISO_HRTIMER_SOFTIRQ 8

/*
 * An hrtimer callback starting on cpu is soft when the CPU is in the
 * HRTIMER softirq with no callback running (soft ones run one at a time
 * there); a hard one taken between two soft ones passes for soft.
 */
static __always_inline __u32 iso_hrtimer_kind_of(__u32 cpu)
{
	struct iso_cpu *c = iso_here(cpu);
	if (c && c->softirq_entry && c->softirq == ISO_HRTIMER_SOFTIRQ && !c->hrtimers[0].ptr && !c->hrtimers[1].ptr)
		return ISO_HRTIMER_SOFT;
	return ISO_HRTIMER;
}

SEC("tracepoint/timer/hrtimer_expire_entry")
int on_iso_hrtimer_entry(void *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id();
	return iso_timer_entry_body(cpu, rd_u64(ctx, off_hrtimer_entry_hrtimer), rd_u64(ctx, off_hrtimer_entry_function),
				    iso_hrtimer_kind_of(cpu), cpu, bpf_ktime_get_ns());
}

SEC("tracepoint/timer/hrtimer_expire_exit")
int on_iso_hrtimer_exit(void *ctx)
{
	return iso_timer_exit_body(bpf_get_smp_processor_id(), rd_u64(ctx, off_hrtimer_exit_hrtimer), false,
				   bpf_ktime_get_ns());
}

SEC("tracepoint/csd/csd_queue_cpu")
int on_csd_queue_cpu(void *ctx)
{
	return iso_csd_queue_body(rd_u32(ctx, off_csd_queue_cpu), rd_u64(ctx, off_csd_queue_callsite),
				  rd_u64(ctx, off_csd_queue_func));
}

SEC("tracepoint/ipi/ipi_send_cpu")
int on_ipi_send_cpu(void *ctx)
{
	return iso_ipi_send_body(rd_u32(ctx, off_ipi_send_cpu), rd_u64(ctx, off_ipi_send_callsite),
				 rd_u64(ctx, off_ipi_send_callback));
}

RTS_IPI_RECEIVER("tracepoint/irq_vectors/", call_function_entry, iso_ipi_entry(RTS_IPI_SLOT_CSD))
RTS_IPI_RECEIVER("tracepoint/irq_vectors/", call_function_single_entry, iso_ipi_entry(RTS_IPI_SLOT_CSD))
RTS_IPI_RECEIVER("tracepoint/irq_vectors/", reschedule_entry, iso_ipi_entry(RTS_IPI_SLOT_RESCHED))
RTS_IPI_RECEIVER("tracepoint/irq_vectors/", call_function_exit, iso_ipi_exit())
RTS_IPI_RECEIVER("tracepoint/irq_vectors/", call_function_single_exit, iso_ipi_exit())
RTS_IPI_RECEIVER("tracepoint/irq_vectors/", reschedule_exit, iso_ipi_exit())

/* arm64's receipts (no irq_vectors): the record's reason is a pointer to the kernel's string. */
SEC("tracepoint/ipi/ipi_entry")
int on_ipi_entry(void *ctx)
{
	return iso_ipi_reason_entry((const void *)rd_u64(ctx, off_ipi_entry_reason));
}

SEC("tracepoint/ipi/ipi_exit")
int on_ipi_exit(void *ctx)
{
	return iso_ipi_reason_exit((const void *)rd_u64(ctx, off_ipi_exit_reason));
}
