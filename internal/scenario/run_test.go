package scenario

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/workload"
)

// These tests run each scenario for a moment and check, with the
// scenario's own measurements, that the workload behaves as documented.
// Tolerances allow for a noisy, shared 2-CPU virtual machine: lower bounds
// on the provoked effect, counts rather than single extremes.

func run(t *testing.T, name string, d time.Duration, v Values) *Result {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	s, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), Config{CPU: -1, Duration: d, Values: v})
	if err != nil {
		t.Fatal(err)
	}
	for n, l := range res.Loops {
		t.Logf("%s: %d cycles, period %s, late avg %s max %s, cycle avg %s max %s, %d overruns", n, l.Cycles,
			Us(l.MeanPeriod()), Us(l.LateAvg()), Us(l.LateMax), Us(l.CycleAvg()), Us(l.CycleMax), l.Overruns)
	}
	for n, st := range res.Stats {
		t.Logf("%s: %d, min %s avg %s max %s", n, st.Count, Us(st.Min), Us(st.Avg()), Us(st.Max))
	}
	if res.Injected != nil {
		t.Logf("injected: %+v", *res.Injected)
	}
	return res
}

// judge runs a scenario and checks it; a run the platform disturbed too
// much to judge (a loop woken 50 ms late, when no scenario delays a wakeup
// by more than 12 ms, or a CPU that lost over 10% of the run to hypervisor
// steal) is run again, up to three times in all, with the reason logged.
// A failed check on an undisturbed run fails at once.
func judge(t *testing.T, name string, d time.Duration, v Values, check func(*Result) error) {
	t.Helper()
	const attempts = 3
	for i := 1; ; i++ {
		before, _ := engine.StealTotals()
		r := run(t, name, d, v)
		after, _ := engine.StealTotals()
		err := check(r)
		if err == nil {
			return
		}
		noise := disturbed(r, before, after, d)
		if noise == "" || i == attempts {
			if noise != "" {
				err = fmt.Errorf("%w (attempt %d of %d, the platform disturbed every one: %s)", err, i, attempts, noise)
			}
			t.Error(err)
			return
		}
		t.Logf("attempt %d: %v; the platform disturbed the run (%s): running again", i, err, noise)
	}
}

// stallNs: no scenario delays a wakeup by this much (priority inversion,
// the longest, about 12 ms); a loop that late was stopped by the platform
// (this VM stalls for 1-20 ms at random, and 380 ms was seen once).
const stallNs = 50 * ms

// disturbed says what of the platform made a run too noisy to judge, or "".
func disturbed(r *Result, before, after []uint64, d time.Duration) string {
	for n, l := range r.Loops {
		if l.LateMax >= stallNs {
			return fmt.Sprintf("%s woke %s late", n, Us(l.LateMax))
		}
	}
	for cpu := range after {
		if cpu < len(before) && after[cpu]-before[cpu] > uint64(d)/10 {
			return fmt.Sprintf("CPU %d lost %s to hypervisor steal", cpu, Us(int64(after[cpu]-before[cpu])))
		}
	}
	return ""
}

func near(got, want, tol int64) bool { return got >= want-tol && got <= want+tol }

func TestRunHealthyLoop(t *testing.T) {
	judge(t, "healthy-loop", 1500*time.Millisecond, nil, func(r *Result) error {
		c := r.Loops["control"]
		// Absolute-time periodic: wakeups plus skipped deadlines tile the
		// run exactly with 2 ms periods, and skips are rare (another RT
		// task of the machine may take the CPU now and then).
		periods := (c.Last - c.First) / (2 * ms)
		if c.Cycles < 600 || !near(c.Cycles-1+c.Overruns, periods, 1+c.LateMax/(2*ms)) || c.Overruns > c.Cycles/10 {
			return fmt.Errorf("control: %d cycles and %d skipped deadlines in %d periods of 2000 us; want one cycle per period",
				c.Cycles, c.Overruns, periods)
		}
		// Most cycles are the 500 us of work, a little more for the sleep call.
		if n := workload.AtLeast(&c.CycleHist, 1100*us); n > c.Cycles/10 { // cycles over 1.05 ms
			return fmt.Errorf("control: %d of %d cycles took over 1 ms for 500 us of work", n, c.Cycles)
		}
		return nil
	})
}

func TestRunOverrunningLoop(t *testing.T) {
	judge(t, "overrunning-loop", 1500*time.Millisecond, nil, func(r *Result) error {
		c := r.Loops["control"]
		// It never skips a deadline: at least one cycle per 2 ms period, 6
		// of every 16 deadlines armed late (4 heavy iterations, 2 catching
		// up). More cycles than periods is no skip: a loop that a VM stall
		// put behind (seen: 48.7 ms, 772 cycles in 750 periods) is still
		// catching up, back to back, when the run ends.
		periods := (c.Last - c.First) / (2 * ms)
		if c.Cycles < 600 || c.Cycles+1 < periods {
			return fmt.Errorf("control: %d cycles in %d periods of 2000 us; want one per period, none skipped", c.Cycles, periods)
		}
		if c.Overruns*100 < c.Cycles*30 || c.Overruns*100 > c.Cycles*50 {
			return fmt.Errorf("control: %d late deadlines in %d cycles; want about 6 in 16", c.Overruns, c.Cycles)
		}
		return nil
	})
}

func TestRunMisconfiguredPriority(t *testing.T) {
	judge(t, "misconfigured-priority", 1500*time.Millisecond, nil, func(r *Result) error {
		c, bg := r.Loops["control"], r.Loops["background"]
		// Every background burst (2 ms, starting 100 us before a control
		// deadline) delays one control wakeup by about 1.9 ms.
		late := workload.AtLeast(&c.LateHist, 1100*us)
		if bg.Cycles < 100 || late < bg.Cycles*2/3 || c.LateMax < 1700*us {
			return fmt.Errorf("%d control wakeups over 1 ms late (max %s) for %d background bursts; want one per burst, about 1900 us",
				late, Us(c.LateMax), bg.Cycles)
		}
		return nil
	})
}

func TestRunHiddenBlocking(t *testing.T) {
	judge(t, "hidden-blocking", 1500*time.Millisecond, nil, func(r *Result) error {
		c, n := r.Loops["control"], r.Loops["notifier"]
		// The semaphore, posted every 7 ms, paces the 5 ms loop: one cycle
		// per post (counted, not averaged: a stall of the VM stretches the
		// mean period of both), most cycles several ms long although the
		// work is 1 ms.
		if n.Cycles < 100 || !near(c.Cycles, n.Cycles, 2) || workload.AtLeast(&c.CycleHist, 2100*us) < c.Cycles/2 {
			return fmt.Errorf("control: %d cycles for %d posts, %d cycles over 2 ms; want one cycle per post and most cycles blocked",
				c.Cycles, n.Cycles, workload.AtLeast(&c.CycleHist, 2100*us))
		}
		return nil
	})
}

func TestRunEventDrivenBlocking(t *testing.T) {
	judge(t, "event-driven-blocking", 1500*time.Millisecond, nil, func(r *Result) error {
		b, w := r.Stats["event-batch"], r.Stats["semaphore wait"]
		// Events every 3 ms on average: about 500 in 1.5 s, 1 ms of work
		// each; the semaphore, held 3 ms every 7 ms, blocks some batches,
		// and events pile up meanwhile.
		if r.Counts["events"] < 300 || b.Min < 900*us || r.Counts["largest batch"] < 2 || w.Max < 1*ms {
			return fmt.Errorf("%d events in %d batches (largest %d), batch time min %s; semaphore wait max %s; want ~500 events of 1000 us, some piling up during waits",
				r.Counts["events"], r.Counts["batches"], r.Counts["largest batch"], Us(b.Min), Us(w.Max))
		}
		if len(r.Loops) != 1 || r.Loops["blocker"] == nil {
			return fmt.Errorf("only the blocker is periodic; loops: %v", r.Loops)
		}
		return nil
	})
}

func TestRunPriorityInversion(t *testing.T) {
	// Without PI, H waits for M's 10 ms bursts whenever L holds the mutex;
	// with PI, for at most the rest of L's 2 ms critical section.
	long := func(l *workload.LoopStats) int64 { return workload.AtLeast(&l.CycleHist, 5*ms) }
	var plain *Result
	judge(t, "priority-inversion", 2*time.Second, nil, func(r *Result) error {
		plain = r
		wp, hp := r.Stats["task-H lock wait"], r.Loops["task-H"]
		if wp.Max < 8*ms || hp.CycleMax < 9*ms || long(hp) < 5 {
			return fmt.Errorf("H without PI: lock wait max %s, cycle max %s, %d cycles over 4 ms; want waits for M's 10 ms bursts",
				Us(wp.Max), Us(hp.CycleMax), long(hp))
		}
		return nil
	})
	if plain == nil || t.Failed() {
		return
	}
	hp := plain.Loops["task-H"]
	judge(t, "priority-inversion", 2*time.Second, Values{"pi": 1}, func(r *Result) error {
		wi, hi := r.Stats["task-H lock wait"], r.Loops["task-H"]
		if long(hi) > long(hp)/4 || wi.Avg() > 500*us {
			return fmt.Errorf("H with PI: lock wait avg %s, %d cycles over 4 ms (%d without PI); want the plain cycles far longer",
				Us(wi.Avg()), long(hi), long(hp))
		}
		return nil
	})
}

func TestRunRTHog(t *testing.T) {
	judge(t, "rt-hog", 1500*time.Millisecond, nil, func(r *Result) error {
		v, hog := r.Loops["victim"], r.Loops["hog"]
		if n := workload.AtLeast(&v.LateHist, 2200*us); hog.Cycles < 50 || n < hog.Cycles*2/3 || v.LateMax < 2600*us {
			return fmt.Errorf("%d victim wakeups over 2 ms late (max %s) for %d hog bursts of 3 ms; want one per burst", n, Us(v.LateMax), hog.Cycles)
		}
		return nil
	})
}

// The injectors: the victim measures its own wakeup against its deadline.
func testInjector(t *testing.T, name string) {
	judge(t, name, 1500*time.Millisecond, nil, func(r *Result) error {
		v, inj := r.Loops["victim"], r.Injected
		// The shortest spin is what was asked for: a stall of the VM (1-20
		// ms here, at random) lengthens a spin, so the average and the
		// maximum are the platform's; the minimum is the injector's.
		if inj == nil || inj.Count < 10 || !near(int64(inj.Min), 3*ms, 300*us) || inj.WrongCPU != 0 {
			return fmt.Errorf("injector: %+v; want >= 10 spins, the shortest 3000 us, on the target CPU", inj)
		}
		if n := workload.AtLeast(&v.LateHist, 2200*us); n < int64(inj.Count)*2/3 {
			return fmt.Errorf("%d victim wakeups over 2.2 ms late for %d injected spins of 3 ms; want one per spin", n, inj.Count)
		}
		return nil
	})
}

func TestRunIRQNoise(t *testing.T)   { testInjector(t, "irq-noise") }
func TestRunPreemptOff(t *testing.T) { testInjector(t, "preempt-off") }

// A run is judged too noisy only for what no scenario does: a loop woken
// 50 ms late, or a CPU losing a tenth of the run to steal.
func TestDisturbed(t *testing.T) {
	quiet := &Result{Loops: map[string]*workload.LoopStats{"control": {LateMax: 12 * ms}}}
	stalled := &Result{Loops: map[string]*workload.LoopStats{"notifier": {LateMax: 373 * ms}}}
	d := time.Second
	const msU = uint64(ms)
	for _, c := range []struct {
		r             *Result
		before, after []uint64
		want          string
	}{
		{quiet, []uint64{0, 0}, []uint64{60 * msU, 99 * msU}, ""},
		{stalled, []uint64{0, 0}, []uint64{0, 0}, "notifier woke 373000.0 us late"},
		{quiet, []uint64{10 * msU, 0}, []uint64{10 * msU, 110 * msU}, "CPU 1 lost 110000.0 us to hypervisor steal"},
		{quiet, nil, []uint64{500 * msU}, ""}, // /proc/stat unreadable before: nothing to compare
	} {
		if got := disturbed(c.r, c.before, c.after, d); got != c.want {
			t.Errorf("disturbed(%v → %v) = %q, want %q", c.before, c.after, got, c.want)
		}
	}
}
