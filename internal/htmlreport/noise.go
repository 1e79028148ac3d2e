package htmlreport

import (
	"fmt"
	"math"
	"strconv"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
)

// noiseView is a task's noise by cause, shown in its noise metric's
// section: one row per cause the report carries (whatever causes its JSON
// holds), the longest first, as the text report's "noise by cause" line.
type noiseView struct {
	Summary string // what the shares are of, and what the parts add up to
	Rows    []noiseRow
}

type noiseRow struct {
	Cause   trace.NoiseCause // its JSON name
	Word    string           // its name in the reports (report.NoiseCauseWord)
	Us, Pct string
	Parts   uint64
	Bar     float64 // 0..100
}

// noiseCauses is t's noise by cause, nil without a part: each cause's own
// time as a share of the task's noise time (its intervals' sum). The
// shares add up to a little less than 100%: an interval holds the spaces
// between its parts (docs/noise.md).
func noiseCauses(t *report.Task) *noiseView {
	rows := report.NoiseCausesRanked(t)
	if len(rows) == 0 {
		return nil
	}
	total := report.NoiseTotalNs(t)
	v := &noiseView{Rows: make([]noiseRow, len(rows))}
	var parts uint64
	for i, r := range rows {
		parts += r.Ns
		row := noiseRow{Cause: r.Cause, Word: r.Word, Us: units.Us(r.Ns), Parts: r.Count, Pct: units.Unset}
		if total > 0 {
			p := 100 * float64(r.Ns) / total
			row.Pct = strconv.FormatFloat(p, 'f', 1, 64) + "%"
			row.Bar = math.Max(0, math.Min(100, p))
		}
		v.Rows[i] = row
	}
	v.Summary = fmt.Sprintf("the parts' own times add up to %s µs", units.Us(parts))
	if total > 0 {
		intervals := fmt.Sprintf("%d noise intervals", t.Metrics[metric.Noise.String()].Count)
		if intervals == "1 noise intervals" {
			intervals = "1 noise interval"
		}
		v.Summary = fmt.Sprintf("share of the %s µs of its %s; %s", units.UsF(total), intervals, v.Summary)
	}
	return v
}
