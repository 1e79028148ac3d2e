package report

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/trace"
)

// exitedTask is a task with a worst window per metric and, for latency, a
// violation example with its window.
func exitedTask(tid uint32, latency, cycle uint64) *Task {
	t := Placeholder(uint64(tid), tid)
	t.Exited = true
	t.Metrics["latency"] = &Metric{Worst: &trace.Trace{Value: latency, Events: make([]trace.Event, 100)},
		ViolationCauses: &Violations{Causes: []*ViolationCause{{Cause: "interference",
			Example: &ViolationExample{ValueNs: latency, Window: &trace.Trace{Value: latency}}}}}}
	t.Metrics["cycle"] = &Metric{Worst: &trace.Trace{Value: cycle}}
	return t
}

// TestWindowKeeperBound feeds the windows of 10000 exited tasks (a
// workload of short-lived threads) into the keeper: it holds at most its
// bound per metric, keeps the largest of each metric (the report's worst
// cases), counts every window released, and notes it on the worst case
// that lost its window. Before, the session kept all 30000 windows.
func TestWindowKeeperBound(t *testing.T) {
	const n, per = 10000, 8
	k := &WindowKeeper{PerMetric: per}
	var tasks []*Task
	for i := range n {
		// Values in a scrambled order, the largest (latency: tid 7777,
		// cycle: tid 1234) in the middle of the run.
		lat, cyc := uint64((i*7919)%n+1000), uint64((i*104729)%n+1000)
		switch i {
		case 7777:
			lat = 1 << 40
		case 1234:
			cyc = 1 << 41
		}
		task := exitedTask(uint32(i+1), lat, cyc)
		tasks = append(tasks, task)
		k.Keep(task)
		if k.Len() > 2*per {
			t.Fatalf("after %d tasks the keeper holds %d windows, above its bound of %d per metric", i+1, k.Len(), per)
		}
	}
	held := 0
	for _, task := range tasks {
		for name, m := range task.Metrics {
			if m.Worst != nil {
				held++
			} else if !strings.Contains(m.WorstNote, "released") {
				t.Fatalf("task %d %s: window dropped without a note (%q)", task.TID, name, m.WorstNote)
			}
			if m.ViolationCauses != nil && m.ViolationCauses.Causes[0].Example.Window != nil {
				held++
			}
		}
	}
	if held != k.Len() || uint64(held)+k.Dropped != 3*n {
		t.Fatalf("%d windows held, keeper says %d, %d dropped: want held + dropped = %d", held, k.Len(), k.Dropped, 3*n)
	}
	if tasks[7777].Metrics["latency"].Worst == nil || tasks[1234].Metrics["cycle"].Worst == nil {
		t.Fatal("the largest window of a metric was released")
	}
	// The latency metric holds the per largest values among worst windows
	// and examples alike.
	for _, task := range tasks {
		if w := task.Metrics["latency"].Worst; w != nil && w.Value < uint64(n+1000-per) && w.Value != 1<<40 {
			t.Fatalf("kept a latency window of %d, below the %d largest", w.Value, per)
		}
	}
}
