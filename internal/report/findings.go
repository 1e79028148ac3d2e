package report

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/units"
)

// Finding is one cause of a task's trouble, once however many metrics it
// hit (JSON "findings"): the worst cases and SLO violations that the
// analysis charged to the same cause and culprit, or a real-time hygiene
// finding. A task's findings are ranked by CostNs, largest first.
type Finding struct {
	Cause   string `json:"cause"`   // the analysis' cause, or "hygiene"
	Culprit string `json:"culprit"` // its evidence in a few words
	// Text is the worst instance's verdict (or the hygiene finding).
	Text string `json:"text"`
	// Count is how many SLO violations were charged to it (0: only worst
	// cases, which are not counted).
	Count   uint64   `json:"count"`
	Metrics []string `json:"metrics"` // the metrics it hit, in metric order
	Metric  string   `json:"metric"`  // the worst instance's metric
	ValueNs uint64   `json:"value_ns"`
	// CostNs is the time the cause took from the task in its worst
	// instance: the analysis' item of the culprit (or the blocked time of
	// a priority inversion), else the metric's value.
	CostNs uint64 `json:"cost_ns"`
}

// CauseHygiene is the cause of a real-time hygiene finding.
const CauseHygiene = "hygiene"

// facts are the fields of an analysis that findings and the consistency
// check read, from the analysis' JSON: a live report holds the analysis'
// own type, a report read back a Decoded, and both marshal alike.
type facts struct {
	Culprit   string `json:"culprit"`
	Breakdown []struct {
		Label string `json:"label"`
		Ns    uint64 `json:"ns"`
	} `json:"breakdown"`
	Inversion *struct {
		BlockedNs uint64 `json:"blocked_ns"`
		Inverted  bool   `json:"inverted"`
	} `json:"priority_inversion"`
	RuledOut []string `json:"ruled_out"`
}

// factsOf reads a's facts; zero when a is nil or does not marshal.
func factsOf(a Analysis) facts {
	var f facts
	if a == nil {
		return f
	}
	b, err := json.Marshal(a)
	if err == nil {
		_ = json.Unmarshal(b, &f) // a field it lacks stays zero
	}
	return f
}

// cost is the time the culprit took in the analysed window of value ns:
// a priority inversion's blocked time, else the largest item the culprit
// names (the analysis labels an item by its culprit and what it did),
// else, without a culprit, the largest item that is not the sleep until
// the next period; value when the window has no such item.
func (f facts) cost(value uint64) uint64 {
	if f.Inversion != nil && f.Inversion.BlockedNs > 0 {
		return f.Inversion.BlockedNs
	}
	var c uint64
	for _, it := range f.Breakdown {
		switch {
		case f.Culprit != "" && strings.HasPrefix(it.Label, f.Culprit):
		case f.Culprit == "" && !strings.HasPrefix(it.Label, "timer sleep"):
		default:
			continue
		}
		c = max(c, it.Ns)
	}
	if c == 0 {
		return value
	}
	return c
}

// direct metrics' verdicts name their cause first; those of period, jitter
// and iteration wrap it in a sentence of their own, so a finding's text
// comes from a direct metric when one has the cause.
func direct(id string) bool {
	return id != metric.Period.String() && id != metric.Jitter.String() && id != metric.Iteration.String()
}

// Findings builds t's findings: the causes of its SLO violations, of its
// worst cases beyond their SLO or its period, and of any priority
// inversion, one per cause and culprit, then its hygiene findings; ranked
// by cost, largest first.
func Findings(t *Task) []Finding {
	var out []Finding
	idx := map[[2]string]int{}
	add := func(id string, cause, culprit, text string, count, value, cost uint64) {
		k := [2]string{cause, culprit}
		i, ok := idx[k]
		if !ok {
			idx[k] = len(out)
			out = append(out, Finding{Cause: cause, Culprit: culprit, Text: text, Metric: id, ValueNs: value, CostNs: cost})
			i = len(out) - 1
		}
		f := &out[i]
		if !contains(f.Metrics, id) {
			f.Metrics = append(f.Metrics, id)
		}
		f.Count = max(f.Count, count) // the same events hit several metrics
		better := cost > f.CostNs
		if direct(id) != direct(f.Metric) {
			better = direct(id)
		}
		if ok && better {
			f.Text, f.Metric, f.ValueNs, f.CostNs = text, id, value, cost
		}
	}
	worst := func(id string, m *Metric) {
		f := factsOf(m.Analysis)
		add(id, m.Cause, f.Culprit, m.Verdict, 0, *m.MaxNs, f.cost(*m.MaxNs))
	}
	for _, mid := range metric.All() {
		id := mid.String()
		m := t.Metrics[id]
		if m == nil {
			continue
		}
		if v := m.ViolationCauses; v != nil {
			for _, c := range v.Causes {
				if c.Example != nil {
					add(id, c.Cause, c.Culprit, c.Example.Verdict, c.Count, c.Example.ValueNs, c.Example.ValueNs)
				}
			}
		}
		if direct(id) && beyond(t, m) {
			worst(id, m)
		}
	}
	// Period, jitter and iteration retell a direct metric's story: a
	// finding of their own only when no direct metric has one.
	if len(out) == 0 {
		for _, mid := range []metric.ID{metric.Period, metric.Iteration} {
			if m := t.Metrics[mid.String()]; m != nil && beyond(t, m) {
				worst(mid.String(), m)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CostNs > out[j].CostNs })
	for _, w := range hygieneWarnings(t) {
		out = append(out, Finding{Cause: CauseHygiene, Culprit: w, Text: "real-time hygiene: " + w})
	}
	return out
}

// causeThrottling is the analysis' cause of RT throttling (the fair
// server): a finding whatever the SLO, as a priority inversion is, since a
// real-time task that runs 95% of a second breaks its whole CPU.
const causeThrottling = "rt-throttling"

// causeLongSleep is the analysis' cause of a timer armed more than a
// period ahead: a sleep the task asked for, no cost.
const causeLongSleep = "long-sleep"

// beyond tells whether m's worst case (analysed) is a finding: a priority
// inversion and RT throttling always; else a maximum over its SLO or, for a periodic task,
// over its period (a period or iteration, which hold a sleep, over 1.5
// periods; jitter never). A verdict that says "no overrun", or a sleep
// the task asked for (long-sleep), is none.
func beyond(t *Task, m *Metric) bool {
	switch {
	case m.Cause == "" || m.Verdict == "" || m.MaxNs == nil:
		return false
	case m.Cause == causePriorityInversion || m.Cause == causeThrottling:
		return true
	case strings.HasPrefix(m.Verdict, "no overrun") || m.Cause == causeLongSleep:
		return false
	case m.SLONs != nil:
		return *m.MaxNs > *m.SLONs
	case t.NominalPeriodNs == nil || m == t.Metrics[metric.Jitter.String()]:
		return false
	case m == t.Metrics[metric.Period.String()] || m == t.Metrics[metric.Iteration.String()]:
		return *m.MaxNs*2 > *t.NominalPeriodNs*3
	}
	return *m.MaxNs > *t.NominalPeriodNs
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// Line is the finding as the text report prints it: its text without the
// causes it ruled out, then how often, which metrics, and the worst
// instance.
func (f Finding) Line() string {
	if f.Cause == CauseHygiene {
		return f.Text
	}
	var tail []string
	if f.Count > 0 {
		tail = append(tail, plural(f.Count, "SLO violation"))
	}
	tail = append(tail, fmt.Sprintf("worst %s %s us", f.Metric, units.Us(f.ValueNs)))
	if len(f.Metrics) > 1 {
		var others []string
		for _, m := range f.Metrics {
			if m != f.Metric {
				others = append(others, m)
			}
		}
		tail = append(tail, "also "+strings.Join(others, ", "))
	}
	return fmt.Sprintf("%s (%s)", ruledOut.ReplaceAllString(f.Text, ""), strings.Join(tail, "; "))
}

// ruledOut is a verdict's list of the causes it ruled out: evidence for
// --verbose (and the JSON's text), not the finding.
var ruledOut = regexp.MustCompile(`; ruled out: [^;]*`)
