package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/explain"
	"github.com/rtscope/rtscope/internal/watch"
)

// dashboardQueries returns the PromQL of every panel of the Grafana
// dashboard, its variables replaced as Grafana would for "All" over a
// 1 s scrape.
func dashboardQueries(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../../contrib/grafana/rtscope.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer(`$target`, `.+`, `$job`, `.+`, `$__rate_interval`, `10s`)
	out := map[string][]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out[p.Title] = append(out[p.Title], vars.Replace(tg.Expr))
		}
	}
	return out
}

// promSeries returns how many series the instant query q gives on the
// Prometheus at base (-1: it failed).
func promSeries(base, q string) int {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return -1 // not up yet
	}
	defer func() { _ = resp.Body.Close() }() // decoded whole
	var r struct {
		Status string                 `json:"status"`
		Data   struct{ Result []any } `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		return -1
	}
	return len(r.Data.Result)
}

// startPrometheus runs Debian's prometheus scraping target every second,
// with native histograms on or off, and returns its API's base URL.
func startPrometheus(t *testing.T, bin, target string, native bool) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: rtscope\n    static_configs:\n      - targets: [%q]\n", target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // prometheus listens there next
	args := []string{"--config.file=" + filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr, "--log.level=warn"}
	if native {
		args = append(args, "--enable-feature=native-histograms")
	}
	pc := exec.Command(bin, args...)
	pc.Stdout, pc.Stderr = io.Discard, io.Discard
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Process.Kill(); _ = pc.Wait() }) // killed: its status is ours
	return "http://" + addr
}

// The Grafana dashboard's panels return data from a real Prometheus
// (Debian 12's 2.42) with native histograms off and on. With them on,
// 2.42 stores only the native histogram of a metric that has native
// buckets (scrape_classic_histograms came in 2.45), so the _bucket series
// are gone: each quantile panel falls back to the native histogram with
// "or". A cyclictest loop with a 1 us latency SLO gives every histogram
// panel samples and the violation panels violations; --intrusions 1 gives
// the intrusion panels their counters.
func TestDashboardOnPrometheus(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root: the agent loads the BPF engine (CI runs as root)")
	}
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus is not installed (Makefile DEB_TEST installs it)")
	}
	ct, err := exec.LookPath("cyclictest")
	if err != nil {
		t.Fatal("cyclictest is not installed (Makefile DEB_TEST installs rt-tests)")
	}
	c := NewControl(Config{Targets: []TargetConfig{{Comm: "cyclictest"}}, SLO: []string{"latency=1us"}}, "", nil)
	ready := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	o := Options{Listen: "127.0.0.1:0", Control: c, Watch: watch.Options{Targets: c.Spec(), SLO: c.SLO(), Explain: explain.ForViolation},
		Tick: 250 * time.Millisecond, Log: io.Discard, Ready: func(addr string) { ready <- addr },
		Intrusions: &IntrusionOptions{CPUs: []int{1}}}
	go func() { done <- Run(ctx, o) }()
	var agent string
	select {
	case agent = <-ready:
	case err := <-done:
		t.Fatalf("the agent ended: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the agent never became ready")
	}
	loop := exec.Command(ct, "-q", "-m", "-p", "80", "-i", "2000", "-D", "60")
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = loop.Process.Kill(); _ = loop.Wait() }() // killed: its status is ours
	proms := map[string]string{"classic": startPrometheus(t, prom, agent, false), "native": startPrometheus(t, prom, agent, true)}
	// Only where the kernel counts BPF time, and a violation explained.
	optional := map[string]bool{"rate(rtscope_bpf_run_seconds_total[10s])": true}
	queries := dashboardQueries(t)
	for mode, base := range proms {
		for title, qs := range queries {
			for _, q := range qs {
				n, wait := 0, 30*time.Second
				if optional[q] {
					wait = 0
				}
				for end := time.Now().Add(wait); ; time.Sleep(500 * time.Millisecond) {
					if n = promSeries(base, q); n > 0 || time.Now().After(end) {
						break
					}
				}
				if n <= 0 && !optional[q] {
					t.Errorf("%s histograms: panel %q: no series from %s", mode, title, q)
				}
			}
		}
	}
	// The fallback is what keeps the panels alive: 2.42 with native
	// histograms on stores no classic bucket of these metrics.
	if n := promSeries(proms["native"], "rtscope_latency_seconds_bucket"); n != 0 {
		t.Errorf("native histograms on: %d classic bucket series; the fallback was not tested", n)
	}
	if n := promSeries(proms["classic"], "rtscope_latency_seconds_bucket"); n <= 0 {
		t.Errorf("native histograms off: no classic bucket series")
	}
}
