// Package tests runs rtscope end to end, as root, on this machine's real
// kernel: the built binary against real workloads (its own scenarios,
// cyclictest, shell and Python processes).
package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var rtscope string

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "tests: these tests load BPF programs and need root (CI runs them as root)")
		os.Exit(1)
	}
	// Under sudo, launched commands would run as the sudo user (watch
	// --user's default); these tests launch root commands (cyclictest -p).
	os.Unsetenv("SUDO_UID")
	os.Unsetenv("SUDO_GID")
	dir, err := os.MkdirTemp("", "rtscope-tests")
	if err != nil {
		panic(err)
	}
	rtscope = filepath.Join(dir, "rtscope")
	build := exec.Command("go", "build", "-o", rtscope, "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building rtscope: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Watch JSON, the parts the tests read.
type report struct {
	Schema   string            `json:"schema"`
	Lost     map[string]uint64 `json:"lost"`
	Features map[string]any    `json:"features"`
	Tasks    []task            `json:"tasks"`
	Command  *struct {
		StoppedByRtscope bool `json:"stopped_by_rtscope"`
	} `json:"command"`
	Actions *struct {
		ThresholdFired   uint64 `json:"threshold_fired"`
		ThresholdSkipped uint64 `json:"threshold_skipped"`
	} `json:"actions"`
	DurationNs uint64 `json:"duration_ns"`
}

type task struct {
	TID      uint32             `json:"tid"`
	PID      uint32             `json:"pid"`
	Comm     string             `json:"comm"`
	Policy   string             `json:"policy"`
	Priority *int               `json:"priority"`
	Exited   bool               `json:"exited"`
	Counters map[string]uint64  `json:"counters"`
	Metrics  map[string]*metric `json:"metrics"`
	Health   string             `json:"health"`
	// HealthReason says why in one phrase.
	HealthReason string `json:"health_reason"`
	Headline     string `json:"headline"`
}

type metric struct {
	Count      uint64   `json:"count"`
	MinNs      *uint64  `json:"min_ns"`
	AvgNs      *float64 `json:"avg_ns"`
	MaxNs      *uint64  `json:"max_ns"`
	P50Ns      *uint64  `json:"p50_ns"`
	P90Ns      *uint64  `json:"p90_ns"`
	P99Ns      *uint64  `json:"p99_ns"`
	SLONs      *uint64  `json:"slo_ns"`
	Violations *uint64  `json:"violations"`
	Worst      *worst   `json:"worst"`
	WorstNote  string   `json:"worst_note"` // why Worst is null
	Verdict    string   `json:"verdict"`
	Cause      string   `json:"cause"`
	// ViolationCauses: every SLO violation explained (docs/json.md).
	ViolationCauses *struct {
		Total       uint64            `json:"total"`
		Analysed    uint64            `json:"analysed"`
		NotAnalysed map[string]uint64 `json:"not_analysed"`
		Causes      []struct {
			Cause   string `json:"cause"`
			Culprit string `json:"culprit"`
			Count   uint64 `json:"count"`
			StealNs uint64 `json:"steal_ns"`
		} `json:"causes"`
	} `json:"violation_causes"`
}

type worst struct {
	ValueNs   uint64  `json:"value_ns"`
	Truncated bool    `json:"truncated"`
	CPUs      []int   `json:"cpus"`
	Events    []event `json:"events"`
}

type event struct {
	T         int64  `json:"t_ns"`
	CPU       int    `json:"cpu"`
	Type      string `json:"type"`
	PrevTID   uint32 `json:"prev_tid"`
	PrevComm  string `json:"prev_comm"`
	NextTID   uint32 `json:"next_tid"`
	NextComm  string `json:"next_comm"`
	NextSched string `json:"next_sched"`
	TID       uint32 `json:"tid"`
	Reason    string `json:"reason"`
}

// watch runs `rtscope watch --json F -q ARGS...` and returns the report and the text output.
func watch(t *testing.T, args ...string) (*report, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	full := append([]string{"watch", "-q", "--json", out}, args...)
	cmd := exec.Command(rtscope, full...)
	text, err := cmd.CombinedOutput()
	return readReport(t, full, out, err, string(text)), string(text)
}

// readReport reads watch's JSON report and checks its exit status against
// it: 2 exactly when an SLO was violated, 0 otherwise (the commands these
// tests launch succeed, or rtscope stops them).
func readReport(t *testing.T, argv []string, path string, err error, text string) *report {
	t.Helper()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("rtscope %s: %v\n%s", strings.Join(argv, " "), err, text)
	}
	if status != 0 && status != 2 {
		t.Fatalf("rtscope %s: exit status %d\n%s", strings.Join(argv, " "), status, text)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("bad JSON: %v", err)
	}
	var violations uint64
	for _, tk := range r.Tasks {
		for _, m := range tk.Metrics {
			if m.Violations != nil {
				violations += *m.Violations
			}
		}
	}
	if want := map[bool]int{true: 2, false: 0}[violations > 0]; status != want {
		t.Errorf("rtscope %s: exit status %d with %d SLO violations, want %d", strings.Join(argv, " "), status, violations, want)
	}
	return &r
}

// watchUntilReady runs watch like watch(), calling ready with the watch
// process once rtscope says it is tracking.
func watchUntilReady(t *testing.T, ready func(watch *exec.Cmd), args ...string) (*report, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	full := append([]string{"watch", "-q", "--json", out}, args...)
	cmd := exec.Command(rtscope, full...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	cmd.Stdout = &text
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		text.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "attached and tracking") {
			ready(cmd)
			break
		}
	}
	go io.Copy(io.Discard, stderr)
	err = cmd.Wait()
	return readReport(t, full, out, err, text.String()), text.String()
}

func (r *report) task(t *testing.T, comm string) *task {
	t.Helper()
	for i := range r.Tasks {
		if r.Tasks[i].Comm == comm {
			return &r.Tasks[i]
		}
	}
	var names []string
	for _, x := range r.Tasks {
		names = append(names, x.Comm)
	}
	t.Fatalf("no task %q in report (tasks: %v)", comm, names)
	return nil
}

func (tk *task) metric(t *testing.T, name string) *metric {
	t.Helper()
	m := tk.Metrics[name]
	if m == nil {
		t.Fatalf("task %s has no metric %s", tk.Comm, name)
	}
	return m
}

func us(p *uint64) float64 {
	if p == nil {
		return -1
	}
	return float64(*p) / 1e3
}

// lastCPU is where scenarios run by default; tests pin helpers elsewhere.
func lastCPU() string {
	b, _ := os.ReadFile("/sys/devices/system/cpu/online")
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexAny(s, "-,"); i >= 0 {
		return s[i+1:]
	}
	return s
}
