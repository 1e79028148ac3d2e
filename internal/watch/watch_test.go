package watch

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/report/reporttest"
	"github.com/rtscope/rtscope/internal/slo"
	"github.com/rtscope/rtscope/internal/target"
)

// Tracking 10,000 short-lived tasks leaves nothing behind: every one gets its
// final report and its statistics are freed (task storage dies with the task).
func TestManyShortLivedTasksLeaveNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	const n = 10000
	var left = -1
	var mem uint64
	// One shell, n short children: /bin/true forks and execs are cheap enough.
	script := fmt.Sprintf("i=0; while [ $i -lt %d ]; do /bin/true & i=$((i+1)); if [ $((i %% 50)) -eq 0 ]; then wait; fi; done; wait", n)
	rep, err := Run(context.Background(), Options{
		Targets: target.Spec{Command: []string{"sh", "-c", script}},
		Quiet:   true, Out: io.Discard,
		Stopped: func(e *engine.Engine) {
			all, err := e.AllStats()
			if err != nil {
				t.Error(err)
			}
			left = len(all)
			mem = e.MemoryBytes()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d statistics entries left after every task exited", left)
	}
	if len(rep.Tasks)+len(rep.Hidden) < n+1 {
		t.Errorf("%d tasks reported (%d shown), want %d", len(rep.Tasks)+len(rep.Hidden), len(rep.Tasks), n+1)
	}
	for _, tk := range append(rep.Tasks, rep.Hidden...) {
		if !tk.Exited {
			t.Errorf("tid %d not exited", tk.TID)
			break
		}
	}
	// Hardly any window is cut here (/bin/true barely runs): the bound on
	// them is TestExitedTasksWindowsBounded's.
	heldWindows(t, rep)
	reporttest.Check(t, rep)
	if rep.Lost.TasksNotTracked != 0 {
		t.Errorf("lost: %+v", rep.Lost)
	}
	// Notices dropped while the poller was starved (a heavily loaded machine)
	// are counted, and the sweep still finishes every task: checked above.
	t.Logf("%d tasks (%d shown), kernel memory %d KiB at the end, lost %+v", len(rep.Tasks)+len(rep.Hidden), len(rep.Tasks), mem/1024, rep.Lost)
}

// heldWindows counts the decoded windows a report holds (worst cases and
// violation examples), of shown and hidden tasks, and fails t on a maximum
// left without its window and without a note saying why.
func heldWindows(t *testing.T, rep *report.Report) int {
	held := 0
	for _, tk := range append(rep.Tasks, rep.Hidden...) {
		for name, m := range tk.Metrics {
			if m.Worst != nil {
				held++
			} else if m.MaxNs != nil && m.WorstNote == "" && rep.Features.Trace {
				t.Errorf("tid %d %s: a maximum without its window and without a note", tk.TID, name)
			}
			if m.ViolationCauses != nil {
				for _, c := range m.ViolationCauses.Causes {
					if c.Example != nil && c.Example.Window != nil {
						held++
					}
				}
			}
		}
	}
	return held
}

// Short-lived tasks that sleep and wake each cut windows (a task's first
// sample is a new maximum): the run's report keeps at most
// ExitedWindowsPerMetric of each metric, the largest, and counts the rest.
// Before the bound, every window of every exited task was kept to the end.
func TestExitedTasksWindowsBounded(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	const n = 1000
	// Batches of 50, 20 ms apart: the reader takes each batch's notices
	// before the next. Back to back, it lost 3559-3999 of them on a loaded
	// machine, exits among them, and the live windows of tasks whose exit
	// went unseen kept their places: 13-64 windows were cut in all.
	script := fmt.Sprintf("i=0; while [ $i -lt %d ]; do sleep 0.001 & i=$((i+1)); if [ $((i %% 50)) -eq 0 ]; then wait; sleep 0.02; fi; done; wait", n)
	bound := int(metric.Count) * ExitedWindowsPerMetric
	// A loaded machine (make test runs packages in parallel) can leave
	// the reader so far behind that most notices are lost and too few
	// windows are cut to reach the bound: that run cannot judge it, and
	// is repeated with the reason. Above the bound fails at once.
	for attempt := 1; ; attempt++ {
		rep, err := Run(context.Background(), Options{
			Targets: target.Spec{Command: []string{"sh", "-c", script}},
			Quiet:   true, Out: io.Discard, SLO: slo.Set{Default: [metric.Count]uint64{metric.Latency: 1}},
		})
		if err != nil {
			t.Fatal(err)
		}
		reporttest.Check(t, rep)
		held := heldWindows(t, rep)
		t.Logf("%d tasks, %d windows held, %d dropped, lost %+v", len(rep.Tasks)+len(rep.Hidden), held, rep.Lost.ExitedWindowsDropped, rep.Lost)
		if held > bound {
			t.Fatalf("the report holds %d windows of exited tasks, above the bound of %d", held, bound)
		}
		cut := uint64(held) + rep.Lost.ExitedWindowsDropped
		if cut > uint64(bound) {
			return
		}
		why := fmt.Sprintf("only %d windows cut for %d tasks that each slept (%d tasks reported, %d notices lost): the bound of %d was not exercised",
			cut, n, len(rep.Tasks)+len(rep.Hidden), rep.Lost.Notices, bound)
		if attempt == 3 {
			t.Fatal(why)
		}
		t.Logf("attempt %d of 3: %s; running again", attempt, why)
	}
}
