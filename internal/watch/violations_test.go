package watch

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/action"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/target"
)

// TestViolationBudget: within a second, ViolationBudget violations may be
// explained; the rest are counted as not analysed, and the next second
// has a budget again.
func TestViolationBudget(t *testing.T) {
	v := newViolations(nil, io.Discard)
	now := time.Unix(1000, 0)
	for i := 0; i < ViolationBudget; i++ {
		if _, ok := v.admit(uint64(i%3), metric.Latency, now); !ok {
			t.Fatalf("violation %d refused within the budget", i)
		}
	}
	h, ok := v.admit(7, metric.Latency, now.Add(500*time.Millisecond))
	if ok {
		t.Fatal("violation over the budget admitted")
	}
	if _, ok := v.admit(7, metric.Latency, now.Add(time.Second)); !ok {
		t.Error("no budget in the next second")
	}
	n := uint64(2)
	got := v.causes(7, metric.Latency, &report.Metric{Violations: &n}, true)
	if got == nil || got.Total != 2 {
		t.Fatalf("causes of task 7: %+v", got)
	}
	if h.Analysed != 0 {
		t.Errorf("a refused violation counted as analysed: %+v", h)
	}
	zero := uint64(0)
	if v.causes(7, metric.Latency, &report.Metric{Violations: &zero}, true) != nil {
		t.Error("causes without violations")
	}
	v.forget(7)
	if v.byTask[7] != nil {
		t.Error("forgotten task kept")
	}
}

// TestThresholdOneRunAtATime: the on-threshold actions run for the first
// violation of a poll and count the others as skipped, as they do every
// violation noticed while they run; without continue, watching stops once
// they are done.
func TestThresholdOneRunAtATime(t *testing.T) {
	v := newViolations(action.List{{Kind: action.Shell, Command: "true"}}, io.Discard)
	task := func(id uint64) *report.Task { return task(id, uint32(id), "ctl", false) }
	viols := []engine.Notice{{Id: 1, Tid: 1, Metric: uint32(metric.Latency), Value: 900}, {Id: 2, Tid: 2, Metric: uint32(metric.Latency)}}
	v.threshold(viols, nil, task, true)
	if v.fired != 1 || v.skipped != 1 || !v.stop {
		t.Errorf("fired %d skipped %d stop %v, want 1, 1, true", v.fired, v.skipped, v.stop)
	}
	v.threshold(viols[:1], nil, task, true)
	if v.fired != 1 || v.skipped != 2 {
		t.Errorf("while running or stopped: fired %d skipped %d, want 1 and 2", v.fired, v.skipped)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !v.actionsDone() {
		if time.Now().After(deadline) {
			t.Fatal("actions never done")
		}
		time.Sleep(10 * time.Millisecond)
	}
	v.waitActions() // done: returns at once
}

// TestActionsOnlyForJudgedTasks: the on-threshold actions act on and
// count the violations of judged tasks only. A hidden task's violation,
// noticed and explained first in the poll, is neither acted on nor
// counted as skipped, so the counters passed at the end
// (RTSCOPE_THRESHOLD_FIRED + SKIPPED) cover the same tasks as
// RTSCOPE_VIOLATIONS. With --show, only the named tasks are judged.
func TestActionsOnlyForJudgedTasks(t *testing.T) {
	for _, c := range []struct {
		name string
		sel  report.Selection
	}{{"default", report.Selection{}}, {"--show ctl", report.Selection{Show: []string{"ctl"}}}} {
		t.Run(c.name, func(t *testing.T) {
			b := newBook(target.Spec{}, c.sel)
			b.keep(task(1, 10, "app", false)) // the process's first thread
			b.keep(task(2, 11, "app", false)) // a runtime thread of it
			b.keep(task(3, 12, "ctl", false))
			for _, tk := range b.tasks {
				tk.PID = 10
			}
			lat := uint32(metric.Latency)
			viols := []engine.Notice{{Id: 2, Tid: 11, Metric: lat}, {Id: 3, Tid: 12, Metric: lat, Value: 700}, {Id: 2, Tid: 11, Metric: lat}, {Id: 3, Tid: 12, Metric: lat}}
			done := []*explained{{n: viols[0]}, {n: viols[1], e: report.Explanation{Verdict: "ctl's cause"}}}
			var asked []uint64
			mine, first := judgedOnly(viols, done, func(n engine.Notice) bool {
				asked = append(asked, n.Id)
				return b.judged(b.tasks[n.Id])
			})
			if len(mine) != 2 || mine[0].Id != 3 || mine[1].Id != 3 {
				t.Fatalf("judged violations %+v, want ctl's two", mine)
			}
			if first == nil || first.e.Verdict != "ctl's cause" {
				t.Errorf("first explained %+v, want ctl's, not the hidden runtime thread's", first)
			}
			if !slices.Equal(asked, []uint64{2, 3}) {
				t.Errorf("judged asked for %v, want once a task", asked)
			}
			var log lockedBuffer
			v := newViolations(action.List{{Kind: action.Continue}}, &log)
			v.threshold(mine, first, func(id uint64) *report.Task { return b.tasks[id] }, true)
			v.waitActions()
			if v.fired != 1 || v.skipped != 1 {
				t.Errorf("fired %d skipped %d, want 1 and 1 (ctl's two violations)", v.fired, v.skipped)
			}
			if s := log.String(); !strings.Contains(s, "ctl/12 latency") || !strings.Contains(s, "ctl's cause") {
				t.Errorf("the action acted on another violation: %q", s)
			}
			none, _ := judgedOnly(viols[:1], nil, func(n engine.Notice) bool { return b.judged(b.tasks[n.Id]) })
			if len(none) != 0 {
				t.Errorf("a hidden runtime thread's violation is judged: %+v", none)
			}
		})
	}
}

// lockedBuffer is a log written by the actions' goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
