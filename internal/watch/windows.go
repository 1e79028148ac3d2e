package watch

import (
	"fmt"
	"time"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
)

// followEvery bounds the time between two readings of the rings while a
// poll cuts and explains windows: at 1000 tracked threads under
// stress-ng --switch 2 a ring held 17 ms of events, and polls busy for
// 12-25 ms let the rings wrap between readings, truncating every kept
// window open across the gap (a trace of the gaps, 2026-11-26).
const followEvery = 4 * time.Millisecond

// windows turns the flight recorder into worst-case windows: which new
// maxima get a window (LiveWindowsPerMetric), the cut and still raw
// windows of live tasks, the rings followed for tasks released by a
// timer, and the decoded windows exited tasks keep. Session goroutine
// only.
type windows struct {
	noise noiseWindows // which noise maxima get a window
	eng   *engine.Engine
	names *trace.Names
	max   int                                 // events kept per window (Options.TraceMax)
	raw   map[uint64]map[metric.ID]*trace.Raw // worst windows, decoded only for final reports
	snap  *trace.Snapshot                     // ring copy, reused every poll
	// long: a tracked task is released by a timer (a notice of a periodic
	// metric was seen): its windows of a period outlast the rings under
	// load, so the rings are read at every poll from then on
	// (trace.Snapshot.Follow, in place) and such tasks' own events kept
	// beyond them (keepOwn). The rings are copied only for a window.
	long     bool
	followed time.Time // the last Follow
	// lost counts windows not cut (snapshot failed) or stale
	// (Metric.SetWorst).
	lost uint64
	// exited: decoded windows of exited tasks, bounded.
	exited report.WindowKeeper
	// live: which live tasks' maxima get a window; notKept: the (task,
	// metric) maxima left without one.
	live    liveWindows
	notKept map[uint64]map[metric.ID]bool
}

func newWindows(eng *engine.Engine, names *trace.Names, maxEvents int) *windows {
	return &windows{eng: eng, names: names, max: maxEvents, raw: map[uint64]map[metric.ID]*trace.Raw{},
		exited: report.WindowKeeper{PerMetric: ExitedWindowsPerMetric},
		live:   liveWindows{PerMetric: LiveWindowsPerMetric}, notKept: map[uint64]map[metric.ID]bool{},
		noise: newNoiseWindows()}
}

// maxKey is a task's metric: one new maximum of it a poll is handled,
// the latest.
type maxKey struct {
	id uint64
	m  uint32
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
// every poll (long).
func (w *windows) keepOwn(n engine.Notice) {
	if !w.eng.Tracing() || !periodic(metric.ID(n.Metric)) {
		return
	}
	if w.snap == nil {
		w.snap = new(trace.Snapshot)
	}
	w.snap.KeepOwn(n.Tid)
	w.long = true
}

// follow reads the rings for the tasks whose own events are kept
// (trace.Snapshot.Follow) and moves the notices queued meanwhile out of
// the kernel's ring (Engine.HoldNotices): at the start of every poll, and
// between its windows and at its end when followEvery has passed.
func (w *windows) follow(always bool) {
	if !always && time.Since(w.followed) < followEvery {
		return
	}
	if !always {
		// A failed read comes back at the next poll's Notices.
		_ = w.eng.HoldNotices()
	}
	if w.long {
		// A failed read is a gap: the windows it spans are truncated.
		_ = w.snap.Follow(w.eng)
	}
	w.followed = time.Now()
}

// admit returns the new maxima of one poll (order, values in latest)
// whose windows are cut: only the windows users read
// (LiveWindowsPerMetric), those still held once every maximum of the poll
// was admitted. A window admitted, then released for a larger maximum of
// the same poll is not cut: at 1000 threads starting together, one poll
// brings dozens of first maxima of a metric, and all of them were cut for
// at most 16 kept, each kept to the end.
func (w *windows) admit(order []maxKey, latest map[maxKey]engine.Notice) []maxKey {
	for _, k := range order {
		m := metric.ID(k.m)
		ok, ev, evicted := w.live.admit(k.id, m, latest[k].Value)
		if evicted {
			delete(w.raw[ev], m)
			w.markNotKept(ev, m, true)
		}
		w.markNotKept(k.id, m, !ok)
		if !ok {
			// A stale window of an earlier maximum must not stay.
			delete(w.raw[k.id], m)
		}
	}
	cut := order[:0]
	for _, k := range order {
		if w.live.holds(k.id, metric.ID(k.m)) {
			cut = append(cut, k)
		}
	}
	return cut
}

// markNotKept records whether the window of task id's maximum of m was
// left out (LiveWindowsPerMetric).
func (w *windows) markNotKept(id uint64, m metric.ID, notKept bool) {
	if !notKept {
		delete(w.notKept[id], m)
		return
	}
	if w.notKept[id] == nil {
		w.notKept[id] = map[metric.ID]bool{}
	}
	w.notKept[id][m] = true
}

// take copies the rings for this poll's n windows; a failure loses them,
// counted (the maxima keep no stale window: Metric.SetWorst).
func (w *windows) take(n int) (*trace.Snapshot, bool) {
	snap, err := trace.TakeInto(w.eng, w.snap)
	if err != nil {
		w.lost += uint64(n)
		return nil, false
	}
	w.snap = snap
	snap.Learn(w.names)
	return snap, true
}

// cut cuts notice n's window out of snap, raw.
func (w *windows) cut(snap *trace.Snapshot, n engine.Notice) *trace.Raw {
	return snap.Cut(trace.Window{Metric: metric.ID(n.Metric).String(), TID: n.Tid, Value: n.Value, StealClock: w.eng.Features.Steal.Readable,
		IPISendersUnseen: w.eng.Features.IPISendersUnseen(), Start: n.Start, End: n.End, CPUStart: int(n.CpuStart), CPUEnd: int(n.Cpu), MaxEvents: w.max}, w.names)
}

// keepWorst cuts and keeps the window of n, a task's new maximum.
func (w *windows) keepWorst(snap *trace.Snapshot, n engine.Notice) *trace.Raw {
	tr := w.cut(snap, n)
	if w.raw[n.Id] == nil {
		w.raw[n.Id] = map[metric.ID]*trace.Raw{}
	}
	w.raw[n.Id][metric.ID(n.Metric)] = tr
	return tr
}

// attach decodes t's worst-case windows into its metrics, explain
// analysing each one kept, and says why a maximum has none.
func (w *windows) attach(t *report.Task, explain func(m metric.ID, tr *trace.Trace, rm *report.Metric)) {
	for m, raw := range w.raw[t.ID()] {
		rm := t.Metrics[m.String()]
		if rm == nil {
			continue
		}
		tr := raw.Decode(w.names)
		if !rm.SetWorst(tr) {
			w.lost++
			continue
		}
		explain(m, tr, rm)
	}
	for m := range w.notKept[t.ID()] {
		if rm := t.Metrics[m.String()]; rm != nil && rm.Worst == nil && rm.WorstNote == "" {
			rm.WorstNote = fmt.Sprintf("no window: while tasks run, each metric keeps the windows of its %d largest maxima only", w.live.PerMetric)
		}
	}
	w.noise.note(t)
	if w.eng.Tracing() {
		// One counter, one lookup: Counters took one a counter, 6000
		// system calls in the stop at 1000 tracked threads.
		noteNoWindow(t, w.eng.Counter(engine.CounterNoticeLost))
	}
}

// exiting stops keeping the own events of an exiting task.
func (w *windows) exiting(tid uint32) {
	if w.snap != nil {
		w.snap.ForgetOwn(tid)
	}
}

// forget drops task id's raw windows (decoded into its report, or an
// agent's exited task).
func (w *windows) forget(id uint64) {
	delete(w.raw, id)
	delete(w.notKept, id)
	w.live.forget(id)
	w.noise.forget(id)
}

// noteNoWindow says why a maximum of t still has no window and no note.
// When the notice ring overflowed (user space read it too late), its
// new-maximum notice may be among those lost, which lost.notices counts: a
// fresh-clone run of TestExitedTasksWindowsBounded on a loaded machine
// left 3563 maxima of 1000 short tasks without a window and without a
// word. Else none was cut for it: a maximum settled as the run ended (a
// task's samples are held until its switch-out, the last ones settled
// after the detach) sends its notice when no window can be cut any more.
func noteNoWindow(t *report.Task, lost uint64) {
	note := "no window: none was cut for this maximum (reached as the run ended, or its notice came too late to cut one)"
	if lost > 0 {
		note = fmt.Sprintf("no window: the notice ring was full (%d notices lost in the run), so this maximum's notice may not have been read", lost)
	}
	for _, m := range metric.All() {
		if rm := t.Metrics[m.String()]; rm != nil && rm.MaxNs != nil && rm.Worst == nil && rm.WorstNote == "" {
			rm.WorstNote = note
		}
	}
}

// keepWorst cuts and keeps the window of n, a task's new maximum, and
// shows it to the observer, decoded and explained only if it asks.
func (s *watcher) keepWorst(snap *trace.Snapshot, n engine.Notice) {
	tr := s.win.keepWorst(snap, n)
	if s.wobs == nil {
		return
	}
	t, m := s.book.identify(s.eng, n.Id, n.Tid), metric.ID(n.Metric)
	s.wobs.Window(true, t, m, n.Value, func() (*trace.Trace, report.Explanation) {
		d := tr.Decode(s.names)
		var e report.Explanation
		if s.o.Analyze != nil {
			e = s.o.Analyze(t, m, d)
		}
		return d, e
	})
}

// attach adds the worst-case traces (and their analysis) and the
// violations' causes to t: for final reports only, decoding is the
// expensive part.
func (s *watcher) attach(t *report.Task) {
	s.win.attach(t, func(m metric.ID, tr *trace.Trace, rm *report.Metric) {
		if s.o.Analyze == nil {
			return
		}
		tr.Monitor = s.house.threads()
		e := s.o.Analyze(t, m, tr)
		rm.Verdict, rm.Cause, rm.Analysis = e.Verdict, e.Cause, e.Detail
		s.steal.AddWorst(e)
		s.house.monitor.AddWorst(e)
	})
	analysed := s.eng.Tracing() && s.o.Explain != nil
	for _, m := range metric.All() {
		if rm := t.Metrics[m.String()]; rm != nil {
			rm.ViolationCauses = s.viol.causes(t.ID(), m, rm, analysed)
			rm.Series = s.series.of(t.ID(), m)
		}
	}
	s.viol.forget(t.ID())
}
