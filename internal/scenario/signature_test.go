package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/target"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/watch"
)

// The signature tests run each scenario in a child process (this test
// binary in child mode) under rtscope watch, and check that the report
// shows what the reference documents show for that failure mode. Bounds
// are one-sided or percentiles: the machine may be a shared, noisy VM.

const childArg = "rtscope-scenario-child"

// runChild is the child mode: run one scenario with its flags and exit.
func runChild(args []string) int {
	s, err := Get(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var cfg Config
	fs, collect := s.Flags(&cfg)
	if err := fs.Parse(args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	collect()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := s.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// watchScenario runs a scenario for 3 s under watch and returns the report
// of its threads by name.
func watchScenario(t *testing.T, name string, flags ...string) map[string]*report.Task {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	s, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append([]string{exe, childArg, name, "--duration", "3s"}, flags...)
	rep, err := watch.Run(context.Background(), watch.Options{
		Targets:  target.Spec{Command: argv},
		Duration: 20 * time.Second, // the child ends first
		Quiet:    true,
		Show:     s.Threads(),
		Out:      io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	tasks := map[string]*report.Task{}
	for _, task := range rep.Tasks {
		tasks[task.Comm] = task
	}
	for _, n := range s.Threads() {
		if tasks[n] == nil {
			var got []string
			for _, task := range rep.Tasks {
				got = append(got, fmt.Sprintf("%d %s", task.TID, task.Comm))
			}
			t.Fatalf("watch did not report thread %s of %s (got %v)", n, name, got)
		}
	}
	return tasks
}

// metric returns a metric and logs its summary.
func metric(t *testing.T, task *report.Task, name string) *report.Metric {
	t.Helper()
	m := task.Metrics[name]
	if m == nil || m.Count == 0 {
		t.Logf("%s %s: no samples", task.Comm, name)
		return &report.Metric{}
	}
	us := func(p *uint64) string {
		if p == nil {
			return "-"
		}
		return Us(int64(*p))
	}
	worst := "no worst window"
	if w := m.Worst; w != nil {
		worst = fmt.Sprintf("worst window %s, %d events", Us(int64(w.Value)), len(w.Events))
		if w.Truncated {
			worst += " (truncated: " + w.Note + ")"
		}
	}
	t.Logf("%s %s: n=%d p50 %s p90 %s p99 %s max %s; %s", task.Comm, name, m.Count, us(m.P50Ns), us(m.P90Ns), us(m.P99Ns), us(m.MaxNs), worst)
	return m
}

// emulated is set by the QEMU test bed (vmtest/guest/tests/33-scenarios.sh):
// under TCG every microsecond of work stretches with the emulator's stalls,
// so the bounds that are absolute times get an emulation allowance; the
// relations (ratios, who ran, zero counts) stay as they are.
var emulated = os.Getenv("RTSCOPE_TEST_EMULATED") == "1"

// allow returns the bound d, or alt under emulation.
func allow(d, alt int64) int64 {
	if emulated {
		return alt
	}
	return d
}

// The injections of the tests are twice the default size (with --force):
// on a loaded VM, the host's own delays reach 3-4 ms now and then, and the
// scenario's disturbance must stay the worst.
var bigger = map[string][]string{
	"rt-hog":      {"--burst", "6ms", "--every", "40ms", "--force"},
	"irq-noise":   {"--spin", "6ms", "--every", "200ms", "--force"},
	"preempt-off": {"--spin", "6ms", "--every", "200ms", "--force"},
}

// twice runs a signature check and, when it fails, once more: an
// unrelated task of a shared machine (a compiler, another tool starting up)
// can make a bigger latency than the scenario's, and take its worst window.
func twice(t *testing.T, check func() error) {
	t.Helper()
	err := check()
	if err == nil {
		return
	}
	t.Logf("first attempt: %v; running again", err)
	if err := check(); err != nil {
		t.Error(err)
	}
}

func ns(p *uint64) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}

// ranIn tells whether the task named comm is on the CPU during the worst
// window: switched to before its end, or switched away from at its end.
func ranIn(w *trace.Trace, comm string) bool {
	if w == nil {
		return false
	}
	for _, e := range w.Events {
		if e.Type == "switch" && (e.NextComm == comm || e.PrevComm == comm) && e.T <= int64(w.End-w.Start) {
			return true
		}
	}
	return false
}

func TestSignatureMisconfiguredPriority(t *testing.T) {
	twice(t, func() error {
		lat := metric(t, watchScenario(t, "misconfigured-priority")["control"], "latency")
		// One control wakeup in five lands in a 2 ms FIFO 90 burst.
		if ns(lat.MaxNs) < 1700*us || ns(lat.P90Ns) < 1200*us {
			return fmt.Errorf("control's wakeup latency p90 %s max %s; want about the 2 ms background burst", Us(ns(lat.P90Ns)), Us(ns(lat.MaxNs)))
		}
		if !ranIn(lat.Worst, "background") {
			return errors.New("the worst latency window does not show the FIFO 90 background task running")
		}
		return nil
	})
}

func TestSignatureHiddenBlocking(t *testing.T) {
	twice(t, func() error {
		c := watchScenario(t, "hidden-blocking")["control"]
		lat, resp, cyc := metric(t, c, "latency"), metric(t, c, "response"), metric(t, c, "cycle")
		// Response: 1 ms of work then the semaphore; cycle: until the 7 ms post.
		if ns(resp.P90Ns) < 800*us || ns(resp.P90Ns) > allow(1600*us, 2500*us) || ns(cyc.P90Ns) < 3*ms || ns(lat.P90Ns) > 500*us {
			return fmt.Errorf("control: response p90 %s, cycle p90 %s, latency p90 %s; want ~1 ms, several ms, small",
				Us(ns(resp.P90Ns)), Us(ns(cyc.P90Ns)), Us(ns(lat.P90Ns)))
		}
		return nil
	})
}

func TestSignatureEventDrivenBlocking(t *testing.T) {
	twice(t, func() error {
		ev := watchScenario(t, "event-driven-blocking")["event"]
		resp, cyc := metric(t, ev, "response"), metric(t, ev, "cycle")
		// It never sleeps on a timer of its own. In the PREEMPT_RT guest, a
		// few timer releases (3-4 per ~1000 wakeups, 100-900 ms cycles) are
		// still counted; before soft callbacks recorded their task it was
		// 11-21 per ~700. The rest is not explained yet (a timed futex wait
		// of the Go runtime would be one), so emulation allows 1%.
		if cyc.Count > uint64(allow(0, int64(resp.Count/100))) {
			return fmt.Errorf("the event-driven task has %d cycle samples for %d responses; it never sleeps on a timer", cyc.Count, resp.Count)
		}
		// One event: 1 ms; events piled up during a semaphore wait: more.
		if ns(resp.P50Ns) < 800*us || ns(resp.P50Ns) > allow(1600*us, 2500*us) || ns(resp.MaxNs) < 1800*us {
			return fmt.Errorf("event: response p50 %s max %s; want about 1 ms, longer after blocking", Us(ns(resp.P50Ns)), Us(ns(resp.MaxNs)))
		}
		return nil
	})
}

func TestSignaturePriorityInversion(t *testing.T) {
	twice(t, func() error {
		plain := metric(t, watchScenario(t, "priority-inversion")["task-H"], "cycle")
		pi := metric(t, watchScenario(t, "priority-inversion", "--pi")["task-H"], "cycle")
		// Without PI H waits for M's 10 ms bursts; with PI for at most 2 ms.
		// Maxima are compared through the plain one only: a stall of a shared
		// machine could land in either run; p99 is robust to it.
		if ns(plain.MaxNs) < 9*ms || ns(pi.P99Ns) > allow(4*ms, 9*ms) || ns(plain.P99Ns) < 2*ns(pi.P99Ns) || ns(plain.MaxNs) < 3*ns(pi.P99Ns) {
			return fmt.Errorf("H's cycle: plain p99 %s max %s, PI p99 %s max %s; want the plain one far longer",
				Us(ns(plain.P99Ns)), Us(ns(plain.MaxNs)), Us(ns(pi.P99Ns)), Us(ns(pi.MaxNs)))
		}
		return nil
	})
}

func TestSignatureRTHog(t *testing.T) {
	twice(t, func() error {
		lat := metric(t, watchScenario(t, "rt-hog", bigger["rt-hog"]...)["victim"], "latency")
		if ns(lat.MaxNs) < 5*ms || !ranIn(lat.Worst, "hog") {
			return fmt.Errorf("victim's latency max %s (hog in the window: %v); want about the 6 ms burst, with the hog running",
				Us(ns(lat.MaxNs)), ranIn(lat.Worst, "hog"))
		}
		return nil
	})
}

// longHardIRQTimer returns the longest timer callback run in hard-IRQ
// context in the window: the injected spin.
func longHardIRQTimer(w *trace.Trace) int64 {
	if w == nil {
		return 0
	}
	entry := map[int]int64{}
	var longest int64
	for _, e := range w.Events {
		switch {
		case e.Type == "timer_entry" && e.HardIRQ:
			entry[e.CPU] = e.T
		case e.Type == "timer_exit" && e.HardIRQ:
			if t0, ok := entry[e.CPU]; ok && e.T-t0 > longest {
				longest = e.T - t0
			}
			delete(entry, e.CPU)
		}
	}
	return longest
}

func TestSignatureIRQNoise(t *testing.T) {
	twice(t, func() error {
		irq := metric(t, watchScenario(t, "irq-noise", bigger["irq-noise"]...)["victim"], "timer-irq")
		spin := longHardIRQTimer(irq.Worst)
		if ns(irq.MaxNs) < 5*ms || spin < 5*ms {
			return fmt.Errorf("victim's timer-irq max %s, longest hard-IRQ timer callback in its window %s; want about the 6 ms spin",
				Us(ns(irq.MaxNs)), Us(spin))
		}
		return nil
	})
}

func TestSignaturePreemptOff(t *testing.T) {
	twice(t, func() error {
		lat := metric(t, watchScenario(t, "preempt-off", bigger["preempt-off"]...)["victim"], "latency")
		// The victim is woken on time, then waits for a SCHED_OTHER task that
		// keeps the CPU: only a non-preemptible section explains it.
		var before string
		if w := lat.Worst; w != nil {
			for _, e := range w.Events {
				if e.Type == "switch" && e.NextComm == "victim" && e.T >= int64(w.End-w.Start) {
					before = e.PrevComm + " " + e.PrevSched
					break
				}
			}
		}
		if ns(lat.MaxNs) < 5*ms || before != "preempt-inject OTHER nice 0" {
			return fmt.Errorf("victim's latency max %s, switched in from %q; want about the 6 ms spin, after the SCHED_OTHER injector",
				Us(ns(lat.MaxNs)), before)
		}
		return nil
	})
}
