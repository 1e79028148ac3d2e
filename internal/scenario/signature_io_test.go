package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/explain"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/slo"
	"github.com/rtscope/rtscope/internal/watch"
)

// The loop faults 256 fresh pages in every cycle, its memory not locked:
// the kernel counts the faults of every run (whatever the windows), and a
// window's verdict says how many its runs took.
func TestSignaturePageFaults(t *testing.T) {
	twice(t, func() error {
		c := watchScenarioWith(t, "page-faults", func(o *watch.Options) { o.Analyze = explain.ForWatch() })["control"]
		resp, cyc := metric(t, c, "response"), metric(t, c, "cycle")
		minor, rel := c.Hygiene[report.HygieneMinorFaults], c.Counters.TimerReleases
		t.Logf("control: %d timer releases, %d minor and %d major page faults, memory_not_locked %d",
			rel, minor, c.Hygiene[report.HygieneMajorFaults], c.Hygiene[report.HygieneMemNotLocked])
		// 1500 cycles in 3 s; every one faults its 256 pages in.
		if rel < 500 || minor < rel*256*9/10 {
			return fmt.Errorf("control: %d minor faults over %d timer releases; want at least 90%% of 256 a release", minor, rel)
		}
		if c.Hygiene[report.HygieneMemNotLocked] != 1 {
			return fmt.Errorf("control's memory is not locked, but memory_not_locked is %d", c.Hygiene[report.HygieneMemNotLocked])
		}
		t.Logf("verdicts: response %q; cycle %q", resp.Verdict, cyc.Verdict)
		// Every run of the loop faults: any worst window holds faults.
		for _, m := range []*report.Metric{resp, cyc} {
			if !strings.Contains(m.Verdict, "page faults during") || !strings.Contains(m.Verdict, "memory not locked") {
				return fmt.Errorf("worst window verdict %q: want its page faults and the unlocked memory", m.Verdict)
			}
		}
		return nil
	})
}

// The writer blocks in pipe_write on most cycles, until the reader's next
// read: its cycle SLO violations are explained as that blocking, named at
// every sleep ("pipe write", never "no stack sample"), woken by the reader.
func TestSignaturePipeWrite(t *testing.T) {
	twice(t, func() error {
		tasks := watchScenarioWith(t, "pipe-write", func(o *watch.Options) {
			b, _ := slo.Parse("cycle=700us")
			o.SLO = slo.Build([]slo.Bound{b})
			o.Explain = explain.ForViolation
		})
		wr := tasks["writer"]
		cyc := metric(t, wr, "cycle")
		c := wr.Counters
		if c.VoluntarySwitches < c.TimerReleases+300 {
			return fmt.Errorf("writer: %d voluntary switches for %d timer releases; want 300 blocked writes at least",
				c.VoluntarySwitches, c.TimerReleases)
		}
		v := cyc.ViolationCauses
		if v == nil || v.Analysed < 50 {
			return fmt.Errorf("writer: cycle violations %+v; want at least 50 explained (the analysis budget allows 50 a second)", v)
		}
		var pipe, platform uint64
		for _, k := range v.Causes {
			t.Logf("  %d x %s: %s (e.g. %s)", k.Count, k.Cause, k.Culprit, k.Example.Verdict)
			switch {
			case strings.Contains(k.Example.Verdict, "no stack sample"):
				return fmt.Errorf("a sleep is still unnamed: %s", k.Example.Verdict)
			case k.Cause == "internal-blocking" && strings.Contains(k.Culprit, "pipe write") && strings.Contains(k.Culprit, "reader"):
				pipe += k.Count
			case platformCauses[k.Cause]:
				platform += k.Count
			}
		}
		if (pipe+platform)*10 < v.Analysed*9 || pipe*10 < v.Analysed*7 {
			return fmt.Errorf("%d of %d explained violations are the pipe write woken by the reader (%d the platform's); want 70%% and 90%% with the platform's",
				pipe, v.Analysed, platform)
		}
		return nil
	})
}
