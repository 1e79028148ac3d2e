package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/isolation"
	"github.com/rtscope/rtscope/internal/serve"
)

// serve --intrusions takes a CPU list or "isolated", from the flag or the
// configuration (the flag wins); without it nothing is attached, and
// --intrusions-allow alone is refused.
func TestServeIntrusionFlags(t *testing.T) {
	parse := func(file *serve.Config, args ...string) (*serve.IntrusionOptions, error) {
		t.Helper()
		var f serveFlags
		if err := f.flagSet().Parse(args); err != nil {
			t.Fatal(err)
		}
		return f.intrusionOptions(file)
	}
	if o, err := parse(nil); o != nil || err != nil {
		t.Errorf("no --intrusions: %+v, %v; want nothing attached", o, err)
	}
	o, err := parse(nil, "--intrusions", "1", "--intrusions-allow", "control,dpdk")
	if err != nil || !slices.Equal(o.CPUs, []int{1}) || !slices.Equal(o.Allow, []string{"control", "dpdk"}) {
		t.Errorf("--intrusions 1: %+v, %v", o, err)
	}
	file := &serve.Config{Intrusions: "0-1", IntrusionsAllow: []string{"fromfile"}}
	if o, err := parse(file); err != nil || !slices.Equal(o.CPUs, []int{0, 1}) || !slices.Equal(o.Allow, []string{"fromfile"}) {
		t.Errorf("intrusions: 0-1 in the file: %+v, %v", o, err)
	}
	if o, err := parse(file, "--intrusions", "1"); err != nil || !slices.Equal(o.CPUs, []int{1}) {
		t.Errorf("the flag over the file: %+v, %v", o, err)
	}
	want, none := isolation.DefaultCPUs()
	o, err = parse(nil, "--intrusions", "isolated")
	if none != nil && (err == nil || !strings.Contains(err.Error(), "none is isolated")) {
		t.Errorf("--intrusions isolated with none: %+v, %v; want the sentence", o, err)
	}
	if none == nil && (err != nil || !slices.Equal(o.CPUs, want)) {
		t.Errorf("--intrusions isolated: %+v, %v; want %v", o, err, want)
	}
	for args, msg := range map[string]string{
		"--intrusions-allow=x":   "--intrusions-allow needs --intrusions",
		"--intrusions=x":         `--intrusions x: CPU list "x"`,
		"--intrusions=4000":      "--intrusions 4000: CPU 4000 is not online",
		"--intrusions=1-0,bogus": "--intrusions 1-0,bogus: ",
	} {
		if _, err := parse(nil, args); err == nil || !strings.HasPrefix(err.Error(), msg) {
			t.Errorf("%s: %v; want %q", args, err, msg)
		}
	}
}
