package report

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
)

// A task the kernel counted throttled warns, with the count; a worst case
// the analysis calls rt-throttling is a finding without an SLO, as a
// priority inversion is.
func TestThrottlingJudged(t *testing.T) {
	tk := judgeCase(func(s *engine.TaskStats) { noSLO(s); many(s); s.Throttled = 3 })
	if tk.Counters.Throttled != 3 {
		t.Fatalf("counters.throttled %d, want 3", tk.Counters.Throttled)
	}
	m := tk.Metrics["latency"]
	max := uint64(50_000_000)
	m.MaxNs, m.Cause, m.Verdict = &max, causeThrottling, "RT throttling (fair server: ...): 50000.0 us"
	tk.NominalPeriodNs = nil
	Judge(tk)
	if tk.Health != HealthWarn || !strings.Contains(tk.HealthReason, "RT-throttled 3 times") {
		t.Errorf("health %s (%s), want warn naming 3 throttled intervals", tk.Health, tk.HealthReason)
	}
	found := false
	for _, f := range tk.Findings {
		found = found || (f.Cause == causeThrottling && f.Metric == "latency")
	}
	if !found {
		t.Errorf("findings %+v: no rt-throttling finding for the latency worst case", tk.Findings)
	}
	var b strings.Builder
	WriteThrottling(&b, &Report{Tasks: []*Task{tk}})
	if b.Len() != 0 {
		t.Errorf("a report without throttling configuration printed %q", b.String())
	}
}
