// SPDX-License-Identifier: GPL-2.0
/*
 * rtsfi_preemptoff: a kthread that spins len_us with preemption disabled.
 * Interrupts still run, so a victim's timer fires and wakes it on time,
 * but the scheduler cannot switch to it until preempt_enable(): the
 * latency shows up after the wakeup, while the lower-priority kthread
 * rtsfi_preempt/N (its comm) keeps the CPU.
 */
#define RTSFI_NAME "rtsfi_preempt"
#include "rtsfi_kthread.h"

static void rtsfi_section(void)
{
	preempt_disable();
	rtsfi_busy_ns((u64)len_us * NSEC_PER_USEC);
	preempt_enable();
}

MODULE_DESCRIPTION("rtscope fault injection: kthread busy loop with preemption disabled");
