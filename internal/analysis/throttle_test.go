package analysis

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/trace"
)

// throttledWake is a latency window of control on CPU 1: woken at 0 by a
// timer, then the CPU goes from the hog to next at 5 us and control runs
// at 50 ms.
func throttledWake(next th) *trace.Trace {
	return window("latency", control, us1(50_000),
		wakeTimer(0, 1, control, 0),
		sw(us1(5), 1, hog, "S", next),
		sw(us1(50_000), 1, next, "R+", control))
}

// The CPU switched to a SCHED_OTHER task, or idled, while a FIFO task was
// queued there: throttled from that switch until it ran, whatever ran.
func TestThrottledWakeup(t *testing.T) {
	for _, next := range []th{other, idle} {
		r := explain(throttledWake(next), subject(control, "latency"), "none")
		checkSums(t, r)
		wantCause(t, r, "rt-throttling", "RT throttling (fair server: SCHED_OTHER tasks get 50 ms of every 1000 ms)",
			"runnable but CPU 1")
		if len(r.Throttling) != 1 || r.Throttling[0].T != us1(5) || r.Throttling[0].Ns != uint64(us1(50_000-5)) {
			t.Errorf("%s: throttling %+v, want one interval from 5 us to 50 ms", next.comm, r.Throttling)
		}
		if it := item(r, PhaseRunnable, KindThrottled, 0); it == nil || it.Ns != uint64(us1(50_000-5)) {
			t.Errorf("%s: throttled item %+v", next.comm, it)
		}
	}
	// Configured shares are named (rt_rq throttling's, or the fair server's).
	s := subject(control, "latency")
	s.FairServerRuntimeNs, s.FairServerPeriodNs = 20_000_000, 500_000_000
	if r := explain(throttledWake(other), s, "none"); !strings.Contains(r.Verdict, "get 20 ms of every 500 ms") {
		t.Errorf("verdict %q does not name the 20 ms of 500 ms share", r.Verdict)
	}
}

// A DEADLINE task runnable while its CPU ran a SCHED_OTHER task was
// throttled by its own runtime (or the fair server's earlier deadline):
// "DEADLINE throttling", never "RT throttling" (deadline_test read "RT
// throttling (fair server: ...)" over "it used up its runtime").
func TestDeadlineThrottled(t *testing.T) {
	job := th{101, "dljob", "DEADLINE", -1}
	tr := window("latency", job, us1(50_000),
		wakeTimer(0, 1, job, 0),
		sw(us1(5), 1, hog, "S", other),
		sw(us1(50_000), 1, other, "R+", job))
	r := explain(tr, subject(job, "latency"), "none")
	checkSums(t, r)
	wantCause(t, r, "rt-throttling", "DEADLINE throttling: ", "this DEADLINE task was runnable but throttled on CPU 1",
		"the fair server (SCHED_OTHER tasks get 50 ms of every 1000 ms)")
	if strings.Contains(r.Verdict, "RT throttling") || r.Culprit != "DEADLINE throttling" {
		t.Errorf("culprit %q, verdict %q: a DEADLINE task's throttling called RT throttling", r.Culprit, r.Verdict)
	}
}

// A higher priority, or an equal one, taking the CPU is no throttling; nor
// is a SCHED_OTHER task's wait behind another.
func TestNotThrottled(t *testing.T) {
	r := explain(throttledWake(background), subject(control, "latency"), "none")
	if len(r.Throttling) != 0 || r.Cause == CauseThrottling {
		t.Errorf("a higher priority: %s, throttling %+v", r.Cause, r.Throttling)
	}
	ed := th{132, "editor2", "OTHER nice 0", 120}
	tr := window("latency", other, us1(5_000),
		wakeTimer(0, 1, other, 0),
		sw(us1(5), 1, hog, "S", ed),
		sw(us1(5_000), 1, ed, "R+", other))
	if r := explain(tr, subject(other, "latency"), "none"); len(r.Throttling) != 0 || r.Cause == CauseThrottling {
		t.Errorf("a SCHED_OTHER task: %s, throttling %+v", r.Cause, r.Throttling)
	}
}

// A wakeup sent from another CPU: a switch on the task's CPU within 10 us
// may come before the task is queued there (the wakeup IPI), so it is no
// evidence; one later is.
func TestThrottleRemoteWakeRace(t *testing.T) {
	remote := func(switchAt float64) *trace.Trace {
		wk := wakeBy(0, 0, control, peer)
		wk.TargetCPU = ip(1)
		return window("latency", control, us1(3_000), wk,
			sw(us1(switchAt), 1, hog, "S", other),
			sw(us1(3_000), 1, other, "R+", control))
	}
	if r := explain(remote(3), subject(control, "latency"), "none"); len(r.Throttling) != 0 {
		t.Errorf("a switch 3 us after a remote wakeup: throttling %+v", r.Throttling)
	}
	if r := explain(remote(500), subject(control, "latency"), "none"); len(r.Throttling) != 1 {
		t.Errorf("a switch 500 us after a remote wakeup: throttling %+v", r.Throttling)
	}
}

// A preempted switch-out to a lower class is throttling too; DEADLINE
// below any real-time task is, and DEADLINE below DEADLINE is not.
func TestLowerClass(t *testing.T) {
	cases := []struct {
		kprio int
		next  th
		want  bool
	}{
		{19, other, true}, {19, idle, true}, {19, background, false}, {19, peer, false},
		{-1, background, true}, {-1, th{140, "dl", "DEADLINE", -1}, false}, {120, idle, false},
	}
	for _, c := range cases {
		e := sw(0, 1, control, "R+", c.next)
		if got := lowerClass(&e, c.kprio); got != c.want {
			t.Errorf("kprio %d -> %s: %v, want %v", c.kprio, c.next.sched, got, c.want)
		}
	}
	tr := window("response", control, us1(2_000),
		wakeTimer(0, 1, control, 0),
		sw(us1(1), 1, idle, "R", control),
		sw(us1(500), 1, control, "R+", other),
		sw(us1(1_800), 1, other, "R+", control),
		sleep(us1(2_000), 1, control, ""),
		sw(us1(2_000), 1, control, "S", idle))
	r := explain(tr, subject(control, "response"), "none")
	checkSums(t, r)
	if len(r.Throttling) != 1 || r.Throttling[0].T != us1(500) || r.Throttling[0].Ns != uint64(us1(1_300)) {
		t.Errorf("preempted switch-out: throttling %+v, want 500 us to 1800 us", r.Throttling)
	}
	wantCause(t, r, "rt-throttling")
}

// A lower real-time priority sampled in user space while the task waits
// is no throttling: throttling stops the whole real-time class.
func TestLowerRTInUserSpaceNotThrottled(t *testing.T) {
	tr := window("latency", control, us1(3000),
		sw(us1(-60), 1, idle, "R", taskL),
		wakeTimer(0, 1, control, 0),
		stack(us1(1500), 1, taskL, control),
		sw(us1(3000), 1, taskL, "R+", control))
	r := explain(tr, subject(control, "latency"), "none")
	if r.Cause == CauseThrottling || len(r.Throttling) != 0 {
		t.Errorf("a FIFO 10 task in user space: %s (%s), throttling %+v", r.Cause, r.Verdict, r.Throttling)
	}
}
