/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The per-task statistics hash (key: tracking id), shared by the watch
 * engine (maps.bpf.h) and timerlat (timerlat.bpf.c), whose loader passes
 * it the engine's map: one definition, so that the two cannot differ.
 * Sizes are set at load from the engine's configuration.
 */
#ifndef RTSCOPE_STATS_MAP_BPF_H
#define RTSCOPE_STATS_MAP_BPF_H

#include "rtscope.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	/*
	 * Tasks tracked at once (exited ones until user space reads them, one
	 * poll): the kernel allocates a 16-byte bucket per entry up front, so
	 * 16384 took 256 KiB of the 2 MiB budget of issue 12; 4096 take 64.
	 */
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct rts_task_stats);
} stats SEC(".maps");

#endif
