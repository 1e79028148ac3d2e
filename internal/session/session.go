// Package session runs the lifecycle that every measuring command shares,
// as rtla's run_tool runs a tool's tool_ops: check the options, let the
// tool prepare the machine, load and attach the engine, register the
// tool's targets, scan the tasks that exist, then poll the engine's
// notices and run the tool's periodic jobs until the context ends, the
// duration runs out or the tool stops, let the tool finish, and close
// everything. watch (and through it serve, demo and doctor --watch) and
// timerlat are its tools; what differs between them is a Tool.
package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/rtscope/rtscope/internal/cpuset"
	"github.com/rtscope/rtscope/internal/engine"
)

// Tool is the per-command part of a session (rtla's tool_ops). The
// session calls its methods in this order, all on its own goroutine, so a
// tool needs no lock for the state they share; the engine is open from
// Attached to Finish.
type Tool interface {
	// Prepare runs once the options are checked, before the engine loads:
	// system tuning that Close undoes (timerlat's /dev/cpu_dma_latency,
	// mlockall, housekeeping).
	Prepare() error
	// Attached runs once the engine is loaded and attached: the tool loads
	// what runs beside it (timerlat's sample stream and measuring threads).
	Attached(e *engine.Engine) error
	// Register registers the targets (Engine.WantTID, WantTGID,
	// WantComm); the session then scans the tasks that exist.
	Register(e *engine.Engine) error
	// Tracking runs once every existing target is tracked; the duration
	// counts from its return.
	Tracking(e *engine.Engine) error
	// Poll handles the notices queued since the last poll (every
	// Spec.Poll); stop ends the session.
	Poll(notices []engine.Notice) (stop bool, err error)
	// Finish collects what is left once the session ended for why: last
	// notices, final statistics, reports. The engine is still open.
	Finish(why End) error
	// Close releases what the tool set up, on every path (after a failed
	// step too), before the engine closes.
	Close()
}

// ScanPoller is a Tool whose Poll also runs while the session scans the
// tasks that exist, between batches of engine.ScanBatch tasks tracked
// (after Register, before Tracking): watch, whose first windows of a task
// tracked early in a long scan would otherwise be cut after the flight
// recorder wrapped. A stop Poll asks for then is asked again at the loop's
// first poll.
type ScanPoller interface {
	Tool
	// PollsDuringScan marks the tool; it does nothing.
	PollsDuringScan()
}

// End says why a session ended.
type End int

const (
	// Stopped: the context ended (a signal, or the caller).
	Stopped End = iota
	// Elapsed: the duration ran out.
	Elapsed
	// ToolDone: the tool's Poll or a job ended it (targets gone, a stop
	// threshold reached).
	ToolDone
)

// Job is a periodic task of a session, run on the session's goroutine
// every Every from the tool's Tracking on; stop ends the session.
type Job struct {
	Every time.Duration
	Run   func() (stop bool)
}

// Spec is what a session runs with, besides its Tool. The CPU options are
// checked here for every command (-c, -H, -d).
type Spec struct {
	// Name is the command, for messages ("rtscope watch: ...").
	Name   string
	Engine engine.Config
	// ClassicHint is appended to the note that the classic engine runs
	// because the kernel has no BTF.
	ClassicHint string
	// Log receives the session's notes (nil: stderr).
	Log io.Writer
	// CPUs are the measured CPUs (-c; nil: none chosen) and Housekeeping
	// rtscope's own (-H; nil: none chosen): every one must be online.
	CPUs, Housekeeping []int
	// Duration ends the session this long after the tool's Tracking
	// returned (0: no limit).
	Duration time.Duration
	// Poll is how often the engine's notices are read: BPF never wakes
	// the reader (BPF_RB_NO_WAKEUP), so this is also how late a notice
	// may be seen.
	Poll time.Duration
	// Every are the tool's periodic jobs besides the poll.
	Every []Job
	// Control, when set, gets functions run on the session's goroutine
	// with the engine (serve's run-time target changes); each must return
	// quickly.
	Control <-chan func(e *engine.Engine)
}

// Check refuses options that no session can run with, in one sentence
// naming the option: CPUs that are not online, a negative duration, or a
// machine without what the engine needs (engine.Probe).
func (s *Spec) Check() error {
	if err := engine.Probe(); err != nil {
		return err
	}
	if s.Duration < 0 {
		return fmt.Errorf("--duration %v: must be positive (0: until stopped)", s.Duration)
	}
	if s.CPUs == nil && s.Housekeeping == nil {
		return nil
	}
	online, err := cpuset.Online()
	if err != nil {
		return err
	}
	if err := CheckOnline("-c", s.CPUs, online); err != nil {
		return err
	}
	return CheckOnline("-H", s.Housekeeping, online)
}

// ParseCPUs parses the CPU list of option flag ("-c", "-H"), e.g. "0-3,6"
// (cpuset.ParseList); whether they are online is checked when the session
// starts (Spec.Check).
func ParseCPUs(flag, list string) ([]int, error) {
	cpus, err := cpuset.ParseList(list)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return cpus, nil
}

// CheckOnline refuses the CPUs of option flag that are not online,
// naming them.
func CheckOnline(flag string, cpus, online []int) error {
	on := map[int]bool{}
	for _, c := range online {
		on[c] = true
	}
	var bad []int
	for _, c := range cpus {
		if !on[c] {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		sort.Ints(bad)
		return fmt.Errorf("%s: CPU %s not online (online: %s)", flag, cpuset.FormatList(bad), cpuset.FormatList(online))
	}
	return nil
}

// Run runs one session of tool and says why it ended (meaningful when err
// is nil: a failed step returns its error, and Finish does not run).
// Nothing stays attached once it returns: the tool is closed, then the
// engine, on every path.
func Run(ctx context.Context, spec Spec, tool Tool) (End, error) {
	if err := spec.Check(); err != nil {
		return 0, err
	}
	if spec.Poll <= 0 {
		return 0, errors.New("session: no poll period")
	}
	for i, j := range spec.Every {
		if j.Every <= 0 {
			return 0, fmt.Errorf("session: job %d has no period", i)
		}
	}
	log := spec.Log
	if log == nil {
		log = os.Stderr
	}
	var eng *engine.Engine
	defer func() {
		tool.Close()
		if eng != nil {
			eng.Close()
		}
	}()
	// Before the tool's tuning: timerlat's mlockall must find the
	// reservation mapped and untouched.
	reserveHeap()
	if err := tool.Prepare(); err != nil {
		return 0, err
	}
	e, err := engine.Load(spec.Engine)
	if err != nil {
		return 0, err
	}
	eng = e
	if eng.Features.EngineFallback {
		fmt.Fprintf(log, "rtscope %s: %s%s\n", spec.Name, eng.Features.EngineNote, spec.ClassicHint)
	} else if spec.Engine.BTFFile != "" {
		fmt.Fprintf(log, "rtscope %s: BTF engine, %s\n", spec.Name, eng.Features.EngineNote)
	}
	if err := eng.Attach(); err != nil {
		return 0, err
	}
	if err := tool.Attached(eng); err != nil {
		return 0, err
	}
	if err := tool.Register(eng); err != nil {
		return 0, err
	}
	p := &poller{eng: eng, tool: tool}
	// A ScanPoller polls between the scan's batches: a task tracked early
	// in a long scan (11-24 ms for 1000 threads beside stress-ng --switch
	// 2) has its first windows cut before the flight recorder wraps (17 ms
	// there).
	var between func()
	if _, ok := tool.(ScanPoller); ok {
		between = func() { p.poll() }
	}
	if err := eng.ScanWith(between); err != nil {
		return 0, err
	}
	if p.err != nil {
		return 0, p.err
	}
	if err := tool.Tracking(eng); err != nil {
		return 0, err
	}
	why, err := loop(ctx, spec, eng, p)
	if err != nil {
		return why, err
	}
	return why, tool.Finish(why)
}

// poller reads the notices for the tool (Tool.Poll). Not safe for
// concurrent use: the session's goroutine only.
type poller struct {
	eng  *engine.Engine
	tool Tool
	err  error // the first failed poll's
}

// poll reports whether the session ends: the tool is done, or the poll
// failed (p.err).
func (p *poller) poll() bool {
	ns, err := p.eng.Notices(time.Now())
	if err == nil {
		var stop bool
		stop, err = p.tool.Poll(ns)
		if err == nil {
			return stop
		}
	}
	if p.err == nil {
		p.err = err
	}
	return true
}

// loop polls and runs the jobs until ctx, the duration or the tool ends
// the session. One clock of the shortest period serves every job: each
// runs at the first tick at or after it is due, at most once per tick (as
// a time.Ticker drops the ticks a slow reader missed).
func loop(ctx context.Context, spec Spec, eng *engine.Engine, p *poller) (End, error) {
	// The poll is the first job.
	jobs := append([]Job{{Every: spec.Poll, Run: p.poll}}, spec.Every...)
	start := time.Now()
	next := make([]time.Time, len(jobs))
	period := spec.Poll
	for i, j := range jobs {
		next[i] = start.Add(j.Every)
		period = min(period, j.Every)
	}
	var deadline <-chan time.Time
	if spec.Duration > 0 {
		t := time.NewTimer(spec.Duration)
		defer t.Stop()
		deadline = t.C
	}
	// The first poll runs at once: Tracking may have taken a while (the
	// housekeeping choice reads 1000 tasks' placements), and a window
	// opened by the scan's last batch is cut only while the rings hold it.
	if p.poll() {
		return ToolDone, p.err
	}
	clk := newClock(period)
	defer clk.Stop()
	for {
		select {
		case <-ctx.Done():
			return Stopped, nil
		case <-deadline:
			return Elapsed, nil
		case f := <-spec.Control:
			f(eng)
		case <-clk.C:
			now := time.Now() // not the tick's: a Control call may have held it
			for i, j := range jobs {
				if now.Before(next[i]) {
					continue
				}
				if j.Run() {
					return ToolDone, p.err
				}
				next[i] = next[i].Add(j.Every)
				if !next[i].After(now) {
					next[i] = now.Add(j.Every)
				}
			}
		}
	}
}
