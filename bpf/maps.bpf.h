/* SPDX-License-Identifier: GPL-2.0 */
/* Maps and load-time settings of the engine, shared by its programs and their test twins. */
#ifndef RTSCOPE_MAPS_BPF_H
#define RTSCOPE_MAPS_BPF_H

#include "rtscope.h"
#include "stats_map.bpf.h"

/* Settings, written by user space before load (CollectionSpec.Variables). */
const volatile bool trace_enabled = true; /* flight recorder and new-max notices */
/*
 * SLO-violation notices (rate-limited, RTS_VIOL_NOTICE_GAP_NS): always with
 * the flight recorder (their windows are explained); without it only for
 * on-threshold actions, which would otherwise never hear of a violation.
 */
const volatile bool violation_notices = true;
const volatile bool sleep_stacks = true; /* kernel stack of each tracked sleep */
/* The kernel has bpf_map_lookup_percpu_elem (5.19+; compat.bpf.h). */
const volatile bool waiter_stacks = true;
/*
 * The kernel stack of what runs instead of a waiting tracked task is taken
 * only once the task has waited this long (ns since its timer expired, or
 * since its wakeup): the walk runs before the task can, and costs it 1 to
 * 20 us (20 us with cold caches on a VM), which on-time releases must not pay.
 */
const volatile __u64 stack_min_wait_ns = 0;
/*
 * The samples a tracked task earns on its way to its CPU (its wakeup, its
 * switch-in, its return to user space) wait in its task state until it
 * leaves the CPU (rts_hold, rts_settle): the statistics lookup and the
 * histogram lines they touch are then off the path its own latency is
 * measured on. False where nothing could settle them at the end of a run
 * (the classic engine without bpf_for_each_map_elem): recorded at once.
 */
const volatile bool hold_samples = true;
const volatile __u32 flight_per_cpu = 8192;    /* set by the loader: engine.DefaultFlightPerCPU, or --trace-events */
const volatile __u64 hrtimer_wakeup_fn = 0;    /* address of hrtimer_wakeup() */
const volatile __u64 slo_default[RTS_M_COUNT]; /* SLO bounds for every target, ns */
/*
 * The start-up of each tracked task, whose samples are left out of its
 * metrics. RTS_WARM_UP_DETECT (the default): detected, its loop metrics
 * count once its period settles (rts_period_seen); else --warm-up: every
 * sample in its first warm_up_ns after tracking (0: none left out).
 */
#define RTS_WARM_UP_DETECT (~0ULL)
const volatile __u64 warm_up_ns = RTS_WARM_UP_DETECT;
/* Tests only: the first N task-storage creations of track() fail as if busy. */
const volatile __u32 test_storage_busy = 0;
__u32 test_storage_busy_done = 0;
/* Tests only: the first N statistics insertions fail as if out of memory. */
const volatile __u32 test_stats_nomem = 0;
__u32 test_stats_nomem_done = 0;

/* Last tracking id handed out; ids are never reused. */
__u64 next_id = 0;

/* A sample held in its task's state (rts_hold): rts_record's arguments. */
struct rts_held_sample {
	__u64 value;
	__u64 start;
	__u64 end;
	__u32 cpu_start;
	__u32 cpu;
};

/* Held samples are kept by metric, below this one (every metric but response is held). */
#define RTS_HELD_MAX 8

/*
 * A noise interval being built (noise.bpf.h): of the task current on a CPU
 * (struct rts_noise_cpu), or of a task off its CPU while runnable (its
 * task state).
 */
struct rts_noise_iv {
	__u64 start;  /* 0: none */
	__u64 end;    /* its end so far */
	__u64 top_ns; /* its largest part */
	__u32 top_who;
	__u32 cpu_start;
	__u8 top_cause; /* enum rts_noise_cause */
	__u8 sums;      /* 1 << (cause - 1): cause_ns and cause_parts hold a value (else 0, unwritten) */
	__u16 mask;     /* 1 << cause of each of its parts */
	__u8 pad[4];
	/*
	 * Its parts by cause - 1: their number and own time (rts_noise_sum),
	 * for its task's stats. Valid by the bits of sums, so that opening an
	 * interval clears one byte and carrying one with no parts off and onto
	 * a CPU copies 40 bytes, not 136 (rts_noise_copy).
	 */
	__u64 cause_ns[RTS_NOISE_CAUSES];
	__u32 cause_parts[RTS_NOISE_CAUSES];
};

/* Hot per-task state of the state machine; see task_logic.bpf.h. */
/* A DEADLINE task's sched_dl_entity as read at a switch (deadline.bpf.h). */
struct rts_dl_view {
	__u64 rq_now;   /* this CPU's rq clock, the clock of deadline */
	__u64 deadline; /* the absolute deadline of its current instance */
	__s64 runtime;  /* runtime left in it */
	__u64 dl_runtime, dl_deadline, dl_period;
	__u8 throttled, yielded;
	__u8 pad[6];
};

/* A DEADLINE task's current job (deadline.bpf.h). Times CLOCK_MONOTONIC. */
struct rts_dl_job {
	__u64 deadline_rq;  /* the absolute deadline it was released with, rq clock */
	__u64 abs_deadline; /* the same, CLOCK_MONOTONIC */
	__u64 release;      /* 0: no job open */
	__u64 first;        /* its first switch-in */
	__u64 exec;         /* on-CPU time so far */
	__u64 in;           /* the current run's switch-in, 0: off CPU */
	__u64 last_out;     /* its last switch-out */
	__u64 prev_release; /* the previous job's release: the period */
	__u32 cpu;          /* where it was released (woken), else first ran */
	__u32 first_cpu;
	__u32 last_out_cpu;
	__u8 slept; /* its last switch-out was a sleep */
	__u8 pad[3];
	struct rts_held_sample rec; /* the sample rts_dl_record records */
};

struct rts_task_state {
	__u64 id;
	__u32 tid;
	__u32 flags;          /* RTS_TF_* inherited by children */
	__s32 prio;           /* kernel prio, refreshed at switch-in */
	__u8 state;           /* RTS_TS_* */
	__u8 release_pending; /* a timer release awaits its thread/user samples */
	__u8 held_wakeups;    /* wakeups not yet in its stats' wakeups (rts_settle) */
	__u8 in_handler;
	__u32 cpu;         /* CPU of the last switch-in */
	__u32 wake_cpu;    /* CPU where the last wakeup ran */
	__u32 release_cpu; /* CPU of the timer callback of the pending release */
	__u32 handler_irq;
	__u64 wake_ts;     /* start of the current wakeup latency window */
	__u64 resp_start;  /* start of the current response window, 0: none */
	__u64 sleep_ts;    /* last voluntary switch-out */
	__u64 cycle_start; /* last timer wakeup, 0: none yet */
	__u32 cycle_cpu;
	__u32 sched_key;      /* rts_sched_key of its identity last seen, 0: none */
	__u64 last_expiry;    /* expiry of the previous timer release */
	__u64 nominal_period; /* its period, 0: not periodic (rts_period_seen) */
	/* The candidate period: the sum and number of the regular spacings since it began */
	__u64 per_sum;
	__u32 per_n;
	__u8 per_streak;      /* spacings in a row near the candidate (saturates) */
	__u8 per_miss;        /* irregular spacings in a row of a periodic task */
	__u8 per_seen;        /* spacings seen in its start-up (saturates) */
	__u8 settled;         /* its start-up is over: its loop metrics count */
	__u8 per_src;         /* RTS_PSRC_*: the releases its candidate period is of */
	__u64 warm_until;     /* --warm-up: nothing before this counts (0: detect the start-up) */
	__u64 settled_at;     /* when its start-up ended (0: not yet) */
	__u64 tracked_at;     /* when its tracking began */
	__u64 sched_since;    /* when it took its current identity (rts_sched_seen) */
	__u64 release_expiry; /* expiry of the pending timer release */
	__u64 pending_ts;     /* wakeup seen while still on CPU (wakeup/switch race) */
	__u64 pending_expiry;
	__u64 pending_cb_entry;
	__u32 pending_cpu;
	__u32 pad2;
	__u64 armed_expiry; /* sleeper timer armed by the task itself */
	__u64 handler_start;
	__u64 handler_irq_ns; /* CPU's IRQ+softirq time at handler entry */
	__u64 run_start;      /* last switch-in */
	__u64 run_irq_ns;     /* CPU's IRQ+softirq time at that switch-in */
	__u64 oncpu;          /* on-CPU time of the current activation, IRQs removed */
	__u8 fentry_seen;     /* handler measured by fentry/fexit: skip the scheduler-based one */
	__s32 waiting_cpu;    /* CPU whose waiting_tid names this task, -1: none */
	__u64 last_stack;     /* time of its last sleep stack (rate limit) */
	__u64 viol_notice_ts; /* end of the window of its last SLO-violation notice */
	/* Its own sleeper timer's last arming (rts_on_timer_arm): the loop's iterations. */
	__u64 arm_ts;  /* when: the start of the current iteration, 0: never armed */
	__u64 arm_key; /* its expiry in the timer's own clock */
	__u32 arm_cpu;
	__u32 pad_arm;
	__u64 flt_min; /* its min_flt/maj_flt at its last switch-out (or tracking) */
	__u64 flt_maj;
	__u8 mem_state; /* RTS_MEM_*: its memory locking, as last read */
	/*
	 * Its last sleep was on a lock (rts_sleep_on_lock): a lower-priority
	 * task that wakes it there is the owner handing the lock over, not a
	 * producer it depends on (no hygiene count).
	 */
	__u8 lock_sleep;
	__u16 own_seq; /* the own number of its last event (rts_own_seq) */
	/* What it holds back for its stats until rts_settle (hold_samples). */
	__u8 held_mask;        /* 1 << metric: held_samples[metric] is held */
	__u8 held_releases;    /* timer releases not yet counted */
	__u8 held_overruns;    /* overruns counted at a timer release */
	__u8 held_lower_waker; /* wakeups by a task of lower priority */
	__u8 identity_due;     /* a wakeup ended: refresh its identity at its switch-out */
	struct rts_held_sample held_samples[RTS_HELD_MAX];
	__u8 dl_valid; /* dl_view was read at this switch: a DEADLINE task */
	struct rts_dl_view dl_view;
	struct rts_dl_job dl_job;
	/* Off its CPU while runnable since nz_off (0: not): the noise interval it is in (noise.bpf.h). */
	struct rts_noise_iv nz;
	__u64 nz_off;
	__u32 nz_who;  /* the task it left its CPU for */
	__u8 nz_cause; /* RTS_NC_PREEMPT or RTS_NC_THROTTLE */
	__u8 pad_nz;
	__u16 nz_cpu; /* the CPU it left */
	__u64 nz_low; /* that CPU's low_ns then (struct rts_noise_cpu) */
};

/* A zeroed task state to create hash-kept ones from (the classic engine,
 * the twins): with its held samples it outgrows the 512-byte stack. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rts_task_state);
} task_state_zero SEC(".maps");

/* A zeroed value to create stats entries from (no 10 KiB stack buffer). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rts_task_stats);
} stats_zero SEC(".maps");

/*
 * Per-target SLO bounds, by tid or pid (tgid): overrides slo_default. Key
 * RTS_SLO_DEFAULT_KEY (0: no tracked task has tid or pid 0) holds the
 * default bounds set at run time; once written it replaces slo_default,
 * which is read-only after load.
 */
#define RTS_SLO_DEFAULT_KEY 0
struct rts_slo {
	__u64 bound[RTS_M_COUNT];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct rts_slo);
} slo_by_id SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rts_cpu_state);
} cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RTS_C_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Flight recorder: flight_per_cpu events per possible CPU, mmapped by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* sized by user space */
	__type(key, __u32);
	__type(value, struct rts_event);
} flight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	/*
	 * ~2300 notices between two polls (10 ms): 1000 tracked threads
	 * registered at once fit. 256 KiB took an eighth of the 2 MiB budget
	 * of issue 12; a full ring counts its losses (lost notices).
	 */
	__uint(max_entries, 128 * 1024);
} notices SEC(".maps");

/*
 * Kernel stacks of sleeps and of blocking threads. A bucket collision
 * replaces the older stack (BPF_F_REUSE_STACKID): user space resolves ids
 * within one poll period, long before a collision is likely to hit them.
 */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 512);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, RTS_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

/* What to track: by tid, by process (tgid), by name. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct rts_target);
} want_tid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct rts_target);
} want_tgid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 256);
	__type(key, char[RTS_COMM_LEN]);
	__type(value, struct rts_target);
} want_comm SEC(".maps");

/*
 * By cgroup v2 id (the directory's inode number): a task in the cgroup or
 * below it. Only the BTF engine reads it (the classic one cannot tell a
 * task's cgroup); defined here so that both engines have the same maps.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, struct rts_target);
} want_cgroup SEC(".maps");

/*
 * Tasks to track whose task storage could not be created (busy, see
 * rts_storage_busy in compat.bpf.h): tracking is retried when they are next
 * switched in. Preallocated: it is written from tracing programs.
 * track_retry_pending counts its entries, so that the scheduler hot path
 * pays one load while it is empty.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256); /* preallocated: 256 entries take 21 KiB, 1024 took 83 */
	__type(key, __u32);
	__type(value, struct rts_target);
} track_retry SEC(".maps");

__u32 track_retry_pending = 0;

static __always_inline void rts_count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &c);
	if (v)
		*v += 1;
}

static __always_inline struct rts_cpu_state *rts_cpu(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&cpus, &zero);
}

/*
 * Reserve the next slot of this CPU's flight recorder ring and fill its
 * header. irqs_off: the caller runs with interrupts disabled on this CPU
 * (sched_switch, or sched_waking of another task: try_to_wake_up holds
 * p->pi_lock with irqsave), so no other program of this engine can run
 * between the load and the store of the sequence number (none runs in
 * NMI context), and a plain increment takes it. Else it is taken
 * atomically: a program in IRQ context may interrupt one in task context
 * on the same CPU. The atomic is a locked instruction, which waits for the
 * stores before it (the previous event's, to a ring line not in the cache
 * for 8192 events): under stress-ng --switch with its tasks tracked, where
 * a switch writes two events (sleep and switch), sched_switch took 309 ns
 * a run against 322 with the atomic (bench cost phase, 8 interleaved runs,
 * 2026-11-28); with no atomic anywhere, 344 against 369.
 */
static __always_inline struct rts_event *rts_flight_slot(struct rts_cpu_state *cs, __u32 cpu,
							 __u64 now, __u8 type, bool irqs_off)
{
	if (!trace_enabled || !cs)
		return 0;
	__u64 seq;
	if (irqs_off) {
		seq = cs->seq;
		cs->seq = seq + 1;
	} else {
		seq = __sync_fetch_and_add(&cs->seq, 1);
	}
	__u32 idx = cpu * flight_per_cpu + ((__u32)seq & (flight_per_cpu - 1));
	struct rts_event *e = bpf_map_lookup_elem(&flight, &idx);
	if (!e)
		return 0;
	e->ts = now;
	e->seq = (__u32)seq;
	e->cpu = cpu;
	e->type = type;
	e->flags = 0;
	e->own = 0;
	return e;
}

/* rts_flight_slot from any context: the sequence number taken atomically. */
static __always_inline struct rts_event *rts_flight(struct rts_cpu_state *cs, __u32 cpu,
						    __u64 now, __u8 type)
{
	return rts_flight_slot(cs, cpu, now, type, false);
}

/*
 * Number the next event of tracked task st's own (rts_event.own): user
 * space tells from a gap in the numbers whether a ring that lapped
 * before it was read held any of them, and keeps the task's traces whole
 * when not (a gap of the rings alone made every window open across it
 * truncated: up to 35 at 1000 tracked threads). 0 is skipped: it means
 * "none". Not atomic: a wakeup on another CPU racing the task's own
 * event can give two events one number, which reads as whole, never as
 * a gap.
 */
static __always_inline __u16 rts_own_seq(struct rts_task_state *st)
{
	__u16 s = st->own_seq + 1;
	s += !s;
	st->own_seq = s;
	return s;
}

/*
 * Record hypervisor steal of this CPU when it grew since the previous
 * reading: the event says how much time between the two readings the vCPU
 * was not running, which the analysis charges to the hypervisor instead of
 * whatever was current (a stall looks like an IRQs-off section, a slow
 * callback or an idle exit otherwise). Unchanged steal costs no event.
 */
static __always_inline void rts_steal_update(struct rts_cpu_state *cs, __u32 cpu, __u64 now,
					     __u64 steal)
{
	if (!trace_enabled || !cs)
		return;
	if (steal != cs->steal_seen && cs->steal_read_at && steal > cs->steal_seen) {
		struct rts_event *e = rts_flight(cs, cpu, now, RTS_EV_STEAL);
		if (e) {
			e->x = steal - cs->steal_seen;
			e->y = cs->steal_read_at;
		}
	}
	cs->steal_seen = steal;
	cs->steal_read_at = now;
}

#endif
