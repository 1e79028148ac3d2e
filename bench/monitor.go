package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// monitor is one configuration of the machine: nothing, the floor, rtscope
// with some arguments, or a peer tool.
type monitor struct {
	name   string
	kind   string   // none, floor, rtscope, runqlat, bpftrace
	args   []string // rtscope watch arguments (targets, options)
	expect int      // tracked tasks rtscope must hold before measuring (-1: don't wait)
	json   bool     // ask rtscope for its JSON report (lost counters)
	bin    string   // rtscope binary, when not the one under test
	sub    string   // rtscope command, when not "watch -q"
	progs  int      // programs to wait for, when not rtscope watch's 15
}

// running is a started monitor.
type running struct {
	m     monitor
	p     *proc
	floor *Floor
	objs  *Objects
	json  string
	log   string
	t0    time.Time
	ready time.Duration
	// stopped: from the stop signal to the exit of the process (rtscope:
	// detach, final reports, JSON).
	stopped time.Duration
	b       *bench
}

// settleTime is how long a configuration waits after the previous one
// stopped. Without it, whatever ran right after the floor measured about
// 20 ns a program run more than the same build elsewhere in the order
// (an A/A run of the cost phase, the load's tasks tracked: 219 and 224
// after the floor against 191 first and 197-206 after rtscope; without
// the floor in the run, no build was favoured): the kernel's work after
// the floor's programs are detached overlapped the next measurement.
const settleTime = 2 * time.Second

// settle waits until settleTime has passed since the last monitor stopped.
func (b *bench) settle() {
	if b.lastStop.IsZero() {
		return
	}
	if d := settleTime - time.Since(b.lastStop); d > 0 {
		time.Sleep(d)
	}
}

func (b *bench) startMonitor(m monitor) (*running, error) {
	b.settle()
	r := &running{m: m, t0: time.Now(), b: b}
	switch m.kind {
	case "none":
		r.objs = &Objects{Progs: map[uint32]bool{}, Maps: map[uint32]int{}}
		return r, nil
	case "floor", "clock floor":
		f, err := NewFloor(m.kind == "clock floor")
		if err != nil {
			return nil, err
		}
		r.floor = f
		r.objs = &Objects{Progs: f.IDs, Maps: map[uint32]int{}}
		r.ready = time.Since(r.t0)
		return r, nil
	}
	var argv []string
	progs := 3
	switch m.kind {
	case "rtscope":
		bin := b.rtscope
		if m.bin != "" {
			bin = m.bin
		}
		argv = append([]string{bin, "watch", "-q"}, m.args...)
		if m.sub != "" {
			argv = append([]string{bin, m.sub}, m.args...)
		}
		if m.json {
			r.json = filepath.Join(b.tmp, fmt.Sprintf("watch-%d.json", time.Now().UnixNano()))
			argv = append(argv, "--json", r.json)
		}
		progs = 15
		if m.progs > 0 {
			progs = m.progs
		}
	case "runqlat":
		if b.runqlat == "" {
			return nil, fmt.Errorf("libbpf-tools runqlat is not installed (make bench installs it)")
		}
		argv = []string{b.runqlat}
	case "bpftrace":
		if _, err := exec.LookPath("bpftrace"); err != nil {
			return nil, fmt.Errorf("bpftrace is not installed (make bench installs it)")
		}
		argv = []string{"bpftrace", b.btScript}
	default:
		return nil, fmt.Errorf("unknown monitor kind %q", m.kind)
	}
	r.log = filepath.Join(b.tmp, fmt.Sprintf("%s-%d.log", m.kind, time.Now().UnixNano()))
	out, err := os.Create(r.log)
	if err != nil {
		return nil, err
	}
	defer out.Close() //nolint:errcheck // the child holds its own descriptor
	p, err := start(m.name, out, argv...)
	if err != nil {
		return nil, err
	}
	r.p = p
	// rtscope is ready once attached (BPF links), the peers once loaded.
	o, err := waitPrograms(p, progs, m.expect, m.kind == "rtscope", 60*time.Second)
	if err != nil {
		p.stop(syscall.SIGKILL) //nolint:errcheck // best effort: the process may be gone
		logTail, _ := os.ReadFile(r.log)
		return nil, fmt.Errorf("%w: %s", err, tail(string(logTail), 400))
	}
	r.ready = time.Since(r.t0)
	r.objs = o
	return r, nil
}

// lost is rtscope's JSON "lost" object.
type lost struct {
	Notices         uint64 `json:"notices"`
	TasksNotTracked uint64 `json:"tasks_not_tracked"`
	Stacks          uint64 `json:"stacks"`
	TracesTruncated uint64 `json:"traces_truncated"`
}

func (l lost) total() uint64 { return l.Notices + l.TasksNotTracked + l.Stacks + l.TracesTruncated }

func (l lost) String() string {
	return fmt.Sprintf("notices %d, tasks not tracked %d, stacks %d, traces truncated %d",
		l.Notices, l.TasksNotTracked, l.Stacks, l.TracesTruncated)
}

// stop ends the monitor; for rtscope with a JSON report, returns its lost counters.
func (r *running) stop() (*lost, error) {
	defer func() {
		if r.b != nil {
			r.b.lastStop = time.Now()
		}
	}()
	if r.floor != nil {
		r.floor.Close()
	}
	if r.p == nil {
		return nil, nil
	}
	// Exit statuses after SIGINT differ between tools; a tool that does not
	// stop within a minute is killed and reported.
	t := time.Now()
	err := r.p.stop(syscall.SIGINT)
	r.stopped = time.Since(t)
	if err != nil && strings.Contains(err.Error(), "did not stop") {
		return nil, err
	}
	if r.json == "" {
		if r.m.kind == "rtscope" {
			return summaryLost(r.log), nil
		}
		return nil, nil
	}
	b, err := os.ReadFile(r.json)
	if err != nil {
		return nil, fmt.Errorf("rtscope wrote no JSON report: %w", err)
	}
	var doc struct {
		Lost lost `json:"lost"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	os.Remove(r.json) //nolint:errcheck // best effort: a temporary file
	return &doc.Lost, nil
}

var lostRe = regexp.MustCompile(`lost: (\d+) notices, (\d+) tasks not tracked, (\d+) stacks, (\d+) truncated traces`)

// summaryLost reads the lost counters from the last line of rtscope
// watch's text report (the JSON report can be huge with many tasks).
func summaryLost(log string) *lost {
	b, err := os.ReadFile(log)
	if err != nil {
		return nil
	}
	m := lostRe.FindAllSubmatch(b, -1)
	if len(m) == 0 {
		return nil
	}
	last := m[len(m)-1]
	n := func(i int) uint64 { v, _ := strconv.ParseUint(string(last[i]), 10, 64); return v }
	return &lost{Notices: n(1), TasksNotTracked: n(2), Stacks: n(3), TracesTruncated: n(4)}
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
