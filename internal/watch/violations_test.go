package watch

import (
	"io"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/action"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
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
