package action

import (
	"encoding/json"
	"os"
	"strconv"

	"github.com/rtscope/rtscope/internal/trace"
)

// ThresholdSchema names the JSON document of a threshold event (docs/json.md).
const ThresholdSchema = "rtscope.threshold/v1"

// Threshold is the JSON document of one threshold crossing: what crossed
// which bound, the verdict on its window, and the window itself. The trace
// action saves it; shell commands find it at $RTSCOPE_JSON.
type Threshold struct {
	Schema      string `json:"schema"`
	Tool        string `json:"tool"` // watch or timerlat
	TID         uint32 `json:"tid"`
	PID         uint32 `json:"pid,omitempty"`
	Comm        string `json:"comm"`
	Sched       string `json:"sched,omitempty"`
	CPU         int    `json:"cpu"`
	Metric      string `json:"metric"`
	ValueNs     uint64 `json:"value_ns"`
	ThresholdNs uint64 `json:"threshold_ns"` // the SLO, or timerlat's -i/-T
	EndNs       uint64 `json:"end_ns"`       // CLOCK_MONOTONIC when the bound was crossed
	// NoticedAfterNs: from the crossing to the actions starting (one
	// reader period plus the analysis, when the CPU is free).
	NoticedAfterNs uint64       `json:"noticed_after_ns"`
	Verdict        string       `json:"verdict"`
	Cause          string       `json:"cause,omitempty"`
	Culprit        string       `json:"culprit,omitempty"`
	Window         *trace.Trace `json:"window"` // null without a flight recorder
}

// WriteFile writes the document to path, indented (it is read by people
// and scripts alike, one at a time).
func (t *Threshold) WriteFile(path string) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Event makes the threshold event of the document: trace and shell
// commands get the document; the shell also sees its fields.
func (t *Threshold) Event(defaultFile string) Event {
	return Event{Name: "threshold", Verdict: t.Verdict, DefaultFile: defaultFile,
		SaveTrace: t.WriteFile, WriteJSON: t.WriteFile,
		Env: map[string]string{
			"RTSCOPE_TOOL":         t.Tool,
			"RTSCOPE_TID":          itoa(uint64(t.TID)),
			"RTSCOPE_COMM":         t.Comm,
			"RTSCOPE_CPU":          strconv.Itoa(t.CPU),
			"RTSCOPE_METRIC":       t.Metric,
			"RTSCOPE_VALUE_NS":     itoa(t.ValueNs),
			"RTSCOPE_THRESHOLD_NS": itoa(t.ThresholdNs),
			"RTSCOPE_CAUSE":        t.Cause,
		}}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }
