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

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/timerlat"
)

func init() {
	Register(&Command{Name: "timerlat", Summary: "system-wide timer latency per CPU, as rtla timerlat top|hist and cyclictest", Run: runTimerlat})
}

func runTimerlat(args []string) int {
	o, help, err := timerlat.ParseArgs(args, os.Stderr)
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
