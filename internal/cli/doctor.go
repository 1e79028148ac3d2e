package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/rtscope/rtscope/internal/doctor"
	"github.com/rtscope/rtscope/internal/engine"
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
from rtscope watch's analysis of its worst cases over DUR (loads BPF). The
BPF section (bpf_*) loads and attaches rtscope's engine for a moment, as
root, and says which kernel feature it found, one check each (the table in
docs/features.md). Each check prints its status (PASS, WARN, FAIL, INFO,
SKIP), the evidence read and, when not passed, the remedy. Every check is
described in docs/doctor.md.

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
	probeBPF := fs.Bool("bpf", true, "probe rtscope's BPF features: load and attach its engine for a moment (the bpf_* checks)")
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
	if err := engine.Probe(); err != nil && *probeBPF {
		env.BPF = &doctor.BPF{Unprobed: err.Error()}
	} else if *probeBPF {
		env.BPF = bpfSection(engine.ProbeFeatures(engine.Config{IPI: true})) // what the kernel has, --ipi's hooks included
	}
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

// bpfSection is doctor's BPF section: each row of the engine's feature
// table with what the probe found (f), or the error that stopped it.
func bpfSection(f engine.Features, err error) *doctor.BPF {
	b := &doctor.BPF{Engine: f.Engine, Note: f.EngineNote}
	if err != nil {
		b.Err = err.Error()
	}
	for _, row := range engine.FeatureTable() {
		x := row.Feature
		b.Features = append(b.Features, doctor.Feature{Name: row.Name, Needs: plain(row.Needs), Enables: plain(row.Enables),
			Fallback: plain(row.Fallback), Required: row.Required && f.Applies(x), Probed: f.Probed(x), Found: f.Has(x),
			Sentence: plain(f.Sentence(x)), Cause: f.Cause(x)})
	}
	return b
}

// plain drops the table's Markdown code marks, for the terminal.
func plain(s string) string { return strings.ReplaceAll(s, "`", "") }

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
