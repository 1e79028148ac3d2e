package scenario

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/explain"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/watch"
)

// procCallIPIs is cpu's count of function-call IPIs in /proc/interrupts:
// CAL, every call-function vector the CPU took. x86 counts a TLB
// shootdown both there (irq_call_count, at the vector) and in TLB
// (irq_tlb_count, in flush_tlb_func): TLB + CAL counted each shootdown
// twice (+71828 on CPU 1 for 35572 shootdowns received, 2026-11-28).
func procCallIPIs(t *testing.T, cpu int) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > cpu+1 && f[0] == "CAL:" {
			v, err := strconv.ParseUint(f[cpu+1], 10, 64)
			if err != nil {
				t.Fatalf("/proc/interrupts %s: %v", f[0], err)
			}
			n += v
		}
	}
	return n
}

// The intruder's protection changes reach the control loop's CPU as TLB
// shootdowns: of the call-function IPIs /proc/interrupts counts on that
// CPU during the run (CAL: thousands, TLB shootdowns included), 90% at
// least are attributed to the intruder, and the loop's windows name it.
func TestSignatureIPIStorm(t *testing.T) {
	twice(t, func() error {
		s, _ := Get("ipi-storm")
		_, victim, err := s.Resolve(Config{CPU: -1})
		if err != nil {
			return err
		}
		before := procCallIPIs(t, victim)
		rep, tasks := watchScenarioReport(t, "ipi-storm", func(o *watch.Options) {
			o.IPI = true
			o.Analyze = explain.ForWatch()
		})
		seen := procCallIPIs(t, victim) - before
		if rep.IPIs == nil {
			return fmt.Errorf("no IPI counts in the report; features %+v", rep.Features)
		}
		intruder, control := tasks["intruder"], tasks["control"]
		var mine uint64
		for _, snd := range rep.IPIs.Senders {
			if snd.CPU != victim {
				continue
			}
			if snd.SenderTID == intruder.TID && snd.Kind != trace.IPIResched && snd.Kind != trace.IPIIRQWork {
				mine += snd.Count
			}
			t.Logf("  CPU %d: %d x %s from %s (%s)", snd.CPU, snd.Count, snd.Kind, snd.Sender, snd.Function)
		}
		t.Logf("CPU %d: /proc/interrupts CAL +%d, %d attributed to intruder/%d", victim, seen, mine, intruder.TID)
		if seen < 1000 || mine*10 < seen*9 {
			return fmt.Errorf("%d of the %d call-function IPIs CPU %d took are attributed to intruder/%d; want 90%% of 1000 at least",
				mine, seen, victim, intruder.TID)
		}
		return namedInWindows(control, intruder)
	})
}

// namedInWindows checks that control's IPIs count the intruder's TLB
// shootdowns and that a window's verdict names it.
func namedInWindows(control, intruder *report.Task) error {
	var tlb uint64
	for _, r := range control.IPIs {
		if r.SenderTID == intruder.TID && r.Kind == trace.IPITLB {
			tlb += r.Count
		}
	}
	if tlb < 500 {
		return fmt.Errorf("control received %d TLB shootdowns from intruder/%d while it ran or waited; want 500 at least", tlb, intruder.TID)
	}
	want := fmt.Sprintf("TLB shootdown from intruder/%d (flush_tlb_func)", intruder.TID)
	for _, m := range control.Metrics {
		if strings.Contains(m.Verdict, want) {
			return nil
		}
	}
	var got []string
	for name, m := range control.Metrics {
		got = append(got, name+": "+m.Verdict)
	}
	return fmt.Errorf("no verdict of control names %q: %s", want, strings.Join(got, "\n"))
}
