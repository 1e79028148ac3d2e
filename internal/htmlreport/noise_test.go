package htmlreport

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/units"
)

// pollerStats is a FIFO 1 busy poller's statistics with known sums,
// RT-throttled twice: 252
// noise intervals of 100 ms in all (2 of 25 ms, 250 of 200 us), and their
// parts: throttling 50 ms (2), timer IRQ 40 ms (245), preemption and
// softirq 2.5 ms each (1 and 10: equal times), IRQ 1 us (3).
func pollerStats(id uint64, tid uint32) *engine.TaskStats {
	s := &engine.TaskStats{Id: id, Tid: tid, Pid: tid, Policy: 1, Prio: 98, RtPriority: 1, CpusMask: 2, NrCpusAllowed: 1,
		Throttled: 2}
	setComm(s, "poller")
	for range 2 {
		record(s, metric.Noise, 25_000_000)
	}
	for range 250 {
		record(s, metric.Noise, 200_000)
	}
	for _, p := range []struct {
		cause uint8
		parts uint32
		ns    uint64
	}{
		{engine.NoiseThrottle, 2, 50_000_000}, {engine.NoiseTimer, 245, 40_000_000},
		{engine.NoisePreempt, 1, 2_500_000}, {engine.NoiseSoftirq, 10, 2_500_000}, {engine.NoiseIRQ, 3, 1_000},
	} {
		s.NoiseParts[p.cause-1], s.NoiseNs[p.cause-1] = p.parts, p.ns
	}
	return s
}

// A task's noise by cause is a table in its noise metric's section: the
// text report's words, the longest first (equal times by cause name), in
// µs, with the parts and the share of the intervals' time. A task with
// noise but no part by cause, and one without noise, have no table.
func TestNoiseByCauseTable(t *testing.T) {
	poller := report.FromStats(pollerStats(1, 10))
	quiet := &engine.TaskStats{Id: 2, Tid: 11, Pid: 11, Policy: 1, Prio: 98, RtPriority: 1}
	record(quiet, metric.Noise, 30_000)
	idle := &engine.TaskStats{Id: 3, Tid: 12, Pid: 12}
	r := &report.Report{Schema: report.Schema, Tasks: []*report.Task{poller, report.FromStats(quiet), report.FromStats(idle)}}
	doc := parseHTML(t, render(t, r))

	sec := doc.byID("task-0-noise")
	if sec == nil {
		t.Fatal("no noise section for the poller")
	}
	var got [][]string
	for _, tr := range sec.all("tr.noise-cause") {
		got = append(got, append([]string{tr.attr["data-cause"]}, tr.cells()...))
	}
	want := [][]string{
		{"throttling", "throttling", "50000.0", "2", "50.0%"},
		{"timer_irq", "timer IRQ", "40000.0", "245", "40.0%"},
		{"preemption", "preemption", "2500.0", "1", "2.5%"},
		{"softirq", "softirq", "2500.0", "10", "2.5%"},
		{"irq", "IRQ", "1.0", "3", "0.0%"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("noise by cause rows\n got %q\nwant %q", got, want)
	}
	h := sec.first("div.noise-causes").first("h4").textContent()
	if w := "noise by cause share of the 100000.0 µs of its 252 noise intervals; the parts' own times add up to 95001.0 µs"; h != w {
		t.Errorf("heading %q, want %q", h, w)
	}
	if bar := sec.first("rect.pbar-fg.noise"); bar == nil || bar.attr["width"] != "50.0" {
		t.Errorf("the largest share's bar is not 50 wide: %v", bar)
	}
	for _, id := range []string{"task-1", "task-2"} {
		if n := len(doc.byID(id).all("table.noise-causes")); n != 0 {
			t.Errorf("%s: %d noise by cause tables for a task without a part", id, n)
		}
	}
	// Its throttled switch-outs beside its other counters, as in the text
	// report: the throttling parts' count.
	for id, want := range map[string]string{"task-0": "overruns 0, throttled 2", "task-1": "overruns 0"} {
		if c := doc.byID(id).first("p.note").textContent(); !strings.HasSuffix(c, want) {
			t.Errorf("%s: counters %q, want them to end with %q", id, c, want)
		}
	}
	if doc.byID("task-1-noise") == nil {
		t.Error("the task with noise but no part lost its noise section")
	}

	// One interval, all of it one part.
	one := &engine.TaskStats{Id: 4, Tid: 13, Pid: 13}
	record(one, metric.Noise, 5_111_200)
	one.NoiseParts[engine.NoisePreempt-1], one.NoiseNs[engine.NoisePreempt-1] = 1, 5_111_200
	r = &report.Report{Schema: report.Schema, Tasks: []*report.Task{report.FromStats(one)}}
	sec = parseHTML(t, render(t, r)).byID("task-0-noise")
	h = sec.first("div.noise-causes").first("h4").textContent()
	if w := "noise by cause share of the 5111.2 µs of its 1 noise interval; the parts' own times add up to 5111.2 µs"; h != w {
		t.Errorf("heading %q, want %q", h, w)
	}
	if c := sec.first("tr.noise-cause").cells(); !slices.Equal(c, []string{"preemption", "5111.2", "1", "100.0%"}) {
		t.Errorf("row %q", c)
	}
}

// The page shows whatever causes the JSON carries, a cause it has no word
// for by its JSON name, and each row's time and parts are the JSON's: the
// page's noise sums equal the JSON's.
func TestNoiseByCauseFromJSON(t *testing.T) {
	orig := &report.Report{Schema: report.Schema, Tasks: []*report.Task{report.FromStats(pollerStats(1, 10))}}
	var b bytes.Buffer
	if err := orig.EncodeJSON(&b); err != nil {
		t.Fatal(err)
	}
	// A cause of a newer rtscope, unknown to this one.
	js := strings.Replace(b.String(), `"noise_by_cause":{`, `"noise_by_cause":{"future_cause":{"count":7,"ns":3000000},`, 1)
	var raw struct {
		Tasks []struct {
			NoiseByCause map[string]struct{ Count, Ns uint64 } `json:"noise_by_cause"`
		} `json:"tasks"`
	}
	var r report.Report
	if err := json.Unmarshal([]byte(js), &raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	want := raw.Tasks[0].NoiseByCause
	if len(want) != 6 {
		t.Fatalf("the JSON holds %d causes, want 6: %s", len(want), js)
	}
	rows := parseHTML(t, render(t, &r)).byID("task-0-noise").all("tr.noise-cause")
	if len(rows) != len(want) {
		t.Fatalf("%d rows for the JSON's %d causes", len(rows), len(want))
	}
	var htmlNs, jsonNs, prev float64
	for i, tr := range rows {
		c := tr.cells()
		w, ok := want[tr.attr["data-cause"]]
		us, err := strconv.ParseFloat(c[1], 64)
		if !ok || err != nil || c[1] != units.Us(w.Ns) || c[2] != strconv.FormatUint(w.Count, 10) {
			t.Errorf("row %q (%s): the JSON has %+v", c, tr.attr["data-cause"], w)
		}
		if i > 0 && us > prev {
			t.Errorf("row %q after a shorter one", c)
		}
		prev = us
		htmlNs += us * 1e3
		jsonNs += float64(w.Ns)
	}
	if htmlNs != jsonNs {
		t.Errorf("the page's noise by cause adds up to %.0f ns, the JSON's to %.0f", htmlNs, jsonNs)
	}
	if c := rows[2].cells(); c[0] != "future_cause" || c[3] != "3.0%" {
		t.Errorf("the unknown cause shown as %q, want its JSON name and 3.0%%", c)
	}
}

// checkNoise checks a task section's noise by cause (checkPage): one table
// in its noise metric's section with a row per cause, as ranked for every
// report, or none without a part.
func checkNoise(t *testing.T, sec *node, tk *report.Task) {
	t.Helper()
	want := report.NoiseCausesRanked(tk)
	tables := sec.all("table.noise-causes")
	if len(want) == 0 {
		if len(tables) != 0 {
			t.Errorf("task %d: %d noise by cause tables without a part", tk.TID, len(tables))
		}
		return
	}
	noise := sec.byID(sec.attr["id"] + "-" + metric.Noise.String())
	if len(tables) != 1 || noise == nil || noise.first("table.noise-causes") != tables[0] {
		t.Errorf("task %d: %d noise by cause tables, want one in its noise section", tk.TID, len(tables))
		return
	}
	rows := tables[0].all("tr.noise-cause")
	if len(rows) != len(want) {
		t.Errorf("task %d: %d noise by cause rows, want %d", tk.TID, len(rows), len(want))
		return
	}
	for i, w := range want {
		c := rows[i].cells()
		if rows[i].attr["data-cause"] != string(w.Cause) || len(c) != 4 || c[0] != w.Word || c[1] != units.Us(w.Ns) ||
			c[2] != strconv.FormatUint(w.Count, 10) {
			t.Errorf("task %d: noise by cause row %d %q, want %s %s %d", tk.TID, i, c, w.Word, units.Us(w.Ns), w.Count)
		}
	}
}

// In a recorded watch of oslat (its polling threads RT-throttled), every
// task with noise parts has its table with the JSON's causes, and the
// others none.
func TestNoiseByCauseRecorded(t *testing.T) {
	r := recordedReports(t)["rt-tests-oslat-noise"]
	sections := parseHTML(t, render(t, r)).all("details.task")
	if len(sections) != len(r.Tasks) {
		t.Fatalf("%d task sections, want %d", len(sections), len(r.Tasks))
	}
	tables, withParts := 0, 0
	for i, tk := range r.Tasks {
		checkNoise(t, sections[i], tk)
		tables += len(sections[i].all("table.noise-causes"))
		if len(tk.NoiseByCause) > 0 {
			withParts++
		}
	}
	if withParts < 2 || tables != withParts {
		t.Errorf("%d noise by cause tables for %d tasks with noise parts, want one each (of oslat's threads at least)", tables, withParts)
	}
}
