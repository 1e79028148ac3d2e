// Package htmlreport renders a watch report (internal/report) as one
// self-contained HTML page (watch --html): per task its summary table, each
// metric's histogram and its course over time, the causes of its SLO
// violations, and each worst-case window as a CPU-lane timeline beside its
// verdict and breakdown. Styles, script and charts (plain SVG) are inline:
// the page needs no network, and opens from a mail attachment or a CI
// artifact as it is.
package htmlreport

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/rtscope/rtscope/internal/analysis"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/outfile"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/units"
)

var (
	//go:embed report.html.tmpl
	pageText string
	//go:embed style.css
	styleText string
	//go:embed script.js
	scriptText string
	// onerror.js is a script of its own, run first: a syntax error in
	// script.js must still be caught and shown.
	//go:embed onerror.js
	onerrorText string
)

var page = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"f1":  f1,
	"add": func(a, b float64) float64 { return a + b },
	"sub": func(a, b float64) float64 { return a - b },
	"mid": func(a, b float64) float64 { return (a + b) / 2 },
}).Parse(pageText))

// Write renders the report as one self-contained HTML page.
func Write(w io.Writer, r *report.Report) error {
	if r == nil {
		return errors.New("html report: no report")
	}
	// Rendered whole before writing: a template error leaves no half page.
	var buf bytes.Buffer
	if err := page.Execute(&buf, build(r)); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteFile writes the page to path ("-" for stdout) through
// internal/outfile: complete or not at all.
func WriteFile(path string, r *report.Report) error {
	f, err := outfile.Create(path)
	if err != nil {
		return err
	}
	return f.Fill(func(w io.Writer) error { return Write(w, r) })
}

// pageView is everything the template shows, computed here so that the
// template only lays it out (and escapes it).
type pageView struct {
	Title     string
	CSS       template.CSS
	JS        template.JS
	OnError   template.JS
	Header    []kv
	Headlines []headlineView
	Tasks     []*taskView
}

type kv struct{ Key, Value string }

type headlineView struct {
	Health, Who, Headline, Anchor string
	Findings                      []string // one per cause, the costliest first
}

type taskView struct {
	Anchor   string
	Who      string // comm/tid
	Health   string
	Headline string
	Info     string // pid, scheduling, CPUs, state
	Open     bool
	Rows     []summaryRow
	Counters string
	Hygiene  string
	Metrics  []*metricView
}

type summaryRow struct {
	Metric, Anchor                                string
	Count                                         uint64
	Min, Avg, P50, P90, P99, P999, Max, SLO, Viol string
	Violated                                      bool
}

type metricView struct {
	Name, Anchor, Desc string
	Hist               *histView
	HistNote           string
	Series             *seriesView
	Causes             *causesView
	Noise              *noiseView // the noise metric's: its task's noise by cause
	WorstNote          string
	Worst              *windowView
}

// openTasks: with more tasks than this (watch -- make), only the failed
// ones start unfolded, so that the page opens on what matters.
const openTasks = 20

func build(r *report.Report) *pageView {
	v := &pageView{
		Title:   "rtscope watch report",
		CSS:     template.CSS(styleText),
		JS:      template.JS(scriptText),
		OnError: template.JS(onerrorText),
	}
	if r.Started != "" {
		v.Title += ", " + r.Started
	}
	v.Header = header(r)
	tasks := make([]*report.Task, 0, len(r.Tasks))
	for _, t := range r.Tasks {
		if t != nil {
			tasks = append(tasks, judged(t))
		}
	}
	for i, t := range tasks {
		v.Tasks = append(v.Tasks, taskOf(t, "task-"+strconv.Itoa(i), len(tasks)))
	}
	// Headlines as the text report orders them: the worst judgement first,
	// then the real-time ones, then by violations.
	index := make(map[*report.Task]int, len(tasks))
	for i, t := range tasks {
		index[t] = i
	}
	for _, t := range report.HeadlineOrder(tasks) {
		i := index[t]
		tv := v.Tasks[i]
		hv := headlineView{Health: tv.Health, Who: tv.Who + schedSuffix(tasks[i]), Headline: tv.Headline, Anchor: "#" + tv.Anchor}
		for _, f := range t.Findings {
			hv.Findings = append(hv.Findings, f.Line())
		}
		v.Headlines = append(v.Headlines, hv)
	}
	return v
}

// judged returns t with its health set: a copy judged here when the caller
// did not, or judged with a word of an older schema (the report is not
// changed).
func judged(t *report.Task) *report.Task {
	if t.Health.Known() {
		return t
	}
	c := *t
	report.Judge(&c)
	return &c
}

func schedSuffix(t *report.Task) string {
	s := ""
	if t.Sched != "" {
		s += " (" + t.Sched + ")"
	}
	if t.Exited {
		s += " exited"
	}
	return s
}

func header(r *report.Report) []kv {
	var h []kv
	add := func(k, v string) {
		if v != "" {
			h = append(h, kv{k, v})
		}
	}
	add("kernel", r.Kernel)
	add("started", r.Started)
	add("duration", fmt.Sprintf("%.1f s", float64(r.DurationNs)/1e9))
	if c := r.Command; c != nil {
		add("command", shellJoin(c.Argv)+": "+commandEnd(c))
	}
	f := r.Features
	feat := []string{"flight recorder " + onOff(f.Trace)}
	if f.ThreadedIRQ != "" {
		feat = append(feat, "handler: "+f.ThreadedIRQ)
	}
	if f.UserReturn != "" {
		feat = append(feat, "timer-user: "+f.UserReturn)
	}
	if f.Steal != "" {
		feat = append(feat, "steal: "+f.Steal)
	}
	add("features", strings.Join(feat, "; "))
	add("lost", lost(r.Lost))
	if r.Steal != nil {
		var b strings.Builder
		report.WriteSteal(&b, r.Steal, r.DurationNs)
		add("steal", strings.TrimSpace(strings.TrimPrefix(b.String(), "rtscope watch: ")))
	}
	if hk := r.Housekeeping; hk != nil {
		s := "CPUs " + hk.CPUs
		if hk.Reason != "" {
			s += " (" + hk.Reason + ")"
		}
		if hk.Changes > 0 {
			s += fmt.Sprintf(", moved %d time(s)", hk.Changes)
		}
		if hk.Shared {
			s += ", shared with watched tasks"
		}
		add("housekeeping", s)
	}
	if a := r.Actions; a != nil {
		add("actions", fmt.Sprintf("on-threshold ran %d time(s), %d violation(s) skipped while running",
			a.ThresholdFired, a.ThresholdSkipped))
	}
	add("tasks", fmt.Sprintf("%d, %d SLO violation(s)", len(r.Tasks), r.Violations()))
	return h
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off (--no-trace)"
}

func lost(l report.Lost) string {
	var parts []string
	for _, x := range []struct {
		n    uint64
		what string
	}{
		{l.Notices, "notices (ring full)"}, {l.TasksNotTracked, "tasks not tracked"}, {l.Stacks, "stacks"},
		{l.TracesTruncated, "traces truncated"}, {l.WindowsLost, "worst-case windows"},
		{l.ExitedWindowsDropped, "windows of exited tasks (memory bound)"},
		{l.TrackingDeferred, "tasks tracked late"},
	} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", x.n, x.what))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

func commandEnd(c *report.Command) string {
	var s string
	switch {
	case c.ExitStatus != nil:
		s = fmt.Sprintf("exit status %d", *c.ExitStatus)
	case c.Signal != "":
		s = "killed by " + c.Signal
	default:
		s = "still running"
	}
	if c.StoppedByRtscope {
		s += " (stopped by rtscope)"
	}
	return s
}

// shellJoin quotes the arguments that a shell would split or expand.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

func taskOf(t *report.Task, anchor string, ntasks int) *taskView {
	why := t.HealthReason
	if t.Headline != why {
		why += "; " + t.Headline
	}
	tv := &taskView{Anchor: anchor, Who: fmt.Sprintf("%s/%d", t.Comm, t.TID), Health: string(t.Health),
		Headline: why, Open: ntasks <= openTasks || t.Health == report.HealthFail}
	state := "running"
	if t.Exited {
		state = "exited"
	}
	info := []string{fmt.Sprintf("pid %d", t.PID)}
	if t.Sched != "" {
		info = append(info, t.Sched)
	}
	if t.CPUs != "" {
		info = append(info, "CPUs "+t.CPUs)
	}
	tv.Info = strings.Join(append(info, state), ", ")
	c := t.Counters
	tv.Counters = fmt.Sprintf("wakeups %d, voluntary switches %d, preemptions %d, timer releases %d, overruns %d",
		c.Wakeups, c.VoluntarySwitches, c.Preemptions, c.TimerReleases, c.Overruns)
	if c.Throttled > 0 {
		tv.Counters += fmt.Sprintf(", throttled %d", c.Throttled)
	}
	if t.NominalPeriodNs != nil {
		tv.Counters += ", period " + units.Us(*t.NominalPeriodNs) + " µs"
	}
	if st := t.Startup(); st != "" {
		tv.Counters += ", " + st
	}
	if h := t.SchedHistory(); h != "" {
		tv.Counters += "; " + h
	}
	var hy []string
	for _, n := range report.HygieneNames {
		if v := t.Hygiene[n]; v > 0 {
			hy = append(hy, fmt.Sprintf("%s %d", strings.ReplaceAll(n, "_", " "), v))
		}
	}
	tv.Hygiene = strings.Join(hy, ", ")
	for _, id := range metric.All() {
		row, mv := metricOf(t, id, anchor+"-"+id.String())
		if row != nil {
			tv.Rows = append(tv.Rows, *row)
		}
		if mv != nil {
			tv.Metrics = append(tv.Metrics, mv)
		}
	}
	return tv
}

// metricOf is a metric's row in t's summary table (nil without samples or
// SLO) and its section, anchored at ma (nil with nothing to show in one).
// The noise metric's section holds t's noise by cause.
func metricOf(t *report.Task, id metric.ID, ma string) (*summaryRow, *metricView) {
	m := t.Metrics[id.String()]
	if m == nil {
		return nil, nil
	}
	var noise *noiseView
	if id == metric.Noise {
		noise = noiseCauses(t)
	}
	detail := m.Count > 0 || m.Worst != nil || m.WorstNote != "" || m.ViolationCauses != nil || noise != nil
	var row *summaryRow
	if m.Count > 0 || m.SLONs != nil {
		row = &summaryRow{Metric: id.String(), Count: m.Count, Min: us(m.MinNs), Avg: usf(m.AvgNs),
			P50: us(m.P50Ns), P90: us(m.P90Ns), P99: us(m.P99Ns), P999: us(m.P999Ns), Max: us(m.MaxNs),
			SLO: us(m.SLONs), Viol: units.Unset}
		if m.Violations != nil {
			row.Viol = strconv.FormatUint(*m.Violations, 10)
			row.Violated = *m.Violations > 0
		}
		if detail {
			row.Anchor = "#" + ma
		}
	}
	if !detail {
		return row, nil
	}
	mv := &metricView{Name: id.String(), Anchor: ma, Desc: id.Info().Desc, WorstNote: m.WorstNote, Noise: noise}
	if m.Count > 0 {
		mv.Hist = histogram(m.Stats().Hist, m.SLONs)
		if mv.Hist == nil {
			mv.HistNote = "no histogram (the report was not made from the engine's statistics)"
		}
	}
	mv.Series = series(m.Series, m.SLONs)
	mv.Causes = causes(m.ViolationCauses, m.SLONs)
	if m.Worst != nil {
		mv.Worst = window(id, m)
	}
	return row, mv
}

func us(p *uint64) string {
	if p == nil {
		return units.Unset
	}
	return units.Us(*p)
}

func usf(p *float64) string {
	if p == nil {
		return units.Unset
	}
	return units.UsF(*p)
}

// result is the analysis of a worst case: a *analysis.Result from watch,
// or a report.Decoded (a report read back from JSON).
func result(a report.Analysis) *analysis.Result {
	switch r := a.(type) {
	case nil:
		return nil
	case *analysis.Result:
		return r
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil
	}
	var r analysis.Result
	if json.Unmarshal(b, &r) != nil || r.Breakdown == nil {
		return nil
	}
	return &r
}

// f1 prints a coordinate with one decimal: enough for SVG, and short.
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
