package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/units"
)

// Health of a task, the first word of its headline (JSON "health").
const (
	HealthOK        = "ok"         // every SLO kept
	HealthViolated  = "violated"   // an SLO was violated
	HealthNoSLO     = "no-slo"     // measured, but no SLO to judge it by
	HealthNoSamples = "no-samples" // nothing measured
)

// Judge sets t's health and headline from its metrics, violation causes
// and worst cases: call it once these are attached.
func Judge(t *Task) {
	t.Health, t.Headline = headline(t)
	if s := overruns(t); s != "" && t.Health != HealthNoSamples {
		t.Headline += "; " + s
	}
}

// overruns says how often a periodic task missed its deadline, and the
// worst iteration's cause: the control-loop engineer's first question,
// asked whether or not an SLO is set. Empty without overruns.
func overruns(t *Task) string {
	n := t.Counters.Overruns
	if n == 0 {
		return ""
	}
	s := fmt.Sprintf("%d overruns (missed deadlines)", n)
	if m := t.Metrics[metric.Iteration.String()]; m != nil && m.Count > 0 {
		s += fmt.Sprintf(" in %d iterations", m.Count)
		if m.Cause != "" {
			s += ", worst iteration: " + m.Cause
		}
	}
	return s
}

// headline says in one line whether t is healthy and, when not, why mostly:
// the metric with the most violations, its share, and its top cause.
func headline(t *Task) (string, string) {
	var worstViol metric.ID = -1
	var withSLO, withSamples bool
	var others []string
	for _, id := range metric.All() {
		m := t.Metrics[id.String()]
		if m == nil {
			continue
		}
		withSamples = withSamples || m.Count > 0
		if m.SLONs == nil {
			continue
		}
		withSLO = true
		if m.Violations == nil || *m.Violations == 0 {
			continue
		}
		if worstViol < 0 || *m.Violations > *t.Metrics[worstViol.String()].Violations {
			if worstViol >= 0 {
				others = append(others, fmt.Sprintf("%s %d", worstViol, *t.Metrics[worstViol.String()].Violations))
			}
			worstViol = id
		} else {
			others = append(others, fmt.Sprintf("%s %d", id, *m.Violations))
		}
	}
	switch {
	case worstViol >= 0:
		m := t.Metrics[worstViol.String()]
		s := fmt.Sprintf("%s %d of %d over %s us (%s)", worstViol, *m.Violations, m.Count, units.Us(*m.SLONs),
			percent(*m.Violations, m.Count))
		s += "; " + topCause(m)
		if len(others) > 0 {
			s += "; also " + strings.Join(others, ", ")
		}
		return HealthViolated, s
	case withSLO:
		var kept []string
		for _, id := range metric.All() {
			m := t.Metrics[id.String()]
			if m == nil || m.SLONs == nil {
				continue
			}
			worst := units.Unset
			if m.MaxNs != nil {
				worst = units.Us(*m.MaxNs)
			}
			kept = append(kept, fmt.Sprintf("%s worst %s of %s us in %d", id, worst, units.Us(*m.SLONs), m.Count))
		}
		return HealthOK, "every SLO kept: " + strings.Join(kept, ", ")
	case withSamples:
		for _, id := range metric.All() {
			m := t.Metrics[id.String()]
			if m == nil || m.MaxNs == nil {
				continue
			}
			s := fmt.Sprintf("worst %s %s us in %d", id, units.Us(*m.MaxNs), m.Count)
			if m.Cause != "" {
				s += ", mostly " + m.Cause
			}
			return HealthNoSLO, s + " (set --slo to judge it)"
		}
	}
	return HealthNoSamples, "no samples"
}

// topCause names what caused most of a metric's violations: the top bar of
// the violation histogram, else the worst case's cause.
func topCause(m *Metric) string {
	if c := m.ViolationCauses.TopCause(); c != nil {
		s := fmt.Sprintf("top cause %s", c.Cause)
		if c.Culprit != "" && c.Culprit != c.Cause {
			s += ": " + c.Culprit
		}
		return s + fmt.Sprintf(" (%.0f%% of %d explained)", c.Percent, m.ViolationCauses.Analysed)
	}
	if m.Cause != "" {
		return "worst case: " + m.Cause
	}
	return "causes not analysed"
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

// headlinesShown bounds the lines of the headline: it must stay short
// with a thousand short-lived tasks (watch -- make).
const headlinesShown = 20

// WriteHeadlines prints one line per task, its health first, the violated
// first (most violations first), then the others in report order; beyond
// headlinesShown lines, the rest are counted by health. The text report
// opens with it; the tables follow. Tasks must be judged (Judge).
func WriteHeadlines(w io.Writer, tasks []*Task) {
	fmt.Fprintf(w, "rtscope watch: headline, %d task(s)\n", len(tasks))
	order := make([]*Task, len(tasks))
	copy(order, tasks)
	sort.SliceStable(order, func(i, j int) bool {
		vi, vj := order[i].Health == HealthViolated, order[j].Health == HealthViolated
		if vi != vj {
			return vi
		}
		return vi && violations(order[i]) > violations(order[j])
	})
	rest := map[string]int{}
	for i, t := range order {
		if i >= headlinesShown {
			rest[t.Health]++
			continue
		}
		who := fmt.Sprintf("%s/%d", t.Comm, t.TID)
		if t.Sched != "" {
			who += " (" + t.Sched + ")"
		}
		if t.Exited {
			who += " exited"
		}
		fmt.Fprintf(w, "  %-10s %s: %s\n", strings.ToUpper(t.Health), who, t.Headline)
	}
	if len(rest) > 0 {
		var parts []string
		for _, h := range []string{HealthViolated, HealthOK, HealthNoSLO, HealthNoSamples} {
			if rest[h] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", rest[h], h))
			}
		}
		fmt.Fprintf(w, "  and %d more: %s (their tables follow; JSON has every headline)\n",
			len(order)-headlinesShown, strings.Join(parts, ", "))
	}
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
