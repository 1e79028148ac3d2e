package report

import (
	"github.com/rtscope/rtscope/internal/metric"
)

// SeriesCap bounds the points of a series: when it is reached, adjacent
// points merge and the interval doubles, so that a day-long watch of many
// tasks keeps at most this many points per task and metric (about 30 KiB).
const SeriesCap = 600

// Series is a metric over time: one point per interval, read from the
// engine's cumulative histogram (so it costs the hot path nothing).
type Series struct {
	IntervalNs uint64  `json:"interval_ns"`
	Points     []Point `json:"points"`
}

// Point is one interval of a series. Max and p99 come from the interval's
// histogram (±6.25%), except that a new maximum of the run is exact; after
// a merge (SeriesCap), p99 is the larger of the two merged (an upper bound).
type Point struct {
	TNs   uint64  `json:"t_ns"` // end of the interval, from the start of the run
	Count uint64  `json:"count"`
	MaxNs *uint64 `json:"max_ns"` // null: no sample in the interval
	P99Ns *uint64 `json:"p99_ns"`
}

// Sampler turns successive cumulative statistics of one metric into a
// series. Not safe for concurrent use.
type Sampler struct {
	prevHist  []uint32
	prevCount uint64
	prevMax   uint64
	last      uint64 // t of the last point
	s         Series
}

// NewSampler starts a series whose points are interval ns apart.
func NewSampler(interval uint64) *Sampler {
	return &Sampler{s: Series{IntervalNs: interval}}
}

// Add records the interval that ends at t (ns from the run's start), given
// the metric's cumulative statistics then.
func (sp *Sampler) Add(t uint64, st metric.Stats) {
	p := Point{TNs: t, Count: st.Count - min(st.Count, sp.prevCount)}
	if p.Count > 0 && len(st.Hist) > 0 {
		delta := make([]uint32, len(st.Hist))
		top := -1
		for b, c := range st.Hist {
			var prev uint32
			if b < len(sp.prevHist) {
				prev = sp.prevHist[b]
			}
			if c > prev {
				delta[b] = c - prev
				top = b
			}
		}
		mx := st.Max
		if st.Max == sp.prevMax && top >= 0 {
			// No new maximum: the interval's highest bucket bounds it.
			_, hi := metric.BucketRange(top)
			mx = min(hi-1, st.Max)
		}
		d := metric.Stats{Count: p.Count, Max: mx, Hist: delta}
		if v, ok := d.Percentile(99); ok {
			p.P99Ns = &v
		}
		p.MaxNs = &mx
	}
	sp.prevHist = append(sp.prevHist[:0], st.Hist...)
	sp.prevCount, sp.prevMax, sp.last = st.Count, st.Max, t
	sp.s.Points = append(sp.s.Points, p)
	if len(sp.s.Points) >= SeriesCap {
		sp.merge()
	}
}

// merge halves the points: each pair becomes one of twice the interval.
func (sp *Sampler) merge() {
	pts := sp.s.Points
	out := pts[:0]
	for i := 0; i < len(pts); i += 2 {
		p := pts[i]
		if i+1 < len(pts) {
			q := pts[i+1]
			p.TNs, p.Count = q.TNs, p.Count+q.Count
			p.MaxNs, p.P99Ns = maxp(p.MaxNs, q.MaxNs), maxp(p.P99Ns, q.P99Ns)
		}
		out = append(out, p)
	}
	sp.s.Points = out
	sp.s.IntervalNs *= 2
}

func maxp(a, b *uint64) *uint64 {
	if a == nil || (b != nil && *b > *a) {
		return b
	}
	return a
}

// Series returns a copy of the series so far (nil without a point).
func (sp *Sampler) Series() *Series {
	if sp == nil || len(sp.s.Points) == 0 {
		return nil
	}
	return &Series{IntervalNs: sp.s.IntervalNs, Points: append([]Point(nil), sp.s.Points...)}
}
