package engine

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// Feature is one kernel feature rtscope probes at start: an index of
// featureTable, the one home of what each feature enables, how rtscope
// falls back without it and the sentence it shows then. Load's fallbacks,
// the JSON report's features, doctor's BPF checks and docs/features.md
// all read the table.
type Feature int

// The features, in the table's order.
const (
	FeatureRingBuf         Feature = iota // BPF ring buffer: the notices
	FeatureKernelBTF                      // usable kernel BTF: the BTF engine runs
	FeatureTaskStorage                    // BPF task storage: the BTF engine's per-task state
	FeatureSwitchPrevState                // sched_switch carries prev_state
	FeaturePercpuLookup                   // bpf_map_lookup_percpu_elem: waiter stacks
	FeatureForEachMapElem                 // bpf_for_each_map_elem: SLO reapply, classic held samples
	FeatureFexit                          // fexit on hrtimer_nanosleep: return to user of any thread
	FeatureRseq                           // rseq_update tracepoint: return to user of rseq threads
	FeatureFentry                         // fentry/fexit on the threaded IRQ handlers
	FeatureCgroupAttach                   // cgroup_attach_task tracepoint
	FeatureStealClock                     // the scheduler's steal clock through BTF
	FeatureKernelSymbols                  // readable /proc/kallsyms addresses
	FeatureGlobalPtrArgs                  // global BPF functions with pointer arguments: verified once
	FeatureIPISend                        // ipi_send_cpu and csd_queue_cpu tracepoints: who sends IPIs (--ipi)
	FeatureIPIReceive                     // x86 irq_vectors tracepoints: IPI receipts as noise; their handler time and sender with --ipi
	FeatureLocalTimer                     // x86 local_timer_entry/exit: the whole timer interrupt as noise
	FeatureIPIEntry                       // ipi:ipi_entry/ipi_exit: IPI receipts where irq_vectors are missing (arm64)
	FeatureNMI                            // nmi:nmi_handler (x86): NMI handlers as noise
	featureCount
)

// featureSpec is one row of featureTable.
type featureSpec struct {
	name     string // the feature's id: doctor's check is bpf_<name>
	needs    string // what the kernel must have
	since    string // the first Linux release with it ("" when a build option)
	probe    string // how rtscope finds out, at start
	enables  string // what it gives
	fallback string // what rtscope does without it
	// missing is the sentence shown when the kernel lacks it (the JSON
	// features, doctor, the errors of a required feature).
	missing string
	// used is the JSON features' sentence when it is used ("": none).
	used string
	// classic is what the classic engine says instead, for a feature only
	// the BTF engine can use ("": the classic engine probes it too).
	classic string
	// required: the engine that uses it does not start without it.
	required bool
	// programs are the optional BPF programs that need it, loaded in a
	// collection of their own (the load is the probe): a failure costs
	// this feature, not the engine.
	programs []string
}

// featureTable is the table of kernel features (docs/features.md is
// generated from it: go test ./internal/engine -run TestFeaturesDoc -update).
var featureTable = [featureCount]featureSpec{
	FeatureRingBuf: {
		name: "ringbuf", needs: "BPF ring buffer", since: "5.8",
		probe:    "features.HaveMapType(RingBuf)",
		enables:  "the notices (new maxima, violations, task starts and exits)",
		fallback: "none: rtscope does not start",
		missing:  "this kernel lacks the BPF ring buffer, which rtscope needs (Linux 5.8 or later)",
		required: true,
	},
	FeatureKernelBTF: {
		name: "kernel_btf", needs: "kernel BTF (`CONFIG_DEBUG_INFO_BTF`, readable `/sys/kernel/btf/vmlinux`), or `--btf FILE`",
		since:    "5.5",
		probe:    "read the first bytes of /sys/kernel/btf/vmlinux; --engine",
		enables:  "the BTF engine: tp_btf programs, CO-RE reads of kernel structures, the task iterator",
		fallback: "the classic engine (classic tracepoints, offsets from tracefs); `features.engine_limits` lists what it cannot measure. `rtscope isolation` has a classic engine of its own (docs/isolation.md, engines)",
		missing:  "no usable kernel BTF: the classic engine (classic tracepoints) runs instead",
	},
	FeatureTaskStorage: {
		name: "task_storage", needs: "BPF task storage, `bpf_get_current_task_btf`", since: "5.11",
		probe:    "features.HaveMapType(TaskStorage)",
		enables:  "the BTF engine's per-task state, freed with the task",
		fallback: "none for the BTF engine: it does not start (the classic engine keeps tasks in a hash)",
		missing:  "this kernel lacks BPF task storage, which rtscope needs (Linux 5.11 or later)",
		classic:  "not used: the classic engine keeps its tasks in a hash keyed by tid",
		required: true,
	},
	FeatureSwitchPrevState: {
		name: "prev_state", needs: "`sched_switch` with `prev_state` as an argument", since: "5.18",
		probe:    "the parameters of btf_trace_sched_switch in kernel BTF",
		enables:  "the switched-out task's state from the tracepoint's arguments (`on_sched_switch`)",
		fallback: "the state read from `task_struct` by the program variant `on_sched_switch_legacy`",
		missing:  "sched_switch has no prev_state argument (before Linux 5.18): the variant on_sched_switch_legacy reads it from task_struct",
		classic:  "not used: the classic engine reads prev_state from the tracepoint's record",
	},
	FeaturePercpuLookup: {
		name: "percpu_elem", needs: "`bpf_map_lookup_percpu_elem`", since: "5.19",
		probe:    "features.HaveProgramHelper(TracePoint, FnMapLookupPercpuElem)",
		enables:  "the kernel stack of what runs while a tracked task waits (`waiter_stacks`)",
		fallback: "no such stacks (`features.waiter_stacks` says so); the task's own sleep stacks and every metric remain",
		missing:  "this kernel lacks bpf_map_lookup_percpu_elem (Linux 5.19): the stack of what runs while a tracked task waits is not sampled",
	},
	FeatureForEachMapElem: {
		name: "map_foreach", needs: "`bpf_for_each_map_elem`", since: "5.13",
		probe:    "loading reapply_slo (and the classic engine's settle_held) on the engine's maps",
		enables:  "changed SLO bounds reach the tasks tracked already (`serve`); the classic engine's held samples",
		fallback: "changed bounds reach the tasks tracked from then on; the classic engine records each sample at once",
		missing:  "this kernel lacks bpf_for_each_map_elem (Linux 5.13): changed SLO bounds apply to the tasks tracked from then on, not to those tracked already",
	},
	FeatureFexit: {
		name: "fexit", needs: "fexit on `hrtimer_nanosleep`", since: "5.5 (and allowed by the kernel)",
		probe:    "loading and attaching on_nanosleep_exit",
		enables:  "the return to user space (`timer-user`) of every thread",
		fallback: "the `rseq_update` tracepoint: threads with a registered rseq area (glibc >= 2.35) only",
		missing:  "only for threads with a registered rseq area (glibc >= 2.35): fexit is not allowed on this kernel",
		classic:  "only for threads with a registered rseq area (glibc >= 2.35): the classic engine has no fexit",
		programs: []string{"on_nanosleep_exit"},
	},
	FeatureRseq: {
		name: "rseq", needs: "the `rseq_update` tracepoint", since: "4.18",
		probe:    "loading and attaching on_rseq_update",
		enables:  "the return to user space (`timer-user`) of threads with a registered rseq area, without fexit",
		fallback: "with fexit nothing is lost; without either, no `timer-user` metric",
		missing:  "the rseq_update tracepoint cannot be used: without fexit, the return to user space is not seen",
		programs: []string{"on_rseq_update"},
	},
	FeatureFentry: {
		name: "fentry", needs: "fentry/fexit on `irq_thread_fn`, `irq_forced_thread_fn`", since: "5.5 (and allowed by the kernel)",
		probe:    "loading and attaching on_irq_thread_fn and kin",
		enables:  "exact threaded IRQ handler time (`features.handler`)",
		used:     "exact (fentry/fexit on the threaded handler)",
		fallback: "the on-CPU time of each irq/N thread activation",
		missing:  "on-CPU time of each irq/N thread activation (fentry is not allowed on this kernel)",
		classic:  "on-CPU time of each irq/N thread activation (the classic engine has no fentry)",
		programs: []string{"on_irq_thread_fn", "on_irq_thread_fn_exit", "on_irq_forced_thread_fn", "on_irq_forced_thread_fn_exit"},
	},
	FeatureCgroupAttach: {
		name: "cgroup_moves", needs: "the `cgroup_attach_task` tracepoint (tp_btf)", since: "5.5",
		probe:    "loading and attaching on_cgroup_attach_task",
		enables:  "tasks moved into a watched cgroup later are tracked",
		fallback: "cgroup targets get the tasks there at start and their children only",
		missing:  "tasks moved into a watched cgroup later are not tracked",
		classic:  "not used: the classic engine has no cgroup targets (it cannot tell a task's cgroup)",
		programs: []string{"on_cgroup_attach_task"},
	},
	FeatureStealClock: {
		name: "steal_clock", needs: "`rq->prev_steal_time_rq` (`CONFIG_PARAVIRT_TIME_ACCOUNTING`), `sched_entity.cfs_rq` (`CONFIG_FAIR_GROUP_SCHED`)",
		probe:    "the members of rq and sched_entity in kernel BTF",
		enables:  "hypervisor steal at each context switch, in the flight recorder and the worst-case windows",
		fallback: "the run's total steal from /proc/stat only (`features.steal` says why)",
		missing:  "unreadable: this kernel does not account steal time in the scheduler",
		classic:  "unreadable: the classic engine (no kernel BTF) cannot reach the run queue's steal clock",
	},
	FeatureKernelSymbols: {
		name: "kallsyms", needs: "kernel addresses in `/proc/kallsyms` (`kptr_restrict` allows them)",
		probe:    "the address of hrtimer_wakeup and the sleep functions in /proc/kallsyms",
		enables:  "timer sleeps recognised (`hrtimer_wakeup`) and blocking sleeps named in the kernel (`sleep_reasons`)",
		fallback: "sleep reasons from sampled stacks only (at most one a ms per task)",
		missing:  "kernel symbols are hidden (kptr_restrict): timer sleeps are not recognised and sleep reasons come from sampled stacks only",
	},
	FeatureGlobalPtrArgs: {
		name: "global_ptr_args", needs: "global BPF functions taking pointers (commit e5069b9c23b3)", since: "5.12",
		probe:    "loading a program whose global function reads through a pointer to its caller's stack",
		enables:  "each shared subprogram verified once (start-up)",
		fallback: "the inlined variant: the same programs, verified at every call (start-up 2-3× slower for the BTF engine, 10× for the classic one)",
		missing:  "this kernel's verifier takes no pointer in a global function's arguments (before Linux 5.12): the inlined variant of the programs runs, verified at every call (a slower start-up, the same measurements)",
	},
	FeatureIPISend: {
		name: "ipi_send", needs: "the `csd:csd_queue_cpu` and `ipi:ipi_send_cpu` tracepoints; asked for with `--ipi`", since: "6.3",
		probe:    "loading and attaching on_csd_queue_cpu and on_ipi_send_cpu (only with --ipi)",
		enables:  "who sends each IPI (task, CPU, callsite, function: a TLB shootdown, a function call, a reschedule, an irq_work), in the flight recorder and the IPI counts by sender (docs/ipi.md)",
		fallback: "IPIs received are counted without their sender",
		missing:  "IPI senders are not seen: this kernel has no csd_queue_cpu/ipi_send_cpu tracepoints (Linux 6.3 or later), or --ipi was not given",
		programs: []string{"on_csd_queue_cpu", "on_ipi_send_cpu"},
	},
	FeatureIPIReceive: {
		name: "ipi_receive", needs: "x86's `irq_vectors` tracepoints (call_function, call_function_single, reschedule, irq_work)",
		since:    "3.14 (x86 only)",
		probe:    "loading and attaching on_ipi_call_function_entry and kin",
		enables:  "each IPI received as a noise part of the tracked task it interrupts; with `--ipi`, its handler time and its sender in windows and verdicts, and IPI counts per CPU, kind and task",
		fallback: "`ipi:ipi_entry`/`ipi_exit` where the kernel has them (arm64, arm: feature ipi_entry); else IPIs are not seen on the receiving CPU",
		missing:  "IPIs received are not seen (an IPI's time in a noise interval is unexplained): this kernel has neither x86's irq_vectors tracepoints nor ipi:ipi_entry/ipi_exit (arm64, arm)",
		programs: []string{"on_ipi_call_function_entry", "on_ipi_call_function_exit", "on_ipi_call_function_single_entry",
			"on_ipi_call_function_single_exit", "on_ipi_reschedule_entry", "on_ipi_reschedule_exit", "on_ipi_irq_work_entry", "on_ipi_irq_work_exit"},
	},
	FeatureLocalTimer: {
		name: "local_timer", needs: "x86's `irq_vectors:local_timer_entry` and `local_timer_exit` tracepoints",
		since:    "3.14 (x86 only)",
		probe:    "loading and attaching on_local_timer_entry and on_local_timer_exit",
		enables:  "the local timer interrupt as one noise part, from its due time to its exit: the tail that reprograms the clock event after the last callback is in it",
		fallback: "the timer interrupt's noise runs from its first callback's due time to its last callback's end (the IRQ-tail rule bridges the rest to a softirq or preemption that follows)",
		missing:  "the local timer interrupt's tail (reprogramming the clock event) is not in the noise: this kernel has no x86 irq_vectors tracepoints (arm64's timer is a device IRQ, seen as such)",
		programs: []string{"on_local_timer_entry", "on_local_timer_exit"},
	},
	FeatureIPIEntry: {
		name: "ipi_entry", needs: "the `ipi:ipi_entry` and `ipi_exit` tracepoints (arm64, arm: their IPI handler; x86 has irq_vectors instead)",
		since:    "3.17 (arm64)",
		probe:    "loading and attaching on_ipi_entry and on_ipi_exit",
		enables:  "each IPI received as a noise part, and with `--ipi` its handler time and its sender, where x86's irq_vectors are missing: the reason string names the class (function call, reschedule, irq_work); timer broadcast, CPU stop, backtrace and KGDB IPIs are not counted (as on x86)",
		fallback: "x86's irq_vectors (feature ipi_receive), which x86 kernels have instead",
		missing:  "no ipi:ipi_entry/ipi_exit tracepoints: x86 has irq_vectors instead (feature ipi_receive), other architectures neither",
		programs: []string{"on_ipi_entry", "on_ipi_exit"},
	},
	FeatureNMI: {
		name: "nmi", needs: "the `nmi:nmi_handler` tracepoint (x86)",
		since:    "3.11 (x86 only)",
		probe:    "loading and attaching on_nmi_handler",
		enables:  "each NMI handler's time (perf sampling, the watchdog, backtraces) as a noise part of the tracked task it interrupts, taken out of the own time of an interrupt it came in",
		fallback: "none: an NMI's time is in the part it came in, or unexplained",
		missing:  "NMIs are not seen: this kernel has no nmi:nmi_handler tracepoint (x86 only)",
		programs: []string{"on_nmi_handler"},
	},
}

// errIPINotAsked marks the IPI features when --ipi was not given.
var errIPINotAsked = errors.New("not attached: watch --ipi attaches the IPI hooks")

// ipiFeature tells the features that only --ipi attaches: the senders.
// The receipts are attached always, as noise parts and flight events:
// 274-341 ns of BPF a receipt without --ipi (entry + exit,
// BenchmarkIPIShootdown), 476-673 with a tracked task current
// (TestNoiseIPIsOfLoop), about a softirq's hooks' 343 (docs/noise.md).
func ipiFeature(f Feature) bool {
	return f == FeatureIPISend
}

// IPIReceipts tells whether IPIs are seen on the receiving CPU: through
// x86's irq_vectors or through ipi:ipi_entry (arm64); one kernel has one.
func (f *Features) IPIReceipts() bool { return f.Has(FeatureIPIReceive) || f.Has(FeatureIPIEntry) }

// FeatureInfo is a feature's row of the table, for doctor and the docs.
type FeatureInfo struct {
	Feature  Feature
	Name     string
	Needs    string
	Since    string
	Probe    string
	Enables  string
	Fallback string
	Missing  string // the sentence shown when the kernel lacks it
	Classic  string // what the classic engine says instead ("": it probes it too)
	Required bool
}

// FeatureTable lists the rows of the table of kernel features, in order.
func FeatureTable() []FeatureInfo {
	out := make([]FeatureInfo, 0, featureCount)
	for f := range Feature(featureCount) {
		s := &featureTable[f]
		out = append(out, FeatureInfo{Feature: f, Name: s.name, Needs: s.needs, Since: s.since, Probe: s.probe,
			Enables: s.enables, Fallback: s.fallback, Missing: s.missing, Classic: s.classic, Required: s.required})
	}
	return out
}

// String is the feature's name in the table.
func (f Feature) String() string {
	if f < 0 || f >= featureCount {
		return "unknown"
	}
	return featureTable[f].name
}

// featureOf names the feature an optional program needs (false: none).
func featureOf(prog string) (Feature, bool) {
	for f := range Feature(featureCount) {
		for _, p := range featureTable[f].programs {
			if p == prog {
				return f, true
			}
		}
	}
	return 0, false
}

// Features tells which optional measurements could be attached. The
// state of every feature of the table is in Has and Missing; the fields
// are what callers read of them.
type Features struct {
	UserReturn        error // nil: return to user space is seen (fexit or rseq)
	UserReturnFexit   bool  // ... through fexit on hrtimer_nanosleep (any thread), else only rseq threads
	ThreadedIRQFentry error // nil: handler time exact from fentry/fexit, else scheduler-based
	LegacySwitch      bool  // sched_switch without prev_state (kernel < 5.18)
	HrtimerWakeup     bool  // hrtimer_wakeup address known: timer sleeps classified
	// WaiterStacks: nil when the kernel stack of what runs instead of a
	// waiting tracked task can be sampled (bpf_map_lookup_percpu_elem,
	// 5.19+), else why not; the task's own sleep stacks do not need it.
	WaiterStacks error
	Steal        StealClock
	// SLOReapply: nil when changed SLO bounds reach the tasks tracked
	// already (ReapplySLO), else why only tasks tracked later get them.
	SLOReapply error
	// CgroupAttach: nil when tasks moved into a wanted cgroup later are
	// tracked (the cgroup_attach_task tracepoint), else why not.
	CgroupAttach error
	// Engine is EngineBTF or EngineClassic; EngineNote says why the
	// classic one runs (forced, or no kernel BTF), empty for BTF.
	Engine     string
	EngineNote string
	// EngineFallback: the classic engine runs because auto-selection
	// found no usable kernel BTF (not because --engine classic asked).
	EngineFallback bool
	// SleepReasons says how blocking sleeps are named (the kernel functions
	// of the sleep-reason table found), or why they are not.
	SleepReasons string
	// PageFaults says how page faults and memory locking are measured, or
	// why they are not (the classic engine).
	PageFaults string

	probed  [featureCount]bool
	missing [featureCount]error
}

// Has tells whether the feature was found and is used: never, under the
// classic engine, a feature only the BTF engine can use.
func (f *Features) Has(x Feature) bool {
	if featureTable[x].classic != "" && !f.has(FeatureKernelBTF) {
		return false
	}
	return f.has(x)
}

// has tells whether x's probe found it.
func (f *Features) has(x Feature) bool { return f.probed[x] && f.missing[x] == nil }

// Missing says why the feature is not used: the kernel's error, or the
// classic engine's sentence (nil when it is used or was not probed).
func (f *Features) Missing(x Feature) error { return f.missing[x] }

// Sentence is the one sentence shown for a feature not used: the table's,
// or the classic engine's for a feature only the BTF engine uses ("" when
// it is used).
func (f *Features) Sentence(x Feature) string {
	if f.Has(x) {
		return ""
	}
	if errors.Is(f.missing[x], errIPINotAsked) {
		return errIPINotAsked.Error()
	}
	if s := featureTable[x].classic; s != "" && !f.Has(FeatureKernelBTF) {
		return s
	}
	return featureTable[x].missing
}

// Describe is the sentence the JSON features show for x: how it is used,
// or the sentence for its absence.
func (f *Features) Describe(x Feature) string {
	if f.Has(x) {
		return featureTable[x].used
	}
	return f.Sentence(x)
}

// EngineLimits are what the running engine cannot measure: the classic
// engine's ClassicLimits, nil for the BTF engine.
func (f *Features) EngineLimits() []string {
	if f.Has(FeatureKernelBTF) {
		return nil
	}
	return ClassicLimits
}

// Record sets what a probe found of x (err nil: it is there) and the
// fields derived from it: for building the features of another kernel
// (tests of what is shown); Load records its own probes.
func (f *Features) Record(x Feature, err error) {
	f.set(x, err)
	f.derive()
}

// Probed tells whether x's probe ran (a failed load stops before some).
func (f *Features) Probed(x Feature) bool { return f.probed[x] }

// Applies tells whether the running engine can use x: the classic engine
// cannot use the features only BTF gives.
func (f *Features) Applies(x Feature) bool {
	return featureTable[x].classic == "" || x == FeatureKernelBTF || f.Has(FeatureKernelBTF)
}

// Cause is the kernel's own error for a feature not used, when it says
// more than Sentence ("" otherwise).
func (f *Features) Cause(x Feature) string {
	err := f.missing[x]
	if err == nil || f.Has(x) || !f.Applies(x) {
		return ""
	}
	if s := err.Error(); s != f.Sentence(x) {
		return s
	}
	return ""
}

// set records a feature's probe: err nil when it is there.
func (f *Features) set(x Feature, err error) {
	f.probed[x], f.missing[x] = true, err
}

// errClassic marks the features only the BTF engine uses, under the
// classic engine.
var errClassic = errors.New("not used by the classic engine")

// derive fills the fields callers read from the features' states.
func (f *Features) derive() {
	if !f.Has(FeatureKernelBTF) {
		f.derivedClassic()
		return
	}
	f.UserReturnFexit = f.Has(FeatureFexit)
	f.UserReturn = nil
	if !f.Has(FeatureFexit) && !f.Has(FeatureRseq) {
		f.UserReturn = f.userReturnMissing()
	}
	f.ThreadedIRQFentry = f.Missing(FeatureFentry)
	f.LegacySwitch = !f.Has(FeatureSwitchPrevState)
	f.CgroupAttach = nil
	var attach *attachError
	if err := f.Missing(FeatureCgroupAttach); errors.As(err, &attach) {
		f.CgroupAttach = attach.err
	} else if err != nil {
		f.CgroupAttach = fmt.Errorf("the cgroup_attach_task tracepoint cannot be used (%v): %s", err, featureTable[FeatureCgroupAttach].missing)
	}
	f.WaiterStacks = f.sentenceErr(FeaturePercpuLookup)
	f.SLOReapply = f.sentenceErr(FeatureForEachMapElem)
	f.HrtimerWakeup = f.Has(FeatureKernelSymbols)
}

// derivedClassic is derive for the classic engine, which has no fexit
// nor fentry and reads no kernel structure.
func (f *Features) derivedClassic() {
	f.UserReturnFexit = false
	f.UserReturn = nil
	if err := f.Missing(FeatureRseq); err != nil {
		f.UserReturn = err
	}
	f.ThreadedIRQFentry = errors.New("the classic engine has no fentry")
	f.LegacySwitch = false
	f.CgroupAttach = nil
	f.Steal = StealClock{Method: featureTable[FeatureStealClock].classic}
	f.WaiterStacks = f.sentenceErr(FeaturePercpuLookup)
	f.SLOReapply = f.sentenceErr(FeatureForEachMapElem)
	f.HrtimerWakeup = f.Has(FeatureKernelSymbols)
}

// userReturnMissing says why no return to user space is seen: the rseq
// tracepoint's attach error, or both loads' errors.
func (f *Features) userReturnMissing() error {
	fexit, rseq := f.Missing(FeatureFexit), f.Missing(FeatureRseq)
	var attach *attachError
	if errors.As(rseq, &attach) {
		return attach.err
	}
	return fmt.Errorf("neither fexit on hrtimer_nanosleep (%v) nor the rseq_update tracepoint (%v) can be used", fexit, rseq)
}

// sentenceErr is the feature's sentence as an error, with the kernel's
// error when it is more than the table says (nil when the feature is used).
func (f *Features) sentenceErr(x Feature) error {
	err := f.Missing(x)
	if err == nil {
		return nil
	}
	var plain *missingError
	if errors.As(err, &plain) {
		return plain
	}
	return fmt.Errorf("%w (%v)", &missingError{featureTable[x].missing}, err)
}

// missingError is a feature's sentence, as found without more to say.
type missingError struct{ sentence string }

func (m *missingError) Error() string { return m.sentence }

// missingFeature is the error of a probe that found x missing.
func missingFeature(x Feature) error { return &missingError{featureTable[x].missing} }

// attachError is an optional program that loaded but could not attach.
type attachError struct{ err error }

func (a *attachError) Error() string { return a.err.Error() }
func (a *attachError) Unwrap() error { return a.err }

// Probe checks what the engines need from the kernel and the process, and
// returns one sentence naming the first thing missing. Kernel BTF is not
// needed: without it the classic engine runs (chooseEngine). It is cheap
// (a stat and capget), so session.Check and Load both run it.
func Probe() error {
	if _, err := os.Stat("/sys/fs/bpf"); err != nil {
		if _, err := os.Stat("/proc/sys/kernel/bpf_stats_enabled"); err != nil {
			return errors.New("this kernel has no BPF support (CONFIG_BPF_SYSCALL): rtscope cannot run on it")
		}
	}
	if os.Geteuid() != 0 {
		var hdr unix.CapUserHeader
		var data [2]unix.CapUserData
		hdr.Version = unix.LINUX_CAPABILITY_VERSION_3
		if err := unix.Capget(&hdr, &data[0]); err == nil {
			eff := uint64(data[0].Effective) | uint64(data[1].Effective)<<32
			if eff&(1<<unix.CAP_BPF) == 0 || eff&(1<<unix.CAP_PERFMON) == 0 {
				return errors.New("rtscope needs root, or the CAP_BPF and CAP_PERFMON capabilities, to load its BPF programs")
			}
		}
	}
	return nil
}

// probeTaskStorage checks the BTF engine's per-task state (cilium/ebpf
// caches the probe), returning its sentence when missing.
func (f *Features) probeTaskStorage() error {
	err := features.HaveMapType(ebpf.TaskStorage)
	switch {
	case errors.Is(err, ebpf.ErrNotSupported):
		f.set(FeatureTaskStorage, missingFeature(FeatureTaskStorage))
		return missingFeature(FeatureTaskStorage)
	case errors.Is(err, unix.EPERM):
		return errors.New("the kernel refused to create BPF maps (EPERM): run as root or with CAP_BPF and CAP_PERFMON")
	}
	f.set(FeatureTaskStorage, nil)
	return nil
}

// probeRingBuf checks the ring buffer both engines' notices need.
func (f *Features) probeRingBuf() error {
	if err := features.HaveMapType(ebpf.RingBuf); errors.Is(err, ebpf.ErrNotSupported) {
		f.set(FeatureRingBuf, missingFeature(FeatureRingBuf))
		return missingFeature(FeatureRingBuf)
	}
	f.set(FeatureRingBuf, nil)
	return nil
}

// probePercpuLookup records whether the stack of what runs instead of a
// waiting task can be sampled: the marking needs
// bpf_map_lookup_percpu_elem (Linux 5.19; compat.bpf.h); without it the
// programs still load, the calls being dead code. Other probe errors are
// inconclusive (the load says more): the feature counts as there.
func (f *Features) probePercpuLookup(forceMissing bool) {
	err := features.HaveProgramHelper(ebpf.TracePoint, asm.FnMapLookupPercpuElem)
	if forceMissing || errors.Is(err, ebpf.ErrNotSupported) {
		f.set(FeaturePercpuLookup, missingFeature(FeaturePercpuLookup))
		return
	}
	f.set(FeaturePercpuLookup, nil)
}

// haveForEachMapElem says whether bpf_for_each_map_elem (Linux 5.13) can
// run: only then may the classic engine's tasks hold their samples until
// they leave their CPU (hold_samples). forceMissing: tests, as
// TestNoReapply.
func haveForEachMapElem(forceMissing bool) bool {
	return !forceMissing && features.HaveProgramHelper(ebpf.RawTracepoint, asm.FnForEachMapElem) == nil
}
