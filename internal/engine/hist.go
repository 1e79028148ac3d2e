package engine

import (
	"structs"
	"time"

	"github.com/rtscope/rtscope/internal/metric"
)

// TaskStats is a tracked task's statistics: the kernel's (the stats map's
// value, bpfRtsTaskStats) with whole histogram bucket counts. Field for
// field the kernel's, but M holds MetricStats (TestTaskStatsMirror).
type TaskStats struct {
	Id                uint64
	StartTime         uint64
	Tid               uint32
	Pid               uint32
	Target            uint32
	Policy            uint32
	Prio              int32
	RtPriority        uint32
	LastCpu           uint32
	Exited            uint32
	CpusMask          uint64
	NrCpusAllowed     uint32
	Wakeups           uint64
	SwitchesVoluntary uint64
	SwitchesPreempted uint64
	TimerReleases     uint64
	Overruns          uint64
	NominalPeriod     uint64
	Hygiene           [7]uint64
	SchedSeen         [4]uint32
	SchedChanges      uint32
	SchedCur          uint32
	SchedMs           [4]uint32
	StartupIterations uint32
	StartupUs         uint32
	SchedOpenNs       uint64
	Throttled         uint32
	Dl                DLStats
	// NoiseNs and NoiseParts are its recorded noise intervals' parts by
	// cause (index cause - 1: NoiseIRQ - 1 ...): their own time (nested
	// parts' time taken out) and number.
	NoiseNs    [NoiseCauseCount - 1]uint64
	NoiseParts [NoiseCauseCount - 1]uint32
	Comm       [16]int8
	M          [metric.Count]MetricStats
}

// DLStats is a SCHED_DEADLINE task's jobs (struct rts_dl_stats); zero for
// other tasks.
type DLStats = struct {
	_              structs.HostLayout
	Runtime        uint64
	Deadline       uint64
	Period         uint64
	Jobs           uint64
	Misses         uint64
	Overruns       uint64
	Yields         uint64
	LatenessMax    int64
	LatenessMaxEnd uint64
}

// MetricStats is one metric of TaskStats. Hist has the whole count of each
// bucket: the kernel keeps its low 16 bits, user space the carries.
type MetricStats struct {
	Count      uint64
	Sum        uint64
	Min        uint64
	Max        uint64
	MaxStart   uint64
	MaxEnd     uint64
	Slo        uint64
	Violations uint64
	Last       uint64
	LastEnd    uint64
	// HistLost is the number of samples missing from Hist: carries the
	// kernel could not send (the notice ring was full; counted as lost
	// notices too). Zero unless notices were lost.
	HistLost uint64
	Hist     [metric.Buckets]uint32
}

// histCarry is the count a carry adds to its bucket (the kernel's buckets
// are 16 bits wide).
const histCarry = 1 << 16

// histCarries are the carries of the kernel's 16-bit histogram buckets,
// taken from RTS_N_HIST_CARRY notices, by tracking id and then by metric
// and bucket (metric*metric.Buckets + bucket). Only tasks with a bucket
// past 65535 samples have an entry. Not safe for concurrent use: the
// engine holds noticeMu.
type histCarries map[uint64]map[uint16]uint32

// add takes a carry notice.
func (c histCarries) add(n *Notice) {
	if n.Metric >= uint32(metric.Count) || n.Value >= metric.Buckets {
		return
	}
	t := c[n.Id]
	if t == nil {
		t = map[uint16]uint32{}
		c[n.Id] = t
	}
	t[uint16(n.Metric)*metric.Buckets+uint16(n.Value)]++
}

// join returns the kernel's statistics k with the carries added to their
// buckets. pending is true when a metric's histogram has fewer samples
// than its count by at least half a carry, lost carries aside: a bucket
// wrapped whose carry is still in the ring (or being written), so the
// caller reads the ring and k again.
func (c histCarries) join(k *bpfRtsTaskStats) (s *TaskStats, pending bool) {
	s = &TaskStats{Id: k.Id, StartTime: k.StartTime, Tid: k.Tid, Pid: k.Pid, Target: k.Target,
		Policy: k.Policy, Prio: k.Prio, RtPriority: k.RtPriority, LastCpu: k.LastCpu, Exited: k.Exited,
		CpusMask: k.CpusMask, NrCpusAllowed: k.NrCpusAllowed, Wakeups: k.Wakeups,
		SwitchesVoluntary: k.SwitchesVoluntary, SwitchesPreempted: k.SwitchesPreempted,
		TimerReleases: k.TimerReleases, Overruns: k.Overruns, NominalPeriod: k.NominalPeriod,
		Hygiene: k.Hygiene, SchedSeen: k.SchedSeen, SchedChanges: k.SchedChanges, SchedCur: k.SchedCur,
		SchedMs: k.SchedMs, StartupIterations: k.StartupIterations, StartupUs: k.StartupUs,
		SchedOpenNs: k.SchedOpenNs, Throttled: k.Throttled, Dl: k.Dl, NoiseNs: k.NoiseNs, NoiseParts: k.NoiseParts,
		Comm: k.Comm}
	t := c[k.Id]
	for i := range k.M {
		km, m := &k.M[i], &s.M[i]
		*m = MetricStats{Count: km.Count, Sum: km.Sum, Min: km.Min, Max: km.Max, MaxStart: km.MaxStart,
			MaxEnd: km.MaxEnd, Slo: km.Slo, Violations: km.Violations, Last: km.Last, LastEnd: km.LastEnd,
			HistLost: uint64(km.HistLost) * histCarry}
		var total uint64
		for b, lo := range km.Hist {
			n := uint32(lo)
			if t != nil {
				n += t[uint16(i)*metric.Buckets+uint16(b)] * histCarry
			}
			m.Hist[b] = n
			total += uint64(n)
		}
		// The kernel counts a sample before its bucket, and k is copied
		// while samples come: a few samples apart is no carry.
		if int64(m.Count-m.HistLost-total) >= histCarry/2 {
			pending = true
		}
	}
	return s, pending
}

// joinRetries and joinWait bound how long Stats waits for a carry still
// being written (the kernel wraps a bucket, then queues its carry: a few
// instructions apart, unless the vCPU stalls between them).
const (
	joinRetries = 5
	joinWait    = time.Millisecond
)

// joined returns the statistics of id, read into k, with their carries:
// while one is pending it takes the notices queued (kept for Notices) and
// reads id again, at once, then after joinWait, twice as long, and so on.
// Called with noticeMu held.
func (e *Engine) joined(id uint64, k *bpfRtsTaskStats) (*TaskStats, error) {
	s, pending := e.carries.join(k)
	wait := joinWait
	for try := 0; pending && try < joinRetries; try++ {
		if try > 0 {
			time.Sleep(wait)
			wait *= 2
		}
		if err := e.takeNotices(time.Now()); err != nil {
			return nil, err
		}
		if err := e.lookupStats(id, k); err != nil {
			return nil, err
		}
		s, pending = e.carries.join(k)
	}
	e.back.identity(e, s)
	return s, nil
}
