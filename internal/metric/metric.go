// Package metric names rtscope's per-task metrics and turns the BPF
// statistics (count, sum, min, max, log-linear histogram) into summaries
// with percentiles. The names here are the ones used by flags, tables and JSON.
package metric

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// ID is the index of a metric in the BPF stats array (enum rts_metric).
type ID int

const (
	Latency ID = iota
	TimerIRQ
	TimerThread
	TimerUser
	Response
	Cycle
	Period
	Jitter
	Handler
	Iteration
	DLRelease
	DLExec
	DLResponse
	Noise
	Count
)

// Info describes a metric for help texts and reports.
type Info struct {
	Name  string // flag/JSON name
	Title string // column title
	Desc  string
}

var infos = [Count]Info{
	Latency:     {"latency", "LATENCY", "wakeup latency: woken -> running on a CPU"},
	TimerIRQ:    {"timer-irq", "T-IRQ", "timer release, IRQ part: timer expiry -> timer interrupt handling it"},
	TimerThread: {"timer-thread", "T-THREAD", "timer release, thread part: timer expiry -> task running"},
	TimerUser:   {"timer-user", "T-USER", "timer release, user part: timer expiry -> return to user space from the sleep"},
	Response:    {"response", "RESPONSE", "response time: woken -> first voluntary switch-out (block or sleep)"},
	Cycle:       {"cycle", "CYCLE", "control-loop cycle: timer wakeup -> switch-out into the next timer sleep"},
	Period:      {"period", "PERIOD", "actual period: timer wakeup -> next timer wakeup"},
	Jitter:      {"jitter", "JITTER", "period jitter: |actual period - timer expiry spacing|"},
	Handler:     {"handler", "HANDLER", "threaded IRQ handler time, entry -> exit, minus IRQ/softirq time"},
	Iteration:   {"iteration", "ITERATION", "loop iteration: arming of its sleep timer -> the next arming, whether it slept or not"},
	DLRelease:   {"dl-release", "DL-REL", "SCHED_DEADLINE job release latency: its release (new absolute deadline - relative deadline) -> first on a CPU"},
	DLExec:      {"dl-exec", "DL-EXEC", "SCHED_DEADLINE job execution time: its on-CPU time"},
	DLResponse:  {"dl-response", "DL-RESP", "SCHED_DEADLINE job response: its release -> its end (sleep, sched_yield or throttling)"},
	Noise:       {"noise", "NOISE", "one interruption of a running task: off its CPU while runnable, or its CPU serving an IRQ, softirq or the hypervisor"},
}

// Info returns the description of m.
func (m ID) Info() Info { return infos[m] }

// String is the metric's name.
func (m ID) String() string {
	if m < 0 || m >= Count {
		return fmt.Sprintf("metric(%d)", int(m))
	}
	return infos[m].Name
}

// All lists the metrics in order.
func All() []ID {
	out := make([]ID, Count)
	for i := range out {
		out[i] = ID(i)
	}
	return out
}

// aliases accepted on the command line.
var aliases = map[string]ID{"wakeup": Latency, "lat": Latency, "irq-handler": Handler}

// Parse returns the metric of a name (or alias).
func Parse(name string) (ID, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for i, in := range infos {
		if in.Name == n {
			return ID(i), nil
		}
	}
	if m, ok := aliases[n]; ok {
		return m, nil
	}
	return 0, fmt.Errorf("unknown metric %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the metric names.
func Names() []string {
	out := make([]string, 0, Count)
	for _, in := range infos {
		out = append(out, in.Name)
	}
	return out
}

// Histogram layout, mirrored from bpf/rtscope.h: below 2^MinShift ns, Sub
// linear buckets of 2^(MinShift-SubBits) ns (128 ns); from there to
// 2^MaxShift ns (~17.2 s), Sub buckets per power of two; above, the last one.
const (
	SubBits  = 3
	Sub      = 1 << SubBits
	MinShift = 10
	MaxShift = 34
	Buckets  = (MaxShift - MinShift + 1) * Sub
)

// RelativeError is the largest error of a percentile read from the
// histogram, relative to the true value, from 2^MinShift ns (1.024 us)
// on: a bucket's width (12.5%), as the percentile is interpolated inside
// the bucket that holds its rank. The error is far smaller when the
// samples spread over the bucket (TestPercentileAccuracy: under 1% on an
// exponential tail, where the midpoint was off by up to 6.25%). Below,
// the error is at most LinearError ns.
const RelativeError = 1.0 / Sub

// LinearError is the largest error, in ns, of a percentile below 2^MinShift
// ns: a linear bucket's width.
const LinearError = 1 << (MinShift - SubBits)

// Bucket returns the histogram bucket of v (same as rts_hist_bucket in BPF).
func Bucket(v uint64) int {
	if v < 1<<MinShift {
		return int(v >> (MinShift - SubBits))
	}
	msb := 63 - bits.LeadingZeros64(v)
	if msb >= MaxShift {
		return Buckets - 1
	}
	return (msb-MinShift+1)*Sub + int((v>>(msb-SubBits))&(Sub-1))
}

// BucketRange returns the values [lo, hi) of bucket b.
func BucketRange(b int) (lo, hi uint64) {
	if b < Sub {
		w := uint64(1) << (MinShift - SubBits)
		return uint64(b) * w, uint64(b+1) * w
	}
	msb := b/Sub + MinShift - 1
	sub := uint64(b % Sub)
	lo = (Sub + sub) << uint(msb-SubBits)
	hi = lo + 1<<uint(msb-SubBits)
	if b == Buckets-1 {
		hi = math.MaxUint64
	}
	return lo, hi
}

// Stats is one metric of one task, as measured.
type Stats struct {
	Count      uint64
	Sum        uint64
	Min, Max   uint64
	MaxStart   uint64 // window of the maximum, monotonic ns
	MaxEnd     uint64
	SLO        uint64 // 0: none
	Violations uint64
	Hist       []uint32 // Buckets entries, may be nil
}

// Avg is the mean in ns; ok false when there is no sample.
func (s Stats) Avg() (float64, bool) {
	if s.Count == 0 {
		return 0, false
	}
	return float64(s.Sum) / float64(s.Count), true
}

// Percentile returns the p-th percentile (0 < p < 100) estimated from the
// histogram: the sample of its rank is placed linearly inside its bucket,
// as if the bucket's samples spread evenly over it (the bucket narrowed
// to [Min, Max]), so that percentiles of different ranks differ even in
// one dense bucket, where a bucket's midpoint made p50, p90 and p99 the
// same value. ok is false without samples.
func (s Stats) Percentile(p float64) (uint64, bool) {
	if s.Count == 0 || len(s.Hist) == 0 {
		return 0, false
	}
	var total uint64
	for _, c := range s.Hist {
		total += uint64(c)
	}
	if total == 0 {
		return 0, false
	}
	rank := max(uint64(math.Ceil(p/100*float64(total))), 1)
	var seen uint64
	for b, c := range s.Hist {
		if seen+uint64(c) < rank {
			seen += uint64(c)
			continue
		}
		if 10*uint64(c) >= 9*total {
			if v, ok := s.dense(b, rank-seen, uint64(c)); ok {
				return v, true
			}
		}
		return s.interpolate(b, rank-seen, uint64(c)), true
	}
	return s.Max, true
}

// dense places the k-th of the c samples of bucket b, which holds 90% or
// more of them, evenly over the widest span around their mean that the
// bucket (narrowed to [Min, Max]) holds on both sides. Their mean is the
// metric's, less the other samples at their buckets' midpoints: a 5.333 ms
// period's samples fill one 524 us bucket, where spreading them over the
// whole bucket put p50 at 5505 us, its middle, 3% off. ok is false without
// a mean inside the bucket.
func (s Stats) dense(b int, k, c uint64) (uint64, bool) {
	rest := float64(s.Sum)
	for j, n := range s.Hist {
		if j != b && n > 0 {
			lo, hi := BucketRange(j)
			if j == Buckets-1 {
				hi = s.Max + 1
			}
			rest -= float64(n) * (float64(lo) + float64(hi-lo)/2)
		}
	}
	lo, hi := BucketRange(b)
	lo = max(lo, s.Min)
	if s.Max < hi-1 || b == Buckets-1 {
		hi = s.Max + 1
	}
	mean := rest / float64(c)
	if s.Sum == 0 || mean < float64(lo) || mean > float64(hi-1) {
		return 0, false
	}
	d := min(mean-float64(lo), float64(hi-1)-mean)
	v := uint64(mean - d + 2*d*(float64(k)-0.5)/float64(c) + 0.5)
	return min(max(v, s.Min), s.Max), true
}

// interpolate places the k-th of the c samples of bucket b (1 <= k <= c)
// evenly over the bucket narrowed to [Min, Max]: the middle of its share,
// or, in a bucket that holds Min or Max, spaced from that end, which is a
// sample (the first rank is Min, the last Max).
func (s Stats) interpolate(b int, k, c uint64) uint64 {
	lo, hi := BucketRange(b)
	lo = max(lo, s.Min)
	if s.Max < hi-1 || b == Buckets-1 {
		hi = s.Max + 1
	}
	if hi <= lo+1 {
		return min(max(lo, s.Min), s.Max)
	}
	w := float64(hi - 1 - lo)
	low, high := lo == s.Min, hi-1 == s.Max
	var f float64
	switch {
	case low && high:
		f = 0
		if c > 1 {
			f = float64(k-1) / float64(c-1)
		}
	case low:
		f = float64(k-1) / float64(c)
	case high:
		f = 1 - float64(c-k)/float64(c)
	default:
		f = (float64(k) - 0.5) / float64(c)
	}
	v := lo + uint64(f*w+0.5)
	return min(max(v, s.Min), s.Max)
}

// Percentiles reported everywhere.
var Percentiles = []float64{50, 90, 99, 99.9}

// Summary is the JSON summary of one metric's samples, the one shape that
// watch (per task) and timerlat (per CPU and context) write: nanoseconds,
// null for what has no value (no sample, or no histogram to estimate a
// percentile from). Percentiles are interpolated within their histogram
// bucket (RelativeError).
type Summary struct {
	Count  uint64   `json:"count"`
	MinNs  *uint64  `json:"min_ns"`
	AvgNs  *float64 `json:"avg_ns"`
	MaxNs  *uint64  `json:"max_ns"`
	P50Ns  *uint64  `json:"p50_ns"`
	P90Ns  *uint64  `json:"p90_ns"`
	P99Ns  *uint64  `json:"p99_ns"`
	P999Ns *uint64  `json:"p99_9_ns"`
}

// Summarize summarizes s: count, minimum, mean and maximum, and the
// Percentiles when s has a histogram.
func Summarize(s Stats) Summary {
	sm := Summary{Count: s.Count}
	if s.Count == 0 {
		return sm
	}
	ptr := func(v uint64) *uint64 { return &v }
	avg, _ := s.Avg()
	sm.MinNs, sm.AvgNs, sm.MaxNs = ptr(s.Min), &avg, ptr(s.Max)
	for i, dst := range []**uint64{&sm.P50Ns, &sm.P90Ns, &sm.P99Ns, &sm.P999Ns} {
		if v, ok := s.Percentile(Percentiles[i]); ok {
			*dst = ptr(v)
		}
	}
	return sm
}
