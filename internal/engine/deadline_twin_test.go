package engine

import (
	"testing"

	"github.com/rtscope/rtscope/internal/metric"
)

// dlTask is a synthetic SCHED_DEADLINE task for the twins: its reservation,
// and the offset of the rq clock (its deadlines' clock) from
// CLOCK_MONOTONIC: rq = monotonic - rqBehind.
type dlTask struct {
	tw                        *twin
	tid                       uint32
	runtime, deadline, period uint64
	rqBehind                  uint64
}

const (
	dlThrottled = 1
	dlYielded   = 2
	dlNotDL     = 4
)

// view sets what the stub would read at a switch at now (monotonic):
// the instance whose absolute deadline is absMono (monotonic), left runtime.
func (d *dlTask) view(now, absMono uint64, left int64, flags uint64) {
	d.tw.t.Helper()
	if ret := d.tw.run(d.tw.objs.TestDlView, uint64(d.tid), now-d.rqBehind, absMono-d.rqBehind,
		uint64(left), flags, d.deadline, d.period, d.runtime); ret != 0 {
		d.tw.t.Fatalf("dl view of %d: %d", d.tid, int32(ret))
	}
}

const other = 200 // an untracked task that preempts or follows

// A cyclicdeadline-like task: each job is released at its period, first
// runs 50 us later, is preempted once for 200 us by an earlier deadline,
// and ends with sched_yield() 1 ms of work later. Every job counts, none
// is late or overran; the releases are its period; the rq clock's own
// origin (300 us behind, then 2 s ahead) changes nothing.
func TestTwinDeadlineYieldJobs(t *testing.T) {
	for _, behind := range []uint64{300_000, ^uint64(2_000_000_000) + 1} {
		tw := newTwin(t, nil)
		tw.track(100, false, false)
		d := &dlTask{tw: tw, tid: 100, runtime: 2_000_000, deadline: 8_000_000, period: 10_000_000, rqBehind: behind}
		const jobs = 50
		base := uint64(5_000_000_000)
		for k := range uint64(jobs) {
			rel := base + k*d.period
			abs := rel + d.deadline
			d.view(rel+50_000, abs, 2_000_000, 0)
			tw.switchTo(rel+50_000, 0, idle, 100, false, 0)
			d.view(rel+550_000, abs, 1_500_000, 0)
			tw.switchTo(rel+550_000, 0, 100, other, false, 0) // preempted: the job goes on
			d.view(rel+750_000, abs, 1_500_000, 0)
			tw.switchTo(rel+750_000, 0, other, 100, false, 0)
			d.view(rel+1_250_000, abs, 0, dlThrottled|dlYielded)
			tw.switchTo(rel+1_250_000, 0, 100, idle, false, 0) // sched_yield: the job ends
		}
		s := tw.stats(100)
		if s.Dl.Jobs != jobs || s.Dl.Yields != jobs || s.Dl.Misses != 0 || s.Dl.Overruns != 0 {
			t.Errorf("behind %d: jobs %d yields %d misses %d overruns %d, want %d %d 0 0",
				int64(behind), s.Dl.Jobs, s.Dl.Yields, s.Dl.Misses, s.Dl.Overruns, jobs, jobs)
		}
		expect(t, s, metric.DLRelease, jobs, 50_000, 50_000)
		expect(t, s, metric.DLExec, jobs, 1_000_000, 1_000_000)
		expect(t, s, metric.DLResponse, jobs, 1_250_000, 1_250_000)
		expect(t, s, metric.Period, jobs-1, d.period, d.period)
		expect(t, s, metric.Response, 0, 0, 0) // no response window spans its jobs
		if want := int64(1_250_000) - int64(d.deadline); s.Dl.LatenessMax != want {
			t.Errorf("lateness max %d, want %d", s.Dl.LatenessMax, want)
		}
		if s.Dl.Runtime != d.runtime || s.Dl.Deadline != d.deadline || s.Dl.Period != d.period || s.NominalPeriod != d.period {
			t.Errorf("parameters %d/%d/%d period %d", s.Dl.Runtime, s.Dl.Deadline, s.Dl.Period, s.NominalPeriod)
		}
	}
}

// A task that spins: each instance is throttled at its runtime (1.5 ms of
// a 5 ms period): every job overran, none is late.
func TestTwinDeadlineThrottledJobsOverrun(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, false, false)
	d := &dlTask{tw: tw, tid: 100, runtime: 1_500_000, deadline: 5_000_000, period: 5_000_000, rqBehind: 1_300_000_000}
	const jobs = 40
	base := uint64(3_000_000_000)
	for k := range uint64(jobs) {
		rel := base + k*d.period
		d.view(rel+10_000, rel+d.deadline, 1_500_000, 0)
		tw.switchTo(rel+10_000, 1, idle, 100, false, 0)
		d.view(rel+1_510_000, rel+d.deadline, -2_000, dlThrottled)
		tw.switchTo(rel+1_510_000, 1, 100, idle, false, 0)
	}
	s := tw.stats(100)
	if s.Dl.Jobs != jobs || s.Dl.Overruns != jobs || s.Dl.Misses != 0 || s.Dl.Yields != 0 {
		t.Errorf("jobs %d overruns %d misses %d yields %d, want %d %d 0 0", s.Dl.Jobs, s.Dl.Overruns, s.Dl.Misses, s.Dl.Yields, jobs, jobs)
	}
	expect(t, s, metric.DLExec, jobs, 1_500_000, 1_500_000)
	expect(t, s, metric.Period, jobs-1, d.period, d.period)
}

// Jobs that start too late to end by their deadline: every other job first
// runs 4.5 ms after its 5 ms-deadline release and yields 1 ms later, 0.5 ms
// late: misses counted, the worst lateness kept.
func TestTwinDeadlineMisses(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, false, false)
	d := &dlTask{tw: tw, tid: 100, runtime: 2_000_000, deadline: 5_000_000, period: 10_000_000, rqBehind: 7}
	const jobs = 20
	base := uint64(1_000_000_000)
	for k := range uint64(jobs) {
		rel := base + k*d.period
		start := rel + 100_000
		if k%2 == 1 {
			start = rel + 4_500_000
		}
		d.view(start, rel+d.deadline, 2_000_000, 0)
		tw.switchTo(start, 0, other, 100, false, 0)
		d.view(start+1_000_000, rel+d.deadline, 0, dlThrottled|dlYielded)
		tw.switchTo(start+1_000_000, 0, 100, other, false, 0)
	}
	s := tw.stats(100)
	if s.Dl.Jobs != jobs || s.Dl.Misses != jobs/2 || s.Dl.Overruns != 0 {
		t.Errorf("jobs %d misses %d overruns %d, want %d %d 0", s.Dl.Jobs, s.Dl.Misses, s.Dl.Overruns, jobs, jobs/2)
	}
	if s.Dl.LatenessMax != 500_000 {
		t.Errorf("lateness max %d, want 500000", s.Dl.LatenessMax)
	}
	expect(t, s, metric.DLRelease, jobs, 100_000, 4_500_000)
}

// A sporadic DEADLINE task: woken, it runs, sleeps 100 us inside its job
// (the kernel keeps its deadline), runs again and sleeps. A job starts at
// each wakeup with a new deadline (the wakeup's + its relative deadline)
// and ends at its last sleep before the next: the last job is still open.
func TestTwinDeadlineSleepJobs(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, true, false)
	d := &dlTask{tw: tw, tid: 100, runtime: 1_000_000, deadline: 3_000_000, period: 20_000_000, rqBehind: 42}
	const jobs = 30
	for k := range uint64(jobs) {
		wake := 2_000_000_000 + k*25_000_000
		tw.wakeup(wake, 0, 100)
		d.view(wake+20_000, wake+d.deadline, 1_000_000, 0)
		tw.switchTo(wake+20_000, 0, idle, 100, false, 0)
		d.view(wake+320_000, wake+d.deadline, 700_000, 0)
		tw.switchTo(wake+320_000, 0, 100, idle, true, 0)
		tw.wakeup(wake+420_000, 0, 100)
		d.view(wake+420_000, wake+d.deadline, 700_000, 0)
		tw.switchTo(wake+420_000, 0, idle, 100, false, 0)
		d.view(wake+520_000, wake+d.deadline, 600_000, 0)
		tw.switchTo(wake+520_000, 0, 100, idle, true, 0)
	}
	s := tw.stats(100)
	if s.Dl.Jobs != jobs-1 || s.Dl.Misses != 0 || s.Dl.Overruns != 0 || s.Dl.Yields != 0 {
		t.Errorf("jobs %d misses %d overruns %d yields %d, want %d 0 0 0", s.Dl.Jobs, s.Dl.Misses, s.Dl.Overruns, s.Dl.Yields, jobs-1)
	}
	expect(t, s, metric.DLRelease, jobs-1, 20_000, 20_000)
	expect(t, s, metric.DLExec, jobs-1, 400_000, 400_000)
	expect(t, s, metric.DLResponse, jobs-1, 520_000, 520_000)
	expect(t, s, metric.Latency, 2*jobs, 0, 20_000)
}

// A task that is not DEADLINE (the stub reads no entity) has no job.
func TestTwinNotDeadlineNoJobs(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, false, false)
	d := &dlTask{tw: tw, tid: 100, runtime: 1, deadline: 2, period: 3}
	for k := range uint64(10) {
		now := 1_000_000_000 + k*1_000_000
		d.view(now, now+1000*k, 0, dlNotDL|dlYielded)
		tw.switchTo(now, 0, idle, 100, false, 0)
		d.view(now+500_000, now+1000*k, 0, dlNotDL|dlYielded)
		tw.switchTo(now+500_000, 0, 100, idle, false, 0)
	}
	s := tw.stats(100)
	if s.Dl.Jobs != 0 || s.M[metric.DLResponse].Count != 0 {
		t.Errorf("a task not DEADLINE has %d jobs", s.Dl.Jobs)
	}
}
