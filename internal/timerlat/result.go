package timerlat

import (
	"time"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/trace"
)

// Summary of one context: count, sum, min, max and the latest value, ns.
// Count 0 means no value: printed "-", null in JSON.
type Summary struct {
	Count, Sum, Min, Max, Last uint64
}

func (s *Summary) add(v uint64) {
	if s.Count == 0 || v < s.Min {
		s.Min = v
	}
	if v > s.Max {
		s.Max = v
	}
	s.Count++
	s.Sum += v
	s.Last = v
}

// merge folds o into s (the ALL rows).
func (s *Summary) merge(o Summary) {
	if o.Count == 0 {
		return
	}
	if s.Count == 0 || o.Min < s.Min {
		s.Min = o.Min
	}
	if o.Max > s.Max {
		s.Max = o.Max
	}
	s.Count += o.Count
	s.Sum += o.Sum
	s.Last = o.Last
}

// Avg is the mean, truncated as rtla's and cyclictest's integer averages.
func (s Summary) Avg() uint64 {
	if s.Count == 0 {
		return 0
	}
	return s.Sum / s.Count
}

// Hist is the exact histogram of one context of one CPU: every sample
// counted once, in buckets of Width ns, the rest in Over.
type Hist struct {
	Summary
	Width  uint64   // ns
	Counts []uint64 // one per entry
	Over   uint64
	// OverAt lists the sample numbers (from 0) of the first overflows, as
	// cyclictest's "Histogram Overflow at cycle number" (at most len(Counts)).
	OverAt []uint64
}

func newHist(width uint64, entries int) *Hist {
	return &Hist{Width: width, Counts: make([]uint64, entries)}
}

func (h *Hist) add(v, seq uint64) {
	h.Summary.add(v)
	if b := v / h.Width; b < uint64(len(h.Counts)) {
		h.Counts[b]++
		return
	}
	h.Over++
	if len(h.OverAt) < len(h.Counts) {
		h.OverAt = append(h.OverAt, seq)
	}
}

// CPUResult is what was measured on one CPU.
type CPUResult struct {
	CPU    int
	TID    int
	Cycles uint64 // sleeps of the measuring thread
	Missed uint64 // periods without a sample: skipped (woke more than a period late) or no timer release
	// Top is the engine's statistics of the thread (count, min, avg, max, last).
	Top [nCtx]Summary
	// Engine keeps the engine's log-linear histograms, for percentiles.
	Engine [nCtx]metric.Stats
	// Hist counts every sample copied from the engine, exactly.
	Hist [nCtx]*Hist
	// The latest samples (a ring), to find the one that stopped the run.
	recent  [recentMax]Sample
	nRecent int
}

// Lost counts what could not be measured or shown; never silently dropped.
type Lost struct {
	Samples     [nCtx]uint64 // releases whose value could not be copied to the histograms
	Ring        uint64       // samples dropped: per-sample ring full
	Notices     uint64       // engine notices dropped (ring full)
	StatsFull   uint64       // engine could not track a task
	StorageFail uint64       // engine task storage allocation failures
}

// Stop says which sample reached a stop threshold.
type Stop struct {
	CPU         int
	TID         int
	Context     int    // IRQ or Thread
	Value       uint64 // ns
	ThresholdUs uint64
	Start, End  uint64 // the sample's window (timer expiry -> measured point), CLOCK_MONOTONIC ns
	CPUStart    int    // CPU of the timer callback
	// Sample is the whole release (IRQ, thread, user), when it was copied.
	Sample *Sample
}

// Result is one session.
type Result struct {
	Elapsed    time.Duration
	PeriodUs   uint64
	Priority   Priority
	DMALatency int // -1: untouched
	// Housekeeping: the CPUs rtscope's own threads ran on (-H, or chosen:
	// the online CPUs not measured); nil: unpinned.
	Housekeeping []int
	CPUs         []*CPUResult
	Lost         Lost
	Stop         *Stop
	// Of a stop: the events of its window, the analysis printed, the trace file.
	Trace      *trace.Trace
	TraceErr   error
	Analysis   string
	TraceSaved error
	Verdict    StopVerdict // of the stop's auto-analysis
	// Crossings counts the stop thresholds reached (noticed: at most one a
	// millisecond per CPU); more than one only with --on-threshold continue.
	Crossings uint64
	// On-threshold actions: runs, and crossings that came while one ran.
	ActionsFired, ActionsSkipped uint64
	// Steal is the hypervisor's share of the measured CPUs over the run;
	// nil when /proc/stat could not be read.
	Steal *Steal
}

// Steal is the time the hypervisor took from the measured CPUs over the
// run (/proc/stat's steal column, in jiffies: 10 ms resolution): how much
// of a virtual machine's latencies the platform may explain.
type Steal struct {
	// PerCPUNs is in the order of Result.CPUs.
	PerCPUNs []uint64
	TotalNs  uint64
}

// stealOver is the steal of the measured CPUs between two /proc/stat
// readings (engine.StealTotals), nil when either is missing.
func stealOver(cpus []*CPUResult, start, end []uint64) *Steal {
	if start == nil || end == nil {
		return nil
	}
	s := &Steal{}
	for _, c := range cpus {
		var d uint64
		if c.CPU < len(start) && c.CPU < len(end) && end[c.CPU] > start[c.CPU] {
			d = end[c.CPU] - start[c.CPU]
		}
		s.PerCPUNs = append(s.PerCPUNs, d)
		s.TotalNs += d
	}
	return s
}

// all merges the CPUs' summaries (Top when exact is false, Hist otherwise).
func (r *Result) all(exact bool) [nCtx]Summary {
	var out [nCtx]Summary
	for _, c := range r.CPUs {
		for k := 0; k < nCtx; k++ {
			if exact {
				if c.Hist[k] != nil {
					out[k].merge(c.Hist[k].Summary)
				}
			} else {
				out[k].merge(c.Top[k])
			}
		}
	}
	return out
}

// missed sums the missed periods and cycles of every CPU.
func (r *Result) missed() (missed, cycles uint64) {
	for _, c := range r.CPUs {
		missed += c.Missed
		cycles += c.Cycles
	}
	return
}
