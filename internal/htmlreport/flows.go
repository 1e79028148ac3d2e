package htmlreport

import (
	"fmt"
	"math"
	"slices"

	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
)

// flowView is an IPI drawn from its send on the sender's CPU lane to its
// handler on the receiver's: a dot at the send, a line, an arrowhead.
type flowView struct {
	X, Y    float64 // the send
	D, Head string  // path data of the line and of the arrowhead
	Tip     string
}

// ipiFlow is a receipt (r) and its send (s), indexes in a window's events.
type ipiFlow struct{ r, s int }

// visibleFlows are the IPIs of the window whose send and receipt are both
// in its drawn span [lo, hi] (trace.PairIPIs pairs them), in time order,
// and the CPUs they were sent from.
func visibleFlows(tr *trace.Trace, lo, hi int64) (flows []ipiFlow, senders []int) {
	evs := tr.Events
	for r, s := range trace.PairIPIs(len(evs), func(i int) *trace.Event { return &evs[i] }) {
		if evs[s].T < lo || evs[r].T > hi || evs[s].CPU == evs[r].CPU {
			continue
		}
		flows = append(flows, ipiFlow{r, s})
		if !slices.Contains(senders, evs[s].CPU) {
			senders = append(senders, evs[s].CPU)
		}
	}
	slices.SortFunc(flows, func(a, b ipiFlow) int { return a.r - b.r })
	return flows, senders
}

// laneCPUs are the CPUs drawn: the window's, and those IPIs were sent
// from, in order.
func laneCPUs(tr *trace.Trace, senders []int) []int {
	cpus := append([]int(nil), tr.CPUs...)
	for _, c := range senders {
		if !slices.Contains(cpus, c) {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return cpus
}

// drawFlows draws each IPI from the middle of the sender's band at its
// send to the edge of the receiver's band at its handler's entry.
func drawFlows(lanes []*laneView, tr *trace.Trace, flows []ipiFlow, x func(int64) float64) []flowView {
	lane := map[int]*laneView{}
	for _, ln := range lanes {
		lane[ln.CPU] = ln
	}
	var out []flowView
	for _, f := range flows {
		send, recv := tr.Events[f.s], tr.Events[f.r]
		from, to := lane[send.CPU], lane[recv.CPU]
		if from == nil || to == nil {
			continue
		}
		x1, y1, x2, y2 := x(send.T), from.MidY, x(recv.T), to.BandY
		if to.Y < from.Y {
			y2 = to.BandY + to.BandH
		}
		out = append(out, flowView{X: x1, Y: y1,
			D:    fmt.Sprintf("M%s,%sL%s,%s", f1(x1), f1(y1), f1(x2), f1(y2)),
			Head: arrowHead(x1, y1, x2, y2),
			Tip: fmt.Sprintf("%s, sent on CPU %d at %s µs, handled on CPU %d at %s µs (%s µs later)",
				report.Describe(recv), send.CPU, units.UsFine(send.T), recv.CPU, units.UsFine(recv.T),
				units.UsFine(recv.T-send.T))})
	}
	return out
}

// arrowHead is a triangle 6 units long pointing at (x2, y2) along the line
// from (x1, y1).
func arrowHead(x1, y1, x2, y2 float64) string {
	dx, dy := x2-x1, y2-y1
	n := math.Hypot(dx, dy)
	if n == 0 {
		dx, dy, n = 0, 1, 1
	}
	ux, uy := dx/n, dy/n
	bx, by := x2-6*ux, y2-6*uy // the base's middle
	return fmt.Sprintf("M%s,%sL%s,%sL%s,%sz", f1(x2), f1(y2), f1(bx-2.5*uy), f1(by+2.5*ux), f1(bx+2.5*uy), f1(by-2.5*ux))
}

// senderOnly retells the unknown band of a lane drawn only for the IPIs
// its CPU sent: the window kept none of its switches.
func senderOnly(segs []seg, cpu int) {
	for i := range segs {
		if segs[i].Class == "s-unknown" {
			segs[i].Tip = fmt.Sprintf("CPU %d: drawn for the IPIs it sent to the window's CPUs; the window keeps only those of its events, so who ran is unknown", cpu)
		}
	}
}
