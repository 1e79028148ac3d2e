package trace

import "github.com/rtscope/rtscope/internal/engine"

// ipiFlowKey is what a receipt and its send both carry: the receiving
// CPU, the sender's tid and CPU, and the kind.
type ipiFlowKey struct {
	to, from int
	sender   uint32
	kind     IPIKind
}

// PairIPIs pairs each IPI receipt (ipi_entry) with the send (ipi_send)
// that caused it, among n events in time order (at(i) is the i-th): it
// returns, for each receipt paired, the index of its send.
//
// The engine attributes a receipt to the last send of its kind queued for
// the CPU before it, and clears that send's slot (bpf/ipi.bpf.h), so the
// pairing follows it: a receipt takes the latest send before it from the
// sender tid and CPU it names, to its CPU, of its kind, not taken yet.
// An earlier send to the same CPU that a later one overwrote (one IPI ran
// both works) pairs with nothing, and so does a receipt whose send is not
// among the events (sent before them, or on a CPU the window left out) or
// came after it: no flow is made up.
func PairIPIs(n int, at func(i int) *Event) map[int]int {
	var pairs map[int]int
	pending := map[ipiFlowKey]int{}
	for i := range n {
		e := at(i)
		if e.IPI == nil {
			continue
		}
		switch e.Type {
		case EventIPISend:
			if e.TargetCPU != nil {
				pending[ipiFlowKey{*e.TargetCPU, e.CPU, e.TID, e.IPI.Kind}] = i
			}
		case EventIPIEntry:
			p := e.IPI
			if p.SenderTID == 0 || p.SenderCPU == nil {
				continue // no send seen
			}
			k := ipiFlowKey{e.CPU, *p.SenderCPU, p.SenderTID, p.Kind}
			if s, ok := pending[k]; ok {
				if pairs == nil {
					pairs = map[int]int{}
				}
				pairs[i] = s
				delete(pending, k)
			}
		}
	}
	return pairs
}

// pairIPIs sets SentT on the receipts of a window's events (in time
// order) whose send the window holds.
func pairIPIs(evs []Event) {
	for r, s := range PairIPIs(len(evs), func(i int) *Event { return &evs[i] }) {
		p := *evs[r].IPI // the receipt's own copy: an exit may share the pointer
		t := evs[s].T
		p.SentT = &t
		evs[r].IPI = &p
	}
}

// sentTo tells an IPI send to one of the CPUs: a window keeps the sends
// to its CPUs from every CPU, so that its receipts have their senders'
// side (the flows drawn from sender to receiver).
func sentTo(e engine.Event, cpus map[int]bool) bool {
	return e.Type == evIPISend && cpus[int(e.B)]
}
