package tests

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ctlState is rtscope ctl's output.
type ctlState struct {
	Targets []struct {
		Comm string `json:"comm"`
		PID  int    `json:"pid"`
		TID  int    `json:"tid"`
	} `json:"targets"`
	SLO     []string `json:"slo"`
	Tracked []struct {
		TID  int    `json:"tid"`
		Comm string `json:"comm"`
	} `json:"tracked"`
}

func (s *ctlState) comms() []string {
	var out []string
	for _, t := range s.Targets {
		if t.Comm != "" {
			out = append(out, t.Comm)
		}
	}
	return out
}

func (s *ctlState) tracking(comm string) bool {
	for _, t := range s.Tracked {
		if t.Comm == comm {
			return true
		}
	}
	return false
}

// ctl runs rtscope ctl --socket sock ARGS and returns its state, or its
// error output when it fails.
func ctl(t *testing.T, sock string, args ...string) (*ctlState, string) {
	t.Helper()
	out, err := exec.Command(rtscope, append([]string{"ctl", "--socket", sock}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, string(ee.Stderr)
		}
		t.Fatalf("rtscope ctl %v: %v", args, err)
	}
	var st ctlState
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("rtscope ctl %v: %v\n%s", args, err, out)
	}
	return &st, ""
}

// Runtime control end to end: an agent started without the workload's
// name gets it added while the workload runs (its series appear and
// grow), removed (the series stays, never goes back; a new task of that
// name is not tracked), then added and dropped again by reloading the
// configuration through SIGHUP and through rtscope ctl reload; a broken
// configuration changes nothing and is reported with its line.
func TestServeControl(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "ctl", "serve.sock") // the directory is created 0700
	cfg := filepath.Join(dir, "serve.yaml")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("targets:\n  - comm: nothing-here\n")
	agent, metricsURL := startServeSocket(t, sock, "--config", cfg, "--tick", "200ms", "--archive", filepath.Join(dir, "arch"))
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("control socket %s: %v, mode %v, want 0600", sock, err, fi.Mode())
	}

	work := func(d string) *exec.Cmd {
		c := exec.Command(rtscope, "scenario", "run", "healthy-loop", "--work", "500us", "--duration", d, "-q")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	series := `rtscope_cycle_seconds_count{target="control"}`
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); !ok(); {
			if time.Now().After(end) {
				t.Fatalf("after 5 s: %s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	w := work("3s")
	time.Sleep(300 * time.Millisecond)
	if _, ok := scrape(t, metricsURL, series); ok {
		t.Fatal("control tracked before it was added")
	}
	st, e := ctl(t, sock, "add", "--comm", "control")
	if st == nil || !slices.Contains(st.comms(), "control") {
		t.Fatalf("ctl add --comm control: %v %s", st, e)
	}
	var first float64
	waitFor("the added target's cycles appear on /metrics", func() bool {
		first, _ = scrape(t, metricsURL, series)
		return first > 50
	})
	if st, _ = ctl(t, sock, "list"); !st.tracking("control") {
		t.Errorf("ctl list does not show the control task tracked: %+v", st)
	}
	if _, e = ctl(t, sock, "add", "--comm", "control"); !strings.Contains(e, "already watched") {
		t.Errorf("adding control twice: %q", e)
	}

	st, e = ctl(t, sock, "remove", "--comm", "control")
	if st == nil || slices.Contains(st.comms(), "control") {
		t.Fatalf("ctl remove --comm control: %v %s", st, e)
	}
	w.Wait() // the tracked task ran on to its end, still counted
	var after float64
	waitFor("the removed target's count stays and grows to the task's end", func() bool {
		after, _ = scrape(t, metricsURL, series)
		exited, _ := scrape(t, metricsURL, `rtscope_tasks_exited_total{target="control"}`)
		return exited == 1
	})
	if after < first {
		t.Errorf("cycle count went back from %v to %v after the target was removed", first, after)
	}
	w = work("1s")
	time.Sleep(500 * time.Millisecond)
	if st, _ = ctl(t, sock, "list"); st.tracking("control") {
		t.Errorf("a new control task is tracked after its target was removed: %+v", st)
	}
	w.Wait()

	// SIGHUP: the file gains control.
	write("targets:\n  - comm: nothing-here\n  - comm: control\nslo:\n  - 4242:cycle=1ms\n")
	if err := agent.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("SIGHUP reloads the configuration", func() bool {
		st, _ = ctl(t, sock, "list")
		return slices.Contains(st.comms(), "control") && slices.Contains(st.SLO, "4242:cycle=1ms")
	})
	w = work("1s")
	waitFor("a control task is tracked after the reload", func() bool {
		st, _ = ctl(t, sock, "list")
		return st.tracking("control")
	})
	w.Wait()

	// A broken file: ctl reload fails naming the line, nothing changes.
	write("targets:\n  - comm: nothing-here\n  - pid: -3\n")
	if _, e = ctl(t, sock, "reload"); !strings.Contains(e, "line 3") {
		t.Errorf("reloading a broken configuration: %q, want its line named", e)
	}
	if st, _ = ctl(t, sock, "list"); !slices.Contains(st.comms(), "control") {
		t.Errorf("a failed reload changed the targets: %+v", st)
	}
	// ctl reload: control is dropped again; the counter never went back.
	write("targets:\n  - comm: nothing-here\n")
	if st, e = ctl(t, sock, "reload"); st == nil || slices.Contains(st.comms(), "control") || len(st.SLO) != 0 {
		t.Fatalf("ctl reload: %+v %s", st, e)
	}
	final, _ := scrape(t, metricsURL, series)
	if final < after {
		t.Errorf("cycle count went back from %v to %v over the reloads", after, final)
	}
	// The archive holds control's worst windows, with verdicts.
	out, err := exec.Command(rtscope, "ctl", "--socket", sock, "windows").Output()
	if err != nil {
		t.Fatalf("ctl windows: %v", err)
	}
	var arch struct {
		Windows []struct{ Name, Kind, Target, Verdict string } `json:"windows"`
	}
	if err := json.Unmarshal(out, &arch); err != nil {
		t.Fatalf("ctl windows: %v\n%s", err, out)
	}
	worst := 0
	for _, w := range arch.Windows {
		if w.Kind == "worst" && w.Target == "control" && w.Verdict != "" {
			worst++
		}
	}
	if worst == 0 {
		t.Errorf("no worst window of control with a verdict archived: %s", out)
	}
	t.Logf("control cycles: %v when seen, %v at the removed task's end, %v at the end", first, after, final)
	agent.Process.Signal(syscall.SIGTERM)
	agent.Wait()
	if _, err := os.Stat(sock); err == nil {
		t.Error("the control socket is left behind after SIGTERM")
	}
}
