package htmlreport

import (
	"testing"

	"github.com/rtscope/rtscope/internal/trace"
)

// An IPI handler is a frame of its CPU's strip, drawn as the hard IRQ it
// is and named by its kind and sender.
func TestIPIFrame(t *testing.T) {
	ipi := &trace.IPI{Kind: trace.IPITLB, SenderTID: 200, SenderComm: "intruder"}
	evs := []trace.Event{
		{T: 100, CPU: 1, Type: trace.EventIPIEntry, IPI: ipi},
		{T: 3100, CPU: 1, Type: trace.EventIPIExit, IPI: ipi},
	}
	segs := interrupts(evs, 1, 0, 10000, func(v int64) float64 { return float64(v) / 10 })
	if len(segs) != 1 || segs[0].Class != "s-irq" || segs[0].W != 300 {
		t.Fatalf("segments %+v; want one hard-IRQ segment 300 units wide", segs)
	}
	if want := "CPU 1: IPI TLB shootdown from intruder/200"; len(segs[0].Tip) < len(want) || segs[0].Tip[:len(want)] != want {
		t.Errorf("tip %q, want it to start with %q", segs[0].Tip, want)
	}
}
