package analysis

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/trace"
)

func faults(t int64, cpu int, who th, since int64, minor, major uint32) trace.Event {
	return trace.Event{T: t, CPU: cpu, Type: trace.EventFaults, TID: who.tid, Comm: who.comm, SinceT: i64(since),
		MinorFaults: minor, MajorFaults: major}
}

// A cycle with two runs that took page faults: the verdict counts them, the
// run ending after the window and another task's faults are not counted.
func TestPageFaultsInWindow(t *testing.T) {
	tr := window("cycle", control, us1(3000),
		sw(us1(-50), 1, control, "S", idle),
		wakeTimer(0, 1, control, us1(-5)),
		sw(us1(5), 1, idle, "R", control),
		faults(us1(1000), 1, control, us1(5), 300, 1),
		sw(us1(1000), 1, control, "R+", background),
		faults(us1(1200), 1, background, us1(1000), 50, 0),
		sw(us1(1200), 1, background, "S", control),
		faults(us1(3000), 1, control, us1(1200), 12, 0),
		sleep(us1(3000), 1, control, "timer sleep (nanosleep)"),
		sw(us1(3000), 1, control, "S", idle),
		faults(us1(3100), 1, control, us1(3050), 999, 0), // a later run
	)
	s := subject(control, "cycle")
	s.MemNotLocked = true
	r := explain(tr, s, "none")
	checkSums(t, r)
	if f := r.PageFaults; f == nil || f.Minor != 312 || f.Major != 1 || f.Runs != 2 {
		t.Fatalf("page faults %+v, want 312 minor, 1 major in 2 runs", r.PageFaults)
	}
	for _, want := range []string{"313 page faults during its 2 runs in this window (312 minor, 1 major", "memory not locked"} {
		if !strings.Contains(r.Verdict, want) {
			t.Errorf("verdict %q lacks %q", r.Verdict, want)
		}
	}
	// Without faults events: nothing said.
	r = explain(window("cycle", control, us1(100), sw(0, 1, idle, "R", control), sw(us1(100), 1, control, "S", idle)), s, "none")
	if r.PageFaults != nil || strings.Contains(r.Verdict, "page fault") {
		t.Errorf("no faults events, got %+v, verdict %q", r.PageFaults, r.Verdict)
	}
}

// A loop blocked in a pipe write: the kernel's reason, named at every
// sleep, is the blocked time's reason, with the reader that woke it.
func TestBlockedInPipeWrite(t *testing.T) {
	reader := th{140, "reader", "OTHER nice 0", 120}
	tr := window("response", control, us1(2000),
		sw(us1(-10), 1, idle, "R", control),
		wakeTimer(0, 1, control, us1(-2)),
		sleep(us1(300), 1, control, "pipe write (pipe full)"),
		sw(us1(300), 1, control, "S", idle),
		wakeBy(us1(1800), 0, control, reader),
		sw(us1(1805), 1, idle, "R", control),
		sleep(us1(2000), 1, control, "timer sleep (nanosleep)"),
		sw(us1(2000), 1, control, "S", idle),
	)
	r := explain(tr, subject(control, "response"), "none")
	checkSums(t, r)
	var blocked *Item
	for i := range r.Breakdown {
		if r.Breakdown[i].Phase == PhaseBlocked {
			blocked = &r.Breakdown[i]
		}
	}
	if blocked == nil || blocked.Reason != trace.ReasonPipeWrite || blocked.Ns != uint64(us1(1500)) {
		t.Fatalf("blocked item %+v:\n%s", blocked, dump(r))
	}
	t.Log(r.Verdict)
	if !strings.Contains(r.Verdict, "pipe write") || !strings.Contains(r.Verdict, "reader") {
		t.Errorf("verdict %q: want the pipe write and the reader", r.Verdict)
	}
}
