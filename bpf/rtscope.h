/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Types shared by the BPF engine and the Go user space (bpf2go generates the
 * Go mirrors). All times are nanoseconds of CLOCK_MONOTONIC (bpf_ktime_get_ns).
 */
#ifndef RTSCOPE_H
#define RTSCOPE_H

#define RTS_COMM_LEN 16
/* Frames kept of a kernel stack (the stacks map; user space reads its value size). */
#define RTS_STACK_DEPTH 32

/* Metrics, in the order of the stats array. Names live in internal/metric. */
enum rts_metric {
	RTS_M_LATENCY = 0,  /* wakeup -> running */
	RTS_M_TIMER_IRQ,    /* timer expiry -> timer callback (hard/soft IRQ) */
	RTS_M_TIMER_THREAD, /* timer expiry -> task running */
	RTS_M_TIMER_USER,   /* timer expiry -> return from the sleep syscall */
	RTS_M_RESPONSE,     /* wakeup -> first voluntary switch-out */
	RTS_M_CYCLE,        /* timer wakeup -> switch-out into the next timer sleep */
	RTS_M_PERIOD,       /* timer wakeup -> next timer wakeup */
	RTS_M_JITTER,       /* |period - spacing of its timer expiries| */
	RTS_M_HANDLER,      /* threaded IRQ handler: entry -> exit (or one activation's on-CPU time), IRQ time removed */
	RTS_M_ITERATION,    /* loop iteration: arming of its sleeper timer -> the next arming, slept or not */
	RTS_M_DL_RELEASE,   /* SCHED_DEADLINE job: release (new absolute deadline - relative deadline) -> first on a CPU */
	RTS_M_DL_EXEC,      /* SCHED_DEADLINE job: its on-CPU time */
	RTS_M_DL_RESPONSE,  /* SCHED_DEADLINE job: release -> its end (sleep, sched_yield or throttling) */
	RTS_M_NOISE,        /* one interruption of a running task: off its CPU while runnable, or its CPU serving an IRQ, softirq or the hypervisor (noise.bpf.h) */
	RTS_M_COUNT,
};

/*
 * Log-linear histogram: values below 2^RTS_HIST_MIN_SHIFT ns (1024 ns) get
 * RTS_HIST_SUB linear buckets of 128 ns; above, every power of two is split
 * in 2^RTS_HIST_SUB_BITS buckets, so a bucket spans at most 1/8 = 12.5% of
 * its lower bound. Values from 2^RTS_HIST_MAX_SHIFT ns (~17.2 s, above the
 * longest period taken, RTS_MAX_PERIOD) on share the last bucket.
 *
 * 200 buckets of 16 bits: 400 bytes a metric, where 32 bits took 800 and
 * 272 buckets 1088 (issue 12, kernel memory). A bucket that wraps sends its
 * carry (65536 samples) to user space as an RTS_N_HIST_CARRY notice, which
 * user space adds to its own count of that bucket (engine.histCarries), so
 * every count stays exact; a carry the full ring cannot take is counted in
 * hist_lost (and as a lost notice). Buckets halved together when one
 * filled were tried and dropped: every later sample then counted 2^folds
 * times, so bucket counts (Prometheus histograms) ran ahead of the samples.
 */
#define RTS_HIST_SUB_BITS 3
#define RTS_HIST_SUB (1 << RTS_HIST_SUB_BITS)
#define RTS_HIST_MIN_SHIFT 10
#define RTS_HIST_MAX_SHIFT 34
#define RTS_HIST_BUCKETS ((RTS_HIST_MAX_SHIFT - RTS_HIST_MIN_SHIFT + 1) * RTS_HIST_SUB)

struct rts_metric_stats {
	__u64 count;
	__u64 sum;
	__u64 min; /* valid when count > 0 */
	__u64 max;
	__u64 max_start; /* window of the maximum */
	__u64 max_end;
	__u64 slo; /* bound in ns, 0: none */
	__u64 violations;
	__u64 last;     /* latest sample */
	__u64 last_end; /* when it completed */
	/* Carries of hist that no notice could take (ring full): each is 65536 samples missing from the histogram. */
	__u32 hist_lost;
	__u16 hist[RTS_HIST_BUCKETS]; /* the low 16 bits of each bucket's count */
};

/* Hygiene counters (real-time anti-patterns seen on a tracked task). */
enum rts_hygiene {
	RTS_H_REL_TIMER = 0,    /* timer sleep armed with a relative expiry (drift) */
	RTS_H_REALTIME_CLOCK,   /* timer sleep on CLOCK_REALTIME/TAI (jumps) */
	RTS_H_LOWER_PRIO_WAKER, /* woken by a task of lower priority */
	RTS_H_MIGRATION,        /* moved to another CPU */
	RTS_H_MINOR_FAULTS,     /* minor page faults while tracked (task_struct min_flt) */
	RTS_H_MAJOR_FAULTS,     /* major page faults while tracked (maj_flt: I/O) */
	RTS_H_MEM_NOT_LOCKED,   /* 1: its mm has no locked page and no mlockall(MCL_FUTURE), at its last switch-out */
	RTS_H_COUNT,
};

#define RTS_SCHED_SEEN 4 /* distinct identities kept per task */

/* A SCHED_DEADLINE task's jobs (deadline.bpf.h); all zero for other tasks. */
struct rts_dl_stats {
	/* Its parameters at its last job, ns (sched_attr's sched_runtime/deadline/period) */
	__u64 runtime;
	__u64 deadline;
	__u64 period;
	__u64 jobs;             /* jobs ended */
	__u64 misses;           /* jobs that ended after their absolute deadline */
	__u64 overruns;         /* jobs throttled before they ended: they needed more than their runtime */
	__u64 yields;           /* jobs ended by sched_yield() (the others: by a sleep, or overruns) */
	__s64 lateness_max;     /* the largest end - absolute deadline of its jobs (< 0: every job early) */
	__u64 lateness_max_end; /* when that job ended */
};

/* The causes of noise parts, RTS_NC_COUNT - 1 (asserted after enum rts_noise_cause, which comes later). */
#define RTS_NOISE_CAUSES 8

/* Per tracked task statistics: value of the `stats` hash, key = tracking id. */
struct rts_task_stats {
	__u64 id;
	__u64 start_time; /* task_struct start_time, tells reused tids apart */
	__u32 tid;
	__u32 pid;
	__u32 target; /* index of the target spec that selected it */
	__u32 policy;
	__s32 prio; /* kernel prio: 0..99 RT (99 - rt_priority), 100..139 nice, -1 DL */
	__u32 rt_priority;
	__u32 last_cpu;
	__u32 exited;
	__u64 cpus_mask; /* affinity of CPUs 0..63 */
	__u32 nr_cpus_allowed;
	/*
	 * Throttled intervals: preempted switch-outs of the task, real-time or
	 * DEADLINE, in favour of a lower class (SCHED_OTHER or idle), which
	 * the scheduler makes only when its class is throttled (RT throttling,
	 * the fair server; a DEADLINE task's runtime used up): rts_throttled.
	 * 32 bits beside nr_cpus_allowed keep the stats within 5 KiB.
	 */
	__u32 throttled;
	__u64 wakeups;
	__u64 switches_voluntary;
	__u64 switches_preempted;
	__u64 timer_releases;
	/*
	 * Iterations that missed their deadline, of a task with a nominal
	 * period, after its start-up: the deadline passed before the loop armed
	 * it (a sleep that returns at once) or it skipped deadlines
	 * (rts_on_timer_arm); for loops that arm no sleeper timer (timerfd),
	 * cycles longer than the nominal period. One an iteration at most: never
	 * more than its iterations (or cycles).
	 */
	__u64 overruns;
	/* The mean of its regular release spacings, once RTS_PERIOD_CONFIRM came in a row (rts_period_seen); 0: not periodic */
	__u64 nominal_period;
	__u64 hygiene[RTS_H_COUNT];
	/*
	 * Policies and normal priorities the task ran with (rts_sched_key, 0:
	 * empty), the first ones seen; sched_changes counts every change seen
	 * at a switch-in, so a policy set after the task started is reported.
	 */
	__u32 sched_seen[RTS_SCHED_SEEN];
	__u32 sched_changes;
	__u32 sched_cur; /* index in sched_seen of the identity it runs with now (RTS_SCHED_SEEN: none kept) */
	/* Wall time in ms it held each of sched_seen, its current one aside (ms: 5 KiB a task, TestTaskStatsSize) */
	__u32 sched_ms[RTS_SCHED_SEEN];
	/* Loop samples (iterations; cycles of a loop arming no timer) of its start-up, left out of its metrics */
	__u32 startup_iterations;
	/* How long its start-up lasted from tracking, in us (saturates); 0: not over (its period never settled) */
	__u32 startup_us;
	/* Its current identity, from when it took it to its last switch-out */
	__u64 sched_open_ns;
	struct rts_dl_stats dl;
	char comm[RTS_COMM_LEN];
	struct rts_metric_stats m[RTS_M_COUNT];
	/*
	 * Its recorded noise intervals' parts by cause - 1 (enum
	 * rts_noise_cause; noise.bpf.h): their number, and their own time
	 * (a nested part's time is its own, not its enclosing part's). After
	 * m, whose offsets stay as they were.
	 */
	__u64 noise_ns[RTS_NOISE_CAUSES];
	__u32 noise_parts[RTS_NOISE_CAUSES];
};

/* Flight recorder: one ring per CPU, every scheduler/IRQ/timer event. */
enum rts_event_type {
	RTS_EV_NONE = 0,
	RTS_EV_SWITCH,        /* a=prev tid b=next tid c=prev_state flags=preempt prio/pol a=prev b=next comm=next */
	RTS_EV_WAKEUP,        /* a=target tid b=waker id c=target cpu flags=waker ctx prio_a=target prio_b=waker comm=waker */
	RTS_EV_MIGRATE,       /* a=tid b=orig cpu c=dest cpu */
	RTS_EV_IRQ_ENTRY,     /* a=irq */
	RTS_EV_IRQ_EXIT,      /* a=irq c=ret */
	RTS_EV_SOFTIRQ_ENTRY, /* a=vec */
	RTS_EV_SOFTIRQ_EXIT,  /* a=vec */
	RTS_EV_TIMER_ENTRY,   /* x=function y=expiry flags=is_hard | RTS_EVF_SLACK: a=slack (hard - soft expiry, ns, at most 2^32-1) */
	RTS_EV_TIMER_EXIT,    /* x=function */
	RTS_EV_SLEEP,         /* tracked task goes to sleep: a=tid b=stack id c=state x=armed expiry y=timer flags */
	RTS_EV_USER_RETURN,   /* tracked task returns from a timer sleep: a=tid */
	RTS_EV_HANDLER_ENTRY, /* a=tid b=irq */
	RTS_EV_HANDLER_EXIT,  /* a=tid b=irq */
	RTS_EV_EXIT,          /* a=tid: task exits */
	RTS_EV_STACK,         /* timer IRQ while a tracked task waits on this CPU: a=interrupted tid b=waiting tid c=stack id (0xffff: none) */
	RTS_EV_STEAL,         /* hypervisor steal grew on this CPU: x=steal ns since y=the previous reading (ts) */
	RTS_EV_TIMER_ARM,     /* tracked task arms its sleeper timer (an iteration ends): a=tid x=expiry (0: unknown clock) flags=1: at or before now | RTS_EVF_SLACK: y=slack */
	RTS_EV_FAULTS,        /* a tracked task took page faults in the run ending now: a=tid b=minor x=run start y=major */
	RTS_EV_IPI_SEND,      /* IPI work queued for another CPU (ipi.bpf.h): a=sender tid b=target cpu flags=kind comm=sender */
	RTS_EV_IPI_ENTRY,     /* IPI handler begins: a=sender tid (0: unknown) b=sender tgid c=sender cpu flags=kind x=function y=callsite */
	RTS_EV_IPI_EXIT,      /* IPI handler ends: a=sender tid flags=kind x=handler ns */
	RTS_EV_NOISE,         /* a noise interval of a tracked task ended (recorded now): a=tid b=its largest part's irq/vector/tid flags=that part's cause (rts_noise_cause) c=1<<cause of every part x=start y=end */
	RTS_EV_NMI,           /* an NMI handler ended (nmi:nmi_handler): x=handler y=its start (now - its time) flags=handled */
};

/*
 * Causes of a noise interval's parts (RTS_EV_NOISE; noise.bpf.h). Names in
 * internal/trace.
 */
enum rts_noise_cause {
	RTS_NC_NONE = 0,
	RTS_NC_IRQ,      /* a device hard IRQ handler: who = irq */
	RTS_NC_TIMER,    /* an hrtimer callback in hard IRQ context (the local timer interrupt) */
	RTS_NC_SOFTIRQ,  /* a softirq: who = vector */
	RTS_NC_PREEMPT,  /* off its CPU while runnable, for a task of its class and higher or equal priority: who = tid */
	RTS_NC_THROTTLE, /* off its CPU while runnable, for a lower class or priority (RT throttling, fair server): who = tid */
	RTS_NC_STEAL,    /* the hypervisor ran something else (steal clock grew while it ran) */
	RTS_NC_IPI,      /* an IPI's handler (x86 irq_vectors: who = vector; arm64 ipi_entry: who = enum rts_ipi_kind) */
	RTS_NC_NMI,      /* an NMI handler (nmi:nmi_handler, x86) */
	RTS_NC_COUNT,
};

_Static_assert(RTS_NOISE_CAUSES == RTS_NC_COUNT - 1, "RTS_NOISE_CAUSES: one a noise cause");

/*
 * Flag of RTS_EV_TIMER_ENTRY and RTS_EV_TIMER_ARM: the timer's slack is
 * known, the time the kernel may fire it after its soft expiry (its hard
 * expiry minus its soft one: hrtimer_set_expires_range_ns). poll/select
 * get 0.1% of the timeout up to 100 ms, other sleeps the task's
 * timer_slack_ns, a real-time task none. RTS_SLACK_UNKNOWN: not known
 * (the classic engine saw no arming of the timer).
 */
#define RTS_EVF_SLACK 2
#define RTS_SLACK_UNKNOWN (~0ULL)

/*
 * Why a tracked task blocked (flags of RTS_EV_SLEEP, with y = the kernel
 * return address that told it): the first kernel function of its stack that
 * names a reason, found in the sleep_fn table the loader fills from
 * kallsyms (rts_sleep_reason, sleep_reason.bpf.h). Names in internal/trace.
 */
enum rts_sleep_reason {
	RTS_SR_NONE = 0,   /* not classified: a timer sleep, or no stack walked */
	RTS_SR_WAIT,       /* a scheduling primitive (schedule*, wait helpers): keep walking */
	RTS_SR_OTHER,      /* no known function in the frames walked: y = the first one past the scheduler */
	RTS_SR_PIPE_WRITE, /* pipe full */
	RTS_SR_PIPE_READ,  /* pipe empty */
	RTS_SR_SOCK_SEND,  /* socket send buffer full */
	RTS_SR_SOCK_RECV,  /* socket receive: no data */
	RTS_SR_SOCK_OTHER, /* accept, connect, ... */
	RTS_SR_FUTEX,      /* futex wait (mutex, condition variable, semaphore without PI) */
	RTS_SR_FUTEX_PI,   /* PI futex lock */
	RTS_SR_EPOLL,      /* epoll wait */
	RTS_SR_POLL,       /* poll/select */
	RTS_SR_NANOSLEEP,  /* nanosleep/clock_nanosleep */
	RTS_SR_IO,         /* block or page-cache I/O */
	RTS_SR_PAGE_FAULT, /* page fault (I/O or a lock inside it) */
	RTS_SR_MUTEX,      /* kernel mutex or rt_mutex */
	RTS_SR_RWSEM,      /* kernel rw semaphore (mmap_lock, ...) */
	RTS_SR_EVENTFD,    /* eventfd read/write */
	RTS_SR_TIMERFD,    /* timerfd read */
	RTS_SR_CHILD,      /* waiting for a child */
	RTS_SR_SIGNAL,     /* pause, sigsuspend, sigtimedwait */
	RTS_SR_TTY,        /* terminal read/write */
	RTS_SR_COMPLETION, /* kernel completion (a kernel thread, a driver) */
	RTS_SR_RTLOCK,     /* PREEMPT_RT sleeping spinlock */
	RTS_SR_IRQ_THREAD, /* an IRQ thread waiting for its interrupt */
	RTS_SR_COUNT,
};

/* Kernel functions of the sleep-reason table, and frames walked per sleep. */
#define RTS_SLEEP_FNS 128
#define RTS_SLEEP_FRAMES 16

/* Waker context, in the flags of RTS_EV_WAKEUP */
enum rts_waker_ctx {
	RTS_WAKER_TASK = 0,
	RTS_WAKER_HARDIRQ, /* b = irq number */
	RTS_WAKER_SOFTIRQ, /* b = vector */
	RTS_WAKER_TIMER,   /* b = tid interrupted; x = timer function */
};

struct rts_event {
	__u64 ts;
	__u32 seq; /* low 32 bits of the CPU's sequence number */
	__u16 cpu;
	__u8 type;
	__u8 flags;
	__u32 a;
	__u32 b;
	__u16 c; /* a state, a CPU, a return value, a stack id: 16 bits each */
	/*
	 * The own sequence number (rts_own_seq) of the tracked task the event
	 * is for: b's in a switch (its switch-in), a's in the other events
	 * naming a task; 0: none (the task is not tracked). A gap in a task's
	 * numbers is a lost event of its own (trace/own.go).
	 */
	__u16 own;
	__u8 prio_a; /* kernel prio, 255 for deadline (-1) */
	__u8 prio_b;
	__u8 pol_a;
	__u8 pol_b;
	union {
		char comm[RTS_COMM_LEN];
		struct {
			__u64 x;
			__u64 y;
		};
	};
};

/* Notices from BPF to user space, through the `notices` ring buffer. */
enum rts_notice_type {
	RTS_N_TASK_START = 1, /* a task became tracked */
	RTS_N_TASK_EXIT,      /* a tracked task exited: its stats are final */
	RTS_N_NEW_MAX,        /* new maximum of a metric: capture its window */
	RTS_N_SLO_VIOLATION,  /* a sample over its SLO (not a new maximum): explain its window */
	RTS_N_CGROUP_ATTACH,  /* a process moved into a wanted cgroup: scan for its other threads */
	RTS_N_HIST_CARRY,     /* bucket `value` of a metric's histogram wrapped: 65536 samples for user space to add */
};

/* Notice flags */
#define RTS_NF_SLO_VIOLATED 1 /* the sample is over its SLO (new maxima too) */

/*
 * SLO-violation notices of one task are at least this far apart: a bound
 * set below a task's usual value would otherwise queue a notice per sample.
 * Violations in between are counted, not explained (user space says so).
 */
#define RTS_VIOL_NOTICE_GAP_NS 1000000ULL

struct rts_notice {
	__u32 type;
	__u32 metric;
	__u64 id;
	__u32 tid;
	__u32 cpu; /* CPU at the end of the window */
	__u64 value;
	__u64 start;
	__u64 end;
	__u32 cpu_start; /* CPU at the start of the window */
	__u32 flags;     /* RTS_NF_* */
};

/* Per-CPU state of the engine (value of the `cpus` per-CPU array). */
struct rts_cpu_state {
	__u64 seq;       /* flight recorder sequence number */
	__u64 irq_depth; /* nested device hard IRQ handlers */
	__u64 irq_nr;
	__u64 softirq_vec; /* + 1, 0: not in softirq */
	__u64 irq_ns;      /* accumulated hard IRQ handler time */
	__u64 softirq_ns;  /* accumulated softirq time */
	__u64 irq_entry;
	__u64 softirq_entry;
	/* hrtimer callbacks in progress: [0] soft (softirq) context, [1] hard */
	__u64 cb_function[2];
	__u64 cb_expiry[2]; /* soft expiry, converted to CLOCK_MONOTONIC */
	__u64 cb_entry[2];
	/*
	 * The task in whose context the soft callback or softirq runs. On
	 * PREEMPT_RT both run in preemptible threads (ktimers/N, ksoftirqd/N,
	 * or a task's local_bh_enable()): while one is preempted, the
	 * per-CPU state above stays set, and only wakeups from that task
	 * belong to it.
	 */
	__u64 cb_soft_tid;
	__u64 softirq_tid;
	__u64 waiting_tid;   /* a tracked task runnable on this CPU and not running (0: none) */
	__u64 waiting_since; /* when its wait began (its timer's expiry, or its wakeup) */
	__u64 steal_seen;    /* cumulative hypervisor steal at the last reading */
	__u64 steal_read_at; /* when it was read (0: never) */
	/* The task switched in last has a timer release awaiting its return to
	 * user space: the return hooks (rseq_update runs at every return to
	 * user after a switch, for every thread) test this before any lookup. */
	__u64 user_pending;
	__u64 lt_entry; /* the local timer interrupt in progress began then (0: none; x86, feature local_timer) */
};

/* Counters of what was lost or refused, per CPU (`counters` per-CPU array). */
enum rts_counter {
	RTS_C_NOTICE_LOST = 0, /* ring buffer full: a notice was dropped */
	RTS_C_STATS_FULL,      /* stats map full: a task could not be tracked */
	RTS_C_STORAGE_FAIL,    /* task storage could not be allocated */
	RTS_C_EVENTS,          /* flight recorder events written */
	RTS_C_STACK_LOST,      /* stack trace could not be stored */
	RTS_C_TRACK_DEFERRED,  /* task storage busy: tracking retried at the task's next switch-in */
	RTS_C_UNSEEN_WAKEUPS,  /* a tracked task asleep was next seen on its CPU: its wakeup went unreported */
	RTS_C_COUNT,
};

/* Target selection: value of the want_tid/want_tgid/want_comm hashes. */
struct rts_target {
	__u32 index; /* which target spec */
	__u32 flags;
};

#define RTS_TF_FOLLOW 1     /* track every descendant (launched command) */
#define RTS_TF_IRQ_THREAD 2 /* an irq/N-name thread: measure its handler time */

/* IPIs (ipi.bpf.h): kinds, in the flags of the IPI events and the counts' index. */
enum rts_ipi_kind {
	RTS_IPI_CALL = 0, /* a function call (smp_call_function*, remote irq_work) */
	RTS_IPI_TLB,      /* a TLB shootdown (flush_tlb_func) */
	RTS_IPI_RESCHED,  /* a reschedule */
	RTS_IPI_IRQ_WORK, /* an irq_work self-IPI */
	RTS_IPI_WAKEUP,   /* a remote wakeup queued (sched_ttwu_pending) */
	RTS_IPI_KINDS,
};

/* Entries of ipi_pairs: (receiver, sender, CPU, kind) kept. */
#define RTS_IPI_PAIRS 2048

/* The last send to a CPU and vector class (ipi_slots). */
struct rts_ipi_slot {
	__u64 ts; /* 0: taken by a receipt, or none */
	__u64 callsite;
	__u64 fn;
	char comm[RTS_COMM_LEN];
	__u32 tid;
	__u32 tgid;
	__u32 cpu;
	__u32 kind;
};

/* Per-CPU IPI state and counts (ipi_cpus). */
struct rts_ipi_cpu {
	__u64 entry; /* handler in progress since, 0: none */
	__u64 fn;
	__u64 callsite;
	char comm[RTS_COMM_LEN];
	__u32 receiver; /* tracked tid running or waiting here, 0: none */
	__u32 tid;      /* sender, 0: unknown */
	__u32 tgid;
	__u32 cpu;
	__u32 kind;
	__u32 noise_who; /* the handler in progress's noise part who (vector, arm64: kind) */
	__u64 count[RTS_IPI_KINDS];
	__u64 ns[RTS_IPI_KINDS];
	__u64 unattributed[RTS_IPI_KINDS]; /* received with no send seen */
	__u64 pairs_lost;                  /* ipi_pairs full */
};

/* Key of ipi_pairs. */
struct rts_ipi_key {
	__u32 receiver; /* tracked tid, 0: none */
	__u32 sender;   /* tid, 0: unknown */
	__u16 cpu;      /* receiving CPU */
	__u8 kind;
	__u8 pad;
};

struct rts_ipi_pair {
	__u64 count;
	__u64 ns;
	__u64 max_ns;
	__u64 fn;
	__u64 callsite;
	char comm[RTS_COMM_LEN]; /* sender's */
	__u32 tgid;
	__u32 sender_cpu; /* of the first one */
};

#endif
