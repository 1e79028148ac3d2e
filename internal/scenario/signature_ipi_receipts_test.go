package scenario

import (
	"fmt"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/watch"
)

// The receipts of watch --ipi on every architecture: the remote-work
// scenario's intruder calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED),
// a function-call IPI to the loop's CPU on x86 (irq_vectors) and on arm64
// (ipi:ipi_entry, "Function call interrupts"), where TLB shootdowns are
// broadcast instructions and ipi-storm's intruder sends none. Of the
// function-call IPIs /proc/interrupts counts on that CPU (x86 CAL, arm64
// IPI1), 90% at least are received; with the send tracepoints (6.3+), 90%
// at least are attributed to the intruder.
func TestSignatureIPIReceipts(t *testing.T) {
	twice(t, func() error {
		s, _ := Get("remote-work")
		_, victim, err := s.Resolve(Config{CPU: -1})
		if err != nil {
			return err
		}
		var before, after uint64
		run := remoteWatch()
		rep, tasks := watchScenarioReport(t, "remote-work", func(o *watch.Options) {
			o.Ready = func() { before = procCallIPIs(t, victim) }
			o.Ending = func() { after = procCallIPIs(t, victim) }
			o.IPI = true
			o.Duration = run + 30*time.Second // the child ends first
			o.TraceEvents = 65536
		}, "--duration", run.String())
		seen := after - before
		if rep.IPIs == nil {
			return fmt.Errorf("no IPI counts in the report; features %+v", rep.Features)
		}
		var got, mine uint64
		for _, c := range rep.IPIs.CPUs {
			for kind, n := range c.Kinds {
				if c.CPU == victim && kind != trace.IPIResched && kind != trace.IPIIRQWork {
					got += n.Count
				}
			}
		}
		intruder := tasks["intruder"]
		for _, snd := range rep.IPIs.Senders {
			if snd.CPU == victim && snd.SenderTID == intruder.TID && snd.Kind != trace.IPIResched && snd.Kind != trace.IPIIRQWork {
				mine += snd.Count
			}
		}
		t.Logf("CPU %d: /proc/interrupts function calls +%d, %d received, %d from intruder/%d; features.ipi %q",
			victim, seen, got, mine, intruder.TID, rep.Features.IPI)
		if seen < minMembarrierIPIs() || got*10 < seen*9 {
			return fmt.Errorf("%d of the %d function-call IPIs CPU %d took were received; want 90%% of %d at least",
				got, seen, victim, minMembarrierIPIs())
		}
		if len(rep.Features.IPI) == 0 && mine*10 < seen*9 {
			return fmt.Errorf("%d of the %d function-call IPIs CPU %d took are attributed to intruder/%d; want 90%%",
				mine, seen, victim, intruder.TID)
		}
		return nil
	})
}
