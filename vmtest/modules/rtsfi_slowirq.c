// SPDX-License-Identifier: GPL-2.0
/*
 * rtsfi_slowirq: a slow threaded IRQ handler on a real interrupt line.
 *
 * How the interrupts are made: the module creates a one-line IRQ domain
 * whose chip is dummy_irq_chip (what CONFIG_IRQ_SIM does; Debian's kernels
 * do not build IRQ_SIM) and maps it to a Linux IRQ number. A pinned hard
 * hrtimer fires every period_us on `cpu` and raises that IRQ with
 * generic_handle_domain_irq() from hard-IRQ context, exactly as a chained
 * interrupt controller does. Everything after the chip is the genuine
 * genirq path: the IRQ descriptor and its /proc/interrupts count,
 * irq_default_primary_handler returning IRQ_WAKE_THREAD, the IRQ thread
 * "irq/N-slowirq" (SCHED_FIFO 50) and irq_thread_fn() calling our
 * thread function, which spins len_us.
 *
 * IRQF_ONESHOT keeps the line masked until the thread is done and, being
 * explicitly threaded, the handler is not force-threaded again: on both
 * standard and PREEMPT_RT kernels the slow part runs in irq/N-slowirq.
 */
#include <linux/hrtimer.h>
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <linux/irqdomain.h>
#include <linux/smp.h>
#include "rtsfi.h"

static struct irq_domain *domain;
static unsigned int virq;
static struct hrtimer timer;

static unsigned int irq;
module_param(irq, uint, 0444);
MODULE_PARM_DESC(irq, "Linux IRQ number of the simulated line (read-only)");

static int rtsfi_map(struct irq_domain *d, unsigned int v, irq_hw_number_t hw)
{
	irq_set_chip_and_handler(v, &dummy_irq_chip, handle_simple_irq);
	irq_set_noprobe(v);
	return 0;
}

static const struct irq_domain_ops rtsfi_domain_ops = {
	.map = rtsfi_map,
	.xlate = irq_domain_xlate_onecell,
};

static irqreturn_t rtsfi_slow_thread_fn(int irq, void *dev)
{
	rtsfi_busy_ns((u64)len_us * NSEC_PER_USEC);
	WRITE_ONCE(fired, fired + 1);
	return IRQ_HANDLED;
}

/* The "device": raises the line from hard-IRQ context. */
static enum hrtimer_restart rtsfi_raise_fn(struct hrtimer *t)
{
	generic_handle_domain_irq(domain, 0);
	hrtimer_forward_now(t, ns_to_ktime((u64)period_us * NSEC_PER_USEC));
	return HRTIMER_RESTART;
}

static void start_on_cpu(void *unused)
{
	hrtimer_start(&timer, ns_to_ktime((u64)period_us * NSEC_PER_USEC),
		      HRTIMER_MODE_REL_PINNED_HARD);
}

static int __init rtsfi_slowirq_init(void)
{
	int err = rtsfi_check_params();

	if (err)
		return err;
	domain = irq_domain_create_linear(NULL, 1, &rtsfi_domain_ops, NULL);
	if (!domain)
		return -ENOMEM;
	virq = irq_create_mapping(domain, 0);
	if (!virq) {
		err = -ENXIO;
		goto out_domain;
	}
	err = request_threaded_irq(virq, NULL, rtsfi_slow_thread_fn,
				   IRQF_ONESHOT, "slowirq", &domain);
	if (err)
		goto out_mapping;
	irq = virq;

	hrtimer_init(&timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
	timer.function = rtsfi_raise_fn;
	err = smp_call_function_single(cpu, start_on_cpu, NULL, 1);
	if (err)
		goto out_irq;
	pr_info("irq %u: threaded handler of %u us every %u us, raised on cpu %u\n",
		virq, len_us, period_us, cpu);
	return 0;

out_irq:
	free_irq(virq, &domain);
out_mapping:
	irq_dispose_mapping(virq);
out_domain:
	irq_domain_remove(domain);
	return err;
}

static void __exit rtsfi_slowirq_exit(void)
{
	hrtimer_cancel(&timer);
	free_irq(virq, &domain);
	irq_dispose_mapping(virq);
	irq_domain_remove(domain);
	pr_info("stopped after %lu handler runs\n", fired);
}

module_init(rtsfi_slowirq_init);
module_exit(rtsfi_slowirq_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rtscope fault injection: slow threaded IRQ handler");
