// SPDX-License-Identifier: GPL-2.0
/*
 * rtscope isolation: what runs on watched CPUs besides their workload, and
 * who sent it (docs/isolation.md). Thin tp_btf stubs over the bodies of
 * isolation.bpf.h, and ipi.bpf.h's IPI bodies as the engine has them: the
 * send slots and the receive vectors, the receiver always "none" (no task
 * is tracked here), so ipi_pairs counts the IPIs by (sender, CPU, kind),
 * on the watched CPUs only. The engine's maps come with ipi.bpf.h
 * (maps.bpf.h); user space shrinks the ones nothing here writes, and
 * turns the flight recorder off (trace_enabled).
 */
#include "headers/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
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

/* The workqueue's private types, as much as is read (CO-RE). */
struct worker_pool {
	int cpu;
} __attribute__((preserve_access_index));
struct pool_workqueue {
	struct worker_pool *pool;
} __attribute__((preserve_access_index));
struct work_struct {
	void *func;
} __attribute__((preserve_access_index));

/*
 * The timer types, as much as is read (CO-RE; the ___iso flavours keep
 * vmlinux.h's own hrtimer types apart).
 */
struct hrtimer_cpu_base___iso {
	unsigned int cpu;
} __attribute__((preserve_access_index));
struct hrtimer_clock_base___iso {
	struct hrtimer_cpu_base___iso *cpu_base;
} __attribute__((preserve_access_index));
struct hrtimer___iso {
	void *function;
	struct hrtimer_clock_base___iso *base;
	u8 is_soft;
} __attribute__((preserve_access_index));
struct timer_list {
	void *function;
	__u32 flags;
} __attribute__((preserve_access_index));

#define ISO_TIMER_CPUMASK 0x0003FFFF /* include/linux/timer.h */

SEC("tp_btf/irq_handler_entry")
int on_iso_irq_entry(__u64 *ctx)
{
	return iso_irq_entry_body(bpf_get_smp_processor_id(), (__u32)ctx[0], bpf_ktime_get_ns());
}

SEC("tp_btf/irq_handler_exit")
int on_iso_irq_exit(__u64 *ctx)
{
	return iso_irq_exit_body(bpf_get_smp_processor_id(), (__u32)ctx[0], bpf_ktime_get_ns());
}

SEC("tp_btf/softirq_entry")
int on_iso_softirq_entry(__u64 *ctx)
{
	return iso_softirq_entry_body(bpf_get_smp_processor_id(), (__u32)ctx[0], bpf_ktime_get_ns());
}

SEC("tp_btf/softirq_exit")
int on_iso_softirq_exit(__u64 *ctx)
{
	return iso_softirq_exit_body(bpf_get_smp_processor_id(), (__u32)ctx[0], bpf_ktime_get_ns());
}

SEC("tp_btf/softirq_raise")
int on_iso_softirq_raise(__u64 *ctx)
{
	return iso_softirq_raise_body(bpf_get_smp_processor_id(), (__u32)ctx[0]);
}

SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(on_iso_queue_work, int req_cpu, struct pool_workqueue *pwq, struct work_struct *work)
{
	int target = BPF_CORE_READ(pwq, pool, cpu);
	return iso_queue_work_body(bpf_get_smp_processor_id(), target, (__u64)BPF_CORE_READ(work, func),
				   bpf_get_current_pid_tgid());
}

SEC("tp_btf/workqueue_execute_start")
int BPF_PROG(on_iso_work_start, struct work_struct *work)
{
	return iso_work_start_body(bpf_get_smp_processor_id(), (__u64)BPF_CORE_READ(work, func), bpf_ktime_get_ns());
}

/* function is a function pointer: read as a plain word (see on_csd_queue_cpu). */
SEC("tp_btf/workqueue_execute_end")
int on_iso_work_end(__u64 *ctx)
{
	__u64 fn = 0;
	bpf_probe_read_kernel(&fn, sizeof(fn), &ctx[1]);
	return iso_work_end_body(bpf_get_smp_processor_id(), fn, bpf_ktime_get_ns());
}

#define ISO_PF_KTHREAD 0x00200000

SEC("tp_btf/sched_switch")
int BPF_PROG(on_iso_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return iso_switch_body(bpf_get_smp_processor_id(), prev->pid, prev->tgid, prev->comm,
			       (prev->flags & ISO_PF_KTHREAD) != 0, prev->nr_cpus_allowed, bpf_ktime_get_ns());
}

SEC("tp_btf/tick_stop")
int on_iso_tick_stop(__u64 *ctx)
{
	return iso_tick_stop_body(bpf_get_smp_processor_id(), (__u32)ctx[0], (__u32)ctx[1]);
}

/* An hrtimer's kind and base CPU (enqueued: its base is the CPU it expires on). */
static __always_inline __u32 iso_hrtimer_kind(struct hrtimer___iso *t)
{
	return BPF_CORE_READ(t, is_soft) ? ISO_HRTIMER_SOFT : ISO_HRTIMER;
}

SEC("tp_btf/hrtimer_start")
int BPF_PROG(on_iso_hrtimer_start, struct hrtimer___iso *t)
{
	return iso_timer_start_body(bpf_get_smp_processor_id(), BPF_CORE_READ(t, base, cpu_base, cpu),
				    (__u64)BPF_CORE_READ(t, function), iso_hrtimer_kind(t), bpf_get_current_pid_tgid());
}

/* timer_start comes at the enqueue: flags name the base's CPU. */
SEC("tp_btf/timer_start")
int BPF_PROG(on_iso_timer_start, struct timer_list *t)
{
	return iso_timer_start_body(bpf_get_smp_processor_id(), BPF_CORE_READ(t, flags) & ISO_TIMER_CPUMASK,
				    (__u64)BPF_CORE_READ(t, function), ISO_WHEEL, bpf_get_current_pid_tgid());
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(on_iso_hrtimer_entry, struct hrtimer___iso *t)
{
	return iso_timer_entry_body(bpf_get_smp_processor_id(), (__u64)t, (__u64)BPF_CORE_READ(t, function),
				    iso_hrtimer_kind(t), BPF_CORE_READ(t, base, cpu_base, cpu), bpf_ktime_get_ns());
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(on_iso_hrtimer_exit, struct hrtimer___iso *t)
{
	return iso_timer_exit_body(bpf_get_smp_processor_id(), (__u64)t, false, bpf_ktime_get_ns());
}

SEC("tp_btf/timer_expire_entry")
int BPF_PROG(on_iso_timer_entry, struct timer_list *t)
{
	return iso_timer_entry_body(bpf_get_smp_processor_id(), (__u64)t, (__u64)BPF_CORE_READ(t, function), ISO_WHEEL,
				    BPF_CORE_READ(t, flags) & ISO_TIMER_CPUMASK, bpf_ktime_get_ns());
}

SEC("tp_btf/timer_expire_exit")
int BPF_PROG(on_iso_timer_exit, struct timer_list *t)
{
	return iso_timer_exit_body(bpf_get_smp_processor_id(), (__u64)t, true, bpf_ktime_get_ns());
}

/* IPIs: ipi.bpf.h's bodies, as rtscope.bpf.c attaches them, for the watched CPUs (isolation_ipi.bpf.h). */
SEC("tp_btf/csd_queue_cpu")
int on_csd_queue_cpu(__u64 *ctx)
{
	__u64 func = 0;
	bpf_probe_read_kernel(&func, sizeof(func), &ctx[2]);
	return iso_csd_queue_body((__u32)ctx[0], ctx[1], func);
}

SEC("tp_btf/ipi_send_cpu")
int BPF_PROG(on_ipi_send_cpu, unsigned int cpu, unsigned long callsite, void *callback)
{
	return iso_ipi_send_body(cpu, callsite, (__u64)callback);
}

RTS_IPI_RECEIVER("tp_btf/", call_function_entry, iso_ipi_entry(RTS_IPI_SLOT_CSD))
RTS_IPI_RECEIVER("tp_btf/", call_function_single_entry, iso_ipi_entry(RTS_IPI_SLOT_CSD))
RTS_IPI_RECEIVER("tp_btf/", reschedule_entry, iso_ipi_entry(RTS_IPI_SLOT_RESCHED))
RTS_IPI_RECEIVER("tp_btf/", irq_work_entry, iso_ipi_entry(RTS_IPI_SLOT_IRQ_WORK))
RTS_IPI_RECEIVER("tp_btf/", call_function_exit, iso_ipi_exit())
RTS_IPI_RECEIVER("tp_btf/", call_function_single_exit, iso_ipi_exit())
RTS_IPI_RECEIVER("tp_btf/", reschedule_exit, iso_ipi_exit())
RTS_IPI_RECEIVER("tp_btf/", irq_work_exit, iso_ipi_exit())

/* arm64's receipts (no irq_vectors), as rtscope.bpf.c's, on the watched CPUs. */
SEC("tp_btf/ipi_entry")
int BPF_PROG(on_ipi_entry, const char *reason)
{
	return iso_ipi_reason_entry(reason);
}

SEC("tp_btf/ipi_exit")
int BPF_PROG(on_ipi_exit, const char *reason)
{
	return iso_ipi_reason_exit(reason);
}

struct iso_cpu *iso_btf_cpu __attribute__((unused));
struct iso_task *iso_btf_task __attribute__((unused));
struct iso_queue_key *iso_btf_queue_key __attribute__((unused));
struct iso_queued *iso_btf_queued __attribute__((unused));
struct iso_time *iso_btf_time __attribute__((unused));
struct iso_timer_key *iso_btf_timer_key __attribute__((unused));
struct iso_timer_armed *iso_btf_timer_armed __attribute__((unused));
struct rts_ipi_cpu *iso_btf_ipi_cpu __attribute__((unused));
struct rts_ipi_key *iso_btf_ipi_key __attribute__((unused));
struct rts_ipi_pair *iso_btf_ipi_pair __attribute__((unused));
enum rts_ipi_kind *iso_btf_ipi_kind __attribute__((unused));
