package report

import (
	"fmt"
	"strings"

	"github.com/rtscope/rtscope/internal/trace"

	"github.com/rtscope/rtscope/internal/metric"
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
	}
	return fmt.Sprintf("noise    %s interrupted %s us (%s; largest: %s)", taskLabel(e.TID, e.Comm, ""),
		units.Us(uint64(max(ns, 0))), strings.Join(causes, ", "), top)
}
