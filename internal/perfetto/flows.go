package perfetto

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rtscope/rtscope/internal/trace"
)

// flowEnd is an IPI event's part in a flow: the send starts flow id (its
// instant carries it in flow_ids), the receipt ends it (its slice carries
// it in terminating_flow_ids), so that Perfetto draws an arrow from the
// sender's CPU track to the receiver's.
type flowEnd struct {
	id          uint64
	terminating bool
}

// ipiFlows pairs the IPI receipts of all windows with their sends
// (trace.PairIPIs, on the events in time order: a send cut in another
// window than its receipt pairs too). Flow ids number the receipts in
// time order, from 1.
func ipiFlows(evs []event) map[*trace.Event]flowEnd {
	pairs := trace.PairIPIs(len(evs), func(i int) *trace.Event { return evs[i].e })
	if len(pairs) == 0 {
		return nil
	}
	flows := make(map[*trace.Event]flowEnd, 2*len(pairs))
	id := uint64(0)
	for i, ev := range evs {
		s, ok := pairs[i]
		if !ok {
			continue
		}
		id++
		flows[ev.e] = flowEnd{id: id, terminating: true}
		flows[evs[s].e] = flowEnd{id: id}
	}
	return flows
}

// addFlow writes an event's flow id into its TrackEvent.
func addFlow(te *msg, f flowEnd) {
	n := protowire.Number(fTrackEventFlowIDs)
	if f.terminating {
		n = fTrackEventTermFlowIDs
	}
	te.b = protowire.AppendTag(te.b, n, protowire.Fixed64Type)
	te.b = protowire.AppendFixed64(te.b, f.id)
}
