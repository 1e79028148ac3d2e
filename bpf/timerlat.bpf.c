// SPDX-License-Identifier: GPL-2.0
/*
 * Per-sample stream of `rtscope timerlat`: no measurement of its own.
 *
 * The engine (rtscope.bpf.c) measures every timer release of a tracked
 * thread and keeps, per metric, a count and the latest sample (`last`) in its
 * `stats` map, which this object shares (user space passes the engine's map
 * at load). When a measuring thread arms its next sleep, the previous
 * release is complete (IRQ at the timer callback, thread at switch-in, user
 * at the return from hrtimer_nanosleep): this program copies the three
 * latest values and their counts into a ring buffer, so user space gets
 * every sample exactly (rtla's 1 us histograms) instead of the engine's
 * log-linear buckets. User space checks the counts to tell complete samples
 * from lost ones.
 */
#include "headers/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "rtscope.h"

char LICENSE[] SEC("license") = "GPL";

/* Address of hrtimer_wakeup(): only sleeper timers end a sample. */
const volatile __u64 tl_hrtimer_wakeup = 0;

/* Value of tl_threads (key: tid of a measuring thread). */
struct tl_thread {
	__u64 stats_id;       /* the engine's tracking id of the thread */
	__u64 last_irq_count; /* IRQ sample count at the last copy */
	__u32 cpu;            /* measured CPU */
	__u32 pad;
};

/* One sample: contexts in the order IRQ, thread, user. */
struct tl_sample {
	__u32 cpu;
	__u32 tid;
	__u64 count[3]; /* the engine's sample counts */
	__u64 value[3]; /* latest latency, ns */
	__u64 end[3];   /* when it was taken (CLOCK_MONOTONIC) */
};

/* The engine's stats map; sizes are copied from the engine's map at load. */
#include "stats_map.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct tl_thread);
} tl_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024); /* sized by user space */
} tl_samples SEC(".maps");

/* Samples dropped because the ring was full, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tl_lost SEC(".maps");

static __always_inline void copy_metric(struct tl_sample *o, int i, struct rts_metric_stats *m)
{
	o->count[i] = m->count;
	o->value[i] = m->last;
	o->end[i] = m->last_end;
}

/* Offset of the function field in the hrtimer_start record (classic engine; tracefs). */
const volatile __u32 tl_off_function = 0;

/* A timer is armed with callback fn by the current task. */
static __always_inline int tl_on_arm(__u64 fn)
{
	if (!tl_hrtimer_wakeup || fn != tl_hrtimer_wakeup)
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct tl_thread *th = bpf_map_lookup_elem(&tl_threads, &tid);
	if (!th)
		return 0;
	struct rts_task_stats *s = bpf_map_lookup_elem(&stats, &th->stats_id);
	if (!s)
		return 0;
	/* No new release since the last copy (first sleep, restarted sleep). */
	__u64 n = s->m[RTS_M_TIMER_IRQ].count;
	if (n == th->last_irq_count)
		return 0;
	th->last_irq_count = n;

	struct tl_sample *o = bpf_ringbuf_reserve(&tl_samples, sizeof(*o), 0);
	if (!o) {
		__u32 zero = 0;
		__u64 *lost = bpf_map_lookup_elem(&tl_lost, &zero);
		if (lost)
			*lost += 1;
		return 0;
	}
	o->cpu = th->cpu;
	o->tid = tid;
	copy_metric(o, 0, &s->m[RTS_M_TIMER_IRQ]);
	copy_metric(o, 1, &s->m[RTS_M_TIMER_THREAD]);
	copy_metric(o, 2, &s->m[RTS_M_TIMER_USER]);
	/* No wakeup: user space polls, so no irq_work lands on a measured CPU. */
	bpf_ringbuf_submit(o, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tp_btf/hrtimer_start")
int BPF_PROG(tl_on_hrtimer_start, struct hrtimer *timer)
{
	return tl_on_arm((__u64)BPF_CORE_READ(timer, function));
}

/* The same without kernel BTF (the classic engine): the field from the record. */
SEC("tracepoint/timer/hrtimer_start")
int tl_on_hrtimer_start_classic(void *ctx)
{
	__u64 fn = 0;
	bpf_probe_read_kernel(&fn, sizeof(fn), ctx + tl_off_function);
	return tl_on_arm(fn);
}

struct tl_sample *tl_btf_sample __attribute__((unused));
struct tl_thread *tl_btf_thread __attribute__((unused));
