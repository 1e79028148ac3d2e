package session

import (
	"context"
	"errors"
	"os"
	"reflect"
	"runtime/debug"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/engine"
)

// fakeTool records the lifecycle calls a session makes, and can fail a
// step or stop the session.
type fakeTool struct {
	calls    []string
	failAt   string        // the step that returns an error
	stopPoll int           // Poll stops at this call (0: never)
	slow     time.Duration // Tracking takes this long
	polls    int
	ctlRan   bool
	why      End
	eng      *engine.Engine
}

var errStep = errors.New("step failed")

func (f *fakeTool) step(name string) error {
	f.calls = append(f.calls, name)
	if f.failAt == name {
		return errStep
	}
	return nil
}

func (f *fakeTool) Prepare() error { return f.step("prepare") }
func (f *fakeTool) Attached(e *engine.Engine) error {
	f.eng = e
	return f.step("attached")
}
func (f *fakeTool) Register(e *engine.Engine) error {
	// A target that exists: the scan that follows tracks it.
	if err := e.WantTID(uint32(os.Getpid()), 0, 0); err != nil {
		return err
	}
	return f.step("register")
}
func (f *fakeTool) Tracking(e *engine.Engine) error {
	time.Sleep(f.slow)
	if all, err := e.AllStats(); err != nil || len(all) != 1 {
		return errors.New("the scan did not track the registered target before Tracking")
	}
	return f.step("tracking")
}
func (f *fakeTool) Poll(ns []engine.Notice) (bool, error) {
	if f.polls == 0 {
		f.calls = append(f.calls, "poll")
	}
	f.polls++
	return f.stopPoll > 0 && f.polls >= f.stopPoll && f.ctlRan, nil
}
func (f *fakeTool) Finish(why End) error {
	f.why = why
	return f.step("finish")
}
func (f *fakeTool) Close() { f.calls = append(f.calls, "close") }

// scanPollTool is a fakeTool that polls during the scan (ScanPoller).
type scanPollTool struct{ fakeTool }

func (*scanPollTool) PollsDuringScan() {}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// runTool runs a session of tool, and checks that it leaves no file
// descriptor open (calls: the tool's, for the message).
func runTool(t *testing.T, spec Spec, tool Tool, calls *[]string, ctx context.Context) (End, error) {
	t.Helper()
	before := openFDs(t)
	why, err := Run(ctx, spec, tool)
	if after := openFDs(t); after > before+2 {
		t.Errorf("%v: %d file descriptors open after the session, %d before", *calls, after, before)
	}
	return why, err
}

// TestLifecycle: a session calls its tool's steps in order, scans between
// Register and Tracking, counts the duration from Tracking's return, ends
// for the reason it says, closes the tool on every path (Finish only after
// a loop), and leaves nothing of the engine open.
func TestLifecycle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	// With the collector off: only Close may release the engine's fds.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	spec := Spec{Name: "test", Engine: engine.Config{FlightPerCPU: 64}, Poll: 5 * time.Millisecond}
	all := []string{"prepare", "attached", "register", "tracking", "poll", "finish", "close"}
	run := func(spec Spec, f *fakeTool, ctx context.Context) (End, error) {
		t.Helper()
		return runTool(t, spec, f, &f.calls, ctx)
	}
	// The first load opens what stays for the process (BTF, caches).
	if _, err := Run(context.Background(), spec, &fakeTool{failAt: "register"}); !errors.Is(err, errStep) {
		t.Fatalf("warm-up: %v", err)
	}

	t.Run("duration", func(t *testing.T) {
		s := spec
		s.Duration = 50 * time.Millisecond
		f := &fakeTool{slow: 100 * time.Millisecond, ctlRan: true}
		start := time.Now()
		why, err := run(s, f, context.Background())
		if err != nil || why != Elapsed || f.why != Elapsed {
			t.Fatalf("Run = %v, %v (Finish saw %v); want Elapsed", why, err, f.why)
		}
		if !reflect.DeepEqual(f.calls, all) {
			t.Errorf("calls %v, want %v", f.calls, all)
		}
		// Timers never fire early: Tracking's time plus the duration.
		if d := time.Since(start); d < 150*time.Millisecond {
			t.Errorf("the session took %v: the duration must count from Tracking's return (100 ms + 50 ms)", d)
		}
	})
	t.Run("first-poll-at-once", func(t *testing.T) {
		// A poll period longer than the session: the loop's first poll
		// runs anyway, at once, not one period after Tracking.
		s := spec
		s.Poll, s.Duration = time.Hour, 20*time.Millisecond
		f := &fakeTool{}
		if why, err := run(s, f, context.Background()); err != nil || why != Elapsed {
			t.Fatalf("Run = %v, %v; want Elapsed", why, err)
		}
		if !reflect.DeepEqual(f.calls, all) || f.polls != 1 {
			t.Errorf("calls %v, %d polls; want %v, 1 poll", f.calls, f.polls, all)
		}
	})
	t.Run("scan-poller", func(t *testing.T) {
		// The scan tracks the registered target, a batch: a ScanPoller
		// is polled between the scan's batches, before Tracking.
		s := spec
		s.Duration = 20 * time.Millisecond
		f := &scanPollTool{}
		if why, err := runTool(t, s, f, &f.calls, context.Background()); err != nil || why != Elapsed {
			t.Fatalf("Run = %v, %v; want Elapsed", why, err)
		}
		want := []string{"prepare", "attached", "register", "poll", "tracking", "finish", "close"}
		if !reflect.DeepEqual(f.calls, want) || f.polls < 2 {
			t.Errorf("calls %v, %d polls; want %v and at least 2 polls (the scan's, the loop's first)", f.calls, f.polls, want)
		}
	})
	t.Run("tool-and-control", func(t *testing.T) {
		s := spec
		ctl := make(chan func(*engine.Engine), 1)
		s.Control = ctl
		f := &fakeTool{stopPoll: 3}
		ctl <- func(e *engine.Engine) { f.ctlRan = e != nil && e == f.eng }
		jobRuns := 0
		s.Every = []Job{{Every: time.Millisecond, Run: func() bool { jobRuns++; return false }}}
		why, err := run(s, f, context.Background())
		if err != nil || why != ToolDone || f.why != ToolDone {
			t.Fatalf("Run = %v, %v (Finish saw %v); want ToolDone", why, err, f.why)
		}
		if !f.ctlRan || f.polls < 3 || jobRuns == 0 {
			t.Errorf("control ran %v with the engine, %d polls, the job ran %d times", f.ctlRan, f.polls, jobRuns)
		}
	})
	t.Run("job-stops", func(t *testing.T) {
		s := spec
		f := &fakeTool{}
		runs := 0
		s.Every = []Job{{Every: time.Millisecond, Run: func() bool { runs++; return runs == 3 }}}
		why, err := run(s, f, context.Background())
		if err != nil || why != ToolDone || runs != 3 {
			t.Fatalf("Run = %v, %v after %d job runs; want ToolDone after 3", why, err, runs)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		f := &fakeTool{}
		s := spec
		s.Every = []Job{{Every: time.Millisecond, Run: func() bool { cancel(); return false }}}
		why, err := run(s, f, ctx)
		if err != nil || why != Stopped || f.why != Stopped {
			t.Fatalf("Run = %v, %v (Finish saw %v); want Stopped", why, err, f.why)
		}
	})
	for i, step := range all[:4] {
		t.Run("fail-"+step, func(t *testing.T) {
			f := &fakeTool{failAt: step}
			if _, err := run(spec, f, context.Background()); !errors.Is(err, errStep) {
				t.Fatalf("Run: %v, want the step's error", err)
			}
			want := append(append([]string{}, all[:i+1]...), "close")
			if !reflect.DeepEqual(f.calls, want) {
				t.Errorf("calls %v, want %v (no Finish, Close always)", f.calls, want)
			}
		})
	}
	t.Run("bad-options", func(t *testing.T) {
		for _, s := range []Spec{{Poll: time.Millisecond, CPUs: []int{1 << 20}}, {Poll: time.Millisecond, Housekeeping: []int{1 << 20}},
			{Poll: time.Millisecond, Duration: -time.Second}, {}, {Poll: time.Millisecond, Every: []Job{{Run: func() bool { return true }}}}} {
			f := &fakeTool{}
			if _, err := Run(context.Background(), s, f); err == nil || len(f.calls) != 0 {
				t.Errorf("%+v: %v after %v; want refused before any step", s, err, f.calls)
			}
		}
	})
}
