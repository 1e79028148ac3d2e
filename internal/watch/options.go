package watch

import (
	"io"
	"time"

	"github.com/rtscope/rtscope/internal/action"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/slo"
	"github.com/rtscope/rtscope/internal/target"
	"github.com/rtscope/rtscope/internal/trace"
)

// Options of one watch.
type Options struct {
	Targets     target.Spec
	Duration    time.Duration // 0: until stopped or targets gone
	Interval    time.Duration // live table period
	Poll        time.Duration // notice polling period (no BPF wakeups; 0: 10 ms, NoTracePoll with NoTrace)
	Quiet       bool          // no live table
	Traces      bool          // print worst-case event listings in the text report
	Verbose     bool          // print every task's tables and per-metric verdicts (report.TextOptions)
	FailOn      report.Health // --fail-on: tasks judged this or worse exit 2 (report.Report.FailOn)
	NoTrace     bool          // no flight recorder, no worst-case windows
	TraceEvents uint32        // flight recorder events per CPU
	Engine      string        // engine.EngineAuto, EngineBTF or EngineClassic (--engine)
	BTFFile     string        // --btf: the kernel's vmlinux BTF as a file (engine.Config.BTFFile)
	IPI         bool          // --ipi: IPIs recorded with their senders (engine.Config.IPI)
	TraceMax    int           // events kept per worst-case window (0: default)
	// StackAfter: a tracked task waits this long for its CPU before the
	// kernel stack of what runs instead is taken (nil:
	// engine.DefaultStackMinWait; 0: at once).
	StackAfter *time.Duration
	SLO        slo.Set
	JSONPath   string
	// PerfettoPath: write every worst-case and violation window as a
	// Perfetto trace (internal/perfetto).
	PerfettoPath string
	// HTMLPath: write the report as one self-contained HTML page
	// (internal/htmlreport); it draws the series, so it needs Series.
	HTMLPath string
	// Series: record each metric over time, one point a second
	// (report.Series), for the HTML report.
	Series bool
	// Show: report only tasks with these names; All: every task. Without
	// either, the tasks that matter (report.Selection), the others hidden.
	Show []string
	All  bool
	// Housekeeping CPUs for rtscope's own threads (empty: no pinning). On a
	// kernel without full preemption, rtscope's time in the kernel (reading
	// maps) cannot be preempted by the tasks it watches.
	Housekeeping []int
	// AutoHousekeeping (without Housekeeping): choose rtscope's CPUs from
	// the watched tasks, and follow their changes (cpuset.Housekeeping).
	AutoHousekeeping bool
	Out              io.Writer
	// Analyze, when set, explains a worst-case window (internal/analysis).
	Analyze func(t *report.Task, m metric.ID, tr *trace.Trace) report.Explanation
	// Explain, when set, explains the window of each SLO violation
	// (rate-limited in the kernel and by ViolationBudget) into a cause
	// histogram per task and metric. Pure: no side effects on t.
	Explain func(t *report.Task, m metric.ID, tr *trace.Trace) report.Explanation
	// OnThreshold runs when an SLO is violated (the first violation noticed
	// in a reader period), at most one run at a time; without continue,
	// watching then stops. OnEnd runs once the report is written.
	OnThreshold action.List
	OnEnd       action.List
	// Log receives the actions' messages and their commands' output
	// (nil: stderr).
	Log io.Writer
	// Ready is called once every existing target is tracked (before a launched command runs).
	Ready func()
	// Ending, when set, is called once the run ends, before the programs
	// are detached: what the kernel counted while they were attached
	// (tests; detaching patches kernel text, which sends IPIs itself).
	Ending func()
	// Stopped, when set, sees the engine once the final reports are built, before it is closed (tests, benchmarks).
	Stopped func(e *engine.Engine)
	// WarmUp: every sample of a task's first WarmUp after it is tracked
	// is its start-up, left out of its metrics (0: none); nil: the
	// start-up is detected (engine.Config.WarmUp).
	WarmUp *time.Duration
}
