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
	"github.com/rtscope/rtscope/internal/explain"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/session"
	"github.com/rtscope/rtscope/internal/slo"
	"github.com/rtscope/rtscope/internal/target"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
	"github.com/rtscope/rtscope/internal/watch"
)

func init() {
	Register(&Command{Name: "watch", Summary: "measure chosen tasks: latency, timer release, response, cycle, IRQ handler", Run: runWatch})
}

const watchUsage = `Usage: rtscope watch [flags] [-- COMMAND ARGS...]

Watch threads, processes, task names, or a command launched and tracked from
its first instruction (with its whole process tree). Per thread: wakeup
latency, timer release latency (IRQ / thread / user parts), response time,
control-loop cycle time, period and jitter, threaded-IRQ handler time; SLO
violations; the worst case of each metric with the events of its window.
All times are printed in microseconds.

Targets (repeatable, combinable):
  -p, --tid TID          one thread
      --pid PID          every thread of a process, including later ones
      --comm NAME        tasks with this name, including later ones
  -- COMMAND ARGS...     launch COMMAND and track its process tree

Watching ends after --duration, on Ctrl-C/SIGTERM, or when every target has
exited (never by itself with --comm).

Exit status (the first that applies): 1 on an error of rtscope's own; the
launched COMMAND's status when it failed by itself (128+N if signal N killed
it); 2 when an SLO was violated; else 0.

Flags:
`

const watchActionsUsage = `In watch, the threshold is an SLO violated: the first one noticed in a
reader period (10 ms) fires the actions, one run at a time. trace saves the
violation's JSON document (default rtscope_threshold.json: task, metric,
value, SLO, verdict, window); at --on-end, the report (default
rtscope_report.json). Shell commands see RTSCOPE_JSON (that document, or
--json's file at the end), RTSCOPE_VERDICT, RTSCOPE_TID, RTSCOPE_COMM,
RTSCOPE_METRIC, RTSCOPE_VALUE_NS, RTSCOPE_THRESHOLD_NS, RTSCOPE_CAUSE; at the
end RTSCOPE_STATUS (the exit status), RTSCOPE_VIOLATIONS. Example:
  rtscope watch --pid $(pidof ctl) --slo cycle=1ms \
    --on-threshold trace,file=miss.json --on-threshold signal,num=USR1,pid=parent
`

func runWatch(args []string) int {
	fs := pflag.NewFlagSet("watch", pflag.ContinueOnError)
	fs.SortFlags = false
	tids := fs.StringSliceP("tid", "p", nil, "thread id to watch")
	pids := fs.StringSlice("pid", nil, "process id: watch all its threads")
	comms := fs.StringSlice("comm", nil, "task name to watch (max 15 characters)")
	cgroups := fs.StringArray("cgroup", nil, "cgroup v2 path or systemd unit name: every task in it, now and when it enters later (repeatable)")
	dur := new(time.Duration)
	fs.VarP(units.DurationFlag{D: dur}, "duration", "d", "stop after this long: `time`[s|m|h|d], seconds without a unit (e.g. 30s, 5m, 1h30m); default: until Ctrl-C or targets exit")
	interval := fs.DurationP("interval", "i", time.Second, "live table period")
	quiet := fs.BoolP("quiet", "q", false, "no live table, only the final report")
	slos := fs.StringArray("slo", nil, "SLO bound [ID:]METRIC=TIME, e.g. latency=50us or 1234:cycle=2ms (repeatable)")
	jsonPath := fs.String("json", "", "write the report as JSON to FILE (- for stdout; the text report then goes to stderr)")
	perfettoPath := fs.String("perfetto", "", "write every worst-case and violation window as a Perfetto trace to FILE (open it in ui.perfetto.dev)")
	htmlPath := fs.String("html", "", "write the report as one self-contained HTML page to FILE: histograms, each metric over time, worst-case timelines and verdicts")
	noTrace := fs.Bool("no-trace", false, "do not record worst-case traces (flight recorder off)")
	traces := fs.Bool("traces", false, "print the event listing of each worst case in the text report")
	engineKind := fs.String("engine", engine.EngineAuto, "BPF engine: btf (tp_btf, needs kernel BTF) or classic (classic tracepoints, for kernels without BTF); default: btf when /sys/kernel/btf/vmlinux is readable, else classic")
	btfFile := fs.String("btf", "", "the running kernel's vmlinux BTF as a FILE (raw, BTFHub style), for the BTF engine where /sys/kernel/btf/vmlinux does not show it; the kernel must have BTF of its own")
	traceEvents := fs.Uint32("trace-events", 0, "flight recorder depth per CPU, a power of two (48 bytes an event); 0: 8192 up to 2 CPUs, halved as the CPUs double, at least 2048")
	traceMax := fs.Int("trace-max-events", watch.DefaultTraceMax, "events kept per worst-case window: the task's own across it, the others nearest its end (a sparse window); truncated when the task's own are more")
	stackAfter := fs.Duration("stack-after", engine.DefaultStackMinWait*time.Nanosecond,
		"take the kernel stack of what keeps a tracked task off its CPU once it has waited this long (the walk delays the task by 1-20 us; 0: always)")
	warmUp := fs.Duration("warm-up", 0, "leave every sample of each task's first `time` after it is tracked out of its metrics, as its start-up (0: none); default: detected, the iterations before a periodic task's period settles")
	show := fs.StringSlice("show", nil, "report only tasks with these names")
	userSpec := fs.String("user", "", "run COMMAND as USER[:GROUP] (name or number); default: the user who ran sudo (SUDO_UID), else root")
	house := fs.StringP("housekeeping", "H", "", "run rtscope's own threads on these CPUs (e.g. 0); default: chosen away from the watched tasks' CPUs and followed; none: unpinned")
	onThreshold := fs.StringArray("on-threshold", nil, "action when an SLO is violated (repeatable, see Actions below); without continue, watching stops")
	onEnd := fs.StringArray("on-end", nil, "action when watching ends, after the report (repeatable, see Actions below)")
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, watchUsage, fs.FlagUsages(), "\nMetrics: ", strings.Join(metric.Names(), ", "), "\n\n",
			action.Usage, "\n", watchActionsUsage)
	}
	// Everything after "--" is the command.
	var command []string
	dashDash := false
	for i, a := range args {
		if a == "--" {
			command, args, dashDash = args[i+1:], args[:i], true
			break
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return Fail("watch", err)
	}
	if fs.NArg() > 0 {
		return Fail("watch", fmt.Errorf("unexpected argument %q (put a command after --)", fs.Arg(0)))
	}
	if *stackAfter < 0 {
		return Fail("watch", fmt.Errorf("--stack-after %v: want a duration >= 0", *stackAfter))
	}
	o := watch.Options{Duration: *dur, Interval: *interval, Quiet: *quiet, JSONPath: *jsonPath,
		NoTrace: *noTrace, Traces: *traces, TraceEvents: *traceEvents, TraceMax: *traceMax, StackAfter: stackAfter,
		Show: *show, Out: os.Stdout, Engine: *engineKind, BTFFile: *btfFile}
	o.PerfettoPath, o.HTMLPath = *perfettoPath, *htmlPath
	if fs.Changed("warm-up") {
		if *warmUp < 0 {
			return Fail("watch", fmt.Errorf("--warm-up %v: want a duration >= 0", *warmUp))
		}
		o.WarmUp = warmUp
	}
	o.Series = *htmlPath != "" // the page draws each metric over time
	var toStdout []string
	for _, f := range []string{"json", "perfetto", "html"} {
		if fs.Lookup(f).Value.String() == "-" {
			toStdout = append(toStdout, "--"+f)
		}
	}
	switch {
	case len(toStdout) > 1:
		return Fail("watch", fmt.Errorf("%s cannot all write to stdout (-): give all but one a file", strings.Join(toStdout, " and ")))
	case len(toStdout) == 1:
		o.Out = os.Stderr // the document is the whole of stdout
	}
	var err error
	if o.Targets.TIDs, err = parseIDs("tid", *tids); err != nil {
		return Fail("watch", err)
	}
	if o.Targets.PIDs, err = parseIDs("pid", *pids); err != nil {
		return Fail("watch", err)
	}
	o.Targets.Comms = *comms
	o.Targets.Cgroups = *cgroups
	o.Targets.Command = command
	switch {
	case fs.Changed("user") && len(command) == 0:
		return Fail("watch", errors.New("--user applies to a command launched after --"))
	case fs.Changed("user"):
		if o.Targets.User, err = target.ParseUser(*userSpec); err != nil {
			return Fail("watch", err)
		}
	case len(command) > 0:
		if o.Targets.User, err = target.DefaultUser(); err != nil {
			return Fail("watch", err)
		}
	}
	if dashDash && len(command) == 0 {
		return Fail("watch", errors.New("no command after --"))
	}
	for _, f := range []string{"json", "perfetto", "html", "housekeeping"} {
		if fl := fs.Lookup(f); fl.Changed && fl.Value.String() == "" {
			return Fail("watch", fmt.Errorf("--%s: empty value", f))
		}
	}
	for _, c := range *comms {
		if c == "" || len(c) > 15 {
			return Fail("watch", fmt.Errorf("--comm %q: a task name has 1 to 15 characters (the kernel's limit)", c))
		}
	}
	if *interval <= 0 {
		return Fail("watch", errors.New("--interval must be positive"))
	}
	if *noTrace && *perfettoPath != "" {
		return Fail("watch", errors.New("--perfetto draws the recorded windows: it needs the flight recorder (drop --no-trace)"))
	}
	if *noTrace && *traces {
		return Fail("watch", errors.New("--traces and --no-trace conflict"))
	}
	if err := engine.CheckFlightPerCPU(*traceEvents); *traceEvents != 0 && err != nil {
		return Fail("watch", fmt.Errorf("--trace-events %w", err))
	}
	o.AutoHousekeeping = *house == ""
	if *house != "" && *house != "none" {
		// Checked against the online CPUs when the session starts (session.Spec.Check).
		if o.Housekeeping, err = session.ParseCPUs("-H", *house); err != nil {
			return Fail("watch", err)
		}
	}
	if *traceMax < 16 {
		return Fail("watch", fmt.Errorf("--trace-max-events %d is too small (at least 16)", *traceMax))
	}
	var bounds []slo.Bound
	for _, s := range *slos {
		b, err := slo.Parse(s)
		if err != nil {
			return Fail("watch", err)
		}
		bounds = append(bounds, b)
	}
	o.SLO = slo.Build(bounds)
	if o.OnThreshold, err = action.ParseList("on-threshold", *onThreshold, false); err != nil {
		return Fail("watch", err)
	}
	if o.OnEnd, err = action.ParseList("on-end", *onEnd, true); err != nil {
		return Fail("watch", err)
	}
	if len(o.OnThreshold) > 0 && len(bounds) == 0 {
		return Fail("watch", errors.New("--on-threshold acts on SLO violations: give an SLO with --slo"))
	}
	o.Analyze = analyzer()
	o.Explain = explain.ForViolation
	o.Ready = func() {
		fmt.Fprintln(os.Stderr, "rtscope watch: attached and tracking; Ctrl-C to stop")
	}

	ctx, stop := stopSignals()
	defer stop()
	rep, err := watch.Run(ctx, o)
	if err != nil {
		return Fail("watch", err)
	}
	return report.ExitStatus(rep)
}

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

// analyzer returns the worst-case explainer (internal/explain over internal/analysis).
var analyzer = func() func(*report.Task, metric.ID, *trace.Trace) report.Explanation { return explain.ForWatch() }
