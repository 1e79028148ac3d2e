/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kthread shared by rtsfi_preemptoff and rtsfi_irqoff: bound to `cpu`,
 * SCHED_OTHER (so that any RT task should preempt it at once), it runs
 * rtsfi_section() every period_us and sleeps in between. The including
 * module defines rtsfi_section() and RTSFI_NAME.
 */
#include <linux/kthread.h>
#include <linux/delay.h>
#include <linux/sched.h>
#include "rtsfi.h"

static void rtsfi_section(void);

static struct task_struct *worker;

static int rtsfi_worker(void *unused)
{
	while (!kthread_should_stop()) {
		rtsfi_section();
		WRITE_ONCE(fired, fired + 1);
		/* Sleep the rest of the period (an hrtimer sleep). */
		usleep_range(period_us - len_us, period_us - len_us + 50);
	}
	return 0;
}

static int __init rtsfi_kthread_init(void)
{
	int err = rtsfi_check_params();

	if (err)
		return err;
	worker = kthread_create_on_cpu(rtsfi_worker, NULL, cpu, RTSFI_NAME "/%u");
	if (IS_ERR(worker))
		return PTR_ERR(worker);
	wake_up_process(worker);
	pr_info("%u us section every %u us on cpu %u\n", len_us, period_us, cpu);
	return 0;
}

static void __exit rtsfi_kthread_exit(void)
{
	kthread_stop(worker);
	pr_info("stopped after %lu injections\n", fired);
}

module_init(rtsfi_kthread_init);
module_exit(rtsfi_kthread_exit);
MODULE_LICENSE("GPL");
