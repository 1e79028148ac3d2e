package report

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/trace"
)

// consistent is a report that Check passes: one judged periodic task whose
// every maximum has its window.
func consistent() *Report {
	s := sampleStats()
	s.Overruns = 0
	it := &s.M[metric.Iteration]
	it.Count, it.Sum, it.Min, it.Max = 100, 100*2000000, 1900000, 2100000
	t := FromStats(s)
	for _, m := range t.Metrics {
		if m.Count > 0 {
			m.Worst = &trace.Trace{Value: *m.MaxNs}
		}
	}
	Judge(t)
	return &Report{Features: Features{Trace: true}, Tasks: []*Task{t}}
}

// decoded is an analysis as a report read back holds it.
func decoded(fields map[string]any) Analysis { return Decoded(fields) }

// TestCheckCatchesEachInvariant breaks one invariant at a time in a
// consistent report: Check names that one, and nothing else.
func TestCheckCatchesEachInvariant(t *testing.T) {
	if ps := Check(consistent()); len(ps) != 0 {
		t.Fatalf("a consistent report: %v", ps)
	}
	cpu1 := 1
	for _, c := range []struct {
		inv     string
		breakIt func(r *Report)
	}{
		{InvNoOverrunTooLong, func(r *Report) {
			m := r.Tasks[0].Metrics["iteration"]
			*m.MaxNs = 45500600 // 22.8 periods of 2 ms
			m.Worst.Value = *m.MaxNs
			m.Verdict = "no overrun: the iteration took 45500.6 us, its work 1044.0 us within its 2000.0 us period, then it slept 44456.6 us"
		}},
		{InvOverrunsIterations, func(r *Report) { r.Tasks[0].Counters.Overruns = 43272049 }},
		{InvBoostLabelled, func(r *Report) {
			low := &Task{TID: 8467, Comm: "task-L", Sched: "FIFO 10", SchedSeen: []string{"OTHER nice 0", "FIFO 10"}}
			r.Tasks = append(r.Tasks, low)
			r.Tasks[0].Metrics["latency"].Verdict = "interference by a higher priority: task-L/8467 (FIFO 90) ran 800.0 us"
		}},
		{InvWorstWindow, func(r *Report) { r.Tasks[0].Metrics["latency"].Worst = nil }},
		{InvFindingsRanked, func(r *Report) {
			r.Tasks[0].Findings = []Finding{{Cause: "hardirq", CostNs: 10}, {Cause: "interference", CostNs: 900}}
		}},
		{InvCounterVerdict, func(r *Report) {
			r.Tasks[0].Metrics["iteration"].Verdict = "period 5394.3 us: an overrun: its cycle took 5394.3 us"
		}},
		{InvRuledOutAbsent, func(r *Report) {
			m := r.Tasks[0].Metrics["latency"]
			m.Analysis = decoded(map[string]any{"ruled_out": []any{"higher-priority threads"}})
			m.Worst.Events = []trace.Event{
				{Type: trace.EventWakeup, TID: 1234, TargetCPU: &cpu1, CPU: 0},
				{Type: trace.EventSwitch, CPU: 1, T: 1000, NextTID: 99, NextComm: "load", NextSched: "FIFO 85"},
				{Type: trace.EventSwitch, CPU: 1, T: 9000, PrevTID: 99, NextTID: 1234, NextSched: "FIFO 80"},
			}
		}},
	} {
		r := consistent()
		c.breakIt(r)
		ps := Check(r)
		if len(ps) != 1 || ps[0].Invariant != c.inv {
			t.Errorf("%s broken: Check found %v", c.inv, ps)
		}
	}
}

// A boost that says so, a lower priority running, and an overrun verdict
// with overruns counted are no problem.
func TestCheckAcceptsTheTruth(t *testing.T) {
	r := consistent()
	low := &Task{TID: 8467, Comm: "task-L", Sched: "FIFO 10", SchedSeen: []string{"FIFO 10"}}
	r.Tasks = append(r.Tasks, low)
	tk := r.Tasks[0]
	tk.Metrics["latency"].Verdict = "interference: task-L/8467 (FIFO 90), boosted from FIFO 10 by task-H (PI) ran 800.0 us"
	tk.Counters.Overruns = 3
	tk.Metrics["iteration"].Verdict = "overrun: the loop's work took 2100.0 us of its 2000.0 us period"
	cpu1 := 1
	m := tk.Metrics["timer-irq"]
	if m == nil || m.Worst == nil {
		m = tk.Metrics["latency"]
	}
	m.Analysis = decoded(map[string]any{"ruled_out": []any{"higher-priority threads"}})
	m.Worst.Events = []trace.Event{
		{Type: trace.EventWakeup, TID: 1234, TargetCPU: &cpu1},
		{Type: trace.EventSwitch, CPU: 1, NextTID: 99, NextSched: "FIFO 50"},
		{Type: trace.EventSwitch, CPU: 0, NextTID: 98, NextSched: "FIFO 99"}, // another CPU
	}
	if ps := Check(r); len(ps) != 0 {
		t.Errorf("problems in a consistent report: %v", ps)
	}
}

// Judge ranks what it finds: the findings of a judged task pass Check, and
// a hygiene finding comes after the timed ones.
func TestFindingsRankedByCost(t *testing.T) {
	s := sampleStats()
	s.M[metric.Latency].Slo, s.M[metric.Latency].Violations = 0, 0
	tk := FromStats(s)
	for id, cost := range map[string]uint64{"latency": 20000, "response": 90000} {
		m := tk.Metrics[id]
		v := cost + 1000
		m.Count, m.MaxNs = 10, &v
		m.Cause, m.Verdict = "interference", "interference by "+id
		m.Analysis = decoded(map[string]any{"culprit": "hog/" + id, "breakdown": []any{
			map[string]any{"label": "hog/" + id + " ran: higher priority", "ns": float64(cost)}}})
	}
	*tk.NominalPeriodNs = 10000 // both beyond the period
	Judge(tk)
	f := tk.Findings
	if len(f) != 3 || f[0].CostNs != 90000 || f[1].CostNs != 20000 || f[2].Cause != CauseHygiene {
		t.Fatalf("findings %+v", f)
	}
	if !strings.Contains(f[0].Line(), "(worst response 91.0 us)") {
		t.Errorf("line %q", f[0].Line())
	}
	if ps := Check(&Report{Tasks: []*Task{tk}}); len(ps) != 0 {
		t.Errorf("a judged task: %v", ps)
	}
}
