package analysis

import (
	"strings"
	"testing"
)

// A DEADLINE task kept off its CPU is told in EDF terms: an earlier
// deadline is no noise and no priority; a SCHED_OTHER task seen in user
// space is the fair server's; a task that is not DEADLINE keeps the
// generic verdicts.
func TestDeadlineBlocking(t *testing.T) {
	dl := Subject{TID: 1, Comm: "dljob", Policy: PolicyDeadline, Sched: "DEADLINE", KPrio: -1, Metric: "dl-release"}
	cases := []struct {
		name   string
		s      Subject
		thread Thread
		ok     bool
		cause  Cause
		words  []string
	}{
		{"earlier deadline", dl, Thread{TID: 2, Comm: "other-dl", Sched: "DEADLINE", KPrio: -1}, true, CauseInterference,
			[]string{"earlier deadline", "other-dl/2", "not noise"}},
		{"fair server", dl, Thread{TID: 3, Comm: "make", Sched: "OTHER nice 0", KPrio: 120, Sampled: true, UserSpace: true},
			true, CauseBlocking, []string{"fair server", "make/3", "fair_server/cpu1/runtime"}},
		{"other, no sample", dl, Thread{TID: 3, Comm: "make", Sched: "OTHER nice 0", KPrio: 120}, false, "", nil},
		{"boosted", dl, Thread{TID: 4, Comm: "owner", Sched: "DEADLINE", KPrio: -1, BoostedFrom: "OTHER nice 0"}, false, "", nil},
		{"FIFO subject", Subject{TID: 1, Policy: "FIFO", KPrio: 19, Metric: "latency"},
			Thread{TID: 2, Comm: "x", Sched: "DEADLINE", KPrio: -1}, false, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			th := c.thread
			res := &Result{}
			ok := deadlineBlocking(res, c.s, &Item{Thread: &th, CPU: 1}, "2000.0 us (80%)")
			if ok != c.ok || res.Cause != c.cause {
				t.Fatalf("ok %v cause %q, want %v %q (%s)", ok, res.Cause, c.ok, c.cause, res.Verdict)
			}
			for _, w := range c.words {
				if !strings.Contains(res.Verdict, w) {
					t.Errorf("verdict %q lacks %q", res.Verdict, w)
				}
			}
			if strings.Contains(res.Verdict, "real-time priority") || strings.Contains(res.Verdict, "hard-IRQ") {
				t.Errorf("verdict %q talks priorities or IRQ noise to a DEADLINE task", res.Verdict)
			}
		})
	}
}

// A DEADLINE job kept off its CPU by a non-preemptible section was
// released, not woken: its jobs that end by sched_yield have no wakeup,
// and "woken on time" contradicted its wakeup counter (cyclicdeadline,
// 1 wakeup in 600 jobs).
func TestDeadlineNonPreemptibleReleased(t *testing.T) {
	dl := Subject{TID: 1, Comm: "dljob", Policy: PolicyDeadline, Sched: "DEADLINE", KPrio: -1, Metric: "dl-release"}
	th := Thread{TID: 3, Comm: "make", Sched: "OTHER nice 0", KPrio: 120}
	res := &Result{}
	blockingVerdict(res, dl, &Item{Thread: &th, CPU: 1}, "2000.0 us (80%)")
	if res.Cause != CauseNonPreemptible || !strings.Contains(res.Verdict, "released on time") ||
		strings.Contains(res.Verdict, "woken") {
		t.Errorf("cause %q verdict %q: want a non-preemptible section after a release on time", res.Cause, res.Verdict)
	}
}

// A DEADLINE job's window opens at its release, with no event: runnable,
// up to its first run.
func TestDeadlineStates(t *testing.T) {
	segs := []taskSeg{{st: stUnknown}, {st: stRunning}, {st: stUnknown}}
	deadlineStates(segs, Subject{Policy: PolicyDeadline, Metric: "dl-release"})
	if segs[0].st != stRunnable || segs[2].st != stUnknown {
		t.Errorf("states %v %v %v: want runnable up to its first run only", segs[0].st, segs[1].st, segs[2].st)
	}
	segs = []taskSeg{{st: stUnknown}}
	deadlineStates(segs, Subject{Policy: "FIFO", Metric: "latency"})
	if segs[0].st != stUnknown {
		t.Errorf("a FIFO task's window changed")
	}
}

// A DEADLINE release spacing beyond its period is no loop overrun.
func TestDeadlinePeriodVerdict(t *testing.T) {
	res := &Result{ValueNs: 20_000_000}
	deadlinePeriodVerdict(res, Subject{Policy: PolicyDeadline, NominalPeriod: 10_000_000})
	if res.Cause != CauseRelease || !strings.Contains(res.Verdict, "2.00 of its 10000.0 us period") || overrunWord(res.Verdict) {
		t.Errorf("cause %q verdict %q", res.Cause, res.Verdict)
	}
}

func overrunWord(v string) bool {
	return strings.Contains(v, "an overrun") || strings.Contains(v, "overrun:")
}
