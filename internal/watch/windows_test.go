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

// TestAdmitWindowsOfOnePoll: of one poll's new maxima, only those still
// holding a window once all were admitted are cut; one admitted and then
// released within the poll is not, and says why; a window held from an
// earlier poll and released goes.
func TestAdmitWindowsOfOnePoll(t *testing.T) {
	m := metric.Latency
	s := &windows{live: liveWindows{PerMetric: 2}, raw: map[uint64]map[metric.ID]*trace.Raw{},
		notKept: map[uint64]map[metric.ID]bool{}}
	// An earlier poll: task 9 holds a window of 15.
	if cut := s.admit([]maxKey{{9, uint32(m)}}, map[maxKey]engine.Notice{{9, uint32(m)}: {Value: 15}}); len(cut) != 1 {
		t.Fatalf("first maximum: cut %v", cut)
	}
	s.raw[9] = map[metric.ID]*trace.Raw{m: {}}
	// This poll: tasks 1-4 with 10, 20, 30, 40 (and another metric's).
	order := []maxKey{{1, uint32(m)}, {2, uint32(m)}, {3, uint32(m)}, {4, uint32(m)}, {1, uint32(metric.Response)}}
	latest := map[maxKey]engine.Notice{}
	for i, k := range order {
		latest[k] = engine.Notice{Value: uint64(10 * (i + 1))}
	}
	cut := s.admit(order, latest)
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
	if _, ok := s.raw[9][m]; ok {
		t.Error("the released window of an earlier poll stayed")
	}
}

// TestNoteNoWindow: a maximum left without a window says why: its notice
// may be lost when the notice ring overflowed, else none was cut for it; a
// window, or an earlier note, leave the metric as it was.
func TestNoteNoWindow(t *testing.T) {
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
	noteNoWindow(tk, 0)
	if n := tk.Metrics["latency"].WorstNote; !strings.Contains(n, "none was cut for this maximum") || strings.Contains(n, "notices lost") {
		t.Errorf("no notice lost: note %q, want none cut (no lost notices named)", n)
	}
	tk = task()
	noteNoWindow(tk, 7)
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
