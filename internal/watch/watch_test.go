package watch

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
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
	if len(rep.Tasks) < n+1 {
		t.Errorf("%d tasks reported, want %d", len(rep.Tasks), n+1)
	}
	for _, tk := range rep.Tasks {
		if !tk.Exited {
			t.Errorf("tid %d not exited", tk.TID)
			break
		}
	}
	if rep.Lost.TasksNotTracked != 0 {
		t.Errorf("lost: %+v", rep.Lost)
	}
	// Notices dropped while the poller was starved (a heavily loaded machine)
	// are counted, and the sweep still finishes every task: checked above.
	t.Logf("%d tasks, kernel memory %d KiB at the end, lost %+v", len(rep.Tasks), mem/1024, rep.Lost)
}
