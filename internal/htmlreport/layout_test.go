package htmlreport

import (
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/report"
)

// recordedReports are the output goldens' recorded watch reports (real runs,
// internal/report/testdata/fixtures) that have an HTML golden.
func recordedReports(t *testing.T) map[string]*report.Report {
	t.Helper()
	out := map[string]*report.Report{}
	for _, name := range []string{"healthy-loop", "priority-inversion", "priority-inversion-pi", "rt-hog-slo", "ipi-storm", "rt-tests-oslat-noise"} {
		f, err := os.Open(filepath.Join("..", "report", "testdata", "fixtures", name+".json.gz"))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		var r report.Report
		if err := json.NewDecoder(zr).Decode(&r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f.Close()
		out[name] = &r
	}
	return out
}

// layoutPages are the pages the layout tests read: the sample report (a
// 150 µs window, whose first tick is just right of its start, and a 20 ms
// maximum, whose histogram ends on "100000") and the recorded ones.
func layoutPages(t *testing.T) map[string]string {
	t.Helper()
	if layoutCache == nil {
		pages := map[string]string{"sample": render(t, sampleReport(t))}
		if !testing.Short() {
			for name, r := range recordedReports(t) {
				pages[name] = render(t, r)
			}
		}
		layoutCache = pages
	}
	return layoutCache
}

// layoutCache holds the rendered pages: the recorded ones take a second.
var layoutCache map[string]string

// svgWidth is the width of an svg's viewBox.
func svgWidth(t *testing.T, svg *node) float64 {
	t.Helper()
	f := strings.Fields(svg.attr["viewbox"])
	if len(f) != 4 {
		t.Fatalf("svg.%s viewBox %q", svg.attr["class"], svg.attr["viewbox"])
	}
	w, err := strconv.ParseFloat(f[2], 64)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A tick reads "0", never "-0": niceTicks' ceiling of a small negative
// start is -0, which a label printed as "-0" on every timeline whose
// window's context before its start is shorter than a tick.
func TestNoNegativeZeroTick(t *testing.T) {
	for _, v := range niceTicks(-15, 150, 9) {
		if v == 0 && math.Signbit(v) {
			t.Errorf("niceTicks(-15, 150, 9) holds -0: %v", niceTicks(-15, 150, 9))
		}
	}
	for name, page := range layoutPages(t) {
		n := 0
		for _, l := range parseHTML(t, page).all("text.tick-label") {
			n++
			if s := strings.TrimSpace(l.textContent()); strings.HasPrefix(s, "-0") && strings.Trim(s, "-0. s") == "" {
				t.Errorf("%s: tick label %q", name, s)
			}
		}
		if n == 0 {
			t.Errorf("%s: no tick label", name)
		}
	}
}

// Every x-axis label stays inside its chart: its extent, from its x, its
// anchor and an upper bound of a 10px digit's width, within the viewBox.
// (The y-axis labels end 5 units left of the axis by design: the browser
// test measures them.)
// A "10000" centred on the histogram's last tick (548 of 560) was cut to
// "1000(". The browser test measures the labels as drawn.
func TestAxisLabelsWithinChart(t *testing.T) {
	const charW = 6.5 // 10px system-ui digits are 5.6 to 6.4 wide
	for name, page := range layoutPages(t) {
		for _, svg := range parseHTML(t, page).all("svg") {
			if svg.attr["viewbox"] == "" || svg.attr["class"] == "pbar" {
				continue
			}
			w := svgWidth(t, svg)
			for _, l := range svg.all("text.tick-label.x") {
				x, err := strconv.ParseFloat(l.attr["x"], 64)
				if err != nil {
					t.Fatalf("%s: tick label x %q", name, l.attr["x"])
				}
				s := strings.TrimSpace(l.textContent())
				tw := float64(len([]rune(s))) * charW
				from, ok := map[string]float64{"start": x, "middle": x - tw/2, "end": x - tw}[l.attr["text-anchor"]]
				if !ok {
					t.Fatalf("%s: tick label %q text-anchor %q", name, s, l.attr["text-anchor"])
				}
				if from < 0 || from+tw > w {
					t.Errorf("%s: svg.%s label %q (x %v, %s) spans %.1f..%.1f outside 0..%v",
						name, svg.attr["class"], s, x, l.attr["text-anchor"], from, from+tw, w)
				}
			}
		}
	}
}

// A legend's swatch is its own empty box and its text follows it: the
// over-time chart's "max" and "p99" were written inside 1.2em-wide
// swatches, and the text ran over them.
func TestLegendTextOutsideSwatch(t *testing.T) {
	for name, page := range layoutPages(t) {
		doc := parseHTML(t, page)
		keys := 0
		for _, parent := range append(doc.all("figcaption"), doc.all("p.legend")...) {
			for i, k := range parent.kids {
				if k.tag != "span" || !k.hasClasses([]string{"key"}) {
					continue
				}
				keys++
				if s := k.textContent(); s != "" {
					t.Errorf("%s: swatch %q holds text %q", name, k.attr["class"], s)
				}
				if i+1 >= len(parent.kids) || parent.kids[i+1].tag != "#text" || strings.TrimSpace(parent.kids[i+1].text) == "" {
					t.Errorf("%s: swatch %q is not followed by its text", name, k.attr["class"])
				}
			}
		}
		if keys == 0 {
			t.Errorf("%s: no legend swatch", name)
		}
	}
}

// A point of a series with no neighbour (the intervals around it had no
// sample) is drawn as a dot: a path of bare moves draws nothing, and a 2 s
// run's chart with samples at 1 s and 2.1 s only was empty.
func TestSeriesLonePointsDrawn(t *testing.T) {
	v := func(ns uint64) *uint64 { return &ns }
	pts := []report.Point{{TNs: 1, MaxNs: v(10)}, {TNs: 2}, {TNs: 3, MaxNs: v(20)}, {TNs: 4, MaxNs: v(30)}, {TNs: 5}, {TNs: 6, MaxNs: v(40)}}
	id := func(ns uint64) float64 { return float64(ns) }
	line, dots := seriesPath(pts, func(p report.Point) *uint64 { return p.MaxNs }, id, id)
	if want := "M3.0,20.0L4.0,30.0"; line != want {
		t.Errorf("seriesPath's line = %q, want %q", line, want)
	}
	if want := "M1.0,10.0h0.1M6.0,40.0h0.1"; dots != want {
		t.Errorf("seriesPath's dots = %q, want %q", dots, want)
	}
	for name, page := range layoutPages(t) {
		doc := parseHTML(t, page)
		for _, p := range doc.all("path.line") {
			if d := p.attr["d"]; !strings.ContainsAny(d, "Lh") {
				t.Errorf("%s: path.%s %q draws nothing", name, p.attr["class"], d)
			}
		}
		for _, svg := range doc.all("svg.series") {
			if len(svg.all("path.line")) == 0 {
				t.Errorf("%s: svg.series of %s without a line or a dot", name, svg.attr["data-metric"])
			}
		}
	}
}
