// SPDX-License-Identifier: GPL-2.0
/*
 * rtsfi_hardirq: a busy loop in hard-IRQ context. A pinned hard hrtimer
 * fires every period_us on `cpu` and its callback spins len_us. Anything
 * due on that CPU meanwhile (other timers, wakeups, scheduling) waits:
 * the latency shows up before the victim's wakeup (IRQ delay), and the
 * hrtimer callback rtsfi_hardirq_fn is what ran instead.
 *
 * HRTIMER_MODE_*_HARD matters on PREEMPT_RT, where timers without it
 * expire in softirq context (a thread) instead of hard IRQ.
 */
#include <linux/hrtimer.h>
#include <linux/smp.h>
#include "rtsfi.h"

static struct hrtimer timer;

static enum hrtimer_restart rtsfi_hardirq_fn(struct hrtimer *t)
{
	rtsfi_busy_ns((u64)len_us * NSEC_PER_USEC);
	WRITE_ONCE(fired, fired + 1);
	hrtimer_forward_now(t, ns_to_ktime((u64)period_us * NSEC_PER_USEC));
	return HRTIMER_RESTART;
}

/* Runs on the target CPU (IPI): a pinned timer stays on the CPU that armed it. */
static void start_on_cpu(void *unused)
{
	hrtimer_start(&timer, ns_to_ktime((u64)period_us * NSEC_PER_USEC),
		      HRTIMER_MODE_REL_PINNED_HARD);
}

static int __init rtsfi_hardirq_init(void)
{
	int err = rtsfi_check_params();

	if (err)
		return err;
	hrtimer_init(&timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
	timer.function = rtsfi_hardirq_fn;
	err = smp_call_function_single(cpu, start_on_cpu, NULL, 1);
	if (err)
		return err;
	pr_info("hard-IRQ busy loop of %u us every %u us on cpu %u\n",
		len_us, period_us, cpu);
	return 0;
}

static void __exit rtsfi_hardirq_exit(void)
{
	hrtimer_cancel(&timer);
	pr_info("stopped after %lu injections\n", fired);
}

module_init(rtsfi_hardirq_init);
module_exit(rtsfi_hardirq_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rtscope fault injection: hard-IRQ busy loop from an hrtimer");
