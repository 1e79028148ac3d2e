package htmlreport

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/trace"
)

// ipiTrace is a window of CPU 1 holding a TLB shootdown sent from CPU 0
// and received on CPU 1, and a receipt whose send is not in the window.
func ipiTrace() *trace.Trace {
	tlb := func(tid uint32) *trace.IPI {
		return &trace.IPI{Kind: trace.IPITLB, SenderTID: tid, SenderComm: "intruder", SenderCPU: intp(0)}
	}
	return &trace.Trace{Metric: "response", TID: 100, Value: 10000, Start: 1_000_000, End: 1_010_000, CPUs: []int{1}, CPUEnd: 1,
		CPUStart: 1, Events: []trace.Event{
			{T: -500, CPU: 1, Type: trace.EventSwitch, PrevTID: 0, PrevComm: "swapper/1", NextTID: 100, NextComm: "control"},
			{T: 2000, CPU: 0, Type: trace.EventIPISend, TID: 200, Comm: "intruder", TargetCPU: intp(1), IPI: tlb(200)},
			{T: 2500, CPU: 1, Type: trace.EventIPIEntry, IPI: tlb(200)},
			{T: 3500, CPU: 1, Type: trace.EventIPIExit, IPI: tlb(200)},
			{T: 6000, CPU: 1, Type: trace.EventIPIEntry, IPI: tlb(300)},
			{T: 7000, CPU: 1, Type: trace.EventIPIExit, IPI: tlb(300)},
		}}
}

// The sender's CPU gets a lane, and the IPI an arrow from its send on that
// lane to its handler on the receiver's; the receipt without its send has
// none.
func TestTimelineDrawsIPIFlow(t *testing.T) {
	tr := ipiTrace()
	v := timeline(tr, metric.Response)
	if len(v.Lanes) != 2 || v.Lanes[0].CPU != 0 || v.Lanes[1].CPU != 1 {
		t.Fatalf("lanes %v, want CPU 0 (the sender's) and CPU 1", lanesOf(v))
	}
	if s := v.Lanes[0].Segs; len(s) != 1 || s[0].Class != "s-unknown" || !strings.Contains(s[0].Tip, "drawn for the IPIs it sent") {
		t.Errorf("the sender's lane %+v, want one unknown band saying why it is drawn", s)
	}
	if len(v.Flows) != 1 {
		t.Fatalf("%d flows, want 1: %+v", len(v.Flows), v.Flows)
	}
	f := v.Flows[0]
	// x of the timeline: a tenth of the window before it, a sixteenth after.
	lo, hi := int64(-1000), int64(10000+625)
	x := func(t int64) float64 { return tlL + float64(t-lo)/float64(hi-lo)*(tlR-tlL) }
	from, to := v.Lanes[0], v.Lanes[1]
	want := fmt.Sprintf("M%s,%sL%s,%s", f1(x(2000)), f1(from.MidY), f1(x(2500)), f1(to.BandY))
	if f.D != want || f.X != x(2000) || f.Y != from.MidY {
		t.Errorf("flow %q from (%v, %v), want %q", f.D, f.X, f.Y, want)
	}
	if !strings.Contains(f.Tip, "from intruder/200") || !strings.Contains(f.Tip, "sent on CPU 0 at 2.000 µs, handled on CPU 1 at 2.500 µs") {
		t.Errorf("tip %q", f.Tip)
	}
	// A send before the drawn span: no arrow, and no lane for its CPU.
	tr.Events[1].T = -5000
	if v := timeline(tr, metric.Response); len(v.Flows) != 0 || len(v.Lanes) != 1 {
		t.Errorf("send out of the span: %d flows, lanes %v", len(v.Flows), lanesOf(v))
	}
}

func lanesOf(v *timelineView) []int {
	var out []int
	for _, ln := range v.Lanes {
		out = append(out, ln.CPU)
	}
	return out
}

// The arrowhead's tip is the line's end, its base 6 units back along it.
func TestArrowHead(t *testing.T) {
	if got, want := arrowHead(0, 0, 0, 10), "M0.0,10.0L-2.5,4.0L2.5,4.0z"; got != want {
		t.Errorf("arrowHead down = %q, want %q", got, want)
	}
	if got, want := arrowHead(10, 10, 10, 0), "M10.0,0.0L12.5,6.0L7.5,6.0z"; got != want {
		t.Errorf("arrowHead up = %q, want %q", got, want)
	}
}

// In the recorded ipi-storm report (internal/report/testdata/fixtures), the
// control loop's windows on CPU 1 draw the intruder's TLB shootdowns (and
// the other IPIs sent to it) as arrows from CPU 0's lane to CPU 1's.
func TestRecordedIPIFlows(t *testing.T) {
	doc := parseHTML(t, render(t, recordedReports(t)["ipi-storm"]))
	n, tlb := 0, 0
	for _, tl := range doc.all("svg.timeline") {
		bands := map[string][2]float64{} // CPU: the band's top and bottom
		for _, l := range tl.all("g.lane") {
			b := l.first("rect.band")
			y, _ := strconv.ParseFloat(b.attr["y"], 64)
			h, _ := strconv.ParseFloat(b.attr["height"], 64)
			bands[l.attr["data-cpu"]] = [2]float64{y, y + h}
		}
		for _, f := range tl.all("g.flow") {
			n++
			tip := f.attr["data-tip"]
			if strings.Contains(tip, "TLB shootdown from intruder/") {
				tlb++
			}
			if !strings.Contains(tip, " from ") || !strings.Contains(tip, "sent on CPU 0") || !strings.Contains(tip, "handled on CPU 1") {
				t.Errorf("flow %q", tip)
				continue
			}
			cy, _ := strconv.ParseFloat(f.first("circle").attr["cy"], 64)
			if b := bands["0"]; cy < b[0] || cy > b[1] {
				t.Errorf("flow %q starts at y %v, outside CPU 0's band %v", tip, cy, b)
			}
			var x1, y1, x2, y2 float64
			if _, err := fmt.Sscanf(f.first("path").attr["d"], "M%f,%fL%f,%f", &x1, &y1, &x2, &y2); err != nil {
				t.Fatalf("flow path %q: %v", f.first("path").attr["d"], err)
			}
			if b := bands["1"]; y2 != b[0] || x2 < x1 {
				t.Errorf("flow %q ends at (%v, %v), want CPU 1's band top %v, after its start", tip, x2, y2, b[0])
			}
		}
	}
	if tlb == 0 {
		t.Errorf("no TLB shootdown of the intruder drawn in the ipi-storm report (%d IPI flows)", n)
	}
	t.Logf("%d IPI flows drawn, %d TLB shootdowns of the intruder", n, tlb)
}
