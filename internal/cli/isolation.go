package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rtscope/rtscope/internal/cpuset"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/isolation"
	"github.com/rtscope/rtscope/internal/outfile"
)

func init() { RegisterCmd(newIsolationCmd) }

const isolationLong = `Watch CPUs set apart for real-time work and report everything else that
ran on them, grouped by cause and sender, each with its count, total time,
worst time and a remedy. The causes: IPIs received (TLB shootdown, function
call, reschedule, irq_work, remote wakeup) with the task and CPU that sent
them; device IRQs handled, against their smp_affinity_list and
effective_affinity_list; softirqs run, by vector; work items run by
kworkers, with the tasks that queued them onto the CPU; tasks other than the
workload that ran there (the workload: the --allow COMMs, else the user task
that ran longest); timers expired there (hrtimers and timer-wheel timers, by
function), with the tasks that armed them, from another CPU or on it (the
workload's own sleeps left out); on nohz_full CPUs, whether the tick stopped
and which dependency kept it, and how often its own hrtimer fired;
hypervisor steal, apart from the rest.

Without -c it watches the isolated CPUs and the nohz_full ones
(/sys/devices/system/cpu/isolated, nohz_full). rtscope's own threads are
moved off the watched CPUs, and its own IPIs (attaching its programs
patches kernel text) are left out. Each CPU's report begins with its judgement:
how many kinds of intrusion, their total time (IPI, IRQ, softirq, task and
hard hrtimer time; work runs inside its kworker's time, soft and wheel
timers inside their softirq's) and the worst one. Times in
microseconds. Needs root. Described in docs/isolation.md.

Two engines, as watch's --engine: btf (tp_btf programs, needs the kernel's
BTF) and classic (classic tracepoints read at the offsets tracefs prints,
for kernels without BTF). Both run the same hook bodies; the classic one
reads the kernel-thread flag and CPU count of the tasks that ran from
/proc (an exited task is judged a user task), does not count irq_work
IPIs on x86, and sees hrtimers by their expiries only (not who armed
them); its report ends by saying so.
A tracepoint this kernel lacks is named at the end of the report ("not
watched").`

// isolationFlags are isolation's command line.
type isolationFlags struct {
	cpus     string
	duration time.Duration
	json     string
	allow    []string
	engine   engineFlags // --engine, as watch's
}

func (f *isolationFlags) flagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("isolation", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringVarP(&f.cpus, "cpus", "c", "", "CPUs to watch, as a list (1,3-5); default: the isolated and nohz_full CPUs")
	fs.DurationVarP(&f.duration, "duration", "d", 10*time.Second, "watch this long (Ctrl-C ends it early)")
	fs.StringVar(&f.json, "json", "", "write the report as JSON to FILE (- for stdout; the text then goes nowhere)")
	fs.StringSliceVar(&f.allow, "allow", nil, "COMM[,COMM...]: the tasks that belong on the CPUs (the workload); default: each CPU's longest-running user task")
	f.engine.addKind(fs)
	return fs
}

func newIsolationCmd() *cobra.Command {
	var f isolationFlags
	fs := f.flagSet()
	c := &cobra.Command{
		Use:     "isolation [flags]",
		Short:   "what still runs on isolated CPUs, who sent it, and the remedy: IPIs, IRQs, softirqs, work, tasks, timers, tick, steal",
		Long:    isolationLong,
		Example: "  rtscope isolation -c 1 -d 10s\n  rtscope isolation --allow control --json isolation.json",
		Annotations: map[string]string{annSeeAlso: "rtla-osnoise(1)",
			annExit: "0 when the run completed (intrusions or not); 1 on bad input or an error of rtscope's own."},
		RunE: status(func(_ *cobra.Command, args []string) int { return f.run(args) }),
	}
	return withFlags(c, fs)
}

// options checks the command line and makes the run's options.
func (f *isolationFlags) options(args []string) (isolation.Options, error) {
	o := isolation.Options{Duration: f.duration, Allow: f.allow, Engine: *f.engine.kind}
	if len(args) > 0 {
		return o, fmt.Errorf("unexpected argument %q (the CPUs go in -c)", args[0])
	}
	if k := o.Engine; k != engine.EngineAuto && k != engine.EngineBTF && k != engine.EngineClassic {
		return o, fmt.Errorf("--engine %q: must be btf or classic", k)
	}
	if f.duration <= 0 || f.duration > 24*time.Hour {
		return o, fmt.Errorf("-d %v: want a duration above 0 and up to 24h", f.duration)
	}
	var err error
	if f.cpus == "" {
		o.CPUs, err = isolation.DefaultCPUs()
	} else if o.CPUs, err = cpuset.ParseList(f.cpus); err != nil {
		return o, fmt.Errorf("-c: %w", err)
	}
	if err != nil {
		return o, err
	}
	return o, isolation.CheckCPUs(o.CPUs)
}

func (f *isolationFlags) run(args []string) int {
	o, err := f.options(args)
	if err != nil {
		return Fail("isolation", err)
	}
	if err := pinOff(o.CPUs); err != nil {
		return Fail("isolation", err)
	}
	var out *outfile.File
	if f.json != "" {
		if out, err = outfile.Create(f.json); err != nil {
			return Fail("isolation", err)
		}
		defer out.Abort()
	}
	ctx, stop := stopSignals()
	defer stop()
	// Scripts start their workload after this line: under emulation,
	// attaching takes seconds (vmtest/guest/tests/37-nohz.sh).
	o.Ready = func() {
		what := "CPU"
		if len(o.CPUs) > 1 {
			what = "CPUs"
		}
		fmt.Fprintf(os.Stderr, "rtscope isolation: attached and tracking %s %s for %v; Ctrl-C to stop early\n", what, cpuset.FormatList(o.CPUs), o.Duration)
	}
	snap, err := isolation.Collect(ctx, o)
	if err != nil {
		return Fail("isolation", err)
	}
	res := isolation.Analyze(snap)
	if f.json != "-" {
		isolation.Print(os.Stdout, res)
	}
	if out != nil {
		if err := isolation.WriteJSON(out, res); err != nil {
			return Fail("isolation", err)
		}
		if err := out.Commit(); err != nil {
			return Fail("isolation", err)
		}
	}
	return 0
}

// pinOff moves rtscope's threads to the CPUs not watched: its own work
// would be counted as an intrusion.
func pinOff(watched []int) error {
	online, err := cpuset.Online()
	if err != nil {
		return err
	}
	skip := map[int]bool{}
	for _, c := range watched {
		skip[c] = true
	}
	var hk []int
	for _, c := range online {
		if !skip[c] {
			hk = append(hk, c)
		}
	}
	if len(hk) == 0 {
		return fmt.Errorf("every online CPU (%s) is watched: leave one to rtscope and the rest of the system", strings.TrimSpace(cpuset.FormatList(online)))
	}
	return cpuset.PinProcess(cpuset.Mask(hk), nil)
}
