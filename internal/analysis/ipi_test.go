package analysis

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/trace"
)

var intruder = th{200, "intruder", "OTHER nice 0", 120}

// tlbIn and tlbOut are a TLB shootdown IPI on cpu sent by intruder from CPU 0.
func tlbIn(t int64, cpu int) trace.Event {
	return trace.Event{T: t, CPU: cpu, Type: trace.EventIPIEntry, IPI: &trace.IPI{Kind: trace.IPITLB,
		SenderTID: intruder.tid, SenderPID: 199, SenderComm: intruder.comm, SenderCPU: ip(0), Function: "flush_tlb_func"}}
}

func tlbOut(t int64, cpu int) trace.Event {
	return trace.Event{T: t, CPU: cpu, Type: trace.EventIPIExit, IPI: &trace.IPI{Kind: trace.IPITLB,
		SenderTID: intruder.tid, SenderComm: intruder.comm}}
}

// tlbs are n TLB shootdowns on cpu from intruder, the first at from us,
// one every `every` us, each lasting d us.
func tlbs(cpu, n int, from, every, d float64) []trace.Event {
	var evs []trace.Event
	for i := range n {
		at := us1(from + every*float64(i))
		evs = append(evs, tlbIn(at, cpu), tlbOut(at+us1(d), cpu))
	}
	return evs
}

// An IPI that holds the woken task off its CPU is the window's cause, named
// by its kind, sender and work, with the remedy for its kind; its time is
// the sender's, not hard-IRQ noise.
func TestIPIVerdict(t *testing.T) {
	tr := window("latency", control, us1(500),
		sw(us1(-50), 1, control, "S", idle),
		wakeTimer(0, 1, control, 0),
		tlbIn(us1(10), 1),
		tlbOut(us1(410), 1),
		sw(us1(500), 1, idle, "R", control),
	)
	r := explain(tr, subject(control, "latency"), "full")
	checkSums(t, r)
	t.Log(r.Verdict)
	wantCause(t, r, CauseIPI, "TLB shootdown from intruder/200 (flush_tlb_func)", "400.0 us x 1", "CPU 1 ran IPI handlers",
		"memory mappings", "mlockall")
	if r.Culprit != "intruder/200" {
		t.Errorf("culprit %q, want intruder/200", r.Culprit)
	}
	if it := item(r, PhaseRunnable, KindIPI, 0); it == nil || it.Ns != uint64(us1(400)) || it.IPI == nil || it.IPI.SenderTID != 200 {
		t.Errorf("IPI item %+v", it)
	}
	if item(r, PhaseRunnable, KindHardIRQ, 0) != nil {
		t.Errorf("the IPI is also hard-IRQ noise:\n%s", dump(r))
	}
	if len(r.IPIs) != 1 || r.IPIs[0].Count != 1 || r.IPIs[0].Sender != "intruder/200" {
		t.Errorf("IPIs %+v; want one source, intruder/200", r.IPIs)
	}
}

// IPIs that interrupt the running task, too small to be the cause, are
// counted by sender in the result and named after the verdict: the
// sender, the work, the mean handler time and the count.
func TestIPINoteWhileRunning(t *testing.T) {
	evs := []trace.Event{
		sw(us1(-50), 1, control, "S", idle),
		wakeTimer(0, 1, control, 0),
		sw(us1(5), 1, idle, "R", control),
	}
	evs = append(evs, tlbs(1, 10, 100, 80, 3)...)
	evs = append(evs, sleep(us1(1000), 1, control, trace.ReasonNanosleep), sw(us1(1000), 1, control, "S", idle))
	r := explain(window("response", control, us1(1000), evs...), subject(control, "response"), "full")
	checkSums(t, r)
	if r.Cause == CauseIPI {
		t.Errorf("30 us of IPIs in 1 ms of execution are the cause:\n%s", dump(r))
	}
	t.Log(r.Verdict)
	if !strings.Contains(r.Verdict, "; IPIs: TLB shootdown from intruder/200 (flush_tlb_func), 3.0 us x 10") {
		t.Errorf("verdict %q lacks its IPIs", r.Verdict)
	}
	if len(r.IPIs) != 1 || r.IPIs[0].Count != 10 || r.IPIs[0].Ns != uint64(us1(30)) || r.IPIs[0].Kind != trace.IPITLB {
		t.Errorf("IPIs %+v; want 10 TLB shootdowns, 30 us", r.IPIs)
	}
}

// An IPI with no send seen is still an IPI, of its kind, with the remedy
// that says so.
func TestIPIUnknownSender(t *testing.T) {
	in := trace.Event{T: us1(10), CPU: 1, Type: trace.EventIPIEntry, IPI: &trace.IPI{Kind: trace.IPICall}}
	out := trace.Event{T: us1(410), CPU: 1, Type: trace.EventIPIExit, IPI: &trace.IPI{Kind: trace.IPICall}}
	tr := window("latency", control, us1(500), sw(us1(-50), 1, control, "S", idle), wakeTimer(0, 1, control, 0),
		in, out, sw(us1(500), 1, idle, "R", control))
	r := explain(tr, subject(control, "latency"), "full")
	checkSums(t, r)
	wantCause(t, r, CauseIPI, "function call (no send seen)", "no send was seen")
}

// An IPI received where sends were not recorded (watch without --ipi) has
// an unknown sender, not none: its verdict says the sender was not
// recorded and how to name it, never "no send seen"; so does the note of
// IPIs too small to be the cause.
func TestIPISenderNotRecorded(t *testing.T) {
	const unseen = "watch --ipi names it"
	call := &trace.IPI{Kind: trace.IPICall}
	tr := window("latency", control, us1(500), sw(us1(-50), 1, control, "S", idle), wakeTimer(0, 1, control, 0),
		trace.Event{T: us1(10), CPU: 1, Type: trace.EventIPIEntry, IPI: call},
		trace.Event{T: us1(410), CPU: 1, Type: trace.EventIPIExit, IPI: call}, sw(us1(500), 1, idle, "R", control))
	tr.IPISendersUnseen = unseen
	r := explain(tr, subject(control, "latency"), "full")
	checkSums(t, r)
	wantCause(t, r, CauseIPI, "function call (sender not recorded)", "its sender was not recorded (watch --ipi names it)")
	if strings.Contains(r.Verdict, "no send") {
		t.Errorf("verdict %q says no send was seen where sends were not recorded", r.Verdict)
	}

	evs := []trace.Event{sw(us1(-50), 1, control, "S", idle), wakeTimer(0, 1, control, 0), sw(us1(5), 1, idle, "R", control)}
	for i := range 10 {
		at := us1(100 + 80*float64(i))
		evs = append(evs, trace.Event{T: at, CPU: 1, Type: trace.EventIPIEntry, IPI: &trace.IPI{Kind: trace.IPITLB}},
			trace.Event{T: at + us1(3), CPU: 1, Type: trace.EventIPIExit, IPI: &trace.IPI{Kind: trace.IPITLB}})
	}
	evs = append(evs, sleep(us1(1000), 1, control, trace.ReasonNanosleep), sw(us1(1000), 1, control, "S", idle))
	tr = window("response", control, us1(1000), evs...)
	tr.IPISendersUnseen = unseen
	r = explain(tr, subject(control, "response"), "full")
	checkSums(t, r)
	if want := "; IPIs: TLB shootdown (sender not recorded), 3.0 us x 10 (watch --ipi names it)"; !strings.Contains(r.Verdict, want) {
		t.Errorf("verdict %q lacks %q", r.Verdict, want)
	}
}

// The same IPIs (kind and sender) on two CPUs of a window, where the task
// ran on both, are named with their CPU, not as two identical sources.
func TestIPINoteTwoCPUs(t *testing.T) {
	evs := []trace.Event{sw(us1(-50), 0, control, "S", idle), wakeTimer(0, 0, control, 0), sw(us1(5), 0, idle, "R", control)}
	evs = append(evs, tlbIn(us1(100), 0), tlbOut(us1(101), 0))
	evs = append(evs, sw(us1(150), 0, control, "R+", intruder), sw(us1(160), 1, idle, "R", control))
	evs = append(evs, tlbs(1, 10, 200, 70, 3)...)
	evs = append(evs, sleep(us1(1000), 1, control, trace.ReasonNanosleep), sw(us1(1000), 1, control, "S", idle))
	r := explain(window("response", control, us1(1000), evs...), subject(control, "response"), "full")
	checkSums(t, r)
	t.Log(r.Verdict)
	if len(r.IPIs) != 2 {
		t.Fatalf("IPIs %+v; want 10 on CPU 1 and 1 on CPU 0", r.IPIs)
	}
	if want := "; IPIs: TLB shootdown from intruder/200 (flush_tlb_func) on CPU 1, 3.0 us x 10, " +
		"TLB shootdown from intruder/200 (flush_tlb_func) on CPU 0, 1.0 us x 1"; !strings.Contains(r.Verdict, want) {
		t.Errorf("verdict %q lacks %q", r.Verdict, want)
	}
	// It ran on CPUs 0 and 1 with no migration event (lost): migration is not ruled out.
	if strings.Contains(strings.Join(r.RuledOut, ","), "migration") {
		t.Errorf("ruled out %q for a task that ran on two CPUs", r.RuledOut)
	}
}

// IPIs of one sender on one CPU, some while the task waited and some while
// it ran, are one source with their count and time summed.
func TestIPISourceAcrossPhases(t *testing.T) {
	evs := []trace.Event{sw(us1(-50), 1, control, "S", idle), wakeTimer(0, 1, control, 0),
		tlbIn(us1(10), 1), tlbOut(us1(14), 1), sw(us1(20), 1, idle, "R", control)}
	evs = append(evs, tlbs(1, 5, 100, 80, 2)...)
	evs = append(evs, sleep(us1(1000), 1, control, trace.ReasonNanosleep), sw(us1(1000), 1, control, "S", idle))
	r := explain(window("response", control, us1(1000), evs...), subject(control, "response"), "full")
	checkSums(t, r)
	if len(r.IPIs) != 1 || r.IPIs[0].Count != 6 || r.IPIs[0].Ns != uint64(us1(14)) {
		t.Errorf("IPIs %+v; want one source of 6 IPIs, 14 us", r.IPIs)
	}
}
