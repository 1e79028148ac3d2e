package serve

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
)

// window returns a get func for a window of n events.
func window(n int) func() (*trace.Trace, report.Explanation) {
	return func() (*trace.Trace, report.Explanation) {
		return &trace.Trace{Metric: "latency", Value: 1000, Events: make([]trace.Event, n)},
			report.Explanation{Verdict: "interference by hog/7", Cause: "interference", Culprit: "hog/7"}
	}
}

func archiveFiles(t *testing.T, dir string) (n int, total int64) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file %s left behind", e.Name())
			continue
		}
		fi, _ := e.Info()
		n++
		total += fi.Size()
	}
	return n, total
}

// The archive keeps a target's new worst cases only (not every task's
// maximum), one violation window per target and metric per gap, and stays
// within its cap by removing the oldest windows; a window over the cap on
// its own is dropped, counted. Files appear whole (written aside and
// renamed), and a reopened archive indexes them.
func TestArchiveBoundAndRotation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "arch")
	const maxBytes = 40_000
	a, err := OpenArchive(dir, maxBytes, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tk := &report.Task{Comm: "control", TID: 42, PID: 42}
	calls := 0
	counted := func(n int) func() (*trace.Trace, report.Explanation) {
		return func() (*trace.Trace, report.Explanation) { calls++; return window(n)() }
	}
	for i := 1; i <= 60; i++ {
		a.Add(true, tk, metric.Latency, uint64(i*1000), counted(20))
		a.Add(true, tk, metric.Latency, 500, counted(20))   // not a new worst of the target
		a.Add(false, tk, metric.Latency, 7000, counted(20)) // one per hour
		time.Sleep(time.Millisecond)                        // the writer keeps up: no drop by a full queue
	}
	a.Add(true, tk, metric.Cycle, 1, counted(100_000)) // ~3 MB alone: over the cap
	a.Close()
	if calls != 62 {
		t.Errorf("decoded %d windows, want 62 (60 worst, 1 violation, 1 too big)", calls)
	}
	l := a.List()
	n, total := archiveFiles(t, dir)
	if total > maxBytes || l.Bytes != total || len(l.Windows) != n {
		t.Errorf("on disk %d files %d bytes, index %d windows %d bytes, cap %d", n, total, len(l.Windows), l.Bytes, maxBytes)
	}
	if l.Dropped != 1 {
		t.Errorf("dropped %d, want 1 (the window over the cap)", l.Dropped)
	}
	if n < 10 || n >= 61 {
		t.Errorf("%d windows kept: want the cap to have rotated some out, and kept many", n)
	}
	// Newest first, the newest worst is the largest; the oldest went.
	if w := l.Windows[0]; w.Kind != "worst" || w.ValueNs != 60_000 || w.Verdict != "interference by hog/7" || w.Window != nil {
		t.Errorf("newest window %+v", w)
	}
	for _, w := range l.Windows {
		if w.Kind == "worst" && w.ValueNs == 1000 {
			t.Error("the oldest window survived the rotation")
		}
	}
	full, err := a.Get(l.Windows[0].Name)
	if err != nil || full.Window == nil || len(full.Window.Events) != 20 || full.Target != "control" {
		t.Fatalf("Get: %v %+v", err, full)
	}
	if _, err := a.Get("../../etc/passwd"); err == nil {
		t.Error("Get outside the index succeeded")
	}
	// Reopened: the same index, and the worst known, so an equal value is
	// not archived again.
	b, err := OpenArchive(dir, maxBytes, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if lb := b.List(); len(lb.Windows) != n || lb.Bytes != total {
		t.Errorf("reopened: %d windows %d bytes, want %d %d", len(lb.Windows), lb.Bytes, n, total)
	}
	calls = 0
	b.Add(true, tk, metric.Latency, 60_000, counted(1))
	b.Close()
	if calls != 0 {
		t.Error("a restarted archive archived a worst case it already had")
	}
	// A smaller cap on reopening rotates at once.
	c, err := OpenArchive(dir, 5_000, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, total := archiveFiles(t, dir); total > 5_000 {
		t.Errorf("reopened with a 5000-byte cap: %d bytes", total)
	}
}

// The API serves the summaries and one window with its events.
func TestArchiveAPI(t *testing.T) {
	a, err := OpenArchive(t.TempDir(), 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	tk := &report.Task{Comm: "control", TID: 42, PID: 42}
	a.Add(false, tk, metric.Cycle, 3_000_000, window(5))
	a.Close()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: apiHandler(NewControl(Config{}, "", nil), a)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	cl := NewClient(sock)
	var l ArchiveList
	if err := cl.Do("GET", PathWindows, nil, &l); err != nil || len(l.Windows) != 1 {
		t.Fatalf("GET %s: %v %+v", PathWindows, err, l)
	}
	w := l.Windows[0]
	if w.Kind != "violation" || w.Metric != "cycle" || w.Cause != "interference" || w.ValueNs != 3_000_000 || w.Window != nil {
		t.Errorf("summary %+v", w)
	}
	var full ArchivedWindow
	if err := cl.Do("GET", PathWindows+"/"+w.Name, nil, &full); err != nil || full.Window == nil || len(full.Window.Events) != 5 {
		t.Errorf("GET one window: %v %+v", err, full)
	}
	if err := cl.Do("GET", PathWindows+"/nope.json", nil, nil); err == nil || !strings.Contains(err.Error(), "no archived window") {
		t.Errorf("unknown window: %v", err)
	}
	// Without an archive, the API says how to get one.
	srv2 := &http.Server{Handler: apiHandler(NewControl(Config{}, "", nil), nil)}
	sock2 := filepath.Join(t.TempDir(), "s.sock")
	ln2, _ := net.Listen("unix", sock2)
	go func() { _ = srv2.Serve(ln2) }()
	defer srv2.Close()
	if err := NewClient(sock2).Do("GET", PathWindows, nil, nil); err == nil || !strings.Contains(err.Error(), "--archive") {
		t.Errorf("no archive: %v", err)
	}
}
