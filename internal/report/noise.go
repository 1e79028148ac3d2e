package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
)

// The noise metric in a task's judgement: a task that never sleeps (a
// busy poller) has no wakeups to judge by; its interruptions are what it
// suffers, so they make its headline and its OK.

// busyPoll tells a task that mostly does not sleep: more noise intervals
// than wakeups, and at least minJudgeEvents of them.
func busyPoll(t *Task) bool {
	m := t.Metrics[metric.Noise.String()]
	return m != nil && m.Count >= minJudgeEvents && m.Count > t.Counters.Wakeups
}

// noisePerS is t's noise time per second of the wall time it was tracked
// (its identities' times), nil without noise or wall time.
func noisePerS(t *Task) *float64 {
	m := t.Metrics[metric.Noise.String()]
	if m == nil || m.Count == 0 || m.AvgNs == nil {
		return nil
	}
	var wall uint64
	for _, s := range t.SchedTimes {
		wall += s.Ns
	}
	if wall == 0 {
		return nil
	}
	// Its wall time runs to its last switch-out: an interval after it (a
	// preemption it has not come back from) could make the share above 1.
	total := *m.AvgNs * float64(m.Count)
	v := total / (max(float64(wall), total) / 1e9)
	return &v
}

// noiseHeadline is a busy poller's: its largest interruption, and its
// noise per second when known.
func noiseHeadline(t *Task) string {
	m := t.Metrics[metric.Noise.String()]
	h := fmt.Sprintf("worst interruption %s us in %d", units.Us(*m.MaxNs), m.Count)
	if p := t.NoiseNsPerS; p != nil {
		h += fmt.Sprintf(", noise %s us/s", units.Us(uint64(*p)))
	}
	return h
}

// describeNMI renders an NMI handler's end: its function and time.
func describeNMI(e trace.Event) string {
	var ns int64
	if e.SinceT != nil {
		ns = e.T - *e.SinceT
	}
	return fmt.Sprintf("nmi      %s took %s us", e.Function, units.Us(uint64(max(ns, 0))))
}

// describeNoise renders a noise interval: its task, length, parts' causes
// and its largest part's, with who when known.
func describeNoise(e trace.Event) string {
	var ns int64
	if e.SinceT != nil && e.EndT != nil {
		ns = *e.EndT - *e.SinceT
	}
	causes := make([]string, len(e.NoiseCauses))
	for i, c := range e.NoiseCauses {
		causes[i] = string(c)
	}
	top := string(e.TopCause)
	switch {
	case e.IRQ != nil:
		top += fmt.Sprintf(" %d %s", *e.IRQ, e.IRQName)
	case e.Vec != nil:
		top += " " + e.VecName
	case e.ByTID != 0:
		top += fmt.Sprintf(" by tid %d", e.ByTID)
	case e.IPI != nil:
		top += " " + string(e.IPI.Kind)
	}
	return fmt.Sprintf("noise    %s interrupted %s us (%s; largest: %s)", taskLabel(e.TID, e.Comm, ""),
		units.Us(uint64(max(ns, 0))), strings.Join(causes, ", "), top)
}

// NoiseCauseTotal is a task's noise parts of one cause: how many, and
// their own time (a part nested in another, an IRQ in a softirq, is taken
// out of the other's time; the local timer interrupt and the callbacks it
// runs are one timer part). Steal is read where the tick reads it, and
// may overlap the interrupt that saw it.
type NoiseCauseTotal struct {
	Count uint64 `json:"count"`
	Ns    uint64 `json:"ns"`
}

// noiseByCause is s's noise totals by cause, nil without any.
func noiseByCause(s *engine.TaskStats) map[trace.NoiseCause]NoiseCauseTotal {
	var m map[trace.NoiseCause]NoiseCauseTotal
	for i := range s.NoiseParts {
		if s.NoiseParts[i] == 0 && s.NoiseNs[i] == 0 {
			continue
		}
		c, ok := trace.NoiseCauses[uint8(i+1)]
		if !ok {
			continue
		}
		if m == nil {
			m = map[trace.NoiseCause]NoiseCauseTotal{}
		}
		m[c] = NoiseCauseTotal{Count: uint64(s.NoiseParts[i]), Ns: s.NoiseNs[i]}
	}
	return m
}

// noiseCauseWords name the noise causes in text.
var noiseCauseWords = map[trace.NoiseCause]string{
	trace.NoiseIRQ: "IRQ", trace.NoiseTimer: "timer IRQ", trace.NoiseSoftirq: "softirq",
	trace.NoisePreempt: "preemption", trace.NoiseThrottle: "throttling", trace.NoiseSteal: "steal",
	trace.NoiseIPI: "IPI", trace.NoiseNMI: "NMI",
}

// NoiseCauseWord names a noise cause in every report (text, HTML): its
// word, else its JSON name (a cause this table does not know yet, or one
// from a newer rtscope's JSON).
func NoiseCauseWord(c trace.NoiseCause) string {
	if w := noiseCauseWords[c]; w != "" {
		return w
	}
	return string(c)
}

// NoiseCauseRow is one cause of a task's noise as the reports show it.
type NoiseCauseRow struct {
	Cause trace.NoiseCause
	Word  string // NoiseCauseWord(Cause)
	NoiseCauseTotal
}

// NoiseCausesRanked is t's noise totals by cause, the longest first (equal
// times by cause name, so that the order is stable); nil without any.
func NoiseCausesRanked(t *Task) []NoiseCauseRow {
	if len(t.NoiseByCause) == 0 {
		return nil
	}
	rows := make([]NoiseCauseRow, 0, len(t.NoiseByCause))
	for c, tot := range t.NoiseByCause {
		rows = append(rows, NoiseCauseRow{Cause: c, Word: NoiseCauseWord(c), NoiseCauseTotal: tot})
	}
	slices.SortFunc(rows, func(a, b NoiseCauseRow) int {
		return cmp.Or(cmp.Compare(b.Ns, a.Ns), cmp.Compare(a.Cause, b.Cause))
	})
	return rows
}

// NoiseTotalNs is the time of t's noise intervals (the noise metric's
// sum), 0 without: the whole its causes' parts are a share of.
func NoiseTotalNs(t *Task) float64 {
	m := t.Metrics[metric.Noise.String()]
	if m == nil || m.Count == 0 || m.AvgNs == nil {
		return 0
	}
	return *m.AvgNs * float64(m.Count)
}

// writeNoiseByCause writes t's noise totals by cause, the longest first,
// each with its number of parts, in microseconds as every time a report
// prints; nothing without.
func writeNoiseByCause(w io.Writer, t *Task) {
	rows := NoiseCausesRanked(t)
	if len(rows) == 0 {
		return
	}
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = fmt.Sprintf("%s %s us (%d)", r.Word, units.Us(r.Ns), r.Count)
	}
	fmt.Fprintf(w, "   noise by cause: %s\n", strings.Join(parts, ", "))
}
