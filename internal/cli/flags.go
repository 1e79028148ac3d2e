package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/rtscope/rtscope/internal/action"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/session"
	"github.com/rtscope/rtscope/internal/slo"
	"github.com/rtscope/rtscope/internal/target"
	"github.com/rtscope/rtscope/internal/watch"
)

// The flags more than one command has are defined here once: their names,
// defaults and checks. Each command adds those it has, one call a flag, in
// the order of its own help. Where commands word a flag's help apart (what
// they do with a target, an SLO's example), the help takes their words.

// targetFlags are the targets named on the command line (watch, serve,
// doctor): --tid, --pid, --comm and --cgroup.
type targetFlags struct {
	tids, pids, comms, cgroups []string
}

// add defines --tid, --pid and --comm. verb is what the command does with a
// target ("watch", "check"); later what --comm's help adds about tasks that
// take the name later ("": nothing).
func (t *targetFlags) add(fs *pflag.FlagSet, verb, later string) {
	fs.StringSliceVarP(&t.tids, "tid", "p", nil, "thread id to "+verb)
	fs.StringSliceVar(&t.pids, "pid", nil, "process id: "+verb+" all its threads")
	fs.StringSliceVar(&t.comms, "comm", nil, "task name to "+verb+" (max 15 characters)"+later)
}

// addCgroup defines --cgroup; below is what its help adds about the
// cgroups below the one named ("": nothing).
func (t *targetFlags) addCgroup(fs *pflag.FlagSet, below string) {
	fs.StringArrayVar(&t.cgroups, "cgroup", nil, "cgroup v2 path or systemd unit name: every task in it"+below+", now and when it enters later (repeatable)")
}

// ids parses --tid and --pid.
func (t *targetFlags) ids() (tids, pids []int, err error) {
	if tids, err = parseIDs("tid", t.tids); err != nil {
		return nil, nil, err
	}
	if pids, err = parseIDs("pid", t.pids); err != nil {
		return nil, nil, err
	}
	return tids, pids, nil
}

// spec checks the targets into a target.Spec (no command): ids that are
// numbers, names the kernel can hold.
func (t *targetFlags) spec() (s target.Spec, err error) {
	if s.TIDs, s.PIDs, err = t.ids(); err != nil {
		return s, err
	}
	for _, c := range t.comms {
		if c == "" || len(c) > 15 {
			return s, fmt.Errorf("--comm %q: a task name has 1 to 15 characters (the kernel's limit)", c)
		}
	}
	s.Comms, s.Cgroups = t.comms, t.cgroups
	return s, nil
}

// empty tells whether no target was named.
func (t *targetFlags) empty() bool {
	return len(t.tids)+len(t.pids)+len(t.comms)+len(t.cgroups) == 0
}

// parseIDs parses the values of --tid or --pid (kind): each exactly a
// number, so that none is silently wrapped or cut.
func parseIDs(kind string, vals []string) ([]int, error) {
	var out []int
	for _, v := range vals {
		var id int
		if _, err := fmt.Sscanf(v, "%d", &id); err != nil || fmt.Sprint(id) != strings.TrimSpace(v) {
			return nil, fmt.Errorf("--%s %q is not a number", kind, v)
		}
		out = append(out, id)
	}
	return out, nil
}

// engineFlags configure the BPF engine and its flight recorder (watch,
// serve). A flag the command does not define stays nil, and its option
// watch's default.
type engineFlags struct {
	kind, btfFile *string
	noTrace       *bool
	traceEvents   *uint32
	traceMax      *int
	stackAfter    *time.Duration
	ipi           *bool
}

// addIPI defines --ipi.
func (e *engineFlags) addIPI(fs *pflag.FlagSet) {
	e.ipi = fs.Bool("ipi", false, "record who sends each IPI (TLB shootdowns, function calls, reschedules), name the sender in windows and "+
		"verdicts and count IPIs per CPU and task (docs/ipi.md; about 0.4-0.6 us of BPF on the sender and 0.4-0.5 us on the receiver per IPI; "+
		"without it an IPI received is still a noise part and a window event, its sender unknown)")
}

// addKind defines --engine.
func (e *engineFlags) addKind(fs *pflag.FlagSet) {
	e.kind = fs.String("engine", engine.EngineAuto, "BPF engine: btf (tp_btf, needs kernel BTF) or classic (classic tracepoints, for kernels without BTF); default: btf when /sys/kernel/btf/vmlinux is readable, else classic")
}

// addBTF defines --btf.
func (e *engineFlags) addBTF(fs *pflag.FlagSet) {
	e.btfFile = fs.String("btf", "", "the running kernel's vmlinux BTF as a FILE (raw, BTFHub style), for the BTF engine where /sys/kernel/btf/vmlinux does not show it; the kernel must have BTF of its own")
}

// addNoTrace defines --no-trace; usage says what the command loses without
// the flight recorder.
func (e *engineFlags) addNoTrace(fs *pflag.FlagSet, usage string) {
	e.noTrace = fs.Bool("no-trace", false, usage)
}

// addTraceEvents defines --trace-events.
func (e *engineFlags) addTraceEvents(fs *pflag.FlagSet) {
	e.traceEvents = fs.Uint32("trace-events", 0, "flight recorder depth per CPU, a power of two (48 bytes an event); 0: 8192 up to 2 CPUs, halved as the CPUs double, at least 2048")
}

// addTraceMax defines --trace-max-events.
func (e *engineFlags) addTraceMax(fs *pflag.FlagSet) {
	e.traceMax = fs.Int("trace-max-events", watch.DefaultTraceMax, "events kept per worst-case window: the task's own across it, the others nearest its end (a sparse window); truncated when the task's own are more")
}

// addStackAfter defines --stack-after.
func (e *engineFlags) addStackAfter(fs *pflag.FlagSet) {
	e.stackAfter = fs.Duration("stack-after", engine.DefaultStackMinWait*time.Nanosecond,
		"take the kernel stack of what keeps a tracked task off its CPU once it has waited this long (the walk delays the task by 1-20 us; 0: always)")
}

// check refuses the values the engine cannot take.
func (e *engineFlags) check() error {
	if e.stackAfter != nil && *e.stackAfter < 0 {
		return fmt.Errorf("--stack-after %v: want a duration >= 0", *e.stackAfter)
	}
	if e.traceEvents != nil && *e.traceEvents != 0 {
		if err := engine.CheckFlightPerCPU(*e.traceEvents); err != nil {
			return fmt.Errorf("--trace-events %w", err)
		}
	}
	if e.traceMax != nil && *e.traceMax < 16 {
		return fmt.Errorf("--trace-max-events %d is too small (at least 16)", *e.traceMax)
	}
	return nil
}

// options sets the engine's options of a watch session.
func (e *engineFlags) options(o *watch.Options) {
	if e.kind != nil {
		o.Engine = *e.kind
	}
	if e.btfFile != nil {
		o.BTFFile = *e.btfFile
	}
	if e.noTrace != nil {
		o.NoTrace = *e.noTrace
	}
	if e.traceEvents != nil {
		o.TraceEvents = *e.traceEvents
	}
	if e.traceMax != nil {
		o.TraceMax = *e.traceMax
	}
	if e.stackAfter != nil {
		o.StackAfter = e.stackAfter
	}
	if e.ipi != nil {
		o.IPI = *e.ipi
	}
}

// outputFlags are the report's files: --json, --perfetto and --html, each
// a FILE or - for stdout.
type outputFlags struct {
	json, perfetto, html string
}

// add defines --json, --perfetto and --html.
func (f *outputFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.json, "json", "", "write the report as JSON to FILE (- for stdout; the text report then goes to stderr)")
	fs.StringVar(&f.perfetto, "perfetto", "", "write every worst-case and violation window as a Perfetto trace to FILE (open it in ui.perfetto.dev)")
	fs.StringVar(&f.html, "html", "", "write the report as one self-contained HTML page to FILE: histograms, each metric over time, worst-case timelines and verdicts")
}

// options checks the files and sets them in o, with the text report on
// stderr when a document is the whole of stdout.
func (f *outputFlags) options(fs *pflag.FlagSet, o *watch.Options) error {
	var toStdout []string
	for _, n := range []string{"json", "perfetto", "html"} {
		switch v := fs.Lookup(n); {
		case v.Changed && v.Value.String() == "":
			return fmt.Errorf("--%s: empty value", n)
		case v.Value.String() == "-":
			toStdout = append(toStdout, "--"+n)
		}
	}
	if len(toStdout) > 1 {
		return fmt.Errorf("%s cannot all write to stdout (-): give all but one a file", strings.Join(toStdout, " and "))
	}
	o.Out = os.Stdout
	if len(toStdout) == 1 {
		o.Out = os.Stderr // the document is the whole of stdout
	}
	o.JSONPath, o.PerfettoPath, o.HTMLPath = f.json, f.perfetto, f.html
	o.Series = f.html != "" // the page draws each metric over time
	return nil
}

// actionFlags are the actions at a threshold and at the end:
// --on-threshold and --on-end (action.Usage).
type actionFlags struct {
	onThreshold, onEnd []string
}

// add defines --on-threshold and --on-end.
func (a *actionFlags) add(fs *pflag.FlagSet) {
	fs.StringArrayVar(&a.onThreshold, "on-threshold", nil, "action when an SLO is violated (repeatable, see Actions below); without continue, watching stops")
	fs.StringArrayVar(&a.onEnd, "on-end", nil, "action when watching ends, after the report (repeatable, see Actions below)")
}

// lists parses the actions.
func (a *actionFlags) lists() (onThreshold, onEnd action.List, err error) {
	if onThreshold, err = action.ParseList("on-threshold", a.onThreshold, false); err != nil {
		return nil, nil, err
	}
	if onEnd, err = action.ParseList("on-end", a.onEnd, true); err != nil {
		return nil, nil, err
	}
	return onThreshold, onEnd, nil
}

// addSLO defines --slo into slos; example shows its syntax.
func addSLO(fs *pflag.FlagSet, slos *[]string, example string) {
	fs.StringArrayVar(slos, "slo", nil, "SLO bound [ID:]METRIC=TIME, e.g. "+example+" (repeatable)")
}

// parseSLOs parses the values of --slo.
func parseSLOs(specs []string) ([]slo.Bound, error) {
	var bounds []slo.Bound
	for _, s := range specs {
		b, err := slo.Parse(s)
		if err != nil {
			return nil, err
		}
		bounds = append(bounds, b)
	}
	return bounds, nil
}

// addVerbose defines -v/--verbose (watch, demo).
func addVerbose(fs *pflag.FlagSet, v *bool) {
	fs.BoolVarP(v, "verbose", "v", false, "print every task's full tables and each metric's verdict with its evidence")
}

// addHousekeeping defines -H/--housekeeping.
func addHousekeeping(fs *pflag.FlagSet, house *string) {
	fs.StringVarP(house, "housekeeping", "H", "", "run rtscope's own threads on these CPUs (e.g. 0); default: chosen away from the watched tasks' CPUs and followed; none: unpinned")
}

// housekeeping sets where rtscope's own threads run: the CPUs of -H
// (checked against the online CPUs when the session starts,
// session.Spec.Check), none, or chosen and followed (without -H).
func housekeeping(fs *pflag.FlagSet, house string, o *watch.Options) (err error) {
	if fs.Changed("housekeeping") && house == "" {
		return errors.New("--housekeeping: empty value")
	}
	o.AutoHousekeeping = house == ""
	if house != "" && house != "none" {
		o.Housekeeping, err = session.ParseCPUs("-H", house)
	}
	return err
}
