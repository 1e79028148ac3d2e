package htmlreport

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/analysis"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/explain"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
)

// evilComm is a task name that is markup: the page must show it, not run it.
const evilComm = `<script>alert("x")</script>&amp;`

// loadWindow reads a window recorded on a real run (the analysis package's
// fixtures, see its testdata/windows/README.md).
func loadWindow(t testing.TB, name string) *trace.Trace {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "analysis", "testdata", "windows", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Trace *trace.Trace `json:"trace"`
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return fx.Trace
}

// record adds one sample of v ns to the engine statistics of a metric.
func record(ms *engine.TaskStats, id metric.ID, v uint64) {
	m := &ms.M[id]
	if m.Count == 0 || v < m.Min {
		m.Min = v
	}
	m.Max = max(m.Max, v)
	m.Count++
	m.Sum += v
	m.Hist[metric.Bucket(v)]++
	if m.Slo != 0 && v > m.Slo {
		m.Violations++
	}
}

func intp(v int) *int       { return &v }
func i64p(v int64) *int64   { return &v }
func u64p(v uint64) *uint64 { return &v }
func setComm(s *engine.TaskStats, c string) {
	for i := 0; i < len(s.Comm)-1 && i < len(c); i++ {
		s.Comm[i] = int8(c[i])
	}
}

// attach attaches the worst window of m with its analysis, as watch does.
func attach(t *testing.T, tk *report.Task, id metric.ID, tr *trace.Trace) *analysis.Result {
	t.Helper()
	m := tk.Metrics[id.String()]
	if !m.SetWorst(tr) {
		t.Fatalf("%s: window of %d ns refused for a maximum of %d", id, tr.Value, *m.MaxNs)
	}
	r := analysis.Explain(tr, explain.SubjectOf(tk, id.String()))
	m.Verdict, m.Cause, m.Analysis = r.Verdict, r.Cause.String(), r
	return r
}

// twoCPUWindow is a latency window over two CPUs with every kind of
// segment: the task woken on CPU 1 while a hog (named as markup) runs
// there, an IRQ, a softirq nested in it, a timer callback, steal, and a
// migration to CPU 0 where it runs.
func twoCPUWindow(tid uint32) *trace.Trace {
	hog := "<b>hog</b>"
	return &trace.Trace{Metric: "latency", TID: tid, Value: 150_000, Start: 1_000_000_000, End: 1_000_150_000,
		CPUStart: 1, CPUEnd: 0, CPUs: []int{0, 1}, StealClock: true, Events: []trace.Event{
			{T: -20_000, CPU: 1, Type: "switch", PrevTID: tid, PrevComm: "worker", PrevSched: "OTHER nice 0", PrevState: "S",
				NextTID: 77, NextComm: hog, NextSched: "FIFO 50"},
			{T: -10_000, CPU: 0, Type: "switch", PrevTID: 55, PrevComm: "kworker/0:1", PrevState: "S", NextTID: 0, NextComm: "idle"},
			{T: 0, CPU: 1, Type: "wakeup", TID: tid, Comm: "worker", Sched: "OTHER nice 0", TargetCPU: intp(1),
				Waker: &trace.Waker{Kind: "timer", Function: "hrtimer_wakeup"}, ExpiryT: i64p(-2_000)},
			{T: 20_000, CPU: 1, Type: "irq_entry", IRQ: intp(24), IRQName: "eth0"},
			{T: 25_000, CPU: 1, Type: "softirq_entry", Vec: intp(3), VecName: "NET_RX"},
			{T: 45_000, CPU: 1, Type: "softirq_exit", Vec: intp(3), VecName: "NET_RX"},
			{T: 50_000, CPU: 1, Type: "irq_exit", IRQ: intp(24), IRQName: "eth0"},
			{T: 70_000, CPU: 1, Type: "timer_entry", Function: "tick_sched_timer", HardIRQ: true, ExpiryT: i64p(69_000)},
			{T: 74_000, CPU: 1, Type: "stack", TID: 77, Comm: hog, WaitingTID: tid, Stack: []string{"hog_loop", "kthread"}},
			{T: 80_000, CPU: 1, Type: "timer_exit", Function: "tick_sched_timer", HardIRQ: true},
			{T: 100_000, CPU: 0, Type: "migrate", TID: tid, Comm: "worker", FromCPU: intp(1), ToCPU: intp(0)},
			{T: 120_000, CPU: 0, Type: "steal", StealNs: 12_000, SinceT: i64p(-10_000)},
			{T: 120_000, CPU: 0, Type: "switch", PrevTID: 0, PrevComm: "idle", PrevState: "R", NextTID: tid, NextComm: "worker",
				NextSched: "OTHER nice 0"},
			{T: 150_000, CPU: 0, Type: "user_return", TID: tid, Comm: "worker"},
		}}
}

// sampleReport is a watch of four tasks: a FIFO task with an SLO, its
// violations explained, a series and a worst window recorded on a real
// run; a task named as markup with a two-CPU window and no SLO; a task
// without samples; and a busy poller with its noise by cause.
func sampleReport(t *testing.T) *report.Report {
	t.Helper()
	slowirq := loadWindow(t, "qemu-rt-slowirq-latency")
	irqoff := loadWindow(t, "qemu-rt-irqoff-timer-irq")

	// The victim of the slow IRQ thread: FIFO 40, a 1 ms period.
	vs := &engine.TaskStats{Id: 1, Tid: slowirq.TID, Pid: slowirq.TID, Policy: 1, Prio: 59, RtPriority: 40,
		CpusMask: 1, NrCpusAllowed: 1, Wakeups: 30000, SwitchesVoluntary: 30000, TimerReleases: 30000,
		NominalPeriod: 1_000_000}
	setComm(vs, "victim")
	vs.M[metric.Latency].Slo = 15_000_000
	sampler := report.NewSampler(1_000_000_000)
	for sec := uint64(1); sec <= 30; sec++ {
		if sec != 12 { // an interval without a sample: a gap in the lines
			for i := uint64(0); i < 1000; i++ {
				record(vs, metric.Latency, 4_000+(i*37+sec*101)%40_000)
			}
		}
		if sec%10 == 0 {
			record(vs, metric.Latency, 20_000_000+sec*1000) // the injected 20 ms
		}
		if sec == 30 {
			record(vs, metric.Latency, slowirq.Value)
		}
		sampler.Add(sec*1_000_000_000, report.MetricStats(vs, metric.Latency))
	}
	for i := uint64(0); i < 5000; i++ {
		record(vs, metric.TimerIRQ, 2_000+(i*7)%9_000)
	}
	record(vs, metric.TimerIRQ, irqoff.Value)
	victim := report.FromStats(vs)
	lat := victim.Metrics["latency"]
	res := attach(t, victim, metric.Latency, slowirq)
	lat.Series = sampler.Series()
	var v report.Violations
	for i := 0; i < 3; i++ {
		v.Add(explain.Explanation(res), slowirq.Value-uint64(i)*1000, slowirq)
	}
	v.Add(report.Explanation{Verdict: "the hypervisor held the CPU", Cause: "hypervisor", Culprit: "hypervisor", ByPlatform: true},
		15_500_000, slowirq)
	v.Skip(report.NotAnalysedBudget, 1)
	lat.ViolationCauses = v.Finish(*lat.Violations)
	// The irq-off window is another task's: shown as it is, without analysis.
	victim.Metrics["timer-irq"].SetWorst(irqoff)
	victim.Metrics["timer-irq"].Verdict = "irq-off: interrupts were off"
	report.Judge(victim)

	// A normal task named as markup, its worst window over two CPUs.
	ws := &engine.TaskStats{Id: 2, Tid: 4242, Pid: 4240, Policy: 0, Prio: 120, CpusMask: 3, NrCpusAllowed: 2,
		Wakeups: 200, SwitchesVoluntary: 190, SwitchesPreempted: 10}
	for i := uint64(0); i < 200; i++ {
		record(ws, metric.Response, 10_000+i*700)
	}
	record(ws, metric.Latency, 150_000)
	worker := report.FromStats(ws)
	worker.Comm = evilComm
	attach(t, worker, metric.Latency, twoCPUWindow(4242))
	worker.Metrics["response"].WorstNote = "no window: while tasks run, each metric keeps the windows of its 16 largest maxima only"
	report.Judge(worker)

	idle := report.FromStats(&engine.TaskStats{Id: 3, Tid: 99, Pid: 99, Prio: 120})
	report.Judge(idle)

	// A busy poller: noise and its causes, its maximum without a window.
	poller := report.FromStats(pollerStats(4, 500))
	poller.Metrics["noise"].WorstNote = "no window: none was cut for this maximum (reached as the run ended, or its notice came too late to cut one)"
	report.Judge(poller)

	exit := 0
	return &report.Report{Schema: report.Schema, Kernel: "6.1.0-rt <test>", Started: "2026-11-22T10:00:00Z",
		DurationNs: 30_000_000_000, Features: report.Features{Trace: true, ThreadedIRQ: "fentry", Steal: "steal clock"},
		Lost:    report.Lost{Notices: 2},
		Steal:   &report.Steal{Readable: true, RunNs: 1_200_000, PerCPUNs: []uint64{600_000, 600_000}, WorstCases: 2},
		Command: &report.Command{Argv: []string{"sh", "-c", "echo <hi> && sleep 1"}, ExitStatus: &exit},
		Tasks:   []*report.Task{victim, worker, idle, poller}}
}

func render(t *testing.T, r *report.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkPage checks the elements a report must show; the browser test
// runs it on the DOM the browser built too.
func checkPage(t *testing.T, doc *node, r *report.Report) {
	t.Helper()
	sections := doc.all("details.task")
	if len(sections) != len(r.Tasks) {
		t.Fatalf("%d task sections, want %d", len(sections), len(r.Tasks))
	}
	heads := doc.all("tr.headline")
	if len(heads) != len(r.Tasks) {
		t.Errorf("%d headline rows, want %d", len(heads), len(r.Tasks))
	}
	for _, h := range heads {
		a := h.first("a")
		if a == nil || !strings.HasPrefix(a.attr["href"], "#") || doc.byID(a.attr["href"][1:]) == nil {
			t.Errorf("headline %q links nowhere", strings.TrimSpace(h.textContent()))
		}
		if h.first("span.badge") == nil {
			t.Errorf("headline %q has no health badge", strings.TrimSpace(h.textContent()))
		}
	}
	for i, tk := range r.Tasks {
		sec := sections[i]
		if who := sec.first("span.who"); who == nil || who.textContent() != tk.Comm+"/"+strconv.Itoa(int(tk.TID)) {
			t.Errorf("task %d: section names %q", tk.TID, sec.first("summary").textContent())
		}
		if sec.attr["data-health"] != string(tk.Health) || !strings.Contains(sec.textContent(), tk.Headline) {
			t.Errorf("task %d: health %q, headline missing (want %s: %s)", tk.TID, sec.attr["data-health"], tk.Health, tk.Headline)
		}
		hists := map[string]*node{}
		for _, h := range sec.all("svg.hist") {
			hists[h.attr["data-metric"]] = h
		}
		series := map[string]*node{}
		for _, s := range sec.all("svg.series") {
			series[s.attr["data-metric"]] = s
		}
		worsts := map[string]*node{}
		for _, w := range sec.all("div.worst") {
			worsts[w.attr["data-metric"]] = w
		}
		withSamples := 0
		for _, id := range metric.All() {
			name := id.String()
			m := tk.Metrics[name]
			if m.Count == 0 {
				if hists[name] != nil {
					t.Errorf("task %d %s: a histogram without samples", tk.TID, name)
				}
				continue
			}
			withSamples++
			h := hists[name]
			if h == nil {
				t.Errorf("task %d %s: no histogram", tk.TID, name)
				continue
			}
			if len(h.all("rect.bar")) == 0 {
				t.Errorf("task %d %s: histogram without bars", tk.TID, name)
			}
			if slo := h.first("g.slo"); (slo != nil) != (m.SLONs != nil) {
				t.Errorf("task %d %s: SLO line shown %v, SLO set %v", tk.TID, name, slo != nil, m.SLONs != nil)
			}
			if (series[name] != nil) != (m.Series != nil) {
				t.Errorf("task %d %s: series chart shown %v, series recorded %v", tk.TID, name, series[name] != nil, m.Series != nil)
			} else if s := series[name]; s != nil {
				var pts [][]any
				if err := json.Unmarshal([]byte(s.attr["data-pts"]), &pts); err != nil || len(pts) != len(m.Series.Points) {
					t.Errorf("task %d %s: series data %d points (%v), want %d", tk.TID, name, len(pts), err, len(m.Series.Points))
				}
				if len(s.all("path.line")) != 2 {
					t.Errorf("task %d %s: series without its max and p99 lines", tk.TID, name)
				}
			}
			if m.ViolationCauses != nil {
				rows := sec.byID(sec.attr["id"] + "-" + name).all("tr.cause")
				if len(rows) != len(m.ViolationCauses.Causes) {
					t.Errorf("task %d %s: %d cause rows, want %d", tk.TID, name, len(rows), len(m.ViolationCauses.Causes))
				}
			}
			if (worsts[name] != nil) != (m.Worst != nil) {
				t.Errorf("task %d %s: worst window shown %v, recorded %v", tk.TID, name, worsts[name] != nil, m.Worst != nil)
				continue
			}
			if m.Worst != nil {
				checkWindow(t, worsts[name], m)
			}
		}
		checkNoise(t, sec, tk)
		if len(hists) != withSamples {
			t.Errorf("task %d: %d histograms, want one per metric with samples (%d)", tk.TID, len(hists), withSamples)
		}
	}
}

// laneCPUsWanted are the window's CPUs, and those of the lanes drawn that
// sent an IPI in the window (a lane for the sender of an IPI drawn).
func laneCPUsWanted(tr *trace.Trace, drawn []int) []int {
	want := slices.Clone(tr.CPUs)
	for _, e := range tr.Events {
		if e.Type == trace.EventIPISend && slices.Contains(drawn, e.CPU) && !slices.Contains(want, e.CPU) {
			want = append(want, e.CPU)
		}
	}
	slices.Sort(want)
	return want
}

func checkWindow(t *testing.T, w *node, m *report.Metric) {
	t.Helper()
	tl := w.first("svg.timeline")
	if tl == nil {
		t.Error("worst window without a timeline")
		return
	}
	lanes := tl.all("g.lane")
	var cpus []int
	for _, l := range lanes {
		c, err := strconv.Atoi(l.attr["data-cpu"])
		if err != nil {
			t.Errorf("lane without its CPU: %v", l.attr)
		}
		cpus = append(cpus, c)
		if len(l.all("rect.seg")) == 0 {
			t.Errorf("lane of CPU %d is empty", c)
		}
	}
	if want := laneCPUsWanted(m.Worst, cpus); !slices.Equal(cpus, want) {
		t.Errorf("lanes of CPUs %v, want one per CPU of the window %v (and of the IPIs drawn from others)", cpus, want)
	}
	if len(tl.all("g.marker.m-start")) != 1 || len(tl.all("g.marker.m-end")) != 1 {
		t.Error("timeline without its start and end markers")
	}
	if v := w.first("p.verdict"); m.Verdict != "" && (v == nil || !strings.Contains(v.textContent(), m.Verdict)) {
		t.Errorf("verdict %q not shown", m.Verdict)
	}
	if r := result(m.Analysis); r != nil {
		rows := w.all("tr.item")
		if len(rows) != len(r.Breakdown) {
			t.Fatalf("%d breakdown rows, want %d", len(rows), len(r.Breakdown))
		}
		for i, it := range r.Breakdown {
			c := rows[i].cells()
			if len(c) != 6 || c[1] != it.Kind.String() || !strings.HasPrefix(c[2], it.Label) ||
				c[5] != strconv.FormatFloat(it.Percent, 'f', 1, 64) {
				t.Errorf("breakdown row %d: %q, want %s %s %.1f%%", i, c, it.Kind, it.Label, it.Percent)
			}
		}
	}
	if n := len(w.first("table.events").all("tr")); n != len(m.Worst.Events) {
		t.Errorf("%d event rows, want %d", n, len(m.Worst.Events))
	}
}

func TestPage(t *testing.T) {
	r := sampleReport(t)
	page := render(t, r)
	doc := parseHTML(t, page)
	checkPage(t, doc, r)
	if again := render(t, r); again != page {
		t.Error("two renderings of the same report differ")
	}
	// What the fixtures must have exercised, lest the checks above pass on nothing.
	if n := len(doc.all("svg.series")); n != 1 {
		t.Errorf("%d series charts, want 1", n)
	}
	if n := len(doc.all("g.lane")); n != 1+1+2 {
		t.Errorf("%d lanes in all, want 4 (three windows, one over two CPUs)", n)
	}
	for _, class := range []string{"s-self", "s-other", "s-idle", "s-irq", "s-softirq", "s-timer", "s-steal"} {
		if len(doc.all("rect.seg."+class)) == 0 {
			t.Errorf("no %s segment drawn", class)
		}
	}
	if len(doc.all("path.glyph.g-wakeup")) == 0 || len(doc.all("path.glyph.g-stack")) == 0 ||
		len(doc.all("g.marker.m-expiry")) == 0 {
		t.Error("the task's wakeups, stack samples and timer expiry are not marked")
	}
	if len(doc.all("table.causes")) != 1 {
		t.Error("no violation cause histogram")
	}
	if e := doc.byID("js-errors"); e == nil || e.tag != "pre" || e.textContent() != "" {
		t.Error("no empty <pre id=js-errors>")
	}
}

func TestPageIsSelfContained(t *testing.T) {
	page := render(t, sampleReport(t))
	for _, s := range []string{"http://", "https://", "//cdn", "src=", "@import"} {
		if i := strings.Index(page, s); i >= 0 {
			t.Errorf("the page refers outside itself: %q at %q", s, page[max(0, i-60):min(len(page), i+60)])
		}
	}
	doc := parseHTML(t, page)
	if n := len(doc.all("link")); n != 0 {
		t.Errorf("%d <link> elements", n)
	}
	if n := len(doc.all("script")); n != 2 {
		t.Errorf("%d scripts, want the 2 of the page", n)
	}
}

func TestMarkupInNamesIsEscaped(t *testing.T) {
	r := sampleReport(t)
	page := render(t, r)
	for _, s := range []string{"<script>alert", "<b>hog", "<hi>", "<test>"} {
		if strings.Contains(page, s) {
			t.Errorf("%q is in the page unescaped", s)
		}
	}
	doc := parseHTML(t, page)
	// Shown as text, exactly.
	if who := doc.all("span.who")[1].textContent(); who != evilComm+"/4242" {
		t.Errorf("task name shown as %q", who)
	}
	found := false
	for _, s := range doc.all("rect.seg.s-other") {
		found = found || strings.Contains(s.attr["data-tip"], "<b>hog</b>/77 (FIFO 50)")
	}
	if !found {
		t.Error("the other task's name is not in its segment's tooltip")
	}
}

// A report read back from JSON has the analysis as a map and the
// histograms it carries: the page draws the same histograms and the
// breakdown. A JSON report without histograms (older than the field) says
// why it has none.
func TestReportFromJSON(t *testing.T) {
	orig := sampleReport(t)
	var b bytes.Buffer
	if err := orig.EncodeJSON(&b); err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Tasks[0].Metrics["latency"].Analysis.(report.Decoded); !ok {
		t.Fatalf("analysis decoded as %T", r.Tasks[0].Metrics["latency"].Analysis)
	}
	want := len(parseHTML(t, render(t, orig)).all("svg.hist"))
	doc := parseHTML(t, render(t, &r))
	if n := len(doc.all("svg.hist")); want == 0 || n != want {
		t.Errorf("%d histograms read back from JSON, want the %d of the report", n, want)
	}
	rows := len(result(r.Tasks[0].Metrics["latency"].Analysis).Breakdown)
	if n := len(doc.all("section.metric")[0].all("tr.item")); rows == 0 || n != rows {
		t.Errorf("%d breakdown rows, want %d", n, rows)
	}

	var old report.Report
	if err := json.Unmarshal(bytes.ReplaceAll(b.Bytes(), []byte(`"histogram"`), []byte(`"histogram_absent"`)), &old); err != nil {
		t.Fatal(err)
	}
	doc = parseHTML(t, render(t, &old))
	if n := len(doc.all("svg.hist")); n != 0 {
		t.Errorf("%d histograms without statistics", n)
	}
	if !strings.Contains(doc.textContent(), "no histogram") {
		t.Error("the missing histograms are not explained")
	}
}

func TestEmptyReport(t *testing.T) {
	doc := parseHTML(t, render(t, &report.Report{Schema: report.Schema}))
	if n := len(doc.all("details.task")); n != 0 {
		t.Errorf("%d task sections", n)
	}
	if !strings.Contains(doc.textContent(), "no task was tracked") {
		t.Error("an empty report does not say so")
	}
	if err := Write(&bytes.Buffer{}, nil); err == nil {
		t.Error("no error for a nil report")
	}
}

// A window cut at the flight recorder's limit (about a thousand events)
// keeps the page small, and a task without its health judged is judged.
func TestLongWindowSize(t *testing.T) {
	s := &engine.TaskStats{Id: 1, Tid: 10, Pid: 10, Policy: 1, Prio: 49}
	record(s, metric.Latency, 2_000_000)
	tk := report.FromStats(s)
	tr := &trace.Trace{Metric: "latency", TID: 10, Value: 2_000_000, Start: 1e9, End: 1e9 + 2_000_000, CPUs: []int{0, 1, 2, 3},
		Truncated: true, Note: "window too long"}
	for i := 0; i < 1024; i++ {
		cpu := i % 4
		tr.Events = append(tr.Events, trace.Event{T: int64(i) * 2_000, CPU: cpu, Type: "switch", PrevTID: uint32(100 + i),
			PrevComm: "spinner", NextTID: uint32(101 + i), NextComm: "spinner", NextSched: "FIFO 60"})
	}
	attach(t, tk, metric.Latency, tr)
	r := &report.Report{Tasks: []*report.Task{tk}}
	page := render(t, r)
	if len(page) > 1<<20 {
		t.Errorf("page of %d bytes for a 1024-event window", len(page))
	}
	doc := parseHTML(t, page)
	checkPage(t, doc, judgedReport(r))
	if !strings.Contains(page, "window too long") {
		t.Error("the truncation is not said")
	}
}

// judgedReport is r with its tasks judged, as the page shows them.
func judgedReport(r *report.Report) *report.Report {
	c := *r
	c.Tasks = nil
	for _, t := range r.Tasks {
		c.Tasks = append(c.Tasks, judged(t))
	}
	return &c
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.html")
	r := sampleReport(t)
	if err := WriteFile(path, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != render(t, r) {
		t.Error("the file differs from Write's page")
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "missing", "report.html"), r); err == nil {
		t.Error("no error for a file in a missing directory")
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		n      int
		want   []float64
	}{
		{0, 30, 6, []float64{0, 5, 10, 15, 20, 25, 30}},
		{-15, 165, 9, []float64{0, 20, 40, 60, 80, 100, 120, 140, 160}},
		{0, 0.3, 3, []float64{0, 0.1, 0.2, 0.3}},
	} {
		got := niceTicks(c.lo, c.hi, c.n)
		if c.lo == -15 {
			got = slices.DeleteFunc(got, func(v float64) bool { return v < 0 })
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("niceTicks(%v, %v, %d) = %v, want %v", c.lo, c.hi, c.n, got, c.want)
		}
	}
}

func TestHistogramScale(t *testing.T) {
	h := make([]uint32, metric.Buckets)
	h[metric.Bucket(5_000)] = 99
	h[metric.Bucket(50_000)] = 9
	v := histogram(h, u64p(20_000))
	if len(v.Bars) != 2 || v.Bars[0].Class != "under" || v.Bars[1].Class != "over" {
		t.Fatalf("bars %+v", v.Bars)
	}
	// y is log10(count+1): 99 reaches the top of a 2-decade axis, 9 half of it.
	if math.Abs(v.Bars[0].Y-plotT) > 0.01 || math.Abs(v.Bars[1].H-plotH/2) > 0.01 {
		t.Errorf("bar heights %v %v of %v", v.Bars[0].H, v.Bars[1].H, plotH)
	}
	// x spans the decades 1..100 µs; the SLO at 20 µs, bars in their decades.
	if v.SLO == nil || v.Bars[0].X < plotL+plotW*0.3 || v.Bars[0].X > plotL+plotW*0.4 || v.SLO.X < plotL+plotW*0.6 || v.SLO.X > plotL+plotW*0.7 {
		t.Errorf("x positions: bar %v, SLO %+v over [%v, %v]", v.Bars[0].X, v.SLO, plotL, plotR)
	}
	if histogram(make([]uint32, metric.Buckets), nil) != nil || histogram(nil, nil) != nil {
		t.Error("a histogram of nothing")
	}
}

// The sample report is consistent (report.Check), as every report a test
// builds must be.
func TestSampleReportConsistent(t *testing.T) {
	for _, p := range report.Check(sampleReport(t)) {
		t.Errorf("report check: %s", p)
	}
}
