package watch

import (
	"context"
	"io"
	"time"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
)

// Observer sees what an agent's watch measures (RunAgent), as events.
// Every method runs on the session's goroutine, in the order of events,
// so that an observer sees a task's last live statistics before its exit
// and never after it; none may block.
type Observer interface {
	// Start gets each task tracked, by tracking id and tid, when its
	// start notice is read (within Options.Poll of its start; not for a
	// task whose notice was lost).
	Start(id uint64, tid uint32)
	// Tick, every Agent.TickEvery, gets the engine and the statistics of
	// every live task (exited tasks went to Exit first), and the
	// worst-case windows not cut so far.
	Tick(e *engine.Engine, live []*engine.TaskStats, windowsLost uint64)
	// Exit gets a task's final statistics just before the engine and the
	// watch forget them.
	Exit(st *engine.TaskStats)
	// Violation gets each SLO violation noticed, with the task's tracking
	// id and name (empty when not known yet): its analysed cause, or
	// notAnalysed with the reason (report.NotAnalysed*).
	Violation(id uint64, comm string, m metric.ID, cause, notAnalysed string)
}

// WindowObserver is an Observer that also gets the windows (serve's
// archive). Without one, no window is decoded or its task read for it.
type WindowObserver interface {
	Observer
	// Window gets each new worst-case window (worst true) and each
	// explained SLO-violation window, with its task and value (ns). get
	// decodes the window and explains it (Options.Analyze for a worst
	// case, Options.Explain for a violation): worst windows are decoded
	// only when asked, and get is valid only during the call.
	Window(worst bool, t *report.Task, m metric.ID, value uint64, get func() (*trace.Trace, report.Explanation))
}

// Agent makes a watch an always-on agent's session (RunAgent).
type Agent struct {
	// Observer gets the events (required); a WindowObserver gets the
	// windows too.
	Observer Observer
	// TickEvery is the period of Observer.Tick (0: a second).
	TickEvery time.Duration
	// Control, when set, runs functions on the session's goroutine with
	// the engine (runtime target changes); each must return quickly.
	Control <-chan func(e *engine.Engine)
	// Ready, when set, is called once every existing target is tracked,
	// after Options.Ready.
	Ready func()
}

// RunAgent watches as an agent until ctx ends: never because its targets
// are gone (new ones may come), without a live table, text report or
// series, and each exited task forgotten once Observer.Exit saw it, so
// that task churn does not grow memory.
func RunAgent(ctx context.Context, o Options, a Agent) error {
	o.Duration, o.Quiet, o.Out, o.Series = 0, true, io.Discard, false
	if a.TickEvery <= 0 {
		a.TickEvery = time.Second
	}
	_, err := run(ctx, o, &a)
	return err
}

// nopObserver is a watch's observer without an agent.
type nopObserver struct{}

func (nopObserver) Start(uint64, uint32)                                {}
func (nopObserver) Tick(*engine.Engine, []*engine.TaskStats, uint64)    {}
func (nopObserver) Exit(*engine.TaskStats)                              {}
func (nopObserver) Violation(uint64, string, metric.ID, string, string) {}
