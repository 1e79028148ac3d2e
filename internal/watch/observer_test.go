package watch

import (
	"context"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/target"
)

// events records what an agent's watch shows its observer.
type events struct {
	mu       sync.Mutex
	started  map[uint64]bool
	exited   map[uint64]bool
	ticks    int
	lateTick []uint64 // tasks ticked after their exit
	ready    bool
}

func (ev *events) Start(id uint64, _ uint32) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.started[id] = true
}

func (ev *events) Tick(_ *engine.Engine, live []*engine.TaskStats, _ uint64) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.ticks++
	for _, st := range live {
		if ev.exited[st.Id] {
			ev.lateTick = append(ev.lateTick, st.Id)
		}
	}
}

func (ev *events) Exit(st *engine.TaskStats) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.exited[st.Id] = true
}

func (ev *events) Violation(uint64, string, metric.ID, string, string) {}

// TestAgentObserver: an agent's watch outlives its targets, and shows its
// observer each task's start and exit, and ticks that never carry a task
// after its exit.
func TestAgentObserver(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	ev := &events{started: map[uint64]bool{}, exited: map[uint64]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// From Ready on (loading and attaching took 1-2 s here): the command
	// ends within 0.2 s, the agent goes on until cancelled.
	const after = 1500 * time.Millisecond
	var ready time.Time
	err := RunAgent(ctx, Options{Targets: target.Spec{Command: []string{"sh", "-c", "sleep 0.1; sleep 0.1"}}, Log: io.Discard},
		Agent{Observer: ev, TickEvery: 50 * time.Millisecond, Ready: func() {
			ev.ready, ready = true, time.Now()
			time.AfterFunc(after, cancel)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(ready); d < after {
		t.Errorf("the agent ended %v after it was ready, with its targets: it must run until its context ends", d)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if !ev.ready {
		t.Error("Agent.Ready not called")
	}
	if len(ev.started) == 0 {
		t.Error("no task start seen")
	}
	for id := range ev.started {
		if !ev.exited[id] {
			t.Errorf("task %d started, never exited", id)
		}
	}
	if ev.ticks < 2 {
		t.Errorf("%d ticks in %v at 50 ms", ev.ticks, after)
	}
	if len(ev.lateTick) > 0 {
		t.Errorf("tasks %v ticked after their exit", ev.lateTick)
	}
}
