package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/action"
	"github.com/rtscope/rtscope/internal/explain"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/slo"
	"github.com/rtscope/rtscope/internal/target"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
	"github.com/rtscope/rtscope/internal/watch"
)

func init() { RegisterCmd(newWatchCmd) }

const watchLong = `Watch threads, processes, task names, cgroups, or a command launched and
tracked from its first instruction (with its whole process tree). Per thread:
wakeup latency, timer release latency (IRQ / thread / user parts), response
time, control-loop cycle time, period and jitter, threaded-IRQ handler time;
SLO violations; the worst case of each metric with the events of its window.
All times are printed in microseconds.

Targets (repeatable, combinable):
  -p, --tid TID          one thread
      --pid PID          every thread of a process, including later ones
      --comm NAME        tasks with this name, including later ones
      --cgroup PATH|UNIT every task in a cgroup v2 (or systemd unit), now
                         and when it enters later
  -- COMMAND ARGS...     launch COMMAND and track its process tree; it runs
                         as --user USER[:GROUP], by default as the user who
                         ran sudo (with their HOME, USER and LOGNAME)

Watching ends after --duration, on Ctrl-C/SIGTERM, or when every target has
exited (never by itself with --comm or --cgroup).

The report leads with the answer: a line per task with its judgement (OK,
WARN, FAIL, UNKNOWN) and why, the findings one per cause, the costliest
first, and each metric's worst case. With SLOs, the SLOs judge; without, a
periodic task fails when it misses its period, real-time hygiene findings
warn, and too few events are unknown.`

const watchExit = `the first that applies: 1 on an error of rtscope's own; the launched
COMMAND's status when it failed by itself (128+N if signal N killed it); 2 when an SLO was violated, or
with --fail-on when a task was judged that bad or worse; else 0.`

const watchExample = `  rtscope watch --comm control --slo cycle=1ms -d 1m
  rtscope watch --slo latency=100us --json report.json -- ./control --rt
  rtscope watch --pid $(pidof ctl) --slo cycle=1ms \
    --on-threshold trace,file=miss.json --on-threshold signal,num=USR1,pid=parent`

const watchActionsUsage = `In watch, the threshold is an SLO violated: the first one noticed in a
reader period (10 ms) fires the actions, one run at a time. trace saves the
violation's JSON document (default rtscope_threshold.json: task, metric,
value, SLO, verdict, window); at --on-end, the report (default
rtscope_report.json). Shell commands see the variables of docs/actions.md:
RTSCOPE_JSON (that document, or --json's file at the end), RTSCOPE_VERDICT,
RTSCOPE_TID, RTSCOPE_COMM, RTSCOPE_METRIC, RTSCOPE_VALUE_NS,
RTSCOPE_THRESHOLD_NS, RTSCOPE_CAUSE; at the end RTSCOPE_STATUS (the exit
status), RTSCOPE_VIOLATIONS, RTSCOPE_HEALTH (the worst judgement: ok,
unknown, warn or fail).`

// newWatchCmd builds the watch command over watchFlags.
func newWatchCmd() *cobra.Command {
	var f watchFlags
	fs := f.flagSet()
	c := &cobra.Command{
		Use:     "watch [flags] [-- COMMAND ARGS...]",
		Short:   "measure chosen tasks: latency, timer release, response, cycle, IRQ handler",
		Long:    watchLong,
		Example: watchExample,
		Annotations: map[string]string{annExit: watchExit, annSeeAlso: "rtscope-doctor(1) rtscope-timerlat(1)",
			annMore: "Metrics: " + strings.Join(metric.Names(), ", ") + "\n\n" + action.Usage + "\n" + watchActionsUsage},
		RunE: status(func(c *cobra.Command, args []string) int { return f.run(fs, args, c.ArgsLenAtDash()) }),
	}
	return withFlags(c, fs)
}

// run runs watch with its flags parsed; args are the arguments left, those
// from dash on (-1: no --) the command to launch.
func (f *watchFlags) run(fs *pflag.FlagSet, args []string, dash int) int {
	var command []string
	if dash >= 0 {
		command, args = args[dash:], args[:dash]
	}
	if len(args) > 0 {
		return Fail("watch", fmt.Errorf("unexpected argument %q (put a command after --)", args[0]))
	}
	o, err := f.options(fs, command, dash >= 0)
	if err != nil {
		return Fail("watch", err)
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

// watchFlags are watch's command line, before options checks them into
// watch.Options.
type watchFlags struct {
	targets         targetFlags
	warmUp          time.Duration
	dur, interval   time.Duration
	quiet           bool
	slos            []string
	outputs         outputFlags
	engine          engineFlags
	traces, verbose bool
	failOn          string
	show            []string
	all             bool
	user            string
	house           string
	actions         actionFlags
}

// flagSet defines watch's flags into f, one line a flag, in the order of
// its help.
func (f *watchFlags) flagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("watch", pflag.ContinueOnError)
	fs.SortFlags = false
	f.targets.add(fs, "watch", "")
	f.targets.addCgroup(fs, "")
	fs.VarP(units.DurationFlag{D: &f.dur}, "duration", "d", "stop after this long: `time`[s|m|h|d], seconds without a unit (e.g. 30s, 5m, 1h30m); default: until Ctrl-C or targets exit")
	fs.DurationVarP(&f.interval, "interval", "i", time.Second, "live table period; the table is printed at a terminal, or piped when -i is given")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no live table, only the final report")
	addSLO(fs, &f.slos, "latency=50us or 1234:cycle=2ms")
	f.outputs.add(fs)
	f.engine.addNoTrace(fs, "do not record worst-case traces (flight recorder off)")
	fs.BoolVar(&f.traces, "traces", false, "print the event listing of each worst case in the text report (implies --verbose)")
	addVerbose(fs, &f.verbose)
	fs.StringVar(&f.failOn, "fail-on", "", "exit 2 also when a task is judged `warn` (or worse) or fail; default: only on SLO violations")
	f.engine.addKind(fs)
	f.engine.addBTF(fs)
	f.engine.addTraceEvents(fs)
	f.engine.addTraceMax(fs)
	f.engine.addStackAfter(fs)
	f.engine.addIPI(fs)
	fs.DurationVar(&f.warmUp, "warm-up", 0, "leave out of its metrics every sample of a task in the first `duration` after it is tracked, as its start-up (0: none); default: detected, the iterations before a periodic task's period settles")
	fs.StringSliceVar(&f.show, "show", nil, "report and judge only tasks with these names")
	fs.BoolVar(&f.all, "all", false, "report and judge every task (default: the tasks named, real-time at any time, with an SLO or a period, or the cause of a finding; one line for the others)")
	fs.StringVar(&f.user, "user", "", "run COMMAND as USER[:GROUP] (name or number); default: the user who ran sudo (SUDO_UID), else root")
	addHousekeeping(fs, &f.house)
	f.actions.add(fs)
	return fs
}

// options checks the command line into the options of a watch session
// (flag, parse, options: docs/design.md 2.1), the command launched after
// -- among its targets.
func (f *watchFlags) options(fs *pflag.FlagSet, command []string, dashDash bool) (o watch.Options, err error) {
	if err := f.engine.check(); err != nil {
		return o, err
	}
	if o.FailOn, err = parseFailOn(f.failOn); err != nil {
		return o, err
	}
	if err := f.outputs.options(fs, &o); err != nil {
		return o, err
	}
	if o.Targets, err = f.targetSpec(fs, command, dashDash); err != nil {
		return o, err
	}
	if f.interval <= 0 {
		return o, errors.New("--interval must be positive")
	}
	if *f.engine.noTrace && f.outputs.perfetto != "" {
		return o, errors.New("--perfetto draws the recorded windows: it needs the flight recorder (drop --no-trace)")
	}
	if *f.engine.noTrace && f.traces {
		return o, errors.New("--traces and --no-trace conflict")
	}
	if err := housekeeping(fs, f.house, &o); err != nil {
		return o, err
	}
	f.engine.options(&o)
	o.Duration, o.Interval, o.Quiet, o.Traces, o.Verbose = f.dur, f.interval, f.quiet, f.traces, f.verbose
	o.Show, o.All = f.show, f.all
	// The live table is for a person at a terminal: piped or redirected,
	// the report alone is written, unless --interval asks for the table.
	o.Quiet = o.Quiet || (!fs.Changed("interval") && !isTerminal(os.Stdout))
	if fs.Changed("warm-up") {
		if f.warmUp < 0 {
			return o, fmt.Errorf("--warm-up %v: want a duration >= 0", f.warmUp)
		}
		o.WarmUp = &f.warmUp
	}
	bounds, err := parseSLOs(f.slos)
	if err != nil {
		return o, err
	}
	o.SLO = slo.Build(bounds)
	if o.OnThreshold, o.OnEnd, err = f.actions.lists(); err != nil {
		return o, err
	}
	if len(o.OnThreshold) > 0 && len(bounds) == 0 {
		return o, errors.New("--on-threshold acts on SLO violations: give an SLO with --slo")
	}
	return o, nil
}

// parseFailOn parses --fail-on: warn or fail ("": only SLO violations fail).
func parseFailOn(s string) (report.Health, error) {
	if s == "" {
		return "", nil
	}
	h, err := report.ParseHealth(s)
	if err != nil || (h != report.HealthWarn && h != report.HealthFail) {
		return "", fmt.Errorf("--fail-on %q: want warn or fail", s)
	}
	return h, nil
}

// targetSpec checks watch's targets: those named, and the command launched
// after -- with the user it runs as.
func (f *watchFlags) targetSpec(fs *pflag.FlagSet, command []string, dashDash bool) (s target.Spec, err error) {
	if s, err = f.targets.spec(); err != nil {
		return s, err
	}
	s.Command = command
	switch {
	case fs.Changed("user") && len(command) == 0:
		return s, errors.New("--user applies to a command launched after --")
	case fs.Changed("user"):
		s.User, err = target.ParseUser(f.user)
	case len(command) > 0:
		s.User, err = target.DefaultUser()
	}
	if err != nil {
		return s, err
	}
	if dashDash && len(command) == 0 {
		return s, errors.New("no command after --")
	}
	return s, nil
}

// analyzer returns the worst-case explainer (internal/explain over internal/analysis).
var analyzer = func() func(*report.Task, metric.ID, *trace.Trace) report.Explanation { return explain.ForWatch() }

// isTerminal tells whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
