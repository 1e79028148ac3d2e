package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/trace"
)

// The engine's pairs become senders summed over receivers per CPU, kind
// and sender, the most first; a task's are its own receipts; a CPU lists
// the kinds it received.
func TestIPIsFrom(t *testing.T) {
	st := engine.IPIStats{CPUs: []engine.IPICPU{{CPU: 0}, {CPU: 1}}, PairsLost: 3, Pairs: []engine.IPIPair{
		{Receiver: 501, Sender: 900, SenderPID: 899, Comm: "intruder", CPU: 1, Kind: engine.IPITLB, Count: 40, Ns: 80000, MaxNs: 5000, Func: 0x10},
		{Receiver: 0, Sender: 900, SenderPID: 899, Comm: "intruder", CPU: 1, Kind: engine.IPITLB, Count: 7, Ns: 14000, MaxNs: 9000, Func: 0x10},
		{Receiver: 501, Sender: 0, CPU: 1, Kind: engine.IPICall, Count: 2, Ns: 1000},
		{Receiver: 0, Sender: 33, Comm: "kworker", CPU: 0, Kind: engine.IPIResched, Count: 5, Ns: 500},
	}}
	st.CPUs[1].Count[engine.IPITLB], st.CPUs[1].Unattributed[engine.IPICall] = 47, 2
	fn := func(a uint64) string { return map[uint64]string{0x10: "flush_tlb_func"}[a] }
	r := IPIsFrom(st, fn)
	if len(r.Senders) != 3 || r.PairsLost != 3 {
		t.Fatalf("senders %+v lost %d; want 3 (the intruder's two receivers summed), 3 lost", r.Senders, r.PairsLost)
	}
	top := r.Senders[0]
	if top.Sender != "intruder/900" || top.Count != 47 || top.Ns != 94000 || top.MaxNs != 9000 || top.Kind != trace.IPITLB ||
		top.Function != "flush_tlb_func" || top.CPU != 1 || top.SenderPID != 899 {
		t.Errorf("top sender %+v", top)
	}
	if k := r.CPUs[1].Kinds[trace.IPITLB]; k == nil || k.Count != 47 || len(r.CPUs[0].Kinds) != 0 {
		t.Errorf("CPU kinds %+v / %+v", r.CPUs[0].Kinds, r.CPUs[1].Kinds)
	}
	mine := TaskIPIs(st, 501, fn)
	if len(mine) != 2 || mine[0].Count != 40 || mine[1].Sender != "" || mine[1].Kind != trace.IPICall {
		t.Errorf("task 501's IPIs %+v; want the intruder's 40 then 2 with no sender", mine)
	}
	if TaskIPIs(st, 0, fn) != nil {
		t.Error("receiver 0 (none tracked) is no task")
	}
	var b bytes.Buffer
	writeTaskIPIs(&b, mine)
	want := "   IPIs received: TLB shootdown x 40 from intruder/900 (flush_tlb_func) on CPU 1, 2.0 us each; " +
		"function call x 2 from no send seen on CPU 1, 0.5 us each\n"
	if b.String() != want {
		t.Errorf("text:\n%q\nwant\n%q", b.String(), want)
	}
	if !strings.Contains(describeIPI(trace.Event{Type: trace.EventIPIEntry, IPI: &trace.IPI{Kind: trace.IPITLB, SenderTID: 900,
		SenderComm: "intruder", Function: "flush_tlb_func"}}), "TLB shootdown from intruder/900: flush_tlb_func") {
		t.Error("an IPI entry's line lacks its sender and work")
	}
}
