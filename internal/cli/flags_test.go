package cli

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/action"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/watch"
)

// watchOptions parses watch's flags and checks them into options, as
// runWatch does (without the command after --).
func watchOptions(t *testing.T, args ...string) (watch.Options, error) {
	t.Helper()
	var f watchFlags
	fs := f.flagSet()
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return f.options(fs, nil, false)
}

// Every watch flag reaches its option.
func TestWatchFlagsToOptions(t *testing.T) {
	o, err := watchOptions(t, "--tid", "7", "--pid", "8", "--comm", "ctl", "--cgroup", "ctl.service",
		"-d", "30s", "-i", "2s", "-q", "--slo", "latency=50us", "--slo", "7:cycle=2ms",
		"--json", "-", "--perfetto", "w.pftrace", "--html", "r.html", "--traces", "-v", "--fail-on", "warn",
		"--engine", engine.EngineClassic, "--btf", "vmlinux.btf", "--trace-events", "4096", "--trace-max-events", "64",
		"--stack-after", "50us", "--show", "a,b", "--all", "-H", "0", "--on-threshold", "continue", "--on-end", "trace")
	if err != nil {
		t.Fatal(err)
	}
	tg := o.Targets
	if !reflect.DeepEqual(tg.TIDs, []int{7}) || !reflect.DeepEqual(tg.PIDs, []int{8}) ||
		!reflect.DeepEqual(tg.Comms, []string{"ctl"}) || !reflect.DeepEqual(tg.Cgroups, []string{"ctl.service"}) || tg.Command != nil {
		t.Errorf("targets %+v", tg)
	}
	if o.Duration != 30*time.Second || o.Interval != 2*time.Second || !o.Quiet || !o.Traces || !o.Verbose || o.FailOn != report.HealthWarn {
		t.Errorf("duration %v interval %v quiet %v traces %v verbose %v fail-on %v", o.Duration, o.Interval, o.Quiet, o.Traces, o.Verbose, o.FailOn)
	}
	if o.SLO.Default[metric.Latency] != 50_000 || o.SLO.ByID[7][metric.Cycle] != 2_000_000 || o.SLO.ByID[7][metric.Latency] != 50_000 {
		t.Errorf("SLO %+v", o.SLO)
	}
	if o.JSONPath != "-" || o.PerfettoPath != "w.pftrace" || o.HTMLPath != "r.html" || !o.Series || o.Out != os.Stderr {
		t.Errorf("outputs json %q perfetto %q html %q series %v; the text must go to stderr when JSON is stdout", o.JSONPath, o.PerfettoPath, o.HTMLPath, o.Series)
	}
	if o.Engine != engine.EngineClassic || o.BTFFile != "vmlinux.btf" || o.NoTrace || o.TraceEvents != 4096 || o.TraceMax != 64 ||
		o.StackAfter == nil || *o.StackAfter != 50*time.Microsecond {
		t.Errorf("engine %q btf %q no-trace %v trace-events %d trace-max %d stack-after %v", o.Engine, o.BTFFile, o.NoTrace, o.TraceEvents, o.TraceMax, o.StackAfter)
	}
	if !reflect.DeepEqual(o.Show, []string{"a", "b"}) || !o.All || !reflect.DeepEqual(o.Housekeeping, []int{0}) || o.AutoHousekeeping {
		t.Errorf("show %v all %v housekeeping %v auto %v", o.Show, o.All, o.Housekeeping, o.AutoHousekeeping)
	}
	if len(o.OnThreshold) != 1 || o.OnThreshold[0].Kind != action.Continue || len(o.OnEnd) != 1 || o.OnEnd[0].Kind != action.Trace {
		t.Errorf("actions %+v, %+v", o.OnThreshold, o.OnEnd)
	}
}

// Without flags, each option is watch's default.
func TestWatchFlagDefaults(t *testing.T) {
	o, err := watchOptions(t, "--comm", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	// The live table is on at a terminal, off when piped (go test's stdout).
	if o.Duration != 0 || o.Interval != time.Second || o.Quiet == isTerminal(os.Stdout) || o.Out != os.Stdout || o.Series || o.FailOn != "" {
		t.Errorf("duration %v interval %v quiet %v stdout %v series %v fail-on %v", o.Duration, o.Interval, o.Quiet, o.Out == os.Stdout, o.Series, o.FailOn)
	}
	if o.Engine != engine.EngineAuto || o.TraceEvents != 0 || o.TraceMax != watch.DefaultTraceMax ||
		o.StackAfter == nil || *o.StackAfter != engine.DefaultStackMinWait*time.Nanosecond {
		t.Errorf("engine %q trace-events %d trace-max %d stack-after %v", o.Engine, o.TraceEvents, o.TraceMax, o.StackAfter)
	}
	if !o.AutoHousekeeping || o.Housekeeping != nil || o.SLO.ByID != nil || o.SLO.Default != [metric.Count]uint64{} {
		t.Errorf("auto housekeeping %v (%v), SLO %+v", o.AutoHousekeeping, o.Housekeeping, o.SLO)
	}
	if o, err = watchOptions(t, "--comm", "ctl", "-H", "none"); err != nil || o.AutoHousekeeping || o.Housekeeping != nil {
		t.Errorf("-H none: auto %v, CPUs %v (%v); want unpinned", o.AutoHousekeeping, o.Housekeeping, err)
	}
}

// A bad value is refused in one sentence that names its flag.
func TestWatchFlagRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--tid", "1x"}, "--tid"},
		{[]string{"--comm", "abcdefghijklmnop"}, "--comm"},
		{[]string{"--comm", "x", "--json", ""}, "--json"},
		{[]string{"--comm", "x", "--json", "-", "--html", "-"}, "--json and --html"},
		{[]string{"--comm", "x", "-H", ""}, "--housekeeping"},
		{[]string{"--comm", "x", "--trace-events", "1000"}, "--trace-events"},
		{[]string{"--comm", "x", "--trace-max-events", "8"}, "--trace-max-events"},
		{[]string{"--comm", "x", "--stack-after", "-1us"}, "--stack-after"},
		{[]string{"--comm", "x", "--fail-on", "ok"}, "--fail-on"},
		{[]string{"--comm", "x", "-i", "0"}, "--interval"},
		{[]string{"--comm", "x", "--no-trace", "--traces"}, "--traces"},
		{[]string{"--comm", "x", "--no-trace", "--perfetto", "w.pftrace"}, "--perfetto"},
		{[]string{"--comm", "x", "--user", "nobody"}, "--user"},
		{[]string{"--comm", "x", "--on-threshold", "trace"}, "--on-threshold"},
		{[]string{"--comm", "x", "--on-end", "continue"}, "--on-end"},
		{[]string{"--comm", "x", "--slo", "bogus=5us"}, "bogus"},
	} {
		_, err := watchOptions(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.flag) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line naming %s", c.args, err, c.flag)
		}
	}
}

// What follows the first -- is the command (its own flags and -- kept),
// the rest watch's flags.
func TestWatchCommandAfterDashDash(t *testing.T) {
	c := newWatchCmd()
	if err := c.ParseFlags([]string{"-q", "--", "sleep", "--", "1"}); err != nil {
		t.Fatal(err)
	}
	args, dash := c.Flags().Args(), c.ArgsLenAtDash()
	if dash != 0 || !reflect.DeepEqual(args[dash:], []string{"sleep", "--", "1"}) || !c.Flags().Changed("quiet") {
		t.Errorf("args %q dash %d quiet %v", args, dash, c.Flags().Changed("quiet"))
	}
	c = newWatchCmd()
	if err := c.ParseFlags([]string{"-q"}); err != nil || c.ArgsLenAtDash() != -1 {
		t.Errorf("without --: dash %d (%v)", c.ArgsLenAtDash(), err)
	}
	var f watchFlags
	fs := f.flagSet()
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.options(fs, nil, true); err == nil || !strings.Contains(err.Error(), "no command after --") {
		t.Errorf("-- alone: %v", err)
	}
}

// serve's flags and the engine flags it shares with watch reach the agent's
// options; those it does not have keep watch's defaults.
func TestServeFlagsToOptions(t *testing.T) {
	var f serveFlags
	fs := f.flagSet()
	dir := t.TempDir()
	err := fs.Parse([]string{"--listen", "127.0.0.1:0", "--archive", dir, "--archive-max-mb", "2", "--socket", "",
		"--tid", "7", "--pid", "8", "--comm", "ctl", "--cgroup", "ctl.service", "--slo", "latency=50us",
		"--tick", "3s", "--no-trace", "--trace-events", "4096", "--btf", "vmlinux.btf"})
	if err != nil {
		t.Fatal(err)
	}
	o, err := f.options(fs)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Archive.Close()
	w := o.Watch
	if o.Listen != "127.0.0.1:0" || o.Socket != "" || o.Tick != 3*time.Second || o.Archive == nil || o.Control == nil {
		t.Errorf("listen %q socket %q tick %v archive %v control %v", o.Listen, o.Socket, o.Tick, o.Archive != nil, o.Control != nil)
	}
	tg := w.Targets
	if !reflect.DeepEqual(tg.TIDs, []int{7}) || !reflect.DeepEqual(tg.PIDs, []int{8}) ||
		!reflect.DeepEqual(tg.Comms, []string{"ctl"}) || !reflect.DeepEqual(tg.Cgroups, []string{"ctl.service"}) {
		t.Errorf("targets %+v", tg)
	}
	if w.SLO.Default[metric.Latency] != 50_000 {
		t.Errorf("SLO %+v", w.SLO)
	}
	if !w.NoTrace || w.TraceEvents != 4096 || w.BTFFile != "vmlinux.btf" || w.Engine != engine.EngineAuto ||
		w.TraceMax != 0 || w.StackAfter != nil || !w.AutoHousekeeping {
		t.Errorf("engine: no-trace %v trace-events %d btf %q engine %q trace-max %d stack-after %v auto housekeeping %v",
			w.NoTrace, w.TraceEvents, w.BTFFile, w.Engine, w.TraceMax, w.StackAfter, w.AutoHousekeeping)
	}
}

// The live table is for a terminal: piped, it is off unless --interval
// asks for it (-q always turns it off).
func TestWatchLiveTableOnlyAtATerminal(t *testing.T) {
	for _, c := range []struct {
		args  []string
		quiet bool
	}{
		{[]string{"--comm", "ctl", "-i", "2s"}, false},
		{[]string{"--comm", "ctl", "-i", "2s", "-q"}, true},
		{[]string{"--comm", "ctl", "-q"}, true},
	} {
		o, err := watchOptions(t, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		if o.Quiet != c.quiet {
			t.Errorf("%v: quiet %v, want %v", c.args, o.Quiet, c.quiet)
		}
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a file taken for a terminal")
	}
}
