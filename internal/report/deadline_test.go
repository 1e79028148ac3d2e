package report

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
)

// dlTask is a DEADLINE task's report from engine statistics: its jobs and
// a dl-response sample per job.
func dlTask(jobs, overruns, misses uint64, lateness int64) *Task {
	s := &engine.TaskStats{Tid: 7, Pid: 7, Policy: 6, Prio: -1, NominalPeriod: 5_000_000}
	s.Dl = engine.DLStats{Runtime: 1_500_000, Deadline: 5_000_000, Period: 5_000_000, Jobs: jobs,
		Yields: jobs - overruns, Overruns: overruns, Misses: misses, LatenessMax: lateness}
	m := &s.M[metric.DLResponse]
	m.Count, m.Sum, m.Min, m.Max = jobs, jobs*600_000, 500_000, 700_000
	m.Hist[metric.Bucket(600_000)] = uint32(jobs)
	e := &s.M[metric.DLExec]
	e.Count, e.Sum, e.Min, e.Max = jobs, jobs*400_000, 400_000, 400_000
	e.Hist[metric.Bucket(400_000)] = uint32(jobs)
	t := FromStats(s)
	Judge(t)
	return t
}

// A spinning task's jobs run past their runtime (the kernel enforces it at
// its tick): the judgement says how long its median job ran.
func TestJudgeDeadlineTickOverrun(t *testing.T) {
	s := &engine.TaskStats{Tid: 7, Policy: 6, Prio: -1}
	s.Dl = engine.DLStats{Runtime: 1_500_000, Deadline: 5_000_000, Period: 5_000_000, Jobs: 600, Overruns: 600}
	e := &s.M[metric.DLExec]
	e.Count, e.Sum, e.Min, e.Max = 600, 600*2_600_000, 2_500_000, 4_600_000
	e.Hist[metric.Bucket(2_600_000)] = 600
	tk := FromStats(s)
	Judge(tk)
	if tk.Health != HealthFail || !strings.Contains(tk.HealthReason, "in 600 of 600 jobs") ||
		!strings.Contains(tk.HealthReason, "its median job ran") || !strings.Contains(tk.HealthReason, "scheduler tick") {
		t.Errorf("%s: %s", tk.Health, tk.HealthReason)
	}
	if ok := dlTask(600, 120, 0, 0); strings.Contains(ok.HealthReason, "median") {
		t.Errorf("jobs within their runtime said to run past it: %s", ok.HealthReason)
	}
}

// A DEADLINE task is judged by its jobs: parameters shown, a runtime
// overrun or a deadline miss fails it, and none of it speaks of priorities.
func TestJudgeDeadline(t *testing.T) {
	ok := dlTask(600, 0, 0, -4_300_000)
	if ok.Deadline == nil || ok.Deadline.Params() != "runtime 1500.0 us, deadline 5000.0 us, period 5000.0 us" {
		t.Fatalf("deadline %+v", ok.Deadline)
	}
	if ok.Health != HealthOK || !strings.Contains(ok.HealthReason, "kept its deadlines in 600 jobs") ||
		!strings.Contains(ok.Headline, "worst dl-response 700.0 us, 0.14 of its deadline (runtime 1500.0 us") {
		t.Errorf("healthy: %s: %s; %s", ok.Health, ok.HealthReason, ok.Headline)
	}
	over := dlTask(600, 120, 0, -1_000_000)
	if over.Health != HealthFail || !strings.Contains(over.HealthReason, "overran its 1500.0 us runtime in 120 of 600 jobs") {
		t.Errorf("overrun: %s: %s", over.Health, over.HealthReason)
	}
	late := dlTask(600, 0, 3, 250_000)
	if late.Health != HealthFail || !strings.Contains(late.HealthReason, "missed its deadline in 3 of 600 jobs (the latest 250.0 us late)") {
		t.Errorf("late: %s: %s", late.Health, late.HealthReason)
	}
	for _, tk := range []*Task{ok, over, late} {
		if strings.Contains(tk.HealthReason+tk.Headline, "priority") {
			t.Errorf("a DEADLINE task's judgement speaks of priorities: %s", tk.HealthReason)
		}
	}
	if FromStats(&engine.TaskStats{Policy: 1, Prio: 10}).Deadline != nil {
		t.Error("a FIFO task has a deadline object")
	}
}
