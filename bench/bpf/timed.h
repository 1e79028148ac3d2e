/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Benchmark instrumentation, for `make bench` only: included first by a copy
 * of bpf/rtscope.bpf.c (mk/bench.mk builds that copy), it wraps every
 * BPF_PROG program so that each run is timed with two bpf_ktime_get_ns()
 * calls, kept per CPU in bench_timed under the line of the BPF_PROG: the
 * maximum, count, sum, and how many runs took at least 128 << i ns. Kernel
 * BPF statistics give run time and count only, never a maximum.
 * bench/timed.go builds the same record in assembly for the floor.
 */
#ifndef RTSCOPE_BENCH_TIMED_H
#define RTSCOPE_BENCH_TIMED_H

#include "headers/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define BENCH_THRESHOLDS 10

struct bench_timing {
	__u64 max;
	__u64 count;
	__u64 sum;
	__u64 ge[BENCH_THRESHOLDS]; /* runs of at least 128 << i ns */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct bench_timing);
} bench_timed SEC(".maps");

static __always_inline void bench_record(__u32 line, __u64 d)
{
	struct bench_timing *t = bpf_map_lookup_elem(&bench_timed, &line);
	if (!t)
		return;
	if (d > t->max)
		t->max = d;
	t->count++;
	t->sum += d;
	for (int i = 0; i < BENCH_THRESHOLDS; i++)
		if (d >= (128ULL << i))
			t->ge[i]++;
}

#undef BPF_PROG
#define BPF_PROG(name, args...)							\
name(unsigned long long *ctx);							\
static __always_inline typeof(name(0))						\
____##name(unsigned long long *ctx, ##args);					\
typeof(name(0)) name(unsigned long long *ctx)					\
{										\
	__u64 ___t0 = bpf_ktime_get_ns();					\
	_Pragma("GCC diagnostic push")						\
	_Pragma("GCC diagnostic ignored \"-Wint-conversion\"")			\
	typeof(name(0)) ___r = ____##name(___bpf_ctx_cast(args));		\
	_Pragma("GCC diagnostic pop")						\
	bench_record(__LINE__, bpf_ktime_get_ns() - ___t0);			\
	return ___r;								\
}										\
static __always_inline typeof(name(0))						\
____##name(unsigned long long *ctx, ##args)

#endif
