package analysis

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/trace"
)

// vmSubject is the subject of t on this project's VM: an idle exit bound
// of 500 us, no SMI counter.
func vmSubject(t th, metric string) Subject {
	s := subject(t, metric)
	s.IdleExitNs, s.IdleExitWhy = 500_000, "a virtual machine"
	return s
}

// An idle gap above the machine's idle exit bound is never an exit from
// idle: what was seen in it is listed, and the rest is said to be
// unexplained; below the bound it is one. The first case is pi_stress's: a
// FIFO task woken onto an idle CPU ran 49943 us later (RT throttling).
func TestIdleExitBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tr    *trace.Trace
		s     Subject
		cause Cause
		words []string
	}{{
		name: "pi_stress: runnable on an idle CPU for 49943 us",
		tr: window("latency", taskH, us1(49943),
			sw(us1(-100), 1, taskH, "S", idle),
			wakeBy(0, 1, taskH, taskL),
			sw(us1(49943), 1, idle, "R", taskH)),
		s:     vmSubject(taskH, "latency"),
		cause: CauseUnexplained,
		words: []string{"not an exit from idle", "CPU 1 was idle and took 49943.0 us to run the task after its wakeup",
			"idle exit bound of 500.0 us (a virtual machine)", "no steal or other cause recorded", "no SMI counter",
			"the remaining 49943.0 us is unexplained"},
	}, {
		name: "a late timer interrupt on an idle CPU, part of it steal",
		tr: func() *trace.Trace {
			tr := window("timer-irq", control, us1(3200),
				sw(us1(-800), 1, control, "S", idle),
				stealEv(us1(3200), 1, uint64(us1(1200)), us1(-800)),
				timerIn(us1(3200), 1, "hrtimer_wakeup", 0))
			tr.StealClock = true
			return tr
		}(),
		s:     vmSubject(control, "timer-irq"),
		cause: CauseUnexplained,
		words: []string{"not an exit from idle", "its interrupt came 3200.0 us past the timer's range",
			"hypervisor steal 1200.0 us", "the remaining 2000.0 us is unexplained"},
	}, {
		name: "the same, below the bound",
		tr: window("timer-irq", control, us1(300),
			sw(us1(-800), 1, control, "S", idle),
			timerIn(us1(300), 1, "hrtimer_wakeup", 0)),
		s:     vmSubject(control, "timer-irq"),
		cause: CauseExitFromIdle,
		words: []string{"exit from idle", "within this machine's idle exit bound of 500.0 us"},
	}, {
		name: "no bound read: 1 ms, no idle state takes milliseconds",
		tr: window("timer-irq", control, us1(1500),
			sw(us1(-800), 1, control, "S", idle),
			timerIn(us1(1500), 1, "hrtimer_wakeup", 0)),
		s:     subject(control, "timer-irq"),
		cause: CauseUnexplained,
		words: []string{"not an exit from idle", "idle exit bound of 1000.0 us (no idle state takes milliseconds to leave)"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := explain(tc.tr, tc.s, "none")
			checkSums(t, r)
			wantCause(t, r, tc.cause, tc.words...)
			if tc.cause != CauseExitFromIdle && strings.HasPrefix(r.Verdict, "exit from idle") {
				t.Errorf("an exit from idle above the bound: %s", r.Verdict)
			}
		})
	}
}

// A cause a gapCauses hook sees covering most of the gap is the cause (RT
// throttling will be one); an SMI counter is said to be there.
func TestIdleGapHook(t *testing.T) {
	saved := gapCauses
	t.Cleanup(func() { gapCauses = saved })
	gapCauses = append(gapCauses, func(res *Result, _ *timelines, cpu int, phase Phase) gapPart {
		if cpu != 1 || phase != PhaseRunnable {
			return gapPart{}
		}
		return gapPart{what: "RT throttling", ns: uint64(us1(49000)), cause: CauseBlocking}
	})
	tr := window("latency", taskH, us1(49943),
		sw(us1(-100), 1, taskH, "S", idle),
		wakeBy(0, 1, taskH, taskL),
		sw(us1(49943), 1, idle, "R", taskH))
	s := vmSubject(taskH, "latency")
	s.SMICounter = true
	r := explain(tr, s, "none")
	checkSums(t, r)
	wantCause(t, r, CauseBlocking, "not an exit from idle", "RT throttling 49000.0 us", "msr/smi", "the remaining 943.0 us is unexplained")
	if r.Culprit != "RT throttling" {
		t.Errorf("culprit %q, want the hook's", r.Culprit)
	}
}

// A CPU that did not run (a late interrupt while user space ran) says
// whether an SMI could be counted, instead of naming firmware blindly.
func TestPlatformStallSaysSMICounter(t *testing.T) {
	tr := interruptsOffTrace(false, stack(us1(3354), 1, other, control))
	s := vmSubject(control, "timer-thread")
	r := explain(tr, s, "none")
	wantCause(t, r, CauseCPUUnavailable, "CPU 1 was not running", "this machine exposes no SMI counter (msr/smi)")
	s.SMICounter = true
	r = explain(tr, s, "none")
	wantCause(t, r, CauseCPUUnavailable, "CPU 1 was not running", "count them with perf's msr/smi event")
}

// A short period that started late on an idle CPU above the bound is not
// an exit from idle either, in its verdict and in its release's words.
func TestIdleAboveBoundShortPeriod(t *testing.T) {
	tr := window("jitter", control, us1(741),
		sw(us1(-5000), 1, control, "S", idle),
		timerIn(us1(-2), 1, "hrtimer_wakeup", us1(-2267)),
		wakeTimer(0, 1, control, us1(-2267)),
		timerOut(us1(3), 1, "hrtimer_wakeup"),
		sw(us1(11), 1, idle, "R", control),
		sleep(us1(228), 1, control, "timer sleep (nanosleep)"),
		sw(us1(228), 1, control, "S", idle),
		timerIn(us1(740), 1, "hrtimer_wakeup", us1(733)),
		wakeTimer(us1(741), 1, control, us1(733)),
	)
	s := vmSubject(control, "jitter")
	s.NominalPeriod = uint64(us1(3000))
	r := explain(tr, s, "none")
	checkSums(t, r)
	wantCause(t, r, CauseUnexplained, "started late", "longer than this machine's idle exit bound of 500.0 us")
	var b strings.Builder
	r.WriteText(&b, "")
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, "timer release (start)") && !strings.Contains(line, "not an exit from idle") {
			t.Errorf("the opening release's words: %s", line)
		}
	}
}
