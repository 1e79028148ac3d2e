package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/report"
)

// dlJobs returns the dljob thread's DEADLINE report, checking its
// parameters and that its jobs are counted within 5% of its periods (3 s
// of 5 ms: 600; the run lasts a little longer).
func dlJobs(t *testing.T, name string) (*report.Task, *report.Deadline, error) {
	tk := watchScenarioWith(t, name, nil)["dljob"]
	d := tk.Deadline
	if d == nil {
		return tk, nil, fmt.Errorf("dljob (%s) has no DEADLINE jobs", tk.Sched)
	}
	t.Logf("dljob: %s; %d jobs, %d yields, %d overruns, %d misses; %s: %s", d.Params(), d.Jobs, d.Yields, d.Overruns,
		d.Misses, tk.Health, tk.HealthReason)
	if d.RuntimeNs != uint64(1500*us) || d.DeadlineNs != uint64(5*ms) || d.PeriodNs != uint64(5*ms) {
		return tk, d, fmt.Errorf("parameters %s, want runtime 1500 us, deadline and period 5000 us", d.Params())
	}
	if periods := uint64(3 * 1000 / 5); d.Jobs*100 < periods*95 || d.Jobs*100 > periods*110 {
		return tk, d, fmt.Errorf("%d jobs in 3 s of 5 ms periods; want %d within 5%% (10%% above: start and end)", d.Jobs, periods)
	}
	if strings.Contains(tk.HealthReason+tk.Headline, "real-time priority") {
		return tk, d, fmt.Errorf("a DEADLINE task told to take a real-time priority: %s", tk.HealthReason)
	}
	return tk, d, nil
}

// healthy-deadline: every job ends by sched_yield within its runtime and
// deadline. A hypervisor stall may throttle one: 1% is allowed, not more.
func TestSignatureHealthyDeadline(t *testing.T) {
	twice(t, func() error {
		_, d, err := dlJobs(t, "healthy-deadline")
		if err != nil {
			return err
		}
		if d.Yields*100 < d.Jobs*98 || d.Overruns*100 > d.Jobs || d.Misses*100 > d.Jobs {
			return fmt.Errorf("%d of %d jobs yielded, %d overran, %d missed; want 98%% yielded, 1%% at most overran or missed",
				d.Yields, d.Jobs, d.Overruns, d.Misses)
		}
		return nil
	})
}

// deadline-overrun: every 4th job needs 2 ms of its 1.5 ms runtime: it is
// throttled (an overrun) and ends by sched_yield in the next period. Its 4
// jobs take 5 instances, one overran: 20% of the instances rtscope counts
// as jobs; the task fails with a DEADLINE reason.
func TestSignatureDeadlineOverrun(t *testing.T) {
	twice(t, func() error {
		tk, d, err := dlJobs(t, "deadline-overrun")
		if err != nil {
			return err
		}
		if d.Overruns*100 < d.Jobs*17 || d.Overruns*100 > d.Jobs*23 {
			return fmt.Errorf("%d of %d jobs overran; want 20%% (one in 5: the heavy job's first instance)", d.Overruns, d.Jobs)
		}
		if tk.Health != report.HealthFail || !strings.Contains(tk.HealthReason, "overran its 1500.0 us runtime") {
			return fmt.Errorf("judged %s (%s); want fail, overran its runtime", tk.Health, tk.HealthReason)
		}
		return nil
	})
}
