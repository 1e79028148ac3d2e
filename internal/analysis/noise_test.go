package analysis

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/preempt"
	"github.com/rtscope/rtscope/internal/trace"
)

// A busy-polling RT task taken off its CPU, runnable, for 50 ms while a
// fair task ran: throttling, named by its rule, never interference.
func TestNoiseThrottling(t *testing.T) {
	w := us1(50_000)
	tr := window("noise", control, w,
		sw(0, 1, control, "R+", other),
		sw(w, 1, other, "R", control))
	r := explain(tr, subject(control, "noise"), preempt.Voluntary)
	checkSums(t, r)
	if r.Cause != CauseThrottling || !strings.HasPrefix(r.Verdict, "RT throttling") || !strings.Contains(r.Verdict, "editor/130") {
		t.Errorf("cause %s, verdict %q; want throttling naming editor/130", r.Cause, r.Verdict)
	}
}

// A task preempted by a higher priority, whose CPU was then throttled
// (the higher one's time ran out) before it came back: the preemption
// and the throttling are two parts, and the window is throttling
// (pi_stress: 53.8 ms called "preemption by" its FIFO 3 thread).
func TestNoisePreemptedThenThrottled(t *testing.T) {
	w := us1(50_500)
	tr := window("noise", control, w,
		sw(0, 1, control, "R+", background),
		sw(us1(500), 1, background, "R+", other),
		sw(us1(10_000), 1, other, "R", idle),
		sw(w, 1, idle, "R", control))
	r := explain(tr, subject(control, "noise"), preempt.Voluntary)
	checkSums(t, r)
	want := "RT throttling: the task was taken off its CPU, runnable, for 50000.0 us (sched_rt_runtime_us, or the fair server): " +
		"RT throttling (editor/130 of lower priority ran) 50000.0 us, preemption by background/101 500.0 us"
	if r.Cause != CauseThrottling || r.Verdict != want {
		t.Errorf("cause %s, verdict %q; want throttling: %q", r.Cause, r.Verdict, want)
	}
}

// Throttling split by a stop task's preemption is said as its sum.
func TestNoiseThrottlingInParts(t *testing.T) {
	stop := th{21, "migration/1", "FIFO 99", 0}
	w := us1(40_100)
	tr := window("noise", control, w,
		sw(0, 1, control, "R+", other),
		sw(us1(29_400), 1, other, "R+", stop),
		sw(us1(29_430), 1, stop, "S", inject),
		sw(w, 1, inject, "R", control))
	r := explain(tr, subject(control, "noise"), preempt.Voluntary)
	want := "RT throttling: the task was taken off its CPU, runnable, for 40070.0 us"
	if r.Cause != CauseThrottling || !strings.HasPrefix(r.Verdict, want) {
		t.Errorf("cause %s, verdict %q; want it to begin %q", r.Cause, r.Verdict, want)
	}
}

// An IRQ, the softirq at its exit and a preemption by a higher priority
// at the return are one interval: the verdict names each part, the
// largest (the preemption) first, and keeps the window's own cause.
func TestNoiseParts(t *testing.T) {
	w := us1(300)
	tr := window("noise", control, w,
		irqIn(0, 1, 24, "eth0"), irqOut(us1(20), 1, 24, "eth0"),
		softIn(us1(20.5), 1, 3, "NET_RX"), softOut(us1(80), 1, 3, "NET_RX"),
		sw(us1(81), 1, control, "R+", background),
		sw(w, 1, background, "R", control))
	r := explain(tr, subject(control, "noise"), preempt.Voluntary)
	checkSums(t, r)
	want := "interrupted for 300.0 us; largest interruption: preemption by background/101 219.0 us, softirq NET_RX 59.5 us, hard IRQ 24 (eth0) 20.0 us"
	if !strings.HasPrefix(r.Verdict, want) {
		t.Errorf("verdict %q; want it to begin %q", r.Verdict, want)
	}
	if r.Cause != CauseInterference {
		t.Errorf("cause %s; want interference (background, FIFO 90, ran most of it)", r.Cause)
	}
}

// A window whose events were overwritten shows no part, and that is no
// sign of an SMI: it says the events are gone.
func TestNoiseTruncated(t *testing.T) {
	tr := window("noise", control, us1(3374))
	tr.Truncated = true
	r := explain(tr, subject(control, "noise"), preempt.Voluntary)
	if !strings.Contains(r.Verdict, "overwritten") || strings.Contains(r.Verdict, "SMI") {
		t.Errorf("verdict %q; want the events overwritten, no SMI", r.Verdict)
	}
}

// A window whose events show nothing that interrupted the task says the
// time is unexplained.
func TestNoiseUnexplained(t *testing.T) {
	tr := window("noise", control, us1(100))
	r := explain(tr, subject(control, "noise"), preempt.Voluntary)
	if !strings.Contains(r.Verdict, "unexplained") {
		t.Errorf("verdict %q; want unexplained", r.Verdict)
	}
}

// An IPI received in a noise window is a part named as an IPI, with its
// sender when --ipi saw the send (it was "timer callback ()").
func TestNoiseIPIPart(t *testing.T) {
	w := us1(50)
	entry := trace.Event{T: us1(1), CPU: 1, Type: trace.EventIPIEntry,
		IPI: &trace.IPI{Kind: trace.IPITLB, SenderTID: 300, SenderComm: "intruder", Function: "flush_tlb_func"}}
	exit := trace.Event{T: us1(4), CPU: 1, Type: trace.EventIPIExit, IPI: &trace.IPI{Kind: trace.IPITLB}}
	tr := window("noise", control, w, entry, exit)
	r := explain(tr, subject(control, "noise"), preempt.Voluntary)
	want := "largest interruption: TLB shootdown from intruder/300 (flush_tlb_func) IPI 3.0 us"
	if !strings.Contains(r.Verdict, want) {
		t.Errorf("verdict %q; want %q", r.Verdict, want)
	}
}

// An NMI handler in a noise window is a part named by its function.
func TestNoiseNMIPart(t *testing.T) {
	since := us1(10)
	nmi := trace.Event{T: us1(12), CPU: 1, Type: trace.EventNMI, Function: "perf_event_nmi_handler", SinceT: &since}
	tr := window("noise", control, us1(20), nmi)
	r := explain(tr, subject(control, "noise"), preempt.Voluntary)
	if want := "largest interruption: NMI (perf_event_nmi_handler) 2.0 us"; !strings.Contains(r.Verdict, want) {
		t.Errorf("verdict %q; want %q", r.Verdict, want)
	}
}
