/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sleep reasons: why a tracked task blocks, named at every blocking sleep
 * without a stack map. The loader resolves a fixed list of kernel functions
 * (internal/engine/sleepreason.go) to address ranges once, from kallsyms,
 * and writes them here sorted; at a sleep the programs walk RTS_SLEEP_FRAMES
 * kernel frames into a buffer (bpf_get_stack: no hashing, no stack map
 * slot) and look each return address up by binary search. Classifying a
 * call site is thus done once per kernel function, at load, and costs a
 * few compares per frame at run time.
 */
#ifndef RTSCOPE_SLEEP_REASON_BPF_H
#define RTSCOPE_SLEEP_REASON_BPF_H

#include "rtscope.h"

/* [sleep_fn_lo[i], sleep_fn_hi[i]) is a kernel function of class sleep_fn_class[i], sorted by lo. */
const volatile __u32 sleep_fn_count = 0;
const volatile __u64 sleep_fn_lo[RTS_SLEEP_FNS];
const volatile __u64 sleep_fn_hi[RTS_SLEEP_FNS];
const volatile __u8 sleep_fn_class[RTS_SLEEP_FNS];

/*
 * The class of the table function containing addr, RTS_SR_NONE when none
 * does. A global (not static) function: the verifier checks it once, on its
 * own, instead of every path of the search at each of the frames.
 */
__attribute__((noinline)) __u32 rts_sleep_fn_class(__u64 addr)
{
	__u32 lo = 0, hi = sleep_fn_count;
	if (hi > RTS_SLEEP_FNS)
		hi = RTS_SLEEP_FNS;
	/* lo ends as the number of entries starting at or below addr: 8 steps cover 128. */
	for (int k = 0; k < 8; k++) {
		if (lo >= hi)
			break;
		__u32 mid = (lo + hi) / 2;
		if (sleep_fn_lo[mid & (RTS_SLEEP_FNS - 1)] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return RTS_SR_NONE;
	__u32 i = (lo - 1) & (RTS_SLEEP_FNS - 1);
	return addr < sleep_fn_hi[i] ? sleep_fn_class[i] : RTS_SR_NONE;
}

/* Classes that a page fault further down the stack explains better. */
static __always_inline bool rts_sleep_weak(__u32 c)
{
	return c == RTS_SR_IO || c == RTS_SR_RWSEM || c == RTS_SR_MUTEX;
}

/*
 * Classify a sleep from its kernel frames (innermost first, n of them).
 * Frames before the first scheduling primitive (the BPF program and the
 * tracepoint) are skipped; the first frame past the primitives that has a
 * class gives the reason, a page fault deeper down overriding an I/O or lock
 * wait. *site is the return address that told (for RTS_SR_OTHER: the first
 * frame past the primitives, which user space names).
 */
static __always_inline __u32 rts_sleep_reason(const __u64 *frames, int n, __u64 *site)
{
	bool past = false;
	__u32 found = RTS_SR_NONE;
	*site = 0;
	for (int i = 0; i < RTS_SLEEP_FRAMES; i++) {
		if (i >= n)
			break;
		__u64 a = frames[i];
		__u32 c = rts_sleep_fn_class(a);
		if (c == RTS_SR_WAIT) {
			past = true;
			continue;
		}
		if (!past)
			continue;
		if (c == RTS_SR_PAGE_FAULT && (found == RTS_SR_NONE || rts_sleep_weak(found))) {
			*site = a;
			return c;
		}
		if (c != RTS_SR_NONE && found == RTS_SR_NONE) {
			found = c;
			*site = a;
			if (!rts_sleep_weak(c))
				return c;
		}
		if (!*site)
			*site = a;
	}
	if (found != RTS_SR_NONE)
		return found;
	return past ? RTS_SR_OTHER : RTS_SR_NONE;
}

/*
 * Name the reason of a sleep that starts now into its RTS_EV_SLEEP event
 * (flags = enum rts_sleep_reason, y = the telling return address). Nothing
 * is done when the table is empty (kallsyms hidden).
 *
 * Cost (BenchmarkSleepReasonCost, BPF_PROG_TEST_RUN on this 2-vCPU VM,
 * medians): about 2.0-2.9 us per blocking sleep, as much as the full stack
 * sample (bpf_get_stackid, 2.5-2.8 us) that used to be rate-limited to one a
 * ms. The unwinder's set-up dominates: a 4-frame walk alone costs 1.3-2.1
 * us, the 16 table searches 0.25-0.45 us (fewer in practice: the walk stops
 * at the first reason, 5-7 frames from the tracepoint). Only blocking
 * sleeps pay it, once per activation of the task; timer sleeps, the
 * periodic loop's usual path, pay nothing. A cache keyed by call site could
 * not skip the walk, which is what finds the call site. Watching the
 * pipe-write scenario (330 blocking writes a second), on_sched_switch
 * averaged 725-839 ns a run against 539-660 ns before (bpf_stats).
 */
static __always_inline void rts_sleep_classify(void *ctx, struct rts_event *e)
{
	if (!sleep_fn_count)
		return;
	__u64 frames[RTS_SLEEP_FRAMES];
	long n = bpf_get_stack(ctx, frames, sizeof(frames), 0);
	if (n <= 0)
		return;
	__u64 site = 0;
	e->flags = (__u8)rts_sleep_reason(frames, (int)(n / 8), &site);
	e->y = site;
}

#endif
