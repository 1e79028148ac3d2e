package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rtscope/rtscope/internal/analysis"
	"github.com/rtscope/rtscope/internal/cpuidle"
	"github.com/rtscope/rtscope/internal/preempt"
	"github.com/rtscope/rtscope/internal/trace"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/timerlat"
)

func init() { RegisterCmd(newTimerlatCmd) }

const timerlatLong = `System-wide timer latency per CPU, with rtla timerlat's options and
output, on any kernel with BPF. One measuring thread per CPU sleeps on an
absolute periodic timer; the kernel-side engine measures each release in
three parts: IRQ (expiry -> timer callback), Thread (expiry -> thread
running) and Ret user (expiry -> return from clock_nanosleep). Times in
microseconds.

top (the default) prints a per-CPU summary, as rtla timerlat top; hist
prints per-CPU histograms of every sample, exactly, in buckets of -b us, as
rtla timerlat hist. The options marked (hist) are hist's only. With -i or
-T, measuring stops when a latency reaches the bound, and the window of the
stop is explained (the auto-analysis) and saved with -t.`

// newTimerlatCmd builds the timerlat command. It parses its options
// itself (timerlat.ParseArgs: rtla's syntax, -t's optional file); its
// flags are given to cobra for the help, man page and completion.
func newTimerlatCmd() *cobra.Command {
	c := &cobra.Command{
		Use:                "timerlat [top|hist] [flags]",
		Short:              "system-wide timer latency per CPU, as rtla timerlat top|hist and cyclictest",
		Long:               timerlatLong,
		DisableFlagParsing: true,
		Example: "  rtscope timerlat -d 10s -c 1 -p 500\n  rtscope timerlat hist -d 1m -b 2 -E 100\n" +
			"  rtscope timerlat -a 100 --on-threshold shell,command='logger timerlat stop'",
		Annotations: map[string]string{annSeeAlso: "rtla-timerlat(1) cyclictest(8)",
			annExit: "0 when no stop bound (-i, -T, -a, --aa-only) was reached; 2 when one was; 1 on an error of rtscope's own."},
		ValidArgsFunction: completeTimerlat,
		RunE:              status(func(_ *cobra.Command, args []string) int { return runTimerlat(args) }),
	}
	return withFlags(c, timerlat.DocFlags())
}

// completeTimerlat completes timerlat's mode and options (cobra parses
// none of them, so completes none by itself).
func completeTimerlat(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if !strings.HasPrefix(toComplete, "-") {
		if len(args) == 0 {
			return []string{"top", "hist"}, cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveDefault
	}
	var out []string
	docFlags(c).VisitAll(func(f *pflag.Flag) {
		if name := "--" + f.Name; strings.HasPrefix(name, toComplete) {
			_, usage := pflag.UnquoteUsage(f)
			first, _, _ := strings.Cut(usage, "\n")
			out = append(out, cobra.CompletionWithDesc(name, first))
		}
	})
	return out, cobra.ShellCompDirectiveNoFileComp
}

func runTimerlat(args []string) int {
	o, help, err := timerlat.ParseArgs(args, os.Stdout)
	if help {
		return 0
	}
	if err != nil {
		return Fail("timerlat", err)
	}
	o.AutoHousekeeping = o.Housekeeping == nil
	out, err := timerlat.OpenOutputs(&o)
	if err != nil {
		return Fail("timerlat", err)
	}
	defer out.Abort()
	ctx, stop := stopSignals()
	defer stop()
	_, ttyErr := unix.IoctlGetTermios(int(os.Stdout.Fd()), unix.TCGETS)
	env := timerlat.Env{Out: os.Stdout, Err: os.Stderr, OnStop: timerlatStopHook(), TTY: ttyErr == nil}
	res, err := timerlat.Run(ctx, &o, env)
	if err != nil {
		return Fail("timerlat", err)
	}
	// With --json - the document is the whole of stdout.
	if o.JSONFile != "-" {
		timerlat.Print(os.Stdout, res, &o)
	}
	if out.JSON != nil {
		if err := timerlat.WriteJSONFile(out.JSON, res, &o); err != nil {
			return Fail("timerlat", err)
		}
	}
	if out.Perfetto != nil {
		if err := timerlat.WritePerfetto(out.Perfetto, res); err != nil {
			fmt.Fprintf(os.Stderr, "rtscope timerlat: %v\n", err)
		}
	}
	timerlat.End(res, &o, o.JSONFile, os.Stderr)
	return timerlat.ExitStatus(res)
}

// timerlatStopHook explains a stop with the analysis library (the same one
// as watch's worst cases), on the window that internal/trace cut.
func timerlatStopHook() timerlat.StopHook {
	return func(tr *trace.Trace, st *timerlat.Stop, w io.Writer) (timerlat.StopVerdict, error) {
		idle := cpuidle.Detect()
		subj := analysis.Subject{TID: uint32(st.TID), Comm: fmt.Sprintf("timerlat/%d", st.CPU), Metric: tr.Metric,
			Preemption: preempt.Detect(), IdleExitNs: idle.Ns, IdleExitWhy: idle.Why, SMICounter: idle.SMICounter}
		// The measuring thread's identity, as the trace saw it.
		for _, e := range tr.Events {
			if e.Type == trace.EventSwitch && e.NextTID == uint32(st.TID) {
				subj.Comm, subj.KPrio, subj.Sched = e.NextComm, e.NextKPrio, e.NextSched
				subj.Policy, _, _ = strings.Cut(e.NextSched, " ")
			}
		}
		res := analysis.Explain(tr, subj)
		fmt.Fprintf(w, "## auto-analysis of the CPU %d stop (%s)\n", st.CPU, tr.Metric)
		res.WriteText(w, "  ")
		return timerlat.StopVerdict{Verdict: res.Verdict, Cause: res.Cause.String()}, nil
	}
}
