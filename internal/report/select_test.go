package report_test

import (
	"bytes"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/report"
)

// fixtureSelection is the default selection of a recorded watch of
// 'rtscope scenario run': the launched program is rtscope, a Go program,
// and its process is the one whose first thread carries its name (the
// fixtures were recorded before the report kept the launched pid).
func fixtureSelection(r *report.Report) *report.Selection {
	s := &report.Selection{}
	if r.Command == nil || len(r.Command.Argv) == 0 {
		return s
	}
	name := filepath.Base(r.Command.Argv[0])
	for _, t := range append(r.Tasks, r.Hidden...) {
		if t.TID == t.PID && t.Comm == name {
			s.GoPIDs = append(s.GoPIDs, int(t.PID))
		}
	}
	return s
}

func comms(tasks []*report.Task) []string {
	var c []string
	for _, t := range tasks {
		c = append(c, t.Comm)
	}
	return c
}

// TestSelectFixtures: on the recorded watches of the scenarios, the
// default selection shows the scenario's threads (real-time, or with a
// period: preempt-off's OTHER injector) and hides the launcher's Go
// runtime threads, with or without an SLO on every task.
func TestSelectFixtures(t *testing.T) {
	for name, want := range map[string][]string{
		"priority-inversion":    {"task-L", "task-M", "task-H"},
		"priority-inversion-pi": {"task-L", "task-H", "task-M"},
		"healthy-loop":          {"control"},
		"preempt-off":           {"victim", "preempt-inject"},
		"hidden-blocking-slo":   {"control", "notifier"},
		"rt-hog-slo":            {"victim", "hog"},
		"event-driven-blocking": {"event", "blocker", "pinger"},
	} {
		t.Run(name, func(t *testing.T) {
			r := readFixture(t, filepath.Join("testdata/fixtures", name+".json.gz"))
			n := len(r.Tasks)
			fixtureSelection(r).Select(r, nil)
			if got := comms(r.Tasks); !slices.Equal(got, want) {
				t.Errorf("shown %v, want %v", got, want)
			}
			if len(r.Tasks)+len(r.Hidden) != n {
				t.Errorf("%d shown + %d hidden, want %d tasks in all", len(r.Tasks), len(r.Hidden), n)
			}
			for _, h := range r.Hidden {
				if h.Comm != "rtscope" {
					t.Errorf("hidden %s/%d: only the launcher's runtime threads should be", h.Comm, h.TID)
				}
			}
		})
	}
}

// TestSelectAllShowNamed: --all shows every task; --show only the names
// given (no culprit, no default); a runtime thread named by --tid shows.
func TestSelectAllShowNamed(t *testing.T) {
	path := "testdata/fixtures/priority-inversion.json.gz"
	r := readFixture(t, path)
	n := len(r.Tasks)
	(&report.Selection{All: true}).Select(r, nil)
	if len(r.Tasks) != n || len(r.Hidden) != 0 {
		t.Errorf("--all: %d shown, %d hidden, want %d and 0", len(r.Tasks), len(r.Hidden), n)
	}
	r = readFixture(t, path)
	(&report.Selection{Show: []string{"task-H"}}).Select(r, nil)
	if got := comms(r.Tasks); !slices.Equal(got, []string{"task-H"}) {
		t.Errorf("--show task-H: shown %v", got)
	}
	r = readFixture(t, path)
	s := fixtureSelection(r)
	var goThread *report.Task
	for _, tk := range r.Tasks {
		if tk.Comm == "rtscope" && tk.TID != tk.PID {
			goThread = tk
			break
		}
	}
	s.TIDs = []int{int(goThread.TID)}
	s.Select(r, nil)
	if !slices.Contains(r.Tasks, goThread) || len(r.Tasks) != 4 {
		t.Errorf("--tid %d: shown %v", goThread.TID, comms(r.Tasks))
	}
	leader := r.Hidden[0]
	if leader.TID != leader.PID {
		t.Fatalf("first hidden task %d is not the leader", leader.TID)
	}
	if !(&report.Selection{Leaders: []int{int(leader.PID)}}).Base(leader, "rtscope") {
		t.Error("the named first thread of a process (--pid, a launched C program) is not shown")
	}
}

// TestSelectCauses: a task that a shown task's analysis names as the
// cause is shown (and its own cause in turn), even without RT policy,
// period or SLO; a runtime thread named as a cause is not; prepare sees
// every shown task once, and no hidden one.
func TestSelectCauses(t *testing.T) {
	task := func(tid, pid uint32, comm, sched string, a report.Analysis) *report.Task {
		return &report.Task{TID: tid, PID: pid, Comm: comm, Sched: sched,
			Metrics: map[string]*report.Metric{"latency": {Analysis: a}}}
	}
	blocking := func(tid float64) report.Decoded {
		return report.Decoded{"blocking_thread": map[string]any{"tid": tid}}
	}
	inversion := report.Decoded{"priority_inversion": map[string]any{
		"owner": map[string]any{"tid": 3.0}, "preempters": []any{map[string]any{"tid": 5.0}}}}
	r := &report.Report{Tasks: []*report.Task{
		task(1, 1, "app", "OTHER nice 0", nil),
		task(2, 1, "ctl", "FIFO 80", inversion),
		task(3, 1, "holder", "OTHER nice 0", blocking(4)),
		task(4, 1, "logger", "OTHER nice 0", nil),
		task(5, 1, "app", "OTHER nice 0", nil), // a runtime thread: named like its process
		task(6, 1, "idle", "OTHER nice 0", nil),
		task(7, 1, "hog", "FIFO 90", causedBy{8}), // a live analysis names its causes itself
		task(8, 1, "irq-helper", "OTHER nice 0", nil),
	}}
	var prepared []uint32
	(&report.Selection{}).Select(r, func(t *report.Task) { prepared = append(prepared, t.TID) })
	if got := comms(r.Tasks); !slices.Equal(got, []string{"ctl", "holder", "logger", "hog", "irq-helper"}) {
		t.Errorf("shown %v, want ctl, its lock holder and the holder's blocker, hog and its cause", got)
	}
	if got := comms(r.Hidden); !slices.Equal(got, []string{"app", "app", "idle"}) {
		t.Errorf("hidden %v", got)
	}
	slices.Sort(prepared)
	if !slices.Equal(prepared, []uint32{2, 3, 4, 7, 8}) {
		t.Errorf("prepared %v, want the shown tasks 2, 3, 4, 7, 8", prepared)
	}
	var b bytes.Buffer
	report.WriteSummary(&b, r, report.TextOptions{LiveKeep: 16, ExitedKeep: 16})
	if !strings.Contains(b.String(), "rtscope watch: 3 other task(s) not shown: no finding; --all to list them\n") {
		t.Errorf("summary without the hidden tasks' line:\n%s", b.String())
	}
}

// causedBy is a live analysis (as internal/analysis.Result) that names its
// window's causes.
type causedBy []uint32

func (c causedBy) CauseTIDs() []uint32       { return c }
func (causedBy) WriteText(io.Writer, string) {}

// TestSelectHiddenLine: hidden tasks with SLO violations are said to be
// so, and not judged: the exit status and the violations counted are the
// shown tasks'.
func TestSelectHiddenLine(t *testing.T) {
	r := readFixture(t, "testdata/fixtures/hidden-blocking-slo.json.gz")
	before := r.Violations()
	fixtureSelection(r).Select(r, nil)
	var hidden uint64
	for _, h := range r.Hidden {
		for _, m := range h.Metrics {
			if m.Violations != nil {
				hidden += *m.Violations
			}
		}
	}
	if hidden == 0 || r.Violations()+hidden != before {
		t.Fatalf("violations: %d shown + %d hidden, want %d with some hidden", r.Violations(), hidden, before)
	}
	var b bytes.Buffer
	report.WriteSummary(&b, r, report.TextOptions{LiveKeep: 16, ExitedKeep: 16})
	if !strings.Contains(b.String(), "other task(s) of the command not shown: ") || !strings.Contains(b.String(), "SLO violation(s), not judged") {
		t.Errorf("hidden line missing or without the violations:\n%s", b.String())
	}
}

// Events the kernel skipped (a BPF program already ran on the CPU) are
// said in the lost line when there are any, and only then.
func TestSummaryEventsMissed(t *testing.T) {
	for _, c := range []struct {
		missed uint64
		want   bool
	}{{0, false}, {17, true}} {
		var b bytes.Buffer
		report.WriteSummary(&b, &report.Report{Lost: report.Lost{EventsMissed: c.missed}}, report.TextOptions{})
		if got := strings.Contains(b.String(), "17 events missed (a BPF program already ran on their CPU)"); got != c.want {
			t.Errorf("%d missed: said %v, want %v:\n%s", c.missed, got, c.want, b.String())
		}
	}
}
