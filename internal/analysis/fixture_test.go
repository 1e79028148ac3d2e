package analysis

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/preempt"
	"github.com/rtscope/rtscope/internal/trace"
)

// fixture is a window captured from a real run (testdata/windows, see the
// README there) with the verdict it must get.
type fixture struct {
	Source  string `json:"source"`
	Subject struct {
		TID           uint32  `json:"tid"`
		Comm          string  `json:"comm"`
		Policy        string  `json:"policy"`
		Sched         string  `json:"sched"`
		Priority      *int    `json:"priority"`
		Nice          *int    `json:"nice"`
		NominalPeriod *uint64 `json:"nominal_period_ns"`
	} `json:"subject"`
	Metric     string        `json:"metric"`
	Preemption preempt.Model `json:"preemption"`
	Want       struct {
		Cause   Cause    `json:"cause"`
		Culprit string   `json:"culprit"`
		Words   []string `json:"verdict_contains"`
		// WithoutSteal: the cause the window got before the engine read
		// steal (its steal events removed): the misjudgement it fixes.
		WithoutSteal Cause `json:"without_steal_cause"`
		// WithoutStack: the same for the stack samples.
		WithoutStack Cause `json:"without_stack_cause"`
		// WithoutMonitor: the cause without the trace's monitor_tids (before
		// rtscope's own threads were told apart from the workload's).
		WithoutMonitor Cause `json:"without_monitor_cause"`
		// WithoutSlack: the cause without the timers' granted slack
		// (slack_ns), as the analysis judged before the engine carried it.
		WithoutSlack Cause `json:"without_slack_cause"`
		// WithoutThrottle: the cause before throttling was detected
		// (throttle.go): pi_stress's fair-server gap was "exit from idle", and is "unexplained" since the idle exit bound.
		WithoutThrottle Cause `json:"without_throttle_cause"`
	} `json:"want"`
	Trace *trace.Trace `json:"trace"`
}

func loadFixtures(t *testing.T) map[string]*fixture {
	t.Helper()
	files, err := filepath.Glob("testdata/windows/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in testdata/windows: %v", err)
	}
	out := map[string]*fixture{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fx fixture
		if err := json.Unmarshal(b, &fx); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = &fx
	}
	return out
}

// subject describes the fixture's task as explain.SubjectOf describes a
// report task (its kernel priority from the policy, RT priority or nice).
func (fx *fixture) subject() Subject {
	f := fx.Subject
	s := Subject{TID: f.TID, Comm: f.Comm, Policy: f.Policy, Sched: f.Sched, Metric: fx.Metric, KPrio: 120}
	switch {
	case f.Policy == "DEADLINE":
		s.KPrio = -1
	case f.Priority != nil:
		s.KPrio = 99 - *f.Priority
	case f.Nice != nil:
		s.KPrio = 120 + *f.Nice
	}
	if f.NominalPeriod != nil {
		s.NominalPeriod = *f.NominalPeriod
	}
	return s
}

// Windows from real runs on this project's machines, each with its verdict.
func TestRecordedWindows(t *testing.T) {
	for name, fx := range loadFixtures(t) {
		t.Run(name, func(t *testing.T) {
			model := fx.Preemption
			if model == "" {
				model = "none"
			}
			r := explain(fx.Trace, fx.subject(), model)
			checkSums(t, r)
			wantCause(t, r, fx.Want.Cause, fx.Want.Words...)
			if fx.Want.Culprit != "" && r.Culprit != fx.Want.Culprit {
				t.Errorf("culprit %q, want %q", r.Culprit, fx.Want.Culprit)
			}
			without := func(typ trace.EventType, cause Cause, what string) {
				if cause == "" {
					return
				}
				stripped := *fx.Trace
				stripped.Events = nil
				for _, e := range fx.Trace.Events {
					if e.Type != typ {
						stripped.Events = append(stripped.Events, e)
					}
				}
				if typ == "steal" {
					stripped.StealClock = false
				}
				if r0 := explain(&stripped, fx.subject(), model); r0.Cause != cause {
					t.Errorf("without its %s the window gets %q (%s), want %q: the fixture no longer shows what %s fixes",
						what, r0.Cause, r0.Verdict, cause, what)
				}
			}
			if len(fx.Trace.Monitor) > 0 {
				var ns uint64
				for _, it := range r.Breakdown {
					if it.Thread != nil && it.Thread.Monitor {
						ns += it.Ns
					}
				}
				// A window the monitor did not run in has 0 of both; the
				// fixtures about the monitor name without_monitor_cause.
				if r.MonitorNs != ns || (ns == 0 && fx.Want.WithoutMonitor != "") {
					t.Errorf("monitor_ns %d, want the %d ns of the monitor's items", r.MonitorNs, ns)
				}
			}
			if c := fx.Want.WithoutMonitor; c != "" {
				anon := *fx.Trace
				anon.Monitor = nil
				if r0 := explain(&anon, fx.subject(), model); r0.Cause != c || r0.MonitorNs != 0 || strings.Contains(r0.Verdict, MonitorName) {
					t.Errorf("without monitor_tids the window gets %q (%s), want %q: the fixture no longer shows the monitor told apart",
						r0.Cause, r0.Verdict, c)
				}
			}
			if c := fx.Want.WithoutSlack; c != "" {
				bare := *fx.Trace
				bare.Events = slices.Clone(fx.Trace.Events)
				for i := range bare.Events {
					bare.Events[i].SlackNs = nil
				}
				if r0 := explain(&bare, fx.subject(), model); r0.Cause != c || r0.Culprit == "timer slack" {
					t.Errorf("without its timers' slack the window gets %q (%s), want %q: the fixture no longer shows what the slack fixes",
						r0.Cause, r0.Verdict, c)
				}
			}
			if c := fx.Want.WithoutThrottle; c != "" {
				s := fx.subject()
				s.noThrottle = true
				if r0 := explain(fx.Trace, s, model); r0.Cause != c {
					t.Errorf("without throttle detection the window gets %q (%s), want %q", r0.Cause, r0.Verdict, c)
				}
			}
			without("steal", fx.Want.WithoutSteal, "steal events")
			without("stack", fx.Want.WithoutStack, "stack samples")
		})
	}
}
