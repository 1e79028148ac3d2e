package report

import (
	"fmt"
	"strings"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/units"
)

// Health is the judgement of a task (JSON "health"): computed once by
// Judge, it feeds the text, JSON, HTML, serve's /metrics, the actions and
// the exit status (--fail-on).
type Health string

// The judgements, from the best to the worst.
const (
	HealthOK      Health = "ok"      // every SLO kept, or no period missed and no finding
	HealthUnknown Health = "unknown" // too few events, or contradictory ones, to judge
	HealthWarn    Health = "warn"    // a real-time hygiene finding, or a period exceeded without an overrun
	HealthFail    Health = "fail"    // an SLO violated, or a period missed
)

// Rank orders the judgements: fail 3, warn 2, unknown 1, ok 0; a word
// this rtscope does not know (a v1 report's "no-slo") ranks 1.
func (h Health) Rank() int {
	switch h {
	case HealthOK:
		return 0
	case HealthWarn:
		return 2
	case HealthFail:
		return 3
	}
	return 1
}

// Known tells whether h is one of this schema's judgements (a report of
// schema v1 read back holds "no-slo" and the like).
func (h Health) Known() bool {
	switch h {
	case HealthOK, HealthUnknown, HealthWarn, HealthFail:
		return true
	}
	return false
}

// ParseHealth reads a judgement named on the command line (--fail-on).
func ParseHealth(s string) (Health, error) {
	switch h := Health(strings.ToLower(s)); h {
	case HealthOK, HealthUnknown, HealthWarn, HealthFail:
		return h, nil
	}
	return "", fmt.Errorf("health %q: want ok, unknown, warn or fail", s)
}

// minJudgeEvents: a task with fewer samples than this in every metric is
// not judged OK (UNKNOWN): 9 wakeups say nothing of a loop.
const minJudgeEvents = 10

// Judge sets t's findings, health, health reason and headline from its
// metrics, counters, hygiene, violation causes and worst cases: call it
// once these are attached.
func Judge(t *Task) {
	t.Findings = Findings(t)
	t.NoiseNsPerS = noisePerS(t)
	t.Health, t.HealthReason = judge(t)
	t.Headline = headline(t)
}

// judge is the rule: with SLOs, the SLOs decide; without, a periodic task
// fails when it misses its period, real-time hygiene findings warn, and too
// few events (or an overrun count beyond the iterations) is unknown.
func judge(t *Task) (Health, string) {
	if h, why, ok := judgeSLO(t); ok {
		return h, why
	}
	if h, why, ok := judgeDeadline(t); ok {
		if warns := hygieneWarnings(t); h == HealthOK && len(warns) > 0 {
			return HealthWarn, why + "; " + strings.Join(warns, "; ")
		}
		return h, why
	}
	if samples(t) == 0 {
		return HealthUnknown, "no samples"
	}
	var warns []string
	if p := t.NominalPeriodNs; p != nil {
		it := iterations(t)
		switch o := t.Counters.Overruns; {
		case o > it:
			return HealthUnknown, fmt.Sprintf("%d overruns counted in %d iterations: its period is not credible", o, it)
		case o > 0:
			return HealthFail, fmt.Sprintf("missed its period %s in %d iterations", times(o), it)
		}
		if id, v := worstAgainst(t); v > *p {
			warns = append(warns, fmt.Sprintf("%s %s us beyond its period, no overrun counted", id, units.Us(v)))
		}
	}
	warns = append(warns, hygieneWarnings(t)...)
	switch {
	case len(warns) > 0:
		return HealthWarn, strings.Join(warns, "; ")
	case samples(t) < minJudgeEvents:
		return HealthUnknown, fmt.Sprintf("too few events to judge (%s)", plural(samples(t), "sample"))
	case t.NominalPeriodNs != nil:
		return HealthOK, fmt.Sprintf("kept its period in %d iterations", iterations(t))
	case busyPoll(t):
		return HealthOK, fmt.Sprintf("no finding in %s (no SLO, no period; %s)", plural(t.Metrics[metric.Noise.String()].Count, "interruption"), sleeps(t))
	}
	return HealthOK, fmt.Sprintf("no finding in %d wakeups (no SLO, no period)", t.Counters.Wakeups)
}

// judgeSLO judges by the SLOs when t has any (ok false without).
func judgeSLO(t *Task) (Health, string, bool) {
	var worst metric.ID = -1
	var withSLO bool
	var total uint64
	for _, id := range metric.All() {
		m := t.Metrics[id.String()]
		if m == nil || m.SLONs == nil {
			continue
		}
		withSLO = true
		if m.Violations == nil || *m.Violations == 0 {
			continue
		}
		total += *m.Violations
		if worst < 0 || *m.Violations > *t.Metrics[worst.String()].Violations {
			worst = id
		}
	}
	switch {
	case worst >= 0:
		m := t.Metrics[worst.String()]
		s := fmt.Sprintf("%s %d of %d over its %s us SLO (%s)", worst, *m.Violations, m.Count, units.Us(*m.SLONs),
			percent(*m.Violations, m.Count))
		if total > *m.Violations {
			s += fmt.Sprintf(", %d violations in all", total)
		}
		return HealthFail, s, true
	case withSLO:
		return HealthOK, "every SLO kept", true
	}
	return "", "", false
}

// samples is the largest sample count of t's metrics.
func samples(t *Task) uint64 {
	var n uint64
	for _, m := range t.Metrics {
		n = max(n, m.Count)
	}
	return n
}

// iterations counts the loop's iterations: the iteration metric's samples
// (a loop that never sleeps has no cycle), else the cycles.
func iterations(t *Task) uint64 {
	if m := t.Metrics[metric.Iteration.String()]; m != nil && m.Count > 0 {
		return m.Count
	}
	if m := t.Metrics[metric.Cycle.String()]; m != nil {
		return m.Count
	}
	return 0
}

// worstAgainst is the metric of t that compares with a period (the work
// of an iteration: cycle, else response) and its maximum.
func worstAgainst(t *Task) (metric.ID, uint64) {
	for _, id := range []metric.ID{metric.Cycle, metric.Response} {
		if m := t.Metrics[id.String()]; m != nil && m.Count > 0 && m.MaxNs != nil {
			return id, *m.MaxNs
		}
	}
	return -1, 0
}

// ranRT tells whether t ran with a real-time policy at some time.
func ranRT(t *Task) bool {
	if t.Priority != nil {
		return true
	}
	for _, s := range append([]string{t.Sched}, t.SchedSeen...) {
		if strings.HasPrefix(s, "FIFO") || strings.HasPrefix(s, "RR") || strings.HasPrefix(s, "DEADLINE") {
			return true
		}
	}
	return false
}

// hygieneWarnings are the real-time hygiene findings of a task that ran
// real-time: page faults, a loop sleeping relative, a mutex without
// priority inheritance where a priority inversion was seen, wakeups by
// lower priorities. A task that never ran real-time has none.
func hygieneWarnings(t *Task) []string {
	if !ranRT(t) {
		return nil
	}
	var out []string
	if f := t.Hygiene[HygieneMinorFaults] + t.Hygiene[HygieneMajorFaults]; f > 0 {
		out = append(out, plural(f, "page fault")+" of a real-time task")
	}
	// One relative sleep is the start-up's; a periodic loop whose sleeps
	// are relative (a tenth or more of its timer releases) drifts by its
	// work. A task without a period has no period to drift.
	if n := t.Hygiene["relative_timer_sleeps"]; n > 0 && t.NominalPeriodNs != nil && n*10 >= t.Counters.TimerReleases {
		out = append(out, plural(n, "relative timer sleep")+" (the period drifts)")
	}
	if n := t.Hygiene["futex_waits_without_pi"]; n > 0 && inversionSeen(t) {
		out = append(out, "a mutex without priority inheritance, and a priority inversion seen")
	}
	if n := t.Hygiene["woken_by_lower_priority"]; n > 0 {
		out = append(out, fmt.Sprintf("woken by a lower priority %s", times(n)))
	}
	// Preempted for a lower class: the real-time load of its CPU is
	// throttled (the fair server, sched_rt_runtime_us).
	// A DEADLINE task's throttling is its own runtime's (or the fair
	// server's earlier deadline), not sched_rt_runtime_us.
	if n := t.Counters.Throttled; n > 0 && t.Policy == "DEADLINE" {
		out = append(out, fmt.Sprintf("DEADLINE-throttled %s (its runtime used up, or the fair server's turn)", times(n)))
	} else if n > 0 {
		out = append(out, fmt.Sprintf("RT-throttled %s (its CPU given to SCHED_OTHER tasks: the fair server, sched_rt_runtime_us)", times(n)))
	}
	return out
}

// causePriorityInversion is the analysis' cause of a priority inversion.
const causePriorityInversion = "priority-inversion"

// inversionSeen tells whether a window of t held a priority inversion:
// its cause, or one the analysis found beside another cause.
func inversionSeen(t *Task) bool {
	for _, m := range t.Metrics {
		if m.Cause == causePriorityInversion {
			return true
		}
		if f := factsOf(m.Analysis); f.Inversion != nil && f.Inversion.Inverted {
			return true
		}
		if m.ViolationCauses != nil {
			for _, c := range m.ViolationCauses.Causes {
				if c.Cause == causePriorityInversion {
					return true
				}
			}
		}
	}
	return false
}

// headline is t's worst metric against its SLO or its period: the SLO
// metric with the largest share over its bound; else the cycle (or
// response) against the period; else the worst latency.
func headline(t *Task) string {
	var best metric.ID = -1
	var ratio float64
	for _, id := range metric.All() {
		m := t.Metrics[id.String()]
		if m == nil || m.SLONs == nil || m.MaxNs == nil || *m.SLONs == 0 {
			continue
		}
		if r := float64(*m.MaxNs) / float64(*m.SLONs); best < 0 || r > ratio {
			best, ratio = id, r
		}
	}
	if best >= 0 {
		m := t.Metrics[best.String()]
		return fmt.Sprintf("worst %s %s us against its %s us SLO", best, units.Us(*m.MaxNs), units.Us(*m.SLONs))
	}
	if h, ok := deadlineHeadline(t); ok {
		return h
	}
	if p := t.NominalPeriodNs; p != nil && *p > 0 {
		if id, v := worstAgainst(t); id >= 0 {
			return fmt.Sprintf("worst %s %s us, %s of its period", id, units.Us(v), fraction(v, *p))
		}
	}
	if busyPoll(t) {
		return noiseHeadline(t)
	}
	for _, id := range []metric.ID{metric.Latency, metric.Response, metric.Handler} {
		if m := t.Metrics[id.String()]; m != nil && m.Count > 0 && m.MaxNs != nil {
			return fmt.Sprintf("worst %s %s us in %d", id, units.Us(*m.MaxNs), m.Count)
		}
	}
	return "no samples"
}

// sleeps says how rarely busy poller t slept: never, or less often than
// it was interrupted (stress-ng's parent, 3 wakeups and 15 interruptions,
// "never slept").
func sleeps(t *Task) string {
	switch t.Counters.Wakeups {
	case 0:
		return "it never sleeps"
	case 1:
		return "woken only once"
	}
	return fmt.Sprintf("woken only %d times", t.Counters.Wakeups)
}

// fraction says v/of to two decimals, and a ratio that would print as
// 0.00 as under 0.01 (pi_stress: a 435.6 us cycle of a 750 ms period).
func fraction(v, of uint64) string {
	if r := float64(v) / float64(of); r < 0.005 {
		return "<0.01"
	}
	return fmt.Sprintf("%.2f", float64(v)/float64(of))
}

func percent(n, of uint64) string {
	if of == 0 {
		return units.Unset
	}
	p := float64(n) * 100 / float64(of)
	if p < 0.1 {
		return "<0.1%"
	}
	return fmt.Sprintf("%.1f%%", p)
}

func violations(t *Task) uint64 {
	var n uint64
	for _, m := range t.Metrics {
		if m.Violations != nil {
			n += *m.Violations
		}
	}
	return n
}

// times is "once", "2 times".
func times(n uint64) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// plural is "1 sample", "2 samples".
func plural(n uint64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
