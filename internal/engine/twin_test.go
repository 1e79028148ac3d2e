package engine

// BPF logic tests: synthetic scheduler/timer event sequences driven through
// the raw_tp twins of the state machine (BPF_PROG_TEST_RUN), asserting exact
// metric values. The twins run task_logic.bpf.h, the engine's own code.

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/rtscope/rtscope/internal/metric"
)

type twin struct {
	t    *testing.T
	objs twinObjects
}

func newTwin(t *testing.T, slo map[metric.ID]uint64) *twin {
	return newTwinStack(t, slo, 0)
}

// newTwinStack: twins whose stacks wait stackMinWait ns (stack_min_wait_ns).
func newTwinStack(t *testing.T, slo map[metric.ID]uint64, stackMinWait uint64) *twin {
	t.Helper()
	return newTwinWith(t, slo, map[string]any{"stack_min_wait_ns": stackMinWait})
}

// newTwinWith: twins with these load-time settings, beside the flight
// recorder on (trace_enabled, unless vars say otherwise) and the SLO.
func newTwinWith(t *testing.T, slo map[metric.ID]uint64, vars map[string]any) *twin {
	t.Helper()
	return newTwinOf(t, inlinedTwins, slo, vars)
}

// newTwinOf is newTwinWith from the twins' inlined variant (inlined) or
// their global one (TestTwinVariantsAgree).
func newTwinOf(t *testing.T, inlined bool, slo map[metric.ID]uint64, vars map[string]any) *twin {
	t.Helper()
	spec, err := loadTwinOf(inlined)
	if err != nil {
		t.Fatal(err)
	}
	var bounds [metric.Count]uint64
	for m, v := range slo {
		bounds[m] = v
	}
	all := map[string]any{"slo_default": bounds, "trace_enabled": true}
	maps.Copy(all, vars)
	for name, v := range all {
		if err := spec.Variables[name].Set(v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	tw := &twin{t: t}
	if err := spec.LoadAndAssign(&tw.objs, nil); err != nil {
		t.Fatalf("loading twins: %v", err)
	}
	t.Cleanup(func() { tw.objs.Close() })
	return tw
}

// noticesLost is the twin's lost-notice counter, summed over CPUs.
func (tw *twin) noticesLost() uint64 {
	tw.t.Helper()
	var per []uint64
	if err := tw.objs.Counters.Lookup(uint32(CounterNoticeLost), &per); err != nil {
		tw.t.Fatal(err)
	}
	var n uint64
	for _, v := range per {
		n += v
	}
	return n
}

func (tw *twin) run(p *ebpf.Program, args ...uint64) uint32 {
	tw.t.Helper()
	ret, err := p.Run(&ebpf.RunOptions{Context: args})
	if err != nil {
		tw.t.Fatalf("test run: %v", err)
	}
	return ret
}

func (tw *twin) track(tid uint32, sleeping bool, irqThread bool) {
	tw.t.Helper()
	if ret := tw.run(tw.objs.TestTrack, uint64(tid), uint64(tid), b2u(sleeping), b2u(irqThread)); ret != 0 {
		tw.t.Fatalf("track %d failed: %d", tid, int32(ret))
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// switchTo runs a context switch prev -> next at now on cpu (irq_ns: IRQ time so far).
// A switch-in that ends a wakeup hands its stats back to the hook (for
// refresh_identity): the twin fails when they are not the task's.
func (tw *twin) switchTo(now, cpu uint64, prev, next uint32, voluntary bool, irqNs uint64) {
	tw.t.Helper()
	if ret := tw.run(tw.objs.TestSwitch, now, cpu, uint64(prev), uint64(next), b2u(voluntary), irqNs); ret != 0 {
		tw.t.Fatalf("switch %d -> %d at %d: stats handed back are not the task's (%d)", prev, next, now, int32(ret))
	}
}

func (tw *twin) wakeup(now, cpu uint64, tid uint32) {
	tw.run(tw.objs.TestWakeup, now, cpu, uint64(tid), 0, 0, 0)
}

// lowerWakeup: a wakeup of real-time tid by a task of lower priority.
func (tw *twin) lowerWakeup(now, cpu uint64, tid uint32) {
	tw.run(tw.objs.TestWakeup, now, cpu, uint64(tid), 0, 0, 1)
}

func (tw *twin) timerWakeup(now, cpu uint64, tid uint32, expiry, cbEntry uint64) {
	tw.run(tw.objs.TestWakeup, now, cpu, uint64(tid), expiry, cbEntry, 0)
}

func (tw *twin) id(tid uint32) uint64 { return uint64(tw.run(tw.objs.TestId, uint64(tid))) }

func (tw *twin) stats(tid uint32) *TaskStats {
	tw.t.Helper()
	return tw.statsID(tw.id(tid))
}

// statsID: the statistics of tracking id, joined with no carry (tests
// whose buckets pass 65535 samples join their own: TestTwinHistogramCarry).
func (tw *twin) statsID(id uint64) *TaskStats {
	tw.t.Helper()
	s, _ := histCarries{}.join(tw.kernelStats(id))
	return s
}

// kernelStats: the stats map's value of tracking id, as the kernel keeps
// it once every task's held samples are settled, as at the end of a run
// (settle_held); heldStats reads it without settling.
func (tw *twin) kernelStats(id uint64) *bpfRtsTaskStats {
	tw.t.Helper()
	tw.run(tw.objs.TestSettleAll)
	return tw.heldStats(id)
}

// heldStats: the stats map's value of tracking id as it is, without what
// the tasks hold.
func (tw *twin) heldStats(id uint64) *bpfRtsTaskStats {
	tw.t.Helper()
	var k bpfRtsTaskStats
	if err := tw.objs.Stats.Lookup(id, &k); err != nil {
		tw.t.Fatalf("stats of id %d: %v", id, err)
	}
	return &k
}

// expect checks count and, when count > 0, min and max of a metric.
func expect(t *testing.T, s *TaskStats, m metric.ID, count, min, max uint64) {
	t.Helper()
	got := s.M[m]
	if got.Count != count {
		t.Errorf("%s: count %d, want %d", m, got.Count, count)
		return
	}
	if count > 0 && (got.Min != min || got.Max != max) {
		t.Errorf("%s: min %d max %d, want %d %d", m, got.Min, got.Max, min, max)
	}
}

const idle = 0

func TestTwinWakeupAndResponse(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, true, false)
	tw.wakeup(1000, 0, 100)
	tw.switchTo(1500, 0, idle, 100, false, 0)
	tw.switchTo(3500, 0, 100, idle, true, 0)
	s := tw.stats(100)
	expect(t, s, metric.Latency, 1, 500, 500)
	expect(t, s, metric.Response, 1, 2500, 2500)
	expect(t, s, metric.Cycle, 0, 0, 0)
	if s.Wakeups != 1 || s.SwitchesVoluntary != 1 {
		t.Errorf("counters: wakeups %d voluntary %d", s.Wakeups, s.SwitchesVoluntary)
	}
}

// A wakeup of a running task and a preemption must not create samples; the
// response window spans the preemption.
func TestTwinRunningWakeupAndPreemption(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, true, false)
	tw.wakeup(1000, 0, 100)
	tw.switchTo(1200, 0, idle, 100, false, 0)
	tw.wakeup(1300, 1, 100)                  // task is running: no new window
	tw.switchTo(2000, 0, 100, 200, false, 0) // preempted by tid 200
	tw.wakeup(2100, 1, 100)                  // runnable already: nothing
	tw.switchTo(2600, 0, 200, 100, false, 0) // back on CPU: not a wakeup
	tw.switchTo(4000, 0, 100, idle, true, 0) // blocks: response ends
	s := tw.stats(100)
	expect(t, s, metric.Latency, 1, 200, 200)
	expect(t, s, metric.Response, 1, 3000, 3000)
	if s.SwitchesPreempted != 1 || s.Wakeups != 1 {
		t.Errorf("preempted %d wakeups %d", s.SwitchesPreempted, s.Wakeups)
	}
}

// The waker may run sched_waking before the task's own switch-out completes:
// the latency then counts from the switch-out.
func TestTwinWakeupSwitchRace(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, false, false)
	tw.switchTo(1000, 0, idle, 100, false, 0)
	tw.wakeup(1900, 1, 100)                  // still on CPU
	tw.switchTo(2000, 0, 100, idle, true, 0) // its switch-out into the sleep
	tw.switchTo(2300, 0, idle, 100, false, 0)
	s := tw.stats(100)
	expect(t, s, metric.Latency, 1, 300, 300)
}

// A control loop: timer releases split in IRQ/thread/user, a hidden block
// mid-cycle, cycle = first timer wakeup -> switch-out into the next timer sleep.
func TestTwinCycleAndTimerRelease(t *testing.T) {
	tw := newTwinWith(t, nil, noStartUp)
	tw.track(100, true, false)
	// release 1: expiry 10000, timer callback at 10010, wakeup at 10012
	tw.timerWakeup(10012, 0, 100, 10000, 10010)
	tw.switchTo(10050, 0, idle, 100, false, 0)
	tw.run(tw.objs.TestUserReturn, 10060, 0, 100)
	tw.switchTo(10500, 0, 100, idle, true, 0) // blocks on a semaphore
	tw.wakeup(11000, 0, 100)                  // posted by another task
	tw.switchTo(11010, 0, idle, 100, false, 0)
	tw.switchTo(11500, 0, 100, idle, true, 0) // into the next timer sleep
	// release 2: expiry 12000 (period 2000), callback 12005, wakeup 12006
	tw.timerWakeup(12006, 0, 100, 12000, 12005)
	tw.switchTo(12020, 0, idle, 100, false, 0)
	tw.run(tw.objs.TestUserReturn, 12030, 0, 100)
	s := tw.stats(100)
	if s.NominalPeriod != 0 {
		t.Errorf("nominal period %d from one spacing, want none until it repeats", s.NominalPeriod)
	}
	tw.switchTo(13500, 0, 100, idle, true, 0)
	// release 3: expiry 14000, the spacing repeats: the period is 2000
	tw.timerWakeup(14006, 0, 100, 14000, 14005)
	tw.switchTo(14020, 0, idle, 100, false, 0)
	tw.run(tw.objs.TestUserReturn, 14030, 0, 100)
	s = tw.stats(100)
	expect(t, s, metric.TimerIRQ, 3, 5, 10)
	expect(t, s, metric.TimerThread, 3, 20, 50)
	expect(t, s, metric.TimerUser, 3, 30, 60)
	expect(t, s, metric.Cycle, 2, 1488, 1494)   // 11500 - 10012, 13500 - 12006
	expect(t, s, metric.Period, 2, 1994, 2000)  // 12006 - 10012, 14006 - 12006
	expect(t, s, metric.Jitter, 2, 0, 6)        // |1994 - 2000|, |2000 - 2000|
	expect(t, s, metric.Response, 3, 488, 1494) // 10500-10012, 11500-11000, 13500-12006
	expect(t, s, metric.Latency, 4, 10, 38)
	// Two regular spacings make no period: RTS_PERIOD_CONFIRM (4) do (TestTwinPeriodConfirmed).
	if s.TimerReleases != 3 || s.NominalPeriod != 0 || s.Overruns != 0 {
		t.Errorf("releases %d nominal %d overruns %d, want 3, 0 and 0", s.TimerReleases, s.NominalPeriod, s.Overruns)
	}
	// A user return without a pending release adds nothing.
	tw.run(tw.objs.TestUserReturn, 14100, 0, 100)
	expect(t, tw.stats(100), metric.TimerUser, 3, 30, 60)
}

// A wakeup the kernel did not report (this VM fires no tracepoint while
// its PID 1 threads run) shows as a task asleep since its last switch-out
// seen on its CPU: at its switch-out (its switch-in unreported too), or at
// its switch-in. Counted once, and the cycle it ends is left out instead
// of spanning two activations (cyclictest: 2019.4 us of a 1000 us loop).
func TestTwinUnseenWakeup(t *testing.T) {
	tw := newTwinWith(t, nil, noStartUp)
	tw.track(100, true, false)
	tw.release(100, 1000, 500)               // seen: wakeup, switch-in, sleep at 1500
	tw.switchTo(3500, 0, 100, idle, true, 0) // unreported wakeup and switch-in: only its sleep
	tw.release(100, 5000, 500)               // no cycle from 1000 to 3500
	tw.release(100, 7000, 400)
	tw.switchTo(8800, 0, idle, 100, false, 0) // unreported wakeup: a switch-in from asleep
	tw.switchTo(8900, 0, 100, idle, true, 0)
	tw.release(100, 9000, 300) // no cycle from 7000 to 8900
	tw.release(100, 11000, 300)
	s := tw.stats(100)
	expect(t, s, metric.Cycle, 2, 300, 500)    // 5500 - 5000, 9300 - 9000
	expect(t, s, metric.Period, 2, 2000, 2000) // 7000 - 5000, 11000 - 9000
	var per []uint64
	if err := tw.objs.Counters.Lookup(uint32(CounterUnseenWakeups), &per); err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, v := range per {
		n += v
	}
	if n != 2 {
		t.Errorf("unseen wakeups %d, want 2", n)
	}
}

// noStartUp: twins that leave no start-up out (--warm-up 0), for the
// tests of what a sample is, not of when it counts.
var noStartUp = map[string]any{"warm_up_ns": uint64(0)}

// release: a timer release of tid at expiry (woken then, on CPU 0), which
// works `work` ns and sleeps again.
func (tw *twin) release(tid uint32, expiry, work uint64) {
	tw.t.Helper()
	tw.timerWakeup(expiry, 0, tid, expiry, expiry)
	tw.switchTo(expiry, 0, idle, tid, false, 0)
	tw.switchTo(expiry+work, 0, tid, idle, true, 0)
}

// A timer-released loop (no sleeper timer of its own: timerfd) becomes
// periodic after 4 regular spacings, its start-up cycles are left out,
// and a cycle longer than its period is an overrun; a skipped deadline
// keeps its period.
func TestTwinOverrun(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, true, false)
	for e := uint64(1000); e <= 9000; e += 2000 {
		tw.release(100, e, 500) // period 2000: settled at the 5th release
	}
	tw.release(100, 11000, 2500) // 2500 of work: overrun
	tw.timerWakeup(13500, 0, 100, 13000, 13500)
	tw.switchTo(13500, 0, idle, 100, false, 0)
	tw.switchTo(13600, 0, 100, idle, true, 0)
	// A loop that falls behind skips a deadline (spacing 4000): its period stays 2000.
	tw.timerWakeup(17000, 0, 100, 17000, 17000)
	s := tw.stats(100)
	// 1000..3000, 3000..5000 and 5000..7000 are its start-up: left out.
	expect(t, s, metric.Cycle, 4, 100, 2500) // 500, 500, 2500, 100
	if s.StartupIterations != 3 || s.StartupUs == 0 {
		t.Errorf("start-up: %d iterations, over: %v, want 3 and over", s.StartupIterations, s.StartupUs != 0)
	}
	if s.Overruns != 1 || s.NominalPeriod != 2000 {
		t.Errorf("overruns %d nominal period %d, want 1 and 2000", s.Overruns, s.NominalPeriod)
	}
}

func (tw *twin) arm(now, cpu uint64, tid uint32, expiry, key uint64) {
	tw.run(tw.objs.TestTimerArm, now, cpu, uint64(tid), expiry, key, slackUnknown)
}

// A loop whose work (1500) exceeds its period (1000) arms each deadline
// after it has passed: clock_nanosleep returns at once, no wakeup and no
// switch happen, and only the armings tell its iterations and overruns.
func TestTwinOverrunNoSleep(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, false, false)
	tw.switchTo(0, 0, idle, 100, false, 0)
	// On time: deadline D armed at D-900, it sleeps and wakes at D+2;
	// the 5th arming (13100) makes the 4 regular spacings of its period.
	for d := uint64(10000); d <= 14000; d += 1000 {
		tw.arm(d-900, 0, 100, d, d)
		tw.switchTo(d-890, 0, 100, idle, true, 0)
		tw.timerWakeup(d+2, 0, 100, d, d+1)
		tw.switchTo(d+5, 0, idle, 100, false, 0)
	}
	// From here on 1500 of work per iteration: deadline 15000 is armed at
	// 15505, 16000 at 17005, ... never a sleep.
	now := uint64(14005)
	for k := uint64(1); k <= 5; k++ {
		now += 1500
		tw.arm(now, 0, 100, 14000+1000*k, 14000+1000*k)
		// The past deadline's timer fires while the task runs: a wakeup
		// of a running task, stale at the next arming.
		tw.timerWakeup(now+20, 0, 100, 14000+1000*k, now+18)
	}
	s := tw.stats(100)
	// Iterations: 3 of its start-up left out, 1000 (12100 -> 13100),
	// 13100 -> 15505, then 1500 each.
	expect(t, s, metric.Iteration, 6, 1000, 2405)
	if s.StartupIterations != 3 {
		t.Errorf("start-up iterations %d, want 3", s.StartupIterations)
	}
	if s.NominalPeriod != 1000 {
		t.Errorf("nominal period %d, want 1000 from the armed deadlines", s.NominalPeriod)
	}
	// Every arming after 14000 was at or past its deadline.
	if s.Overruns != 5 {
		t.Errorf("overruns %d, want 5 (deadlines 15000..19000 armed late)", s.Overruns)
	}
	if s.Wakeups != 5 || s.SwitchesVoluntary != 5 {
		t.Errorf("wakeups %d voluntary %d, want 5 and 5: the stale wakeups of a running task add none", s.Wakeups, s.SwitchesVoluntary)
	}
	// A stale wakeup seen while it ran must not end its next real sleep.
	tw.arm(now+100, 0, 100, now+5000, now+5000)
	tw.switchTo(now+110, 0, 100, idle, true, 0)
	tw.switchTo(now+120, 0, idle, 100, false, 0) // preempted-in without a wakeup
	expect(t, tw.stats(100), metric.Latency, 5, 3, 3)
}

// A loop that catches up by skipping deadlines arms them in the future, one
// period or more apart: an overrun (one, however many it skipped: overruns
// never exceed iterations). Re-arming the same deadline (a spurious wakeup
// in do_nanosleep) is no new iteration.
func TestTwinOverrunSkipsAndRearm(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, false, false)
	arm := func(now, deadline uint64) { tw.arm(now, 0, 100, deadline, deadline) }
	for d := uint64(2000); d <= 6000; d += 1000 {
		arm(d-900, d) // spacing 1000 four times: period 1000
	}
	arm(5150, 6000) // the same deadline again: ignored
	arm(8100, 9000) // deadlines 7000 and 8000 skipped
	s := tw.stats(100)
	if s.Overruns != 1 {
		t.Errorf("overruns %d, want 1: one iteration skipped deadlines", s.Overruns)
	}
	expect(t, s, metric.Iteration, 2, 1000, 3000) // 3 start-up ones left out, 1000, 3000
	// A REALTIME deadline in the classic engine: no monotonic expiry, its
	// own-clock key still spaces the iterations.
	tw.arm(9100, 0, 100, 0, 1_700_000_000_000_010_000)
	tw.arm(10100, 0, 100, 0, 1_700_000_000_000_011_000)
	s = tw.stats(100)
	if s.Overruns != 1 {
		t.Errorf("overruns %d after unconvertible deadlines, want still 1", s.Overruns)
	}
	expect(t, s, metric.Iteration, 4, 1000, 3000)
}

// A lone short spacing (a timed sleep before the loop starts, or a timed
// futex wait inside it) is not the loop's period: only 4 regular ones in a
// row are, and a lone irregular one afterwards does not unmake it.
// (The RT guest saw a 640 us "period" for a 2 ms loop from its start-up.)
func TestTwinNominalPeriodNeedsRepeat(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, true, false)
	release := func(expiry uint64) {
		tw.timerWakeup(expiry+5, 0, 100, expiry, expiry+2)
		tw.switchTo(expiry+10, 0, idle, 100, false, 0)
		tw.switchTo(expiry+300, 0, 100, idle, true, 0)
	}
	release(100000) // start-up: a 640 us sleep
	release(100640)
	release(101280) // 640 again: no period yet
	if s := tw.stats(100); s.NominalPeriod != 0 {
		t.Errorf("nominal period %d from two spacings, want none", s.NominalPeriod)
	}
	for e := uint64(102000); e <= 110000; e += 2000 {
		release(e) // the 2 ms loop; its first spacing is 720 us
	}
	release(110700) // a lone timed wait mid-cycle: spacings 700, then 1300
	release(112000)
	release(114000)
	s := tw.stats(100)
	if s.NominalPeriod != 2000 {
		t.Errorf("nominal period %d, want 2000: 640, 720, 700 and 1300 are not regular", s.NominalPeriod)
	}
	// Its start-up (6 cycles up to the release at 110000) is left out.
	expect(t, s, metric.Period, 4, 700, 2000)
	if s.StartupIterations != 6 || s.StartupUs == 0 {
		t.Errorf("start-up: %d iterations, over: %v, want 6 and over", s.StartupIterations, s.StartupUs != 0)
	}
}

// A tid reused by a new task gets a new id and fresh statistics; the old
// task's statistics stay under its own id.
func TestTwinPIDReuse(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(300, true, false)
	old := tw.id(300)
	tw.wakeup(100, 0, 300)
	tw.switchTo(900, 0, idle, 300, false, 0)
	tw.run(tw.objs.TestExit, 300)
	tw.track(300, true, false)
	if tw.id(300) == old {
		t.Fatalf("reused tid got the same id %d", old)
	}
	expect(t, tw.stats(300), metric.Latency, 0, 0, 0)
	expect(t, tw.statsID(old), metric.Latency, 1, 800, 800)
}

// A task that sets its own policy after it started (sched_setattr in the
// thread) is seen with its new identity at a switch-in: every change is
// counted and the distinct identities kept in the order first seen.
func TestTwinSchedChanges(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(400, false, false)
	seen := func(policy uint64, prio int) bool {
		return tw.run(tw.objs.TestSched, 400, policy, uint64(int64(prio))) == 1
	}
	const other, fifo, deadline = 0, 1, 6
	if !seen(other, 120) {
		t.Fatal("the first identity is not new")
	}
	if seen(other, 120) {
		t.Fatal("an unchanged identity is new")
	}
	seen(fifo, 49) // FIFO 50
	seen(fifo, 29) // FIFO 70
	seen(fifo, 49) // back to FIFO 50: a change, not a new identity kept
	seen(deadline, -1)
	seen(other, 100) // a fifth identity: counted, not kept
	s := tw.stats(400)
	if s.SchedChanges != 5 {
		t.Errorf("sched changes %d, want 5", s.SchedChanges)
	}
	want := []Identity{{other, 120}, {fifo, 49}, {fifo, 29}, {deadline, -1}}
	if got := SchedSeen(s); !slices.Equal(got, want) {
		t.Errorf("seen %v, want %v", got, want)
	}
}

func TestTwinIRQThreadHandler(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(400, true, true)
	tw.wakeup(50, 0, 400)
	tw.switchTo(100, 0, idle, 400, false, 1000)
	tw.switchTo(300, 0, 400, 500, false, 1000) // preempted after 200
	tw.switchTo(400, 0, 500, 400, false, 1000)
	tw.switchTo(800, 0, 400, idle, true, 1050) // 400 more, of which 50 in IRQs
	expect(t, tw.stats(400), metric.Handler, 1, 550, 550)
	// With fentry data the scheduler-based value is not recorded again.
	tw.wakeup(1000, 0, 400)
	tw.switchTo(1010, 0, idle, 400, false, 2000)
	tw.run(tw.objs.TestHandler, 1020, 0, 400, 1, 2000)
	tw.run(tw.objs.TestHandler, 1320, 0, 400, 0, 2020)
	tw.switchTo(1400, 0, 400, idle, true, 2020)
	expect(t, tw.stats(400), metric.Handler, 2, 280, 550)
	// A task that is not an IRQ thread has no handler time.
	tw.track(401, true, false)
	tw.wakeup(5, 1, 401)
	tw.switchTo(10, 1, idle, 401, false, 0)
	tw.switchTo(50, 1, 401, idle, true, 0)
	expect(t, tw.stats(401), metric.Handler, 0, 0, 0)
}

func TestTwinSLOAndNewMaxNotices(t *testing.T) {
	tw := newTwin(t, map[metric.ID]uint64{metric.Latency: 400})
	rd := noticeReader(t, tw)
	tw.track(100, true, false)
	for i, lat := range []uint64{300, 500, 450, 700, 100} {
		base := uint64(i+1) * 10000
		tw.wakeup(base, 0, 100)
		tw.switchTo(base+lat, 0, idle, 100, false, 0)
		tw.switchTo(base+lat+10, 0, 100, idle, true, 0)
	}
	s := tw.stats(100)
	if got := s.M[metric.Latency]; got.Violations != 3 || got.Slo != 400 || got.Max != 700 || got.Count != 5 {
		t.Errorf("latency: violations %d slo %d max %d count %d", got.Violations, got.Slo, got.Max, got.Count)
	}
	if got := s.M[metric.Latency]; got.MaxStart != 40000 || got.MaxEnd != 40700 {
		t.Errorf("max window [%d,%d], want [40000,40700]", got.MaxStart, got.MaxEnd)
	}
	// Notices: task start, then new latency maxima 300, 500, 700 (not 450 or 100).
	var maxima []uint64
	for _, n := range readNotices(t, rd) {
		if n.Type == NoticeNewMax && n.Metric == uint32(metric.Latency) {
			maxima = append(maxima, n.Value)
		}
	}
	if len(maxima) != 3 || maxima[0] != 300 || maxima[1] != 500 || maxima[2] != 700 {
		t.Errorf("new-max notices %v, want [300 500 700]", maxima)
	}
	// Histogram: every sample in its bucket.
	var total uint32
	for _, c := range s.M[metric.Latency].Hist {
		total += uint32(c)
	}
	if total != 5 || s.M[metric.Latency].Hist[metric.Bucket(700)] != 1 {
		t.Errorf("histogram total %d", total)
	}
}

// Without the flight recorder there are no new-maximum notices, but an
// on-threshold action must still hear of each violation: with
// violation_notices, every violation is noticed (rate-limited,
// RTS_VIOL_NOTICE_GAP_NS apart), the new maxima among them too; without
// it, none is.
func TestTwinViolationNoticesWithoutTrace(t *testing.T) {
	for _, on := range []bool{true, false} {
		tw := newTwinWith(t, map[metric.ID]uint64{metric.Latency: 400}, map[string]any{"trace_enabled": false, "violation_notices": on})
		rd := noticeReader(t, tw)
		tw.track(100, true, false)
		// 500 (a new max), 450, 700 (a new max) and 900 violate; the 450,
		// 0.5 ms after the 500, and the 900, 0.5 ms after the 700, fall
		// within the gap.
		for _, w := range []struct{ at, lat uint64 }{{1_000_000, 300}, {2_000_000, 500}, {2_500_000, 450}, {4_000_000, 700}, {4_500_000, 900}, {6_000_000, 100}} {
			tw.wakeup(w.at, 0, 100)
			tw.switchTo(w.at+w.lat, 0, idle, 100, false, 0)
			tw.switchTo(w.at+w.lat+10, 0, 100, idle, true, 0)
		}
		if got := tw.stats(100).M[metric.Latency]; got.Violations != 4 || got.Max != 900 {
			t.Errorf("violation_notices %v: latency violations %d max %d, want 4 and 900", on, got.Violations, got.Max)
		}
		var viols []uint64
		for _, n := range readNotices(t, rd) {
			switch n.Type {
			case NoticeNewMax:
				t.Errorf("violation_notices %v: a new-maximum notice (%d ns) without the flight recorder", on, n.Value)
			case NoticeSLOViolation:
				viols = append(viols, n.Value)
			}
		}
		want := []uint64{500, 700}
		if !on {
			want = nil
		}
		if !slices.Equal(viols, want) {
			t.Errorf("violation_notices %v: violation notices %v, want %v", on, viols, want)
		}
	}
}

// A stack of what keeps a woken task off its CPU is taken only once it has
// waited stack_min_wait_ns: since its timer's expiry for a timer release
// (a late timer interrupt counts), since its wakeup otherwise. An on-time
// release on a busy CPU takes none (the walk would delay the task).
func TestTwinStackOnlyAfterMinWait(t *testing.T) {
	const minWait = 100_000
	tw := newTwinStack(t, nil, minWait)
	due := func(now uint64, tid uint32) bool { return tw.run(tw.objs.TestStackDue, now, uint64(tid)) == 1 }

	tw.track(7, true, false)
	// Timer release: expiry 1_000_000, interrupt 10 us late, woken at 1_012_000.
	tw.timerWakeup(1_012_000, 0, 7, 1_000_000, 1_010_000)
	if due(1_012_000, 7) {
		t.Error("stack due at an on-time release (12 us after the expiry)")
	}
	if due(1_099_999, 7) {
		t.Error("stack due 1 ns before the minimum wait")
	}
	if !due(1_100_000, 7) {
		t.Error("no stack 100 us after the expiry")
	}

	// Late release: the interrupt came 150 us after the expiry.
	tw.track(8, true, false)
	tw.timerWakeup(2_160_000, 0, 8, 2_000_000, 2_150_000)
	if !due(2_160_000, 8) {
		t.Error("no stack at a release 160 us after the expiry")
	}

	// Plain wakeup: the wait starts at the wakeup.
	tw.track(9, true, false)
	tw.wakeup(3_000_000, 0, 9)
	if due(3_050_000, 9) {
		t.Error("stack due 50 us after a plain wakeup")
	}
	if !due(3_100_000, 9) {
		t.Error("no stack 100 us after a plain wakeup")
	}

	// stack_min_wait_ns 0: always, as before.
	tw0 := newTwinStack(t, nil, 0)
	tw0.track(7, true, false)
	tw0.timerWakeup(1_012_000, 0, 7, 1_000_000, 1_010_000)
	if tw0.run(tw0.objs.TestStackDue, 1_012_000, 7) != 1 {
		t.Error("stack_min_wait_ns 0: no stack at the release")
	}
}

// Steal is read at every context switch; an event is written only when it
// grew since the CPU's previous reading, saying how much and since when.
func TestTwinStealOnlyWhenItGrows(t *testing.T) {
	spec, err := loadTwinVariant()
	if err != nil {
		t.Fatal(err)
	}
	const slots = 64
	if err := spec.Variables["trace_enabled"].Set(true); err != nil {
		t.Fatal(err)
	}
	if err := spec.Variables["flight_per_cpu"].Set(uint32(slots)); err != nil {
		t.Fatal(err)
	}
	spec.Maps["flight"].MaxEntries = slots
	var objs twinObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		t.Fatalf("loading twins: %v", err)
	}
	defer objs.Close()
	// The per-CPU state must be one CPU's: run every program on CPU 0.
	run := func(now, steal uint64) {
		t.Helper()
		if _, err := objs.TestSteal.Run(&ebpf.RunOptions{Context: []uint64{now, steal}, CPU: 0, Flags: 1 /* BPF_F_TEST_RUN_ON_CPU */}); err != nil {
			t.Fatalf("test run: %v", err)
		}
	}
	run(1_000, 7_000)      // first reading: a baseline, no event
	run(2_000, 7_000)      // unchanged
	run(3_000, 12_000)     // +5000 since 2000
	run(4_000, 12_000)     // unchanged
	run(9_000, 4_000_000)  // +3988000 since 4000
	run(10_000, 4_000_000) // unchanged
	var got []Event
	for i := uint32(0); i < slots; i++ {
		var e Event
		if err := objs.Flight.Lookup(i, &e); err != nil {
			t.Fatal(err)
		}
		if e.Type != 0 {
			got = append(got, e)
		}
	}
	type steal struct{ ts, ns, since uint64 }
	want := []steal{{3_000, 5_000, 2_000}, {9_000, 3_988_000, 4_000}}
	if len(got) != len(want) {
		t.Fatalf("%d flight events, want %d steal events: %+v", len(got), len(want), got)
	}
	for i, e := range got {
		s := steal{e.Ts, EventX(&e), EventY(&e)}
		if e.Type != 16 /* RTS_EV_STEAL */ || s != want[i] {
			t.Errorf("event %d: type %d %+v, want steal %+v", i, e.Type, s, want[i])
		}
	}
}

// Every violation is noticed for explanation, not only new maxima, at most
// one a millisecond per task (RTS_VIOL_NOTICE_GAP_NS); a new maximum over
// the SLO carries the violated flag.
func TestTwinSLOViolationNotices(t *testing.T) {
	tw := newTwin(t, map[metric.ID]uint64{metric.Latency: 400})
	rd := noticeReader(t, tw)
	tw.track(100, true, false)
	for _, s := range []struct{ base, lat uint64 }{
		{1_000_000, 500}, // new max, over: NEW_MAX flagged
		{1_500_000, 450}, // over, 0.5 ms after the last notice: counted only
		{2_100_000, 450}, // over, 1.1 ms after: SLO_VIOLATION
		{4_000_000, 300}, // under
		{4_500_000, 420}, // over: SLO_VIOLATION
	} {
		tw.wakeup(s.base, 0, 100)
		tw.switchTo(s.base+s.lat, 0, idle, 100, false, 0)
		tw.switchTo(s.base+s.lat+10, 0, 100, idle, true, 0)
	}
	if v := tw.stats(100).M[metric.Latency].Violations; v != 4 {
		t.Errorf("%d violations counted, want 4", v)
	}
	type got struct {
		typ   uint32
		value uint64
		end   uint64
		flags uint32
	}
	var ns []got
	for _, n := range readNotices(t, rd) {
		if n.Metric == uint32(metric.Latency) && (n.Type == NoticeNewMax || n.Type == NoticeSLOViolation) {
			ns = append(ns, got{n.Type, n.Value, n.End, n.Flags})
		}
	}
	want := []got{{NoticeNewMax, 500, 1_000_500, NoticeFlagSLOViolated},
		{NoticeSLOViolation, 450, 2_100_450, NoticeFlagSLOViolated},
		{NoticeSLOViolation, 420, 4_500_420, NoticeFlagSLOViolated}}
	if len(ns) != len(want) {
		t.Fatalf("notices %+v, want %+v", ns, want)
	}
	for i := range want {
		if ns[i] != want[i] {
			t.Errorf("notice %d: %+v, want %+v", i, ns[i], want[i])
		}
	}
}

// noticeReader reads the twin's notice ring; closed at the end of the test.
func noticeReader(t *testing.T, tw *twin) *ringbuf.Reader {
	t.Helper()
	rd, err := ringbuf.NewReader(tw.objs.Notices)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return rd
}

// TestTwinReapplySLO: changed bounds reach the tasks tracked already (by
// tid, by pid, the run-time default at key 0), their counts and
// violations so far kept, and later samples are judged by the new bounds.
func TestTwinReapplySLO(t *testing.T) {
	tw := newTwin(t, map[metric.ID]uint64{metric.Latency: 100})
	sample := func(tid uint32, base, lat uint64) {
		tw.wakeup(base, 0, tid)
		tw.switchTo(base+lat, 0, idle, tid, false, 0)
		tw.switchTo(base+lat+10, 0, tid, idle, true, 0)
	}
	// tids 10 and 11 are threads of process 10; 12 and 13 processes of their own.
	for _, tp := range [][2]uint32{{10, 10}, {11, 10}, {12, 12}, {13, 13}} {
		if ret := tw.run(tw.objs.TestTrack, uint64(tp[0]), uint64(tp[1]), 1, 0); ret != 0 {
			t.Fatalf("track %d: %d", tp[0], int32(ret))
		}
	}
	sample(10, 10000, 500) // over the load-time default of 100
	put := func(id uint32, lat uint64) {
		var b [metric.Count]uint64
		b[metric.Latency] = lat
		if err := tw.objs.SloById.Put(id, &bpfRtsSlo{Bound: b}); err != nil {
			t.Fatal(err)
		}
	}
	put(sloDefaultKey, 1000) // new default
	put(10, 200)             // pid 10
	put(12, 50)              // tid 12
	if n := tw.run(tw.objs.TestReapplySlo, 0); n != 4 {
		t.Errorf("reapply visited %d tasks, want 4", n)
	}
	for tid, want := range map[uint32]uint64{10: 200, 11: 200, 12: 50, 13: 1000} {
		if got := tw.stats(tid).M[metric.Latency].Slo; got != want {
			t.Errorf("tid %d: latency SLO %d, want %d", tid, got, want)
		}
	}
	if got := tw.stats(10).M[metric.Latency]; got.Count != 1 || got.Violations != 1 {
		t.Errorf("tid 10 after reapply: count %d violations %d, want 1 1 (kept)", got.Count, got.Violations)
	}
	sample(10, 20000, 300) // over 200
	sample(13, 30000, 500) // under 1000, over the old 100
	if got := tw.stats(10).M[metric.Latency].Violations; got != 2 {
		t.Errorf("tid 10: %d violations, want 2", got)
	}
	if got := tw.stats(13).M[metric.Latency].Violations; got != 0 {
		t.Errorf("tid 13: %d violations, want 0 (new default 1000)", got)
	}
	// A task tracked after the change gets the run-time default.
	tw.track(14, true, false)
	if got := tw.stats(14).M[metric.Latency].Slo; got != 1000 {
		t.Errorf("tid 14 tracked after the change: SLO %d, want 1000", got)
	}
}

// TestTwinHistogramCarry: a sample goes to its bucket, and a bucket
// counts exactly past 65535: the kernel's 16-bit bucket wraps and sends its
// carry as a notice, which user space adds back (histCarries), so the
// histogram still sums to the count (Prometheus's _count). 16-bit buckets
// halved together when one filled made every later sample count twice.
func TestTwinHistogramCarry(t *testing.T) {
	tw := newTwin(t, nil)
	rd := noticeReader(t, tw)
	tw.track(100, true, false)
	id := tw.id(100)
	b := metric.Bucket(700)
	// As if 65534 samples of 700 ns had been counted.
	k := tw.kernelStats(id)
	k.M[metric.Latency].Count, k.M[metric.Latency].Max = 0xfffe, 700
	k.M[metric.Latency].Hist[b] = 0xfffe
	if err := tw.objs.Stats.Put(id, k); err != nil {
		t.Fatal(err)
	}
	for i := range uint64(3) {
		base := 10000 + i*10000
		tw.wakeup(base, 0, 100)
		tw.switchTo(base+700, 0, idle, 100, false, 0)
		tw.switchTo(base+900, 0, 100, idle, true, 0)
	}
	k = tw.kernelStats(id)
	if lo := k.M[metric.Latency].Hist[b]; lo != 1 {
		t.Errorf("kernel bucket %d, want 1 (65537 wrapped)", lo)
	}
	carries := histCarries{}
	if _, pending := carries.join(k); !pending {
		t.Error("joined without its carry: not pending")
	}
	for _, n := range readNotices(t, rd) {
		if n.Type == noticeHistCarry {
			if n.Id != id || n.Metric != uint32(metric.Latency) || n.Value != uint64(b) {
				t.Errorf("carry notice %+v, want id %d metric %d bucket %d", n, id, metric.Latency, b)
			}
			carries.add(&n)
		}
	}
	s, pending := carries.join(k)
	got := s.M[metric.Latency]
	if pending || got.Count != 0x10001 || got.Hist[b] != 0x10001 || got.HistLost != 0 {
		t.Errorf("pending %v, count %d, bucket of 700 ns %d, lost %d; want false, 65537, 65537, 0",
			pending, got.Count, got.Hist[b], got.HistLost)
	}
}

// TestTwinStatsTakesCarries: the engine's Stats takes a carry the
// kernel queued (a wrap the twin made) and joins it, while Notices hands on
// every other notice and not the carry.
func TestTwinStatsTakesCarries(t *testing.T) {
	tw := newTwin(t, nil)
	e := &Engine{back: btfBackend{}, carries: histCarries{}, notices: noticeReader(t, tw)}
	e.objs.Stats = tw.objs.Stats
	tw.track(100, true, false)
	id := tw.id(100)
	b := metric.Bucket(700)
	k := tw.kernelStats(id)
	k.M[metric.Latency].Count, k.M[metric.Latency].Max = 0xffff, 700
	k.M[metric.Latency].Hist[b] = 0xffff
	if err := tw.objs.Stats.Put(id, k); err != nil {
		t.Fatal(err)
	}
	tw.wakeup(10000, 0, 100)
	tw.switchTo(10700, 0, idle, 100, false, 0) // 700 ns, held
	tw.switchTo(10800, 0, 100, idle, false, 0) // preempted, settled: the bucket wraps
	s, err := e.Stats(id)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.M[metric.Latency]; got.Count != 0x10000 || got.Hist[b] != 0x10000 {
		t.Errorf("count %d, bucket of 700 ns %d; want 65536 and 65536", got.Count, got.Hist[b])
	}
	ns, err := e.Notices(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var types []uint32
	for _, n := range ns {
		types = append(types, n.Type)
	}
	if !slices.Equal(types, []uint32{NoticeTaskStart}) {
		t.Errorf("notices of types %v, want only the task start %d (no carry)", types, NoticeTaskStart)
	}
}

// TestTwinHoldNotices: a poll that holds the notices between its windows
// (Engine.HoldNotices) loses none of a burst three times what the ring
// holds, and the next Notices hands them on in the kernel's order.
func TestTwinHoldNotices(t *testing.T) {
	// One new maximum of latency an iteration (and others of the metrics
	// it drives): without a reader, the ring is full after capacity of them.
	newMax := func(tw *twin, i uint64) {
		base := 10000 + i*10000
		tw.wakeup(base, 0, 100)
		tw.switchTo(base+2000+i, 0, idle, 100, false, 0)
		tw.switchTo(base+5000, 0, 100, idle, true, 0)
	}
	full := newTwin(t, nil)
	full.track(100, true, false)
	capacity := uint64(0)
	for ; full.noticesLost() == 0; capacity++ {
		if capacity == 10000 {
			t.Fatal("10000 new maxima and no notice lost")
		}
		newMax(full, capacity)
	}

	tw := newTwin(t, nil)
	e := &Engine{back: btfBackend{}, carries: histCarries{}, notices: noticeReader(t, tw)}
	tw.track(100, true, false)
	for i := range 3 * capacity {
		if i%(capacity/4) == 0 {
			if err := e.HoldNotices(); err != nil {
				t.Fatal(err)
			}
		}
		newMax(tw, i)
	}
	if n := tw.noticesLost(); n != 0 {
		t.Fatalf("%d notices lost with the ring held every %d maxima", n, capacity/4)
	}
	ns, err := e.Notices(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var latency []uint64
	for _, n := range ns {
		if n.Type == NoticeNewMax && metric.ID(n.Metric) == metric.Latency {
			latency = append(latency, n.Value)
		}
	}
	if uint64(len(latency)) != 3*capacity || !slices.IsSorted(latency) || latency[0] == latency[len(latency)-1] {
		t.Errorf("%d new latency maxima handed on (want %d, rising)", len(latency), 3*capacity)
	}
}

// TestTwinHistogramCarryLost: a carry the full notice ring cannot take is
// counted (the metric's hist_lost, and a lost notice), so user space knows
// how many samples its histogram misses instead of waiting for the carry.
func TestTwinHistogramCarryLost(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, true, false)
	id := tw.id(100)
	// Fill the ring with new maxima (no reader), until one is lost.
	lost := tw.noticesLost
	var base uint64
	for i := uint64(0); lost() == 0; i++ {
		if i == 10000 {
			t.Fatal("10000 new maxima and no notice lost")
		}
		base = 10000 + i*10000
		tw.wakeup(base, 0, 100)
		tw.switchTo(base+2000+i, 0, idle, 100, false, 0)
		tw.switchTo(base+5000, 0, 100, idle, true, 0)
	}
	before := lost()
	b := metric.Bucket(700)
	k := tw.kernelStats(id)
	k.M[metric.Latency].Count += 0xffff
	k.M[metric.Latency].Hist[b] = 0xffff
	if err := tw.objs.Stats.Put(id, k); err != nil {
		t.Fatal(err)
	}
	base += 10000
	tw.wakeup(base, 0, 100)
	tw.switchTo(base+700, 0, idle, 100, false, 0)
	k = tw.kernelStats(id)
	if k.M[metric.Latency].HistLost != 1 || lost() != before+1 {
		t.Errorf("hist_lost %d, lost notices %d more; want 1 and 1", k.M[metric.Latency].HistLost, lost()-before)
	}
	s, pending := histCarries{}.join(k)
	got := s.M[metric.Latency]
	var total uint64
	for _, c := range got.Hist {
		total += uint64(c)
	}
	if pending || got.HistLost != 0x10000 || total+got.HistLost != got.Count {
		t.Errorf("pending %v, lost %d, histogram %d + lost != count %d", pending, got.HistLost, total, got.Count)
	}
}

// readNotices drains the notices queued in rd.
func readNotices(t *testing.T, rd *ringbuf.Reader) []Notice {
	t.Helper()
	var out []Notice
	rd.SetDeadline(time.Now())
	for {
		rec, err := rd.Read()
		if err != nil {
			return out
		}
		out = append(out, *(*Notice)(unsafePointer(rec.RawSample)))
	}
}

// A lower-priority waker of a task asleep on a PI lock is the lock's owner
// handing it over: not counted; after a sleep on a plain futex (a condition
// variable, a semaphore: a producer) it is.
func TestTwinLowerPrioWakerOfLockWaiter(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, true, false)
	if ret := tw.run(tw.objs.TestLockSleep, 100, 1); ret != 0 {
		t.Fatalf("lock sleep: %d", int32(ret))
	}
	tw.lowerWakeup(1000, 0, 100) // the PI lock handed over: not counted
	tw.switchTo(1500, 0, 0, 100, false, 0)
	tw.switchTo(2000, 0, 100, 0, true, 0)
	if ret := tw.run(tw.objs.TestLockSleep, 100, 0); ret != 0 {
		t.Fatalf("lock sleep: %d", int32(ret))
	}
	tw.lowerWakeup(2500, 0, 100) // a producer's wakeup: counted
	s := tw.stats(100)
	if got := s.Hygiene[bpfRtsHygieneRTS_H_LOWER_PRIO_WAKER]; got != 1 {
		t.Errorf("lower-priority wakers: %d, want 1 (the plain futex's)", got)
	}
	if s.Wakeups != 2 {
		t.Errorf("wakeups: %d, want 2", s.Wakeups)
	}
}

// A lower-priority waker is counted whatever the state of the woken task
// (asleep, running, already runnable), once per wakeup; only the wakeup of a
// sleeping task is a latency window.
func TestTwinLowerPrioWaker(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, true, false)
	tw.lowerWakeup(1000, 0, 100)           // asleep: a window opens
	tw.switchTo(1500, 0, 0, 100, false, 0) // on CPU
	tw.lowerWakeup(1600, 0, 100)           // running: counted, no window
	tw.switchTo(2000, 0, 100, 0, false, 0) // preempted
	tw.lowerWakeup(2100, 0, 100)           // runnable: counted, no window
	tw.wakeup(2200, 0, 100)                // an equal or higher waker: not counted
	s := tw.stats(100)
	if got := s.Hygiene[bpfRtsHygieneRTS_H_LOWER_PRIO_WAKER]; got != 3 {
		t.Errorf("lower-priority wakers: %d, want 3", got)
	}
	if s.Wakeups != 1 {
		t.Errorf("wakeups: %d, want 1", s.Wakeups)
	}
	expect(t, s, metric.Latency, 1, 500, 500)
}

// A blocking sleep is walked (reason, stack) only where an analysis can use
// it: every sleep of a real-time task; for another task, once a timer
// released it or it armed its own sleeper timer, at most one sleep a ms; a
// SCHED_OTHER task woken by other tasks only, never.
func TestTwinSleepNamed(t *testing.T) {
	tw := newTwin(t, nil)
	named := func(tid uint32, prio int64, now uint64) bool {
		t.Helper()
		r := int32(tw.run(tw.objs.TestSleepNamed, uint64(tid), uint64(prio), now))
		if r < 0 {
			t.Fatalf("task %d not tracked", tid)
		}
		return r == 1
	}
	// 100: SCHED_OTHER (prio 120), woken by tasks only.
	tw.track(100, true, false)
	tw.wakeup(1000, 0, 100)
	tw.switchTo(1100, 0, 0, 100, false, 0)
	if named(100, 120, 2_000_000) {
		t.Error("SCHED_OTHER task woken by tasks only: walked")
	}
	// Real-time or deadline: every sleep.
	if !named(100, 49, 3_000_000) || !named(100, 49, 3_000_100) || !named(100, -1, 3_000_200) {
		t.Error("real-time or deadline task: a sleep not walked")
	}
	tw.switchTo(5_000_000, 0, 100, 0, true, 0)
	tw.timerWakeup(6_000_000, 0, 100, 5_999_990, 5_999_995) // a timer release starts its cycles
	tw.switchTo(6_000_100, 0, 0, 100, false, 0)
	if !named(100, 120, 6_000_200) {
		t.Error("SCHED_OTHER task released by a timer: not walked")
	}
	if named(100, 120, 6_500_000) {
		t.Error("SCHED_OTHER task: two sleeps walked within a ms")
	}
	if !named(100, 120, 7_100_000) {
		t.Error("SCHED_OTHER task released by a timer: not walked a ms later")
	}
	// 200: SCHED_OTHER, arms its own sleeper timer (an iteration starts).
	tw.track(200, false, false)
	if named(200, 120, 2_000_000) {
		t.Error("new SCHED_OTHER task: walked")
	}
	tw.arm(3_000_000, 0, 200, 4_000_000, 4_000_000)
	if !named(200, 120, 3_500_000) {
		t.Error("SCHED_OTHER task arming its sleeper timer: not walked")
	}
}

// A tracked task's way to its CPU touches its own state alone: its
// wakeup, the samples taken there (timer release, switch-in, return to
// user space) and their counts are held until it leaves the CPU
// (rts_settle), where its stats are looked up anyway, whether it blocks
// or is preempted. Its exit, and the end of a run (settle_held), settle
// what it still holds. Each is counted once.
func TestTwinHeldUntilSwitchOut(t *testing.T) {
	tw := newTwinWith(t, nil, noStartUp)
	tw.track(100, true, false)
	id := tw.id(100)
	held := func(when string, wakeups, releases, latency, irq, user uint64) {
		t.Helper()
		s, _ := histCarries{}.join(tw.heldStats(id))
		got := [5]uint64{s.Wakeups, s.TimerReleases, s.M[metric.Latency].Count, s.M[metric.TimerIRQ].Count, s.M[metric.TimerUser].Count}
		if want := [5]uint64{wakeups, releases, latency, irq, user}; got != want {
			t.Errorf("%s: wakeups, releases, latency, irq and user samples in its stats %v, want %v", when, got, want)
		}
	}
	tw.timerWakeup(1000, 0, 100, 990, 995)
	tw.switchTo(1500, 0, idle, 100, false, 0)
	tw.run(tw.objs.TestUserReturn, 1600, 0, 100)
	held("released, on its CPU", 0, 0, 0, 0, 0)
	tw.switchTo(2000, 0, 100, idle, true, 0)
	held("blocked", 1, 1, 1, 1, 1)
	tw.wakeup(3000, 0, 100) // by a task
	tw.switchTo(3500, 0, idle, 100, false, 0)
	held("woken, on its CPU", 1, 1, 1, 1, 1)
	tw.switchTo(3700, 0, 100, 200, false, 0)
	held("preempted", 2, 1, 2, 1, 1)
	tw.switchTo(3800, 0, 200, 100, false, 0) // back: not a wakeup
	tw.switchTo(4000, 0, 100, idle, true, 0)
	held("blocked again", 2, 1, 2, 1, 1)
	tw.timerWakeup(5000, 0, 100, 4990, 4995)
	tw.switchTo(5100, 0, idle, 100, false, 0)
	held("released again, on its CPU at the end of the run", 2, 1, 2, 1, 1)
	s := tw.stats(100) // settles every task, as settle_held
	expect(t, s, metric.Latency, 3, 100, 500)
	expect(t, s, metric.TimerIRQ, 2, 5, 5)
	expect(t, s, metric.TimerThread, 2, 110, 510)
	expect(t, s, metric.Cycle, 1, 3000, 3000)  // 4000 - 1000
	expect(t, s, metric.Period, 1, 4000, 4000) // 5000 - 1000
	expect(t, s, metric.Response, 2, 1000, 1000)
	if s.Wakeups != 3 || s.TimerReleases != 2 {
		t.Errorf("settled: wakeups %d releases %d, want 3 2", s.Wakeups, s.TimerReleases)
	}
	tw.switchTo(5500, 0, 100, idle, true, 0)
	tw.wakeup(6000, 0, 100) // woken, then exits before it runs
	tw.run(tw.objs.TestExit, 100)
	held("exited", 4, 2, 3, 2, 1)
}

// A woken task is marked waiting on its CPU's state, and the mark cleared
// when it runs or waits elsewhere: through this CPU's state when the hook
// has it at hand and the CPU is this one, through another CPU's slot
// (bpf_map_lookup_percpu_elem) otherwise; either way one CPU holds the mark.
func TestTwinWaitingMark(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, true, false)
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	other := uint64(min(1, ncpu-1))
	on := func(cpu, want uint64, here, clear bool) {
		t.Helper()
		ret, err := tw.objs.TestWaiting.Run(&ebpf.RunOptions{Context: []uint64{100, want, b2u(here), b2u(clear)},
			CPU: uint32(cpu), Flags: 1 /* BPF_F_TEST_RUN_ON_CPU */})
		if err != nil {
			t.Fatal(err)
		}
		var per []twinRtsCpuState
		if err := tw.objs.Cpus.Lookup(uint32(0), &per); err != nil {
			t.Fatal(err)
		}
		marked := -1
		for c, s := range per {
			if s.WaitingTid == 100 {
				if marked >= 0 {
					t.Fatalf("marked on CPUs %d and %d", marked, c)
				}
				marked = c
			}
		}
		if int32(ret) != int32(marked) {
			t.Fatalf("task says CPU %d, CPU states say %d", int32(ret), marked)
		}
		if wantCPU := int(want); !clear && marked != wantCPU {
			t.Fatalf("mark for CPU %d from CPU %d (here %v): on %d", want, cpu, here, marked)
		}
		if clear && marked != -1 {
			t.Fatalf("cleared from CPU %d (here %v): still on %d", cpu, here, marked)
		}
	}
	on(0, other, true, false) // woken on CPU 0 for the other CPU
	on(0, 0, true, false)     // migrated to CPU 0: the other CPU's mark goes
	on(0, 0, true, true)      // runs on CPU 0
	on(0, other, false, false)
	on(other, 0, true, false)
	on(0, 0, false, true) // cleared without CPU 0's state at hand
	on(0, 0, true, false)
	on(other, 0, true, true) // runs elsewhere: CPU 0's slot is cleared by lookup
}

// TestTwinTrackPublishesLast: a task's statistics entry is created
// unpublished (id 0), and its start is not noticed, until
// rts_track_publish, which the engines call once its identity is written:
// user space read a tracked task without a name in between
// (TestTrackedAtRenameByNewName, in CI).
func TestTwinTrackPublishesLast(t *testing.T) {
	tw := newTwin(t, nil)
	rd := noticeReader(t, tw)
	if ret := tw.run(tw.objs.TestTrackUnpublished, 100, 100); ret != 0 {
		t.Fatalf("track_init: %d", int32(ret))
	}
	id := tw.id(100)
	k := tw.kernelStats(id)
	if k.Id != 0 || k.Tid != 100 {
		t.Errorf("before publishing: entry %d has id %d tid %d, want id 0 tid 100", id, k.Id, k.Tid)
	}
	if ns := readNotices(t, rd); len(ns) != 0 {
		t.Errorf("before publishing: notices %+v, want none", ns)
	}
	if ret := tw.run(tw.objs.TestTrackPublish, 100); ret != 0 {
		t.Fatalf("publish: %d", int32(ret))
	}
	if k := tw.kernelStats(id); k.Id != id {
		t.Errorf("published entry %d has id %d", id, k.Id)
	}
	ns := readNotices(t, rd)
	if len(ns) != 1 || ns[0].Type != NoticeTaskStart || ns[0].Id != id || ns[0].Tid != 100 {
		t.Errorf("published: notices %+v, want one task start of id %d tid 100", ns, id)
	}
}
