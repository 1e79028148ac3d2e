package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startServe starts `rtscope serve ARGS... --listen 127.0.0.1:0` and returns
// the process and its /metrics URL once it says it is tracking.
func startServe(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	// A socket of its own: the default one is a running agent's.
	return startServeSocket(t, filepath.Join(t.TempDir(), "serve.sock"), args...)
}

// startServeSocket is startServe with the control socket at sock.
func startServeSocket(t *testing.T, sock string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(rtscope, append([]string{"serve", "--listen", "127.0.0.1:0", "--socket", sock}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	re := regexp.MustCompile(`metrics on (http://\S+/metrics)`)
	var text strings.Builder
	for sc.Scan() {
		text.WriteString(sc.Text() + "\n")
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, stderr)
			return cmd, m[1]
		}
	}
	t.Fatalf("rtscope serve never said it was tracking:\n%s", text.String())
	return nil, ""
}

// scrape returns the value of every sample of the text exposition at u whose
// series (name and labels, as printed) starts with prefix.
func scrape(t *testing.T, u, series string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("scrape %s: %v", u, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	want := seriesOf(series)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") || seriesOf(line[:i]) != want {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		return v, err == nil
	}
	return 0, false
}

var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"`)

// seriesOf is a series in one form: its name and its non-empty labels
// sorted (Prometheus: an empty label is no label), whatever their order.
func seriesOf(s string) string {
	name, labels, _ := strings.Cut(s, "{")
	var ls []string
	for _, m := range labelPair.FindAllStringSubmatch(labels, -1) {
		if m[2] != "" {
			ls = append(ls, m[1]+"="+m[2])
		}
	}
	sort.Strings(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

// promQuery runs an instant query against Prometheus' HTTP API and returns
// the value of its single sample (false: no sample).
func promQuery(t *testing.T, base, q string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, false // not up yet
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" || len(r.Data.Result) != 1 {
		return 0, false
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// rtscope serve beside rtscope watch on the same workload (a 2 ms loop named
// control, run twice: the agent must survive its exit and pick the next one
// up), scraped by Debian's Prometheus server every second: the series exist
// in Prometheus, their counts are the agent's own, and they agree with
// watch's JSON report over the ~1500 cycles.
func TestServePrometheus(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus is not installed (Makefile DEB_TEST installs it)")
	}
	agent, metricsURL := startServe(t, "--comm", "control", "--slo", "cycle=800us")
	u, _ := url.Parse(metricsURL)

	// Prometheus, scraping the agent every second.
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: rtscope\n    static_configs:\n      - targets: [%q]\n", u.Host)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	promAddr := freePort(t)
	var promLog strings.Builder
	pc := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	pc.Stdout, pc.Stderr = &promLog, &promLog
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Process.Kill(); pc.Wait() })

	// watch on the same workload, for its JSON report.
	watchJSON := filepath.Join(dir, "watch.json")
	wargs := []string{"watch", "-q", "--json", watchJSON, "--comm", "control", "--slo", "cycle=800us", "-d", "60s"}
	w := exec.Command(rtscope, wargs...)
	wErr, _ := w.StderrPipe()
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(wErr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "attached and tracking") {
			break
		}
	}
	go io.Copy(io.Discard, wErr)

	// The workload, twice: a 2 ms loop with 1 ms of work, then again.
	for i := 0; i < 2; i++ {
		out, err := exec.Command(rtscope, "scenario", "run", "healthy-loop", "--work", "1ms", "--duration", "1500ms", "-q").CombinedOutput()
		if err != nil {
			t.Fatalf("scenario: %v\n%s", err, out)
		}
	}
	time.Sleep(300 * time.Millisecond) // both readers see the last exit
	w.Process.Signal(syscall.SIGINT)
	werr := w.Wait()
	rep := readReport(t, wargs, watchJSON, werr, "")
	var wantCycles, wantViol uint64
	for _, tk := range rep.Tasks {
		if tk.Comm == "control" {
			m := tk.metric(t, "cycle")
			wantCycles += m.Count
			if m.Violations != nil {
				wantViol += *m.Violations
			}
		}
	}
	if wantCycles < 1000 {
		t.Fatalf("watch saw only %d cycles of two 1.5 s runs of a 2 ms loop", wantCycles)
	}

	// The agent's own counts, after both runs: still up, both tasks exited.
	deadline := time.Now().Add(5 * time.Second)
	var got, exited float64
	for time.Now().Before(deadline) {
		got, _ = scrape(t, metricsURL, `rtscope_cycle_seconds_count{target="control"}`)
		exited, _ = scrape(t, metricsURL, `rtscope_tasks_exited_total{target="control"}`)
		if exited >= 2 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if exited < 2 {
		t.Fatalf("the agent saw %v control tasks exit, want 2 (two runs)", exited)
	}
	// Both engines count every cycle of the same tasks: they agree within
	// 1% (a cycle at the edge of tracking may fall to one only).
	if d := math.Abs(got - float64(wantCycles)); d > 0.01*float64(wantCycles)+2 {
		t.Errorf("serve counted %v cycles, watch %d", got, wantCycles)
	}
	t.Logf("cycles: serve %v, watch %d; violations: watch %d", got, wantCycles, wantViol)
	inf, _ := scrape(t, metricsURL, `rtscope_cycle_seconds_bucket{target="control",le="+Inf"}`)
	if inf != got {
		t.Errorf("+Inf bucket %v != count %v", inf, got)
	}
	viol, _ := scrape(t, metricsURL, `rtscope_slo_violations_total{metric="cycle",target="control"}`)
	if d := math.Abs(viol - float64(wantViol)); d > 0.05*float64(wantViol)+5 {
		t.Errorf("serve counted %v cycle violations, watch %d", viol, wantViol)
	}

	// Prometheus has scraped the same values: poll until the latest scrape
	// carries the final count, or say what was missing.
	base := "http://" + promAddr
	want := map[string]float64{
		`rtscope_cycle_seconds_count{target="control"}`:                   got,
		`rtscope_cycle_seconds_bucket{target="control",le="+Inf"}`:        got,
		`rtscope_slo_violations_total{target="control",metric="cycle"}`:   viol,
		`rtscope_tasks_exited_total{target="control"}`:                    2,
		`rtscope_lost_total{kind="notices"}`:                              -1, // exists
		`process_cpu_seconds_total{job="rtscope"}`:                        -1,
		`rtscope_bpf_memory_bytes`:                                        -1,
		`sum(rtscope_latency_seconds_count{target="control"})`:            -1,
		`sum(rtscope_slo_violations_explained_total{target="control"})`:   -1,
		`histogram_quantile(0.5, rate(rtscope_cycle_seconds_bucket[1m]))`: -1,
	}
	var missing map[string]string
	deadline = time.Now().Add(20 * time.Second)
	for {
		missing = map[string]string{}
		for q, v := range want {
			pv, ok := promQuery(t, base, q)
			switch {
			case !ok:
				missing[q] = "no sample"
			case v >= 0 && pv != v:
				missing[q] = fmt.Sprintf("%v, want %v", pv, v)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for q, why := range missing {
		t.Errorf("Prometheus query %s: %s", q, why)
	}
	if len(missing) > 0 {
		t.Logf("prometheus log:\n%s", promLog.String())
	}
	// SIGTERM stops the agent cleanly.
	agent.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- agent.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("serve did not stop within 5 s of SIGTERM")
	}
}
