// Package analysis explains a worst-case window automatically: it accounts
// every nanosecond of the window to exactly one cause (the task's own
// execution, what ran instead of it on its CPU, IRQs, softirqs, timer
// callbacks, the timer's release, sleeps and who ended them) and names the
// dominant cause in a verdict with its evidence, the way the origin paper
// reads traces by hand (section 6) and rtla timerlat's auto-analysis does for
// its own threads. `rtscope watch` calls it for every worst case; `rtscope
// timerlat` can call Explain on the window of a stop.
package analysis

import (
	"github.com/rtscope/rtscope/internal/preempt"
	"github.com/rtscope/rtscope/internal/trace"
)

// Subject is the task whose window is explained.
type Subject struct {
	TID    uint32
	Comm   string
	Policy string // FIFO, RR, OTHER, BATCH, IDLE, DEADLINE
	// KPrio is the kernel priority: 0..98 real-time (lower is higher),
	// 100..139 normal, -1 deadline.
	KPrio int
	Sched string // as printed, e.g. "FIFO 80"
	// Metric names the window (latency, timer-irq, timer-thread, timer-user,
	// response, cycle, period, jitter, handler); it defaults to tr.Metric.
	Metric string
	// NominalPeriod (ns) of a periodic task, 0 when unknown (period, jitter).
	NominalPeriod uint64
	// SleepsRelative: its loop sleeps relative to its wakeup (its timer
	// sleeps mostly relative): it has no deadline to miss, and a long cycle
	// stretches its period instead of overrunning it.
	SleepsRelative bool
	// ArmsFromWakeup: its loop arms absolute deadlines, but the engine
	// counted no overrun in many releases: each deadline is computed from
	// its wakeup (now + sleep), so a long cycle stretches its period too.
	ArmsFromWakeup bool
	// TimerSlackNs is the task's timer slack (/proc/TID/timerslack_ns),
	// 0 when unknown: a SCHED_OTHER task's timer may fire that late.
	TimerSlackNs uint64
	// MemNotLocked: the engine found the task's memory not locked (no
	// mlockall(MCL_FUTURE), no locked page): its page faults say so.
	MemNotLocked bool
	// IdleExitNs bounds how long a CPU of this machine takes from a
	// timer's expiry, idle, to its callback (cpuidle.Detect, read by the
	// caller, with IdleExitWhy saying where it comes from); 0: unknown,
	// defaultIdleExitNs is used. A longer gap is not an exit from idle.
	IdleExitNs  uint64
	IdleExitWhy string
	// SMICounter: the hardware counts SMIs (msr/smi), so a stall of
	// firmware can be counted; without it nothing can tell one.
	SMICounter bool
	// Preemption is the kernel's preemption model (preempt.Detect, read
	// by the caller: the analysis reads nothing of the system), Unknown
	// when it cannot be known.
	Preemption preempt.Model
	// FairServerRuntimeNs and FairServerPeriodNs are the fair server's
	// share of the task's CPU (or rt_rq throttling's: period - runtime of
	// sched_rt_period_us), read by the caller; 0 when unknown (the verdict
	// then names the defaults, 50 ms of every 1000 ms).
	FairServerRuntimeNs, FairServerPeriodNs uint64
	// noThrottle turns throttle detection off: the fixtures' tests show
	// what a window got before it (without_throttle_cause).
	noThrottle bool

	// laterAs is the real-time identity it took after this window, when
	// the window caught it before (effective): no advice to take one.
	laterAs string
}

// RT tells a real-time priority (including a boosted normal task).
func (s Subject) RT() bool { return s.KPrio >= -1 && s.KPrio < 100 }

// Phases of the window an item belongs to.
const (
	PhaseRelease  Phase = "release"  // timer expiry -> the wakeup (the timer interrupt and its callback)
	PhaseRunnable Phase = "runnable" // woken or preempted, waiting for its CPU
	PhaseRunning  Phase = "running"  // on its CPU
	PhaseBlocked  Phase = "blocked"  // sleeping
)

// Kinds of item: what the time went to.
const (
	KindExecution    Kind = "execution"    // the task itself
	KindInterference Kind = "interference" // a higher-priority thread ran instead
	KindBlocking     Kind = "blocking"     // a lower- or equal-priority thread kept the CPU
	KindIdle         Kind = "idle"         // the CPU was idle: leaving the idle state, scheduling
	KindHardIRQ      Kind = "hardirq"      // an IRQ handler, the timer interrupt itself
	KindTimer        Kind = "timer"        // another timer's callback (hard IRQ or softirq)
	KindOwnTimer     Kind = "own-timer"    // the callback of the task's own timer
	KindSoftIRQ      Kind = "softirq"      // a softirq vector
	KindIRQOff       Kind = "irq-off"      // a task ran while the timer interrupt was pending: interrupts off
	KindSleep        Kind = "sleep"        // the task slept
	KindPeriodSleep  Kind = "period-sleep" // the task slept until its next period: expected
	KindUnknown      Kind = "unknown"      // no events tell (CPU not recorded, truncated trace)
	KindHypervisor   Kind = "hypervisor"   // the vCPU was not running: hypervisor steal time
	KindIPI          Kind = "ipi"          // an IPI handler: work another CPU sent (ipi.go)
	KindThrottled    Kind = "throttled"    // RT throttling / the fair server gave the CPU to a lower class
)

// Thread is a task seen in the window.
type Thread struct {
	TID   uint32 `json:"tid"`
	Comm  string `json:"comm"`
	Sched string `json:"sched,omitempty"`
	KPrio int    `json:"kprio"`
	// Stack is a kernel stack sampled while it ran in the window (innermost
	// first); UserSpace tells a sample found it in user space.
	Stack     []string `json:"stack,omitempty"`
	UserSpace bool     `json:"user_space,omitempty"`
	Sampled   bool     `json:"sampled"` // a stack sample exists
	// Monitor: one of rtscope's own threads (trace.Trace.Monitor), named
	// as the monitor, not as an anonymous task.
	Monitor bool `json:"monitor,omitempty"`
	// BoostedFrom is its own identity ("FIFO 5") when it ran boosted by
	// priority inheritance (Sched) while holding a PI lock: the task's (it
	// ran on the task's behalf) or another waiter's (BoostedBy).
	BoostedFrom string `json:"boosted_from,omitempty"`
	// BoostedBy names the waiter it was boosted for: the task itself when
	// it held the task's lock, else another thread (boosters).
	BoostedBy string `json:"boosted_by,omitempty"`
}

// MonitorName is how verdicts name rtscope's own threads: the observer
// effect is a cause of its own, to be told apart from the workload's.
const MonitorName = "rtscope itself (the monitor)"

// Item is one cause of the window and the time it took.
type Item struct {
	Phase   Phase   `json:"phase"`
	Kind    Kind    `json:"kind"`
	Label   string  `json:"label"`
	Ns      uint64  `json:"ns"`
	Percent float64 `json:"percent"`
	CPU     int     `json:"cpu"`        // -1: not on a CPU (sleeping)
	FirstT  int64   `json:"first_t_ns"` // relative to the window start
	Spans   int     `json:"spans"`      // separate intervals summed

	Thread   *Thread      `json:"thread,omitempty"` // interference, blocking, irq-off
	IRQ      *int         `json:"irq,omitempty"`
	IRQName  string       `json:"irq_name,omitempty"`
	Vec      *int         `json:"vec,omitempty"`
	VecName  string       `json:"vec_name,omitempty"`
	Function string       `json:"function,omitempty"` // timer callbacks
	HardIRQ  bool         `json:"hardirq,omitempty"`
	Woke     []string     `json:"woke,omitempty"`   // timer callbacks, IRQs: the tasks they woke
	Reason   trace.Reason `json:"reason,omitempty"` // sleeps
	Waker    *trace.Waker `json:"waker,omitempty"`  // sleeps: who ended it (null: not in the window)
	IPI      *trace.IPI   `json:"ipi,omitempty"`    // IPIs: kind and sender (the first one's work)

	key string
}

// Release describes a timer release of the task: expiry -> its timer
// callback (the IRQ handler delay) -> the wakeup.
type Release struct {
	Where      Where  `json:"where"`       // start (opens the window), end (closes it) or window (inside it)
	ExpiryT    int64  `json:"expiry_t_ns"` // relative to the window start
	CPU        int    `json:"cpu"`
	IRQDelayNs *int64 `json:"irq_delay_ns"` // expiry -> callback entry; null when the entry is not in the trace
	// SlackNs is the timer's slack (its hard expiry minus its soft one,
	// from its callback's entry): the kernel may run the callback up to
	// that late. Absent when the engine did not know it.
	SlackNs    *uint64 `json:"slack_ns,omitempty"`
	CallbackNs *int64  `json:"callback_ns"` // callback entry -> the wakeup
	WakeupNs   *int64  `json:"wakeup_ns"`   // expiry -> the wakeup; null when past the window (timer-irq)
	// CPUState says what the CPU did between the expiry and the callback:
	// idle, hard IRQ, softirq, task (interrupts off), or unknown.
	CPUState CPUState `json:"cpu_state"`
	Task     *Thread  `json:"task,omitempty"` // the task that ran meanwhile, if any
}

// Migration of the task between CPUs in the window.
type Migration struct {
	T    int64 `json:"t_ns"`
	From int   `json:"from_cpu"`
	To   int   `json:"to_cpu"`
}

// Inversion is the evidence of a priority inversion: the task slept on a
// futex until Owner (lower priority) released it, while Owner was runnable
// but preempted by Preempters of a priority between the two.
type Inversion struct {
	Owner       Thread    `json:"owner"`
	BlockedNs   uint64    `json:"blocked_ns"`       // the task's wait
	OwnerRunNs  uint64    `json:"owner_running_ns"` // owner on CPU (its critical section)
	OwnerWaitNs uint64    `json:"owner_preempted_by_middle_ns"`
	OwnerHighNs uint64    `json:"owner_preempted_by_higher_ns"` // by tasks above the waiter: interference, not inversion
	OwnerOther  uint64    `json:"owner_other_ns"`               // sleeping, idle CPU, IRQs
	OwnerUnkn   uint64    `json:"owner_unknown_ns"`             // before the owner's first event in the trace
	Preempters  []*Thread `json:"preempters"`                   // middle-priority tasks, most time first
	PreempterNs []uint64  `json:"preempter_ns"`
	PI          bool      `json:"priority_inheritance"`
	Inverted    bool      `json:"inverted"` // the verdict: an unbounded inversion happened
}

// Result is the analysis of one window.
type Result struct {
	// boosts: the lock owners of the window that ran boosted by priority
	// inheritance, by tid (BoostedSched; not in the JSON, whose breakdown
	// threads say it).
	boosts map[uint32]boost
	// idleExitNs is the idle exit bound the window was judged against
	// (idleBound; 0 in a result read back from JSON, whose words stay).
	idleExitNs uint64

	Metric   string `json:"metric"`
	WindowNs uint64 `json:"window_ns"` // end - start: the items add up to it
	ValueNs  uint64 `json:"value_ns"`  // the metric's value (differs from the window for jitter)
	// Cause is the dominant cause, for machines: execution, interference,
	// priority-misconfiguration, cpu-hog, blocking, non-preemptible,
	// priority-inversion, internal-blocking, hardirq, softirq, irq-off,
	// exit-from-idle, migration, release, hypervisor (steal time),
	// cpu-unavailable (the CPU recorded nothing and no steal clock or
	// stack tells why), inconclusive.
	Cause   Cause  `json:"cause"`
	Verdict string `json:"verdict"`
	// Breakdown: every nanosecond of the window, each in one item, percentages adding up to 100.
	Breakdown      []Item      `json:"breakdown"`
	PhaseNs        PhaseTotals `json:"phase_ns"`
	Releases       []Release   `json:"releases,omitempty"`
	BlockingThread *Thread     `json:"blocking_thread,omitempty"` // what ran when the task should have
	Inversion      *Inversion  `json:"priority_inversion,omitempty"`
	Migrations     []Migration `json:"migrations,omitempty"`
	RuledOut       []string    `json:"ruled_out,omitempty"`
	// Preemption is the kernel's preemption model (Subject.Preemption).
	Preemption preempt.Model `json:"preemption_model"`
	// FutexWaitsNoPI counts the task's futex waits without priority
	// inheritance in the window (an RT task only).
	FutexWaitsNoPI int `json:"futex_waits_without_pi"`
	// StealNs is the time of the window the hypervisor took from the CPUs
	// it is accounted on (the hypervisor items); null when the kernel's
	// steal clock was not readable, so that none is known.
	StealNs *uint64 `json:"steal_ns"`
	// MonitorNs is the time rtscope's own threads ran on the window's CPUs
	// while the task waited or was interrupted (items of its threads).
	MonitorNs uint64 `json:"monitor_ns"`
	// Culprit names the dominant cause's evidence in a few words (a
	// thread, an IRQ, a callback): with Cause, the key of the cause
	// histogram of SLO violations.
	Culprit string   `json:"culprit,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	// Throttling: the intervals in which the task, runnable, was throttled
	// (RT throttling, the fair server, a DEADLINE task's runtime used up).
	Throttling []Throttle `json:"throttling,omitempty"`
	// PageFaults the task took in its runs that ended in the window; null
	// when it took none there (or the engine cannot count them).
	PageFaults *Faults `json:"page_faults,omitempty"`
	// IPIs received on the task's CPU while it ran or waited in the
	// window, by kind and sender (ipi.go); null for none.
	IPIs []IPISource `json:"ipis,omitempty"`
}

// PhaseTotals are the time of the window per phase.
type PhaseTotals struct {
	Release  uint64 `json:"release"`
	Runnable uint64 `json:"runnable"`
	Running  uint64 `json:"running"`
	Blocked  uint64 `json:"blocked"`
}
