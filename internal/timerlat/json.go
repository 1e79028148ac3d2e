package timerlat

import (
	"github.com/rtscope/rtscope/internal/cpuset"

	"encoding/json"
	"fmt"
	"io"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/outfile"
)

// JSON output: nanoseconds, null for what has no value.

type jsonHist struct {
	BucketNs uint64   `json:"bucket_ns"`
	Counts   []uint64 `json:"counts"`
	Over     uint64   `json:"over"`
	Count    uint64   `json:"count"`
	MinNs    *uint64  `json:"min_ns"`
	AvgNs    *uint64  `json:"avg_ns"`
	MaxNs    *uint64  `json:"max_ns"`
}

// jsonContext is one latency context: the summary shape of watch's
// metrics (metric.Summary), the last sample, and timerlat's own histogram.
type jsonContext struct {
	metric.Summary
	LastNs *uint64   `json:"last_ns,omitempty"`
	Hist   *jsonHist `json:"hist,omitempty"`
}

type jsonCPU struct {
	CPU           int                     `json:"cpu"`
	TID           int                     `json:"tid"`
	Cycles        uint64                  `json:"cycles"`
	MissedPeriods uint64                  `json:"missed_periods"`
	Contexts      map[string]*jsonContext `json:"latency"`
}

type jsonStop struct {
	CPU         int     `json:"cpu"`
	TID         int     `json:"tid"`
	Context     string  `json:"context"`
	ValueNs     uint64  `json:"value_ns"`
	ThresholdNs uint64  `json:"threshold_ns"`
	IRQNs       *uint64 `json:"irq_ns"`
	ThreadNs    *uint64 `json:"thread_ns"`
	UserNs      *uint64 `json:"user_ns"`
	Verdict     string  `json:"verdict,omitempty"` // of the auto-analysis
	Cause       string  `json:"cause,omitempty"`
	// Crossings: thresholds reached (more than one with --on-threshold continue).
	Crossings      uint64 `json:"crossings"`
	ActionsFired   uint64 `json:"actions_fired"`
	ActionsSkipped uint64 `json:"actions_skipped"` // crossings while the actions ran
}

// JSONSchema names timerlat's JSON layout (docs/json.md); it changes only
// with an incompatible change.
const JSONSchema = "rtscope.timerlat/v1"

type jsonDoc struct {
	Schema   string `json:"schema"`
	Tool     string `json:"tool"`
	Mode     string `json:"mode"`
	Settings struct {
		CPUs         []int   `json:"cpus"`
		PeriodNs     uint64  `json:"period_ns"`
		Priority     string  `json:"priority"`
		Policy       string  `json:"policy"`
		DMALatencyNs *int64  `json:"dma_latency_ns"` // the PM QoS request held, null: none
		DurationNs   *int64  `json:"duration_ns"`
		BucketNs     uint64  `json:"bucket_ns"`
		Entries      int     `json:"entries"`
		Housekeeping *string `json:"housekeeping"` // rtscope's own CPUs, null: unpinned
		IRQStopNs    *uint64 `json:"irq_stop_ns"`
		ThreadStopNs *uint64 `json:"thread_stop_ns"`
	} `json:"settings"`
	ElapsedNs int64                   `json:"elapsed_ns"`
	CPUs      []jsonCPU               `json:"cpus"`
	All       map[string]*jsonContext `json:"all"`
	Missed    uint64                  `json:"missed_periods"`
	Lost      struct {
		Samples       map[string]uint64 `json:"samples"`
		Ring          uint64            `json:"ring"`
		EngineNotices uint64            `json:"engine_notices"`
		EngineStats   uint64            `json:"engine_stats_full"`
		EngineStorage uint64            `json:"engine_storage_fail"`
	} `json:"lost"`
	Stop *jsonStop `json:"stop"`
	// Steal: the hypervisor's time on the measured CPUs (/proc/stat), null
	// when unreadable.
	Steal *jsonSteal `json:"steal"`
}

type jsonSteal struct {
	TotalNs  uint64   `json:"total_ns"`
	PerCPUNs []uint64 `json:"per_cpu_ns"` // in the order of cpus
}

func ptr[T any](v T) *T { return &v }

// summaryJSON summarizes one context: count, min, avg and max from
// timerlat's own samples, percentiles from the engine's histogram (hist,
// nil for none).
func summaryJSON(s Summary, hist []uint32, withLast bool) *jsonContext {
	j := &jsonContext{Summary: metric.Summarize(metric.Stats{Count: s.Count, Sum: s.Sum, Min: s.Min, Max: s.Max, Hist: hist})}
	if s.Count > 0 && withLast {
		j.LastNs = ptr(s.Last)
	}
	return j
}

// WriteJSON writes the result as one JSON document.
func WriteJSON(w io.Writer, r *Result, o *Options) error {
	var d jsonDoc
	d.Schema, d.Tool, d.Mode = JSONSchema, "rtscope timerlat", o.Mode
	setJSONSettings(&d, r, o)
	d.ElapsedNs = int64(r.Elapsed)
	for _, c := range r.CPUs {
		d.CPUs = append(d.CPUs, cpuJSON(c))
	}
	d.All = allJSON(r)
	d.Missed, _ = r.missed()
	d.Lost.Samples = map[string]uint64{}
	for k, v := range r.Lost.Samples {
		d.Lost.Samples[ctxNames[k]] = v
	}
	d.Lost.Ring, d.Lost.EngineNotices = r.Lost.Ring, r.Lost.Notices
	d.Lost.EngineStats, d.Lost.EngineStorage = r.Lost.StatsFull, r.Lost.StorageFail
	d.Stop = stopJSON(r)
	if r.Steal != nil {
		d.Steal = &jsonSteal{TotalNs: r.Steal.TotalNs, PerCPUNs: r.Steal.PerCPUNs}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(&d)
}

// setJSONSettings records the run's settings in d, in ns.
func setJSONSettings(d *jsonDoc, r *Result, o *Options) {
	for _, c := range r.CPUs {
		d.Settings.CPUs = append(d.Settings.CPUs, c.CPU)
	}
	d.Settings.PeriodNs = r.PeriodUs * 1000
	d.Settings.Priority, d.Settings.Policy = o.Priority.Original, o.Priority.String()
	if r.DMALatency >= 0 {
		d.Settings.DMALatencyNs = ptr(int64(r.DMALatency) * 1000)
	}
	if o.Duration > 0 {
		d.Settings.DurationNs = ptr(int64(o.Duration))
	}
	d.Settings.BucketNs, d.Settings.Entries = o.BucketUs*o.divisor(), o.Entries
	if r.Housekeeping != nil {
		d.Settings.Housekeeping = ptr(cpuset.FormatList(r.Housekeeping))
	}
	if o.IRQStopUs > 0 {
		d.Settings.IRQStopNs = ptr(o.IRQStopUs * 1000)
	}
	if o.ThreadStopUs > 0 {
		d.Settings.ThreadStopNs = ptr(o.ThreadStopUs * 1000)
	}
}

// cpuJSON is one CPU's contexts: the summary, and timerlat's histogram
// where there is one.
func cpuJSON(c *CPUResult) jsonCPU {
	jc := jsonCPU{CPU: c.CPU, TID: c.TID, Cycles: c.Cycles, MissedPeriods: c.Missed,
		Contexts: map[string]*jsonContext{}}
	for k := 0; k < nCtx; k++ {
		ctx := summaryJSON(c.Top[k], c.Engine[k].Hist, true)
		if h := c.Hist[k]; h != nil {
			jh := &jsonHist{BucketNs: h.Width, Counts: h.Counts, Over: h.Over, Count: h.Count}
			if h.Count > 0 {
				jh.MinNs, jh.AvgNs, jh.MaxNs = ptr(h.Min), ptr(h.Avg()), ptr(h.Max)
			}
			ctx.Hist = jh
		}
		jc.Contexts[ctxNames[k]] = ctx
	}
	return jc
}

// allJSON is every CPU together, per context.
func allJSON(r *Result) map[string]*jsonContext {
	all := map[string]*jsonContext{}
	for k, s := range r.all(false) {
		// The CPUs' histograms add up: the percentiles of all CPUs together.
		var hist []uint32
		for _, c := range r.CPUs {
			if h := c.Engine[k].Hist; len(h) > 0 {
				if hist == nil {
					hist = make([]uint32, len(h))
				}
				for i := range min(len(h), len(hist)) {
					hist[i] += h[i]
				}
			}
		}
		all[ctxNames[k]] = summaryJSON(s, hist, false)
	}
	return all
}

// stopJSON is the stop threshold's sample and its analysis, nil without a
// stop.
func stopJSON(r *Result) *jsonStop {
	s := r.Stop
	if s == nil {
		return nil
	}
	js := &jsonStop{CPU: s.CPU, TID: s.TID, Context: ctxNames[s.Context], ValueNs: s.Value, ThresholdNs: s.ThresholdUs * 1000,
		Verdict: r.Verdict.Verdict, Cause: r.Verdict.Cause, Crossings: r.Crossings,
		ActionsFired: r.ActionsFired, ActionsSkipped: r.ActionsSkipped}
	if s.Sample != nil {
		for k, dst := range []**uint64{&js.IRQNs, &js.ThreadNs, &js.UserNs} {
			if s.Sample.Valid[k] {
				*dst = ptr(s.Sample.Value[k])
			}
		}
	}
	return js
}

// engineStats converts one metric of the engine's task statistics.
func engineStats(count, sum, min, max uint64, hist []uint32) metric.Stats {
	return metric.Stats{Count: count, Sum: sum, Min: min, Max: max, Hist: hist}
}

// writeJSONFile writes the result to path ("-": stdout), complete or not
// at all (internal/outfile).
func writeJSONFile(path string, r *Result, o *Options) error {
	f, err := outfile.Create(path)
	if err != nil {
		return err
	}
	return f.Fill(func(w io.Writer) error { return WriteJSON(w, r, o) })
}

// WriteJSONFile writes the result to --json's file, opened at the start
// (see OpenOutputs).
func WriteJSONFile(f *outfile.File, r *Result, o *Options) error {
	if err := f.Fill(func(w io.Writer) error { return WriteJSON(w, r, o) }); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}
