// Package action runs what the user asked for when a threshold is crossed
// (--on-threshold: an SLO violated in watch, a stop threshold in timerlat)
// or when the run ends (--on-end), with rtla's syntax and order
// (tools/tracing/rtla/src/actions.c, Linux 6.17): save the trace, signal a
// process, run a shell command, then stop or, with continue, go on.
package action

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/target"
)

// Kind is what an action does.
type Kind int

const (
	Trace    Kind = iota // save the event's trace to a file
	Signal               // send a signal to a process
	Shell                // run a command with sh -c
	Continue             // keep going after a threshold (default: stop)
)

// Action is one parsed --on-threshold or --on-end value.
type Action struct {
	Kind    Kind
	File    string      // Trace: "" means the front end's default file
	Signal  unix.Signal // Signal
	PID     int         // Signal: the target; 0 with Parent
	Parent  bool        // Signal: rtscope's parent process (pid=parent)
	Command string      // Shell
}

// Usage is the help text of the action syntax, shared by the front ends.
const Usage = `Actions (--on-threshold, --on-end; repeatable, run in the order given):
  trace[,file=FILE]          save the trace of the event (default file: see the command)
  signal,num=SIG,pid=PID     send signal SIG (number or name) to PID, or pid=parent
  shell,command=CMD          run CMD with sh -c; its output goes to stderr; it sees
                             RTSCOPE_EVENT, RTSCOPE_VERDICT, RTSCOPE_JSON and more
                             (all listed in docs/actions.md)
  continue                   --on-threshold only: keep going (default: stop)
`

// MaxPID is the largest process id there can be: the kernel's
// PID_MAX_LIMIT (include/linux/threads.h, 64-bit).
const MaxPID = 1 << 22

// Parse reads one action, e.g. "signal,num=USR1,pid=parent".
func Parse(spec string) (Action, error) {
	kind, rest, _ := strings.Cut(spec, ",")
	switch kind {
	case "trace":
		a := Action{Kind: Trace}
		if rest == "" {
			return a, nil
		}
		f, ok := strings.CutPrefix(rest, "file=")
		if !ok || f == "" {
			return a, fmt.Errorf("action %q: trace takes only file=FILE", spec)
		}
		a.File = f
		return a, nil
	case "signal":
		a := Action{Kind: Signal}
		var haveNum, havePID bool
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			// "pid=1,pid=parent" would leave two targets.
			if (k == "num" && haveNum) || (k == "pid" && havePID) {
				return a, fmt.Errorf("action %q: %s is given twice", spec, k)
			}
			switch k {
			case "num":
				sig, err := parseSignal(v)
				if err != nil {
					return a, fmt.Errorf("action %q: %w", spec, err)
				}
				a.Signal, haveNum = sig, true
			case "pid":
				if v == "parent" {
					a.Parent, havePID = true, true
					continue
				}
				// kill(2) takes a 32-bit pid_t, and pids end at
				// PID_MAX_LIMIT: pid=4294967295 reached the kernel as -1,
				// which signals every process there is.
				pid, err := strconv.ParseInt(v, 10, 32)
				if err != nil || pid <= 0 || pid > MaxPID {
					return a, fmt.Errorf("action %q: pid %q is not a process id (1 to %d) or parent", spec, v, MaxPID)
				}
				a.PID, havePID = int(pid), true
			default:
				return a, fmt.Errorf("action %q: signal takes num=SIG and pid=PID|parent, not %q", spec, kv)
			}
		}
		if !haveNum || !havePID {
			return a, fmt.Errorf("action %q: signal needs both num=SIG and pid=PID|parent", spec)
		}
		return a, nil
	case "shell":
		// The command is the rest, commas and all.
		c, ok := strings.CutPrefix(rest, "command=")
		if !ok || strings.TrimSpace(c) == "" {
			return Action{}, fmt.Errorf("action %q: want shell,command=CMD", spec)
		}
		return Action{Kind: Shell, Command: c}, nil
	case "continue":
		if rest != "" {
			return Action{}, fmt.Errorf("action %q: continue takes no argument", spec)
		}
		return Action{Kind: Continue}, nil
	}
	return Action{}, fmt.Errorf("action %q: unknown; want trace[,file=FILE], signal,num=SIG,pid=PID|parent, shell,command=CMD or continue", spec)
}

func parseSignal(v string) (unix.Signal, error) {
	if n, err := strconv.Atoi(v); err == nil {
		if n <= 0 || n > 64 {
			return 0, fmt.Errorf("signal %d out of range 1-64", n)
		}
		return unix.Signal(n), nil
	}
	name := strings.ToUpper(v)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if s := unix.SignalNum(name); s != 0 {
		return s, nil
	}
	return 0, fmt.Errorf("unknown signal %q", v)
}

// List is the actions of one trigger, in order. The zero List does nothing
// and stops at a threshold.
type List []Action

// ParseList parses the values of one repeated flag; end: --on-end, where
// continue means nothing.
func ParseList(flag string, specs []string, end bool) (List, error) {
	var l List
	for _, s := range specs {
		a, err := Parse(s)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", flag, err)
		}
		if end && a.Kind == Continue {
			return nil, fmt.Errorf("--%s: continue applies to --on-threshold only", flag)
		}
		l = append(l, a)
	}
	return l, nil
}

// Continue tells whether the run goes on after these actions.
func (l List) Continue() bool {
	for _, a := range l {
		if a.Kind == Continue {
			return true
		}
	}
	return false
}

// Empty tells whether there is anything to run.
func (l List) Empty() bool {
	for _, a := range l {
		if a.Kind != Continue {
			return false
		}
	}
	return true
}

// Event is what actions act on: the front end says how to save its trace
// and its JSON document, and what the shell commands see.
type Event struct {
	Name        string // "threshold" or "end": RTSCOPE_EVENT
	Verdict     string // RTSCOPE_VERDICT
	DefaultFile string // where trace saves without file=
	// SaveTrace writes the event's trace to path (trace action).
	SaveTrace func(path string) error
	// JSONPath, when set, is an existing JSON document of the event (e.g.
	// --json of an --on-end); otherwise WriteJSON writes one to a temporary
	// file for the shell commands, removed once they are done.
	JSONPath  string
	WriteJSON func(path string) error
	Env       map[string]string // more RTSCOPE_* variables
}

// Run carries out the actions in order; an action that fails is reported
// on log and the next one still runs. It returns the errors.
func (l List) Run(ev Event, log io.Writer) []error {
	var errs []error
	fail := func(err error) {
		errs = append(errs, err)
		fmt.Fprintf(log, "rtscope: on-%s action: %v\n", ev.Name, err)
	}
	jsonPath, cleanup := ev.JSONPath, func() {}
	defer func() { cleanup() }()
	for _, a := range l {
		switch a.Kind {
		case Trace:
			path := a.File
			if path == "" {
				path = ev.DefaultFile
			}
			if ev.SaveTrace == nil {
				fail(errors.New("trace: this event has no trace"))
				continue
			}
			if err := ev.SaveTrace(path); err != nil {
				fail(fmt.Errorf("trace: saving %s: %w", path, err))
				continue
			}
			fmt.Fprintf(log, "rtscope: on-%s: trace saved to %s\n", ev.Name, path)
		case Signal:
			pid := a.PID
			if a.Parent {
				pid = os.Getppid()
			}
			if err := unix.Kill(pid, a.Signal); err != nil {
				fail(fmt.Errorf("signal %s to %d: %w", unix.SignalName(a.Signal), pid, err))
				continue
			}
			fmt.Fprintf(log, "rtscope: on-%s: sent %s to %d\n", ev.Name, unix.SignalName(a.Signal), pid)
		case Shell:
			if jsonPath == "" && ev.WriteJSON != nil {
				p, rm, err := tempJSON(ev.WriteJSON)
				if err != nil {
					fail(fmt.Errorf("shell: writing the JSON document: %w", err))
				} else {
					jsonPath, cleanup = p, rm
				}
			}
			if err := runShell(a.Command, ev, jsonPath, log); err != nil {
				fail(fmt.Errorf("shell %q: %w", a.Command, err))
			}
		}
	}
	return errs
}

func tempJSON(write func(string) error) (string, func(), error) {
	f, err := os.CreateTemp("", "rtscope-event-*.json")
	if err != nil {
		return "", nil, err
	}
	p := f.Name()
	f.Close() //nolint:errcheck // on an error path: the error returned says more
	if err := write(p); err != nil {
		os.Remove(p) //nolint:errcheck // best effort: a temporary file
		return "", nil, err
	}
	return p, func() { os.Remove(p) }, nil //nolint:errcheck // best effort: a temporary file
}

// runShell runs cmd with sh -c and waits for it: its output goes to log
// (stderr), so that stdout stays the report's (--json -).
func runShell(cmd string, ev Event, jsonPath string, log io.Writer) error {
	c := exec.Command("/bin/sh", "-c", cmd)
	c.Stdout, c.Stderr = log, log
	// The user's environment (not rtscope's GODEBUG, main.go) and the
	// variables of docs/actions.md.
	c.Env = append(target.UserEnv(os.Environ()), "RTSCOPE_EVENT="+ev.Name, "RTSCOPE_VERDICT="+ev.Verdict, "RTSCOPE_JSON="+jsonPath)
	for k, v := range ev.Env {
		c.Env = append(c.Env, k+"="+v)
	}
	return c.Run()
}
