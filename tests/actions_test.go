package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// threshold is the document of an on-threshold event (rtscope.threshold/v1).
type threshold struct {
	Schema      string `json:"schema"`
	Tool        string `json:"tool"`
	TID         uint32 `json:"tid"`
	Comm        string `json:"comm"`
	Metric      string `json:"metric"`
	ValueNs     uint64 `json:"value_ns"`
	ThresholdNs uint64 `json:"threshold_ns"`
	Noticed     uint64 `json:"noticed_after_ns"`
	Verdict     string `json:"verdict"`
	Cause       string `json:"cause"`
	Window      *worst `json:"window"`
}

func readThreshold(t *testing.T, path string) *threshold {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var th threshold
	if err := json.Unmarshal(b, &th); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &th
}

// envFile reads the KEY=VALUE lines a shell action dumped.
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the shell action did not run: %v", err)
	}
	env := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	return env
}

// TestOnThresholdStops: the first SLO violation fires the actions in
// order (the trace saved, the shell run with the event in its environment
// and the document at $RTSCOPE_JSON), then watching stops long before its
// duration; --on-end sees the exit status.
func TestOnThresholdStops(t *testing.T) {
	d := t.TempDir()
	r, text := watch(t, "-d", "60s", "--slo", "latency=1ns",
		"--on-threshold", "trace,file="+d+"/v.json",
		"--on-threshold", `shell,command=env | grep ^RTSCOPE_ > `+d+`/env; cp "$RTSCOPE_JSON" `+d+`/copy.json`,
		"--on-end", `shell,command=echo "$RTSCOPE_STATUS $RTSCOPE_VIOLATIONS $RTSCOPE_HEALTH" > `+d+`/end; test -s "$RTSCOPE_JSON"`,
		"--", "sh", "-c", "while :; do sleep 0.01; done")
	if r.Command == nil || !r.Command.StoppedByRtscope || r.DurationNs >= uint64(60*time.Second) {
		t.Fatalf("watch did not stop at the violation (command %+v, %v)\n%s", r.Command, time.Duration(r.DurationNs), text)
	}
	if r.Actions == nil || r.Actions.ThresholdFired != 1 {
		t.Errorf("actions %+v; want fired once (no continue)", r.Actions)
	}
	th := readThreshold(t, d+"/v.json")
	if th.Schema != "rtscope.threshold/v1" || th.Tool != "watch" || th.Metric != "latency" || th.ThresholdNs != 1 ||
		th.ValueNs <= 1 || th.Verdict == "" || th.Window == nil || len(th.Window.Events) == 0 {
		t.Errorf("threshold document: %+v", th)
	}
	if cp := readThreshold(t, d+"/copy.json"); cp.TID != th.TID || cp.ValueNs != th.ValueNs {
		t.Errorf("$RTSCOPE_JSON held %+v, the trace %+v", cp, th)
	}
	env := envFile(t, d+"/env")
	if env["RTSCOPE_EVENT"] != "threshold" || env["RTSCOPE_METRIC"] != "latency" || env["RTSCOPE_TID"] != fmt.Sprint(th.TID) ||
		env["RTSCOPE_VERDICT"] != th.Verdict || env["RTSCOPE_VALUE_NS"] != fmt.Sprint(th.ValueNs) {
		t.Errorf("shell environment %v; document %+v", env, th)
	}
	if _, err := os.Stat(env["RTSCOPE_JSON"]); !os.IsNotExist(err) {
		t.Errorf("temporary document %s left behind", env["RTSCOPE_JSON"])
	}
	end, _ := os.ReadFile(d + "/end")
	f := strings.Fields(string(end))
	if n, _ := strconv.Atoi(safe(f, 1)); safe(f, 0) != "2" || n < 1 || safe(f, 2) != "fail" {
		t.Errorf("--on-end saw %q; want status 2, the violations and health fail", end)
	}
	if tk := r.Tasks[0]; tk.Health != "fail" || !strings.HasPrefix(tk.HealthReason, "latency ") {
		t.Errorf("judgement %s %q", tk.Health, tk.HealthReason)
	}
	if !strings.Contains(text, "the worst first") || !strings.Contains(text, "FAIL") {
		t.Errorf("text report has no headline:\n%s", text)
	}
	t.Logf("first violation noticed %v after it ended", time.Duration(th.Noticed))
}

// TestOnThresholdWithoutFlightRecorder: with --no-trace there are no
// windows to explain, but the kernel still notices the violations for the
// actions (violation_notices): the first fires them and watching stops,
// the document saying why it holds no verdict. They used to never fire.
func TestOnThresholdWithoutFlightRecorder(t *testing.T) {
	d := t.TempDir()
	r, text := watch(t, "-d", "60s", "--no-trace", "--slo", "latency=1ns",
		"--on-threshold", "trace,file="+d+"/v.json",
		"--", "sh", "-c", "while :; do sleep 0.01; done")
	if r.Command == nil || !r.Command.StoppedByRtscope || r.DurationNs >= uint64(60*time.Second) {
		t.Fatalf("watch --no-trace did not stop at the violation (command %+v, %v)\n%s", r.Command, time.Duration(r.DurationNs), text)
	}
	if r.Features["trace"] != false || r.Actions == nil || r.Actions.ThresholdFired != 1 {
		t.Errorf("trace %v, actions %+v; want no flight recorder and fired once", r.Features["trace"], r.Actions)
	}
	th := readThreshold(t, d+"/v.json")
	if th.Metric != "latency" || th.ThresholdNs != 1 || th.ValueNs <= 1 || th.Window != nil ||
		!strings.Contains(th.Verdict, "not explained") || !strings.Contains(th.Verdict, "--no-trace") {
		t.Errorf("threshold document: %+v", th)
	}
	t.Logf("first violation noticed %v after it ended: %s", time.Duration(th.Noticed), th.Verdict)
}

func safe(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}

// TestOnThresholdContinue: with continue, watching runs to its duration and
// the actions run again on later violations: a signal reaches its process
// each time, one run at a time.
func TestOnThresholdContinue(t *testing.T) {
	d := t.TempDir()
	count := filepath.Join(d, "usr1")
	// A process outside the watch counts the SIGUSR1 it receives.
	counter := exec.Command("bash", "-c", `n=0; trap 'n=$((n+1)); echo $n > `+count+`' USR1; while :; do sleep 0.02; done`)
	if err := counter.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { counter.Process.Signal(syscall.SIGKILL); counter.Wait() }()
	time.Sleep(200 * time.Millisecond) // the trap is set
	r, text := watch(t, "-d", "3s", "--slo", "latency=1ns",
		"--on-threshold", fmt.Sprintf("signal,num=USR1,pid=%d", counter.Process.Pid),
		"--on-threshold", "shell,command=sleep 0.2",
		"--on-threshold", "continue",
		"--", "sh", "-c", "while :; do sleep 0.01; done")
	a := r.Actions
	if a == nil || a.ThresholdFired < 3 {
		t.Fatalf("actions %+v; want several runs over 3 s\n%s", a, text)
	}
	// Each run sleeps 200 ms: the violations meanwhile (one every 10 ms)
	// are skipped, not queued.
	if a.ThresholdSkipped < a.ThresholdFired {
		t.Errorf("actions %+v: violations during a run should be skipped", a)
	}
	var viol uint64
	for _, tk := range r.Tasks {
		for _, m := range tk.Metrics {
			if m.Violations != nil {
				viol += *m.Violations
			}
		}
	}
	if a.ThresholdFired+a.ThresholdSkipped > viol {
		t.Errorf("actions %+v for %d violations", a, viol)
	}
	time.Sleep(100 * time.Millisecond)
	b, _ := os.ReadFile(count)
	if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n < 2 || uint64(n) > a.ThresholdFired {
		t.Errorf("the counter got %d SIGUSR1 for %d runs (signals may merge, never multiply)", n, a.ThresholdFired)
	}
}

// TestTimerlatActions: a timerlat stop threshold fires the actions and the
// exit status is 2, as rtla's; with continue, each later crossing fires
// them again.
func TestTimerlatActions(t *testing.T) {
	d := t.TempDir()
	cpu := lastCPU()
	cmd := exec.Command(rtscope, "timerlat", "-q", "-c", cpu, "-T", "1", "-d", "30s",
		"--on-threshold", "trace,file="+d+"/tl.txt",
		"--on-threshold", `shell,command=env | grep ^RTSCOPE_ > `+d+`/env`,
		"--on-end", `shell,command=echo $RTSCOPE_STATUS > `+d+`/end`)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("timerlat -T 1: %v; want exit status 2\n%s", err, out)
	}
	env := envFile(t, d+"/env")
	if env["RTSCOPE_TOOL"] != "timerlat" || env["RTSCOPE_METRIC"] != "timer-thread" || env["RTSCOPE_CPU"] != cpu ||
		env["RTSCOPE_THRESHOLD_NS"] != "1000" || env["RTSCOPE_VERDICT"] == "" {
		t.Errorf("shell environment %v", env)
	}
	if b, err := os.ReadFile(d + "/tl.txt"); err != nil || !strings.HasPrefix(string(b), "# rtscope timerlat: thread latency") {
		t.Errorf("trace action: %v\n%s", err, b)
	}
	if b, _ := os.ReadFile(d + "/end"); strings.TrimSpace(string(b)) != "2" {
		t.Errorf("--on-end saw status %q", b)
	}

	js := filepath.Join(d, "tl.json")
	cmd = exec.Command(rtscope, "timerlat", "-q", "-c", cpu, "-T", "1", "-d", "2s", "--json", js,
		"--on-threshold", `shell,command=echo x >> `+d+`/runs`, "--on-threshold", "continue")
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("timerlat -T 1 continue: %v; want exit status 2\n%s", err, out)
	}
	var doc struct {
		Schema    string `json:"schema"`
		ElapsedNs int64  `json:"elapsed_ns"`
		Stop      *struct {
			ThresholdNs    uint64 `json:"threshold_ns"`
			Crossings      uint64 `json:"crossings"`
			ActionsFired   uint64 `json:"actions_fired"`
			ActionsSkipped uint64 `json:"actions_skipped"`
			Verdict        string `json:"verdict"`
		} `json:"stop"`
	}
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &doc); err != nil || doc.Stop == nil {
		t.Fatalf("JSON %v: %s", err, b)
	}
	if doc.Schema != "rtscope.timerlat/v1" || doc.Stop.ThresholdNs != 1000 {
		t.Errorf("timerlat JSON: schema %q, stop threshold_ns %d; want rtscope.timerlat/v1 and -T 1 (1000 ns)", doc.Schema, doc.Stop.ThresholdNs)
	}
	runs, _ := os.ReadFile(d + "/runs")
	n := uint64(strings.Count(string(runs), "x"))
	s := doc.Stop
	if time.Duration(doc.ElapsedNs) < 1500*time.Millisecond || s.Crossings < 3 || n != s.ActionsFired || n < 2 ||
		s.ActionsFired+s.ActionsSkipped != s.Crossings {
		t.Errorf("continue: ran %v, %+v, the shell ran %d times\n%s", time.Duration(doc.ElapsedNs), s, n, out)
	}
}
