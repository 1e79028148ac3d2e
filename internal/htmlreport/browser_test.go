package htmlreport

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/report"
)

// browser is the path of a Chromium to load the page in. Without one the
// test fails, so that a machine that should run it is noticed; with
// RTSCOPE_NO_BROWSER=1 it is skipped.
func browser(t *testing.T) string {
	t.Helper()
	if os.Getenv("RTSCOPE_NO_BROWSER") == "1" {
		t.Skip("RTSCOPE_NO_BROWSER=1: the page is not loaded in a browser")
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium or chromium-browser in PATH to load the page: install chromium (make deps-test does), " +
		"or set RTSCOPE_NO_BROWSER=1 to skip this test")
	return ""
}

// headless runs Chromium on the page with extra arguments and returns its
// standard output. Its start can take seconds: the timeout only stops a
// browser that hangs.
func headless(t *testing.T, chromium, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-extensions", "--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, chromium, append(all, "file://"+page)...)
	// Helpers the browser leaves behind must not hold the test on its pipes.
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", chromium, err, stderr.String())
	}
	return out
}

// The page loads in a real browser, its script runs to its end without an
// error, and the DOM the browser built holds every element the report
// must show.
func TestBrowser(t *testing.T) {
	chromium := browser(t)
	r := sampleReport(t)
	page := filepath.Join(t.TempDir(), "report.html")
	if err := WriteFile(page, r); err != nil {
		t.Fatal(err)
	}
	dom := string(headless(t, chromium, page, "--dump-dom"))
	doc := parseDOM(t, dom)
	body := doc.first("body")
	if body == nil {
		t.Fatalf("no body in the DOM dump:\n%.2000s", dom)
	}
	errs := doc.byID("js-errors")
	if errs == nil {
		t.Fatal("no js-errors element in the DOM")
	}
	if e := errs.textContent(); e != "" {
		t.Errorf("the page's script failed: %s", e)
	}
	if body.attr["data-ready"] != "1" {
		t.Errorf("the page's script did not run to its end (body data-ready %q)", body.attr["data-ready"])
	}
	checkPage(t, doc, r)
	if n := len(doc.all("script")); n != 2 {
		t.Errorf("%d scripts in the DOM, want the 2 of the page (a name ran as markup?)", n)
	}

	// RTSCOPE_HTML_SCREENSHOT=FILE.png keeps a picture of the page, to
	// look at while changing its look.
	if shot := os.Getenv("RTSCOPE_HTML_SCREENSHOT"); shot != "" {
		abs, err := filepath.Abs(shot)
		if err != nil {
			t.Fatal(err)
		}
		headless(t, chromium, page, "--screenshot="+abs, "--window-size=1400,3000", "--hide-scrollbars")
		if fi, err := os.Stat(abs); err != nil || fi.Size() == 0 {
			t.Errorf("no screenshot in %s: %v", abs, err)
		}
		if keep := os.Getenv("RTSCOPE_HTML_KEEP"); keep != "" {
			b, _ := os.ReadFile(page)
			os.WriteFile(keep, b, 0o644)
		}
	}
}

// The page as a browser draws it: every text of every chart inside the
// chart's width (a last x label was cut to "1000("), and no legend swatch
// over its text (the over-time chart's "max" and "p99" were inside theirs).
// testdata/layout.js measures them after the page's own script, with every
// section open.
func TestBrowserLayout(t *testing.T) {
	chromium := browser(t)
	probe, err := os.ReadFile(filepath.Join("testdata", "layout.js"))
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]*report.Report{"sample": sampleReport(t)}
	if !testing.Short() {
		pages["healthy-loop"] = recordedReports(t)["healthy-loop"]
	}
	for name, r := range pages {
		page := filepath.Join(t.TempDir(), name+".html")
		html := strings.Replace(render(t, r), "</body>", "<script>"+string(probe)+"</script>\n</body>", 1)
		if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
			t.Fatal(err)
		}
		body := parseDOM(t, string(headless(t, chromium, page, "--dump-dom", "--window-size=1400,2400"))).first("body")
		if body == nil || body.attr["data-layout"] == "" {
			t.Fatalf("%s: the probe left no data-layout on body", name)
		}
		var got struct {
			Texts, Keys int
			Bad         []string
		}
		if err := json.Unmarshal([]byte(body.attr["data-layout"]), &got); err != nil {
			t.Fatalf("%s: data-layout %q: %v", name, body.attr["data-layout"], err)
		}
		if got.Texts == 0 || got.Keys == 0 {
			t.Errorf("%s: measured %d texts and %d swatches, want some of each", name, got.Texts, got.Keys)
		}
		for _, b := range got.Bad {
			t.Errorf("%s: %s", name, b)
		}
		t.Logf("%s: %d texts and %d swatches measured", name, got.Texts, got.Keys)
	}
}
