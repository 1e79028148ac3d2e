/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers of the rtscope fault-injection modules (rtsfi_*).
 *
 * Every module burns CPU for len_us microseconds once every period_us
 * microseconds on CPU `cpu`, in a different context each:
 *   rtsfi_hardirq    hard-IRQ context (an hrtimer callback)
 *   rtsfi_preemptoff a kthread with preemption disabled
 *   rtsfi_irqoff     a kthread with local interrupts disabled
 *   rtsfi_slowirq    the thread of a threaded IRQ handler
 * The rate is given as a period (rate = 1e6 / period_us per second).
 * `fired` (read-only parameter) counts the injections, so a test can check
 * that the injector really ran.
 */
#ifndef RTSFI_H
#define RTSFI_H

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/timekeeping.h>
#include <linux/cpumask.h>

static unsigned int len_us = 1000;
module_param(len_us, uint, 0444);
MODULE_PARM_DESC(len_us, "length of one injected section, microseconds");

static unsigned int period_us = 20000;
module_param(period_us, uint, 0444);
MODULE_PARM_DESC(period_us, "one injection every period_us microseconds");

static unsigned int cpu;
module_param(cpu, uint, 0444);
MODULE_PARM_DESC(cpu, "CPU the injection runs on");

static unsigned long fired;
module_param(fired, ulong, 0444);
MODULE_PARM_DESC(fired, "number of injections so far (read-only)");

/*
 * Spin for ns nanoseconds of CLOCK_MONOTONIC. The fast accessor is safe in
 * any context (hard IRQ, interrupts off) and never waits on a seqcount
 * writer, so the section lasts what it says even under emulation.
 */
static inline void rtsfi_busy_ns(u64 ns)
{
	u64 end = ktime_get_mono_fast_ns() + ns;

	while (ktime_get_mono_fast_ns() < end)
		cpu_relax();
}

/*
 * Refuse settings that would lock the CPU up: the injected section must
 * leave at least half of each period to the rest of the system.
 */
static inline int rtsfi_check_params(void)
{
	if (len_us == 0 || period_us == 0 || len_us > 100000 ||
	    2ULL * len_us > period_us) {
		pr_err("len_us must be 1..100000 and at most period_us/2\n");
		return -EINVAL;
	}
	if (cpu >= nr_cpu_ids || !cpu_online(cpu)) {
		pr_err("cpu %u is not online\n", cpu);
		return -EINVAL;
	}
	return 0;
}

#endif
