package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/cpuset"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/explain"
	"github.com/rtscope/rtscope/internal/inject"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/report/reporttest"
	"github.com/rtscope/rtscope/internal/slo"
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
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "scenario child:", err)
		return 1
	}
	s, err := Get(args[0])
	if err != nil {
		return fail(err)
	}
	var cfg Config
	fs, collect := s.Flags(&cfg)
	if err := fs.Parse(args[1:]); err != nil {
		return fail(err)
	}
	collect()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := s.Run(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	// The injector's own count, for the test that watched this child.
	if path := os.Getenv(resultEnv); path != "" && res.Injected != nil {
		b, _ := json.Marshal(res.Injected)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return fail(err)
		}
	}
	return 0
}

// resultEnv names the file where a child writes its injector's statistics.
const resultEnv = "RTSCOPE_SCENARIO_RESULT"

// watchInjector runs a scenario for 3 s under watch with SLOs, rtscope's
// own threads kept off the scenario's CPU (the last one), and returns the
// report of its threads by name and the injector's own statistics.
func watchInjector(t *testing.T, name string, slos []string, flags ...string) (map[string]*report.Task, *inject.Stats) {
	t.Helper()
	path := t.TempDir() + "/injected.json"
	t.Setenv(resultEnv, path)
	var bounds []slo.Bound
	for _, s := range slos {
		b, err := slo.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		bounds = append(bounds, b)
	}
	tasks := watchScenarioWith(t, name, func(o *watch.Options) {
		o.SLO = slo.Build(bounds)
		o.Explain = explain.ForViolation
		o.Analyze = explain.ForWatch()
		if cpus, err := cpuset.Online(); err == nil && len(cpus) > 1 {
			o.Housekeeping = cpus[:len(cpus)-1]
		}
	}, flags...)
	var inj inject.Stats
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the scenario child wrote no injector statistics: %v", err)
	}
	if err := json.Unmarshal(b, &inj); err != nil {
		t.Fatal(err)
	}
	t.Logf("injector: %d spins, shortest %s, longest %s", inj.Count, Us(int64(inj.Min)), Us(int64(inj.Max)))
	return tasks, &inj
}

// platformCauses are the causes of time the machine took, not the workload:
// on a shared VM they may join any injected fault's.
var platformCauses = map[string]bool{"hypervisor": true, "cpu-unavailable": true, "inconclusive": true}

// attributed checks the SLO violations of a metric against the number of
// injected faults: the kernel counted at least 90% of them as violations;
// at least 90% (85% emulated) of them (or of the violations analysed, when the analysis
// budget left some out) are attributed to the injector (cause, any if
// empty, and culprit naming it); none names the injector with another
// cause; and the rest are the platform's (steal, a CPU that did not run),
// inconclusive with their evidence, or at most 10% (15%) other tasks of a shared
// machine (a daemon's non-preemptible kernel section is a real delay).
//
// Under emulation a window that names the injector with another cause
// counts with the other tasks: the guest's timer callbacks run slowly
// there, and a PREEMPT_RT guest under TCG explained one of
// misconfigured-priority's as "hard-IRQ noise: timer callback
// hrtimer_wakeup waking background", which names the injector only as
// the callback's wakee.
func attributed(t *testing.T, m *report.Metric, spins uint64, cause, culprit string) error {
	t.Helper()
	v := m.ViolationCauses
	if v == nil {
		return fmt.Errorf("no SLO violations were explained (%d faults injected)", spins)
	}
	var hit, other, platform uint64
	var wrong []string
	for _, c := range v.Causes {
		t.Logf("  %d x %s: %s (e.g. %s)", c.Count, c.Cause, c.Culprit, c.Example.Verdict)
		switch {
		case (cause == "" || c.Cause == cause) && strings.Contains(c.Culprit, culprit):
			hit += c.Count
		case strings.Contains(c.Culprit, culprit) && !emulated:
			wrong = append(wrong, fmt.Sprintf("%d x %s: %s", c.Count, c.Cause, c.Culprit))
		case platformCauses[c.Cause]:
			platform += c.Count
		default:
			other += c.Count
		}
	}
	t.Logf("%d violations, %d explained, %d attributed to %s by %s, %d to other tasks, not explained: %v",
		v.Total, v.Analysed, hit, cause, culprit, other, v.NotAnalysed)
	if v.Total*10 < spins*9 {
		return fmt.Errorf("%d SLO violations for %d injected faults; want at least 90%% of them", v.Total, spins)
	}
	// What the platform took is excluded, not counted against the
	// injector: a PREEMPT_RT guest under TCG explained 57 violations
	// within the analysis budget, 49 the injector's and 3 a CPU that did
	// not run (49 of 54 = 91%, where 49 of 57 failed).
	//
	// Under emulation 85%: the guest kernel's own paths run slowly there,
	// and a few windows are rightly explained by them, not the platform.
	// A PREEMPT_RT guest under TCG attributed 53 of 59 (89.8%): 2 windows
	// its own hrtimer_wakeup "took" 994 us (just under the 1 ms that marks
	// a CPU not running), 2 exits from idle of 2.2-2.7 ms, 2 the monitor.
	pct := uint64(allow(90, 85))
	if want := min(spins, v.Analysed-platform); hit*100 < want*pct {
		return fmt.Errorf("%d of %d injected faults (%d violations explained, %d of them the platform's) attributed to %s by %s; want at least %d%%",
			hit, spins, v.Analysed, platform, cause, culprit, pct)
	}
	if len(wrong) > 0 {
		return fmt.Errorf("violations blame %s for another cause than %s: %v", culprit, cause, wrong)
	}
	if rest := 100 - pct; other*100 > v.Analysed*rest {
		return fmt.Errorf("%d of %d explained violations blame neither the injector nor the platform; want at most %d%%", other, v.Analysed, rest)
	}
	return nil
}

// watchScenario runs a scenario for 3 s (unless flags say --duration)
// under watch and returns the report of its threads by name.
func watchScenario(t *testing.T, name string, flags ...string) map[string]*report.Task {
	t.Helper()
	return watchScenarioWith(t, name, nil, flags...)
}

// watchScenarioWith is watchScenario with the watch options adjusted by
// opt; the process's affinity is restored after (housekeeping pins it).
func watchScenarioWith(t *testing.T, name string, opt func(*watch.Options), flags ...string) map[string]*report.Task {
	t.Helper()
	_, tasks := watchScenarioReport(t, name, opt, flags...)
	return tasks
}

// watchScenarioReport is watchScenarioWith with the whole report.
func watchScenarioReport(t *testing.T, name string, opt func(*watch.Options), flags ...string) (*report.Report, map[string]*report.Task) {
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
	argv := append([]string{exe, childArg, name}, flags...)
	if !slices.Contains(flags, "--duration") {
		argv = append(argv, "--duration", "3s")
	}
	o := watch.Options{
		Targets:  target.Spec{Command: argv},
		Duration: 20 * time.Second, // the child ends first
		Quiet:    true,
		Show:     s.Threads(),
		Out:      io.Discard,
		Engine:   testEngine,
	}
	if opt != nil {
		opt(&o)
	}
	var affinity unix.CPUSet
	if err := unix.SchedGetaffinity(0, &affinity); err != nil {
		t.Fatal(err)
	}
	rep, err := watch.Run(context.Background(), o)
	if perr := cpuset.PinProcess(&affinity, nil); perr != nil {
		t.Fatal(perr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if testEngine != "" && rep.Features.Engine != testEngine {
		t.Fatalf("watch ran the %s engine, not %s", rep.Features.Engine, testEngine)
	}
	// A child that failed (its error went to stderr) reports no threads:
	// say so rather than "did not report thread".
	if c := rep.Command; c != nil && (c.ExitStatus == nil || *c.ExitStatus != 0) {
		how := c.Signal
		if c.ExitStatus != nil {
			how = fmt.Sprintf("exit status %d", *c.ExitStatus)
		}
		t.Fatalf("the scenario child %s ended with %s (its error is printed above, after \"scenario child:\")", name, how)
	}
	reporttest.Check(t, rep)
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
			t.Fatalf("watch did not report thread %s of %s (got %v; lost %+v)", n, name, got, rep.Lost)
		}
	}
	return rep, tasks
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

// testEngine is the engine the signature tests watch with: the default
// (BTF where the kernel has it), or RTSCOPE_TEST_ENGINE (btf, classic) for
// the whole comparison of the engines' verdicts:
//
//	RTSCOPE_TEST_ENGINE=classic go test -count=1 -run TestSignature ./internal/scenario/
//
// TestClassicSignatures sets it for the scenarios whose causes tell the
// engines apart most.
var testEngine = os.Getenv("RTSCOPE_TEST_ENGINE")

// TestClassicSignatures runs the signature tests whose verdicts come from
// the flight recorder's evidence under the classic engine, which must find
// the same causes: interference by a higher-priority task
// (misconfigured-priority), an RT hog (rt-hog), hard-IRQ noise (irq-noise,
// told from softirq noise by the CPU's softirq state, not by the record's
// common header, which the kernel overwrites) and a
// non-preemptible section (preempt-off). Hidden and event-driven blocking
// and priority inversion are statistics, the same state machine in both
// engines (TestClassicEngineAgrees in tests/ compares those).
func TestClassicSignatures(t *testing.T) {
	prev := testEngine
	testEngine = engine.EngineClassic
	defer func() { testEngine = prev }()
	for name, test := range map[string]func(*testing.T){
		"misconfigured-priority": TestSignatureMisconfiguredPriority,
		"rt-hog":                 TestSignatureRTHog,
		"irq-noise":              TestSignatureIRQNoise,
		"preempt-off":            TestSignaturePreemptOff,
	} {
		t.Run(name, test)
	}
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

// twice runs a signature check and, when it fails, once more (twice more
// in an emulated guest): an unrelated task of a shared machine (a compiler,
// another tool starting up) can make a bigger latency than the scenario's,
// and take its worst window. Each failed attempt is logged with its reason.
func twice(t *testing.T, check func() error) {
	t.Helper()
	// An emulated guest gets a third attempt: under TCG a whole attempt can
	// fall into the emulator's stalls (a starved rt guest ran 168 of ~1000
	// control cycles in one, with a 705 ms stall), and the 33-scenarios run
	// in CI once failed an attempt twice after a guest restart.
	attempts := 2
	if emulated {
		attempts = 3
	}
	for i := 1; ; i++ {
		err := check()
		if err == nil {
			return
		}
		if i == attempts {
			t.Error(err)
			return
		}
		t.Logf("attempt %d of %d: %v; running again", i, attempts, err)
	}
}

func ns(p *uint64) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}

// Each 2 ms FIFO 90 burst, every 10 ms, starts just before a control
// deadline and delays that wakeup: one control wakeup in five is about 2 ms
// late, an SLO violation explained as interference by "background".
// The background task's 100 bursts a second are twice the analysis budget
// (watch.ViolationBudget), and a PREEMPT_RT guest under TCG explained only
// 40-72 of a 3 s run's 213-303 violations, 0-8 of them blaming other
// tasks: on 25-32 windows, 5 such made an attempt fail. Emulation runs 6 s
// for a sample twice as large.
func TestSignatureMisconfiguredPriority(t *testing.T) {
	secs := allow(3, 6)
	twice(t, func() error {
		tasks := watchScenarioWith(t, "misconfigured-priority", func(o *watch.Options) {
			b, _ := slo.Parse("latency=1ms")
			o.SLO = slo.Build([]slo.Bound{b})
			o.Explain = explain.ForViolation
		}, "--duration", fmt.Sprintf("%ds", secs))
		lat := metric(t, tasks["control"], "latency")
		// Percentiles and a lower bound on the maximum: a stall of the VM
		// only raises them.
		if ns(lat.MaxNs) < 1700*us || ns(lat.P90Ns) < 1200*us {
			return fmt.Errorf("control's wakeup latency p90 %s max %s; want about the 2 ms background burst", Us(ns(lat.P90Ns)), Us(ns(lat.MaxNs)))
		}
		// 100 bursts a second; at least two thirds of them counted
		// (start-up and the end of the run take some).
		return attributed(t, lat, uint64(200*secs/3), "interference", "background")
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
		// of the Go runtime would be one), so emulation allows 1%, and at
		// least 5: a slow guest ran only 375 events in one run, where 1%
		// would fail on 4 releases, a count seen with 1026 events.
		if cyc.Count > uint64(allow(0, max(int64(resp.Count/100), 5))) {
			return fmt.Errorf("the event-driven task has %d cycle samples for %d responses; it never sleeps on a timer", cyc.Count, resp.Count)
		}
		// One event: 1 ms; events piled up during a semaphore wait: more.
		if ns(resp.P50Ns) < 800*us || ns(resp.P50Ns) > allow(1600*us, 2500*us) || ns(resp.MaxNs) < 1800*us {
			return fmt.Errorf("event: response p50 %s max %s; want about 1 ms, longer after blocking", Us(ns(resp.P50Ns)), Us(ns(resp.MaxNs)))
		}
		return nil
	})
}

// Without priority inheritance, L's 2 ms critical section every 100 ms is
// preempted by M's 10 ms bursts while H waits for the mutex (about 20 ms):
// each of H's cycles over a 15 ms SLO is explained, and those of the plain
// mutex are priority inversions naming task-M; with --pi, none is. The SLO
// is above M's own 10 ms cycles: at 5 ms their violations (90 a second)
// took the analysis budget (50 a second, all tasks), and 12 of H's 30
// violations were explained. The verdicts hold
// whatever the machine's stalls do to the cycle times, where percentiles
// did not: in the PREEMPT_RT guest under TCG, the PI run's p99 reached 11-15
// ms (plain 22-24 ms) in three attempts of one run.
func TestSignaturePriorityInversion(t *testing.T) {
	withSLO := func(o *watch.Options) {
		b, _ := slo.Parse("cycle=15ms")
		o.SLO = slo.Build([]slo.Bound{b})
		o.Explain = explain.ForViolation
	}
	twice(t, func() error {
		plain := metric(t, watchScenarioWith(t, "priority-inversion", withSLO)["task-H"], "cycle")
		pi := metric(t, watchScenarioWith(t, "priority-inversion", withSLO, "--pi")["task-H"], "cycle")
		plainInv, plainViol := inversions(t, "plain", plain)
		piInv, _ := inversions(t, "PI", pi)
		// About 30 critical sections of L in 3 s, each an inversion (30 of
		// 30 natively); a stall only adds violations of other causes. Under
		// TCG, L gets the CPU less often and the reader falls behind: 7, 7,
		// 5, 10 and 6 inversions in five attempts of the PREEMPT_RT guest,
		// then 1 of 6 violations with 3 windows overwritten before they were
		// read ("inconclusive"). There, one inversion found, and none with
		// PI, is the signature.
		if want := uint64(allow(10, 1)); plainInv < want || ns(plain.MaxNs) < 9*ms {
			return fmt.Errorf("plain mutex: %d of H's %d cycle violations explained as priority inversion by task-M, max %s; want at least %d and about the 10 ms burst",
				plainInv, plainViol, Us(ns(plain.MaxNs)), want)
		}
		if piInv > 0 {
			return fmt.Errorf("PI mutex: %d of H's cycle violations explained as priority inversion; want none", piInv)
		}
		// Natively, the times tell the same: with PI, H waits at most L's 2
		// ms (an emulator's stalls stretch both runs' tails alike).
		if !emulated && (ns(pi.P99Ns) > 4*ms || ns(plain.P99Ns) < 2*ns(pi.P99Ns)) {
			return fmt.Errorf("H's cycle: plain p99 %s max %s, PI p99 %s max %s; want the plain one far longer",
				Us(ns(plain.P99Ns)), Us(ns(plain.MaxNs)), Us(ns(pi.P99Ns)), Us(ns(pi.MaxNs)))
		}
		return nil
	})
}

// inversions counts the violations of m explained as a priority inversion
// whose verdict names task-M (the middle priority), and all violations; it
// logs every cause.
func inversions(t *testing.T, run string, m *report.Metric) (inv, total uint64) {
	t.Helper()
	v := m.ViolationCauses
	if v == nil {
		return 0, 0
	}
	for _, c := range v.Causes {
		t.Logf("  %s: %d x %s: %s (e.g. %s)", run, c.Count, c.Cause, c.Culprit, c.Example.Verdict)
		if c.Cause == "priority-inversion" && strings.Contains(c.Example.Verdict, "task-M") {
			inv += c.Count
		}
	}
	t.Logf("%s: %d violations, %d explained, %d priority inversions by task-M, not explained: %v", run, v.Total, v.Analysed, inv, v.NotAnalysed)
	return inv, v.Total
}

// The hog's 6 ms bursts every 40 ms delay the victim's wakeups: its SLO
// violations are explained as the hog, or as the platform's.
func TestSignatureRTHog(t *testing.T) {
	twice(t, func() error {
		tasks := watchScenarioWith(t, "rt-hog", func(o *watch.Options) {
			b, _ := slo.Parse("latency=4ms")
			o.SLO = slo.Build([]slo.Bound{b})
			o.Explain = explain.ForViolation
		}, bigger["rt-hog"]...)
		lat := metric(t, tasks["victim"], "latency")
		// A lower bound on the maximum: a stall of the VM only raises it.
		if ns(lat.MaxNs) < 5*ms || ns(lat.P99Ns) < 2*ms {
			return fmt.Errorf("victim's latency p99 %s max %s; want about the 6 ms bursts", Us(ns(lat.P99Ns)), Us(ns(lat.MaxNs)))
		}
		// 75 bursts in 3 s: at least 30 of them found (the victim sleeps
		// through some), and nothing but the hog or the platform.
		return attributed(t, lat, 30, "", "hog")
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

// Each injected hard-IRQ spin delays one timer interrupt of the victim by
// most of the spin: every spin is one timer-irq SLO violation, explained as
// hard-IRQ noise by the injector's callback.
func TestSignatureIRQNoise(t *testing.T) {
	twice(t, func() error {
		tasks, inj := watchInjector(t, "irq-noise", []string{"timer-irq=4ms"}, bigger["irq-noise"]...)
		irq := metric(t, tasks["victim"], "timer-irq")
		if inj.Count < 10 {
			return fmt.Errorf("the injector spun %d times; want >= 10", inj.Count)
		}
		if spin := longHardIRQTimer(irq.Worst); spin < 5*ms && irq.Cause == "hardirq" {
			return fmt.Errorf("the worst timer-irq is hard-IRQ noise but its longest hard-IRQ callback is %s", Us(spin))
		}
		return attributed(t, irq, inj.Count, "hardirq", "irq-inject")
	})
}

// Each injected preemption-off spin delays one wakeup of the victim: woken
// on time, it waits for a SCHED_OTHER task that keeps the CPU, which only a
// non-preemptible section explains.
func TestSignaturePreemptOff(t *testing.T) {
	twice(t, func() error {
		tasks, inj := watchInjector(t, "preempt-off", []string{"latency=4ms"}, bigger["preempt-off"]...)
		lat := metric(t, tasks["victim"], "latency")
		if inj.Count < 10 {
			return fmt.Errorf("the injector spun %d times; want >= 10", inj.Count)
		}
		return attributed(t, lat, inj.Count, "non-preemptible", "preempt-inject")
	})
}

// The overrunning loop misses 6 deadlines in every 16 iterations, 4 of them
// by 3 ms of work against its 2 ms period, without a sleep in between:
// rtscope counts them from the armings of its timer, measures every
// iteration, and explains those over the SLO as the loop's own work.
func TestSignatureOverrunningLoop(t *testing.T) {
	twice(t, func() error {
		tasks := watchScenarioWith(t, "overrunning-loop", func(o *watch.Options) {
			b, _ := slo.Parse("iteration=2500us")
			o.SLO = slo.Build([]slo.Bound{b})
			o.Explain = explain.ForViolation
		})
		c := tasks["control"]
		it := metric(t, c, "iteration")
		n, over := it.Count, c.Counters.Overruns
		t.Logf("control: %d iterations, %d overruns, period %s", n, over, Us(ns(c.NominalPeriodNs)))
		// 3 s at 2 ms: 1500 iterations (the start and the end take a few).
		if n < 1000 {
			return fmt.Errorf("control: %d iterations in 3 s; want about 1500: the armings of a loop that never sleeps are iterations", n)
		}
		if ns(c.NominalPeriodNs) != 2*ms {
			return fmt.Errorf("control: nominal period %s, want 2000.0 us from its armed deadlines", Us(ns(c.NominalPeriodNs)))
		}
		// 6 of 16 deadlines are missed (37.5%): 4 by the heavy iterations,
		// 2 by the light ones that catch up. A stall of the VM adds a few.
		if over*100 < n*30 || over*100 > n*50 {
			return fmt.Errorf("control: %d overruns for %d iterations (%.1f%%); want about 37.5%%", over, n, float64(over)*100/float64(n))
		}
		// Half the iterations are light ones on time (the period); one in
		// four does 3 ms of work.
		if p50 := ns(it.P50Ns); p50 < 1800*us || p50 > allow(2200*us, 3000*us) || ns(it.P90Ns) < 2800*us {
			return fmt.Errorf("control: iteration p50 %s p90 %s; want about the 2 ms period and the 3 ms of work", Us(p50), Us(ns(it.P90Ns)))
		}
		v := it.ViolationCauses
		if v == nil || v.Total*100 < n*20 || v.Analysed < 20 {
			return fmt.Errorf("control: iteration violations %+v for %d iterations; want about 25%% (4 in 16), at least 20 explained", v, n)
		}
		var own, other uint64
		for _, cs := range v.Causes {
			t.Logf("  %d x %s: %s (e.g. %s)", cs.Count, cs.Cause, cs.Culprit, cs.Example.Verdict)
			switch {
			case cs.Cause == "overrun" && cs.Culprit == "own work":
				own += cs.Count
			case !platformCauses[cs.Cause]:
				other += cs.Count
			}
		}
		// The loop's own work, or the platform's stalls; at most 10% other
		// tasks of a shared machine.
		if own*10 < v.Analysed*8 || other*10 > v.Analysed {
			return fmt.Errorf("control: %d of %d explained violations are the loop's own overruns, %d other tasks; want at least 80%% and at most 10%%", own, v.Analysed, other)
		}
		return nil
	})
}
