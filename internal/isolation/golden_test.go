package isolation

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the goldens")

func loadFixture(t *testing.T) *Snapshot {
	t.Helper()
	b, err := os.ReadFile("testdata/run.json")
	if err != nil {
		t.Fatal(err)
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -run TestReportGolden -update, then read the diff):\n%s", path, got)
	}
}

// A recorded run (TestLiveIPIAttribution -record: an mprotect loop on
// CPU 0 and a reader of the page on CPU 1) renders as its goldens.
func TestReportGolden(t *testing.T) {
	res := Analyze(loadFixture(t))
	var text, js bytes.Buffer
	Print(&text, res)
	golden(t, "run.golden", text.Bytes())
	if err := WriteJSON(&js, res); err != nil {
		t.Fatal(err)
	}
	golden(t, "run.json.golden", js.Bytes())
}

// The aggregation of the recorded run: the judgement names the worst
// intrusion, the total leaves work out (it runs inside its kworker), and
// every intrusion has a remedy with the CPU's numbers filled in.
func TestAnalyzeFixture(t *testing.T) {
	s := loadFixture(t)
	res := Analyze(s)
	c := res.CPUs[0]
	var sum uint64
	causes := map[string]bool{}
	for _, in := range c.Intrusions {
		causes[in.Cause] = true
		if in.Cause != CauseWork {
			sum += in.Ns
		}
		if in.Remedy == "" || strings.Contains(in.Remedy, "{") {
			t.Errorf("%s %s: remedy %q", in.Cause, in.What, in.Remedy)
		}
	}
	if sum != c.TotalNs || c.Kinds != len(causes) {
		t.Errorf("total %d kinds %d, want %d and %d", c.TotalNs, c.Kinds, sum, len(causes))
	}
	for _, in := range c.Intrusions {
		if in.Cause != CauseWork && in.MaxNs > c.Worst.MaxNs {
			t.Errorf("worst %s %d ns, but %s %s had %d", c.Worst.What, c.Worst.MaxNs, in.Cause, in.What, in.MaxNs)
		}
	}
	if !strings.HasPrefix(c.Judgement(res.DurationNs), "CPU 1: ") {
		t.Errorf("judgement: %s", c.Judgement(res.DurationNs))
	}
}

// The workload is the --allow COMMs; without, the user task that ran longest.
func TestWorkload(t *testing.T) {
	s := &Snapshot{CPUs: []int{1}, Online: []int{0, 1}, Tasks: []TaskRow{
		{CPU: 1, TID: 10, PID: 10, Comm: "loop", Time: Time{Count: 1, Ns: 900}},
		{CPU: 1, TID: 11, PID: 11, Comm: "kworker/1:1", Kthread: true, PerCPU: true, Time: Time{Count: 2, Ns: 5000}},
		{CPU: 1, TID: 12, PID: 12, Comm: "cron", Time: Time{Count: 1, Ns: 100}},
	}}
	c := Analyze(s).CPUs[0]
	if !c.Guessed || len(c.Workload) != 1 || c.Workload[0] != "loop/10" || len(c.Intrusions) != 2 {
		t.Errorf("guessed %v workload %v, %d intrusions; want loop/10 guessed, 2 intrusions", c.Guessed, c.Workload, len(c.Intrusions))
	}
	if got := c.Intrusions[0].Remedy; !strings.Contains(got, "cannot move") {
		t.Errorf("per-CPU kworker's remedy: %s", got)
	}
	s.Allow = []string{"cron"}
	c = Analyze(s).CPUs[0]
	if c.Guessed || c.Workload[0] != "cron/12" || c.Intrusions[1].Remedy != "taskset -a -p -c 0 10, or a cpuset without CPU 1" {
		t.Errorf("with --allow cron: %v %v, %q", c.Guessed, c.Workload, c.Intrusions[1].Remedy)
	}
}

// An IRQ's remedy writes its affinity when it includes the CPU, and names
// a managed IRQ when only its effective affinity does.
func TestIRQRemedy(t *testing.T) {
	fx := fixes{cpu: 3, housekeeping: "0-2"}
	if got := fx.irq(IRQRow{IRQ: 24, Affinity: "0-3", Effective: "3"}); !strings.Contains(got, "echo 0-2 > /proc/irq/24/smp_affinity_list") {
		t.Errorf("affine: %s", got)
	}
	if got := fx.irq(IRQRow{IRQ: 24, Affinity: "0-2", Effective: "3"}); !strings.Contains(got, "isolcpus=managed_irq,3") {
		t.Errorf("managed: %s", got)
	}
}

// A function call's remedy is its function's when the table has one, else its kind's.
func TestCallRemedy(t *testing.T) {
	fx := fixes{cpu: 1, housekeeping: "0"}
	mb := fx.ipi(IPIRow{Kind: "function call", Func: "ipi_mb", SenderTID: 7, Comm: "intruder"})
	other := fx.ipi(IPIRow{Kind: "function call", Func: "some_func", Callsite: "caller", SenderTID: 7, Comm: "x"})
	if !strings.Contains(mb, "intruder/7 calls membarrier") || !strings.Contains(other, "x/7 runs some_func on CPU 1 (smp_call_function from caller)") {
		t.Errorf("ipi_mb: %s\nother: %s", mb, other)
	}
}

// The tick's line: stops, keeps, and each dependency that kept it, with what it means.
func TestTickLines(t *testing.T) {
	r := &Result{DurationNs: 1e9, CPUs: []CPUResult{{CPU: 3, NohzFull: true,
		Tick: &TickRow{CPU: 3, Stopped: 1, Kept: 4, Deps: map[string]uint64{"SCHED": 3, "POSIX_TIMER": 1}}}}}
	var b bytes.Buffer
	Print(&b, r)
	for _, want := range []string{"CPU 3: no intrusion in 1.0 s", "CPU 3 (nohz_full)", "tick: stopped once, kept running 4 times",
		"kept once by POSIX_TIMER: a POSIX CPU-time timer", "kept 3 times by SCHED: more than one task was runnable"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
