package analysis

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/preempt"
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

// A window whose events show nothing that interrupted the task says the
// time is unexplained.
func TestNoiseUnexplained(t *testing.T) {
	tr := window("noise", control, us1(100))
	r := explain(tr, subject(control, "noise"), preempt.Voluntary)
	if !strings.Contains(r.Verdict, "unexplained") {
		t.Errorf("verdict %q; want unexplained", r.Verdict)
	}
}
