package serve

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/watch"
)

// Without a session, State answers the tasks the last Observe published
// (exited ones left out) and the SLO note, and never asks the session:
// nobody reads the control's hook here.
func TestStateFromObserve(t *testing.T) {
	c := NewControl(Config{Targets: []TargetConfig{{Comm: "a"}}, SLO: []string{"latency=1ms"}}, "", nil)
	e := &engine.Engine{}
	e.Features.SLOReapply = os.ErrNotExist // a kernel without bpf_for_each_map_elem
	live := []*engine.TaskStats{{}, {}}
	live[0].Tid, live[0].Pid = 11, 10
	live[0].Comm[0] = 'a'
	live[1].Tid, live[1].Pid, live[1].Exited = 12, 10, 1
	c.Observe(e, live)
	st := stateWithin(t, c)
	want := []Tracked{{TID: 11, PID: 10, Comm: "a"}}
	if !slices.Equal(st.Tracked, want) || st.SLONote != os.ErrNotExist.Error() ||
		!slices.Equal(st.Targets, []TargetConfig{{Comm: "a"}}) || !slices.Equal(st.SLO, []string{"latency=1ms"}) {
		t.Fatalf("state %+v, want tracked %v, the note, target a and latency=1ms", st, want)
	}
	// A later tick replaces the list, and the answer given before is
	// not changed by it.
	c.Observe(e, nil)
	if st2 := stateWithin(t, c); len(st2.Tracked) != 0 || !slices.Equal(st.Tracked, want) {
		t.Fatalf("after an empty tick: %+v, the earlier answer now %+v", st2.Tracked, st.Tracked)
	}
	c.Ended()
	if _, err := c.State(); err != errEnded {
		t.Fatalf("state after the session ended: %v, want %v", err, errEnded)
	}
}

// stateWithin returns c.State(), failing if it does not answer: it waited
// for the session.
func stateWithin(t *testing.T, c *Control) *State {
	t.Helper()
	type result struct {
		st  *State
		err error
	}
	ch := make(chan result, 1)
	go func() {
		st, err := c.State()
		ch <- result{st, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("state: %v", r.err)
		}
		return r.st
	case <-time.After(10 * time.Second):
		t.Fatal("State waited for the session")
	}
	return nil
}

// An agent whose session is busy (held here by a control function that
// waits) still answers GET /v1/targets and /metrics, with the targets of
// the last change made and the tasks tracked at its last tick, while a
// ctl add waits for the session; once the session takes the change, the
// answer has the new target, and a removed target's task is gone from
// the answer right after its removal.
func TestStateWhileSessionBusy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root: the agent loads the BPF engine (CI runs as root)")
	}
	dir := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "rtsview") // its comm: the link's name
	if err := os.Symlink(sleep, link); err != nil {
		t.Fatal(err)
	}
	task := exec.Command(link, "60")
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = task.Process.Kill(); _ = task.Wait() }() // killed: its exit status is ours

	c := NewControl(Config{Targets: []TargetConfig{{Comm: "rtsview"}}}, "", nil)
	sock := filepath.Join(dir, "serve.sock")
	url, stop := startAgent(t, c, sock)
	defer stop()
	cl := NewClient(sock)
	get := func() *State {
		t.Helper()
		var st State
		if err := cl.Do("GET", PathTargets, nil, &st); err != nil {
			t.Fatalf("GET %s: %v", PathTargets, err)
		}
		return &st
	}
	for end := time.Now().Add(10 * time.Second); !tracks(get(), "rtsview"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the running rtsview task is not tracked: %+v", get())
		}
	}

	// Hold the session, then ask for a change, which waits for it.
	held, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = c.do(func(*engine.Engine) error { close(held); <-release; return nil })
	}()
	<-held
	added := make(chan error, 1)
	go func() { added <- c.AddTarget(TargetConfig{Comm: "rtsview2"}) }()
	answered := make(chan *State, 1)
	go func() { answered <- get() }()
	select {
	case st := <-answered:
		if !slices.Equal(st.Targets, []TargetConfig{{Comm: "rtsview"}}) || !tracks(st, "rtsview") {
			t.Errorf("GET while the session is busy: %+v, want target rtsview (the add not made yet) and its task", st)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("GET /v1/targets waited for the busy session")
	}
	if got := scrapeText(t, url)["rtscope_targets"]; got != 1 {
		t.Errorf("rtscope_targets while the session is busy: %v, want 1", got)
	}
	close(release)
	if err := <-added; err != nil {
		t.Fatalf("ctl add once the session is free: %v", err)
	}
	if st := get(); !slices.Contains(st.Targets, TargetConfig{Comm: "rtsview2"}) {
		t.Fatalf("after the add: %+v, want rtsview2 among the targets", st)
	}
	if err := c.RemoveTarget(TargetConfig{Comm: "rtsview"}); err != nil {
		t.Fatal(err)
	}
	if st := get(); tracks(st, "rtsview") {
		t.Fatalf("right after its target's removal the rtsview task is still listed: %+v", st)
	}
}

// tracks says whether st lists a task named comm.
func tracks(st *State, comm string) bool {
	return slices.ContainsFunc(st.Tracked, func(tk Tracked) bool { return tk.Comm == comm })
}

// startAgent runs an agent with control c and its API on sock (ticking
// every 100 ms), and returns its /metrics URL and a function that stops
// it, failing if it does not stop cleanly.
func startAgent(t *testing.T, c *Control, sock string) (string, func()) {
	t.Helper()
	ready := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	o := Options{Listen: "127.0.0.1:0", Control: c, Socket: sock,
		Watch: watch.Options{Targets: c.Spec(), SLO: c.SLO()}, Tick: 100 * time.Millisecond, Log: io.Discard,
		Ready: func(addr string) { ready <- addr }}
	go func() { done <- Run(ctx, o) }()
	var url string
	select {
	case addr := <-ready:
		url = "http://" + addr + "/metrics"
	case err := <-done:
		cancel()
		t.Fatalf("the agent ended: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("the agent never became ready")
	}
	return url, func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the agent stopped with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the agent did not stop")
		}
	}
}
