package report_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/htmlreport"
	"github.com/rtscope/rtscope/internal/perfetto"
	"github.com/rtscope/rtscope/internal/report"
)

// updating tells whether -update (report_test.go's flag, the same binary)
// asks for the goldens to be rewritten.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// The windows each metric keeps (watch.LiveWindowsPerMetric,
// watch.ExitedWindowsPerMetric), as the summary names them.
const keepLive, keepExited = 16, 16

// TestOutputGoldens renders every recorded report (testdata/fixtures: the
// JSON of real watch runs of the scenarios, recorded with --html, so they
// hold series and histograms), its tasks selected as watch selects them by
// default (Selection), as text, JSON, Perfetto and HTML, and
// compares each with its golden in testdata/golden. A change of output is
// a change of golden, and its commit says why (go test ./internal/report
// -run TestOutputGoldens -update rewrites them).
func TestOutputGoldens(t *testing.T) {
	paths, err := filepath.Glob("testdata/fixtures/*.json.gz")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures in testdata/fixtures (%v)", err)
	}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".json.gz")
		t.Run(name, func(t *testing.T) {
			r := readFixture(t, p)
			// As watch's report selects them (its default: no flag).
			fixtureSelection(r).Select(r, nil)
			var text, js, pb, html bytes.Buffer
			report.WriteFinal(&text, r, report.TextOptions{LiveKeep: keepLive, ExitedKeep: keepExited})
			if err := r.EncodeJSON(&js); err != nil {
				t.Fatal(err)
			}
			if err := perfetto.Write(&pb, perfetto.Windows(r)); err != nil {
				t.Fatal(err)
			}
			if err := htmlreport.Write(&html, r); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".txt", text.Bytes())
			golden(t, name+".json.gz", js.Bytes())
			golden(t, name+".pb.gz", pb.Bytes())
			if htmlGoldens[name] {
				golden(t, name+".html.gz", html.Bytes())
			}
		})
	}
}

// htmlGoldens are the fixtures whose HTML page is frozen (300 KB each
// compressed, so not every one): with and without SLOs and PI, and the
// undirected watch of a Go launcher; IPIs drawn from sender to receiver;
// and busy pollers' noise by cause (oslat).
var htmlGoldens = map[string]bool{"priority-inversion": true, "priority-inversion-pi": true, "rt-hog-slo": true, "healthy-loop": true,
	"ipi-storm": true, "rt-tests-oslat-noise": true}

// readFixture decodes a recorded JSON report (gzip). The fixtures were
// recorded with schema v1, whose health words are gone: each task is
// judged again, as watch judges it before the report is written.
func readFixture(t *testing.T, path string) *report.Report {
	t.Helper()
	b := gunzip(t, path)
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r.Schema = report.Schema
	for _, tk := range r.Tasks {
		report.Judge(tk)
	}
	return &r
}

func gunzip(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

// golden compares got with testdata/golden/name (gzip when the name ends in
// .gz), or rewrites it with -update. On a difference it names the first
// differing line and leaves got beside the test's temporary files.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata/golden", name)
	zipped := strings.HasSuffix(name, ".gz")
	if updating() {
		var b bytes.Buffer
		if zipped {
			z, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
			z.Write(got)
			z.Close()
		} else {
			b.Write(got)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var want []byte
	if zipped {
		want = gunzip(t, path)
	} else {
		var err error
		if want, err = os.ReadFile(path); err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
	}
	if bytes.Equal(got, want) {
		return
	}
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(name, ".gz"))
	_ = os.WriteFile(out, got, 0o644)
	gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w []byte
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if !bytes.Equal(g, w) {
			t.Fatalf("%s differs from its golden at line %d:\n got: %.300s\nwant: %.300s", name, i+1, g, w)
		}
	}
	t.Fatalf("%s differs from its golden", name)
}

// TestOutputGoldensDeterministic renders one fixture twice: a golden can
// only freeze an output that depends on nothing but the report.
func TestOutputGoldensDeterministic(t *testing.T) {
	paths, _ := filepath.Glob("testdata/fixtures/*.json.gz")
	if len(paths) == 0 {
		t.Fatal("no fixtures")
	}
	render := func() []byte {
		r := readFixture(t, paths[0])
		var b bytes.Buffer
		report.WriteFinal(&b, r, report.TextOptions{Traces: true, LiveKeep: keepLive, ExitedKeep: keepExited})
		_ = r.EncodeJSON(&b)
		_ = perfetto.Write(&b, perfetto.Windows(r))
		_ = htmlreport.Write(&b, r)
		return b.Bytes()
	}
	if !bytes.Equal(render(), render()) {
		t.Fatal("the same report rendered twice differs")
	}
}

// knownProblems lists, per fixture, the consistency check's problems
// (report.Check) that these recorded reports still hold: bugs whose fix
// lies outside the report layer (the BPF engine's period and overrun
// counts, the start-up iteration, the analysis' verdict wording), one line
// "fixture: invariant: task metric". TestCheckFixtures fails on a problem
// missing from it (a new bug) and on a line no longer found (a fix landed:
// delete the line). -update rewrites it; the list is to be emptied.
const knownProblems = "testdata/check-known.txt"

// TestCheckFixtures runs the consistency check over every recorded report.
func TestCheckFixtures(t *testing.T) {
	paths, _ := filepath.Glob("testdata/fixtures/*.json.gz")
	if len(paths) == 0 {
		t.Fatal("no fixtures")
	}
	var found []string
	for _, p := range paths {
		r := readFixture(t, p)
		for _, pr := range report.Check(r) {
			found = append(found, fmt.Sprintf("%s: %s: %s %s", strings.TrimSuffix(filepath.Base(p), ".json.gz"),
				pr.Invariant, pr.Task, pr.Metric))
		}
	}
	if updating() {
		head := "# report.Check's problems in the recorded reports whose fix lies outside the report layer\n" +
			"# (report.PendingElsewhere says where); TestCheckFixtures. Delete a line when its fix lands.\n"
		if err := os.WriteFile(knownProblems, []byte(head+strings.Join(found, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(knownProblems)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			known[l] = true
		}
	}
	seen := map[string]bool{}
	for _, f := range found {
		seen[f] = true
		if !known[f] {
			t.Errorf("new inconsistency (a bug; fix it, or list it in %s if its fix is elsewhere): %s", knownProblems, f)
		}
	}
	for k := range known {
		if !seen[k] {
			t.Errorf("listed in %s but no longer found (fixed: delete the line): %s", knownProblems, k)
		}
	}
}
