package timerlat

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/rtscope/rtscope/internal/action"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/session"
	"github.com/rtscope/rtscope/internal/units"
)

// Options of `rtscope timerlat top|hist`, with rtla's names and units.
type Options struct {
	Mode         string // "top" or "hist"
	CPUs         []int  // -c; nil: every online CPU
	Housekeeping []int  // -H; nil: rtscope's own threads left where they are
	// AutoHousekeeping (without -H): keep rtscope's own threads off the
	// measured CPUs. Set by the command line only: it pins every thread of
	// the process, which in tests and demos hosts other workloads too.
	AutoHousekeeping bool
	PeriodUs         uint64        // -p
	Priority         Priority      // -P
	DMALatency       int           // --dma-latency us; -1: /dev/cpu_dma_latency untouched
	Duration         time.Duration // -d; 0: until Ctrl-C or a stop threshold
	Quiet            bool          // -q
	Nano             bool          // -n: ns instead of us
	IRQStopUs        uint64        // -i; 0: none
	ThreadStopUs     uint64        // -T; 0: none
	AAOnly           bool          // --aa-only: only the analysis of the stop
	NoAA             bool          // --no-aa
	TraceFile        string        // -t [file]; "": no trace saved
	JSONFile         string        // --json FILE ("-": stdout)
	Engine           string        // --engine: engine.EngineAuto, EngineBTF or EngineClassic
	BTFFile          string        // --btf: the kernel's vmlinux BTF as a file
	PerfettoFile     string        // --perfetto FILE: the stop's window as a Perfetto trace
	Cyclictest       bool          // --cyclictest: cyclictest's output format
	// OnThreshold runs when a stop threshold is reached (after the
	// auto-analysis); with continue the run goes on and fires them again
	// at each later crossing. OnEnd runs after the final report.
	OnThreshold action.List
	OnEnd       action.List

	// hist
	BucketUs  uint64 // -b, in output units (us, or ns with -n)
	Entries   int    // -E
	NoIRQ     bool
	NoThread  bool
	NoUser    bool
	NoHeader  bool
	NoSummary bool
	NoIndex   bool
	WithZeros bool
}

// Analysis tells whether a stop is followed by the auto-analysis (as rtla:
// whenever a stop threshold is set, unless --no-aa).
func (o *Options) Analysis() bool {
	return (o.IRQStopUs > 0 || o.ThreadStopUs > 0) && !o.NoAA
}

// Tracing tells whether the engine's flight recorder (and so its new-maximum
// notices, which the stop thresholds use) is needed.
func (o *Options) Tracing() bool {
	return o.IRQStopUs > 0 || o.ThreadStopUs > 0 || o.TraceFile != ""
}

// stackMinWait is how long (ns) a measuring thread waits before the stack
// of what runs instead is taken: the lower stop threshold, at most
// engine.DefaultStackMinWait.
func (o *Options) stackMinWait() uint64 {
	w := uint64(engine.DefaultStackMinWait)
	for _, us := range []uint64{o.IRQStopUs, o.ThreadStopUs} {
		if us > 0 && us*1000 < w {
			w = us * 1000
		}
	}
	return w
}

// DefaultTraceFile is where -t and -a save the trace, as rtla.
const DefaultTraceFile = "timerlat_trace.txt"

// Limits of the numeric options.
const (
	minPeriodUs   = 10
	maxPeriodUs   = 1000000
	maxBucket     = 999999
	minEntries    = 10
	maxEntries    = 1000000
	maxDMALatency = 10000
	maxStopUs     = 10000000
)

const usageTop = `Usage: rtscope timerlat [top] [options]

A per-CPU summary of the timer latency, as rtla timerlat top, on any kernel
with BPF. One measuring thread per CPU sleeps on an absolute periodic timer;
the kernel-side engine measures each release in three parts: IRQ (expiry ->
timer callback), Thread (expiry -> thread running) and Ret user (expiry ->
return from clock_nanosleep). Times in microseconds.

Options:
`

const usageHist = `Usage: rtscope timerlat hist [options]

Per-CPU histograms of the timer latency, as rtla timerlat hist: IRQ, Thread
and Ret user latency of every sample, exactly, in buckets of -b us.

Options:
`

// flagValues are the command line's values before they are checked into
// Options, with pflag's names.
type flagValues struct {
	cpus, house, prio, dur, trace, dmaS                 string
	period, irq, thread, auto, aaOnly, bucket           uint64
	entries                                             int
	quiet, nano, noAA, user, kernel, cyc                bool
	noIRQ, noThread, noUser, noHeader, noSum, noIdx, wz bool
	onThreshold, onEnd                                  []string
}

// histOnly are the options of timerlat hist: hidden from, and refused by,
// timerlat top.
var histOnly = []string{"bucket-size", "entries", "no-irq", "no-thread", "no-header", "no-summary", "no-index", "with-zeros"}

// ParseArgs parses the arguments after "timerlat" (an optional "top" or
// "hist" first). help is true when --help was asked (usage written to w).
func ParseArgs(args []string, w io.Writer) (o Options, help bool, err error) {
	o.Mode = "top"
	if len(args) > 0 && (args[0] == "top" || args[0] == "hist") {
		o.Mode, args = args[0], args[1:]
	}
	var f flagValues
	fs := newFlagSet(&o, &f)
	if err := fs.Parse(fixOptionalTrace(args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			u := usageTop
			if o.Mode == "hist" {
				u = usageHist
			}
			fmt.Fprint(w, u, fs.FlagUsages())
			return o, true, nil
		}
		return o, false, flagError(err)
	}
	if fs.NArg() > 0 {
		return o, false, fmt.Errorf("unexpected argument %q (the mode, top or hist, comes first)", fs.Arg(0))
	}
	if o.Mode == "top" {
		for _, n := range histOnly {
			if fs.Changed(n) {
				return o, false, fmt.Errorf("--%s is an option of timerlat hist, not of timerlat top", n)
			}
		}
	}
	if f.kernel {
		return o, false, errors.New("-k/--kernel-threads needs the kernel's timerlat tracer; rtscope measures with its own user-space threads")
	}
	for _, step := range []func(*Options, *flagValues, *pflag.FlagSet) error{setMeasurement, setStops, setOutputs, setHistogram} {
		if err := step(&o, &f, fs); err != nil {
			return o, false, err
		}
	}
	return o, false, nil
}

// DocFlags are timerlat's options, hist's included, for the command's
// help, man page and completion.
func DocFlags() *pflag.FlagSet {
	o := Options{Mode: "hist"}
	var f flagValues
	return newFlagSet(&o, &f)
}

// newFlagSet defines timerlat's options, with rtla's names, into f and
// (for those that need no check) o.
func newFlagSet(o *Options, f *flagValues) *pflag.FlagSet {
	fs := pflag.NewFlagSet("timerlat "+o.Mode, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard)
	fs.StringVarP(&f.cpus, "cpus", "c", "", "measure on these CPUs (`cpu-list`, e.g. 0-3,6); default: every online CPU")
	fs.StringVarP(&f.house, "house-keeping", "H", "", "run rtscope's own threads only on these CPUs (`cpu-list`)")
	fs.Uint64VarP(&f.period, "period", "p", 1000, "timer period in `us`")
	fs.StringVarP(&f.prio, "priority", "P", "f:95", "`sched`uling of the measuring threads: o:nice|r:prio|f:prio|d:runtime:period\n(deadline times in ns, or with us, ms, s)")
	fs.StringVar(&f.dmaS, "dma-latency", "", "write `us` to /dev/cpu_dma_latency while measuring, to bound exit-from-idle latency\n(cyclictest's default is 0); default: leave the system untuned")
	fs.StringVarP(&f.dur, "duration", "d", "", "duration of the session: `time`[s|m|h|d] (seconds by default); default: until Ctrl-C")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print only a summary at the end")
	fs.BoolVarP(&f.nano, "nano", "n", false, "display data in nanoseconds")
	fs.Uint64VarP(&f.irq, "irq", "i", 0, "stop when an IRQ latency reaches `us`")
	fs.Uint64VarP(&f.thread, "thread", "T", 0, "stop when a thread latency reaches `us`")
	fs.Uint64VarP(&f.auto, "auto", "a", 0, "automatic trace mode: -i `us` -T us -t, then the auto-analysis")
	fs.Uint64Var(&f.aaOnly, "aa-only", 0, "stop when a latency reaches `us`, printing only the auto-analysis")
	fs.BoolVar(&f.noAA, "no-aa", false, "no auto-analysis on a stop")
	fs.StringVarP(&f.trace, "trace", "t", "", "save the events of the stop's window to [`file`|"+DefaultTraceFile+"]")
	fs.Lookup("trace").NoOptDefVal = DefaultTraceFile
	fs.StringVar(&o.PerfettoFile, "perfetto", "", "write the window of the stop as a Perfetto trace to `FILE` (open it in ui.perfetto.dev)")
	fs.StringVar(&o.BTFFile, "btf", "", "the running kernel's vmlinux BTF as a `FILE` (raw, BTFHub style), for the BTF engine where /sys/kernel/btf/vmlinux does not show it; the kernel must have BTF of its own")
	fs.StringVar(&o.Engine, "engine", "", "BPF `engine`: btf (needs kernel BTF) or classic (classic tracepoints); default: btf when /sys/kernel/btf/vmlinux is readable, else classic")
	fs.StringVar(&o.JSONFile, "json", "", "write the results as JSON to `FILE` (- for stdout)")
	fs.StringArrayVar(&f.onThreshold, "on-threshold", nil, "`action` when -i/-T is reached, after the auto-analysis (repeatable): trace[,file=F],\nsignal,num=SIG,pid=PID|parent, shell,command=CMD, continue (keep measuring)")
	fs.StringArrayVar(&f.onEnd, "on-end", nil, "`action` when the run ends, after the report (repeatable): trace[,file=F] (the JSON results),\nsignal,num=SIG,pid=PID|parent, shell,command=CMD")
	fs.BoolVar(&f.cyc, "cyclictest", false, "print cyclictest's format: its summary line per thread (top), its -h histogram (hist)")
	fs.BoolVarP(&f.user, "user-threads", "u", false, "measure with user-space threads (always the case; accepted for rtla compatibility)")
	fs.BoolVarP(&f.kernel, "kernel-threads", "k", false, "kernel-space threads (not available: they need the timerlat tracer)")
	fs.BoolVar(&f.noUser, "no-user", false, "ignore return-to-user latencies")
	// hist only
	fs.Uint64VarP(&f.bucket, "bucket-size", "b", 1, "histogram bucket size in `us` (hist)")
	fs.IntVarP(&f.entries, "entries", "E", 256, "number of histogram entries, `N` (hist)")
	fs.BoolVar(&f.noIRQ, "no-irq", false, "ignore IRQ latencies (hist)")
	fs.BoolVar(&f.noThread, "no-thread", false, "ignore thread latencies (hist)")
	fs.BoolVar(&f.noHeader, "no-header", false, "do not print the header (hist)")
	fs.BoolVar(&f.noSum, "no-summary", false, "do not print the summary (hist)")
	fs.BoolVar(&f.noIdx, "no-index", false, "do not print the index (hist)")
	fs.BoolVar(&f.wz, "with-zeros", false, "print entries whose counts are all zero (hist)")
	if o.Mode == "top" {
		for _, n := range histOnly {
			_ = fs.MarkHidden(n)
		}
	}
	return fs
}

// setMeasurement checks what is measured and how: the CPUs, housekeeping,
// period, scheduling, DMA latency and duration.
func setMeasurement(o *Options, f *flagValues, fs *pflag.FlagSet) (err error) {
	if fs.Changed("cpus") {
		if o.CPUs, err = session.ParseCPUs("-c", f.cpus); err != nil {
			return err
		}
	}
	if fs.Changed("house-keeping") {
		if o.Housekeeping, err = session.ParseCPUs("-H", f.house); err != nil {
			return err
		}
	}
	if f.period < minPeriodUs || f.period > maxPeriodUs {
		return fmt.Errorf("-p %d: the period must be from %d us to %d us (1 s)", f.period, minPeriodUs, maxPeriodUs)
	}
	o.PeriodUs = f.period
	if o.Priority, err = ParsePriority(f.prio); err != nil {
		return fmt.Errorf("-P: %v", err)
	}
	o.DMALatency = -1
	if fs.Changed("dma-latency") {
		dma, err := strconv.Atoi(f.dmaS)
		if err != nil || dma < 0 || dma > maxDMALatency {
			return fmt.Errorf("--dma-latency %q: the value must be a whole number from 0 to %d us", f.dmaS, maxDMALatency)
		}
		o.DMALatency = dma
	}
	if f.dur != "" {
		if o.Duration, err = units.ParseDuration(f.dur); err != nil {
			return fmt.Errorf("-d: %v", err)
		}
	}
	o.Quiet, o.Nano, o.NoAA, o.Cyclictest = f.quiet, f.nano, f.noAA, f.cyc
	return nil
}

// setStops checks the stop thresholds (-i, -T, -a, --aa-only) and sets them,
// with -a's and --aa-only's implied settings, as rtla.
func setStops(o *Options, f *flagValues, fs *pflag.FlagSet) error {
	for _, t := range []struct {
		name string
		v    uint64
	}{{"irq", f.irq}, {"thread", f.thread}, {"auto", f.auto}, {"aa-only", f.aaOnly}} {
		if fs.Changed(t.name) && (t.v == 0 || t.v > maxStopUs) {
			return fmt.Errorf("--%s %d: the threshold must be from 1 to %d us", t.name, t.v, maxStopUs)
		}
	}
	if f.aaOnly > 0 && (f.auto > 0 || f.irq > 0 || f.thread > 0) {
		return errors.New("--aa-only sets the stop thresholds itself: it cannot be combined with -a, -i or -T")
	}
	if f.aaOnly > 0 && f.noAA {
		return errors.New("--aa-only and --no-aa contradict each other")
	}
	o.IRQStopUs, o.ThreadStopUs = f.irq, f.thread
	if f.auto > 0 {
		// -a: as rtla, both thresholds (unless given), tracing and analysis.
		if f.irq == 0 {
			o.IRQStopUs = f.auto
		}
		if f.thread == 0 {
			o.ThreadStopUs = f.auto
		}
		o.TraceFile = DefaultTraceFile
	}
	if f.aaOnly > 0 {
		o.IRQStopUs, o.ThreadStopUs, o.AAOnly = f.aaOnly, f.aaOnly, true
	}
	return nil
}

// setOutputs checks what is written at a stop and at the end (-t,
// actions, --perfetto): those of a stop need a stop threshold.
func setOutputs(o *Options, f *flagValues, fs *pflag.FlagSet) (err error) {
	if fs.Changed("trace") {
		if f.trace == "" {
			return errors.New("-t: empty file name")
		}
		o.TraceFile = f.trace
	}
	if o.TraceFile != "" && o.IRQStopUs == 0 && o.ThreadStopUs == 0 {
		return errors.New("-t saves the events around the sample that stops the run: it needs -i, -T, -a or --aa-only")
	}
	if o.OnThreshold, err = action.ParseList("on-threshold", f.onThreshold, false); err != nil {
		return err
	}
	if o.OnEnd, err = action.ParseList("on-end", f.onEnd, true); err != nil {
		return err
	}
	if o.PerfettoFile != "" && o.IRQStopUs == 0 && o.ThreadStopUs == 0 {
		return errors.New("--perfetto draws the window of the sample that stops the run: it needs -i, -T, -a or --aa-only")
	}
	if len(o.OnThreshold) > 0 && o.IRQStopUs == 0 && o.ThreadStopUs == 0 {
		return errors.New("--on-threshold acts when a stop threshold is reached: it needs -i, -T, -a or --aa-only")
	}
	if o.AAOnly && (o.JSONFile != "" || f.cyc) {
		return errors.New("--aa-only prints only the auto-analysis: it cannot be combined with --json or --cyclictest")
	}
	return nil
}

// setHistogram checks the histogram's layout (hist) and what --cyclictest
// can be combined with.
func setHistogram(o *Options, f *flagValues, _ *pflag.FlagSet) error {
	o.NoIRQ, o.NoThread, o.NoUser = f.noIRQ, f.noThread, f.noUser
	o.NoHeader, o.NoSummary, o.NoIndex, o.WithZeros = f.noHeader, f.noSum, f.noIdx, f.wz
	if f.bucket == 0 || f.bucket > maxBucket {
		return fmt.Errorf("-b %d: the bucket size must be from 1 to %d", f.bucket, maxBucket)
	}
	if f.entries < minEntries || f.entries > maxEntries {
		return fmt.Errorf("-E %d: the number of entries must be from %d to %d", f.entries, minEntries, maxEntries)
	}
	o.BucketUs, o.Entries = f.bucket, f.entries
	if f.noIRQ && f.noThread && f.noUser {
		return errors.New("--no-irq, --no-thread and --no-user together leave nothing to show")
	}
	if f.noIdx && !f.wz {
		return errors.New("--no-index needs --with-zeros: without the index, skipped empty rows could not be told apart")
	}
	if !f.cyc {
		return nil
	}
	if o.Mode == "hist" && f.bucket != 1 {
		return errors.New("--cyclictest histograms have 1 us buckets: -b cannot be used with it")
	}
	if o.Mode == "hist" && (f.noIRQ || f.noThread || f.noUser || f.noHeader || f.noSum || f.noIdx || f.wz) {
		return errors.New("--cyclictest prints cyclictest's histogram of the return-to-user latency: the --no-*/--with-zeros layout switches do not apply")
	}
	if f.nano {
		return errors.New("--cyclictest prints microseconds: -n cannot be used with it")
	}
	return nil
}

var (
	reBadValue  = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-(.), )?--(.*)" flag: .*$`)
	reUnknown   = regexp.MustCompile(`^unknown (?:shorthand )?flag: (?:'.' in )?(.*)$`)
	reNeedValue = regexp.MustCompile(`^flag needs an argument: (?:'(.)' in -.|--(.*))$`)
)

// flagError turns pflag's messages into one sentence that names the option.
func flagError(err error) error {
	msg := strings.TrimSpace(err.Error())
	if m := reBadValue.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("--%s %q: not a valid whole number", m[3], m[1])
	}
	if m := reUnknown.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("unknown option %s (run 'rtscope timerlat --help')", m[1])
	}
	if m := reNeedValue.FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			return fmt.Errorf("option -%s needs a value", m[1])
		}
		return fmt.Errorf("option --%s needs a value", m[2])
	}
	return errors.New(msg)
}

// fixOptionalTrace lets -t take its file as the next argument, as rtla does
// ("-t file", "-tfile", "-t=file"), which pflag alone would not.
func fixOptionalTrace(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case a == "-t" || a == "--trace":
			if i+1 < len(args) && args[i+1] != "" && !strings.HasPrefix(args[i+1], "-") &&
				args[i+1] != "top" && args[i+1] != "hist" {
				out = append(out, "--trace="+args[i+1])
				i++
				continue
			}
			out = append(out, "--trace")
		case strings.HasPrefix(a, "-t") && !strings.HasPrefix(a, "--"):
			out = append(out, "--trace="+strings.TrimPrefix(strings.TrimPrefix(a, "-t"), "="))
		default:
			out = append(out, a)
		}
	}
	return out
}
