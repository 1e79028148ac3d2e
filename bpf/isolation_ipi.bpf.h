/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rtscope isolation's use of ipi.bpf.h's bodies, once for both of its
 * objects (isolation.bpf.c, isolation_classic.bpf.c): for the watched CPUs
 * only. A send to another CPU, and a receipt there, return at once
 * (ipi_pairs, a shared hash, is then not filled with other CPUs' pairs).
 * The receiver is always "none": no task is tracked here. Include after
 * ipi.bpf.h and isolation.bpf.h.
 */
#ifndef RTS_ISOLATION_IPI_BPF_H
#define RTS_ISOLATION_IPI_BPF_H

static __always_inline int iso_csd_queue_body(__u32 target, __u64 callsite, __u64 func)
{
	if (!iso_watched(target))
		return 0;
	return rts_csd_queue_body(target, callsite, func);
}

static __always_inline int iso_ipi_send_body(__u32 target, __u64 callsite, __u64 callback)
{
	if (!iso_watched(target))
		return 0;
	return rts_ipi_send_cpu_body(target, callsite, callback);
}

/* A receipt on a watched CPU, of the vector class slot. */
static __always_inline int iso_ipi_entry(__u32 slot)
{
	if (!iso_watched(bpf_get_smp_processor_id()))
		return 0;
	return rts_ipi_entry_body(slot, 0, 0, bpf_ktime_get_ns());
}

static __always_inline int iso_ipi_exit(void)
{
	if (!iso_watched(bpf_get_smp_processor_id()))
		return 0;
	return rts_ipi_exit_body(bpf_ktime_get_ns());
}

/* arm64's receipts (ipi:ipi_entry/ipi_exit: no irq_vectors), on a watched CPU. */
static __always_inline int iso_ipi_reason_entry(const void *reason)
{
	if (!iso_watched(bpf_get_smp_processor_id()))
		return 0;
	return rts_ipi_reason_entry_body(reason, 0);
}

static __always_inline int iso_ipi_reason_exit(const void *reason)
{
	if (!iso_watched(bpf_get_smp_processor_id()))
		return 0;
	return rts_ipi_reason_exit_body(reason);
}

#endif
