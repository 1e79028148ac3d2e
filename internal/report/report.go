// Package report builds rtscope's per-task reports from the engine's
// statistics and renders them as text (live table, final report) and JSON
// (schema rtscope.watch/v2, documented in docs/json.md).
package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/outfile"
	"github.com/rtscope/rtscope/internal/sched"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
)

// Schema names the JSON layout; it changes only with a new version.
const Schema = "rtscope.watch/v2"

// Report is the result of one watch.
type Report struct {
	Schema     string   `json:"schema"`
	Kernel     string   `json:"kernel"`
	Started    string   `json:"started"`
	DurationNs uint64   `json:"duration_ns"`
	Features   Features `json:"features"`
	Lost       Lost     `json:"lost"`
	Steal      *Steal   `json:"steal"`
	Monitor    *Monitor `json:"monitor"`           // rtscope's own share of the windows; null without analysis
	Command    *Command `json:"command,omitempty"` // watch -- CMD: how it ended
	Actions    *Actions `json:"actions,omitempty"` // with --on-threshold
	// FailOn is the judgement (--fail-on warn|fail) from which a task
	// makes the exit status 2, beside SLO violations; empty: only these.
	FailOn Health `json:"fail_on,omitempty"`
	// Housekeeping: where rtscope's own threads ran; null: unpinned.
	Housekeeping *Housekeeping `json:"housekeeping"`
	// Throttling is the machine's RT throttling configuration (rt_rq
	// bandwidth, the fair server per CPU); omitted by reports before it.
	Throttling *sched.Throttling `json:"throttling,omitempty"`
	Tasks      []*Task           `json:"tasks"`
	// IPIs received per CPU and by sender (watch --ipi); null without.
	IPIs *IPIs `json:"ipis,omitempty"`
	// Hidden are the tasks not shown (Selection): measured, not judged.
	Hidden []*Task `json:"hidden_tasks,omitempty"`
}

// Housekeeping says where rtscope kept its own threads, away from the
// watched tasks, and why.
type Housekeeping struct {
	CPUs      string `json:"cpus"`
	Reason    string `json:"reason"`
	Automatic bool   `json:"automatic"` // chosen by rtscope (not -H)
	Changes   int    `json:"changes"`   // moves after the first choice
	Shared    bool   `json:"shared"`    // watched tasks may run there too
}

// Actions counts the runs of the on-threshold actions: each acts on one
// violation; the violations noticed while they ran are skipped.
type Actions struct {
	ThresholdFired   uint64 `json:"threshold_fired"`
	ThresholdSkipped uint64 `json:"threshold_skipped"`
}

// Command is the command watch launched (watch -- CMD) and how it ended.
type Command struct {
	Argv []string `json:"argv"`
	// ExitStatus is its exit status; nil when a signal killed it.
	ExitStatus *int   `json:"exit_status"`
	Signal     string `json:"signal,omitempty"` // the signal that killed it
	SignalNo   int    `json:"signal_number,omitempty"`
	// StoppedByRtscope: rtscope ended it (--duration, Ctrl-C, SIGTERM), so
	// its status is not its own verdict.
	StoppedByRtscope bool `json:"stopped_by_rtscope"`
}

// Violations counts the SLO violations of every task and metric.
func (r *Report) Violations() uint64 {
	var n uint64
	for _, t := range r.Tasks {
		for _, m := range t.Metrics {
			if m.Violations != nil {
				n += *m.Violations
			}
		}
	}
	return n
}

// Steal is the hypervisor's share of the run: how much of the worst cases
// is the platform's fault.
type Steal struct {
	Readable bool   `json:"readable"` // the engine reads the kernel's steal clock
	Clock    string `json:"clock"`    // how, or why not
	// RunNs: steal of all CPUs over the run, from /proc/stat (jiffies).
	RunNs    uint64   `json:"run_ns"`
	PerCPUNs []uint64 `json:"per_cpu_ns"`
	// Of the worst cases analysed: how many hold steal, how much in all,
	// and how many the hypervisor (or a CPU that did not run) dominates.
	WorstCases           uint64 `json:"worst_cases"`
	WorstCasesWithSteal  uint64 `json:"worst_cases_with_steal"`
	WorstCaseStealNs     uint64 `json:"worst_case_steal_ns"`
	WorstCasesHypervisor uint64 `json:"worst_cases_hypervisor"`
}

// Monitor is rtscope's own share of the windows it explained: the time its
// threads ran on the CPUs of a waiting task (the observer effect), and how
// often that time dominated (cause "monitor"). Not safe for concurrent use.
type Monitor struct {
	PID                   uint32 `json:"pid"`         // rtscope's process: its threads are the monitor
	WorstCases            uint64 `json:"worst_cases"` // analysed
	WorstCasesWithMonitor uint64 `json:"worst_cases_with_monitor"`
	WorstCaseMonitorNs    uint64 `json:"worst_case_monitor_ns"`
	WorstCasesMonitor     uint64 `json:"worst_cases_monitor"` // of them, cause "monitor"
	Violations            uint64 `json:"violations"`          // SLO violations explained
	ViolationsWithMonitor uint64 `json:"violations_with_monitor"`
	ViolationMonitorNs    uint64 `json:"violation_monitor_ns"`
	ViolationsMonitor     uint64 `json:"violations_monitor"` // of them, cause "monitor"
}

// AddWorst counts one analysed worst case.
func (m *Monitor) AddWorst(e Explanation) {
	m.WorstCases++
	if e.MonitorNs > 0 {
		m.WorstCasesWithMonitor++
		m.WorstCaseMonitorNs += e.MonitorNs
	}
	if e.ByMonitor {
		m.WorstCasesMonitor++
	}
}

// AddViolation counts one explained SLO violation.
func (m *Monitor) AddViolation(e Explanation) {
	m.Violations++
	if e.MonitorNs > 0 {
		m.ViolationsWithMonitor++
		m.ViolationMonitorNs += e.MonitorNs
	}
	if e.ByMonitor {
		m.ViolationsMonitor++
	}
}

// AddWorst counts one analysed worst case.
func (s *Steal) AddWorst(e Explanation) {
	s.WorstCases++
	if e.StealNs != nil && *e.StealNs > 0 {
		s.WorstCasesWithSteal++
		s.WorstCaseStealNs += *e.StealNs
	}
	if e.ByPlatform {
		s.WorstCasesHypervisor++
	}
}

// Features says which optional measurements were available.
type Features struct {
	Trace       bool   `json:"trace"`
	UserReturn  string `json:"timer_user,omitempty"` // limits of the timer-user metric, empty when none
	ThreadedIRQ string `json:"handler"`              // how handler time is measured
	Steal       string `json:"steal"`                // how hypervisor steal is read, or why it is not
	// WaiterStacks is empty when the stack of what runs while a tracked
	// task waits is sampled, else why not (kernels before 5.19).
	WaiterStacks string `json:"waiter_stacks,omitempty"`
	// Engine is "btf" or "classic" (kernels without BTF, or --engine
	// classic); EngineNote says why the classic one runs, and
	// EngineLimits what it cannot measure.
	Engine       string   `json:"engine,omitempty"`
	EngineNote   string   `json:"engine_note,omitempty"`
	EngineLimits []string `json:"engine_limits,omitempty"`
	// SleepReasons says how the reason of a blocking sleep is named (or
	// why only sampled stacks name it); PageFaults how page faults and
	// memory locking are measured, or why they are not.
	SleepReasons string `json:"sleep_reasons,omitempty"`
	PageFaults   string `json:"page_faults,omitempty"`
	// Subprograms is empty when the BPF programs' shared subprograms are
	// global functions, verified once, else why the inlined variant ran
	// (kernels before 5.12: the same measurements, a slower start-up).
	Subprograms string `json:"subprograms,omitempty"`
	// IPI lists, with --ipi, what of the IPI hooks this kernel lacks (the
	// features table's sentences); absent when all are there or without
	// --ipi (docs/ipi.md).
	IPI []string `json:"ipi,omitempty"`
}

// Lost counts everything that could not be measured or kept.
type Lost struct {
	Notices         uint64 `json:"notices"`           // ring buffer full: a new maximum's window was not captured, or a histogram carry (65536 samples) was lost
	TasksNotTracked uint64 `json:"tasks_not_tracked"` // stats map full or task storage failed
	Stacks          uint64 `json:"stacks"`
	TracesTruncated uint64 `json:"traces_truncated"`
	// TracesSparse counts worst-case traces that hold only their task's
	// own events for a part (trace.Trace.SparseUntil): its events are
	// whole, the context of other tasks there is not.
	TracesSparse uint64 `json:"traces_sparse"`
	// WindowsLost counts worst-case windows not cut (a snapshot of the
	// rings failed) or cut for an earlier maximum than the metric's.
	WindowsLost uint64 `json:"windows_lost"`
	// EventsMissed counts the engine programs' runs the kernel skipped
	// because a BPF program already ran on the CPU (recursion misses):
	// events not seen. Classic tracepoint programs do not nest, so a timer
	// interrupt during one under a switch storm loses its wakeup.
	EventsMissed uint64 `json:"events_missed,omitempty"`
	// WakeupsUnseen counts wakeups of tracked tasks the kernel did not
	// report: a task asleep since its last switch-out was next seen on its
	// CPU (engine.CounterUnseenWakeups). Their cycles are left out rather
	// than spanning two activations.
	WakeupsUnseen uint64 `json:"wakeups_unseen,omitempty"`
	// ExitedWindowsDropped counts windows of exited tasks released to
	// bound memory (WindowKeeper): their worst cases say so in worst_note.
	ExitedWindowsDropped uint64 `json:"exited_windows_dropped"`
	// LiveWindowsNotKept counts new maxima of live tasks left without a
	// window, or whose window was released for a larger one of the same
	// metric (watch.LiveWindowsPerMetric): their worst cases say so in
	// worst_note.
	LiveWindowsNotKept uint64 `json:"live_windows_not_kept"`
	// TrackingDeferred counts tasks tracked late, from their next
	// switch-in, because the kernel's task storage was busy when they
	// appeared (preemptible kernels); their first events are missing.
	TrackingDeferred uint64 `json:"tracking_deferred"`
}

// Task is one tracked thread.
type Task struct {
	TID      uint32 `json:"tid"`
	PID      uint32 `json:"pid"`
	Comm     string `json:"comm"`
	Policy   string `json:"policy"`
	Priority *int   `json:"priority"` // RT priority 1..99, null for non-RT
	Nice     *int   `json:"nice"`     // null for RT
	Sched    string `json:"sched"`
	// SchedSeen lists the identities (as Sched prints them) the task ran
	// with, in the order first seen, the last one included; SchedChanges
	// counts the changes seen at its switch-ins (a policy set after start).
	SchedSeen    []string `json:"sched_seen"`
	SchedChanges uint32   `json:"sched_changes"`
	// SchedTimes says how long (wall time) it held each identity of
	// SchedSeen, in the same order; null when not measured (a report of an
	// older rtscope).
	SchedTimes      []SchedTime        `json:"sched_times"`
	CPUs            string             `json:"cpus"` // affinity, e.g. "0-1"
	LastCPU         uint32             `json:"last_cpu"`
	Exited          bool               `json:"exited"`
	Counters        Counters           `json:"counters"`
	Hygiene         map[string]uint64  `json:"hygiene"`
	Metrics         map[string]*Metric `json:"metrics"`
	NominalPeriodNs *uint64            `json:"nominal_period_ns"`
	// Deadline is a SCHED_DEADLINE task's reservation and jobs; absent for
	// other tasks.
	Deadline *Deadline `json:"deadline,omitempty"`
	// StartupIterations counts the loop iterations (or timer cycles) of its
	// start-up: before its period settled, or in its --warm-up. They are
	// left out of its metrics and overruns.
	StartupIterations uint64 `json:"startup_iterations"`
	// StartupNs is how long its start-up lasted from tracking; null while
	// it is not over (no period settled yet).
	StartupNs *uint64 `json:"startup_ns"`
	// IPIs received on its CPU while it ran or waited there, by sender
	// and kind (watch --ipi); null without.
	IPIs []IPISender `json:"ipis,omitempty"`
	// TimerSlackNs is the thread's timer slack, read from
	// /proc/TID/timerslack_ns while it runs (at discovery, and again after
	// a policy change); null when unread.
	TimerSlackNs *uint64 `json:"timer_slack_ns"`
	// Health is the task's judgement (ok, warn, fail, unknown) and
	// HealthReason why, in one phrase; Headline is its worst metric against
	// its SLO or period; Findings its causes, one per cause, ranked by the
	// time they cost it (Judge).
	Health       Health    `json:"health"`
	HealthReason string    `json:"health_reason"`
	Headline     string    `json:"headline"`
	Findings     []Finding `json:"findings"`
	// NoiseNsPerS is its noise time per second of wall time it was
	// tracked (the noise metric's sum over SchedTimes' total): a busy
	// poller's share of its CPU it did not get; absent without noise
	// samples or wall time (Judge).
	NoiseNsPerS *float64 `json:"noise_ns_per_s,omitempty"`
	// NoiseByCause is its noise intervals' parts by cause (irq,
	// timer_irq, softirq, preemption, throttling, steal): how many and
	// their own time; absent without noise, and in reports of an older
	// rtscope.
	NoiseByCause map[trace.NoiseCause]NoiseCauseTotal `json:"noise_by_cause,omitempty"`

	id uint64
}

// SchedTime is the wall time a task held one identity (policy and normal
// priority: a priority-inheritance boost is not one).
type SchedTime struct {
	Sched string `json:"sched"`
	Ns    uint64 `json:"ns"`
	// Last: the identity it holds now (or held at its exit), whose time
	// runs to its last switch-out.
	Last bool `json:"last"`
}

// Counters of scheduling events of a task.
type Counters struct {
	Wakeups           uint64 `json:"wakeups"`
	VoluntarySwitches uint64 `json:"voluntary_switches"`
	Preemptions       uint64 `json:"preemptions"`
	TimerReleases     uint64 `json:"timer_releases"`
	Overruns          uint64 `json:"overruns"`
	// Throttled counts its preempted switch-outs to a lower class, a
	// real-time or DEADLINE task's throttled intervals (RT throttling, the
	// fair server); omitted when none.
	Throttled uint64 `json:"throttled,omitempty"`
}

// Hygiene counter names (enum rts_hygiene). The kernel keeps the first
// engine.HygieneCount, whether the task is alive or exited: page faults are
// counted from task_struct at each switch-out, and memory_not_locked (1: no
// mlockall(MCL_FUTURE) and no locked page in its mm) is read from its mm.
// The last one comes from traces (internal/explain).
var HygieneNames = []string{"relative_timer_sleeps", "realtime_clock_sleeps", "woken_by_lower_priority", "migrations",
	HygieneMinorFaults, HygieneMajorFaults, HygieneMemNotLocked, "futex_waits_without_pi"}

// Hygiene counters of memory, kept by the engine.
const (
	HygieneMinorFaults  = "minor_page_faults"
	HygieneMajorFaults  = "major_page_faults"
	HygieneMemNotLocked = "memory_not_locked"
)

// Metric is the summary of one metric of one task.
type Metric struct {
	metric.Summary              // count, min, avg, max, percentiles
	SLONs          *uint64      `json:"slo_ns"`
	Violations     *uint64      `json:"violations"` // null without an SLO
	Worst          *trace.Trace `json:"worst"`
	// WorstNote says why there is no worst window although there is a
	// maximum (its window was lost), empty otherwise.
	WorstNote string   `json:"worst_note,omitempty"`
	Verdict   string   `json:"verdict,omitempty"`
	Cause     string   `json:"cause,omitempty"` // of the worst case (internal/analysis causes)
	Analysis  Analysis `json:"analysis,omitempty"`
	// ViolationCauses explains every SLO violation (rate-limited): a
	// histogram of causes; null without an SLO or with --no-trace.
	ViolationCauses *Violations `json:"violation_causes,omitempty"`
	// Series is the metric over time (watch --html), absent otherwise.
	Series *Series `json:"series,omitempty"`
	// Histogram is every sample's bucket: [lower bound ns, count] pairs of
	// the non-empty buckets, lowest first (metric.BucketRange). A JSON
	// report read back keeps it, so its HTML page can be drawn again.
	Histogram [][2]uint64 `json:"histogram,omitempty"`

	stats metric.Stats
}

// sparseHist is h's non-empty buckets as [lower bound ns, count] pairs.
func sparseHist(h []uint32) [][2]uint64 {
	var out [][2]uint64
	for b, c := range h {
		if c != 0 {
			lo, _ := metric.BucketRange(b)
			out = append(out, [2]uint64{lo, uint64(c)})
		}
	}
	return out
}

// statsOf rebuilds the statistics of a metric read from JSON: the summary's
// count, extremes and sum (from the mean), and the histogram.
func statsOf(m *Metric) metric.Stats {
	st := metric.Stats{Count: m.Count}
	if m.MinNs != nil {
		st.Min = *m.MinNs
	}
	if m.MaxNs != nil {
		st.Max = *m.MaxNs
	}
	if m.AvgNs != nil {
		st.Sum = uint64(*m.AvgNs*float64(m.Count) + 0.5)
	}
	if m.SLONs != nil {
		st.SLO = *m.SLONs
	}
	if m.Violations != nil {
		st.Violations = *m.Violations
	}
	if len(m.Histogram) > 0 {
		st.Hist = make([]uint32, metric.Buckets)
		for _, bc := range m.Histogram {
			st.Hist[metric.Bucket(bc[0])] += uint32(bc[1])
		}
	}
	return st
}

// SetWorst attaches tr as the window of m's maximum, unless it was cut for
// a smaller value: when the maximum's own notice or snapshot was lost, the
// last window cut is an earlier, smaller maximum's, and showing it as the
// worst case would explain the wrong event. It says whether tr was taken.
func (m *Metric) SetWorst(tr *trace.Trace) bool {
	// A larger value is a maximum reached after the statistics were read.
	if m.MaxNs != nil && tr.Value < *m.MaxNs {
		m.Worst = nil
		m.WorstNote = fmt.Sprintf("the window of the maximum (%s us) was lost (its notice or snapshot failed); "+
			"the last one cut, of an earlier maximum (%s us), is not shown as it", units.Us(*m.MaxNs), units.Us(tr.Value))
		return false
	}
	m.Worst, m.WorstNote = tr, ""
	return true
}

// UnmarshalJSON reads a metric of a JSON report: its analysis becomes a
// Decoded (an interface field has no type to decode into).
func (m *Metric) UnmarshalJSON(b []byte) error {
	type plain Metric // without this method
	var x struct {
		*plain
		Analysis Decoded `json:"analysis,omitempty"`
	}
	x.plain = (*plain)(m)
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	if x.Analysis != nil {
		m.Analysis = x.Analysis
	}
	m.stats = statsOf(m)
	m.repercentile()
	return nil
}

// repercentile sets m's percentiles again from its histogram, when it has
// one: a report read back (a recorded one included) shows them as this
// rtscope computes them (interpolated within their bucket, where older
// ones wrote a bucket's midpoint).
func (m *Metric) repercentile() {
	if len(m.stats.Hist) == 0 || m.Count == 0 {
		return
	}
	s := metric.Summarize(m.stats)
	m.P50Ns, m.P90Ns, m.P99Ns, m.P999Ns = s.P50Ns, s.P90Ns, s.P99Ns, s.P999Ns
}

// Stats returns the raw statistics behind m.
func (m *Metric) Stats() metric.Stats { return m.stats }

func u64p(v uint64) *uint64 { return &v }

// FromStats converts engine statistics to a report task (traces added later).
func FromStats(s *engine.TaskStats) *Task {
	t := &Task{
		TID: s.Tid, PID: s.Pid, Comm: engine.CommString(s.Comm), LastCPU: s.LastCpu,
		Exited: s.Exited != 0, id: s.Id,
		Policy: sched.PolicyName(s.Policy), Sched: sched.Describe(s.Policy, int(s.Prio)),
		CPUs: CPUList(s.CpusMask, uint64(s.NrCpusAllowed)),
		Counters: Counters{Wakeups: s.Wakeups, VoluntarySwitches: s.SwitchesVoluntary,
			Preemptions: s.SwitchesPreempted, TimerReleases: s.TimerReleases, Overruns: s.Overruns,
			Throttled: uint64(s.Throttled)},
		Hygiene: map[string]uint64{},
		Metrics: map[string]*Metric{},
	}
	if s.NominalPeriod != 0 {
		t.NominalPeriodNs = u64p(s.NominalPeriod)
	}
	t.Deadline = deadlineOf(s)
	t.NoiseByCause = noiseByCause(s)
	t.SchedChanges = s.SchedChanges
	for i, id := range engine.SchedSeen(s) {
		d := sched.Describe(id.Policy, id.Prio)
		t.SchedSeen = append(t.SchedSeen, d)
		st := SchedTime{Sched: d, Ns: uint64(s.SchedMs[i]) * 1e6, Last: uint32(i) == s.SchedCur}
		if st.Last {
			st.Ns += s.SchedOpenNs
		}
		t.SchedTimes = append(t.SchedTimes, st)
	}
	t.StartupIterations = uint64(s.StartupIterations)
	if s.StartupUs != 0 {
		t.StartupNs = u64p(uint64(s.StartupUs) * 1000)
	}
	v, rt := sched.UserPrio(int(s.Prio))
	if rt && sched.IsRT(s.Policy) {
		t.Priority = &v
	} else if !rt {
		t.Nice = &v
	}
	for i, n := range HygieneNames {
		if i < len(s.Hygiene) {
			t.Hygiene[n] = s.Hygiene[i]
		}
	}
	for _, id := range metric.All() {
		ms := s.M[id]
		st := MetricStats(s, id)
		m := &Metric{Summary: metric.Summarize(st), stats: st, Histogram: sparseHist(st.Hist)}
		if ms.Slo != 0 {
			m.SLONs, m.Violations = u64p(ms.Slo), u64p(ms.Violations)
		}
		t.Metrics[id.String()] = m
	}
	return t
}

// MetricStats is one metric of the engine's statistics of a task.
func MetricStats(s *engine.TaskStats, id metric.ID) metric.Stats {
	ms := &s.M[id]
	return metric.Stats{Count: ms.Count, Sum: ms.Sum, Min: ms.Min, Max: ms.Max, MaxStart: ms.MaxStart,
		MaxEnd: ms.MaxEnd, SLO: ms.Slo, Violations: ms.Violations, Hist: ms.Hist[:]}
}

// Placeholder is a task known from its start notice, before its statistics are read.
func Placeholder(id uint64, tid uint32) *Task {
	return &Task{TID: tid, id: id, Hygiene: map[string]uint64{}, Metrics: map[string]*Metric{}}
}

// SchedHistory says how the task's identity changed during the run, with
// the time it held each ("policy changed once during the run: FIFO 80 for
// 5.0 s, OTHER nice 0 for 0.1 s at exit"), empty when it did not. The last
// identity alone is not the answer: rt-app's thread was reported OTHER,
// its policy at exit, after it ran FIFO.
func (t *Task) SchedHistory() string {
	if t.SchedChanges == 0 {
		return ""
	}
	times := "once"
	if t.SchedChanges > 1 {
		times = fmt.Sprintf("%d times", t.SchedChanges)
	}
	if len(t.SchedTimes) == 0 {
		return fmt.Sprintf("policy changed %s during the run (seen %s; last %s)", times, strings.Join(t.SchedSeen, ", "), t.Sched)
	}
	// In the order first seen, the one it holds now last ("at exit").
	held := make([]string, 0, len(t.SchedTimes))
	last := ""
	for _, st := range t.SchedTimes {
		h := st.Sched + " for " + seconds(st.Ns)
		if st.Last {
			last = h + map[bool]string{true: " at exit", false: " (now)"}[t.Exited]
			continue
		}
		held = append(held, h)
	}
	if last != "" {
		held = append(held, last)
	}
	return fmt.Sprintf("policy changed %s during the run: %s", times, strings.Join(held, ", "))
}

// seconds prints a span of wall time ("5.0 s"), the unit of a policy held.
func seconds(ns uint64) string { return strconv.FormatFloat(float64(ns)/1e9, 'f', 1, 64) + " s" }

// Startup says what the task's start-up left out of its metrics, in one
// phrase ("start-up: 4 iterations in 21300.0 us left out"), empty when
// nothing was.
func (t *Task) Startup() string {
	if t.StartupIterations == 0 {
		return ""
	}
	s := fmt.Sprintf("start-up: %d iterations", t.StartupIterations)
	if t.StartupIterations == 1 {
		s = "start-up: 1 iteration"
	}
	if t.StartupNs != nil {
		s += " in " + units.Us(*t.StartupNs) + " us"
	}
	return s + " left out"
}

// ID is the engine's tracking id of the task.
func (t *Task) ID() uint64 { return t.id }

// CPUList renders an affinity mask of CPUs 0..63 as "0-1,3".
func CPUList(mask uint64, n uint64) string {
	if mask == 0 {
		return "-"
	}
	var parts []string
	for i := 0; i < 64; {
		if mask&(1<<uint(i)) == 0 {
			i++
			continue
		}
		j := i
		for j+1 < 64 && mask&(1<<uint(j+1)) != 0 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(i))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", i, j))
		}
		i = j + 1
	}
	s := strings.Join(parts, ",")
	if n > 64 {
		s += fmt.Sprintf(" (+%d more)", n-uint64(popcount(mask)))
	}
	return s
}

func popcount(v uint64) int {
	n := 0
	for ; v != 0; v &= v - 1 {
		n++
	}
	return n
}

// Sort orders tasks by pid then tid.
func (r *Report) Sort() {
	sort.Slice(r.Tasks, func(i, j int) bool {
		if r.Tasks[i].PID != r.Tasks[j].PID {
			return r.Tasks[i].PID < r.Tasks[j].PID
		}
		return r.Tasks[i].TID < r.Tasks[j].TID
	})
}

// WriteJSON writes the report to path ("-" for stdout) through
// internal/outfile: complete or not at all.
func (r *Report) WriteJSON(path string) error {
	f, err := outfile.Create(path)
	if err != nil {
		return err
	}
	return f.Fill(r.EncodeJSON)
}

// EncodeJSON writes the report as one compact JSON document (it is for
// machines: `jq .` indents it), streamed.
func (r *Report) EncodeJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := json.NewEncoder(bw).Encode(r); err != nil {
		return err
	}
	return bw.Flush()
}
