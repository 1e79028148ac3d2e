package tests

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
		PID  int    `json:"pid"`
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
// grow), removed (its running task is untracked at once: the series
// stays, never goes back, grows no more; a new task of that name is not
// tracked), then added and dropped again by reloading the
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

	w := work("5s") // still running when its target is removed (killed then)
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
	// The task it tracked still runs, and is tracked no more: it left as
	// if it exited, its counts kept in the series, which stops growing.
	if st.tracking("control") {
		t.Errorf("the removed target's running task is still tracked: %+v", st)
	}
	var after float64
	waitFor("the removed target's task leaves tracking, its count kept", func() bool {
		// The exit first: its final counts are in the series from then on.
		exited, _ := scrape(t, metricsURL, `rtscope_tasks_exited_total{target="control"}`)
		after, _ = scrape(t, metricsURL, series)
		return exited == 1
	})
	if after < first {
		t.Errorf("cycle count went back from %v to %v after the target was removed", first, after)
	}
	time.Sleep(500 * time.Millisecond) // 2.5 ticks of a loop that still runs (5 s)
	if later, _ := scrape(t, metricsURL, series); later != after {
		t.Errorf("cycle count went from %v to %v after its target was removed", after, later)
	}
	w.Process.Kill()
	w.Wait()
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
	t.Logf("control cycles: %v when seen, %v when its target was removed, %v at the end", first, after, final)
	agent.Process.Signal(syscall.SIGTERM)
	agent.Wait()
	if _, err := os.Stat(sock); err == nil {
		t.Error("the control socket is left behind after SIGTERM")
	}
}

// SLO changes at run time reach the task tracked already (the same task
// all along: none exits): a default bound tightened by a reload makes its
// cycles violations; a bound of its pid added with rtscope ctl loosens it
// again and they stop; the violations counted so far stay.
func TestServeSLOChange(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "serve.sock")
	cfg := filepath.Join(dir, "serve.yaml")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("targets:\n  - comm: control\nslo:\n  - cycle=1s\n")
	_, metricsURL := startServeSocket(t, sock, "--config", cfg, "--tick", "100ms")
	// 500 us of work every 2 ms: each cycle is over 100 us, none near 1 s.
	w := exec.Command(rtscope, "scenario", "run", "healthy-loop", "--duration", "8s", "-q")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Process.Kill(); w.Wait() })
	cycles := `rtscope_cycle_seconds_count{target="control"}`
	viol := `rtscope_slo_violations_total{metric="cycle",target="control"}`
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); !ok(); {
			if time.Now().After(end) {
				t.Fatalf("after 5 s: %s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("the control task's cycles on /metrics", func() bool {
		n, _ := scrape(t, metricsURL, cycles)
		return n > 50
	})
	if v, _ := scrape(t, metricsURL, viol); v != 0 {
		t.Fatalf("%v cycle violations of a 1 s bound", v)
	}

	write("targets:\n  - comm: control\nslo:\n  - cycle=100us\n")
	if st, e := ctl(t, sock, "reload"); st == nil || !slices.Equal(st.SLO, []string{"cycle=100us"}) {
		t.Fatalf("ctl reload with a new default SLO: %+v %s", st, e)
	}
	var tight float64
	waitFor("the tracked task's cycles become violations of the new default", func() bool {
		tight, _ = scrape(t, metricsURL, viol)
		return tight > 50
	})

	pidSLO := strconv.Itoa(w.Process.Pid) + ":cycle=1s"
	if st, e := ctl(t, sock, "add-slo", pidSLO); st == nil || !slices.Contains(st.SLO, pidSLO) {
		t.Fatalf("ctl add-slo %s: %+v %s", pidSLO, st, e)
	}
	time.Sleep(300 * time.Millisecond) // three ticks: /metrics has read the statistics since
	v1, _ := scrape(t, metricsURL, viol)
	n1, _ := scrape(t, metricsURL, cycles)
	time.Sleep(time.Second)
	v2, _ := scrape(t, metricsURL, viol)
	n2, _ := scrape(t, metricsURL, cycles)
	if v1 < tight || v2 != v1 || n2-n1 < 100 {
		t.Errorf("after the pid's 1 s bound: violations %v then %v over %v more cycles (want unchanged, at least %v, over 100 or more cycles)",
			v1, v2, n2-n1, tight)
	}
	if exited, _ := scrape(t, metricsURL, `rtscope_tasks_exited_total{target="control"}`); exited != 0 {
		t.Errorf("%v control tasks exited: the SLO changes were to reach the task tracked all along", exited)
	}
	t.Logf("cycle violations: %v under the 100 us default, %v after the pid's 1 s bound (%v more cycles)", tight, v2, n2-n1)
}
