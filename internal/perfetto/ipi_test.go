package perfetto

import (
	"testing"

	"github.com/rtscope/rtscope/internal/trace"
)

// An IPI received is a slice on its CPU named by its kind and sender; its
// send an instant on the sender's CPU naming the target.
func TestIPITrackEvents(t *testing.T) {
	ipi := &trace.IPI{Kind: trace.IPITLB, SenderTID: 200, SenderComm: "intruder", Function: "flush_tlb_func"}
	in := &trace.Event{Type: trace.EventIPIEntry, CPU: 1, IPI: ipi}
	k, typ, name, anns, ok := cpuTrackEvent(event{e: in}, true)
	if !ok || k != trackOther || typ != typeSliceBegin || name != "IPI TLB shootdown from intruder/200" || len(anns) != 4 {
		t.Errorf("entry: track %d type %d %q (%d annotations)", k, typ, name, len(anns))
	}
	if tr, key, entry, ok := pairing(event{e: in}); !ok || tr != trackOther || key != "ipi" || !entry {
		t.Errorf("entry pairing %d %q %v %v", tr, key, entry, ok)
	}
	out := &trace.Event{Type: trace.EventIPIExit, CPU: 1, IPI: ipi}
	if _, typ, _, _, _ := cpuTrackEvent(event{e: out}, true); typ != typeSliceEnd {
		t.Errorf("paired exit: type %d, want a slice end", typ)
	}
	cpu := 1
	send := &trace.Event{Type: trace.EventIPISend, CPU: 0, TargetCPU: &cpu, IPI: &trace.IPI{Kind: trace.IPITLB, SenderTID: 200, SenderComm: "intruder"}}
	if _, typ, name, _, _ := cpuTrackEvent(event{e: send}, false); typ != typeInstant || name != "IPI tlb_shootdown to CPU 1" {
		t.Errorf("send: type %d %q", typ, name)
	}
}
