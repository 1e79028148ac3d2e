// SPDX-License-Identifier: GPL-2.0
/*
 * rtsfi_irqoff: a kthread that spins len_us with local interrupts
 * disabled. A victim's timer interrupt stays pending until
 * local_irq_restore(): the latency shows up before the wakeup (the timer
 * expires late), while rtsfi_irqoff/N was running. On PREEMPT_RT
 * local_irq_save() still masks hardware interrupts.
 */
#define RTSFI_NAME "rtsfi_irqoff"
#include <linux/irqflags.h>
#include "rtsfi_kthread.h"

static void rtsfi_section(void)
{
	unsigned long flags;

	local_irq_save(flags);
	rtsfi_busy_ns((u64)len_us * NSEC_PER_USEC);
	local_irq_restore(flags);
}

MODULE_DESCRIPTION("rtscope fault injection: section with interrupts disabled");
