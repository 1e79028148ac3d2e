package metric

import (
	"math"
	"math/rand"
	"sort"
	"testing"
)

func TestBucketBoundaries(t *testing.T) {
	// Below 1024 ns: 8 linear buckets of 128 ns; then 8 per power of two.
	cases := map[uint64]int{0: 0, 127: 0, 128: 1, 1023: 7, 1024: 8, 1151: 8, 1152: 9, 2047: 15, 2048: 16,
		1<<33 + 7<<30: Buckets - 1, 1<<34 - 1: Buckets - 1}
	for v, want := range cases {
		if got := Bucket(v); got != want {
			t.Errorf("Bucket(%d) = %d, want %d", v, got, want)
		}
	}
	if got := Bucket(1 << 40); got != Buckets-1 {
		t.Errorf("huge value bucket %d, want last %d", got, Buckets-1)
	}
	// Every value falls inside the range of its bucket, and ranges tile.
	for _, v := range []uint64{1, 9, 100, 1000, 1024, 123456, 1e6, 1e9, 1e10, 5e10} {
		b := Bucket(v)
		lo, hi := BucketRange(b)
		if v < lo || v >= hi {
			t.Errorf("v=%d bucket %d range [%d,%d)", v, b, lo, hi)
		}
		if b+1 < Buckets {
			nlo, _ := BucketRange(b + 1)
			if nlo != hi {
				t.Errorf("bucket %d ends at %d but %d starts at %d", b, hi, b+1, nlo)
			}
		}
		if float64(hi-lo)/float64(lo) > 1.0/Sub+1e-9 && lo >= 1<<MinShift && b < Buckets-1 {
			t.Errorf("bucket %d too wide: [%d,%d)", b, lo, hi)
		}
	}
}

func TestPercentileAccuracy(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var vals []uint64
	s := Stats{Hist: make([]uint32, Buckets), Min: math.MaxUint64}
	for i := 0; i < 100000; i++ {
		v := uint64(20000 + r.ExpFloat64()*30000) // 20 us + exponential tail
		vals = append(vals, v)
		s.Count++
		s.Sum += v
		s.Hist[Bucket(v)]++
		if v < s.Min {
			s.Min = v
		}
		if v > s.Max {
			s.Max = v
		}
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	for _, p := range Percentiles {
		exact := vals[int(math.Ceil(p/100*float64(len(vals))))-1]
		got, ok := s.Percentile(p)
		if !ok {
			t.Fatal("no percentile")
		}
		rel := math.Abs(float64(got)-float64(exact)) / float64(exact)
		if rel > RelativeError+1e-9 {
			t.Errorf("p%v = %d, exact %d, error %.3f > %.3f", p, got, exact, rel, RelativeError)
		}
	}
	if _, ok := (Stats{}).Percentile(50); ok {
		t.Error("empty stats must have no percentile")
	}
	if _, ok := (Stats{}).Avg(); ok {
		t.Error("empty stats must have no average")
	}
}

func TestParse(t *testing.T) {
	for _, m := range All() {
		got, err := Parse(m.String())
		if err != nil || got != m {
			t.Errorf("Parse(%q) = %v, %v", m.String(), got, err)
		}
	}
	if m, err := Parse("wakeup"); err != nil || m != Latency {
		t.Errorf("alias wakeup: %v %v", m, err)
	}
	if _, err := Parse("bogus"); err == nil {
		t.Error("unknown metric accepted")
	}
}

// Percentiles of one dense bucket differ when their ranks differ (a
// bucket's midpoint made p50, p90 and p99 of an audio loop's period all
// 5505.0 us), stay inside the bucket and inside [Min, Max].
func TestPercentileInterpolatedInBucket(t *testing.T) {
	s := Stats{Hist: make([]uint32, Buckets), Min: 5_250_000, Max: 5_400_000}
	b := Bucket(5_333_333)
	s.Hist[b] = 3749
	s.Count = 3749
	lo, hi := BucketRange(b)
	var prev uint64
	for _, p := range []float64{1, 50, 90, 99, 99.9} {
		v, ok := s.Percentile(p)
		if !ok || v < lo || v >= hi || v < s.Min || v > s.Max {
			t.Fatalf("p%v = %d, want within bucket [%d,%d) and [%d,%d]", p, v, lo, hi, s.Min, s.Max)
		}
		if v <= prev {
			t.Errorf("p%v = %d, not above the lower rank's %d", p, v, prev)
		}
		prev = v
	}
	// One value: every percentile is it.
	one := Stats{Hist: make([]uint32, Buckets), Count: 5, Min: 777_777, Max: 777_777}
	one.Hist[Bucket(777_777)] = 5
	if v, _ := one.Percentile(99); v != 777_777 {
		t.Errorf("p99 of one value = %d, want 777777", v)
	}
}

// On an exponential tail the interpolated percentiles are off by far less
// than the midpoint's up to 6.25%: under 1% each.
func TestPercentileInterpolationBeatsMidpoint(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	s := Stats{Hist: make([]uint32, Buckets), Min: math.MaxUint64}
	var vals []uint64
	for range 200000 {
		v := uint64(50000 + r.ExpFloat64()*40000)
		vals = append(vals, v)
		s.Count++
		s.Hist[Bucket(v)]++
		s.Min, s.Max = min(s.Min, v), max(s.Max, v)
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	for _, p := range []float64{10, 25, 50, 75, 90, 99} {
		exact := vals[int(math.Ceil(p/100*float64(len(vals))))-1]
		got, _ := s.Percentile(p)
		if rel := math.Abs(float64(got)-float64(exact)) / float64(exact); rel > 0.01 {
			t.Errorf("p%v = %d, exact %d: error %.4f above 1%%", p, got, exact, rel)
		}
	}
}

// A period of 5.333333 ms with ±40 us of jitter fills one bucket
// ([5242880, 5767168) ns) with 99% of its samples, and a few late ones
// above: p50 is near the true median (its mean's bucket span), not the
// bucket's middle (5505 us).
func TestPercentileDenseBucketCentersOnMean(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	s := Stats{Hist: make([]uint32, Buckets), Min: math.MaxUint64}
	var vals []uint64
	for i := range 4000 {
		v := uint64(5_333_333 + (r.Float64()*2-1)*40_000)
		if i%200 == 0 {
			v = 6_500_000 // a late release
		}
		vals = append(vals, v)
		s.Count++
		s.Sum += v
		s.Hist[Bucket(v)]++
		s.Min, s.Max = min(s.Min, v), max(s.Max, v)
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	var prev uint64
	for _, p := range []float64{50, 90, 99} {
		exact := vals[int(math.Ceil(p/100*float64(len(vals))))-1]
		got, _ := s.Percentile(p)
		if rel := math.Abs(float64(got)-float64(exact)) / float64(exact); rel > 0.02 {
			t.Errorf("p%v = %d, exact %d: error %.4f above 2%%", p, got, exact, rel)
		}
		if got <= prev {
			t.Errorf("p%v = %d, not above the lower rank's %d", p, got, prev)
		}
		prev = got
	}
}
