// Package watch is the per-task monitoring tool of a session
// (internal/session runs its lifecycle): it registers the targets, polls
// statistics and new-maximum notices, cuts worst-case traces, prints the
// live table and the final reports.
package watch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/action"
	"github.com/rtscope/rtscope/internal/cpuset"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/htmlreport"
	"github.com/rtscope/rtscope/internal/ksym"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/outfile"
	"github.com/rtscope/rtscope/internal/perfetto"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/sched"
	"github.com/rtscope/rtscope/internal/session"
	"github.com/rtscope/rtscope/internal/slo"
	"github.com/rtscope/rtscope/internal/target"
	"github.com/rtscope/rtscope/internal/trace"
)

// DefaultTraceMax bounds the events kept per worst-case window: with many
// tracked tasks, 9 windows each, reports would otherwise reach gigabytes.
const DefaultTraceMax = 1024

// ExitedWindowsPerMetric bounds the decoded windows exited tasks keep for
// the final report, per metric (report.WindowKeeper): a window of 1024
// events takes about 400 KB (392-byte trace.Event), so at most about 60 MB
// for the 9 metrics, however many short-lived threads come and go.
const ExitedWindowsPerMetric = 16

// ViolationBudget bounds the SLO-violation windows explained per second,
// all tasks together: each costs a cut, a decode and an analysis (about
// 0.1-1 ms), and the monitor must not take a CPU from what it watches. The
// rest are counted as not explained, with the reason.
const ViolationBudget = 50

// NoTracePoll is the notice polling period without the flight recorder:
// no ring of events must be read before it wraps, and the notices left
// (task starts and exits, histogram carries, and violations only for
// on-threshold actions, one a millisecond a task; no maxima) are few, 2000
// fit in the notice ring. Each poll is a wakeup, and on a
// VM a Go loop waking every 10 ms and doing nothing else took 0.16-0.64%
// of a CPU.
const NoTracePoll = 100 * time.Millisecond

// Options of one watch.
type Options struct {
	Targets     target.Spec
	Duration    time.Duration // 0: until stopped or targets gone
	Interval    time.Duration // live table period
	Poll        time.Duration // notice polling period (no BPF wakeups; 0: 10 ms, NoTracePoll with NoTrace)
	Quiet       bool          // no live table
	Traces      bool          // print worst-case event listings in the text report
	NoTrace     bool          // no flight recorder, no worst-case windows
	TraceEvents uint32        // flight recorder events per CPU
	Engine      string        // engine.EngineAuto, EngineBTF or EngineClassic (--engine)
	BTFFile     string        // --btf: the kernel's vmlinux BTF as a file (engine.Config.BTFFile)
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
	Show   []string // report only tasks with these names (empty: all)
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
	// Stopped, when set, sees the engine once the final reports are built, before it is closed (tests, benchmarks).
	Stopped func(e *engine.Engine)
	// Hooks for an always-on agent (internal/serve). All run on the
	// session's goroutine, in the order of events, so an exporter sees a
	// task's last live statistics before its exit and never after it.
	Hooks Hooks
	// WarmUp: every sample of a task's first WarmUp after it is tracked
	// is its start-up, left out of its metrics (0: none); nil: the
	// start-up is detected (engine.Config.WarmUp).
	WarmUp *time.Duration
}

// Hooks let a long-running session export what it measures. Each is
// optional and runs on the session's goroutine: it must not block.
type Hooks struct {
	// Tick, every TickEvery (default 1s), gets the engine and the
	// statistics of every live task (exited tasks excluded: they went to
	// Exit first).
	TickEvery time.Duration
	// windowsLost counts worst-case windows not cut (snapshot failed).
	Tick func(e *engine.Engine, live []*engine.TaskStats, windowsLost uint64)
	// Start gets each task tracked, by tracking id and tid, when its start
	// notice is read (within Options.Poll of its start; not for a task
	// whose notice was lost).
	Start func(id uint64, tid uint32)
	// Exit gets a task's final statistics just before the engine forgets
	// them.
	Exit func(st *engine.TaskStats)
	// Violation gets each SLO violation noticed, with the task's tracking
	// id and name (empty when not known yet): its analysed cause, or
	// notAnalysed with the reason (report.NotAnalysed*).
	Violation func(id uint64, comm string, m metric.ID, cause, notAnalysed string)
	// DropExited: forget an exited task's report once Exit has seen it,
	// so that task churn does not grow memory (no final report of it).
	DropExited bool
	// NeverEnd: the session ends only by its context or duration, never
	// because its targets are gone (new ones may come).
	NeverEnd bool
	// Control, when set, runs functions on the session's goroutine with
	// the engine (runtime target changes); each must return quickly.
	Control <-chan func(e *engine.Engine)
	// Window, when set, gets each new worst-case window (worst true) and
	// each explained SLO-violation window, with its task and value (ns).
	// get decodes the window and explains it (Options.Analyze for a worst
	// case, Options.Explain for a violation): worst windows are decoded
	// only when asked, and get is valid only during the call.
	Window func(worst bool, t *report.Task, m metric.ID, value uint64, get func() (*trace.Trace, report.Explanation))
}

// watcher is the watch tool of a session.Run: the methods of session.Tool
// and the state they share, all on the session's goroutine.
type watcher struct {
	o         Options
	out       *outputs
	eng       *engine.Engine
	names     *trace.Names
	tasks     map[uint64]*report.Task             // by tracking id, live and exited
	traces    map[uint64]map[metric.ID]*trace.Raw // worst windows, decoded only for final reports
	final     map[uint64]bool                     // final report printed
	lostSeen  uint64                              // lost notices already swept for
	lastSweep time.Time                           // the last look at the lost notices (sweepEvery)
	snap      *trace.Snapshot                     // ring copy, reused every poll
	// longWindows: a tracked task is released by a timer (a notice of a
	// periodic metric was seen): its windows of a period outlast the
	// rings under load, so the rings are read at every poll from then on
	// (trace.Snapshot.Follow, in place) and such tasks' own events kept
	// beyond them (keepOwn). The rings are copied only for a window.
	longWindows bool
	followed    time.Time // the last Follow
	started     time.Time
	// SLO violations explained so far, per task and metric, and this
	// second's explanation budget.
	viol        map[uint64]map[metric.ID]*report.Violations
	budgetStart time.Time
	budgetUsed  int
	steal       *report.Steal
	stealStart  []uint64
	// rtscope's own threads (the monitor), re-read at most every
	// monitorRefresh, and their share of the windows explained.
	monitor     *report.Monitor
	monitorTIDs []uint32
	monitorRead time.Time
	// timer slack of each task, read from /proc while it runs (slackOf)
	slack map[uint64]slackRead
	// On-threshold actions: done is non-nil while they run (one run at a
	// time); crossings noticed meanwhile are counted, not acted on.
	actDone    chan struct{}
	actFired   uint64
	actSkipped uint64
	actStop    bool // they ran without continue: watching stops
	// series of each task and metric (Options.Series)
	samplers map[uint64]map[metric.ID]*report.Sampler
	house    *report.Housekeeping // where rtscope's own threads run
	// the periodic jobs' statistics, and when they were read (stats)
	statsAll  []*engine.TaskStats
	statsRead time.Time
	// windows not cut (snapshot failed) or stale (Metric.SetWorst)
	windowsLost uint64
	// decoded windows of exited tasks, bounded (report.WindowKeeper)
	exitedWindows report.WindowKeeper
	// which live tasks' maxima get a window (LiveWindowsPerMetric), and
	// the (task, metric) maxima left without one
	live    liveWindows
	notKept map[uint64]map[metric.ID]bool
	// the launched command (Options.Targets.Command): cmdWait is closed
	// when it has ended, cmdExited once that was seen
	launched    *target.Launched
	cmdWait     chan struct{}
	cmdExited   bool
	everTracked bool // some task was tracked (targetsGone)
	// the final report, and the error of writing its files
	rep      *report.Report
	writeErr error
}

// Run watches until the duration ends, ctx is cancelled, or every target
// is gone (internal/session runs the lifecycle; watcher is the watch tool).
func Run(ctx context.Context, o Options) (*report.Report, error) {
	if err := o.Targets.Validate(); err != nil {
		return nil, err
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.TraceMax <= 0 {
		o.TraceMax = DefaultTraceMax
	}
	if o.Poll <= 0 {
		// Windows must be cut before the rings wrap: 8192 events per CPU
		// last ~40 ms even at 200,000 scheduler events per second and CPU.
		o.Poll = 10 * time.Millisecond
		if o.NoTrace {
			o.Poll = NoTracePoll
		}
	}
	// Output files are opened now: a bad path fails before the run, not
	// after it.
	out, err := openOutputs(o)
	if err != nil {
		return nil, err
	}
	defer out.abort() // kept only when committed at the end
	stackAfter := uint64(engine.DefaultStackMinWait)
	if o.StackAfter != nil {
		stackAfter = uint64(*o.StackAfter)
	}
	warmUp := time.Duration(0) // detected
	if o.WarmUp != nil {
		warmUp = *o.WarmUp
		if warmUp == 0 {
			warmUp = -1 // none left out: engine.Config's < 0
		}
	}
	s := &watcher{o: o, out: out,
		tasks: map[uint64]*report.Task{}, traces: map[uint64]map[metric.ID]*trace.Raw{},
		final: map[uint64]bool{}, viol: map[uint64]map[metric.ID]*report.Violations{},
		exitedWindows: report.WindowKeeper{PerMetric: ExitedWindowsPerMetric},
		live:          liveWindows{PerMetric: LiveWindowsPerMetric}, notKept: map[uint64]map[metric.ID]bool{},
		monitor: &report.Monitor{PID: uint32(os.Getpid())}, slack: map[uint64]slackRead{}}
	spec := session.Spec{Name: "watch", ClassicHint: " (see features.engine_limits in --json)",
		Engine: engine.Config{Trace: !o.NoTrace, SleepStacks: true, StackMinWait: stackAfter, FlightPerCPU: o.TraceEvents,
			SLODefault: o.SLO.Default, SLOByID: o.SLO.ByID, ViolationNotices: len(o.OnThreshold) > 0, Engine: o.Engine, BTFFile: o.BTFFile,
			WarmUp: warmUp},
		Housekeeping: o.Housekeeping, Duration: o.Duration, Poll: o.Poll, Control: o.Hooks.Control,
		Every: []session.Job{{Every: o.Interval, Run: s.liveTable}}}
	if o.Series {
		s.samplers = map[uint64]map[metric.ID]*report.Sampler{}
		spec.Every = append(spec.Every, session.Job{Every: seriesInterval, Run: func() bool { s.sampleSeries(); return false }})
	}
	if o.Hooks.Tick != nil {
		every := o.Hooks.TickEvery
		if every <= 0 {
			every = time.Second
		}
		spec.Every = append(spec.Every, session.Job{Every: every, Run: func() bool { s.tick(); return false }})
	}
	if o.AutoHousekeeping && len(o.Housekeeping) == 0 {
		spec.Every = append(spec.Every, session.Job{Every: housekeepEvery, Run: func() bool { s.housekeep(); return false }})
	}
	if _, err := session.Run(ctx, spec, s); err != nil {
		return nil, err
	}
	return s.rep, s.writeErr
}

// PollsDuringScan: watch's Poll runs between the scan's batches too
// (session.ScanPoller), so that the first windows of a task tracked early
// in a long scan are cut before the rings wrap.
func (s *watcher) PollsDuringScan() {}

// Prepare: watch tunes nothing before the engine loads.
func (s *watcher) Prepare() error { return nil }

// Attached keeps the engine and starts the run's accounting.
func (s *watcher) Attached(e *engine.Engine) error {
	syms, _ := ksym.Kernel()
	s.eng, s.names, s.started = e, trace.NewNames(syms, e.Stack), time.Now()
	s.steal = &report.Steal{Readable: e.Features.Steal.Readable, Clock: e.Features.Steal.Method}
	s.stealStart, _ = engine.StealTotals()
	return nil
}

// Register registers the targets, and launches the command stopped at its
// first instruction: its tasks are tracked from there (FlagFollow).
func (s *watcher) Register(e *engine.Engine) error {
	idx := uint32(0)
	for _, tid := range s.o.Targets.TIDs {
		if err := e.WantTID(uint32(tid), idx, 0); err != nil {
			return fmt.Errorf("--tid %d: %w", tid, err)
		}
		idx++
	}
	for _, pid := range s.o.Targets.PIDs {
		if err := e.WantTGID(uint32(pid), idx); err != nil {
			return fmt.Errorf("--pid %d: %w", pid, err)
		}
		idx++
	}
	for _, c := range s.o.Targets.Comms {
		if err := e.WantComm(c, idx); err != nil {
			return fmt.Errorf("--comm %s: %w", c, err)
		}
		idx++
	}
	for _, c := range s.o.Targets.Cgroups {
		_, id, err := target.Cgroup(c)
		if err == nil {
			err = e.WantCgroup(id, idx)
		}
		if err != nil {
			return fmt.Errorf("--cgroup %s: %w", c, err)
		}
		idx++
	}
	if len(s.o.Targets.Command) == 0 {
		return nil
	}
	launched, err := target.Launch(s.o.Targets.Command, s.o.Targets.User)
	if err != nil {
		return err
	}
	s.launched = launched // killed by Close if the session fails from here
	return e.WantTID(uint32(launched.Pid), idx, engine.FlagFollow)
}

// Tracking says so (Options.Ready), lets the launched command run, and
// moves rtscope's own threads to their CPUs.
func (s *watcher) Tracking(e *engine.Engine) error {
	if s.launched != nil {
		// Only the command's first task is wanted by tid; its descendants follow it.
		e.ForgetTID(uint32(s.launched.Pid))
	}
	if s.o.Ready != nil {
		s.o.Ready()
	}
	if s.launched != nil {
		if err := s.launched.Resume(); err != nil {
			return err
		}
		done, cmd := make(chan struct{}), s.launched.Cmd
		s.cmdWait = done
		// Its status is read from Cmd.ProcessState at the end.
		go func() { _ = cmd.Wait(); close(done) }()
	}
	// Pinned after the command is forked: it keeps its own affinity.
	if len(s.o.Housekeeping) > 0 {
		if err := cpuset.PinProcess(cpuset.Mask(s.o.Housekeeping), nil); err != nil {
			return err
		}
		s.house = &report.Housekeeping{CPUs: cpuset.FormatList(s.o.Housekeeping), Reason: "-H"}
	}
	if s.o.AutoHousekeeping && len(s.o.Housekeeping) == 0 {
		s.housekeep()
	}
	if s.o.Hooks.Tick != nil {
		s.tick()
	}
	return nil
}

// Poll handles the notices, finds what lost notices hid, and ends the
// session when every target is gone or the on-threshold actions, which
// ran without continue, are done.
func (s *watcher) Poll(ns []engine.Notice) (bool, error) {
	if s.actDone != nil {
		select {
		case <-s.actDone:
			s.actDone = nil
			if s.actStop {
				fmt.Fprintln(s.o.Log, "rtscope watch: SLO violated: stopping after the on-threshold actions (add continue to go on)")
				return true, nil
			}
		default:
		}
	}
	s.checkCmd()
	if err := s.handle(ns); err != nil {
		return false, err
	}
	if err := s.sweep(false); err != nil {
		return false, err
	}
	if len(s.tasks) > 0 {
		s.everTracked = true
	}
	return s.targetsGone(), nil
}

// checkCmd notes whether the launched command has ended (without waiting).
func (s *watcher) checkCmd() {
	if s.cmdWait == nil || s.cmdExited {
		return
	}
	select {
	case <-s.cmdWait:
		s.cmdExited = true
	default:
	}
}

// liveTable prints the live table (Options.Interval, unless Quiet).
func (s *watcher) liveTable() bool {
	if !s.o.Quiet {
		s.refresh()
		report.Live(s.o.Out, s.shown(false), time.Since(s.started).Round(time.Millisecond).String())
		fmt.Fprintln(s.o.Out)
	}
	return false
}

// Finish stops the launched command if it still runs, collects the last
// notices and statistics, and writes the reports and files.
func (s *watcher) Finish(session.End) error {
	o := s.o
	if s.actDone != nil {
		<-s.actDone // on-threshold actions still running: let them finish
		s.actDone = nil
	}
	s.checkCmd() // an exit at the same time as the end: not stopped by rtscope
	stoppedCmd := s.launched != nil && !s.cmdExited
	if stoppedCmd {
		// Stopped before the command ended: stop it too.
		_ = s.launched.Cmd.Process.Signal(unix.SIGTERM)
		select {
		case <-s.cmdWait:
		case <-time.After(2 * time.Second):
			_ = s.launched.Cmd.Process.Kill()
			<-s.cmdWait
		}
		s.cmdExited = true
	}
	// The run ends here: the programs stop, so that nothing overwrites the
	// flight recorder while the last windows are cut and every task's
	// statistics are read. Those reads took longer than a ring lasts at
	// 1000 tracked threads (480,000 events a second a CPU: 17 ms), and the
	// windows cut after them came out truncated.
	if err := s.eng.Detach(); err != nil {
		return err
	}
	// Collect what is left: late notices, final statistics of every task.
	s.statsRead = time.Time{} // read afresh
	if err := s.poll(); err != nil {
		return err
	}
	if err := s.sweep(true); err != nil {
		return err
	}
	s.refresh()
	// A program still running as its link closed may have queued a
	// notice after the first poll: take its window.
	if err := s.poll(); err != nil {
		return err
	}
	s.statsRead = time.Time{} // after that poll
	if o.Series {
		s.sampleSeries() // the last, partial interval
	}
	if o.Hooks.Tick != nil {
		s.tick() // the last statistics before the engine closes
	}
	rep := s.build()
	if s.launched != nil {
		rep.Command = commandResult(o.Targets.Command, s.launched.Cmd.ProcessState, stoppedCmd)
	}
	// The final reports through one buffer: a write a line to a terminal
	// or pipe took 128 ms of the stop at 1000 tracked threads.
	direct := o.Out
	out := bufio.NewWriterSize(direct, 64<<10)
	s.o.Out, o.Out = out, out
	// Headline first: whether each task is healthy and, if not, why mostly;
	// the full tables follow (those of exited tasks came when they exited).
	fmt.Fprintln(o.Out)
	report.WriteHeadlines(o.Out, rep.Tasks)
	for _, t := range rep.Tasks {
		if !s.final[t.ID()] {
			report.Final(o.Out, t, o.Traces)
		}
	}
	report.WriteSummary(o.Out, rep, s.live.PerMetric, s.exitedWindows.PerMetric)
	if err := out.Flush(); err != nil {
		fmt.Fprintf(o.Log, "rtscope watch: the final report: %v\n", err)
	}
	s.o.Out, o.Out = direct, direct
	if o.Stopped != nil {
		o.Stopped(s.eng)
	}
	s.rep = rep
	if err := s.out.write(rep); err != nil {
		s.writeErr = err // the report is returned with it
		return nil
	}
	if len(o.OnEnd) > 0 {
		o.OnEnd.Run(s.endEvent(rep), o.Log)
	}
	return nil
}

// Close kills the launched command if the session ends before it did: it
// is never left running unwatched (nor stopped at its first instruction).
func (s *watcher) Close() {
	if s.launched == nil || s.cmdExited {
		return
	}
	_ = s.launched.Cmd.Process.Kill() // failing or stopped: gone or going
	if s.cmdWait != nil {
		<-s.cmdWait
	}
}

// commandResult says how the launched command ended; stopped: rtscope
// ended it.
func commandResult(argv []string, ps *os.ProcessState, stopped bool) *report.Command {
	c := &report.Command{Argv: argv, StoppedByRtscope: stopped}
	if ps == nil {
		return c
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		c.Signal = unix.SignalName(ws.Signal())
		c.SignalNo = int(ws.Signal())
		return c
	}
	code := ps.ExitCode()
	c.ExitStatus = &code
	return c
}

// targetsGone tells whether watching should end by itself.
func (s *watcher) targetsGone() bool {
	o := s.o.Targets
	if len(o.Comms) > 0 || len(o.Cgroups) > 0 || s.o.Hooks.NeverEnd {
		return false // names may appear at any time, tasks enter cgroups
	}
	if s.launched != nil && !s.cmdExited {
		return false
	}
	for _, pid := range o.PIDs {
		if target.Alive(pid) {
			return false
		}
	}
	for _, t := range s.tasks {
		if !t.Exited {
			return false
		}
	}
	if len(o.TIDs) > 0 && !s.everTracked {
		for _, tid := range o.TIDs {
			if target.Alive(tid) {
				return false
			}
		}
	}
	return true
}

// poll reads the queued notices and handles them (at the end: the session
// reads them every poll period).
func (s *watcher) poll() error {
	ns, err := s.eng.Notices(time.Now())
	if err != nil {
		return err
	}
	return s.handle(ns)
}

// handle handles notices: starts (new tasks), new maxima (cut their
// windows, all from one snapshot of the rings) and exits (final reports).
// Statistics are read only for exiting tasks here; the live table and the
// periodic sweep read the others.
func (s *watcher) handle(ns []engine.Notice) error {
	latest := map[maxKey]engine.Notice{}
	var order []maxKey
	var exits, viols []engine.Notice
	rescan := false
	for _, n := range ns {
		switch n.Type {
		case engine.NoticeTaskStart:
			if _, ok := s.tasks[n.Id]; !ok {
				s.tasks[n.Id] = report.Placeholder(n.Id, n.Tid)
			}
			if s.o.Hooks.Start != nil {
				s.o.Hooks.Start(n.Id, n.Tid)
			}
		case engine.NoticeNewMax:
			s.keepOwn(n)
			k := maxKey{n.Id, n.Metric}
			if _, ok := latest[k]; !ok {
				order = append(order, k)
			}
			latest[k] = n
			if n.Flags&engine.NoticeFlagSLOViolated != 0 {
				viols = append(viols, n)
			}
		case engine.NoticeSLOViolation:
			s.keepOwn(n)
			viols = append(viols, n)
		case engine.NoticeTaskExit:
			exits = append(exits, n)
		case engine.NoticeCgroupAttach:
			rescan = true
		}
	}
	if rescan {
		// A process moved into a watched cgroup: its leader is tracked,
		// the scan finds its other threads.
		if err := s.eng.Scan(); err != nil {
			return err
		}
	}
	if s.eng.Tracing() {
		order = s.admitWindows(order, latest)
	}
	var first *explained
	s.follow(true)
	defer s.follow(false) // after a long poll: its work may outlast the rings
	if s.eng.Tracing() && (len(order) > 0 || len(viols) > 0) {
		snap, err := trace.TakeInto(s.eng, s.snap)
		if err != nil {
			// Not silently: these windows are lost, and the maxima keep no
			// stale window (Metric.SetWorst).
			s.windowsLost += uint64(len(order) + len(viols))
		}
		if err == nil {
			s.snap = snap
			snap.Learn(s.names)
			for _, k := range order {
				s.follow(false)
				n := latest[k]
				tr := snap.Cut(trace.Window{Metric: metric.ID(n.Metric).String(), TID: n.Tid, Value: n.Value, StealClock: s.eng.Features.Steal.Readable,
					Start: n.Start, End: n.End, CPUStart: int(n.CpuStart), CPUEnd: int(n.Cpu), MaxEvents: s.o.TraceMax}, s.names)
				if s.traces[n.Id] == nil {
					s.traces[n.Id] = map[metric.ID]*trace.Raw{}
				}
				s.traces[n.Id][metric.ID(n.Metric)] = tr
				if s.o.Hooks.Window != nil {
					t, m := s.identify(n), metric.ID(n.Metric)
					s.o.Hooks.Window(true, t, m, n.Value, func() (*trace.Trace, report.Explanation) {
						d := tr.Decode(s.names)
						var e report.Explanation
						if s.o.Analyze != nil {
							e = s.o.Analyze(t, m, d)
						}
						return d, e
					})
				}
			}
			first = s.explainViolations(snap, viols)
		}
	}
	if len(viols) > 0 && len(s.o.OnThreshold) > 0 {
		s.threshold(viols, first)
	}
	for _, n := range exits {
		s.finish(n.Id)
	}
	return nil
}

// followEvery bounds the time between two readings of the rings while a
// poll cuts and explains windows: at 1000 tracked threads under
// stress-ng --switch 2 a ring held 17 ms of events, and polls busy for
// 12-25 ms let the rings wrap between readings, truncating every kept
// window open across the gap (a trace of the gaps, 2026-11-26).
const followEvery = 4 * time.Millisecond

// follow reads the rings for the tasks whose own events are kept
// (trace.Snapshot.Follow) and moves the notices queued meanwhile out of
// the kernel's ring (Engine.HoldNotices): at the start of every poll, and
// between its windows and at its end when followEvery has passed.
func (s *watcher) follow(always bool) {
	if !always && time.Since(s.followed) < followEvery {
		return
	}
	if !always {
		// A failed read comes back at the next poll's Notices.
		_ = s.eng.HoldNotices()
	}
	if s.longWindows {
		// A failed read is a gap: the windows it spans are truncated.
		_ = s.snap.Follow(s.eng)
	}
	s.followed = time.Now()
}

// maxKey is a task's metric: one new maximum of it a poll is handled,
// the latest.
type maxKey struct {
	id uint64
	m  uint32
}

// admitWindows returns the new maxima of one poll (order, values in
// latest) whose windows are cut: only the windows users read
// (LiveWindowsPerMetric), those still held once every maximum of the poll
// was admitted. A window admitted, then released for a larger maximum of
// the same poll is not cut: at 1000 threads starting together, one poll
// brings dozens of first maxima of a metric, and all of them were cut for
// at most 16 kept, each kept to the end.
func (s *watcher) admitWindows(order []maxKey, latest map[maxKey]engine.Notice) []maxKey {
	for _, k := range order {
		m := metric.ID(k.m)
		ok, ev, evicted := s.live.admit(k.id, m, latest[k].Value)
		if evicted {
			delete(s.traces[ev], m)
			s.markNotKept(ev, m, true)
		}
		s.markNotKept(k.id, m, !ok)
		if !ok {
			// A stale window of an earlier maximum must not stay.
			delete(s.traces[k.id], m)
		}
	}
	cut := order[:0]
	for _, k := range order {
		if s.live.holds(k.id, metric.ID(k.m)) {
			cut = append(cut, k)
		}
	}
	return cut
}

// periodic tells whether m is measured only for tasks released by a
// timer, whose windows of a period (or a loop iteration) outlast the
// rings under load.
func periodic(m metric.ID) bool {
	switch m {
	case metric.TimerIRQ, metric.TimerThread, metric.TimerUser, metric.Cycle, metric.Period, metric.Jitter, metric.Iteration:
		return true
	}
	return false
}

// keepOwn keeps the flight recorder events of notice n's task beyond the
// rings' reach (trace.Snapshot.KeepOwn) when it is released by a timer:
// its windows of a period stay whole, sparse, while the rings are read
// every poll (longWindows).
func (s *watcher) keepOwn(n engine.Notice) {
	if !s.eng.Tracing() || !periodic(metric.ID(n.Metric)) {
		return
	}
	if s.snap == nil {
		s.snap = new(trace.Snapshot)
	}
	s.snap.KeepOwn(n.Tid)
	s.longWindows = true
}

// markNotKept records whether the window of task id's maximum of m was
// left out (LiveWindowsPerMetric).
func (s *watcher) markNotKept(id uint64, m metric.ID, notKept bool) {
	if !notKept {
		delete(s.notKept[id], m)
		return
	}
	if s.notKept[id] == nil {
		s.notKept[id] = map[metric.ID]bool{}
	}
	s.notKept[id][m] = true
}

// explained is one SLO violation with its window and what the analysis said.
type explained struct {
	n  engine.Notice
	t  *report.Task
	tr *trace.Trace
	e  report.Explanation
}

// explainViolations explains the window of each SLO violation noticed,
// within the budget, into its task's and metric's cause histogram. It
// returns the first explained, nil when none was.
func (s *watcher) explainViolations(snap *trace.Snapshot, viols []engine.Notice) *explained {
	if s.o.Explain == nil || len(viols) == 0 {
		return nil
	}
	var first *explained
	now := time.Now()
	if now.Sub(s.budgetStart) >= time.Second {
		s.budgetStart, s.budgetUsed = now, 0
	}
	for _, n := range viols {
		m := metric.ID(n.Metric)
		if s.viol[n.Id] == nil {
			s.viol[n.Id] = map[metric.ID]*report.Violations{}
		}
		v := s.viol[n.Id][m]
		if v == nil {
			v = &report.Violations{}
			s.viol[n.Id][m] = v
		}
		if s.budgetUsed >= ViolationBudget {
			v.Skip(report.NotAnalysedBudget, 1)
			if s.o.Hooks.Violation != nil {
				comm := ""
				if t := s.tasks[n.Id]; t != nil {
					comm = t.Comm
				}
				s.o.Hooks.Violation(n.Id, comm, m, "", report.NotAnalysedBudget)
			}
			continue
		}
		s.budgetUsed++
		s.follow(false)
		t := s.identify(n)
		tr := snap.Cut(trace.Window{Metric: m.String(), TID: n.Tid, Value: n.Value, StealClock: s.eng.Features.Steal.Readable,
			Start: n.Start, End: n.End, CPUStart: int(n.CpuStart), CPUEnd: int(n.Cpu), MaxEvents: s.o.TraceMax}, s.names).Decode(s.names)
		tr.Monitor = s.monitorThreads()
		e := s.o.Explain(t, m, tr)
		v.Add(e, n.Value, tr)
		s.monitor.AddViolation(e)
		if s.o.Hooks.Violation != nil {
			s.o.Hooks.Violation(n.Id, t.Comm, m, e.Cause, "")
		}
		if s.o.Hooks.Window != nil {
			s.o.Hooks.Window(false, t, m, n.Value, func() (*trace.Trace, report.Explanation) { return tr, e })
		}
		if first == nil {
			first = &explained{n: n, t: t, tr: tr, e: e}
		}
	}
	return first
}

// noteLostNotices says why a maximum of t has no window when the notice
// ring overflowed (user space read it too late): its new-maximum notice may
// be among those lost, which lost.notices counts. A fresh-clone run of
// TestExitedTasksWindowsBounded on a loaded machine left 3563 maxima of
// 1000 short tasks without a window and without a word.
func noteLostNotices(t *report.Task, lost uint64) {
	if lost == 0 {
		return
	}
	for _, m := range metric.All() {
		if rm := t.Metrics[m.String()]; rm != nil && rm.MaxNs != nil && rm.Worst == nil && rm.WorstNote == "" {
			rm.WorstNote = fmt.Sprintf("no window: the notice ring was full (%d notices lost in the run), so this maximum's notice may not have been read", lost)
		}
	}
}

// identify returns the task of notice n: known, or read from its
// statistics when only its start notice was seen.
func (s *watcher) identify(n engine.Notice) *report.Task {
	t := s.tasks[n.Id]
	if t == nil || t.Comm == "" {
		if st, err := s.eng.Stats(n.Id); err == nil {
			t := report.FromStats(st)
			s.slackOf(t)
			return t
		}
		if t == nil {
			return report.Placeholder(n.Id, n.Tid)
		}
	}
	return t
}

// violations returns the cause histogram of a metric's SLO violations, or
// nil without an SLO or violations.
func (s *watcher) violations(id uint64, m metric.ID, rm *report.Metric) *report.Violations {
	if rm.Violations == nil || *rm.Violations == 0 {
		return nil
	}
	v := s.viol[id][m]
	if v == nil {
		v = &report.Violations{}
	}
	if !s.eng.Tracing() || s.o.Explain == nil {
		c := *v
		c.Skip(report.NotAnalysedNoTrace, *rm.Violations-v.Analysed)
		v = &c
	}
	return v.Finish(*rm.Violations)
}

// sweepEvery is how often sweep looks at the lost-notice counter, and
// at most how often it scans every task's statistics (a full scan).
const sweepEvery = 500 * time.Millisecond

// sweep finds what notices could not say (the notice ring was full): tasks
// never announced, and exits never announced.
func (s *watcher) sweep(force bool) error {
	if !force && time.Since(s.lastSweep) < sweepEvery {
		// Not the lost-notice counter either: its per-CPU lookup at every
		// poll was 3% of the agent's CPU at 400,000 switches a second.
		return nil
	}
	lost := s.eng.Counter(engine.CounterNoticeLost)
	if lost == s.lostSeen {
		s.lastSweep = time.Now() // looked: the next look in sweepEvery
		return nil
	}
	s.lostSeen, s.lastSweep = lost, time.Now()
	all, err := s.eng.AllStats()
	if err != nil {
		return err
	}
	for _, st := range all {
		if _, ok := s.tasks[st.Id]; !ok {
			t := report.FromStats(st)
			s.slackOf(t)
			s.tasks[st.Id] = t
		}
		if st.Exited != 0 && !s.final[st.Id] {
			s.finish(st.Id)
		}
	}
	return nil
}

// finish prints the final report of an exited task and frees its statistics.
func (s *watcher) finish(id uint64) {
	if s.final[id] {
		return
	}
	st, err := s.eng.Stats(id)
	if err != nil {
		return
	}
	if s.snap != nil {
		s.snap.ForgetOwn(st.Tid)
	}
	if s.o.Hooks.Exit != nil {
		s.o.Hooks.Exit(st)
	}
	if s.o.Hooks.DropExited {
		// Nothing of it is kept: churn must not grow the agent's memory.
		delete(s.tasks, id)
		delete(s.traces, id)
		delete(s.notKept, id)
		s.live.forget(id)
		delete(s.viol, id)
		delete(s.samplers, id)
		delete(s.slack, id)
		s.eng.Forget(id)
		return
	}
	t := report.FromStats(st)
	s.slackOf(t)
	if s.samplers != nil {
		s.sample(st) // its last interval
	}
	s.attach(t)
	delete(s.samplers, id) // in t now
	report.Judge(t)
	s.tasks[id] = t
	s.final[id] = true
	delete(s.traces, id) // decoded into t
	delete(s.notKept, id)
	s.live.forget(id)
	s.eng.Forget(id)
	if s.visible(t) {
		report.Final(s.o.Out, t, s.o.Traces)
	}
	// Printed: from now on only the run's report needs its windows, and
	// only the largest of them, whatever the number of tasks that exit.
	s.exitedWindows.Keep(t)
}

// statsShared is how long the statistics read by one periodic job (live
// table, series, tick, housekeeping) serve the others: at their default
// period of a second they run at the same wake, and each read copies 7 KB
// a task out of the kernel (0.7 MB and about 1 ms at 100 tasks,
// BenchmarkAgentReads), up to four times a second before.
const statsShared = 100 * time.Millisecond

// stats returns the statistics of every tracked task, read at most
// statsShared ago (the periodic jobs' shared read; the sweep for lost
// notices reads its own). The slice is shared: callers do not modify it.
func (s *watcher) stats() ([]*engine.TaskStats, error) {
	if s.statsRead.IsZero() || time.Since(s.statsRead) >= statsShared {
		all, err := s.eng.AllStats()
		if err != nil {
			return nil, err
		}
		s.statsAll, s.statsRead = all, time.Now()
	}
	return s.statsAll, nil
}

// tick hands the statistics of the live tasks to Hooks.Tick.
func (s *watcher) tick() {
	all, err := s.stats()
	if err != nil {
		return
	}
	live := make([]*engine.TaskStats, 0, len(all))
	for _, st := range all {
		if !s.final[st.Id] {
			live = append(live, st)
		}
	}
	s.o.Hooks.Tick(s.eng, live, s.windowsLost)
}

// refresh re-reads the statistics of live tasks.
func (s *watcher) refresh() {
	all, err := s.stats()
	if err != nil {
		return
	}
	for _, st := range all {
		if s.final[st.Id] {
			continue
		}
		t := report.FromStats(st)
		s.slackOf(t)
		s.names.SetComm(st.Tid, t.Comm)
		s.tasks[st.Id] = t
	}
}

// attach adds the worst-case traces (and their analysis) to t: for final
// reports only, decoding is the expensive part.
func (s *watcher) attach(t *report.Task) {
	for m, raw := range s.traces[t.ID()] {
		rm := t.Metrics[m.String()]
		if rm == nil {
			continue
		}
		tr := raw.Decode(s.names)
		if !rm.SetWorst(tr) {
			s.windowsLost++
			continue
		}
		if s.o.Analyze != nil {
			tr.Monitor = s.monitorThreads()
			e := s.o.Analyze(t, m, tr)
			rm.Verdict, rm.Cause, rm.Analysis = e.Verdict, e.Cause, e.Detail
			s.steal.AddWorst(e)
			s.monitor.AddWorst(e)
		}
	}
	for m := range s.notKept[t.ID()] {
		if rm := t.Metrics[m.String()]; rm != nil && rm.Worst == nil && rm.WorstNote == "" {
			rm.WorstNote = fmt.Sprintf("no window: while tasks run, each metric keeps the windows of its %d largest maxima only", s.live.PerMetric)
		}
	}
	if s.eng.Tracing() {
		// One counter, one lookup: Counters took one a counter, 6000
		// system calls in the stop at 1000 tracked threads.
		noteLostNotices(t, s.eng.Counter(engine.CounterNoticeLost))
	}
	for _, m := range metric.All() {
		if rm := t.Metrics[m.String()]; rm != nil {
			rm.ViolationCauses = s.violations(t.ID(), m, rm)
			rm.Series = s.samplers[t.ID()][m].Series()
		}
	}
	delete(s.viol, t.ID())
}

func (s *watcher) visible(t *report.Task) bool {
	if len(s.o.Show) == 0 {
		return true
	}
	for _, n := range s.o.Show {
		if t.Comm == n {
			return true
		}
	}
	return false
}

func (s *watcher) shown(all bool) []*report.Task {
	r := &report.Report{}
	for _, t := range s.tasks {
		if all || s.visible(t) {
			r.Tasks = append(r.Tasks, t)
		}
	}
	r.Sort()
	return r.Tasks
}

func (s *watcher) build() *report.Report {
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	c := s.eng.Counters()
	rep := &report.Report{
		Schema:     report.Schema,
		Kernel:     strings.TrimRight(string(uts.Release[:]), "\x00"),
		Started:    s.started.UTC().Format(time.RFC3339Nano),
		DurationNs: uint64(time.Since(s.started)),
		Features: report.Features{Trace: s.eng.Tracing(), Steal: s.eng.Features.Steal.Method,
			Engine: s.eng.Features.Engine, EngineNote: s.eng.Features.EngineNote,
			SleepReasons: s.eng.Features.SleepReasons, PageFaults: s.eng.Features.PageFaults},
		Lost: report.Lost{Notices: c[engine.CounterNoticeLost],
			TasksNotTracked: c[engine.CounterStatsFull] + c[engine.CounterStorageFail],
			Stacks:          c[engine.CounterStackLost], TrackingDeferred: c[engine.CounterTrackDeferred]},
	}
	if err := s.eng.Features.UserReturn; err != nil {
		rep.Features.UserReturn = "unavailable: " + err.Error()
	}
	if err := s.eng.Features.WaiterStacks; err != nil && s.eng.Tracing() {
		rep.Features.WaiterStacks = err.Error()
	}
	if !s.eng.Features.UserReturnFexit && s.eng.Features.UserReturn == nil {
		rep.Features.UserReturn = "only for threads with a registered rseq area (glibc >= 2.35): fexit is not allowed on this kernel"
	}
	rep.Features.ThreadedIRQ = "exact (fentry/fexit on the threaded handler)"
	if s.eng.Features.ThreadedIRQFentry != nil {
		rep.Features.ThreadedIRQ = "on-CPU time of each irq/N thread activation (fentry is not allowed on this kernel)"
	}
	if s.eng.Features.Engine == engine.EngineClassic {
		rep.Features.EngineLimits = engine.ClassicLimits
		if s.eng.Features.UserReturn == nil {
			rep.Features.UserReturn = "only for threads with a registered rseq area (glibc >= 2.35): the classic engine has no fexit"
		}
		rep.Features.ThreadedIRQ = "on-CPU time of each irq/N thread activation (the classic engine has no fentry)"
	}
	rep.Tasks = s.shown(false)
	for _, t := range rep.Tasks {
		if !s.final[t.ID()] {
			s.attach(t) // exited tasks got theirs in their final report
		}
		report.Judge(t)
	}
	if end, err := engine.StealTotals(); err == nil {
		for cpu, v := range end {
			d := uint64(0)
			if cpu < len(s.stealStart) && v > s.stealStart[cpu] {
				d = v - s.stealStart[cpu]
			}
			s.steal.PerCPUNs = append(s.steal.PerCPUNs, d)
			s.steal.RunNs += d
		}
	}
	rep.Steal = s.steal
	if s.o.Analyze != nil || s.o.Explain != nil {
		rep.Monitor = s.monitor
	}
	rep.Lost.WindowsLost = s.windowsLost
	rep.Lost.ExitedWindowsDropped = s.exitedWindows.Dropped
	rep.Lost.LiveWindowsNotKept = s.live.NotKept
	rep.Housekeeping = s.house
	if len(s.o.OnThreshold) > 0 {
		rep.Actions = &report.Actions{ThresholdFired: s.actFired, ThresholdSkipped: s.actSkipped}
	}
	for _, t := range rep.Tasks {
		for _, m := range t.Metrics {
			if m.Worst != nil && m.Worst.Truncated {
				rep.Lost.TracesTruncated++
			}
			if m.Worst != nil && m.Worst.SparseUntil != nil {
				rep.Lost.TracesSparse++
			}
		}
	}
	return rep
}

// seriesInterval is the resolution of the series over time (Options.Series).
const seriesInterval = time.Second

// sampleSeries adds a point to the series of every live task.
func (s *watcher) sampleSeries() {
	all, err := s.stats()
	if err != nil {
		return
	}
	for _, st := range all {
		if !s.final[st.Id] {
			s.sample(st)
		}
	}
}

// sample adds the interval ending now to the series of one task's metrics
// that have samples.
func (s *watcher) sample(st *engine.TaskStats) {
	t := uint64(time.Since(s.started))
	for _, m := range metric.All() {
		if st.M[m].Count == 0 {
			continue
		}
		if s.samplers[st.Id] == nil {
			s.samplers[st.Id] = map[metric.ID]*report.Sampler{}
		}
		sp := s.samplers[st.Id][m]
		if sp == nil {
			sp = report.NewSampler(uint64(seriesInterval))
			s.samplers[st.Id][m] = sp
		}
		sp.Add(t, report.MetricStats(st, m))
	}
}

// outputs are the run's output files (internal/outfile).
type outputs struct {
	json, perfetto, html *outfile.File
}

func openOutputs(o Options) (*outputs, error) {
	var out outputs
	for _, f := range []struct {
		path string
		dst  **outfile.File
		flag string
	}{{o.JSONPath, &out.json, "--json"}, {o.PerfettoPath, &out.perfetto, "--perfetto"}, {o.HTMLPath, &out.html, "--html"}} {
		if f.path == "" {
			continue
		}
		of, err := outfile.Create(f.path)
		if err != nil {
			out.abort()
			return nil, fmt.Errorf("%s: %w", f.flag, err)
		}
		*f.dst = of
	}
	return &out, nil
}

// write writes and commits every output file.
func (out *outputs) write(rep *report.Report) error {
	if out.json != nil {
		if err := out.json.Fill(rep.EncodeJSON); err != nil {
			return err
		}
	}
	if out.perfetto != nil {
		ws := perfetto.Windows(rep)
		if err := out.perfetto.Fill(func(w io.Writer) error { return perfetto.Write(w, ws) }); err != nil {
			return err
		}
	}
	if out.html != nil {
		if err := out.html.Fill(func(w io.Writer) error { return htmlreport.Write(w, rep) }); err != nil {
			return err
		}
	}
	return nil
}

func (out *outputs) abort() {
	out.json.Abort()
	out.perfetto.Abort()
	out.html.Abort()
}

// housekeepEvery: how often the automatic housekeeping choice follows the
// watched tasks (their affinities, new tasks).
const housekeepEvery = time.Second

// housekeep chooses rtscope's CPUs from the watched tasks (live ones) and
// moves its threads there when the choice changed.
func (s *watcher) housekeep() {
	online, err := cpuset.Online()
	if err != nil {
		return
	}
	all, err := s.eng.Placements()
	if err != nil {
		return
	}
	var ws []cpuset.Watched
	for _, st := range all {
		if st.Exited {
			continue
		}
		w := cpuset.Watched{RT: sched.IsRT(st.Policy), LastCPU: st.LastCPU, CPUs: online}
		if st.NrCpusAllowed <= 64 {
			w.CPUs = nil
			for c := 0; c < 64; c++ {
				if st.CpusMask&(1<<c) != 0 {
					w.CPUs = append(w.CPUs, c)
				}
			}
		}
		ws = append(ws, w)
	}
	cpus, reason, shared := cpuset.Housekeeping(online, ws)
	if cpus == nil {
		return // nothing to keep off yet
	}
	list := cpuset.FormatList(cpus)
	if s.house != nil && s.house.CPUs == list {
		s.house.Reason, s.house.Shared = reason, shared
		return
	}
	if s.house != nil && shared && s.house.Shared {
		return // still no CPU of its own: moving as the tasks migrate would gain nothing
	}
	if err := cpuset.PinProcess(cpuset.Mask(cpus), nil); err != nil {
		fmt.Fprintf(s.o.Log, "rtscope watch: cannot move to CPUs %s: %v\n", list, err)
		return
	}
	if s.house == nil {
		s.house = &report.Housekeeping{Automatic: true}
	} else {
		s.house.Changes++
	}
	s.house.CPUs, s.house.Reason, s.house.Shared = list, reason, shared
	fmt.Fprintf(s.o.Log, "rtscope watch: own threads on CPU %s: %s (-H overrides)\n", list, reason)
}

// monitorRefresh bounds how often rtscope's own thread list is re-read: the
// Go runtime starts its threads early and rarely adds one later.
const monitorRefresh = 500 * time.Millisecond

// monitorThreads returns the threads of rtscope's own process (the
// monitor), for the analysis to name them as such (trace.Trace.Monitor).
func (s *watcher) monitorThreads() []uint32 {
	if s.monitorTIDs != nil && time.Since(s.monitorRead) < monitorRefresh {
		return s.monitorTIDs
	}
	s.monitorRead = time.Now()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return s.monitorTIDs
	}
	tids := make([]uint32, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.ParseUint(e.Name(), 10, 32); err == nil {
			tids = append(tids, uint32(tid))
		}
	}
	s.monitorTIDs = tids
	return tids
}

// slackRead is a task's timer slack and the policy changes it was read at.
type slackRead struct {
	ns      *uint64
	changes uint32
}

// slackOf sets t's timer slack: read from /proc/TID/timerslack_ns when the
// task is first seen alive, and again after its policy changed (the kernel
// zeroes an RT task's slack and restores it when it leaves RT); an exited
// task keeps the last value read.
func (s *watcher) slackOf(t *report.Task) {
	r, ok := s.slack[t.ID()]
	if (!ok || r.changes != t.SchedChanges) && !t.Exited {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/timerslack_ns", t.TID)); err == nil {
			if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
				r = slackRead{ns: &v, changes: t.SchedChanges}
				s.slack[t.ID()] = r
			}
		}
	}
	t.TimerSlackNs = r.ns
}
