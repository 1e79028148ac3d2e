package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/trace"
)

// busyPoller: a task that never slept, 2 wakeups (its start), 1000
// interruptions of 5 us on average over 2 s, the largest 800 us.
func busyPoller() *Task {
	avg, max := 5000.0, uint64(800_000)
	m := &Metric{Summary: metric.Summary{Count: 1000, AvgNs: &avg, MaxNs: &max}}
	return &Task{TID: 7, Comm: "poller", Sched: "FIFO 50", Counters: Counters{Wakeups: 2},
		Metrics:    map[string]*Metric{"noise": m},
		SchedTimes: []SchedTime{{Sched: "FIFO 50", Ns: 2e9, Last: true}}}
}

// A busy poller is judged by its interruptions, not called UNKNOWN for
// lack of wakeups: its headline is its largest interruption and its noise
// per second (5 ms of noise in 2 s: 2500 us/s).
func TestBusyPollHeadline(t *testing.T) {
	task := busyPoller()
	Judge(task)
	if task.Health != HealthOK || !strings.Contains(task.HealthReason, "1000 interruptions") {
		t.Errorf("health %s (%s); want ok by its 1000 interruptions", task.Health, task.HealthReason)
	}
	// It woke twice: it sleeps, rarely ("it never sleeps" was said of
	// stress-ng's parent, woken 3 times).
	if !strings.Contains(task.HealthReason, "woken only 2 times") {
		t.Errorf("reason %q; want it woken only 2 times", task.HealthReason)
	}
	if want := "worst interruption 800.0 us in 1000, noise 2500.0 us/s"; task.Headline != want {
		t.Errorf("headline %q, want %q", task.Headline, want)
	}
	if task.NoiseNsPerS == nil || *task.NoiseNsPerS != 2.5e6 {
		t.Errorf("noise per second %v, want 2.5e6 ns", task.NoiseNsPerS)
	}
}

// A task that sleeps and wakes more often than it is interrupted keeps
// its latency headline.
func TestSleeperKeepsLatencyHeadline(t *testing.T) {
	task := busyPoller()
	task.Counters.Wakeups = 5000
	lmax := uint64(30_000)
	task.Metrics["latency"] = &Metric{Summary: metric.Summary{Count: 5000, MaxNs: &lmax}}
	Judge(task)
	if !strings.HasPrefix(task.Headline, "worst latency 30.0 us") {
		t.Errorf("headline %q; want its latency", task.Headline)
	}
}

// A task's noise totals by cause come from its statistics (index cause -
// 1), the causes without a part left out; the text report gives them on
// one line, the longest first (ms from 1 ms on, us below), and JSON as
// noise_by_cause, which a report read back keeps.
func TestNoiseByCause(t *testing.T) {
	s := &engine.TaskStats{Tid: 7, Pid: 7, Policy: 1, Prio: 49}
	s.NoiseParts[engine.NoiseIRQ-1], s.NoiseNs[engine.NoiseIRQ-1] = 340, 1_234_000
	s.NoiseParts[engine.NoiseSoftirq-1], s.NoiseNs[engine.NoiseSoftirq-1] = 12, 85_300
	s.NoiseParts[engine.NoiseThrottle-1], s.NoiseNs[engine.NoiseThrottle-1] = 2, 100_000_000
	task := FromStats(s)
	want := map[trace.NoiseCause]NoiseCauseTotal{
		trace.NoiseIRQ: {340, 1_234_000}, trace.NoiseSoftirq: {12, 85_300}, trace.NoiseThrottle: {2, 100_000_000},
	}
	if len(task.NoiseByCause) != len(want) {
		t.Fatalf("noise by cause %v, want %v", task.NoiseByCause, want)
	}
	for c, w := range want {
		if task.NoiseByCause[c] != w {
			t.Errorf("%s: %+v, want %+v", c, task.NoiseByCause[c], w)
		}
	}
	var out bytes.Buffer
	Final(&out, task, false)
	line := "   noise by cause: throttling 100000.0 us (2), IRQ 1234.0 us (340), softirq 85.3 us (12)\n"
	if !strings.Contains(out.String(), line) {
		t.Errorf("text report without %q:\n%s", line, out.String())
	}
	b, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"noise_by_cause":{"irq":{"count":340,"ns":1234000},"softirq":{"count":12,"ns":85300},"throttling":{"count":2,"ns":100000000}}`) {
		t.Errorf("JSON without its noise by cause: %s", b)
	}
	var back Task
	if err := json.Unmarshal(b, &back); err != nil || back.NoiseByCause[trace.NoiseThrottle] != want[trace.NoiseThrottle] {
		t.Errorf("read back: %v %v", back.NoiseByCause, err)
	}
	// Without noise, no line and no field.
	quiet := FromStats(&engine.TaskStats{Tid: 8})
	out.Reset()
	Final(&out, quiet, false)
	if b, _ := json.Marshal(quiet); strings.Contains(out.String(), "noise by cause") || strings.Contains(string(b), "noise_by_cause") {
		t.Errorf("a task without noise has noise by cause: %s", b)
	}
}

// The IPI and NMI causes are named "ipi" and "nmi" in JSON, "IPI" and
// "NMI" in the text report's line.
func TestNoiseByCauseIPIAndNMI(t *testing.T) {
	s := &engine.TaskStats{Tid: 7, Pid: 7, Policy: 1, Prio: 49}
	s.NoiseParts[engine.NoiseIPI-1], s.NoiseNs[engine.NoiseIPI-1] = 7, 4_600
	s.NoiseParts[engine.NoiseNMI-1], s.NoiseNs[engine.NoiseNMI-1] = 1, 2_000
	task := FromStats(s)
	var out bytes.Buffer
	Final(&out, task, false)
	if line := "   noise by cause: IPI 4.6 us (7), NMI 2.0 us (1)\n"; !strings.Contains(out.String(), line) {
		t.Errorf("text report without %q:\n%s", line, out.String())
	}
	b, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"noise_by_cause":{"ipi":{"count":7,"ns":4600},"nmi":{"count":1,"ns":2000}}`) {
		t.Errorf("JSON without its IPI and NMI noise: %s", b)
	}
	ev := trace.Event{Type: trace.EventNoise, TID: 7, Comm: "poller", TopCause: trace.NoiseIPI,
		NoiseCauses: []trace.NoiseCause{trace.NoiseIPI, trace.NoiseNMI}, IPI: &trace.IPI{Kind: trace.IPITLB}}
	since, end := int64(0), int64(3_000)
	ev.SinceT, ev.EndT = &since, &end
	if got := describeNoise(ev); !strings.Contains(got, "(ipi, nmi; largest: ipi "+string(trace.IPITLB)+")") {
		t.Errorf("noise event described %q; want its causes and the IPI's kind", got)
	}
}
