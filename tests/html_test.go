package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var (
	taskSection = regexp.MustCompile(`<details class="task" id="task-\d+" data-health="(\w+)"`)
	seriesPts   = regexp.MustCompile(`<svg class="series" data-metric="([\w-]+)" data-pts="([^"]*)"`)
	timelines   = regexp.MustCompile(`<svg class="timeline" data-lanes="(\d+)"`)
)

// TestHTMLFromTheCLI: watch --html writes one self-contained page of the
// run, with a section per task of the JSON report, each metric's course
// over time (a point a second), the worst-case windows as timelines; the
// page loads in a browser and its script runs without an error. The
// page's parts are checked one by one in internal/htmlreport.
func TestHTMLFromTheCLI(t *testing.T) {
	hp := filepath.Join(t.TempDir(), "report.html")
	// 3 s of 100 ms sleeps: every second of the run has samples.
	rep, _ := watch(t, "--html", hp, "--slo", "latency=1ns", "--", "sh", "-c", "i=0; while [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done")
	b, err := os.ReadFile(hp)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || strings.Contains(page, "<script src") || strings.Contains(page, "<link") {
		t.Fatalf("not one self-contained page:\n%.500s", page)
	}
	sections := taskSection.FindAllStringSubmatch(page, -1)
	if len(sections) != len(rep.Tasks) || len(rep.Tasks) == 0 {
		t.Errorf("%d task sections for the %d tasks of the JSON report", len(sections), len(rep.Tasks))
	}
	for i, tk := range rep.Tasks {
		if who := html.EscapeString(fmt.Sprintf("%s/%d", tk.Comm, tk.TID)); !strings.Contains(page, who) {
			t.Errorf("task %s not on the page", who)
		}
		if i < len(sections) && tk.Health == "fail" && !strings.Contains(page, `data-health="fail"`) {
			t.Errorf("task %s/%d violated its SLO; no section says so", tk.Comm, tk.TID)
		}
	}
	// The loop's sleeps: one sample of its latency every 100 ms, so its
	// series has a point for each second.
	long := 0
	for _, m := range seriesPts.FindAllStringSubmatch(page, -1) {
		var pts []json.RawMessage
		if err := json.Unmarshal([]byte(html.UnescapeString(m[2])), &pts); err != nil {
			t.Fatalf("series of %s: data-pts %q: %v", m[1], m[2], err)
		}
		if len(pts) >= 2 {
			long++
		}
	}
	if long == 0 {
		t.Errorf("no metric has a course over time of 2 or more points in a 3 s run")
	}
	if len(timelines.FindAllString(page, -1)) == 0 {
		t.Errorf("no worst-case window drawn as a timeline")
	}

	chromium := browserPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+hp)
	cmd.WaitDelay = 5 * time.Second
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s --dump-dom: %v", chromium, err)
	}
	if !strings.Contains(string(dom), `<pre id="js-errors"></pre>`) {
		i := strings.Index(string(dom), `id="js-errors"`)
		t.Errorf("the page's script failed in the browser: %.300s", string(dom[max(i, 0):]))
	}
	if !regexp.MustCompile(`<body[^>]* data-ready="1"`).Match(dom) {
		t.Errorf("the page's script did not run to its end")
	}

	for _, args := range [][]string{
		{"--html", "-", "--json", "-"},
		{"--html", ""},
	} {
		full := append(append([]string{"watch", "-d", "1s"}, args...), "--", "true")
		if out, err := exec.Command(rtscope, full...).CombinedOutput(); err == nil {
			t.Errorf("rtscope %s accepted:\n%s", strings.Join(full, " "), out)
		}
	}
}

// browserPath is a Chromium to load pages in: the test fails without one
// (make deps-test installs it), unless RTSCOPE_NO_BROWSER=1 says to skip.
func browserPath(t *testing.T) string {
	t.Helper()
	if os.Getenv("RTSCOPE_NO_BROWSER") == "1" {
		t.Skip("RTSCOPE_NO_BROWSER=1: the page is not loaded in a browser")
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium in PATH: install it (make deps-test does), or set RTSCOPE_NO_BROWSER=1 to skip")
	return ""
}
