package watch

import (
	"slices"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
)

// TestLiveWindowsKeepTheLargest: of many tasks' maxima, only the largest
// PerMetric of each metric hold a window, a task already holding one
// always gets its new maximum cut, and the smallest is released for a
// larger one.
func TestLiveWindowsKeepTheLargest(t *testing.T) {
	l := liveWindows{PerMetric: 3}
	m := metric.ID(0)
	for id := uint64(1); id <= 3; id++ {
		if cut, _, ev := l.admit(id, m, 100*id); !cut || ev {
			t.Fatalf("task %d: cut %v evicted %v below the bound", id, cut, ev)
		}
	}
	if cut, _, _ := l.admit(4, m, 100); cut {
		t.Error("a maximum equal to the smallest held was cut (ties keep the earlier)")
	}
	if cut, _, ev := l.admit(1, m, 150); !cut || ev {
		t.Errorf("a task holding a window: its new maximum cut %v, evicted %v", cut, ev)
	}
	cut, ev, evicted := l.admit(5, m, 1000)
	if !cut || !evicted || ev != 1 {
		t.Errorf("a larger maximum: cut %v, evicted task %d (%v), want task 1 (150) released", cut, ev, evicted)
	}
	if cut, _, _ := l.admit(6, metric.ID(1), 1); !cut {
		t.Error("another metric's bound was shared")
	}
	l.forget(5)
	if cut, _, ev := l.admit(7, m, 1); !cut || ev {
		t.Errorf("after an exit freed a place: cut %v evicted %v", cut, ev)
	}
	if l.NotKept != 2 {
		t.Errorf("NotKept %d, want 2 (one refused, one released)", l.NotKept)
	}
}

// TestAdmitWindowsOfOnePoll: of one poll's new maxima, only those still
// holding a window once all were admitted are cut; one admitted and then
// released within the poll is not, and says why; a window held from an
// earlier poll and released goes.
func TestAdmitWindowsOfOnePoll(t *testing.T) {
	m := metric.Latency
	s := &watcher{live: liveWindows{PerMetric: 2}, traces: map[uint64]map[metric.ID]*trace.Raw{},
		notKept: map[uint64]map[metric.ID]bool{}}
	// An earlier poll: task 9 holds a window of 15.
	if cut := s.admitWindows([]maxKey{{9, uint32(m)}}, map[maxKey]engine.Notice{{9, uint32(m)}: {Value: 15}}); len(cut) != 1 {
		t.Fatalf("first maximum: cut %v", cut)
	}
	s.traces[9] = map[metric.ID]*trace.Raw{m: {}}
	// This poll: tasks 1-4 with 10, 20, 30, 40 (and another metric's).
	order := []maxKey{{1, uint32(m)}, {2, uint32(m)}, {3, uint32(m)}, {4, uint32(m)}, {1, uint32(metric.Response)}}
	latest := map[maxKey]engine.Notice{}
	for i, k := range order {
		latest[k] = engine.Notice{Value: uint64(10 * (i + 1))}
	}
	cut := s.admitWindows(order, latest)
	want := []maxKey{{3, uint32(m)}, {4, uint32(m)}, {1, uint32(metric.Response)}}
	if !slices.Equal(cut, want) {
		t.Errorf("cut %v, want %v (the two largest latencies, and the response)", cut, want)
	}
	for _, id := range []uint64{1, 2, 9} {
		if !s.notKept[id][m] {
			t.Errorf("task %d: its latency maximum has no window and no note", id)
		}
	}
	if s.notKept[3][m] || s.notKept[4][m] || s.notKept[1][metric.Response] {
		t.Errorf("a window cut is marked not kept: %v", s.notKept)
	}
	if _, ok := s.traces[9][m]; ok {
		t.Error("the released window of an earlier poll stayed")
	}
}

// TestNoteLostNotices: when the notice ring overflowed, a maximum left
// without a window says that its notice may be lost; a window, an earlier
// note, or no loss at all leave the metric as it was.
func TestNoteLostNotices(t *testing.T) {
	max := uint64(5000)
	task := func() *report.Task {
		return &report.Task{Metrics: map[string]*report.Metric{
			"latency":  {Summary: metric.Summary{MaxNs: &max}},
			"response": {Summary: metric.Summary{MaxNs: &max}, Worst: &trace.Trace{Value: max}},
			"cycle":    {Summary: metric.Summary{MaxNs: &max}, WorstNote: "no window: while tasks run, ..."},
			"period":   {},
		}}
	}
	tk := task()
	noteLostNotices(tk, 0)
	if n := tk.Metrics["latency"].WorstNote; n != "" {
		t.Errorf("no notice lost, yet a note: %q", n)
	}
	noteLostNotices(tk, 7)
	if n := tk.Metrics["latency"].WorstNote; !strings.Contains(n, "7 notices lost") {
		t.Errorf("latency note %q, want the 7 lost notices", n)
	}
	if n := tk.Metrics["response"].WorstNote; n != "" {
		t.Errorf("a maximum with its window got a note: %q", n)
	}
	if n := tk.Metrics["cycle"].WorstNote; n != "no window: while tasks run, ..." {
		t.Errorf("an earlier note was replaced: %q", n)
	}
	if n := tk.Metrics["period"].WorstNote; n != "" {
		t.Errorf("a metric without samples got a note: %q", n)
	}
}
