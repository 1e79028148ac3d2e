package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rtscope/rtscope/internal/explain"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/scenario"
	"github.com/rtscope/rtscope/internal/target"
	"github.com/rtscope/rtscope/internal/units"
	"github.com/rtscope/rtscope/internal/watch"
)

func init() { RegisterCmd(newDemoCmd) }

const demoLong = `Runs a built-in scenario (see 'rtscope scenario list') under 'rtscope watch'
and prints the report of its threads. Without NAME: priority-inversion with a
plain mutex, then with a priority-inheritance mutex (--pi), and the cycle
time of the high-priority task side by side. Takes about 15 seconds; needs
root.`

// demoFlags are demo's command line.
type demoFlags struct {
	dur             time.Duration
	traces, verbose bool
}

// flagSet defines demo's flags into f.
func (f *demoFlags) flagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("demo", pflag.ContinueOnError)
	fs.SortFlags = false
	f.dur = 5 * time.Second
	fs.VarP(units.DurationFlag{D: &f.dur}, "duration", "d", "how long each scenario runs: `time`[s|m], seconds without a unit")
	fs.BoolVar(&f.traces, "traces", false, "print the event listing of each worst case")
	addVerbose(fs, &f.verbose)
	return fs
}

// newDemoCmd builds the demo command over demoFlags.
func newDemoCmd() *cobra.Command {
	var f demoFlags
	c := &cobra.Command{
		Use:     "demo [NAME] [flags]",
		Short:   "watch a built-in failure scenario (default: priority inversion, without and with PI)",
		Long:    demoLong,
		Example: "  rtscope demo\n  rtscope demo rt-hog -d 3s",
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return scenario.Names(), cobra.ShellCompDirectiveNoFileComp
		},
		Annotations: map[string]string{annSeeAlso: "rtscope-scenario(1) rtscope-watch(1)", annExit: "0 when the scenarios ran and were watched; 1 on an error or when interrupted."},
		RunE:        status(func(_ *cobra.Command, args []string) int { return f.run(args) }),
	}
	return withFlags(c, f.flagSet())
}

// run runs the demo with its flags parsed; args are those left.
func (f *demoFlags) run(args []string) int {
	if len(args) > 1 {
		return Fail("demo", fmt.Errorf("unexpected argument %q (one scenario at a time)", args[1]))
	}
	if f.dur < time.Second || f.dur > 10*time.Minute {
		return Fail("demo", fmt.Errorf("--duration %v is outside 1s to 10m", f.dur))
	}
	ctx, stop := stopSignals()
	defer stop()
	d := demo{ctx: ctx, dur: f.dur, traces: f.traces, verbose: f.verbose, out: os.Stdout}
	if len(args) == 1 {
		s, err := scenario.Get(args[0])
		if err != nil {
			return Fail("demo", err)
		}
		if _, err := d.watch(s); err != nil {
			return Fail("demo", err)
		}
		return 0
	}
	s, _ := scenario.Get("priority-inversion")
	plain, err := d.watch(s)
	if err != nil {
		return Fail("demo", err)
	}
	if ctx.Err() != nil {
		return 1
	}
	pi, err := d.watch(s, "--pi")
	if err != nil {
		return Fail("demo", err)
	}
	sideBySide(d.out, "task-H", "cycle", []string{"plain mutex", "PI mutex (--pi)"}, []*report.Report{plain, pi})
	fmt.Fprintln(d.out, "\nWithout priority inheritance, H waits on the mutex while L, which holds it, is preempted by M's\n"+
		"10 ms bursts. With --pi, L inherits H's priority until it unlocks, and H's cycle stays short.")
	return 0
}

type demo struct {
	ctx     context.Context
	dur     time.Duration
	traces  bool
	verbose bool
	out     io.Writer
}

// watch runs scenario s (this executable, 'scenario run') under watch and
// prints the report of its threads.
func (d *demo) watch(s *scenario.Scenario, flags ...string) (*report.Report, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding rtscope's own executable: %w", err)
	}
	argv := append([]string{exe, "scenario", "run", s.Name, "--duration", d.dur.String(), "-q"}, flags...)
	fmt.Fprintf(d.out, "### rtscope watch --show %s -- rtscope scenario run %s %s\n\n",
		strings.Join(s.Threads(), ","), s.Name, strings.Join(append([]string{"--duration", d.dur.String()}, flags...), " "))
	return watch.Run(d.ctx, watch.Options{
		Targets:  target.Spec{Command: argv},
		Duration: d.dur + 30*time.Second, // the scenario ends first
		Quiet:    true,
		Traces:   d.traces,
		Verbose:  d.verbose,
		Show:     s.Threads(),
		Out:      d.out,
		Analyze:  analyzer(),
		Explain:  explain.ForViolation,
	})
}

// sideBySide prints one metric of one thread from several reports.
func sideBySide(w io.Writer, comm, metric string, labels []string, reps []*report.Report) {
	fmt.Fprintf(w, "\n%s %s time (us):\n  %-18s %8s %10s %10s %10s %10s\n", comm, metric, "", "count", "p50", "p90", "p99", "max")
	for i, rep := range reps {
		var m *report.Metric
		for _, t := range rep.Tasks {
			if t.Comm == comm {
				m = t.Metrics[metric]
			}
		}
		if m == nil {
			fmt.Fprintf(w, "  %-18s %8s\n", labels[i], "-")
			continue
		}
		fmt.Fprintf(w, "  %-18s %8d %10s %10s %10s %10s\n", labels[i], m.Count, units.UsOf(m.P50Ns), units.UsOf(m.P90Ns), units.UsOf(m.P99Ns), units.UsOf(m.MaxNs))
	}
}
