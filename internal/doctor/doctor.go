// Package doctor runs the checks a real-time engineer makes before trusting
// any latency number: the kernel's preemption model, CPU isolation, IRQ
// affinity, idle states, frequency scaling, RT throttling, memory (THP,
// swap), SMT, timers and watchdogs, the hypervisor and its steal time, the
// clock source, and, for chosen tasks, their policy, memory locking and
// affinity. Every check reads the machine through Env.FS (the root of the
// file system), so fixture trees test it deterministically. Checks are
// data (Check); Run returns them in a fixed order. Nothing here is safe for
// concurrent use on one Env.
package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// Schema names the JSON document (docs/json.md).
const Schema = "rtscope.doctor/v1"

// Status is a check's outcome.
type Status string

// The statuses, from best to worst; Info and Skip never fail a run.
const (
	Pass Status = "pass" // set up for real time
	Info Status = "info" // a fact worth knowing, no judgement
	Skip Status = "skip" // does not apply here (e.g. IRQ affinity with no isolated CPU)
	Warn Status = "warn" // adds latency or jitter; numbers are still meaningful
	Fail Status = "fail" // real-time numbers on this machine will be dominated by it
)

// Check is one result: its Evidence is what was read (and from where), its
// Remedy what to change. Data holds the values a program may want (times
// in ns).
type Check struct {
	Name     string         `json:"name"`
	Status   Status         `json:"status"`
	Evidence string         `json:"evidence"`
	Remedy   string         `json:"remedy,omitempty"`
	Task     *Task          `json:"task,omitempty"`
	Data     map[string]any `json:"data,omitempty"`
}

// Task names the thread a per-task check is about.
type Task struct {
	TID  int    `json:"tid"`
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
}

// Targets are the tasks to check, as rtscope watch names them.
type Targets struct {
	TIDs  []int
	PIDs  []int
	Comms []string
}

// Env is where and how the checks read the machine.
type Env struct {
	// FS is the root of the file system ("proc/cmdline", "sys/...");
	// os.DirFS("/") on a live machine.
	FS fs.FS
	// Sample is how long the hypervisor's steal time is measured (0: not).
	Sample time.Duration
	// Sleep waits for the sample (time.Sleep when nil); tests replace it.
	Sleep func(time.Duration)
	// Targets are the tasks to check (none: system checks only).
	Targets Targets
	// BPF is what rtscope's engine found of the kernel's BPF features
	// (nil: no BPF section).
	BPF *BPF
}

// Summary counts the checks by status.
type Summary struct {
	Pass int `json:"pass"`
	Warn int `json:"warn"`
	Fail int `json:"fail"`
	Info int `json:"info"`
	Skip int `json:"skip"`
}

// Report is the result of a run.
type Report struct {
	Schema     string  `json:"schema"`
	Kernel     string  `json:"kernel"`  // uname -r
	Version    string  `json:"version"` // uname -v
	Started    string  `json:"started"` // RFC 3339, UTC
	SampleNs   int64   `json:"sample_ns"`
	Strict     bool    `json:"strict"` // warnings count as failures for the exit status
	Checks     []Check `json:"checks"`
	Summary    Summary `json:"summary"`
	ExitStatus int     `json:"exit_status"`
	// Isolation is doctor --watch's watch of the isolated CPUs (nil:
	// none); it judges no check.
	Isolation *Isolation `json:"isolation,omitempty"`
}

// Isolation is what doctor --watch saw on the isolated CPUs: the CPUs
// watched and rtscope isolation's report over them (an isolation.Result,
// docs/isolation.md), or the sentence that says why none was watched.
type Isolation struct {
	CPUs   []int  `json:"cpus"`
	Note   string `json:"note,omitempty"`
	Report any    `json:"report,omitempty"`
}

// Exit statuses of rtscope doctor (1 is an error of rtscope's own).
const (
	ExitOK     = 0
	ExitFailed = 2 // a check failed (or, with --strict, warned)
)

// Run makes every system check and, for each target task, the task checks.
// An unknown target (no such pid) is an error.
func Run(env Env) (*Report, error) {
	if env.Sleep == nil {
		env.Sleep = time.Sleep
	}
	m := load(env.FS)
	r := &Report{Schema: Schema, Kernel: m.release, Version: m.version,
		Started: time.Now().UTC().Format(time.RFC3339Nano), SampleNs: env.Sample.Nanoseconds()}
	for _, c := range systemChecks {
		r.Checks = append(r.Checks, c(m, &env))
	}
	if env.BPF != nil {
		r.Checks = append(r.Checks, bpfChecks(env.BPF)...)
	}
	tasks, err := resolve(env.FS, env.Targets)
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		r.Checks = append(r.Checks, taskChecks(m, t)...)
	}
	r.finish(false)
	return r, nil
}

// SetStrict makes warnings count as failures for the exit status.
func (r *Report) SetStrict(strict bool) { r.finish(strict) }

func (r *Report) finish(strict bool) {
	r.Strict = strict
	r.Summary = Summary{}
	for _, c := range r.Checks {
		switch c.Status {
		case Pass:
			r.Summary.Pass++
		case Warn:
			r.Summary.Warn++
		case Fail:
			r.Summary.Fail++
		case Info:
			r.Summary.Info++
		case Skip:
			r.Summary.Skip++
		}
	}
	r.ExitStatus = ExitOK
	if r.Summary.Fail > 0 || (strict && r.Summary.Warn > 0) {
		r.ExitStatus = ExitFailed
	}
}

// Get returns the first check named name (nil: none).
func (r *Report) Get(name string) *Check {
	for i := range r.Checks {
		if r.Checks[i].Name == name {
			return &r.Checks[i]
		}
	}
	return nil
}

// WriteText prints one line per check, status first, then its remedy on
// the next line, and a summary line.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "rtscope doctor: kernel %s (%s)\n", r.Kernel, r.Version)
	for _, c := range r.Checks {
		ev := c.Evidence
		if c.Task != nil {
			ev = fmt.Sprintf("%s/%d: %s", c.Task.Comm, c.Task.TID, ev)
		}
		fmt.Fprintf(&b, "%-4s  %-16s %s\n", strings.ToUpper(string(c.Status)), c.Name, ev)
		if c.Remedy != "" && c.Status != Pass && c.Status != Skip {
			fmt.Fprintf(&b, "      remedy: %s\n", c.Remedy)
		}
	}
	s := r.Summary
	fmt.Fprintf(&b, "summary: %d pass, %d warn, %d fail, %d info, %d skip", s.Pass, s.Warn, s.Fail, s.Info, s.Skip)
	switch {
	case r.ExitStatus == ExitFailed && s.Fail == 0:
		b.WriteString(" (--strict: warnings fail)")
	case r.ExitStatus == ExitFailed:
		b.WriteString(": fix the failed checks before trusting latency numbers")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// EncodeJSON writes the report as JSON (schema rtscope.doctor/v1).
func (r *Report) EncodeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Root is the live machine's file system.
func Root() fs.FS { return os.DirFS("/") }
