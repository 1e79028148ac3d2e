package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/rtscope/rtscope/internal/doctor"
	"github.com/rtscope/rtscope/internal/explain"
	"github.com/rtscope/rtscope/internal/outfile"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/target"
	"github.com/rtscope/rtscope/internal/watch"
)

func init() {
	Register(&Command{Name: "doctor", Summary: "check the machine (and tasks) for real-time set-up: preemption, isolation, IRQs, idle, frequency, VM steal", Run: runDoctor})
}

const doctorUsage = `Usage: rtscope doctor [flags]

Check what a real-time engineer checks before trusting any latency number:
the preemption model (found without debugfs), isolcpus / nohz_full /
rcu_nocbs, IRQs on isolated CPUs, idle states and /dev/cpu_dma_latency, the
cpufreq governor and boost, RT throttling, THP and swap, SMT siblings of
isolated CPUs, timer migration and watchdogs, the hypervisor and its steal
time (measured over --sample), the clock source. With targets, each thread's
policy, locked memory and affinity; with --watch DUR also its PI mutex use,
from rtscope watch's analysis of its worst cases over DUR (loads BPF). Each check prints its status (PASS,
WARN, FAIL, INFO, SKIP), the evidence read and, when not passed, the remedy.
Every check is described in docs/doctor.md.

Targets (repeatable, combinable), as in rtscope watch:
  -p, --tid TID          one thread
      --pid PID          every thread of a process
      --comm NAME        every thread with this name

Exit status: 0 when no check failed (warnings allowed), 2 when one failed
(or, with --strict, warned), 1 on an error of rtscope's own.

Flags:
`

func runDoctor(args []string) int {
	fs := pflag.NewFlagSet("doctor", pflag.ContinueOnError)
	fs.SortFlags = false
	var targets targetFlags
	targets.add(fs, "check", "")
	sample := fs.Duration("sample", time.Second, "measure the hypervisor's steal time over this long (0: do not)")
	jsonPath := fs.String("json", "", "write the checks as JSON to FILE (- for stdout; the text then goes to stderr)")
	strict := fs.Bool("strict", false, "warnings fail too (exit status 2)")
	watchFor := fs.Duration("watch", 0, "with targets: watch them this long with the BPF engine and check their PI mutex use (futex waits without priority inheritance in their worst cases)")
	fs.Usage = func() { fmt.Fprint(os.Stderr, doctorUsage, fs.FlagUsages()) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return Fail("doctor", err)
	}
	if fs.NArg() > 0 {
		return Fail("doctor", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *sample < 0 || *sample > time.Minute {
		return Fail("doctor", fmt.Errorf("--sample %v: want 0 to 1m", *sample))
	}
	if *watchFor < 0 || *watchFor > time.Hour {
		return Fail("doctor", fmt.Errorf("--watch %v: want 0 to 1h", *watchFor))
	}
	if fs.Changed("json") && *jsonPath == "" {
		return Fail("doctor", errors.New("--json: empty value"))
	}
	env := doctor.Env{FS: doctor.Root(), Sample: *sample}
	spec, err := targets.spec()
	if err != nil {
		return Fail("doctor", err)
	}
	env.Targets.TIDs, env.Targets.PIDs, env.Targets.Comms = spec.TIDs, spec.PIDs, spec.Comms
	var out *outfile.File
	if *jsonPath != "" {
		if out, err = outfile.Create(*jsonPath); err != nil {
			return Fail("doctor", err)
		}
		defer out.Abort()
	}
	rep, err := doctor.Run(env)
	if err != nil {
		return Fail("doctor", err)
	}
	if *watchFor > 0 {
		if targets.empty() {
			return Fail("doctor", errors.New("--watch needs targets (-p, --pid or --comm)"))
		}
		pi, err := watchPI(env.Targets, *watchFor)
		if err != nil {
			return Fail("doctor", fmt.Errorf("--watch: %w", err))
		}
		rep.Add(pi...)
	}
	rep.SetStrict(*strict)
	text := os.Stdout
	if *jsonPath == "-" {
		text = os.Stderr // the document is the whole of stdout
	}
	if err := rep.WriteText(text); err != nil {
		return Fail("doctor", err)
	}
	if out != nil {
		if err := out.Fill(rep.EncodeJSON); err != nil {
			return Fail("doctor", err)
		}
	}
	return rep.ExitStatus
}

// watchPI watches the targets for d with the engine and the worst-case
// analysis (as rtscope watch -q does) and judges each thread's PI mutex
// use from the hygiene the analysis keeps.
func watchPI(t doctor.Targets, d time.Duration) ([]doctor.Check, error) {
	ctx, stop := stopSignals()
	defer stop()
	o := watch.Options{Targets: target.Spec{TIDs: t.TIDs, PIDs: t.PIDs, Comms: t.Comms}, Duration: d, Quiet: true,
		Out: io.Discard, Log: io.Discard, AutoHousekeeping: true, All: true} // every thread's PI use
	o.Analyze = analyzer()
	o.Explain = explain.ForViolation
	rep, err := watch.Run(ctx, o)
	if err != nil {
		return nil, err
	}
	var out []doctor.Check
	for _, tk := range rep.Tasks {
		out = append(out, doctor.PICheck(piUse(tk, d)))
	}
	return out, nil
}

func piUse(tk *report.Task, d time.Duration) doctor.PIUse {
	u := doctor.PIUse{Task: doctor.Task{TID: int(tk.TID), PID: int(tk.PID), Comm: tk.Comm}, Policy: tk.Policy,
		RT: tk.Policy == "FIFO" || tk.Policy == "RR" || tk.Policy == "DEADLINE", FutexNoPI: tk.Hygiene[explain.HygieneFutexNoPI], Watched: d}
	for _, m := range tk.Metrics {
		if m.Worst != nil {
			u.Windows++
		}
	}
	return u
}
