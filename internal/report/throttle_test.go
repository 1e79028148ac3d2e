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

// TestWriteStealResolution: /proc/stat counts steal in 10 ms steps, so a
// run below one step is "under 10000 us", never "0.0 us" beside windows
// that hold steal (pmqtest: 0.0 us over the run, 17254.4 us in its
// windows); a sum over windows says a stall counts in each.
func TestWriteStealResolution(t *testing.T) {
	var b strings.Builder
	WriteSteal(&b, &Steal{Readable: true, PerCPUNs: []uint64{0, 0}, WorstCases: 35,
		WorstCasesWithSteal: 9, WorstCaseStealNs: 17_254_400, WorstCasesHypervisor: 7}, 5_600_000_000)
	got := b.String()
	for _, want := range []string{"under 10000 us a CPU", "9 of 35 worst cases hold steal (17254.4 us summed over them, a stall counted in each window it is in), 7 mostly the platform's\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "0.0 us") {
		t.Errorf("steal below /proc/stat's step said as 0:\n%s", got)
	}
	b.Reset()
	WriteSteal(&b, &Steal{Readable: true, RunNs: 20_000_000, PerCPUNs: []uint64{10_000_000, 10_000_000},
		WorstCases: 98, WorstCasesWithSteal: 1, WorstCaseStealNs: 18_800, WorstCasesHypervisor: 2}, 5_000_000_000)
	want := "hypervisor steal over the run: 20000 us (0.2% of CPU time; /proc/stat: 10000 us steps); " +
		"1 of 98 worst cases hold steal (18.8 us), 2 mostly the platform's (steal, or a CPU that did not run)\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// TestSummaryWakeupsUnseen: runs seen only by their end are said in the lost
// line, with what became of their cycles.
func TestSummaryWakeupsUnseen(t *testing.T) {
	var b strings.Builder
	WriteSummary(&b, &Report{Lost: Lost{WakeupsUnseen: 3}}, TextOptions{})
	if !strings.Contains(b.String(), ", 3 wakeups the kernel did not report (their cycles left out)") {
		t.Errorf("lost line without the unseen runs:\n%s", b.String())
	}
}
