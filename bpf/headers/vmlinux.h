/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal, architecture-neutral kernel type definitions for rtscope's BPF
 * programs. Every struct carries preserve_access_index, so field offsets are
 * relocated against the running kernel's BTF (CO-RE): only the fields rtscope
 * reads are declared, and their order here does not matter.
 */
#ifndef RTSCOPE_VMLINUX_H
#define RTSCOPE_VMLINUX_H

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef _Bool bool;
typedef __s64 ktime_t;
typedef __u32 __wsum;
typedef __u16 __be16;
typedef __u32 __be32;
typedef int pid_t;
enum { false = 0, true = 1 };

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct cpumask {
	unsigned long bits[1];
};

struct thread_info {
	u32 cpu;
};

/* Hypervisor steal time as the scheduler accounts it (see rts_steal_ns). */
struct rq {
	u64 prev_steal_time_rq;
	u64 clock; /* the clock of DEADLINE deadlines (rq_clock) */
};

/* A SCHED_DEADLINE task's reservation (deadline.bpf.h). */
struct sched_dl_entity {
	u64 dl_runtime;
	u64 dl_deadline;
	u64 dl_period;
	s64 runtime;
	u64 deadline;
	unsigned int flags; /* followed by the bits dl_throttled, dl_yielded, ... */
};

struct cfs_rq {
	struct rq *rq;
};

struct sched_entity {
	struct cfs_rq *cfs_rq;
};

struct kernfs_node {
	u64 id;
};

struct cgroup_subsys_state {
	struct cgroup_subsys_state *parent;
};

struct cgroup {
	struct cgroup_subsys_state self;
	int level;
	struct kernfs_node *kn;
};

struct css_set {
	struct cgroup *dfl_cgrp;
};

/* Memory locking of an address space (see rtscope.bpf.c mem_locked). */
struct mm_struct {
	unsigned long def_flags;
	unsigned long locked_vm;
};

struct bpf_local_storage;

struct task_struct {
	struct thread_info thread_info;
	struct sched_entity se;
	struct sched_dl_entity dl;
	unsigned int __state;
	int on_cpu;
	int prio;
	int static_prio;
	int normal_prio;
	unsigned int policy;
	unsigned int rt_priority;
	int nr_cpus_allowed;
	struct cpumask cpus_mask;
	pid_t pid;
	pid_t tgid;
	u64 start_time;
	char comm[16];
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	unsigned int flags;
	struct css_set *cgroups;
	unsigned long min_flt;
	unsigned long maj_flt;
	struct mm_struct *mm;
	struct bpf_local_storage *bpf_storage;
};

struct hrtimer_clock_base {
	int clockid;
	ktime_t offset;
};

struct timerqueue_node {
	ktime_t expires;
};

struct hrtimer;
typedef int (*hrtimer_fn)(struct hrtimer *);

struct hrtimer {
	struct timerqueue_node node;
	ktime_t _softexpires;
	hrtimer_fn function;
	struct hrtimer_clock_base *base;
	u8 is_soft;
	u8 is_hard;
};

struct hrtimer_sleeper {
	struct hrtimer timer;
	struct task_struct *task;
};

struct irqaction {
	unsigned int irq;
	const char *name;
	struct task_struct *thread;
};

struct irq_desc;

struct linux_binprm;

struct bpf_iter_meta {
	void *seq;
	u64 session_id;
	u64 seq_num;
};

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
};

#pragma clang attribute pop

enum bpf_map_type {
	BPF_MAP_TYPE_UNSPEC = 0,
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_HASH = 5,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_STACK_TRACE = 7,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
	BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
	BPF_F_NO_PREALLOC = 1U << 0,
	BPF_F_MMAPABLE = 1U << 10,
	BPF_F_REUSE_STACKID = 1ULL << 10,
	BPF_LOCAL_STORAGE_GET_F_CREATE = 1ULL << 0,
	BPF_RB_NO_WAKEUP = 1ULL << 0,
};

#endif
