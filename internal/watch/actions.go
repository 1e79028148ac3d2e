package watch

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/action"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/units"
)

// DefaultThresholdFile is where the trace action of --on-threshold saves
// the violation's document without file=.
const DefaultThresholdFile = "rtscope_threshold.json"

// DefaultEndFile is where the trace action of --on-end saves the report.
const DefaultEndFile = "rtscope_report.json"

// threshold starts the on-threshold actions for the first of the SLO
// violations noticed in this reader period, unless they still run from an
// earlier one. They run on their own goroutine: the reader goes on cutting
// windows meanwhile. first is the violation explained, if one was.
func (s *watcher) threshold(viols []engine.Notice, first *explained) {
	if s.actDone != nil || s.actStop {
		s.actSkipped += uint64(len(viols))
		return
	}
	n := viols[0]
	if first != nil {
		n = first.n
	}
	m := metric.ID(n.Metric)
	doc := &action.Threshold{Schema: action.ThresholdSchema, Tool: "watch", TID: n.Tid, CPU: int(n.Cpu),
		Metric: m.String(), ValueNs: n.Value, EndNs: n.End}
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) == nil && uint64(ts.Nano()) > n.End {
		doc.NoticedAfterNs = uint64(ts.Nano()) - n.End
	}
	if st, err := s.eng.Stats(n.Id); err == nil {
		t := report.FromStats(st)
		doc.PID, doc.Comm, doc.Sched = t.PID, t.Comm, t.Sched
		if rm := t.Metrics[m.String()]; rm != nil && rm.SLONs != nil {
			doc.ThresholdNs = *rm.SLONs
		}
	}
	switch {
	case first != nil:
		doc.Verdict, doc.Cause, doc.Culprit, doc.Window = first.e.Verdict, first.e.Cause, first.e.Culprit, first.tr
	case !s.eng.Tracing() || s.o.Explain == nil:
		doc.Verdict = "not explained: " + report.NotAnalysedNoTrace
	default:
		doc.Verdict = "not explained: " + report.NotAnalysedBudget
	}
	s.actFired++
	s.actSkipped += uint64(len(viols) - 1)
	s.actStop = !s.o.OnThreshold.Continue()
	fmt.Fprintf(s.o.Log, "rtscope watch: SLO violated: %s/%d %s %s us over %s us: %s\n", doc.Comm, doc.TID, doc.Metric,
		usStr(doc.ValueNs), usStr(doc.ThresholdNs), doc.Verdict)
	done := make(chan struct{})
	s.actDone = done
	ev := doc.Event(DefaultThresholdFile)
	go func() {
		defer close(done)
		s.o.OnThreshold.Run(ev, s.o.Log)
	}()
}

// endEvent is the --on-end event: the report, its headlines as the
// verdict, and the exit status the run will have.
func (s *watcher) endEvent(rep *report.Report) action.Event {
	var lines []string
	for _, t := range rep.Tasks {
		lines = append(lines, fmt.Sprintf("%s %s/%d: %s; %s", strings.ToUpper(string(t.Health)), t.Comm, t.TID, t.HealthReason, t.Headline))
	}
	ev := action.Event{Name: "end", Verdict: strings.Join(lines, "\n"), DefaultFile: DefaultEndFile,
		SaveTrace: rep.WriteJSON, WriteJSON: rep.WriteJSON,
		Env: map[string]string{
			"RTSCOPE_TOOL":              "watch",
			"RTSCOPE_STATUS":            strconv.Itoa(report.ExitStatus(rep)),
			"RTSCOPE_HEALTH":            string(rep.Worst()),
			"RTSCOPE_VIOLATIONS":        strconv.FormatUint(rep.Violations(), 10),
			"RTSCOPE_THRESHOLD_FIRED":   strconv.FormatUint(s.actFired, 10),
			"RTSCOPE_THRESHOLD_SKIPPED": strconv.FormatUint(s.actSkipped, 10),
		}}
	if s.o.JSONPath != "" && s.o.JSONPath != "-" {
		ev.JSONPath = s.o.JSONPath
	}
	return ev
}

func usStr(ns uint64) string {
	if ns == 0 {
		return units.Unset
	}
	return units.Us(ns)
}
