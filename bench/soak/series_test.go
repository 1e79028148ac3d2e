package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for q, want := range map[float64]time.Duration{0: 1, 0.5: 3, 0.99: 5, 1: 5} {
		if got := quantile(ds, q); got != want {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if quantile(nil, 0.5) != 0 {
		t.Error("quantile of nothing is not 0")
	}
}

// The series of a run: one CSV row a sample with the archive against its
// limit and the slowest API answer, and a well-formed SVG with one line a
// panel and the limits drawn.
func TestWriteSeries(t *testing.T) {
	var samples []sample
	for i := 1; i <= 8; i++ {
		samples = append(samples, sample{at: time.Duration(i) * 10 * time.Second, p: proc{rssKB: int64(40000 + i)},
			archive: int64(i) << 20, apiMax: time.Duration(i) * time.Millisecond,
			m: map[string]float64{`rtscope_tasks_exited_total{target="churn"}`: float64(200 * i), "rtscope_targets": 3,
				"rtscope_bpf_memory_bytes": 1 << 20}})
	}
	base := filepath.Join(t.TempDir(), "run-soak")
	writeSeries(base, samples)
	csv, err := os.ReadFile(base + ".csv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) != 9 || lines[8] != "80,40008,1048576,0.000,8388608,8388608,8.000,1600,0,3" {
		t.Errorf("CSV: %d lines, the last %q", len(lines), lines[len(lines)-1])
	}
	svg, err := os.ReadFile(base + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Errorf("the plot is not well-formed XML: %v", err)
	}
	if n := strings.Count(string(svg), "<polyline"); n != 4 {
		t.Errorf("%d lines plotted, want 4 (RSS, BPF memory, archive, API)", n)
	}
	if n := strings.Count(string(svg), `stroke="red"`); n != 2 {
		t.Errorf("%d limits drawn, want 2 (archive, API)", n)
	}
}

// Each API answer is counted under the change in progress while it was
// asked (overlapping the change's span), or under none.
func TestReportOverlap(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	o := &operator{
		changes: []span{{kind: changeKinds[0], from: at(1000), to: at(2000)}, {kind: changeKinds[3], from: at(5000), to: at(5500)}},
		gets: []span{{from: at(0), to: at(3)}, {from: at(1900), to: at(2400)}, {from: at(990), to: at(1010)},
			{from: at(4000), to: at(4002)}, {from: at(5400), to: at(5401)}},
	}
	var md strings.Builder
	o.reportOverlap(&md)
	for _, want := range []string{"| no change in progress | 2 | 3ms | 3ms |", "| ctl add --comm | 2 | 500ms | 500ms |",
		"| ctl remove --comm | 0 | 0s | 0s |", "| SIGHUP reload | 1 | 1ms | 1ms |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, md.String())
		}
	}
}
