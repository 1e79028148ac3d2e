package cli

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/rtscope/rtscope/internal/doctor"
	"github.com/rtscope/rtscope/internal/outfile"
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
policy, locked memory and affinity. Each check prints its status (PASS,
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
	tids := fs.StringSliceP("tid", "p", nil, "thread id to check")
	pids := fs.StringSlice("pid", nil, "process id: check all its threads")
	comms := fs.StringSlice("comm", nil, "task name to check (max 15 characters)")
	sample := fs.Duration("sample", time.Second, "measure the hypervisor's steal time over this long (0: do not)")
	jsonPath := fs.String("json", "", "write the checks as JSON to FILE (- for stdout; the text then goes to stderr)")
	strict := fs.Bool("strict", false, "warnings fail too (exit status 2)")
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
	if fs.Changed("json") && *jsonPath == "" {
		return Fail("doctor", errors.New("--json: empty value"))
	}
	env := doctor.Env{FS: doctor.Root(), Sample: *sample}
	var err error
	if env.Targets.TIDs, err = parseIDs("tid", *tids); err != nil {
		return Fail("doctor", err)
	}
	if env.Targets.PIDs, err = parseIDs("pid", *pids); err != nil {
		return Fail("doctor", err)
	}
	for _, c := range *comms {
		if c == "" || len(c) > 15 {
			return Fail("doctor", fmt.Errorf("--comm %q: a task name has 1 to 15 characters (the kernel's limit)", c))
		}
	}
	env.Targets.Comms = *comms
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
