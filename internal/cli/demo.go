package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/rtscope/rtscope/internal/explain"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/scenario"
	"github.com/rtscope/rtscope/internal/target"
	"github.com/rtscope/rtscope/internal/units"
	"github.com/rtscope/rtscope/internal/watch"
)

func init() {
	Register(&Command{Name: "demo", Summary: "watch a built-in failure scenario (default: priority inversion, without and with PI)", Run: runDemo})
}

const demoUsage = `Usage: rtscope demo [NAME] [flags]

Runs a built-in scenario (see 'rtscope scenario list') under 'rtscope watch'
and prints the report of its threads. Without NAME: priority-inversion with a
plain mutex, then with a priority-inheritance mutex (--pi), and the cycle
time of the high-priority task side by side. Takes about 15 seconds; needs
root.

Flags:
`

func runDemo(args []string) int {
	fs := pflag.NewFlagSet("demo", pflag.ContinueOnError)
	fs.SortFlags = false
	dur := new(time.Duration)
	*dur = 5 * time.Second
	fs.VarP(units.DurationFlag{D: dur}, "duration", "d", "how long each scenario runs: `time`[s|m], seconds without a unit")
	traces := fs.Bool("traces", false, "print the event listing of each worst case")
	var verbose bool
	addVerbose(fs, &verbose)
	fs.Usage = func() { fmt.Fprint(os.Stderr, demoUsage, fs.FlagUsages()) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return Fail("demo", err)
	}
	if fs.NArg() > 1 {
		return Fail("demo", fmt.Errorf("unexpected argument %q (one scenario at a time)", fs.Arg(1)))
	}
	if *dur < time.Second || *dur > 10*time.Minute {
		return Fail("demo", fmt.Errorf("--duration %v is outside 1s to 10m", *dur))
	}
	ctx, stop := stopSignals()
	defer stop()
	d := demo{ctx: ctx, dur: *dur, traces: *traces, verbose: verbose, out: os.Stdout}
	if fs.NArg() == 1 {
		s, err := scenario.Get(fs.Arg(0))
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
