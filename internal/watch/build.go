package watch

import (
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/ksym"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/sched"
)

// build makes the run's report: every shown task with its windows
// attached and judged, the features, what was lost, the steal, the
// monitor, the housekeeping and the actions.
func (s *watcher) build() *report.Report {
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	c := s.eng.Counters()
	rep := &report.Report{
		Schema:     report.Schema,
		Kernel:     strings.TrimRight(string(uts.Release[:]), "\x00"),
		Started:    s.started.UTC().Format(time.RFC3339Nano),
		DurationNs: uint64(time.Since(s.started)),
		Features:   report.FeaturesFrom(&s.eng.Features, s.eng.Tracing()),
		Lost: report.Lost{Notices: c[engine.CounterNoticeLost],
			TasksNotTracked: c[engine.CounterStatsFull] + c[engine.CounterStorageFail],
			Stacks:          c[engine.CounterStackLost], TrackingDeferred: c[engine.CounterTrackDeferred],
			WakeupsUnseen: c[engine.CounterUnseenWakeups]},
	}
	s.selectTasks(rep)
	s.ipis(rep)
	s.stealEnd()
	rep.Steal = s.steal
	if s.o.Analyze != nil || s.o.Explain != nil {
		rep.Monitor = s.house.monitor
	}
	rep.Lost.WindowsLost = s.win.lost
	rep.Lost.ExitedWindowsDropped = s.win.exited.Dropped
	rep.Lost.LiveWindowsNotKept = s.win.live.NotKept
	if st, _, err := s.eng.ProgramStats(); err == nil {
		rep.Lost.EventsMissed = st.Misses
	}
	rep.Housekeeping = s.house.house
	th := sched.ReadThrottling(os.DirFS("/"))
	rep.Throttling = &th
	if len(s.o.OnThreshold) > 0 {
		rep.Actions = &report.Actions{ThresholdFired: s.viol.fired, ThresholdSkipped: s.viol.skipped}
	}
	// What the run lost is of every task, shown or not (bench counts it).
	for _, t := range append(rep.Tasks, rep.Hidden...) {
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

// selectTasks puts every task in rep, the shown ones in Tasks and the
// others in Hidden (report.Selection), each with its windows attached and
// judged: the shown first, whose analyses name the causes shown in turn.
func (s *watcher) selectTasks(rep *report.Report) {
	rep.Tasks = s.book.shown(true)
	prepare := func(t *report.Task) {
		if !s.book.final[t.ID()] {
			s.attach(t) // exited tasks got theirs in their final report
		}
		report.Judge(t)
	}
	s.book.sel.Select(rep, prepare)
	for _, t := range rep.Hidden {
		prepare(t)
	}
}

// stealEnd adds the hypervisor's steal of the run, per CPU, to s.steal.
func (s *watcher) stealEnd() {
	end, err := engine.StealTotals()
	if err != nil {
		return
	}
	for cpu, v := range end {
		d := uint64(0)
		if cpu < len(s.stealStart) && v > s.stealStart[cpu] {
			d = v - s.stealStart[cpu]
		}
		s.steal.PerCPUNs = append(s.steal.PerCPUNs, d)
		s.steal.RunNs += d
	}
}

// ipis puts the run's IPI counts in rep (--ipi): per CPU and sender, and
// each task's, received while it ran or waited on the CPU.
func (s *watcher) ipis(rep *report.Report) {
	st, err := s.eng.IPIs()
	if err != nil {
		return // not attached: features.ipi_receive says why
	}
	syms, _ := ksym.Kernel()
	rep.IPIs = report.IPIsFrom(st, syms.Func)
	for _, t := range append(rep.Tasks, rep.Hidden...) {
		t.IPIs = report.TaskIPIs(st, t.TID, syms.Func)
	}
}
