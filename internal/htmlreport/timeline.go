package htmlreport

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
)

// windowView is one worst case: its timeline, verdict and breakdown.
type windowView struct {
	Metric, Value, Window, CPUs string
	Events                      int
	Note                        string // truncated: why
	Verdict, Cause              string
	TL                          *timelineView
	Breakdown                   []bdRow
	Total                       string
	Steal                       string
	Blocking                    string
	Analysis                    string // the analysis as the text report prints it (--traces)
	EventRows                   []evRow
}

type bdRow struct {
	Phase, Kind, Label, CPU, Us, Pct string
}

type evRow struct {
	T, CPU, Text string
	Mine         bool // the watched task's own event
}

func window(id metric.ID, m *report.Metric) *windowView {
	tr := m.Worst
	w := &windowView{Metric: id.String(), Value: units.Us(tr.Value), Window: units.Us(span(tr)),
		CPUs: cpuList(tr.CPUs), Events: len(tr.Events), Verdict: m.Verdict, Cause: m.Cause}
	if tr.Truncated {
		w.Note = tr.Note
		if w.Note == "" {
			w.Note = "truncated"
		}
	}
	w.TL = timeline(tr, id)
	if r := result(m.Analysis); r != nil {
		if w.Verdict == "" {
			w.Verdict = r.Verdict
		}
		if w.Cause == "" {
			w.Cause = r.Cause.String()
		}
		for _, it := range r.Breakdown {
			label := it.Label
			if len(it.Woke) > 0 {
				label += " (woke " + strings.Join(it.Woke, ", ") + ")"
			}
			cpu := units.Unset
			if it.CPU >= 0 {
				cpu = strconv.Itoa(it.CPU)
			}
			w.Breakdown = append(w.Breakdown, bdRow{Phase: it.Phase.String(), Kind: it.Kind.String(), Label: label, CPU: cpu,
				Us: units.Us(it.Ns), Pct: strconv.FormatFloat(it.Percent, 'f', 1, 64)})
		}
		w.Total = units.Us(r.WindowNs)
		if r.StealNs == nil {
			w.Steal = "unknown (no steal clock)"
		} else {
			w.Steal = units.Us(*r.StealNs) + " µs"
		}
		if b := r.BlockingThread; b != nil {
			w.Blocking = b.Comm + "/" + strconv.FormatUint(uint64(b.TID), 10)
			if b.Sched != "" {
				w.Blocking += " (" + b.Sched + ")"
			}
		}
		var sb strings.Builder
		r.WriteText(&sb, "")
		w.Analysis = sb.String()
	}
	var boosts report.BoostNamer // the analysis names the PI boosts it found
	if r := result(m.Analysis); r != nil {
		boosts = r
	}
	for _, e := range tr.Events {
		w.EventRows = append(w.EventRows, evRow{T: units.UsFine(e.T), CPU: strconv.Itoa(e.CPU),
			Text: report.DescribeNamed(e, boosts), Mine: mine(e, tr.TID)})
	}
	return w
}

func span(tr *trace.Trace) uint64 {
	if tr.End < tr.Start {
		return 0
	}
	return tr.End - tr.Start
}

func cpuList(c []int) string {
	s := make([]string, len(c))
	for i, v := range c {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// mine tells the events of the watched task itself.
func mine(e trace.Event, tid uint32) bool {
	switch e.Type {
	case trace.EventSwitch:
		return e.PrevTID == tid || e.NextTID == tid
	case trace.EventStack:
		return e.WaitingTID == tid
	case trace.EventWakeup, trace.EventMigrate, trace.EventSleep, trace.EventUserReturn, trace.EventHandlerEntry, trace.EventHandlerExit, trace.EventExit, trace.EventTimerArm:
		return e.TID == tid
	}
	return false
}

// Timeline geometry (SVG user units).
const (
	tlW, tlL, tlR = 1000.0, 62.0, 992.0
	tlTop         = 34.0 // marker labels above the lanes
	laneGlyphs    = 11.0 // row of the task's events above a lane's band
	laneBand      = 24.0
	laneSteal     = 6.0 // steal strip under the band
	lanePitch     = laneGlyphs + laneBand + laneSteal + 9
	tlAxis        = 26.0
	tlTicks       = 9
	minSegW       = 0.8
)

// timelineView draws a window as one lane per CPU: who ran (from the
// switches), the interrupts, softirqs and timer callbacks over it (from
// their entries and exits), hypervisor steal under it, the watched task's
// own events above it, and the window's start and end across all lanes.
type timelineView struct {
	W, H, L, R         float64
	Top                float64 // of the first lane
	TickTop, TickLabel float64
	Lanes              []*laneView
	Markers            []marker
	Ticks              []tick
	Flows              []flowView // IPIs from sender to receiver
}

type laneView struct {
	CPU                 int
	Label               string
	Y, BandY, StealY    float64
	BandH, StealH, MidY float64
	Segs, Steal         []seg
	Glyphs              []glyph
}

type seg struct {
	X, W       float64
	Class, Tip string
	Label      string
}

type glyph struct {
	D          string // path data
	Class, Tip string
}

type marker struct {
	X, LabelX  float64
	LabelY     float64
	Label, Tip string
	Class      string
	Anchor     string // text-anchor of the label
}

// runner is who ran on a CPU.
type runner struct {
	tid         uint32
	comm, sched string
}

func (r *runner) String() string {
	if r.tid == 0 {
		return "idle"
	}
	s := r.comm + "/" + strconv.FormatUint(uint64(r.tid), 10)
	if r.sched != "" {
		s += " (" + r.sched + ")"
	}
	return s
}

func timeline(tr *trace.Trace, id metric.ID) *timelineView {
	w := int64(span(tr))
	if w <= 0 {
		w = 1000
	}
	// A tenth of the window before it shows who ran when it opened; the
	// context further back (up to 50 ms) would squeeze a short window.
	lo, hi := -w/10, w+w/16
	x := func(t int64) float64 {
		t = min(max(t, lo), hi)
		return tlL + float64(t-lo)/float64(hi-lo)*(tlR-tlL)
	}
	v := &timelineView{W: tlW, L: tlL, R: tlR, Top: tlTop}
	byCPU := map[int][]trace.Event{}
	for _, e := range tr.Events {
		byCPU[e.CPU] = append(byCPU[e.CPU], e)
	}
	flows, senders := visibleFlows(tr, lo, hi)
	for i, cpu := range laneCPUs(tr, senders) {
		y := tlTop + float64(i)*lanePitch
		ln := &laneView{CPU: cpu, Label: "CPU " + strconv.Itoa(cpu), Y: y, BandY: y + laneGlyphs, BandH: laneBand,
			StealY: y + laneGlyphs + laneBand + 1, StealH: laneSteal}
		ln.MidY = ln.BandY + laneBand/2
		evs := byCPU[cpu]
		ln.Segs = runners(evs, cpu, tr.TID, lo, hi, x)
		if !slices.Contains(tr.CPUs, cpu) {
			senderOnly(ln.Segs, cpu)
		}
		ln.Segs = append(ln.Segs, interrupts(evs, cpu, lo, hi, x)...)
		ln.Steal = steal(evs, cpu, lo, hi, x)
		v.Lanes = append(v.Lanes, ln)
	}
	v.Flows = drawFlows(v.Lanes, tr, flows, x)
	v.Markers = taskGlyphs(v.Lanes, tr, lo, hi, x)
	v.Markers = append(v.Markers,
		marker{X: x(0), LabelY: 12, Label: startLabel(id), Class: "m-start", Anchor: "start",
			Tip: "window start (" + startLabel(id) + "): 0 µs"},
		marker{X: x(w), LabelY: 12, Label: "end, " + units.Us(uint64(w)) + " µs", Class: "m-end", Anchor: "end",
			Tip: "window end: " + units.UsFine(w) + " µs, " + id.String() + " " + units.Us(tr.Value) + " µs"})
	for i := range v.Markers {
		mk := &v.Markers[i]
		mk.LabelX = mk.X + 3
		if mk.Anchor == "end" {
			mk.LabelX = mk.X - 3
		}
	}
	bottom := tlTop + float64(len(v.Lanes))*lanePitch
	v.TickTop, v.TickLabel = bottom, bottom+14
	v.H = bottom + tlAxis
	for _, t := range niceTicks(float64(lo)/1e3, float64(hi)/1e3, tlTicks) {
		v.Ticks = append(v.Ticks, tick{Pos: x(int64(t * 1e3)), Label: usLabel(t)})
	}
	placeXLabels(v.Ticks, v.W)
	return v
}

// taskGlyphs draws the watched task's own events above the lanes of their
// CPUs (a wakeup above the CPU it targets), and returns a marker at each
// timer expiry its wakeups name.
func taskGlyphs(lanes []*laneView, tr *trace.Trace, lo, hi int64, x func(int64) float64) []marker {
	lane := map[int]*laneView{}
	for _, ln := range lanes {
		lane[ln.CPU] = ln
	}
	var markers []marker
	expiries := map[int64]bool{}
	for _, e := range tr.Events {
		if !mine(e, tr.TID) || e.Type == trace.EventSwitch || e.T < lo || e.T > hi {
			continue
		}
		cpu := e.CPU
		if e.Type == trace.EventWakeup && e.TargetCPU != nil {
			cpu = *e.TargetCPU
		}
		ln := lane[cpu]
		if ln == nil {
			continue
		}
		gx, gy := x(e.T), ln.Y+laneGlyphs-1
		var d string
		class := "g-" + strings.ReplaceAll(e.Type.String(), "_", "-")
		switch e.Type {
		case trace.EventStack:
			d = fmt.Sprintf("M%s,%sm-3,0a3,3 0 1,0 6,0a3,3 0 1,0 -6,0", f1(gx), f1(gy-4))
		default:
			// A triangle pointing down at the lane.
			d = fmt.Sprintf("M%s,%sl-4.5,-8h9z", f1(gx), f1(gy))
		}
		ln.Glyphs = append(ln.Glyphs, glyph{D: d, Class: class, Tip: units.UsFine(e.T) + " µs: " + report.Describe(e)})
		if e.Type == trace.EventWakeup && e.ExpiryT != nil && *e.ExpiryT != 0 && *e.ExpiryT >= lo && !expiries[*e.ExpiryT] {
			expiries[*e.ExpiryT] = true
			markers = append(markers, marker{X: x(*e.ExpiryT), LabelY: 24, Label: "expiry", Class: "m-expiry",
				Anchor: "end", Tip: "timer expiry of the wakeup at " + units.UsFine(e.T) + " µs: " + units.UsFine(*e.ExpiryT) + " µs"})
		}
	}
	return markers
}

// startLabel says what opens a window of the metric.
func startLabel(id metric.ID) string {
	switch id {
	case metric.Latency, metric.Response:
		return "woken"
	case metric.TimerIRQ, metric.TimerThread, metric.TimerUser:
		return "timer expiry"
	case metric.Cycle, metric.Period:
		return "timer wakeup"
	case metric.Handler:
		return "handler entry"
	}
	return "start"
}

// runners are who ran on cpu, from its switches. Before the first one, its
// previous task ran; a CPU with no switch is unknown.
func runners(evs []trace.Event, cpu int, tid uint32, lo, hi int64, x func(int64) float64) []seg {
	var out []seg
	var cur *runner
	for _, e := range evs {
		if e.Type == trace.EventSwitch {
			cur = &runner{e.PrevTID, e.PrevComm, e.PrevSched}
			break
		}
	}
	if cur == nil {
		return []seg{{X: x(lo), W: x(hi) - x(lo), Class: "s-unknown",
			Tip: fmt.Sprintf("CPU %d: no switch in the trace, who ran is unknown", cpu)}}
	}
	from, first := lo, true
	add := func(to int64, last bool) {
		if to <= lo || from >= hi || to <= from {
			return
		}
		class := "s-other"
		switch {
		case cur.tid == tid:
			class = "s-self"
		case cur.tid == 0:
			class = "s-idle"
		}
		var when string
		switch {
		case first && last:
			when = "through the window"
		case first:
			when = "until " + units.UsFine(to) + " µs"
		case last:
			when = "from " + units.UsFine(from) + " µs"
		default:
			when = fmt.Sprintf("%s to %s µs (%s µs)", units.UsFine(from), units.UsFine(to), units.UsFine(to-from))
		}
		s := seg{X: x(from), W: x(to) - x(from), Class: class, Tip: fmt.Sprintf("CPU %d: %s ran %s", cpu, cur, when)}
		s.Label = fitLabel(cur.String(), s.W)
		out = append(out, s)
	}
	for _, e := range evs {
		if e.Type != trace.EventSwitch {
			continue
		}
		add(e.T, false)
		cur, from, first = &runner{e.NextTID, e.NextComm, e.NextSched}, e.T, false
	}
	add(hi, true)
	return out
}

// fitLabel is the label if it fits in w units (about 6 a character).
func fitLabel(s string, w float64) string {
	if float64(len(s))*6+6 <= w {
		return s
	}
	return ""
}

// interrupts are the IRQ, softirq and timer-callback frames of cpu, outer
// frames first so that the nested ones show on top of them.
func interrupts(evs []trace.Event, cpu int, lo, hi int64, x func(int64) float64) []seg {
	type frame struct {
		from, to int64
		e        trace.Event
		depth    int
		note     string
	}
	var frames []frame
	var open []trace.Event
	prevT := lo
	for _, e := range evs {
		kind, isEntry, ok := frameKind(e.Type)
		if ok && isEntry {
			open = append(open, e)
		} else if ok {
			j := len(open) - 1
			for ; j >= 0; j-- {
				if sameFrame(open[j], e, kind) {
					break
				}
			}
			if j < 0 {
				frames = append(frames, frame{prevT, e.T, e, len(open), "entered before the trace"})
			} else {
				// Frames above j never exited in the trace: they end here.
				for k := len(open) - 1; k > j; k-- {
					frames = append(frames, frame{open[k].T, e.T, open[k], k, "no exit in the trace"})
				}
				frames = append(frames, frame{open[j].T, e.T, open[j], j, ""})
				open = open[:j]
			}
		}
		prevT = e.T
	}
	for k, o := range open {
		frames = append(frames, frame{o.T, max(o.T, prevT), o, k, "no exit in the trace"})
	}
	sort.SliceStable(frames, func(i, j int) bool { return frames[i].depth < frames[j].depth })
	var out []seg
	for _, f := range frames {
		if f.to < lo || f.from > hi {
			continue
		}
		kind, _, _ := frameKind(f.e.Type)
		class, what := "s-"+kind, ""
		switch kind {
		case "irq":
			what = fmt.Sprintf("hard IRQ %d %s", deref(f.e.IRQ), f.e.IRQName)
		case "softirq":
			what = "softirq " + f.e.VecName
		case "timer":
			what = "timer callback " + f.e.Function
			if f.e.HardIRQ {
				what += " (hard IRQ)"
			} else {
				what += " (softirq)"
			}
		case "ipi":
			class, what = "s-irq", ipiWhat(f.e.IPI) // drawn as the hard IRQ it is
		}
		tip := fmt.Sprintf("CPU %d: %s, %s to %s µs (%s µs)", cpu, what, units.UsFine(f.from), units.UsFine(f.to),
			units.UsFine(f.to-f.from))
		if f.note != "" {
			tip += ", " + f.note
		}
		// At least a pixel or so: a 2 us callback in a 20 ms window is
		// still seen (its tooltip gives its length).
		s := seg{X: x(f.from), W: max(x(f.to)-x(f.from), minSegW), Class: class, Tip: tip}
		s.Label = fitLabel(strings.TrimPrefix(strings.TrimPrefix(what, "timer callback "), "hard "), s.W)
		out = append(out, s)
	}
	return out
}

// frameKind tells interrupt-like events: irq, softirq, timer or ipi, entry or exit.
func frameKind(typ trace.EventType) (kind string, entry, ok bool) {
	for _, k := range []string{"irq", "softirq", "timer", "ipi"} {
		switch typ.String() {
		case k + "_entry":
			return k, true, true
		case k + "_exit":
			return k, false, true
		}
	}
	return "", false, false
}

func sameFrame(entry, exit trace.Event, kind string) bool {
	if k, isEntry, _ := frameKind(entry.Type); k != kind || !isEntry {
		return false
	}
	switch kind {
	case "irq":
		return deref(entry.IRQ) == deref(exit.IRQ)
	case "softirq":
		return deref(entry.Vec) == deref(exit.Vec)
	}
	return entry.Function == exit.Function
}

// ipiWhat names an IPI frame: "IPI TLB shootdown from intruder/1234".
func ipiWhat(p *trace.IPI) string {
	if p == nil {
		return "IPI"
	}
	s := "IPI " + p.Kind.Noun()
	if from := p.Sender(); from != "" {
		s += " from " + from
	}
	return s
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// steal is the hypervisor's time: the engine reads it at a switch, so it
// lies somewhere between the CPU's previous reading and this one, and the
// strip spans that interval.
func steal(evs []trace.Event, cpu int, lo, hi int64, x func(int64) float64) []seg {
	var out []seg
	for _, e := range evs {
		if e.Type != trace.EventSteal || e.StealNs == 0 {
			continue
		}
		from := e.T - int64(e.StealNs)
		if e.SinceT != nil {
			from = *e.SinceT
		}
		if e.T < lo || from > hi {
			continue
		}
		s := seg{X: x(from), W: x(e.T) - x(from), Class: "s-steal",
			Tip: fmt.Sprintf("CPU %d: hypervisor steal %s µs, somewhere between %s and %s µs", cpu,
				units.Us(e.StealNs), units.UsFine(from), units.UsFine(e.T))}
		out = append(out, s)
	}
	return out
}
