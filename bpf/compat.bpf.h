/* SPDX-License-Identifier: GPL-2.0 */
/* Kernel-version differences, resolved by CO-RE at load time. */
#ifndef RTSCOPE_COMPAT_BPF_H
#define RTSCOPE_COMPAT_BPF_H

#include <bpf/bpf_core_read.h>

/* task_struct::state was renamed __state in 5.14. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline unsigned int rts_task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return (unsigned int)BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/* Kernel prio as a byte for the flight recorder: deadline (-1) becomes 255. */
static __always_inline __u8 rts_prio_byte(int prio)
{
	return prio < 0 ? 255 : (__u8)prio;
}

/* Copy a task's 16-byte comm from a BTF pointer: two plain 8-byte loads. */
static __always_inline void rts_copy_comm(char *dst, const char *src)
{
	((__u64 *)dst)[0] = ((const __u64 *)src)[0];
	((__u64 *)dst)[1] = ((const __u64 *)src)[1];
}

#endif
