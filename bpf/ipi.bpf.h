/* SPDX-License-Identifier: GPL-2.0 */
/*
 * IPIs, sent and received, once for both engines (docs/ipi.md). The
 * senders and the counts are attached with watch --ipi (Config.IPI,
 * ipi_asked); the receipts are attached whenever the kernel has them
 * (features ipi_receive, ipi_entry): an IPI is a noise part of the tracked
 * task it interrupts (noise.bpf.h) and a pair of flight events, its sender
 * unknown without --ipi (docs/noise.md has the measured cost).
 *
 * Send side (the sender is the current task):
 *  - csd:csd_queue_cpu(cpu, callsite, func): a function queued for another
 *    CPU (smp_call_function*, on_each_cpu_cond_mask: TLB shootdowns run
 *    flush_tlb_func, queued remote wakeups sched_ttwu_pending). It names the
 *    work, where ipi_send_cpu/cpumask name only the generic handler
 *    (generic_smp_call_function_single_interrupt), and it fires once per
 *    target CPU: the cpumask send that follows it is not hooked (its CPUs
 *    are the csd_queue_cpu calls just made, a second walk of the mask would
 *    cost O(CPUs) per send for nothing).
 *  - ipi:ipi_send_cpu(cpu, callsite, callback): the IPIs with no csd: a
 *    reschedule (callback NULL) and a local irq_work raise (callback the
 *    work's function). A send with the generic callback returns at once.
 *
 * Each send writes a slot of the target CPU and its vector class (csd,
 * reschedule, irq_work): {sender tid/tgid/comm, its CPU, callsite, function,
 * kind, ts}. The receiver's vector entry (x86 irq_vectors) takes the slot
 * of its class and clears it: the IPI is attributed to the last task that
 * queued work for that CPU before it, in BPF, so a window on the receiving
 * CPU names its sender without the sender's ring (which may have wrapped),
 * and the counts by sender need no user-space pairing. No lock: two
 * senders racing for one slot leave one of them (the IPI carries both
 * csds anyway, and one is named). O(1) per event.
 *
 * Receive side: the entry/exit of the call_function, call_function_single,
 * reschedule and irq_work vectors (x86), or ipi:ipi_entry/ipi_exit with the
 * reason string that names the class (arm64, arm: no irq_vectors there); the handler time (entry -> exit) is
 * counted per CPU and kind (ipi_cpus) and per (receiver, sender, CPU, kind)
 * in ipi_pairs, the receiver being the tracked task running on the CPU or
 * waiting there (0: none).
 */
#ifndef RTSCOPE_IPI_BPF_H
#define RTSCOPE_IPI_BPF_H

#include "maps.bpf.h"

/*
 * The engines (noise.bpf.h included before): a receipt is a noise part
 * and a flight event pair; the counts and senders are kept with watch
 * --ipi only (ipi_asked). rtscope isolation, which has no noise, counts
 * always.
 */
#ifdef RTSCOPE_NOISE_BPF_H
const volatile bool ipi_asked = false;
/* Nothing nests in an IPI handler but an NMI; it may come in a softirq. */
#define rts_ipi_noise_enter(cs, now) rts_noise_enter(now, 0, rts_cpu_busy(cs, now), false)
#define rts_ipi_noise_leave(now, since, who) rts_noise_leave(now, since, RTS_NC_IPI, who)
#else
#define ipi_asked true
#define rts_ipi_noise_enter(cs, now)
#define rts_ipi_noise_leave(now, since, who)
#endif

/* Kernel functions that tell an IPI's kind (the loader sets them from kallsyms; 0: unknown). */
const volatile __u64 ipi_fn_tlb = 0;     /* flush_tlb_func */
const volatile __u64 ipi_fn_ttwu = 0;    /* sched_ttwu_pending */
const volatile __u64 ipi_fn_generic = 0; /* generic_smp_call_function_single_interrupt */

/* Slots a CPU: its vector classes. */
#define RTS_IPI_SLOTS 3
#define RTS_IPI_SLOT_CSD 0
#define RTS_IPI_SLOT_RESCHED 1
#define RTS_IPI_SLOT_IRQ_WORK 2

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RTS_IPI_SLOTS); /* the loader sets CPUs * RTS_IPI_SLOTS */
	__type(key, __u32);
	__type(value, struct rts_ipi_slot);
} ipi_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rts_ipi_cpu);
} ipi_cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RTS_IPI_PAIRS);
	__type(key, struct rts_ipi_key);
	__type(value, struct rts_ipi_pair);
} ipi_pairs SEC(".maps");

/* The kind of work a csd runs. */
static __always_inline __u8 rts_ipi_csd_kind(__u64 fn)
{
	if (fn && fn == ipi_fn_tlb)
		return RTS_IPI_TLB;
	if (fn && fn == ipi_fn_ttwu)
		return RTS_IPI_WAKEUP;
	return RTS_IPI_CALL;
}

/*
 * A send from the current task (tid/tgid) on cpu to target, of kind in
 * slot class; fn the work, callsite the sender's return address.
 */
static __always_inline void rts_ipi_send_body(__u32 target, __u32 slot, __u8 kind, __u64 callsite, __u64 fn,
					      __u64 now, __u32 cpu, __u64 pid_tgid)
{
	__u32 idx = target * RTS_IPI_SLOTS + slot;
	struct rts_ipi_slot *s = bpf_map_lookup_elem(&ipi_slots, &idx);
	if (!s)
		return;
	s->tid = (__u32)pid_tgid;
	s->tgid = pid_tgid >> 32;
	s->cpu = cpu;
	s->kind = kind;
	s->callsite = callsite;
	s->fn = fn;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	s->ts = now;
	struct rts_event *e = rts_flight(rts_cpu(), cpu, now, RTS_EV_IPI_SEND);
	if (e) {
		e->a = s->tid;
		e->b = target;
		e->flags = kind;
		rts_copy_comm(e->comm, s->comm);
	}
}

/* csd_queue_cpu: work queued for cpu (one call per target CPU). */
static __always_inline int rts_csd_queue_body(__u32 target, __u64 callsite, __u64 fn)
{
	rts_ipi_send_body(target, RTS_IPI_SLOT_CSD, rts_ipi_csd_kind(fn), callsite, fn, bpf_ktime_get_ns(),
			  bpf_get_smp_processor_id(), bpf_get_current_pid_tgid());
	return 0;
}

/* ipi_send_cpu: the IPIs without a csd (those with one were seen queued). */
static __always_inline int rts_ipi_send_cpu_body(__u32 target, __u64 callsite, __u64 callback)
{
	if (callback && callback == ipi_fn_generic)
		return 0;
	__u32 slot = callback ? RTS_IPI_SLOT_IRQ_WORK : RTS_IPI_SLOT_RESCHED;
	__u8 kind = callback ? RTS_IPI_IRQ_WORK : RTS_IPI_RESCHED;
	rts_ipi_send_body(target, slot, kind, callsite, callback, bpf_ktime_get_ns(), bpf_get_smp_processor_id(),
			  bpf_get_current_pid_tgid());
	return 0;
}

/*
 * A vector's handler begins on this CPU (slot: its class; who: its vector
 * on x86, its kind on arm64, for the noise part); running is the tracked
 * task running here (0: none), else the one waiting here counts.
 */
static __always_inline int rts_ipi_entry_body(__u32 slot, __u32 who, __u32 running, __u64 now)
{
	__u32 zero = 0, cpu = bpf_get_smp_processor_id();
	struct rts_ipi_cpu *ic = bpf_map_lookup_elem(&ipi_cpus, &zero);
	struct rts_cpu_state *cs = rts_cpu();
	if (!ic || !cs)
		return 0;
	rts_ipi_noise_enter(cs, now);
	ic->entry = now;
	ic->noise_who = who;
	ic->kind = slot == RTS_IPI_SLOT_CSD ? RTS_IPI_CALL : slot == RTS_IPI_SLOT_RESCHED ? RTS_IPI_RESCHED
											  : RTS_IPI_IRQ_WORK;
	if (!ipi_asked) {
		/* In the windows without its sender: a noise window names it (its kind, from the vector). */
		struct rts_event *e = rts_flight(cs, cpu, now, RTS_EV_IPI_ENTRY);
		if (e) {
			e->a = 0;
			e->b = 0;
			e->c = 0xffff;
			e->flags = ic->kind;
			e->x = 0;
			e->y = 0;
		}
		return 0;
	}
	ic->receiver = running ? running : (cs ? (__u32)cs->waiting_tid : 0);
	ic->tid = 0;
	ic->tgid = 0;
	ic->cpu = 0xffff;
	ic->fn = 0;
	ic->callsite = 0;
	((__u64 *)ic->comm)[0] = 0; /* no sender's name left from the previous IPI */
	((__u64 *)ic->comm)[1] = 0;
	__u32 idx = cpu * RTS_IPI_SLOTS + slot;
	struct rts_ipi_slot *s = bpf_map_lookup_elem(&ipi_slots, &idx);
	if (s && s->ts && s->ts <= now) {
		ic->tid = s->tid;
		ic->tgid = s->tgid;
		ic->cpu = s->cpu;
		ic->fn = s->fn;
		ic->callsite = s->callsite;
		ic->kind = s->kind;
		rts_copy_comm(ic->comm, s->comm);
		s->ts = 0; /* taken: a later IPI with no send seen is not this one's */
	}
	struct rts_event *e = rts_flight(cs, cpu, now, RTS_EV_IPI_ENTRY);
	if (e) {
		e->a = ic->tid;
		e->b = ic->tgid;
		e->c = ic->cpu;
		e->flags = ic->kind;
		e->x = ic->fn;
		e->y = ic->callsite;
	}
	return 0;
}

/* The counts of the IPI whose handler ends (d ns), by receiver and sender. */
static __always_inline void rts_ipi_pair_add(struct rts_ipi_cpu *ic, __u32 cpu, __u64 d)
{
	struct rts_ipi_key k = {.receiver = ic->receiver, .sender = ic->tid, .cpu = cpu, .kind = ic->kind};
	struct rts_ipi_pair *p = bpf_map_lookup_elem(&ipi_pairs, &k);
	if (!p) {
		struct rts_ipi_pair fresh = {.tgid = ic->tgid, .sender_cpu = ic->cpu, .fn = ic->fn, .callsite = ic->callsite};
		rts_copy_comm(fresh.comm, ic->comm);
		/* EEXIST (another CPU inserted it first) is fine: the lookup finds it */
		bpf_map_update_elem(&ipi_pairs, &k, &fresh, BPF_NOEXIST);
		p = bpf_map_lookup_elem(&ipi_pairs, &k);
		if (!p) {
			ic->pairs_lost++;
			return;
		}
	}
	__sync_fetch_and_add(&p->count, 1);
	__sync_fetch_and_add(&p->ns, d);
	if (d > p->max_ns)
		p->max_ns = d;
}

/* A vector's handler ends on this CPU. */
static __always_inline int rts_ipi_exit_body(__u64 now)
{
	__u32 zero = 0, cpu = bpf_get_smp_processor_id();
	struct rts_ipi_cpu *ic = bpf_map_lookup_elem(&ipi_cpus, &zero);
	if (!ic || !ic->entry)
		return 0;
	__u64 d = now > ic->entry ? now - ic->entry : 0;
	rts_ipi_noise_leave(now, ic->entry, ic->noise_who);
	ic->entry = 0;
	__u32 kind = ic->kind;
	if (ipi_asked && kind < RTS_IPI_KINDS) {
		ic->count[kind]++;
		ic->ns[kind] += d;
		if (!ic->tid)
			ic->unattributed[kind]++;
	}
	if (ipi_asked)
		rts_ipi_pair_add(ic, cpu, d);
	else
		ic->tid = 0; /* no sender known */
	struct rts_event *e = rts_flight(rts_cpu(), cpu, now, RTS_EV_IPI_EXIT);
	if (e) {
		e->a = ic->tid;
		e->flags = ic->kind;
		e->x = d;
	}
	return 0;
}

/* A string's first 8 bytes as bpf_probe_read_kernel reads them into a word (bpfel). */
#define RTS_STR8(s)                                                                                             \
	((__u64)(s)[0] | (__u64)(s)[1] << 8 | (__u64)(s)[2] << 16 | (__u64)(s)[3] << 24 | (__u64)(s)[4] << 32 | \
	 (__u64)(s)[5] << 40 | (__u64)(s)[6] << 48 | (__u64)(s)[7] << 56)

/*
 * The vector class of an ipi:ipi_entry/ipi_exit reason (arm64 and arm: a
 * string of the kernel's ipi_types[]), told by its first 8 bytes; -1 for
 * the IPIs the x86 hooks leave out too: the timer broadcast (the CPU's own
 * tick, x86's local timer vector), CPU stop, backtrace and KGDB roundup (a
 * panic, a crash dump or a debugger), the wake-up of a parked CPU.
 */
static __always_inline int rts_ipi_reason_slot(__u64 head)
{
	if (head == RTS_STR8("Function") || head == RTS_STR8("Single f"))
		return RTS_IPI_SLOT_CSD;
	if (head == RTS_STR8("Reschedu"))
		return RTS_IPI_SLOT_RESCHED;
	if (head == RTS_STR8("IRQ work"))
		return RTS_IPI_SLOT_IRQ_WORK;
	return -1;
}

/* The class of the reason string at reason (kernel memory), -1: not counted. */
static __always_inline int rts_ipi_reason_read(const void *reason)
{
	__u64 head = 0;
	if (!reason || bpf_probe_read_kernel(&head, sizeof(head), reason))
		return -1;
	return rts_ipi_reason_slot(head);
}

/*
 * ipi:ipi_entry(reason): the receipt where the kernel has no irq_vectors
 * (arm64, arm), the same body as x86's vectors once the reason gives the
 * class. One probe read of 8 bytes more than a vector's stub.
 */
static __always_inline int rts_ipi_reason_entry_body(const void *reason, __u32 running)
{
	int slot = rts_ipi_reason_read(reason);
	if (slot < 0)
		return 0;
	__u32 kind = slot == RTS_IPI_SLOT_CSD ? RTS_IPI_CALL : slot == RTS_IPI_SLOT_RESCHED ? RTS_IPI_RESCHED
											    : RTS_IPI_IRQ_WORK;
	return rts_ipi_entry_body(slot, kind, running, bpf_ktime_get_ns());
}

/* ipi:ipi_exit(reason): an IPI not counted at its entry ends nothing (a backtrace NMI inside a handler). */
static __always_inline int rts_ipi_reason_exit_body(const void *reason)
{
	if (rts_ipi_reason_read(reason) < 0)
		return 0;
	return rts_ipi_exit_body(bpf_ktime_get_ns());
}

/* The tracked task running on this CPU (0: none), for the receipts. */
static __always_inline __u32 rts_ipi_running(void)
{
	struct rts_task_state *st = rts_eng_current();
	return st ? st->tid : 0;
}

/* x86's IPI vectors (arch/x86/include/asm/irq_vectors.h), the noise parts' who. */
#define RTS_X86_RESCHEDULE_VECTOR 0xfd
#define RTS_X86_CALL_FUNCTION_VECTOR 0xfc
#define RTS_X86_CALL_FUNCTION_SINGLE_VECTOR 0xfb
#define RTS_X86_IRQ_WORK_VECTOR 0xf6

/*
 * The receivers' stubs, the same in both engines but for the section
 * prefix (tp_btf/, or tracepoint/irq_vectors/): the x86 vectors, whose
 * record and arguments carry nothing used (the vector number is the
 * stub's). Kernels without them (arm64: ipi:ipi_entry/ipi_exit,
 * rts_ipi_reason_*) attach none.
 */
#define RTS_IPI_RECEIVER(pfx, name, body) \
	SEC(pfx #name)                    \
	int on_ipi_##name(void *ctx)      \
	{                                 \
		return body;              \
	}
/* The receiver is looked up for the counts only (--ipi): a task-storage lookup less a receipt without. */
#define RTS_IPI_ENTRY(slot, vec) rts_ipi_entry_body(slot, vec, ipi_asked ? rts_ipi_running() : 0, bpf_ktime_get_ns())
#define RTS_IPI_RECEIVERS(pfx)                                                                                    \
	RTS_IPI_RECEIVER(pfx, call_function_entry, RTS_IPI_ENTRY(RTS_IPI_SLOT_CSD, RTS_X86_CALL_FUNCTION_VECTOR)) \
	RTS_IPI_RECEIVER(pfx, call_function_single_entry,                                                         \
			 RTS_IPI_ENTRY(RTS_IPI_SLOT_CSD, RTS_X86_CALL_FUNCTION_SINGLE_VECTOR))                    \
	RTS_IPI_RECEIVER(pfx, reschedule_entry, RTS_IPI_ENTRY(RTS_IPI_SLOT_RESCHED, RTS_X86_RESCHEDULE_VECTOR))   \
	RTS_IPI_RECEIVER(pfx, irq_work_entry, RTS_IPI_ENTRY(RTS_IPI_SLOT_IRQ_WORK, RTS_X86_IRQ_WORK_VECTOR))      \
	RTS_IPI_RECEIVER(pfx, call_function_exit, rts_ipi_exit_body(bpf_ktime_get_ns()))                          \
	RTS_IPI_RECEIVER(pfx, call_function_single_exit, rts_ipi_exit_body(bpf_ktime_get_ns()))                   \
	RTS_IPI_RECEIVER(pfx, reschedule_exit, rts_ipi_exit_body(bpf_ktime_get_ns()))                             \
	RTS_IPI_RECEIVER(pfx, irq_work_exit, rts_ipi_exit_body(bpf_ktime_get_ns()))

#endif
