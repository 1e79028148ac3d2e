package serve

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/watch"
)

// scrapeText returns /metrics at url as one value per series line
// ("name{labels}" -> value).
func scrapeText(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }() // read whole below
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape %s: line %q: %v", url, line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// targetSeries returns the series of scraped that carry a target label.
func targetSeries(scraped map[string]float64) []string {
	var out []string
	for k := range scraped {
		if strings.Contains(k, `target="`) {
			out = append(out, k)
		}
	}
	return out
}

// seriesValue returns the sum of the scraped series of metric name whose
// target label is target.
func seriesValue(scraped map[string]float64, name, target string) float64 {
	sum := 0.0
	for k, v := range scraped {
		if strings.HasPrefix(k, name+"{") && strings.Contains(k, `target="`+target+`"`) {
			sum += v
		}
	}
	return sum
}

// An agent started with no target (a package's service enabled at boot,
// its configuration naming none) attaches, serves /metrics with its own
// health, rtscope_targets 0 and no per-target series, tracks the tasks of
// a target added later through its control (rtscope ctl add), including a
// task that was already running, and takes the targets of a reloaded
// configuration.
func TestIdleAgent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root: the agent loads the BPF engine (CI runs as root)")
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfgPath, []byte("targets: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file, err := LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	c := NewControl(Config{}, cfgPath, file)
	ready := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	o := Options{Listen: "127.0.0.1:0", Control: c, Socket: filepath.Join(dir, "serve.sock"),
		Watch: watch.Options{Targets: c.Spec(), SLO: c.SLO()}, Tick: 100 * time.Millisecond, Log: io.Discard,
		Ready: func(addr string) { ready <- addr }}
	go func() { done <- Run(ctx, o) }()
	var url string
	select {
	case addr := <-ready:
		url = "http://" + addr + "/metrics"
	case err := <-done:
		t.Fatalf("the agent with no target ended: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the agent with no target never became ready")
	}
	idle := scrapeText(t, url)
	if idle["rtscope_up"] != 1 || idle["rtscope_targets"] != 0 {
		t.Fatalf("idle agent: rtscope_up %v, rtscope_targets %v; want 1 and 0", idle["rtscope_up"], idle["rtscope_targets"])
	}
	if s := targetSeries(idle); len(s) > 0 {
		t.Fatalf("idle agent exports target series: %v", s)
	}

	// A loop of short sleeps under a name of its own, started before the
	// target is added: its shell wakes at every child's exit.
	bin := filepath.Join(dir, "rtsidle")
	if err := exec.Command("cp", "/bin/bash", bin).Run(); err != nil {
		t.Fatal(err)
	}
	loop := exec.Command(bin, "-c", "for ((i = 0; i < 3000; i++)); do /bin/sleep 0.005; done")
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = loop.Process.Kill(); _ = loop.Wait() }() // killed: its exit status is ours
	if err := c.AddTarget(TargetConfig{Comm: "rtsidle"}); err != nil {
		t.Fatalf("add a target to the idle agent: %v", err)
	}
	var got map[string]float64
	wakeups := 0.0
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end) && wakeups < 20; time.Sleep(200 * time.Millisecond) {
		got = scrapeText(t, url)
		wakeups = seriesValue(got, "rtscope_wakeups_total", "rtsidle")
	}
	if got["rtscope_targets"] != 1 || wakeups < 20 {
		t.Fatalf("after ctl add: rtscope_targets %v, rtsidle's wakeups %v; want 1 and at least 20\ntarget series: %v",
			got["rtscope_targets"], wakeups, targetSeries(got))
	}
	st, err := c.State()
	if err != nil || len(st.Targets) != 1 {
		t.Fatalf("state after ctl add: %+v, %v", st, err)
	}
	// A reloaded configuration (SIGHUP, ctl reload) gives targets too: its
	// own, in place of what ctl added.
	if err := os.WriteFile(cfgPath, []byte("targets:\n  - comm: rtsidle2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Reload(); err != nil {
		t.Fatalf("reload the idle agent's configuration: %v", err)
	}
	if st, err = c.State(); err != nil || len(st.Targets) != 1 || st.Targets[0].Comm != "rtsidle2" {
		t.Fatalf("state after reload: %+v, %v; want the file's target rtsidle2 alone", st, err)
	}
	if got := scrapeText(t, url)["rtscope_targets"]; got != 1 {
		t.Fatalf("after reload: rtscope_targets %v, want 1", got)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the agent stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not stop")
	}
}
