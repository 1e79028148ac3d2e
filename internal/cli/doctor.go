package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rtscope/rtscope/internal/doctor"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/explain"
	"github.com/rtscope/rtscope/internal/outfile"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/target"
	"github.com/rtscope/rtscope/internal/watch"
)

func init() { RegisterCmd(newDoctorCmd) }

const doctorLong = `Check what a real-time engineer checks before trusting any latency number:
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

--watch DUR then watches the result: the isolated and nohz_full CPUs (or
-c CPUS) for DUR with rtscope isolation's collector (loads BPF, as root),
its report after the checks and under "isolation" in --json: every IPI,
IRQ, softirq, work item and foreign task that ran there, with its sender
and remedy (docs/isolation.md). With no such CPU and no -c, one sentence
says so. The checks' statuses do not depend on it.

Targets (repeatable, combinable), as in rtscope watch:
  -p, --tid TID          one thread
      --pid PID          every thread of a process
      --comm NAME        every thread with this name`

// doctorFlags are doctor's command line.
type doctorFlags struct {
	targets       targetFlags
	sample, watch time.Duration
	json          string
	strict, bpf   bool
	cpus          string // -c: the CPUs --watch watches
}

// flagSet defines doctor's flags into f, in the order of its help.
func (f *doctorFlags) flagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("doctor", pflag.ContinueOnError)
	fs.SortFlags = false
	f.targets.add(fs, "check", "")
	fs.DurationVar(&f.sample, "sample", time.Second, "measure the hypervisor's steal time over this long (0: do not)")
	fs.StringVar(&f.json, "json", "", "write the checks as JSON to FILE (- for stdout; the text then goes to stderr)")
	fs.BoolVar(&f.strict, "strict", false, "warnings fail too (exit status 2)")
	fs.BoolVar(&f.bpf, "bpf", true, "probe rtscope's BPF features: load and attach its engine for a moment (the bpf_* checks)")
	fs.DurationVar(&f.watch, "watch", 0, "after the checks, watch the isolated and nohz_full CPUs (or -c's) this long with rtscope isolation's "+
		"collector and print its report; with targets, also check their PI mutex use (futex waits without priority inheritance in their worst cases)")
	fs.StringVarP(&f.cpus, "cpus", "c", "", "with --watch: the CPUs to watch, as a list (1,3-5); default: the isolated and nohz_full CPUs")
	return fs
}

// newDoctorCmd builds the doctor command over doctorFlags.
func newDoctorCmd() *cobra.Command {
	var f doctorFlags
	fs := f.flagSet()
	c := &cobra.Command{
		Use:     "doctor [flags]",
		Short:   "check the machine (and tasks) for real-time set-up: preemption, isolation, IRQs, idle, frequency, VM steal",
		Long:    doctorLong,
		Example: "  rtscope doctor\n  rtscope doctor --comm control --watch 10s --json checks.json",
		Annotations: map[string]string{
			annExit: "0 when no check failed (warnings allowed), 2 when one failed (or, with --strict, warned), 1 on an error of rtscope's own."},
		RunE: status(func(_ *cobra.Command, args []string) int { return f.run(fs, args) }),
	}
	return withFlags(c, fs)
}

// run runs the checks with doctor's flags parsed; args are those left.
func (f *doctorFlags) run(fs *pflag.FlagSet, args []string) int {
	if len(args) > 0 {
		return Fail("doctor", fmt.Errorf("unexpected argument %q", args[0]))
	}
	if f.sample < 0 || f.sample > time.Minute {
		return Fail("doctor", fmt.Errorf("--sample %v: want 0 to 1m", f.sample))
	}
	if err := f.checkWatch(); err != nil {
		return Fail("doctor", err)
	}
	var isoCPUs []int
	var isoNote error // why no CPU is watched
	if f.watch > 0 {
		var err error
		if isoCPUs, err = f.isolationCPUs(); errors.Is(err, errNoIsolated) {
			isoNote = err
		} else if err != nil {
			return Fail("doctor", err)
		}
	}
	if fs.Changed("json") && f.json == "" {
		return Fail("doctor", errors.New("--json: empty value"))
	}
	env := doctor.Env{FS: doctor.Root(), Sample: f.sample}
	spec, err := f.targets.spec()
	if err != nil {
		return Fail("doctor", err)
	}
	env.Targets.TIDs, env.Targets.PIDs, env.Targets.Comms = spec.TIDs, spec.PIDs, spec.Comms
	if err := engine.Probe(); err != nil && f.bpf {
		env.BPF = &doctor.BPF{Unprobed: err.Error()}
	} else if f.bpf {
		env.BPF = bpfSection(engine.ProbeFeatures(engine.Config{IPI: true})) // what the kernel has, --ipi's hooks included
	}
	var out *outfile.File
	if f.json != "" {
		if out, err = outfile.Create(f.json); err != nil {
			return Fail("doctor", err)
		}
		defer out.Abort()
	}
	rep, err := doctor.Run(env)
	if err != nil {
		return Fail("doctor", err)
	}
	if f.watch > 0 {
		if err := f.watchAll(env.Targets, isoCPUs, isoNote, rep); err != nil {
			return Fail("doctor", err)
		}
	}
	rep.SetStrict(f.strict)
	text := os.Stdout
	if f.json == "-" {
		text = os.Stderr // the document is the whole of stdout
	}
	if err := rep.WriteText(text); err != nil {
		return Fail("doctor", err)
	}
	writeIsolation(text, rep.Isolation)
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
