package analysis

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/trace"
)

// timerSlackIn is a timer callback's entry whose engine knew its slack.
func timerSlackIn(t int64, cpu int, fn string, expiry int64, slack uint64) trace.Event {
	e := timerIn(t, cpu, fn, expiry)
	e.SlackNs = &slack
	return e
}

// audio is the SCHED_OTHER thread of an audio server, waiting in
// poll() with a 10 s timeout: the kernel grants that timeout 10 ms of slack.
var audio = th{140, "audio-poll", "OTHER nice 0", 120}

// notSlack fails when a verdict blames the platform or the idle exit.
func notPlatform(t *testing.T, r *Result) {
	t.Helper()
	for _, w := range []string{"hypervisor", "firmware", "SMI", "exit from idle", "not running"} {
		if strings.Contains(r.Verdict, w) {
			t.Errorf("verdict names %q: %s", w, r.Verdict)
		}
	}
	if r.Cause.Platform() || r.Cause == CauseExitFromIdle {
		t.Errorf("cause %s, want neither the platform nor exit from idle", r.Cause)
	}
}

// A timer that fired inside the range its arming granted it (soft expiry
// to hard expiry, plus the interrupt's own latency) is timer slack, with
// the allowance and the remedy, whatever the CPU did meanwhile: idle, a
// task in user space (read before as firmware), or the hypervisor.
func TestGrantedSlack(t *testing.T) {
	const poll = 10_000_000 // poll(10 s): 0.1% of the timeout
	withSlack := func(subj th, metric string, ns uint64) Subject {
		s := subject(subj, metric)
		s.TimerSlackNs = ns
		s.IdleExitNs, s.IdleExitWhy = 500_000, "a virtual machine"
		return s
	}
	for _, tc := range []struct {
		name  string
		tr    *trace.Trace
		steal bool
		s     Subject
		words []string
	}{{
		name: "poll on an idle CPU (was: the CPU itself was not running)",
		tr: window("timer-irq", audio, us1(9589.7),
			sw(us1(-800), 1, audio, "S", idle),
			timerSlackIn(us1(9589.7), 1, "hrtimer_wakeup", 0, poll)),
		s: withSlack(audio, "timer-irq", 50_000),
		words: []string{"timer slack (10000.0 us allowed)", "fired 9589.7 us after its soft expiry",
			"more than this thread's timer slack as read (50.0 us)", "poll/select/epoll", "real-time policy has no slack",
			"PR_SET_TIMERSLACK", "clock_nanosleep"},
	}, {
		name: "poll while a task ran in user space (was: firmware (SMI))",
		tr: window("timer-thread", audio, us1(9620),
			sw(us1(-800), 1, audio, "S", other),
			timerSlackIn(us1(9600), 1, "hrtimer_wakeup", 0, poll),
			wakeTimer(us1(9605), 1, audio, 0),
			stack(us1(9605), 1, other, audio),
			timerOut(us1(9607), 1, "hrtimer_wakeup"),
			sw(us1(9620), 1, other, "R+", audio)),
		steal: true,
		s:     withSlack(audio, "timer-thread", 50_000),
		words: []string{"timer slack (10000.0 us allowed)", "fired 9600.0 us after its soft expiry"},
	}, {
		name: "steal inside the range",
		tr: window("timer-irq", audio, us1(9900),
			sw(us1(-800), 1, audio, "S", idle),
			stealEv(us1(9900), 1, uint64(us1(6000)), us1(-800)),
			timerSlackIn(us1(9900), 1, "hrtimer_wakeup", 0, poll)),
		steal: true,
		s:     withSlack(audio, "timer-irq", 50_000),
		words: []string{"timer slack (10000.0 us allowed)"},
	}, {
		name: "nanosleep with a large timer slack, past the hard expiry by the interrupt's latency",
		tr: window("timer-irq", audio, us1(5040),
			sw(us1(-800), 1, audio, "S", idle),
			timerSlackIn(us1(5040), 1, "hrtimer_wakeup", 0, 5_000_000)),
		s: withSlack(audio, "timer-irq", 5_000_000),
		words: []string{"timer slack (5000.0 us allowed)", "the last 40.0 us, past its hard expiry, the interrupt's own latency",
			"this OTHER nice 0 thread's timer slack"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.tr.StealClock = tc.steal
			r := explain(tc.tr, tc.s, "none")
			checkSums(t, r)
			wantCause(t, r, CauseRelease, tc.words...)
			notPlatform(t, r)
			if r.Culprit != "timer slack" {
				t.Errorf("culprit %q, want timer slack", r.Culprit)
			}
			if len(r.Releases) != 1 || r.Releases[0].SlackNs == nil {
				t.Errorf("releases %+v: want one, with its slack", r.Releases)
			}
		})
	}
}

// A timer with no slack (a real-time task's), or one that fired well past
// its hard expiry, is not timer slack: the time past its range is judged,
// here against the idle exit bound.
func TestGrantedSlackExceeded(t *testing.T) {
	s := subject(audio, "timer-irq")
	s.IdleExitNs, s.IdleExitWhy = 500_000, "a virtual machine"
	// 12 ms for a 10 ms range: 2 ms past it, idle, above the 500 us bound.
	tr := window("timer-irq", audio, us1(12000),
		sw(us1(-800), 1, audio, "S", idle),
		timerSlackIn(us1(12000), 1, "hrtimer_wakeup", 0, 10_000_000))
	r := explain(tr, s, "none")
	checkSums(t, r)
	wantCause(t, r, CauseUnexplained, "not an exit from idle", "2000.0 us past the timer's range", "500.0 us")
	if r.Culprit == "timer slack" {
		t.Errorf("blamed on the timer slack: %s", r.Verdict)
	}
	// A real-time task's timer has none: 300 us idle is its exit.
	rt := subject(control, "timer-irq")
	rt.IdleExitNs, rt.IdleExitWhy = 500_000, "a virtual machine"
	tr = window("timer-irq", control, us1(300),
		sw(us1(-800), 1, control, "S", idle),
		timerSlackIn(us1(300), 1, "hrtimer_wakeup", 0, 0))
	r = explain(tr, rt, "none")
	checkSums(t, r)
	wantCause(t, r, CauseExitFromIdle, "exit from idle", "within this machine's idle exit bound of 500.0 us")
}

// A short period that started late inside its timer's slack (the issue's
// nanosleep with a 5 ms timer slack, whose next release came on time)
// names the slack, not what the CPU ran meanwhile.
func TestGrantedSlackShortPeriod(t *testing.T) {
	normal := th{control.tid, control.comm, "OTHER nice 0", 120}
	tr := window("jitter", normal, us1(21131),
		sw(us1(-5500), 1, normal, "S", other),
		timerSlackIn(us1(-2), 1, "hrtimer_wakeup", us1(-4958), 5_000_000),
		wakeTimer(0, 1, normal, us1(-4958)),
		timerOut(us1(3), 1, "hrtimer_wakeup"),
		sw(us1(11), 1, other, "R+", normal),
		sleep(us1(228), 1, normal, "timer sleep (nanosleep)"),
		sw(us1(228), 1, normal, "S", idle),
		timerSlackIn(us1(21130), 1, "hrtimer_wakeup", us1(20078), 5_000_000),
		wakeTimer(us1(21131), 1, normal, us1(20078)),
	)
	s := subject(normal, "jitter")
	s.NominalPeriod = uint64(us1(24088))
	r := explain(tr, s, "none")
	checkSums(t, r)
	wantCause(t, r, CauseRelease, "shorter", "started late", "inside its timer's slack of 5000.0 us")
	if strings.Contains(r.Verdict, "interrupts off") {
		t.Errorf("blames the task that ran inside the slack: %s", r.Verdict)
	}
}
