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
// windows meanwhile. first is the violation explained, if one was; task
// reads a task's statistics (nil when gone); explainable: the flight
// recorder and the analysis are on.
func (v *violations) threshold(viols []engine.Notice, first *explained, task func(id uint64) *report.Task, explainable bool) {
	if v.done != nil || v.stop {
		v.skipped += uint64(len(viols))
		return
	}
	n := viols[0]
	if first != nil {
		n = first.n
	}
	doc := thresholdDoc(n, task(n.Id))
	switch {
	case first != nil:
		doc.Verdict, doc.Cause, doc.Culprit, doc.Window = first.e.Verdict, first.e.Cause, first.e.Culprit, first.tr
	case !explainable:
		doc.Verdict = "not explained: " + report.NotAnalysedNoTrace
	default:
		doc.Verdict = "not explained: " + report.NotAnalysedBudget
	}
	v.fired++
	v.skipped += uint64(len(viols) - 1)
	v.stop = !v.onThreshold.Continue()
	fmt.Fprintf(v.log, "rtscope watch: SLO violated: %s/%d %s %s us over %s us: %s\n", doc.Comm, doc.TID, doc.Metric,
		usStr(doc.ValueNs), usStr(doc.ThresholdNs), doc.Verdict)
	done := make(chan struct{})
	v.done = done
	ev := doc.Event(DefaultThresholdFile)
	list, log := v.onThreshold, v.log
	go func() {
		defer close(done)
		list.Run(ev, log)
	}()
}

// thresholdDoc is the on-threshold document of violation n of task t
// (nil: its statistics are gone).
func thresholdDoc(n engine.Notice, t *report.Task) *action.Threshold {
	m := metric.ID(n.Metric)
	doc := &action.Threshold{Schema: action.ThresholdSchema, Tool: "watch", TID: n.Tid, CPU: int(n.Cpu),
		Metric: m.String(), ValueNs: n.Value, EndNs: n.End}
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) == nil && uint64(ts.Nano()) > n.End {
		doc.NoticedAfterNs = uint64(ts.Nano()) - n.End
	}
	if t != nil {
		doc.PID, doc.Comm, doc.Sched = t.PID, t.Comm, t.Sched
		if rm := t.Metrics[m.String()]; rm != nil && rm.SLONs != nil {
			doc.ThresholdNs = *rm.SLONs
		}
	}
	return doc
}

// endEvent is the --on-end event: the report, its headlines as the
// verdict, and the exit status the run will have; jsonPath is --json's.
func (v *violations) endEvent(rep *report.Report, jsonPath string) action.Event {
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
			"RTSCOPE_THRESHOLD_FIRED":   strconv.FormatUint(v.fired, 10),
			"RTSCOPE_THRESHOLD_SKIPPED": strconv.FormatUint(v.skipped, 10),
		}}
	if jsonPath != "" && jsonPath != "-" {
		ev.JSONPath = jsonPath
	}
	return ev
}

func usStr(ns uint64) string {
	if ns == 0 {
		return units.Unset
	}
	return units.Us(ns)
}
