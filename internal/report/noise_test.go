package report

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/metric"
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
