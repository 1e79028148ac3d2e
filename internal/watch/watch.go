// Package watch is the per-task monitoring tool of a session
// (internal/session runs its lifecycle): it registers the targets, polls
// statistics and new-maximum notices, cuts worst-case traces, prints the
// live table and the final reports. The watcher is made of parts, each in
// its own file: the target book (book.go), the worst-case windows
// (windows.go), the SLO violations and their actions (violations.go,
// actions.go), the housekeeping of rtscope's own threads
// (housekeeping.go) and the launched command (command.go); an agent
// observes it through Observer (observer.go).
package watch

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/ksym"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/session"
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

// watcher is the watch tool of a session.Run: the methods of session.Tool,
// and the parts they coordinate, all on the session's goroutine.
type watcher struct {
	o       Options
	agent   *Agent         // nil: a watch, with its reports
	obs     Observer       // the agent's, or none
	wobs    WindowObserver // the agent's, when it gets the windows
	out     *outputs
	eng     *engine.Engine
	names   *trace.Names
	started time.Time
	book    *book
	win     *windows // from Attached
	viol    *violations
	house   *housekeeper
	cmd     *command // the launched command (nil: none)
	stats   statsCache
	series  *series // Options.Series
	// the hypervisor's steal, and its per-CPU totals at the start
	steal      *report.Steal
	stealStart []uint64
	lostSeen   uint64    // lost notices already swept for
	lastSweep  time.Time // the last look at the lost notices (sweepEvery)
	// the final report, and the error of writing its files
	rep      *report.Report
	writeErr error
}

// Run watches until the duration ends, ctx is cancelled, or every target
// is gone (internal/session runs the lifecycle; watcher is the watch tool).
func Run(ctx context.Context, o Options) (*report.Report, error) {
	return run(ctx, o, nil)
}

// defaults fills o's unset options.
func defaults(o *Options) {
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
}

// run is Run, as an agent's session when a is set (RunAgent).
func run(ctx context.Context, o Options, a *Agent) (*report.Report, error) {
	// An agent may start idle: its targets come later (serve's ctl, a
	// reloaded config).
	if a == nil || !o.Targets.Empty() {
		if err := o.Targets.Validate(); err != nil {
			return nil, err
		}
	}
	defaults(&o)
	out, err := openOutputs(o)
	if err != nil {
		return nil, err
	}
	defer out.abort() // kept only when committed at the end
	stackAfter := uint64(engine.DefaultStackMinWait)
	if o.StackAfter != nil {
		stackAfter = uint64(*o.StackAfter)
	}
	s := &watcher{o: o, agent: a, obs: nopObserver{}, out: out, book: newBook(o.Targets, report.Selection{All: o.All, Show: o.Show}),
		viol: newViolations(o.OnThreshold, o.Log), house: newHousekeeper(o.Housekeeping, o.AutoHousekeeping, o.Log)}
	spec := session.Spec{Name: "watch", ClassicHint: " (see features.engine_limits in --json)",
		Engine: engine.Config{Trace: !o.NoTrace, SleepStacks: true, StackMinWait: stackAfter, FlightPerCPU: o.TraceEvents,
			SLODefault: o.SLO.Default, SLOByID: o.SLO.ByID, ViolationNotices: len(o.OnThreshold) > 0, Engine: o.Engine, BTFFile: o.BTFFile,
			WarmUp: engineWarmUp(o.WarmUp), IPI: o.IPI},
		Housekeeping: o.Housekeeping, Duration: o.Duration, Poll: o.Poll,
		Every: []session.Job{{Every: o.Interval, Run: s.liveTable}}}
	if o.Series {
		s.series = &series{samplers: map[uint64]map[metric.ID]*report.Sampler{}}
		spec.Every = append(spec.Every, session.Job{Every: seriesInterval, Run: func() bool { s.sampleSeries(); return false }})
	}
	if a != nil {
		s.obs, spec.Control = a.Observer, a.Control
		s.wobs, _ = a.Observer.(WindowObserver)
		spec.Every = append(spec.Every, session.Job{Every: a.TickEvery, Run: func() bool { s.tick(); return false }})
	}
	if s.house.auto {
		spec.Every = append(spec.Every, session.Job{Every: housekeepEvery, Run: func() bool { s.house.follow(s.eng); return false }})
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
	s.names.PrefetchSyms() // the programs are loaded: their frames get names
	s.win = newWindows(e, s.names, s.o.TraceMax)
	s.book.eng = e
	if s.series != nil {
		s.series.started = s.started
	}
	s.steal = &report.Steal{Readable: e.Features.Steal.Readable, Clock: e.Features.Steal.Method}
	s.stealStart, _ = engine.StealTotals()
	return nil
}

// Register registers the targets, and launches the command stopped at its
// first instruction: its tasks are tracked from there (FlagFollow).
func (s *watcher) Register(e *engine.Engine) error {
	idx, err := s.book.register(e)
	if err != nil || len(s.o.Targets.Command) == 0 {
		return err
	}
	cmd, err := launchCommand(s.o.Targets.Command, s.o.Targets.User)
	if err != nil {
		return err
	}
	s.cmd = cmd // killed by Close if the session fails from here
	if cmd.goProgram {
		s.book.sel.GoPIDs = append(s.book.sel.GoPIDs, cmd.pid())
	} else {
		s.book.sel.Leaders = append(s.book.sel.Leaders, cmd.pid())
	}
	return e.WantTID(uint32(cmd.pid()), idx, engine.FlagFollow)
}

// Tracking says so (Options.Ready), lets the launched command run, and
// moves rtscope's own threads to their CPUs.
func (s *watcher) Tracking(e *engine.Engine) error {
	if s.cmd != nil {
		// Only the command's first task is wanted by tid; its descendants follow it.
		e.ForgetTID(uint32(s.cmd.pid()))
	}
	if s.o.Ready != nil {
		s.o.Ready()
	}
	if s.agent != nil && s.agent.Ready != nil {
		s.agent.Ready()
	}
	if s.cmd != nil {
		if err := s.cmd.resume(); err != nil {
			return err
		}
	}
	// Pinned after the command is forked: it keeps its own affinity.
	if err := s.house.place(e); err != nil {
		return err
	}
	if s.agent != nil {
		s.tick()
	}
	return nil
}

// Poll handles the notices, finds what lost notices hid, and ends the
// session when every target is gone or the on-threshold actions, which
// ran without continue, are done.
func (s *watcher) Poll(ns []engine.Notice) (bool, error) {
	if s.viol.actionsDone() {
		fmt.Fprintln(s.o.Log, "rtscope watch: SLO violated: stopping after the on-threshold actions (add continue to go on)")
		return true, nil
	}
	s.cmd.running() // notes its end
	if err := s.handle(ns); err != nil {
		return false, err
	}
	if err := s.sweep(false); err != nil {
		return false, err
	}
	return s.agent == nil && s.book.gone(s.cmd.running()), nil
}

// liveTable prints the live table (Options.Interval, unless Quiet).
func (s *watcher) liveTable() bool {
	if !s.o.Quiet {
		s.refresh()
		report.Live(s.o.Out, s.book.shown(false), time.Since(s.started).Round(time.Millisecond).String())
		fmt.Fprintln(s.o.Out)
	}
	return false
}

// Finish stops the launched command if it still runs, collects the last
// notices and statistics, and writes the reports and files.
func (s *watcher) Finish(session.End) error {
	s.viol.waitActions() // on-threshold actions still running: let them finish
	if s.cmd != nil {
		s.cmd.stop() // stopped before the command ended: stop it too
	}
	if err := s.collectLast(); err != nil {
		return err
	}
	rep := s.build()
	if s.cmd != nil {
		rep.Command = s.cmd.result()
	}
	s.writeText(rep)
	if s.o.Stopped != nil {
		s.o.Stopped(s.eng)
	}
	s.rep = rep
	if err := s.out.write(rep); err != nil {
		s.writeErr = err // the report is returned with it
		return nil
	}
	if len(s.o.OnEnd) > 0 {
		s.o.OnEnd.Run(s.viol.endEvent(rep, s.o.JSONPath), s.o.Log)
	}
	return nil
}

// collectLast stops the programs and collects what is left: late notices,
// the final statistics of every task, the last series and tick.
func (s *watcher) collectLast() error {
	// The run ends here: the programs stop, so that nothing overwrites the
	// flight recorder while the last windows are cut and every task's
	// statistics are read. Those reads took longer than a ring lasts at
	// 1000 tracked threads (480,000 events a second a CPU: 17 ms), and the
	// windows cut after them came out truncated.
	if s.o.Ending != nil {
		s.o.Ending()
	}
	if err := s.eng.Detach(); err != nil {
		return err
	}
	s.stats.stale() // read afresh
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
	s.stats.stale() // after that poll
	if s.series != nil {
		s.sampleSeries() // the last, partial interval
	}
	if s.agent != nil {
		s.tick() // the last statistics before the engine closes
	}
	return nil
}

// writeText writes the end of the text report from the report model, the
// answer first (report.WriteFinal): the judgements, the findings, the
// worst cases; exited tasks' come here too.
func (s *watcher) writeText(rep *report.Report) {
	// Through one buffer: a write a line to a terminal or pipe took
	// 128 ms of the stop at 1000 tracked threads.
	out := bufio.NewWriterSize(s.o.Out, 64<<10)
	rep.FailOn = s.o.FailOn
	report.WriteFinal(out, rep, report.TextOptions{Verbose: s.o.Verbose, Traces: s.o.Traces,
		LiveKeep: s.win.live.PerMetric, ExitedKeep: s.win.exited.PerMetric, Log: s.o.Log})
	if err := out.Flush(); err != nil {
		fmt.Fprintf(s.o.Log, "rtscope watch: the final report: %v\n", err)
	}
}

// Close kills the launched command if the session ends before it did: it
// is never left running unwatched (nor stopped at its first instruction).
func (s *watcher) Close() { s.cmd.kill() }

// poll reads the queued notices and handles them (at the end: the session
// reads them every poll period).
func (s *watcher) poll() error {
	ns, err := s.eng.Notices(time.Now())
	if err != nil {
		return err
	}
	return s.handle(ns)
}

// notices are one poll's notices by kind.
type notices struct {
	latest map[maxKey]engine.Notice // the latest new maximum of each task's metric
	order  []maxKey                 // the maxima in the order first seen
	exits  []engine.Notice
	viols  []engine.Notice
	rescan bool // a process moved into a watched cgroup
}

// sort sorts ns by kind, noting the tasks started.
func (s *watcher) sort(ns []engine.Notice) notices {
	p := notices{latest: map[maxKey]engine.Notice{}}
	for _, n := range ns {
		switch n.Type {
		case engine.NoticeTaskStart:
			s.book.started(n.Id, n.Tid)
			s.obs.Start(n.Id, n.Tid)
		case engine.NoticeNewMax:
			if !s.win.noise.wants(n, s.eng.RecordedPolicy) {
				continue
			}
			s.win.keepOwn(n)
			k := maxKey{n.Id, n.Metric}
			if _, ok := p.latest[k]; !ok {
				p.order = append(p.order, k)
			}
			p.latest[k] = n
			if n.Flags&engine.NoticeFlagSLOViolated != 0 {
				p.viols = append(p.viols, n)
			}
		case engine.NoticeSLOViolation:
			s.win.keepOwn(n)
			p.viols = append(p.viols, n)
		case engine.NoticeTaskExit:
			p.exits = append(p.exits, n)
		case engine.NoticeCgroupAttach:
			p.rescan = true
		}
	}
	return p
}

// handle handles notices: starts (new tasks), new maxima (cut their
// windows, all from one snapshot of the rings) and exits (final reports).
// Statistics are read only for exiting tasks here; the live table and the
// periodic sweep read the others.
func (s *watcher) handle(ns []engine.Notice) error {
	p := s.sort(ns)
	if p.rescan {
		// A process moved into a watched cgroup: its leader is tracked,
		// the scan finds its other threads.
		if err := s.eng.Scan(); err != nil {
			return err
		}
	}
	if s.eng.Tracing() {
		p.order = s.win.admit(p.order, p.latest)
	}
	var done []*explained
	s.win.follow(true)
	defer s.win.follow(false) // after a long poll: its work may outlast the rings
	if s.eng.Tracing() && (len(p.order) > 0 || len(p.viols) > 0) {
		if snap, ok := s.win.take(len(p.order) + len(p.viols)); ok {
			for _, k := range p.order {
				s.win.follow(false)
				s.keepWorst(snap, p.latest[k])
			}
			done = s.explainViolations(snap, p.viols)
		}
	}
	if len(p.viols) > 0 && len(s.o.OnThreshold) > 0 {
		s.threshold(p.viols, done)
	}
	for _, n := range p.exits {
		s.finish(n.Id)
	}
	return nil
}

// engineWarmUp is engine.Config.WarmUp for Options.WarmUp: nil detects
// the start-up (0), and --warm-up 0 leaves nothing out (< 0).
func engineWarmUp(d *time.Duration) time.Duration {
	switch {
	case d == nil:
		return 0
	case *d == 0:
		return -1
	}
	return *d
}
