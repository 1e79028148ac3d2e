package report

import (
	"testing"

	"github.com/rtscope/rtscope/internal/metric"
)

// cumulative adds samples to st as the engine does.
func cumulative(st *metric.Stats, vals ...uint64) metric.Stats {
	if st.Hist == nil {
		st.Hist = make([]uint32, metric.Buckets)
	}
	for _, v := range vals {
		if st.Count == 0 || v < st.Min {
			st.Min = v
		}
		st.Count++
		st.Sum += v
		st.Max = max(st.Max, v)
		st.Hist[metric.Bucket(v)]++
	}
	c := *st
	c.Hist = append([]uint32(nil), st.Hist...)
	return c
}

func TestSamplerIntervals(t *testing.T) {
	var st metric.Stats
	sp := NewSampler(1e9)
	// Interval 1: a new maximum, exact. Interval 2: nothing. Interval 3:
	// below the run's maximum, bounded by its bucket.
	sp.Add(1e9, cumulative(&st, 10_000, 20_000, 50_000))
	sp.Add(2e9, cumulative(&st))
	sp.Add(3e9, cumulative(&st, 12_000, 13_000))
	s := sp.Series()
	if s == nil || len(s.Points) != 3 || s.IntervalNs != 1e9 {
		t.Fatalf("series %+v", s)
	}
	p := s.Points
	if p[0].Count != 3 || *p[0].MaxNs != 50_000 || *p[0].P99Ns != 50_000 {
		t.Errorf("interval 1: count %d max %d p99 %d; want 3, 50000 exact", p[0].Count, *p[0].MaxNs, *p[0].P99Ns)
	}
	if p[1].Count != 0 || p[1].MaxNs != nil || p[1].P99Ns != nil || p[1].TNs != 2e9 {
		t.Errorf("empty interval: %+v", p[1])
	}
	lo, hi := metric.BucketRange(metric.Bucket(13_000))
	if p[2].Count != 2 || *p[2].MaxNs < 13_000 || *p[2].MaxNs >= hi || *p[2].P99Ns < lo || *p[2].P99Ns > *p[2].MaxNs {
		t.Errorf("interval 3: max %d p99 %d; want within the bucket of 13000 [%d, %d)", *p[2].MaxNs, *p[2].P99Ns, lo, hi)
	}
}

func TestSamplerMergesAtCap(t *testing.T) {
	var st metric.Stats
	sp := NewSampler(1e9)
	for i := uint64(1); i <= SeriesCap; i++ {
		sp.Add(i*1e9, cumulative(&st, i*1000))
	}
	s := sp.Series()
	if len(s.Points) != SeriesCap/2 || s.IntervalNs != 2e9 {
		t.Fatalf("%d points of %d ns; want %d of 2 s", len(s.Points), s.IntervalNs, SeriesCap/2)
	}
	var n uint64
	for _, p := range s.Points {
		n += p.Count
	}
	last := s.Points[len(s.Points)-1]
	if n != SeriesCap || last.TNs != SeriesCap*1e9 || *last.MaxNs != SeriesCap*1000 {
		t.Errorf("after the merge: %d samples (want %d), last point %+v", n, SeriesCap, last)
	}
}
