package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/analysis"
	"github.com/rtscope/rtscope/internal/explain"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/slo"
	"github.com/rtscope/rtscope/internal/watch"
)

// The poller never sleeps: its noise intervals over 150 us are the
// injected spins (the timer interrupt, hardirq) and the preempter's
// activations (interference by the preempter). Over the run, with a noise
// SLO of 150 us: the kernel counted a violation for at least 90% of the
// disturbances, and of the violations analysed at least 90% are one of the
// two injectors or the platform's (steal, RT throttling of the spinning
// poller), each injector named (the spins 3 times at least, the
// preemptions 10: the analysis budget samples them); the poller is judged
// by its noise against its SLO, not UNKNOWN.
func TestSignatureBusyPollNoise(t *testing.T) {
	twice(t, func() error {
		path := t.TempDir() + "/injected.json"
		t.Setenv(resultEnv, path)
		tasks := watchScenarioWith(t, "busy-poll-noise", func(o *watch.Options) {
			b, _ := slo.Parse("noise=150us")
			o.SLO = slo.Build([]slo.Bound{b})
			o.Explain = explain.ForViolation
			o.Analyze = explain.ForWatch()
		})
		p := tasks["poller"]
		nz := metric(t, p, "noise")
		t.Logf("poller: %s (%s); headline %q", p.Health, p.HealthReason, p.Headline)
		// Its SLO decides, against its noise: never UNKNOWN for lack of wakeups.
		if p.Health == report.HealthUnknown || !strings.HasPrefix(p.Headline, "worst noise") {
			return fmt.Errorf("poller judged %s, headline %q: want it judged by its noise", p.Health, p.Headline)
		}
		rel := tasks["preempter"].Counters.TimerReleases
		v := nz.ViolationCauses
		// 3 s: 30 spins and 300 activations of the preempter.
		if v == nil || v.Total*10 < (rel+30)*9/2 {
			return fmt.Errorf("poller: violations %+v for %d preempter activations and ~30 spins; want most of them", v, rel)
		}
		var spins, preempts, platform uint64
		for _, c := range v.Causes {
			t.Logf("  %d x %s: %s (e.g. %s)", c.Count, c.Cause, c.Culprit, c.Example.Verdict)
			switch {
			case c.Cause == "hardirq" && strings.Contains(c.Culprit, "irq-inject"):
				spins += c.Count
			case strings.Contains(c.Culprit, "preempter"):
				preempts += c.Count
			case platformCauses[c.Cause] || c.Cause == string(analysis.CauseThrottling):
				platform += c.Count
			}
		}
		t.Logf("%d violations, %d analysed: %d spins, %d preemptions, %d platform or throttling", v.Total, v.Analysed, spins, preempts, platform)
		// The analysis budget (50 windows a second) takes the spins' 30
		// violations in the same share as the preempter's 300: 5-14 of them
		// were analysed here, beside another job's load.
		if spins < 3 || preempts < 10 {
			return fmt.Errorf("%d spins and %d preemptions named; want 3 and 10 at least", spins, preempts)
		}
		if (spins+preempts+platform)*10 < v.Analysed*9 {
			return fmt.Errorf("%d of %d analysed violations are the injectors' or the platform's; want 90%%", spins+preempts+platform, v.Analysed)
		}
		return nil
	})
}
