/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reads of a classic tracepoint record (the programs of classic.bpf.c and
 * isolation_classic.bpf.c): the loader sets each field's offset from
 * tracefs' format file before load (internal/tpformat), RTS_NOFIELD where
 * the kernel's record lacks the field, which then reads as 0.
 */
#ifndef RTS_TPRECORD_BPF_H
#define RTS_TPRECORD_BPF_H

/* A field this kernel's tracepoint does not have. */
#define RTS_NOFIELD 0xffff

static __always_inline __u32 rd_u32(void *ctx, __u32 off)
{
	__u32 v = 0;
	if (off != RTS_NOFIELD)
		bpf_probe_read_kernel(&v, sizeof(v), ctx + off);
	return v;
}

static __always_inline __u64 rd_u64(void *ctx, __u32 off)
{
	__u64 v = 0;
	if (off != RTS_NOFIELD)
		bpf_probe_read_kernel(&v, sizeof(v), ctx + off);
	return v;
}

#endif
