package htmlreport

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/units"
)

// Chart geometry, in SVG user units (the viewBox): the charts scale with
// the page, the text with them.
const (
	chartW, chartH             = 560.0, 230.0
	plotL, plotR, plotT, plotB = 56.0, 548.0, 14.0, 190.0
	plotW, plotH               = plotR - plotL, plotB - plotT
	axisLabelY                 = plotB + 16
	axisTitleY                 = plotB + 34
	minBarW                    = 1.0
	seriesXTicks               = 6
)

type tick struct {
	Pos   float64
	Label string
	// LabelX and Anchor place an x-axis tick's label: centred under the
	// tick, or flush with the chart's edge where centred would cross it
	// (a "10000" centred on the last tick at 548 of 560 was cut to "1000(").
	LabelX float64
	Anchor string
}

// tickCharW is the width of a tick label's character (10px digits) in user
// units, a little wide so that an estimate errs on the side of room.
const tickCharW = 6.5

// placeXLabels places the labels of x-axis ticks within [0, w]: centred
// under their tick where they fit, else anchored at the edge they would
// cross, so the text ends inside the chart whatever the font's widths.
func placeXLabels(ticks []tick, w float64) {
	const pad = 2.0
	for i := range ticks {
		t := &ticks[i]
		half := float64(len([]rune(t.Label))) * tickCharW / 2
		t.LabelX, t.Anchor = t.Pos, "middle"
		switch {
		case t.Pos+half > w-pad:
			t.LabelX, t.Anchor = min(t.Pos+half, w-pad), "end"
		case t.Pos-half < pad:
			t.LabelX, t.Anchor = max(t.Pos-half, pad), "start"
		}
	}
}

// vline is a vertical line across a plot (an SLO), its label on the side
// with room.
type vline struct {
	X, LabelX float64
	Label     string
	Anchor    string // text-anchor
}

func newVline(x float64, label string) *vline {
	if x > plotL+plotW*0.7 {
		return &vline{X: x, LabelX: x - 3, Label: label, Anchor: "end"}
	}
	return &vline{X: x, LabelX: x + 3, Label: label, Anchor: "start"}
}

type bar struct {
	X, Y, W, H float64
	Class, Tip string
}

// histView is a histogram on log scales: x latency (the engine's
// log-linear buckets where they fall), y log10(count+1).
type histView struct {
	W, H, L, R, T, B float64
	Bars             []bar
	XTicks, YTicks   []tick
	SLO              *vline
	AxisY, TitleY    float64
	Samples          uint64
}

// logScale maps ns on a log axis spanning whole decades of microseconds.
type logScale struct {
	lo, hi   float64 // log10 of µs at the ends
	from, to float64 // pixels
}

func newLogScale(minNs, maxNs float64, from, to float64) logScale {
	lo := math.Floor(math.Log10(math.Max(minNs, 1) / 1e3))
	hi := math.Ceil(math.Log10(math.Max(maxNs, 1) / 1e3))
	if hi <= lo {
		hi = lo + 1
	}
	return logScale{lo, hi, from, to}
}

func (s logScale) pos(ns float64) float64 {
	v := math.Log10(math.Max(ns, 1) / 1e3)
	return s.from + (v-s.lo)/(s.hi-s.lo)*(s.to-s.from)
}

// ticks are the decades, with 2 and 5 between them when there are few.
func (s logScale) ticks() []tick {
	var out []tick
	few := s.hi-s.lo <= 2
	for d := s.lo; d <= s.hi; d++ {
		for _, m := range []float64{1, 2, 5} {
			if m != 1 && (!few || d == s.hi) {
				continue
			}
			usv := m * math.Pow(10, d)
			out = append(out, tick{Pos: s.pos(usv * 1e3), Label: usLabel(usv)})
		}
	}
	return out
}

// usLabel prints a tick value in µs without trailing zeros.
func usLabel(us float64) string {
	return strconv.FormatFloat(us, 'f', -1, 64)
}

// usRange prints a bucket bound in µs with four significant digits: the
// bounds of adjacent buckets must differ.
func usRange(ns uint64) string {
	us := float64(ns) / 1e3
	dec := 0
	if us > 0 {
		dec = max(0, 3-int(math.Floor(math.Log10(us))))
	}
	return strconv.FormatFloat(us, 'f', min(dec, 3), 64)
}

func histogram(h []uint32, slo *uint64) *histView {
	first, last := -1, -1
	var top uint32
	var total uint64
	for b, c := range h {
		if c == 0 {
			continue
		}
		if first < 0 {
			first = b
		}
		last = b
		top = max(top, c)
		total += uint64(c)
	}
	if first < 0 {
		return nil
	}
	lo, _ := metric.BucketRange(first)
	_, hi := metric.BucketRange(last)
	if last == metric.Buckets-1 {
		// The last bucket is open: draw it one sub-bucket wide.
		l, _ := metric.BucketRange(last)
		hi = l + l/metric.Sub
	}
	minNs, maxNs := float64(lo), float64(hi)
	if slo != nil {
		minNs, maxNs = math.Min(minNs, float64(*slo)), math.Max(maxNs, float64(*slo))
	}
	xs := newLogScale(minNs, maxNs, plotL, plotR)
	ymax := math.Ceil(math.Log10(float64(top) + 1))
	if ymax < 1 {
		ymax = 1
	}
	ypos := func(c float64) float64 { return plotB - math.Log10(c+1)/ymax*plotH }
	v := &histView{W: chartW, H: chartH, L: plotL, R: plotR, T: plotT, B: plotB, XTicks: xs.ticks(),
		AxisY: axisLabelY, TitleY: axisTitleY, Samples: total}
	placeXLabels(v.XTicks, v.W)
	for d := 0.0; d <= ymax; d++ {
		c := math.Pow(10, d)
		if d == 0 {
			c = 0
		}
		v.YTicks = append(v.YTicks, tick{Pos: ypos(c), Label: strconv.FormatFloat(c, 'f', -1, 64)})
	}
	for b := first; b <= last; b++ {
		c := h[b]
		if c == 0 {
			continue
		}
		blo, bhi := metric.BucketRange(b)
		if b == metric.Buckets-1 {
			bhi = blo + blo/metric.Sub
		}
		x0, x1 := xs.pos(float64(blo)), xs.pos(float64(bhi))
		y := ypos(float64(c))
		class := "under"
		if slo != nil {
			switch {
			case blo >= *slo:
				class = "over"
			case bhi > *slo:
				class = "straddle"
			}
		}
		tip := fmt.Sprintf("%s to %s µs: %d sample(s), %s", usRange(blo), usRange(bhi), c, share(uint64(c), total))
		if b == metric.Buckets-1 {
			tip = fmt.Sprintf("%s µs and more: %d sample(s), %s", usRange(blo), c, share(uint64(c), total))
		}
		v.Bars = append(v.Bars, bar{X: x0, Y: y, W: math.Max(x1-x0-0.3, minBarW), H: plotB - y, Class: class, Tip: tip})
	}
	if slo != nil {
		v.SLO = newVline(xs.pos(float64(*slo)), "SLO "+units.Us(*slo)+" µs")
	}
	return v
}

func share(n, of uint64) string {
	if of == 0 {
		return units.Unset
	}
	p := float64(n) * 100 / float64(of)
	if p > 0 && p < 0.01 {
		return "<0.01%"
	}
	return strconv.FormatFloat(p, 'f', 2, 64) + "%"
}

// seriesView is the metric over time: per-interval max and p99 on a log
// scale (one late sample must not flatten the rest), the SLO across.
type seriesView struct {
	W, H, L, R, T, B float64
	Max, P99         string // path data
	MaxDots, P99Dots string // path data of the points no line joins
	XTicks, YTicks   []tick
	SLO              *hline
	AxisY, TitleY    float64
	Interval         string
	// Points feeds the script's hover read-out: [x, "t s", count, "max", "p99"].
	Points string
}

type hline struct {
	Y     float64
	Label string
}

func series(s *report.Series, slo *uint64) *seriesView {
	if s == nil || len(s.Points) == 0 {
		return nil
	}
	var lo, hi float64 = math.Inf(1), 0
	for _, p := range s.Points {
		for _, v := range []*uint64{p.MaxNs, p.P99Ns} {
			if v != nil {
				lo, hi = math.Min(lo, float64(*v)), math.Max(hi, float64(*v))
			}
		}
	}
	if hi == 0 {
		return nil // no interval had a sample
	}
	if slo != nil {
		lo, hi = math.Min(lo, float64(*slo)), math.Max(hi, float64(*slo))
	}
	ys := newLogScale(lo, hi, plotB, plotT)
	end := float64(s.Points[len(s.Points)-1].TNs)
	start := float64(s.Points[0].TNs) - float64(s.IntervalNs)
	if start < 0 || len(s.Points) == 1 {
		start = 0
	}
	if end <= start {
		end = start + 1
	}
	xpos := func(t uint64) float64 { return plotL + (float64(t)-start)/(end-start)*plotW }
	v := &seriesView{W: chartW, H: chartH, L: plotL, R: plotR, T: plotT, B: plotB, AxisY: axisLabelY,
		TitleY: axisTitleY, YTicks: ys.ticks(), Interval: seconds(float64(s.IntervalNs) / 1e9)}
	for _, t := range niceTicks(start/1e9, end/1e9, seriesXTicks) {
		v.XTicks = append(v.XTicks, tick{Pos: plotL + (t*1e9-start)/(end-start)*plotW, Label: seconds(t)})
	}
	placeXLabels(v.XTicks, v.W)
	ypos := func(ns uint64) float64 { return ys.pos(float64(ns)) }
	v.Max, v.MaxDots = seriesPath(s.Points, func(p report.Point) *uint64 { return p.MaxNs }, xpos, ypos)
	v.P99, v.P99Dots = seriesPath(s.Points, func(p report.Point) *uint64 { return p.P99Ns }, xpos, ypos)
	pts := make([][]any, 0, len(s.Points))
	for _, p := range s.Points {
		pts = append(pts, []any{math.Round(xpos(p.TNs)*10) / 10, seconds(float64(p.TNs) / 1e9), p.Count, us(p.MaxNs), us(p.P99Ns)})
	}
	b, _ := json.Marshal(pts)
	v.Points = string(b)
	if slo != nil {
		v.SLO = &hline{Y: ys.pos(float64(*slo)), Label: "SLO " + units.Us(*slo) + " µs"}
	}
	return v
}

// seriesPath is the path data of one line of a series, broken where an
// interval had no sample, and of the dots of its lone points: a point with
// no neighbour to join draws nothing as a line (a 2 s run's intervals at
// 1 s and 2.1 s around an empty one showed an empty chart), so it is a
// dot ("h0.1" under a wide round line cap).
func seriesPath(points []report.Point, get func(report.Point) *uint64, xpos, ypos func(uint64) float64) (line, dots string) {
	var b, d strings.Builder
	var lone string // the current piece's point while it is alone
	run := 0        // points of the current piece of line
	end := func() {
		if run == 1 {
			d.WriteString(lone + "h0.1")
		}
		run = 0
	}
	for _, p := range points {
		val := get(p)
		if val == nil {
			end()
			continue
		}
		at := f1(xpos(p.TNs)) + "," + f1(ypos(*val))
		if run == 0 {
			lone = "M" + at
		} else {
			if run == 1 {
				b.WriteString(lone)
			}
			b.WriteString("L" + at)
		}
		run++
	}
	end()
	return b.String(), d.String()
}

func seconds(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) + " s" }

// niceTicks spaces about n ticks over [lo, hi] at 1, 2 or 5 times a power
// of ten.
func niceTicks(lo, hi float64, n int) []float64 {
	span := hi - lo
	if span <= 0 || n < 1 {
		return []float64{lo}
	}
	raw := span / float64(n)
	e := math.Floor(math.Log10(raw))
	m := 10.0
	for _, c := range []float64{1, 2, 5} {
		if c*math.Pow(10, e) >= raw {
			m = c
			break
		}
	}
	// Each tick is k*m*10^e computed so that it rounds once: 3*0.1 is
	// 0.30000000000000004, 3/10 is 0.3, and the labels print it.
	val := func(k float64) float64 {
		if e < 0 {
			return k * m / math.Pow(10, -e)
		}
		return k * m * math.Pow(10, e)
	}
	step := val(1)
	var out []float64
	for k := math.Ceil(lo / step); val(k) <= hi+step*1e-9; k++ {
		// Ceil of a small negative lo/step is -0, which a label prints as
		// "-0": adding +0 makes it 0 (IEEE 754: -0 + 0 = +0).
		out = append(out, val(k)+0)
	}
	return out
}

// causesView is the histogram of the causes of a metric's SLO violations.
type causesView struct {
	Summary     string
	Rows        []causeRow
	NotAnalysed []kv
	Examples    []string
}

type causeRow struct {
	Cause, Culprit, Pct, Steal string
	Count                      uint64
	Bar                        float64 // 0..100
}

func causes(v *report.Violations, slo *uint64) *causesView {
	if v == nil || v.Total == 0 {
		return nil
	}
	c := &causesView{Summary: fmt.Sprintf("%d over the SLO, %d explained", v.Total, v.Analysed)}
	if slo != nil {
		c.Summary = fmt.Sprintf("%d over the %s µs SLO, %d explained", v.Total, units.Us(*slo), v.Analysed)
	}
	for i, x := range v.Causes {
		if x == nil {
			continue
		}
		row := causeRow{Cause: x.Cause, Count: x.Count, Pct: strconv.FormatFloat(x.Percent, 'f', 1, 64) + "%",
			Bar: math.Max(0, math.Min(100, x.Percent))}
		if x.Culprit != x.Cause {
			row.Culprit = x.Culprit
		}
		if x.StealNs > 0 {
			row.Steal = units.Us(x.StealNs)
		}
		c.Rows = append(c.Rows, row)
		if i < 3 && x.Example != nil {
			c.Examples = append(c.Examples, fmt.Sprintf("e.g. %s µs: %s", units.Us(x.Example.ValueNs), x.Example.Verdict))
		}
	}
	reasons := make([]string, 0, len(v.NotAnalysed))
	for k := range v.NotAnalysed {
		reasons = append(reasons, k)
	}
	sort.Strings(reasons)
	for _, k := range reasons {
		c.NotAnalysed = append(c.NotAnalysed, kv{strconv.FormatUint(v.NotAnalysed[k], 10), k})
	}
	return c
}
