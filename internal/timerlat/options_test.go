package timerlat

import (
	"github.com/rtscope/rtscope/internal/cpuset"

	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the output (go test -update rewrites it); got:\n%s", path, got)
	}
}

// splitArgs splits a test line on spaces; "" is an empty argument.
func splitArgs(line string) []string {
	var out []string
	for _, f := range strings.Fields(line) {
		if f == `""` {
			f = ""
		}
		out = append(out, f)
	}
	return out
}

func describe(o Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode=%s", o.Mode)
	if o.CPUs != nil {
		fmt.Fprintf(&b, " cpus=%s", cpuset.FormatList(o.CPUs))
	}
	if o.Housekeeping != nil {
		fmt.Fprintf(&b, " housekeeping=%s", cpuset.FormatList(o.Housekeeping))
	}
	fmt.Fprintf(&b, " period=%dus prio=%q(%s)", o.PeriodUs, o.Priority.Original, o.Priority)
	if o.DMALatency >= 0 {
		fmt.Fprintf(&b, " dma=%dus", o.DMALatency)
	}
	if o.Duration > 0 {
		fmt.Fprintf(&b, " duration=%s", o.Duration)
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{o.Quiet, "quiet"}, {o.Nano, "nano"}, {o.AAOnly, "aa-only"}, {o.NoAA, "no-aa"}, {o.Cyclictest, "cyclictest"},
		{o.NoIRQ, "no-irq"}, {o.NoThread, "no-thread"}, {o.NoUser, "no-user"}, {o.NoHeader, "no-header"},
		{o.NoSummary, "no-summary"}, {o.NoIndex, "no-index"}, {o.WithZeros, "with-zeros"}} {
		if f.on {
			b.WriteString(" " + f.name)
		}
	}
	if o.IRQStopUs > 0 {
		fmt.Fprintf(&b, " irq-stop=%dus", o.IRQStopUs)
	}
	if o.ThreadStopUs > 0 {
		fmt.Fprintf(&b, " thread-stop=%dus", o.ThreadStopUs)
	}
	if o.Analysis() {
		b.WriteString(" analysis")
	}
	if o.TraceFile != "" {
		fmt.Fprintf(&b, " trace=%s", o.TraceFile)
	}
	if o.JSONFile != "" {
		fmt.Fprintf(&b, " json=%s", o.JSONFile)
	}
	if len(o.OnThreshold) > 0 {
		fmt.Fprintf(&b, " on-threshold=%d continue=%v", len(o.OnThreshold), o.OnThreshold.Continue())
	}
	if len(o.OnEnd) > 0 {
		fmt.Fprintf(&b, " on-end=%d", len(o.OnEnd))
	}
	if o.Mode == "hist" {
		fmt.Fprintf(&b, " bucket=%d entries=%d", o.BucketUs, o.Entries)
	}
	return b.String()
}

func TestParseArgsGolden(t *testing.T) {
	f, err := os.Open("testdata/options.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		o, help, err := ParseArgs(splitArgs(line), io.Discard)
		fmt.Fprintf(&out, "$ rtscope timerlat %s\n", line)
		switch {
		case help:
			out.WriteString("  help\n")
		case err != nil:
			// One sentence: no newline, no trailing period-less fragments.
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("%q: error spans lines: %q", line, err)
			}
			fmt.Fprintf(&out, "  error: %v\n", err)
		default:
			fmt.Fprintf(&out, "  %s\n", describe(o))
		}
	}
	golden(t, "options.golden", out.String())
}

func TestHelp(t *testing.T) {
	for _, mode := range []string{"top", "hist"} {
		var b strings.Builder
		_, help, err := ParseArgs([]string{mode, "--help"}, &b)
		if !help || err != nil {
			t.Fatalf("%s --help: help=%v err=%v", mode, help, err)
		}
		for _, want := range []string{"--period", "--priority", "--dma-latency", "--cyclictest", "--json"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s --help lacks %s", mode, want)
			}
		}
	}
}
