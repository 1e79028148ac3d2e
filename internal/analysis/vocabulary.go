package analysis

// Cause is the dominant cause of a window (Result.Cause), for machines: the
// key of the cause histograms of SLO violations and of actions, written as
// its name in JSON. A string underneath, as trace's vocabulary: a report
// read back keeps a cause this build does not know. Immutable: safe for
// concurrent use.
type Cause string

// Causes.
const (
	CauseExecution         Cause = "execution"          // the task's own execution
	CauseInterference      Cause = "interference"       // a higher priority, or SCHED_OTHER contention
	CauseCPUHog            Cause = "cpu-hog"            // a real-time task starved a normal one
	CauseBlocking          Cause = "blocking"           // a lower or equal priority kept the CPU
	CauseNonPreemptible    Cause = "non-preemptible"    // a lower priority in non-preemptible kernel code
	CausePriorityInversion Cause = "priority-inversion" // a futex owner preempted by middle priorities
	CauseInternalBlocking  Cause = "internal-blocking"  // the task's own sleeps (locks, I/O)
	CauseHardIRQ           Cause = "hardirq"            // hard-IRQ handlers, a late timer interrupt
	CauseSoftIRQ           Cause = "softirq"            // softirq vectors
	CauseIRQOff            Cause = "irq-off"            // a task kept interrupts off
	CauseExitFromIdle      Cause = "exit-from-idle"     // the CPU left an idle state
	CauseMigration         Cause = "migration"          // a migration, with events missing
	CauseRelease           Cause = "release"            // the timer release: own callback, slack
	CauseHypervisor        Cause = "hypervisor"         // steal time
	CauseCPUUnavailable    Cause = "cpu-unavailable"    // the CPU recorded nothing; no steal clock or stack says why
	CauseInconclusive      Cause = "inconclusive"       // no cause dominates, or events are missing
	CauseMonitor           Cause = "monitor"            // rtscope's own threads
	CauseOverrun           Cause = "overrun"            // a cycle, or an iteration's work, longer than its period
	CauseLongSleep         Cause = "long-sleep"         // a timer armed more than a period ahead
	CauseUnexplained       Cause = "unexplained"        // a gap on an idle CPU above its idle exit bound that nothing recorded accounts for
	CauseIPI               Cause = "ipi"                // IPIs another task sent to the CPU (ipi.go)
	CauseThrottling        Cause = "rt-throttling"      // RT throttling or the fair server took the CPU
)

// String returns the cause's name.
func (c Cause) String() string { return string(c) }

// MarshalText writes the name.
func (c Cause) MarshalText() ([]byte, error) { return []byte(c), nil }

// UnmarshalText reads a name.
func (c *Cause) UnmarshalText(b []byte) error { *c = Cause(b); return nil }

// Platform tells the causes that are the platform's, not the workload's:
// the CPU did not run (hypervisor steal, or a stall nothing accounts).
func (c Cause) Platform() bool { return c == CauseHypervisor || c == CauseCPUUnavailable }

// CPUState says what a CPU did between a timer's expiry and its callback
// (Release.CPUState): the context that took most of the time. Immutable:
// safe for concurrent use.
type CPUState string

// CPU states.
const (
	CPUIdle    CPUState = "idle"
	CPUHardIRQ CPUState = "hard IRQ"
	CPUSoftIRQ CPUState = "softirq"
	// CPUTask: a task ran with the timer interrupt pending: interrupts off.
	CPUTask    CPUState = "task (interrupts off)"
	CPUSteal   CPUState = "hypervisor (steal)"
	CPUUnknown CPUState = "unknown"
	// CPUNoDelay: the callback ran at the expiry: nothing to name.
	CPUNoDelay CPUState = "none (no delay)"
)

// cpuStates in the order a tie between them is decided.
var cpuStates = []CPUState{CPUIdle, CPUHardIRQ, CPUSoftIRQ, CPUTask, CPUSteal, CPUUnknown}

// String returns the state's text.
func (s CPUState) String() string { return string(s) }

// MarshalText writes the text.
func (s CPUState) MarshalText() ([]byte, error) { return []byte(s), nil }

// UnmarshalText reads a text.
func (s *CPUState) UnmarshalText(b []byte) error { *s = CPUState(b); return nil }

// Where places a timer release in its window (Release.Where). Immutable:
// safe for concurrent use.
type Where string

// Places of a release.
const (
	AtStart  Where = "start"  // it opens the window
	AtEnd    Where = "end"    // it closes the window
	InWindow Where = "window" // between the two
)

// String returns the place's name.
func (w Where) String() string { return string(w) }

// MarshalText writes the name.
func (w Where) MarshalText() ([]byte, error) { return []byte(w), nil }

// UnmarshalText reads a name.
func (w *Where) UnmarshalText(b []byte) error { *w = Where(b); return nil }

// Phase is the part of a window an item belongs to (Item.Phase): the
// timer's release, runnable, running or blocked. Immutable: safe for
// concurrent use.
type Phase string

// String returns the phase's name.
func (p Phase) String() string { return string(p) }

// MarshalText writes the name.
func (p Phase) MarshalText() ([]byte, error) { return []byte(p), nil }

// UnmarshalText reads a name.
func (p *Phase) UnmarshalText(b []byte) error { *p = Phase(b); return nil }

// Kind is what an item's time went to (Item.Kind). Immutable: safe for
// concurrent use.
type Kind string

// String returns the kind's name.
func (k Kind) String() string { return string(k) }

// MarshalText writes the name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k), nil }

// UnmarshalText reads a name.
func (k *Kind) UnmarshalText(b []byte) error { *k = Kind(b); return nil }
